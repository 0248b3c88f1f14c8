/* host.c — scanning the host paths a launch binds or masks. */
#include "host.h"
#include "../lib/program_path.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const ca_dirs[] = { "/etc/ssl/certs", "/etc/pki/tls/certs", "/etc/pki/ca-trust", NULL };
static const char *const ca_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem", NULL,
};
static const char *const interpreter_dirs[] = { "/usr/bin", "/usr/local/bin", NULL };

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* python, python3, python3.N, R, Rscript */
static bool is_interpreter(const char *name)
{
	if (!strcmp(name, "python") || !strcmp(name, "python3") || !strcmp(name, "R") || !strcmp(name, "Rscript"))
		return true;
	if (strncmp(name, "python3.", 8) != 0 || !name[8])
		return false;
	for (const char *p = name + 8; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan_interpreters(struct sbx_strvec *masks)
{
	for (size_t d = 0; interpreter_dirs[d]; d++) {
		DIR *dir = opendir(interpreter_dirs[d]);
		for (struct dirent *de; dir && (de = readdir(dir));) {
			char path[PATH_MAX];
			if (!is_interpreter(de->d_name) ||
			    snprintf(path, sizeof(path), "%s/%s", interpreter_dirs[d], de->d_name) >= (int)sizeof(path))
				continue;
			char *real = realpath(path, NULL);
			/* Dangling links are skipped; only what /usr shows inside counts. */
			if (real && is_file(real) && sbx_path_is_within("/usr", real))
				sbx_strvec_push(masks, real);
			free(real);
		}
		if (dir)
			closedir(dir);
	}
	if (masks->len < 2)
		return;
	qsort(masks->items, masks->len, sizeof(char *), by_string);
	size_t out = 1;
	for (size_t i = 1; i < masks->len; i++) {
		if (strcmp(masks->items[i], masks->items[out - 1]) == 0)
			free(masks->items[i]);
		else
			masks->items[out++] = masks->items[i];
	}
	masks->len = out;
	masks->items[out] = NULL;
}

void sbx_launch_host_scan(bool with_masks, struct sbx_launch_host *h)
{
	memset(h, 0, sizeof(*h));
	h->report_fd = h->report_python_fd = h->egress_bridge_fd = h->egress_socket_fd = h->trust_fd = h->notify_fd = -1;
	sbx_strvec_init(&h->masks);
	h->alternatives = is_dir("/etc/alternatives");
	h->fonts = is_dir("/etc/fonts");
	for (size_t i = 0; ca_dirs[i] && !h->ca_dir[0]; i++)
		if (is_dir(ca_dirs[i]))
			snprintf(h->ca_dir, sizeof(h->ca_dir), "%s", ca_dirs[i]);
	for (size_t i = 0; ca_bundles[i] && !h->ca_bundle[0]; i++)
		if (is_file(ca_bundles[i]))
			snprintf(h->ca_bundle, sizeof(h->ca_bundle), "%s", ca_bundles[i]);
	h->ca_bundle_in_dir = h->ca_dir[0] && h->ca_bundle[0] && sbx_path_is_within(h->ca_dir, h->ca_bundle);
	if (with_masks)
		scan_interpreters(&h->masks);
}

int sbx_launch_host_find_report(struct sbx_launch_host *h, struct sbx_error *e)
{
	struct stat st;
	h->report_python[0] = '\0';
	if (sbx_sibling_program("sbx-report", h->report, sizeof(h->report)) != 0) {
		h->report[0] = '\0';
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "no-report",
			      "channel: a worker channel needs sbx-report installed beside sbx-launch");
		return -1;
	}
	/* <prefix>/bin/sbx-report -> <prefix>/share/sbx/python, in a checkout
	 * and after make install alike; absent, shells still have sbx-report. */
	char *slash = strrchr(h->report, '/');
	int n = slash ? snprintf(h->report_python, sizeof(h->report_python), "%.*s/../share/sbx/python",
				 (int)(slash - h->report), h->report)
		      : -1;
	if (n < 0 || (size_t)n >= sizeof(h->report_python) ||
	    (h->report_python_fd = open(h->report_python, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		h->report_python[0] = '\0';
	if ((h->report_fd = open(h->report, O_PATH | O_CLOEXEC)) < 0 || fstat(h->report_fd, &st) != 0 ||
	    !S_ISREG(st.st_mode)) {
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "no-report", "channel: %.300s cannot be opened", h->report);
		return -1;
	}
	return 0;
}

void sbx_launch_host_free(struct sbx_launch_host *h)
{
	sbx_strvec_free(&h->masks);
	int *fds[] = { &h->report_fd, &h->report_python_fd, &h->egress_bridge_fd, &h->egress_socket_fd, &h->trust_fd,
		       &h->notify_fd };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	for (size_t i = 0; i < h->n_read_only; i++)
		close(h->read_only_fd[i]);
	h->n_read_only = 0;
}

int sbx_launch_host_open_read_only(struct sbx_launch_host *h, const struct sbx_strvec *paths, const char *field,
				   struct sbx_error *e)
{
	for (size_t i = 0; i < paths->len; i++) {
		if (h->n_read_only == SBX_LAUNCH_READ_ONLY_MAX) {
			sbx_error_set(e, SBX_EXIT_USAGE, "too-many", "%s: at most %d read-only paths in all", field,
				      SBX_LAUNCH_READ_ONLY_MAX);
			return -1;
		}
		/* No symlink on the way: a path that was canonical when given
		 * cannot be redirected since by a component swapped for one
		 * (a wheel's directory lies in a workspace the workload owns). */
		int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		int fd = root < 0 ? -1 : sbx_open_beneath(root, paths->items[i] + 1, O_PATH, SBX_BENEATH_NO_SYMLINKS);
		if (root >= 0) {
			int saved = errno;
			close(root);
			errno = saved;
		}
		if (fd < 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%s: %.300s: %s", field, paths->items[i],
				      errno == ELOOP ? "a symlink on the path (it must be canonical)" : strerror(errno));
			return -1;
		}
		h->read_only_fd[h->n_read_only++] = fd;
	}
	return 0;
}

int sbx_launch_host_open_socket(struct sbx_launch_host *h, const char *path, struct sbx_error *e)
{
	struct stat st;

	if ((h->egress_socket_fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(h->egress_socket_fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "no-egress-socket", "network.socket: %.300s is not a socket", path);
		return -1;
	}
	return 0;
}

/* A static helper beside this program, opened once (O_PATH) to be bound
 * by fd: 0, or -1 with path emptied. */
static int open_helper(const char *name, char *path, size_t size, int *fd)
{
	struct stat st;
	if (sbx_sibling_program(name, path, size) == 0 && (*fd = open(path, O_PATH | O_CLOEXEC)) >= 0 &&
	    fstat(*fd, &st) == 0 && S_ISREG(st.st_mode))
		return 0;
	path[0] = '\0';
	return -1;
}

int sbx_launch_host_find_notify(struct sbx_launch_host *h, struct sbx_error *e)
{
	if (open_helper("sbx-seccomp-notify", h->notify, sizeof(h->notify), &h->notify_fd) == 0)
		return 0;
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "no-seccomp-notify",
		      "--denials-fd: reporting denials needs sbx-seccomp-notify installed beside sbx-launch");
	return -1;
}

int sbx_launch_host_find_bridge(struct sbx_launch_host *h, struct sbx_error *e)
{
	if (open_helper("sbx-egress-bridge", h->egress_bridge, sizeof(h->egress_bridge), &h->egress_bridge_fd) == 0)
		return 0;
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "no-egress-bridge",
		      "network.mode: domain-allowlist needs sbx-egress-bridge installed beside sbx-launch");
	return -1;
}

/* The file at path, a regular file (never a FIFO or a device to block
 * on, never through a symlink), read whole up to cap; NULL and why. */
static char *read_regular(const char *path, size_t cap, size_t *len, const char **why)
{
	struct stat st;
	struct sbx_error ignored;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char *text = NULL;
	if (fd < 0 || fstat(fd, &st) != 0)
		*why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		*why = "not a regular file";
	else if (!(text = sbx_read_fd_capped(fd, cap, len, path, &ignored)))
		*why = "larger than its cap";
	if (fd >= 0)
		close(fd);
	return text;
}

/* Copies the CERTIFICATE blocks of PEM text, and nothing else (a private
 * key beside them stays out of the sandbox); the count copied. */
static int copy_certificates(int fd, const char *text, size_t len)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----", end[] = "-----END CERTIFICATE-----";
	int n = 0;
	for (const char *at = text, *b; (b = memmem(at, len - (size_t)(at - text), begin, sizeof(begin) - 1));) {
		const char *e = memmem(b, len - (size_t)(b - text), end, sizeof(end) - 1);
		if (!e)
			break;
		at = e + sizeof(end) - 1;
		if (sbx_write_all(fd, b, (size_t)(at - b)) != 0 || sbx_write_all(fd, "\n", 1) != 0)
			return -1;
		n++;
	}
	return n;
}

int sbx_launch_host_open_trust(struct sbx_launch_host *h, const char *ca, struct sbx_error *e)
{
	const char *why = NULL;
	size_t len = 0, ca_len = 0;
	char *bundle = h->ca_bundle[0] ? read_regular(h->ca_bundle, 16u << 20, &len, &why) : NULL;
	char *extra = !why ? read_regular(ca, 64u << 10, &ca_len, &why) : NULL;
	int fd = !why ? memfd_create("sbx-trust-bundle", MFD_CLOEXEC) : -1, copied = 0;
	if (!why && (fd < 0 || (bundle && sbx_write_all(fd, bundle, len) != 0) || sbx_write_all(fd, "\n", 1) != 0 ||
		     (copied = copy_certificates(fd, extra, ca_len)) < 0 || lseek(fd, 0, SEEK_SET) != 0))
		why = strerror(errno);
	else if (!why && copied == 0)
		why = "holds no PEM certificate";
	free(bundle);
	free(extra);
	if (why) {
		if (fd >= 0)
			close(fd);
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "network.caCertificate: %.300s: %s", ca, why);
		return -1;
	}
	h->trust_fd = fd;
	return 0;
}
