/* env_lease.h — the readers/writer lease on one managed environment:
 * executions read, mutations write, first come first served. */
#ifndef SBX_ENV_LEASE_H
#define SBX_ENV_LEASE_H

#include <stdbool.h>

/* Takes <locks_dir>/env-<id>.lock shared (a reader) or exclusive (a
 * writer), passing first through <locks_dir>/env-<id>.turnstile: a writer
 * waiting there for the readers to leave holds back every later reader,
 * so nobody starves. The held descriptor (close it to release), or -1. */
int sbx_env_lease(const char *locks_dir, const char *id, bool exclusive);

#endif
