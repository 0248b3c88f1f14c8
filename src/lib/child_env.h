/* child_env.h — the environment every child of an sbx program gets: built
 * from a pass-list of names, never the whole of ours, so the runner token
 * and other secrets reach no helper that does not need them. */
#ifndef SBX_CHILD_ENV_H
#define SBX_CHILD_ENV_H

#include <stddef.h>

#define SBX_PASS_ENV_MAX 64 /* names in SBX_PASS_ENV */

/* True when NAME (len bytes) names a secret: it holds TOKEN, SECRET,
 * PASSWORD, PASSWD, CREDENTIAL, HMAC, API_KEY, ACCESS_KEY or PRIVATE_KEY
 * (any case, '_' or '-' or nothing between the words), or a _KEY part. */
int sbx_env_name_is_secret(const char *name, size_t len);

/* True when the variable NAME (up to '=' or the end) may pass to a child:
 * PATH, HOME, USER, LOGNAME, LANG, LANGUAGE, TZ, TMPDIR, TERM, NO_COLOR,
 * XDG_STATE_HOME, XDG_CACHE_HOME, SCIENTIFIC_ENVS, the sanitizers' options,
 * LC_*, SBX_* and SCIENCE_AGENT_*, and the names listed in SBX_PASS_ENV
 * (comma-separated); never one that names a secret (above) nor MAPI_*. */
int sbx_child_env_passes(const char *name);

/* A NULL-terminated copy of the passing entries of environ (the strings
 * are environ's own; free only the array). NULL when out of memory. */
char **sbx_child_environ(void);

/* A copy of the variable, then erased from this process's environment
 * and from the block /proc/<pid>/environ shows; NULL when unset or empty. */
char *sbx_env_take(const char *name);

#endif
