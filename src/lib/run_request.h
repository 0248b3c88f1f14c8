/* run_request.h — an execution request (sbx-formats(5)): validated in full,
 * then turned into the launch spec sbx-launch runs. */
#ifndef SBX_RUN_REQUEST_H
#define SBX_RUN_REQUEST_H

#include "error.h"
#include "host_dir.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SBX_OUTPUT_DEFAULT_BYTES (1ull << 30) /* maxOutputBytes default: 1 GiB */
#define SBX_CODE_MAX_BYTES (16u << 20)
#define SBX_RUN_MAX_SECRETS 32
#define SBX_SPECULATIVE_KEEP_DEFAULT_S 3600 /* a pending change waits an hour for its commit */
#define SBX_SPECULATIVE_KEEP_MAX_S 604800

/* The bounds every run has unless its limits say 0 (sbx-run(1)). */
#define SBX_MEMORY_DEFAULT_BYTES (8ll << 30)
#define SBX_MEMORY_MIN_BYTES (16ll << 20)
#define SBX_PIDS_DEFAULT 4096

struct sbx_run_limits {
	bool requested;             /* the request gave limits: they must hold exactly (a cgroup) */
	long long memory_bytes, pids, cpu_percent; /* 0: none */
};

/* Caps on what a worker may say and leave (sbx-run(1) lists the defaults
 * and which are advisory). */
struct sbx_worker_caps {
	uint64_t frame_bytes;      /* largest channel frame */
	uint64_t events;           /* worker messages in all */
	uint64_t tracking;         /* metric points, params and tags entries, log lines (advisory) */
	uint64_t log_bytes;        /* user_log text (advisory) */
	uint64_t scratch_bytes;    /* everything under /scratch */
	uint64_t output_bytes;     /* everything under /scratch/outputs */
	uint64_t media_count;      /* media items */
	uint64_t media_bytes;      /* one media item or checkpoint file */
	long long progress_interval_ms;
	uint64_t stored_bytes;     /* checkpoints and media copied into the snapshot store, in all */
};

struct sbx_run_request {
	char execution_id[161];
	char language[8];           /* shell | python | r */
	const char *code;           /* points into doc */
	size_t code_len;
	struct sbx_host_dir ws;     /* the workspace, held from the parse on */
	const char *workspace;      /* ws.path: display only */
	long long timeout_ms;       /* 0: none */
	uint64_t max_workspace_bytes; /* 0: unlimited */
	uint64_t max_workspace_files; /* names below the workspace root; 0: unlimited */
	uint64_t max_output_bytes;    /* 0: never truncate */
	struct sbx_run_limits limits;
	struct sbx_worker_caps caps;
	bool require_terminal;      /* requireTerminalMessage: a worker that ends without result/error violated it */
	bool speculative;           /* speculative: the run's changes wait in an overlay's upper layer */
	long long speculative_keep_s; /* how long the pending change stays addressable */
	json_t *doc;                /* the request */
	json_t *spec;               /* the launch spec built from it */
	json_t *egress_policy;      /* network with allowedDomains: sbx-run starts its gateway */
	char egress_revision[17];
	json_t *secret_refs;        /* secretRefs: names, or NULL */
	char device_vendor[8];      /* devices.vendor: ascend | nvidia */
	int chips[64];              /* devices.chips, sorted and unique */
	size_t n_chips;
};

/* The default bounds: SBX_DEFAULT_MEMORY_BYTES and SBX_DEFAULT_PIDS (0:
 * none) or the built-in ones; a bad value is an error naming it (exit 2). */
int sbx_run_limit_defaults(struct sbx_run_limits *l, struct sbx_error *e);

/* Parses and validates; the error names the field (exit 2). */
int sbx_run_request_parse(json_t *doc, struct sbx_run_request *r, struct sbx_error *e);
void sbx_run_request_free(struct sbx_run_request *r);

/* "Shell" / "Python" / "R", for the upstream messages. */
const char *sbx_run_language_title(const char *language);

#endif
