/* output.h — stdout and stderr of a run into files under one shared
 * retention budget: a head written as it arrives and a rolling tail kept in
 * a ring file, joined with the upstream marker when bytes were dropped.
 * Memory stays flat whatever the volume; no cut splits a UTF-8 character. */
#ifndef SBX_RUN_OUTPUT_H
#define SBX_RUN_OUTPUT_H

#include "../lib/error.h"

#include <jansson.h>

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct sbx_output_stream {
	char path[PATH_MAX], ring_path[PATH_MAX + 8];
	int fd, ring_fd;
	uint64_t total;     /* bytes the workload wrote */
	uint64_t head;      /* bytes in the head (the file itself) */
	uint64_t ring;      /* bytes that went to the ring (monotonic) */
	bool truncated;
	/* Set by sbx_output_finish: the file is head_kept bytes, the marker
	 * (marker_bytes, 0 when nothing was cut) and tail_kept bytes. */
	uint64_t head_kept, marker_bytes, tail_kept;
	char sha256[65];    /* of the file as composed */
};

struct sbx_output {
	struct sbx_output_stream s[2]; /* stdout, stderr */
	uint64_t budget;               /* 0: keep everything */
	uint64_t head_used;            /* shared by both heads: at most budget / 2 */
};

int sbx_output_open(struct sbx_output *o, const char *dir, uint64_t budget, struct sbx_error *e);
/* Takes one chunk of stream i (0 stdout, 1 stderr). */
int sbx_output_add(struct sbx_output *o, int i, const char *buf, size_t len, struct sbx_error *e);
/* Composes the final files and hashes them; true in *truncated when any
 * stream lost bytes. */
int sbx_output_finish(struct sbx_output *o, bool *truncated, struct sbx_error *e);
void sbx_output_close(struct sbx_output *o);
/* A stream as the result names it: {path, bytes, sha256, truncated,
 * totalBytes, headBytes, markerBytes, tailBytes}. */
json_t *sbx_output_reference(const struct sbx_output_stream *s);

/* The marker between head and tail (the configured budget in it). */
void sbx_output_marker(uint64_t budget, char *out, size_t size);

#endif
