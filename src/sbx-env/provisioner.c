/* provisioner.c — micromamba pinned by SHA-256 per platform (environments.md
 * 1.1): downloaded with libcurl (redirects, 120 s, 64 MiB), verified before
 * anything is published, installed by rename of a 0755 temp file (the install user runs it in its sandbox). A stored
 * binary that fails its hash is replaced. An operator may pin another
 * release: SCIENCE_AGENT_MICROMAMBA_VERSION with SCIENCE_AGENT_MICROMAMBA_SHA256. */
#include "env.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define DOWNLOAD_CAP (64u << 20)
#define DOWNLOAD_TIMEOUT_S 120
#define DEFAULT_BASE "https://github.com/mamba-org/micromamba-releases/releases/download"

struct release {
	const char *arch, *filename, *sha256;
};

static const struct release releases[] = {
	{ "x86_64", "micromamba-linux-64", "9689782d863c05a1bf5d2d371ba527104e7a4eb4310c1637d8653b751aed9c82" },
	{ "aarch64", "micromamba-linux-aarch64", "e5ba23b5945aa49dfd11022e592a510d2686a8feee810e00140b73c9fdf0ba2a" },
};

const char *env_pinned_version(void)
{
	const char *v = getenv("SCIENCE_AGENT_MICROMAMBA_VERSION");
	return v && *v ? v : MICROMAMBA_VERSION;
}

/* This machine's release and its pin (the operator's pin when both
 * variables are set; one without the other is refused). */
static int pick_release(char *filename, size_t fsize, char *sha, size_t ssize, struct sbx_error *e)
{
	struct utsname u;
	uname(&u);
	const struct release *r = NULL;
	for (size_t i = 0; i < sizeof(releases) / sizeof(releases[0]); i++)
		if (!strcmp(u.machine, releases[i].arch))
			r = &releases[i];
	if (!r) {
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "provisioner-unavailable",
			      "Managed micromamba is unavailable for architecture %s", u.machine);
		return -1;
	}
	const char *v = getenv("SCIENCE_AGENT_MICROMAMBA_VERSION"), *s = getenv("SCIENCE_AGENT_MICROMAMBA_SHA256");
	bool has_v = v && *v, has_s = s && *s;
	if (has_v != has_s || (has_s && (strlen(s) != 64 || strspn(s, "0123456789abcdef") != 64))) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-pin",
			      "SCIENCE_AGENT_MICROMAMBA_VERSION and SCIENCE_AGENT_MICROMAMBA_SHA256 (64 lowercase hex) go together");
		return -1;
	}
	snprintf(filename, fsize, "%s", r->filename);
	snprintf(sha, ssize, "%s", has_s ? s : r->sha256);
	return 0;
}

static int file_sha256(const char *path, char out[65])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)DOWNLOAD_CAP) {
		close(fd);
		return -1;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return -1;
	}
	sbx_sha256_hex(buf, (size_t)n, out);
	free(buf);
	return 0;
}

struct body {
	char *buf;
	size_t len;
	bool too_big;
	void (*progress)(const char *, double, void *);
	void *arg;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t add = size * n;
	if (b->len + add > DOWNLOAD_CAP) {
		b->too_big = true;
		return 0;
	}
	char *grown = realloc(b->buf, b->len + add);
	if (!grown)
		return 0;
	b->buf = grown;
	memcpy(b->buf + b->len, p, add);
	b->len += add;
	return add;
}

static int on_progress(void *arg, curl_off_t total, curl_off_t now, curl_off_t ut, curl_off_t un)
{
	(void)ut;
	(void)un;
	struct body *b = arg;
	if (total > (curl_off_t)DOWNLOAD_CAP) {
		b->too_big = true;
		return 1;
	}
	if (b->progress && total > 0)
		b->progress("downloading-provisioner", (double)now / (double)total, b->arg);
	return 0;
}

static int download(const char *url, struct body *b, struct sbx_error *e)
{
	CURL *h = curl_easy_init();
	char errbuf[CURL_ERROR_SIZE] = "";
	if (!h) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "download", "Provisioner download failed: libcurl did not start");
		return -1;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	const char *t = getenv("SBX_ENV_DOWNLOAD_TIMEOUT_S");
	long timeout = t && atol(t) > 0 ? atol(t) : DOWNLOAD_TIMEOUT_S;
	curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)DOWNLOAD_CAP);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, b);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	CURLcode rc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (b->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "download", "Provisioner download failed: the body is larger than 64 MiB");
		return -1;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		sbx_error_set(e, SBX_EXIT_TIMEOUT, "download", "Provisioner download failed: the download timed out after %lds",
			      timeout);
		return -1;
	}
	if (rc != CURLE_OK) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "download", "Provisioner download failed: %s",
			      errbuf[0] ? errbuf : curl_easy_strerror(rc));
		return -1;
	}
	if (status != 200 || b->len == 0) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "download", "Provisioner download failed: HTTP %ld%s", status,
			      b->len ? "" : " with an empty body");
		return -1;
	}
	return 0;
}

/* <dest>.<pid>.<random>.download, exclusive, 0755, renamed onto dest. */
static int publish(const char *dest, const char *buf, size_t len, struct sbx_error *e)
{
	char tmp[PATH_MAX + 64];
	unsigned int r = 0;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (unsigned)getpid();
	snprintf(tmp, sizeof(tmp), "%s.%d.%08x.download", dest, (int)getpid(), r);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	bool ok = fd >= 0;
	for (size_t off = 0; ok && off < len;) {
		ssize_t w = write(fd, buf + off, len - off);
		ok = w > 0;
		off += ok ? (size_t)w : 0;
	}
	ok = ok && fchmod(fd, 0755) == 0 && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	ok = ok && rename(tmp, dest) == 0;
	if (!ok) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write", "Provisioner install failed: %s: %s", dest, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

bool env_provisioner_valid(struct envctx *c)
{
	char filename[64], pin[65], have[65];
	struct sbx_error e;
	if (access(c->provisioner, X_OK) != 0)
		return false;
	if (!c->managed)
		return true;
	return pick_release(filename, sizeof(filename), pin, sizeof(pin), &e) == 0 &&
	       file_sha256(c->provisioner, have) == 0 && !strcmp(have, pin);
}

int env_provisioner_ready(struct envctx *c, void (*progress)(const char *, double, void *), void *arg,
			  struct sbx_error *e)
{
	if (!c->managed) {
		if (access(c->provisioner, X_OK) != 0) {
			sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "provisioner-unavailable",
				      "Scientific environment provisioner is unavailable: %s", c->provisioner);
			return -1;
		}
		return 0;
	}
	char filename[64], pin[65], have[65];
	if (pick_release(filename, sizeof(filename), pin, sizeof(pin), e) != 0)
		return -1;
	/* A stored binary must still be the pinned one; anything else goes. */
	if (access(c->provisioner, F_OK) == 0) {
		if (file_sha256(c->provisioner, have) == 0 && !strcmp(have, pin) && access(c->provisioner, X_OK) == 0)
			return 0;
		unlink(c->provisioner);
	}
	/* <base>/<version>/<filename>; a mirror's one trailing '/' is dropped. */
	const char *base = getenv("SCIENCE_AGENT_MICROMAMBA_BASE_URL");
	char mirror[1600], url[2048];
	snprintf(mirror, sizeof(mirror), "%.1500s", base && *base ? base : DEFAULT_BASE);
	if (strlen(mirror) && mirror[strlen(mirror) - 1] == '/')
		mirror[strlen(mirror) - 1] = '\0';
	snprintf(url, sizeof(url), "%s/%.64s/%s", mirror, env_pinned_version(), filename);
	struct body b = { .progress = progress, .arg = arg };
	int rc = download(url, &b, e);
	if (rc == 0) {
		sbx_sha256_hex(b.buf, b.len, have);
		if (strcmp(have, pin) != 0) {
			sbx_error_set(e, SBX_EXIT_INTEGRITY, "verify",
				      "Provisioner verification failed: SHA-256 %s does not match the pinned %s", have, pin);
			rc = -1;
		}
	}
	if (rc == 0)
		rc = publish(c->provisioner, b.buf, b.len, e);
	free(b.buf);
	return rc;
}
