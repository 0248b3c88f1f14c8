/* env.h — what sbx-env's files share: the layout under
 * <data>/scientific-envs, the catalog, the provisioner, the tools it runs,
 * and the checks every request passes. */
#ifndef SBX_ENV_H
#define SBX_ENV_H

#include "../lib/error.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#define STARTER_PYTHON "python=3.12 numpy=2.0 pandas=2.2 scipy=1.14 matplotlib=3.9"
#define STARTER_R "r-base=4.4 r-tidyverse=2.0 r-data.table=1.16"
#define MICROMAMBA_VERSION "2.8.1-0"

struct envctx {
	char data[PATH_MAX];
	char root[PATH_MAX - 64];     /* <data>/scientific-envs */
	char provisioner[PATH_MAX + 32]; /* the micromamba binary to run */
	bool managed;                 /* the provisioner is ours to download */
	char channels[16][256];       /* SCIENCE_AGENT_SCIENTIFIC_CHANNELS, in order */
	int n_channels;
	char cache[PATH_MAX];         /* SCIENCE_AGENT_PACKAGE_CACHE_DIR, "" none */
	int tool_timeout_s;           /* every micromamba, pip and R call */
	json_t *catalog;              /* {environments, revisions, version} */
	int lock_fd;                  /* the catalog lock, held while mutating */
};

/* catalog.c */
int env_open(struct envctx *c, struct sbx_error *e);
int env_catalog_load(struct envctx *c, struct sbx_error *e);
int env_catalog_save(struct envctx *c, struct sbx_error *e);
/* Exclusive lock over the catalog (mutations), or shared (readers). */
int env_lock(struct envctx *c, bool exclusive, struct sbx_error *e);
void env_unlock(struct envctx *c);
json_t *env_find(struct envctx *c, const char *kind, const char *id);
/* ids checked before any path is built from them */
bool env_safe_env_id(const char *id);
bool env_safe_rev_id(const char *id);
void env_prefix_path(const struct envctx *c, const char *env_id, const char *rev_id, char *out, size_t size);
void env_now(char out[32]);

/* tool.c: runs micromamba / pip / R without a shell, within the timeout,
 * output bounded; on failure e says the exact argv and the output's tail. */
int env_run_tool(const struct envctx *c, const char *const *argv, char **out, struct sbx_error *e);
int env_micromamba(const struct envctx *c, const char *const *args, char **out, struct sbx_error *e);

/* install_box.c: the sandbox every tool runs in — sbx-launch as the
 * install user (SBX_ENV_RUN_AS, never root), the target prefix (the value
 * of --prefix, else the prefix of argv[0]) bound read-write by fd and
 * nothing else writable but a per-call scratch directory, the provisioner,
 * clone sources, stored wheels and the offline cache read-only, the
 * network only through an sbx-egress gateway to the channel and index
 * hosts the call names, the environment built from scratch. */
struct env_box {
	char *launch_argv[6];
	int spec_fd;               /* the launch spec, for sbx-launch's stdin */
	int fds[2];                /* the prefix, the scratch directory: fd:3, fd:4 */
	size_t n_fds;
	char scratch[PATH_MAX];    /* removed on close */
	char gateway_dir[PATH_MAX]; /* the gateway's socket, policy and log (root's); removed on close */
	int gateway;               /* the egress gateway's pid, 0: none */
	bool disown;               /* give the prefix back to root on close */
	uid_t uid;                 /* the install user */
	gid_t gid;
};
int env_box_open(const struct envctx *c, const char *const *argv, struct env_box *box, struct sbx_error *e);
void env_box_close(struct env_box *box);

/* provisioner.c */
int env_provisioner_ready(struct envctx *c, void (*progress)(const char *phase, double fraction, void *arg),
			  void *arg, struct sbx_error *e);
const char *env_pinned_version(void);
/* Runnable, and (managed) still the pinned binary. */
bool env_provisioner_valid(struct envctx *c);

/* setup.c */
json_t *env_setup_view(struct envctx *c);
int env_setup_run(struct envctx *c, bool tty, struct sbx_error *e);
bool env_available(struct envctx *c, char *why, size_t size);

/* validate.c */
int env_valid_name(const char *raw, char *out, size_t size, struct sbx_error *e);
int env_valid_package(const char *raw, char *out, size_t size, struct sbx_error *e);
int env_valid_index_url(const char *raw, char *out, size_t size, struct sbx_error *e);
int env_valid_channels(const struct envctx *c, json_t *requested, json_t **out, struct sbx_error *e);

/* wheels.c: copies a workspace wheel into wheels/<sha256>/; its record
 * and the stored path pip gets. */
int env_store_wheel(struct envctx *c, const char *workspace, const char *rel, json_t **record, char *stored,
		    size_t size, struct sbx_error *e);

/* manage.c */
static inline int env_fail(struct sbx_error *e, int code, const char *fmt, const char *a)
{
	sbx_error_set(e, code, "environment", fmt, a);
	return -1;
}
/* One environment's lease, exclusive (a mutation); the fd, or -1 and e. */
int env_lock_one(struct envctx *c, const char *id, struct sbx_error *e);

/* revision.c */
json_t *env_sorted_unique(json_t *list); /* takes list; sorted, unique strings */
/* Inventory, snapshot file and revision record (the caller puts it in the catalog). */
json_t *env_record_revision(struct envctx *c, json_t *env, const char *prefix, json_t *channels, json_t *changes,
			    json_t *wheels, struct sbx_error *e);
void env_keep_command(json_t *rev, const char *tool, const char *const *args);
json_t *env_create(struct envctx *c, const char *name, const char *language, const char *base, struct sbx_error *e);
json_t *env_install(struct envctx *c, const char *id, const char *manager, json_t *packages, json_t *channels,
		    const char *index_url, const char *source, const char *workspace, struct sbx_error *e);
json_t *env_uninstall(struct envctx *c, const char *id, json_t *packages, struct sbx_error *e);
int env_delete(struct envctx *c, const char *id, struct sbx_error *e);
int env_bootstrap_starter(struct envctx *c, const char *language, struct sbx_error *e);
/* The runtime of a current revision, of an environment, or (neither) of
 * the language's starter. */
json_t *env_resolve(struct envctx *c, const char *revision, const char *environment, const char *language,
		    struct sbx_error *e);
int env_snapshot_bytes(struct envctx *c, const char *rev, char **bytes, size_t *len, struct sbx_error *e);

#endif
