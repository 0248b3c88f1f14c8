/* upload.c — streamed PUT bodies: bearer and head checks first, then every
 * chunk written to <data>/runner-uploads/ and hashed as it arrives, so a
 * body of several GiB costs a few pages of memory; at the end remote.c
 * checks size and hash and hands the staged file's fd to sbx-ws, which
 * checks the quota and links the file itself into place. */
#include "upload.h"
#include "server.h"
#include "reply.h"
#include "auth.h"
#include "metrics.h"
#include "../lib/hash.h"
#include "../lib/io.h"
#include "../lib/remote_path.h"
#include "../lib/datadir.h"

#include <stdbool.h>
#include <sys/types.h>
#include <microhttpd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SAFE_INTEGER_MAX 9007199254740991ull

/* The disk starts writing the staged bytes every this many as they arrive,
 * so the fsync before publishing waits for the last step, not the body. */
#define WRITEBACK_STEP (8ull << 20)

bool upload_wanted(const char *method, const char *url)
{
	return !strcmp(method, "PUT") &&
	       (!strcmp(url, "/remote-workspace/file") || !strcmp(url, "/remote-workspace/transfer-file"));
}

static const char *arg(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
}

static const char *head(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static bool digits(const char *s)
{
	return s && *s && strspn(s, "0123456789") == strlen(s) && strlen(s) <= 16;
}

long upload_exec_bits(const char *header)
{
	/* Upstream's snapshots give mode & 0o111 as a number, and its transfer
	 * manager sends that back; a boolean from older exports is taken too. */
	if (!header)
		return 0;
	if (!strcmp(header, "true") || !strcmp(header, "false"))
		return header[0] == 't' ? 0111 : 0;
	long x = digits(header) ? strtol(header, NULL, 10) : -1;
	return x < 0 || (x & ~0111L) ? -1 : x;
}

unsigned upload_check(struct MHD_Connection *conn, bool verified, char *msg, size_t msize)
{
	char key[SBX_REMOTE_KEY_MAX + 1], path[SBX_REMOTE_PATH_MAX + 1];
	const char *conflict = arg(conn, "conflict");
	if (!sbx_remote_key(arg(conn, "workspace"), key, sizeof(key)))
		return snprintf(msg, msize, "Invalid remote workspace key"), 400;
	if (!sbx_remote_rel_path(arg(conn, "path"), path, sizeof(path)))
		return snprintf(msg, msize, "Invalid remote workspace path"), 400;
	bool conflict_ok = !conflict || !strcmp(conflict, "reject") || !strcmp(conflict, "overwrite");
	if (!verified)
		return conflict_ok ? 0 : (snprintf(msg, msize, "conflict must be reject or overwrite"), 400);
	const char *size = head(conn, "x-workspace-size"), *sha = head(conn, "x-workspace-sha256");
	unsigned long long n = digits(size) ? strtoull(size, NULL, 10) : SAFE_INTEGER_MAX + 1;
	long x = upload_exec_bits(head(conn, "x-workspace-executable"));
	bool sha_ok = sha && strlen(sha) == 64 && strspn(sha, "0123456789abcdef") == 64;
	if (n > SAFE_INTEGER_MAX || !sha_ok || x < 0 || !conflict_ok)
		return snprintf(msg, msize, "Invalid verified upload metadata"), 400;
	return 0;
}

struct upload *upload_begin(struct MHD_Connection *conn, const char *url)
{
	struct upload *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->fd = -1;
	u->verified = !strcmp(url, "/remote-workspace/transfer-file");
	/* Nothing touches the disk for a caller without the token. */
	struct req probe = { .conn = conn };
	if (!auth_bearer(&g_server.cfg, &probe)) {
		u->status = 401;
		snprintf(u->error, sizeof(u->error), "Unauthorized");
		return u;
	}
	if ((u->status = upload_check(conn, u->verified, u->error, sizeof(u->error))))
		return u;
	if (u->verified) {
		/* The declared size is the cap: a longer body is a mismatch. */
		u->cap = strtoull(head(conn, "x-workspace-size"), NULL, 10);
	} else {
		u->cap = (unsigned long long)g_server.cfg.max_workspace_bytes;
	}
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_RUNNER_UPLOADS, "upload-XXXXXX", u->tmp, sizeof(u->tmp));
	u->fd = mkostemp(u->tmp, O_CLOEXEC);
	u->sha = sbx_sha256_new();
	if (u->fd < 0 || !u->sha) {
		u->status = 400;
		snprintf(u->error, sizeof(u->error), "Cannot stage the upload: %s", strerror(errno));
	}
	return u;
}

/* Asks the disk to start on the bytes staged since the last step; advisory
 * (the fsync before publishing reports any error). */
static void start_writeback(struct upload *u)
{
	if (u->bytes - u->written_back < WRITEBACK_STEP)
		return;
	sync_file_range(u->fd, (off_t)u->written_back, (off_t)(u->bytes - u->written_back), SYNC_FILE_RANGE_WRITE);
	u->written_back = u->bytes;
}

void upload_write(struct upload *u, const char *data, size_t n)
{
	if (u->fd < 0 || u->over || u->write_errno)
		return; /* refused: read on and drop */
	if ((u->verified || u->cap) && u->bytes + n > u->cap) {
		u->over = true;
		return;
	}
	if (sbx_write_all(u->fd, data, n) != 0) {
		u->write_errno = errno;
		return;
	}
	sbx_sha256_update(u->sha, data, n);
	u->bytes += n;
	metrics_add(METRICS_UPLOAD_RECEIVED_BYTES, n);
	start_writeback(u);
}

void upload_free(struct upload *u)
{
	if (!u)
		return;
	if (u->fd >= 0) {
		close(u->fd);
		if (u->tmp[0])
			unlink(u->tmp);
	}
	if (u->sha)
		sbx_sha256_free(u->sha);
	free(u);
}
