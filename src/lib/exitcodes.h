/* exitcodes.h — the exit-code table shared by every sbx stage; man pages
 * print it from sbx_exit_table so the codes mean the same everywhere. */
#ifndef SBX_EXITCODES_H
#define SBX_EXITCODES_H

#include <stddef.h>

enum sbx_exit {
	SBX_EXIT_OK = 0,         /* success */
	SBX_EXIT_WORKLOAD = 1,   /* the workload ran and failed */
	SBX_EXIT_USAGE = 2,      /* usage error or bad input */
	SBX_EXIT_POLICY = 3,     /* refused by policy */
	SBX_EXIT_NO_SANDBOX = 4, /* this environment cannot sandbox */
	SBX_EXIT_INTERNAL = 5,   /* internal error (a bug or an I/O failure) */
	/* The supervisor's failure classes (sbx-run, sbx-quota watch). */
	SBX_EXIT_RESOURCE = 6,   /* resource-exhausted: a quota or limit was crossed */
	SBX_EXIT_TIMEOUT = 7,    /* the deadline passed */
	SBX_EXIT_VIOLATION = 8,  /* sandbox-violation: the workload broke the protocol */
	SBX_EXIT_INTEGRITY = 9,  /* integrity: stored state failed its check */
	SBX_EXIT_CANCELLED = 10, /* cancelled by a signal or `sbx-run cancel` */
};

struct sbx_exit_entry {
	int code;
	const char *name;    /* stable machine name */
	const char *meaning; /* one line for --help and man pages */
	const char *failure_class; /* a result's failureClass: user, policy, infra, ...; NULL for ok */
};

extern const struct sbx_exit_entry sbx_exit_table[];
extern const size_t sbx_exit_table_len;

const char *sbx_exit_name(int code);
/* The failureClass of a run that ended with code: NULL for success, "infra"
 * for a code the table does not know. */
const char *sbx_exit_failure_class(int code);

#endif
