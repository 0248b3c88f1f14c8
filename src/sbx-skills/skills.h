/* skills.h — sbx-skills' own parts: the store and its paths (store.c), a
 * bundle's checks and the package id (bundle.c), publishing (publish.c),
 * the full check of a held package (verify.c) and its stamp (stamp.c). */
#ifndef SBX_SKILLS_H
#define SBX_SKILLS_H

#include "../lib/error.h"
#include "../lib/hash.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define SKILLS_BUNDLE_CAP (64u << 20) /* a bundle on stdin, as sbx-httpd's body limit */
#define SKILLS_MANIFEST ".manifest.json"
#define SKILLS_STAMPS ".verified"     /* <store>/.verified/<id>: stamps, 0700 */

/* <data>/skill-packages: outside every tree an execution can name. */
struct store {
	char dir[PATH_MAX];
	int fd; /* its directory fd (never through a symlink); -1 while it does not exist */
};

/* store.c */
int store_open(struct store *s, const char *data_dir, bool create, struct sbx_error *e);
void store_close(struct store *s);
/* True for a package id: 64 lower-case hex digits. */
bool store_id_ok(const char *id);
/* <store>/<id> as an O_RDONLY directory fd (no symlink at any level), or
 * -1 with errno. */
int store_package_open(const struct store *s, const char *id);
/* A package's manifest (a JSON array; regular, at most 1 MiB, read with
 * no symlink), or NULL. */
json_t *store_manifest(int pkg);
/* Removes the temp directories of puts that died (an hour old). */
void store_sweep_incoming(const struct store *s);
/* Every held package (id, root, skills, verified by its stamp), by id. */
json_t *store_list(const struct store *s);

/* bundle.c */
/* The bundle text checked whole: its "skills" with each file's bytes
 * decoded (a hidden member) into *doc, the package id into id. -1 with e
 * naming the field (bad-input, exit 2), nothing written anywhere. */
int bundle_check(const char *text, size_t len, json_t **doc, char id[SBX_SHA256_HEX_LEN + 1], struct sbx_error *e);
/* The bytes bundle_check decoded for a file entry. */
json_t *bundle_file_bytes(const json_t *file);
/* The id of a package: SHA-256 of its canonical manifest (skills by id:
 * hash, id, revision, version), from a bundle's skills or a manifest. */
void skills_package_id(const json_t *skills, char id[SBX_SHA256_HEX_LEN + 1]);
/* A file's part of a skill's hash: "<len of path>:<path>:<size>:" then
 * its bytes (the caller adds them). */
void skills_hash_file(struct sbx_sha256 *h, const char *path, size_t size);

/* publish.c */
/* Writes the checked bundle's files and manifest under a temp directory
 * of the store and renames it to <id> (a held intact copy stays; one that
 * fails its check is replaced). -1 with e. */
int publish(struct store *s, json_t *skills, const char *id, struct sbx_error *e);

/* verify.c */
/* Hashes the package below pkg against id: its manifest hashes to id,
 * every skill's files to the manifest's hash, nothing else beside them. */
bool verify_hashes(int pkg, const char *id);

/* stamp.c */
enum verified { VERIFIED_STAMP, VERIFIED_HASHED };
/* The package (its directory fd pkg) checked against id: by its stamp when
 * the package is exactly as it was when last hashed, else by hashing it
 * (verify_hashes), stamping it when it passes. 0 and *how; -1 with e
 * (integrity, exit 9) when it fails. */
int stamp_verify(const struct store *s, const char *id, int pkg, enum verified *how, struct sbx_error *e);
/* True when the package's stamp matches it as it is now (no hashing). */
bool stamp_valid(const struct store *s, const char *id, int pkg);
/* Removes id's stamp (a package about to be replaced). */
void stamp_remove(const struct store *s, const char *id);

#endif
