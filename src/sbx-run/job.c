/* job.c — sbx-run as a cloud job (sbx-run(1), JOB MODE): the bootstrap
 * (fetch, claim, delete, validate), the platform's SIGTERM, and the
 * uploads of outputs, media and checkpoints through the document's grants. */
#include "run.h"
#include "../lib/child_env.h"
#include "../lib/clock.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/snap_store.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOOTSTRAP_DEADLINE_MS 120000
#define MANIFEST_SLICE_MS 3000   /* kept back from the uploads for the manifest (at most a third of the reserve) */
#define JOB_OUTPUTS_MAX 10000    /* outputs sent per run; past it the rest is not sent (one warning) */

json_t *run_job_bootstrap(struct run *r, const char *url_flag, struct sbx_error *e)
{
	struct run_job *j = calloc(1, sizeof(*j));
	char *env_url = sbx_env_take("MAPI_BOOTSTRAP_URL"), *nonce = sbx_env_take("MAPI_NONCE"), *run_id = sbx_env_take("MAPI_RUN_ID");
	const char *url = url_flag ? url_flag : env_url, *delete_url;
	json_t *doc = NULL, *request = NULL;
	char *text = NULL;
	size_t len = 0;
	r->job = j;
	if (!j || !run_id || !nonce) {
		sbx_error_set(e, SBX_EXIT_USAGE, "job-environment", "job mode needs MAPI_RUN_ID and MAPI_NONCE set");
		goto out;
	}
	if (sbx_store_init(&j->store, e) != 0 || sbx_store_url_check(j->store.c, url, "MAPI_BOOTSTRAP_URL", e) != 0)
		goto out;
	j->store.deadline_ms = sbx_mono_ms() + BOOTSTRAP_DEADLINE_MS;
	if (!(text = sbx_store_get(&j->store, url, SBX_RUN_DOCUMENT_CAP, &len, e))) {
		sbx_error_prefix(e, "fetching the run document");
		goto out;
	}
	if (!(doc = sbx_json_parse(text, len, "run document", e)) ||
	    sbx_run_document_claim(doc, run_id, nonce, &delete_url, e) != 0)
		goto out;
	/* Read once: the object is gone before anything else happens. */
	if (sbx_store_url_check(j->store.c, delete_url, "bootstrapDeleteUrl", e) != 0)
		goto out;
	if (sbx_store_delete(&j->store, delete_url, e) != 0) {
		sbx_error_prefix(e, "deleting the bootstrap object");
		e->exit_code = SBX_EXIT_INTERNAL;
		goto out;
	}
	if (sbx_run_document_parse(doc, j->store.c, &j->doc, e) != 0 ||
	    sbx_signer_from_bytes(&r->signer, j->doc.key, j->doc.key_len, e) != 0)
		goto out;
	if (!r->platform_deadline_ms)
		r->platform_deadline_ms = j->doc.deadline_ms;
	if (j->doc.reserve_ms >= 0)
		r->reserve_ms = (int)j->doc.reserve_ms;
	request = json_incref(j->doc.request);
	j->outputs = json_array();
	j->media = json_array();
	j->checkpoints = json_array();
	snprintf(r->req.execution_id, sizeof(r->req.execution_id), "%s", j->doc.run_id);
	run_event("bootstrap", r, json_pack("{s:s,s:b,s:I}", "runId", j->doc.run_id, "deleted", 1,
					    "documentBytes", (json_int_t)len));
out:
	if (text)
		memset(text, 0, len);
	free(text);
	json_decref(doc);
	free(env_url);
	free(nonce);
	free(run_id);
	return request;
}

/* Once uploading: transfers stop a slice before the hard end, so the
 * manifest (for_manifest) always has time to say what landed. */
void run_job_set_deadline(struct run *r, bool for_manifest)
{
	struct run_job *j = r->job;
	long long slice = r->reserve_ms / 3 < MANIFEST_SLICE_MS ? r->reserve_ms / 3 : MANIFEST_SLICE_MS;
	j->store.deadline_ms = j->end_ms ? j->end_ms - (for_manifest ? 0 : slice) : 0;
}

void run_job_terminated(struct run *r)
{
	struct run_job *j = r->job;
	if (j->terminated_ms)
		return;
	j->terminated_ms = sbx_mono_ms();
	/* The reserve, counted from the signal, is all that is left. */
	long long end = j->terminated_ms + r->reserve_ms;
	if (!j->end_ms || end < j->end_ms)
		j->end_ms = end;
	if (j->uploading)
		run_job_set_deadline(r, false);
}

/* The supervisor's signals during uploads: SIGTERM shortens the deadline. */
static void watch_signals(struct sbx_store *s, void *arg)
{
	struct run *r = arg;
	struct signalfd_siginfo si;
	(void)s;
	while (r->signal_fd >= 0 && read(r->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		run_job_terminated(r);
}

/* Once the sandbox is gone: uploads may take until the platform deadline. */
static void upload_phase(struct run *r)
{
	struct run_job *j = r->job;
	if (j->uploading)
		return;
	j->uploading = true;
	j->store.poll = watch_signals;
	j->store.poll_arg = r;
	long long platform = r->platform_deadline_ms ? j->started_ms + r->platform_deadline_ms : 0;
	if (platform && (!j->end_ms || platform < j->end_ms))
		j->end_ms = platform;
	run_job_set_deadline(r, false);
}

static void upload_failed(struct run *r, const struct sbx_error *e)
{
	struct run_job *j = r->job;
	if (j->failed.exit_code)
		return;
	j->failed = *e;
	sbx_diag("error", e->code, NULL, "%s", e->message);
}

/* An S3 key is UTF-8 of at most 1024 bytes; no control characters. */
static bool key_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n > 900 || strstr(name, "${")) /* S3 would substitute ${filename} in the key */
		return false;
	for (size_t i = 0; i < n;) {
		int k = sbx_utf8_sequence((const unsigned char *)name + i, n - i);
		if (k <= 0 || (k == 1 && (unsigned char)name[i] < 0x20) || name[i] == 0x7f)
			return false;
		i += (size_t)k;
	}
	return true;
}

static int upload(struct run *r, const struct sbx_post_grant *g, const char *kind, const char *name, int fd,
		  uint64_t size, json_t **rec, struct sbx_error *e)
{
	struct run_job *j = r->job;
	char sha[65], *key = NULL;
	upload_phase(r);
	if (j->failed.exit_code)
		return sbx_error_set(e, SBX_EXIT_INTERNAL, "upload-skipped", "an earlier upload failed"), -1;
	if (!key_name_ok(name))
		return sbx_error_set(e, SBX_EXIT_VIOLATION, "bad-name", "a %s's name is not a storable key", kind), -1;
	if (sbx_store_post_file(&j->store, g->url, g->fields, name, fd, size, sha, &key, e) != 0) {
		sbx_error_prefix(e, kind);
		upload_failed(r, e);
		return -1;
	}
	*rec = json_pack("{s:s,s:s,s:I,s:s}", "path", name, "key", key, "size", (json_int_t)size, "sha256", sha);
	free(key);
	if (strcmp(kind, "media")) { /* a media item has its own event */
		json_t *ev = json_deep_copy(*rec);
		json_object_set_new(ev, "kind", json_string(kind));
		run_event("upload", r, ev);
	}
	return 0;
}

int run_job_output(struct run *r, int fd, const char *rel, uint64_t size, json_t **rec, struct sbx_error *e)
{
	if (json_array_size(r->job->outputs) >= JOB_OUTPUTS_MAX) {
		if (!r->job->outputs_capped++) /* said once */
			run_event("warning", r, json_pack("{s:s,s:s}", "code", "too-many-outputs", "message",
							  "more than 10000 outputs: the rest is not sent"));
		return sbx_error_set(e, SBX_EXIT_RESOURCE, "too-many-outputs", "more than %d outputs", JOB_OUTPUTS_MAX), -1;
	}
	int rc = upload(r, &r->job->doc.outputs, "output", rel, fd, size, rec, e);
	if (rc == 0)
		json_array_append(r->job->outputs, *rec);
	return rc;
}

/* A media item or checkpoint as the supervisor took it into the store at
 * report time (the workload cannot change it since), checked on the way. */
static int upload_stored(struct run *r, const struct sbx_post_grant *g, const char *kind, json_t *item, json_t **rec,
			 struct sbx_error *e)
{
	const char *path = json_string_value(json_object_get(item, "path"));
	const char *digest = json_string_value(json_object_get(item, "digest"));
	char object[PATH_MAX + 128];
	struct stat st;
	if (!path || !digest || sbx_snap_object_path(r->store, digest, object, sizeof(object)) != 0)
		return sbx_error_set(e, SBX_EXIT_INTERNAL, "upload-failed", "a %s has no stored copy", kind), -1;
	int fd = open(object, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "store-object-missing", "%s %s: the stored copy is gone", kind, digest);
		if (fd >= 0)
			close(fd);
		upload_failed(r, e);
		return -1;
	}
	int rc = upload(r, g, kind, path, fd, (uint64_t)st.st_size, rec, e);
	close(fd);
	if (rc == 0 && strcmp(digest + 7, json_string_value(json_object_get(*rec, "sha256")))) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "store-object-changed", "%s %s: the stored copy no longer matches", kind,
			      digest);
		upload_failed(r, e);
		json_decref(*rec);
		return -1;
	}
	return rc;
}

/* One item that cannot be sent (its name): skipped, said, the rest goes on. */
static bool skipped(struct run *r, const char *kind, json_t *item, const struct sbx_error *e)
{
	if (e->exit_code != SBX_EXIT_VIOLATION)
		return false;
	r->job->skipped++;
	run_event("warning", r, json_pack("{s:s,s:s,s:s,s:O}", "code", "output-skipped", "kind", kind, "message",
					  e->message, "path", json_object_get(item, "path")));
	return true;
}

void run_job_upload_reported(struct run *r)
{
	struct run_job *j = r->job;
	struct worker *w = &r->worker;
	struct sbx_error e;
	size_t i;
	json_t *item, *rec;
	upload_phase(r);
	json_array_foreach(w->media, i, item) {
		if (upload_stored(r, &j->doc.media, "media", item, &rec, &e) != 0) {
			if (skipped(r, "media", item, &e))
				continue;
			break;
		}
		json_object_set(rec, "kind", json_object_get(item, "kind"));
		if (json_object_get(item, "caption"))
			json_object_set(rec, "caption", json_object_get(item, "caption"));
		json_array_append_new(j->media, rec);
		run_event("media", r, json_deep_copy(rec));
	}
	if (!j->doc.checkpoints.url)
		return;
	/* A path reported again replaces what it held: its last state goes. */
	json_t *last = json_object();
	json_array_foreach(w->checkpoints, i, item)
		json_object_set_new(last, sbx_json_string_or(item, "path", ""), json_integer((json_int_t)i));
	json_array_foreach(w->checkpoints, i, item) {
		if (json_integer_value(json_object_get(last, sbx_json_string_or(item, "path", ""))) != (json_int_t)i)
			continue;
		if (upload_stored(r, &j->doc.checkpoints, "checkpoint", item, &rec, &e) != 0) {
			if (skipped(r, "checkpoint", item, &e))
				continue;
			break;
		}
		json_array_append_new(j->checkpoints, rec);
	}
	json_decref(last);
}

void run_job_free(struct run *r)
{
	struct run_job *j = r->job;
	if (!j)
		return;
	json_decref(j->outputs);
	json_decref(j->media);
	json_decref(j->checkpoints);
	sbx_run_document_free(&j->doc);
	free(j);
	r->job = NULL;
}
