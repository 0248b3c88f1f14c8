/* curl_dl.h — libcurl, loaded only when a program first needs it: sbx-run
 * starts once per execution and only its job mode talks HTTP, so linking
 * libcurl (and the libraries it pulls in) would tax every local run. */
#ifndef SBX_CURL_DL_H
#define SBX_CURL_DL_H

#include "../lib/error.h"

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

struct sbx_curl {
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	curl_mime *(*mime_init)(CURL *);
	curl_mimepart *(*mime_addpart)(curl_mime *);
	CURLcode (*mime_name)(curl_mimepart *, const char *);
	CURLcode (*mime_data)(curl_mimepart *, const char *, size_t);
	CURLcode (*mime_filename)(curl_mimepart *, const char *);
	CURLcode (*mime_type)(curl_mimepart *, const char *);
	CURLcode (*mime_data_cb)(curl_mimepart *, curl_off_t, curl_read_callback, curl_seek_callback,
				 curl_free_callback, void *);
	void (*mime_free)(curl_mime *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLU *(*url)(void);
	CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
	CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
	void (*url_cleanup)(CURLU *);
	void (*free)(void *);
};

/* The loaded library (once per process; later calls return the same
 * table), or NULL with an infra error naming what is missing. */
const struct sbx_curl *sbx_curl_load(struct sbx_error *e);

#endif
