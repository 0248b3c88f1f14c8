/* curl_dl.c — dlopen of libcurl.so.4 and the table of the calls sbx makes;
 * curl_global_init runs once, before any handle exists. */
#include "curl_dl.h"
#include "../lib/exitcodes.h"

#include <dlfcn.h>
#include <stddef.h>

static struct sbx_curl table;
static int loaded; /* 0: not tried, 1: ready, -1: failed */

struct symbol {
	const char *name;
	size_t offset;
};

#define SYM(field, name) { name, offsetof(struct sbx_curl, field) }
static const struct symbol symbols[] = {
	SYM(easy_init, "curl_easy_init"),       SYM(easy_setopt, "curl_easy_setopt"),
	SYM(easy_perform, "curl_easy_perform"), SYM(easy_getinfo, "curl_easy_getinfo"),
	SYM(easy_cleanup, "curl_easy_cleanup"), SYM(easy_strerror, "curl_easy_strerror"),
	SYM(mime_init, "curl_mime_init"),       SYM(mime_addpart, "curl_mime_addpart"),
	SYM(mime_name, "curl_mime_name"),       SYM(mime_data, "curl_mime_data"),
	SYM(mime_filename, "curl_mime_filename"), SYM(mime_type, "curl_mime_type"),
	SYM(mime_data_cb, "curl_mime_data_cb"), SYM(mime_free, "curl_mime_free"),
	SYM(slist_append, "curl_slist_append"), SYM(slist_free_all, "curl_slist_free_all"),
	SYM(url, "curl_url"),                   SYM(url_set, "curl_url_set"),
	SYM(url_get, "curl_url_get"),           SYM(url_cleanup, "curl_url_cleanup"),
	SYM(free, "curl_free"),
};

const struct sbx_curl *sbx_curl_load(struct sbx_error *e)
{
	if (loaded == 0) {
		loaded = -1;
		void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
		CURLcode (*global_init)(long) = lib ? (CURLcode(*)(long))dlsym(lib, "curl_global_init") : NULL;
		size_t i = 0;
		for (; global_init && i < sizeof(symbols) / sizeof(symbols[0]); i++) {
			void *fn = dlsym(lib, symbols[i].name);
			if (!fn)
				break;
			*(void **)((char *)&table + symbols[i].offset) = fn;
		}
		if (global_init && i == sizeof(symbols) / sizeof(symbols[0]) && global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK)
			loaded = 1;
	}
	if (loaded < 0) {
		const char *why = dlerror();
		sbx_error_set(e, SBX_EXIT_INTERNAL, "libcurl-missing", "libcurl.so.4 could not be loaded: %s",
			      why ? why : "a symbol is missing or curl_global_init failed");
		sbx_error_remedy(e, "install libcurl4 (Debian: apt-get install libcurl4)");
		return NULL;
	}
	return &table;
}
