/* secret_value.c — where a secret's value is held: locked, undumpable
 * pages cleansed when released, stdin or a file read into them whole, and
 * jansson made to cleanse what it frees. */
#include "secret_store.h"
#include "exitcodes.h"

#include <errno.h>
#include <malloc.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t pages(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return (size + page - 1) / page * page;
}

char *sbx_secret_buffer(size_t size)
{
	size_t len = pages(size);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Best effort: out of a core dump always, out of swap where the
	 * memlock limit allows. */
	madvise(p, len, MADV_DONTDUMP);
	(void)mlock(p, len);
	return p;
}

void sbx_secret_buffer_free(char *p, size_t size)
{
	if (!p)
		return;
	size_t len = pages(size);
	OPENSSL_cleanse(p, len);
	munlock(p, len);
	munmap(p, len);
}

char *sbx_secret_read_fd(int fd, size_t cap, size_t *len, const char *what, struct sbx_error *e)
{
	char *buf = sbx_secret_buffer(cap + 2);
	size_t n = 0;
	if (!buf) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "%s: out of memory", what);
		return NULL;
	}
	for (;;) {
		ssize_t got = read(fd, buf + n, cap + 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "read-failed", "%s: cannot read: %s", what, strerror(errno));
			break;
		}
		if (got == 0) {
			buf[n] = '\0';
			*len = n;
			return buf;
		}
		n += (size_t)got;
		if (n > cap) {
			sbx_error_set(e, SBX_EXIT_USAGE, "too-large", "%s: more than %zu bytes", what, cap);
			break;
		}
	}
	sbx_secret_buffer_free(buf, cap + 2);
	return NULL;
}

/* jansson's copies of a value (its lexer's buffer, its strings) are
 * cleansed when jansson frees them. */
static void cleansing_free(void *p)
{
	if (p)
		OPENSSL_cleanse(p, malloc_usable_size(p));
	free(p);
}

void sbx_secret_json_cleansing(void)
{
	json_set_alloc_funcs(malloc, cleansing_free);
}

void sbx_secret_free(struct sbx_secret *s)
{
	if (s->value)
		sbx_secret_buffer_free(s->value, s->value_len + 1);
	s->value = NULL;
	s->value_len = 0;
}
