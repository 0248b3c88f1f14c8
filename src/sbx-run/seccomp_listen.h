/* seccomp_listen.h — the supervisor's end of seccomp denial reporting:
 * the listener sbx-seccomp-notify sends back, each notification answered
 * at once with its table row's errno and counted as a denial. */
#ifndef SBX_RUN_SECCOMP_LISTEN_H
#define SBX_RUN_SECCOMP_LISTEN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Answers per run; past it the listener is closed and the kernel refuses
 * the rest itself (ENOSYS), so a loop of refused calls costs the
 * supervisor a bounded amount and runs at the kernel's speed after. */
#define RUN_SECCOMP_REPORTS_MAX 1000

struct run_seccomp {
	int sock;          /* ours until the listener arrives, then -1 */
	int sandbox_end;   /* for sbx-launch --denials-fd; closed once it started */
	int listener;      /* -1: none (yet, or any more) */
	uint64_t answered;
	bool received;     /* a listener came: the reported calls notified us */
	bool capped;       /* closed at RUN_SECCOMP_REPORTS_MAX */
};

struct run;

/* The socket pair; on failure the run goes on without reporting (the
 * whole filter refuses everything, as sbx-launch does without the fd). */
void run_seccomp_open(struct run_seccomp *s);
/* Our socket is readable: take the listener (or learn there is none). */
void run_seccomp_receive(struct run *r);
/* The listener is readable: answer what is pending (a bounded batch). */
void run_seccomp_answer(struct run *r);
/* For the result: {reporting, answered, capped}. */
json_t *run_seccomp_report(const struct run_seccomp *s);
void run_seccomp_close(struct run_seccomp *s);

#endif
