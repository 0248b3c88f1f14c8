/* upload.h — PUT bodies streamed to a staging file as they arrive,
 * hashed on the way, never held in memory. */
#ifndef SBX_HTTPD_UPLOAD_H
#define SBX_HTTPD_UPLOAD_H

#include "../lib/hash.h"

#include <limits.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* upload.c: a PUT body streamed to a staging file as it arrives, hashed on
 * the way; never held in memory. Refusals known from the head are kept
 * and the body is read on and dropped. */
struct upload {
	int fd;                      /* the staging file, -1 when refused */
	char tmp[PATH_MAX];          /* its name, removed when the request ends */
	struct sbx_sha256 *sha;
	unsigned long long bytes, cap; /* cap 0: none */
	unsigned long long written_back; /* bytes the disk was asked to write */
	bool over;                   /* more than cap arrived */
	bool verified;               /* transfer-file */
	int write_errno;
	unsigned status;             /* a refusal decided from the head */
	char error[600];
};
bool upload_wanted(const char *method, const char *url);
struct upload *upload_begin(struct MHD_Connection *conn, const char *url);
void upload_write(struct upload *u, const char *data, size_t n);
void upload_free(struct upload *u);
/* The checks both the head and the end apply: workspace key, path, conflict
 * and, verified, the metadata headers. 0, or the status with msg. */
unsigned upload_check(struct MHD_Connection *conn, bool verified, char *msg, size_t msize);
/* x-workspace-executable: bits within 0o111 (absent: 0; "true"/"false" too), or -1. */
long upload_exec_bits(const char *header);

#endif
