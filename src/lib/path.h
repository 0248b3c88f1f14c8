/* path.h — lexical path checks; opening a path below a root is
 * beneath.h's (never a realpath then a reopen by name). */
#ifndef SBX_PATH_H
#define SBX_PATH_H

#include "error.h"

#include <stdbool.h>
#include <stddef.h>

/* True when `inner` (already canonical) equals `root` or lies below it at a
 * component boundary ("/a/bc" is not inside "/a/b"). Pure string logic. */
bool sbx_path_is_within(const char *root, const char *inner);

/* A relative path with no empty, "." or ".." segment and no trailing
 * slash: it cannot climb out of whatever directory it is taken below. */
bool sbx_path_plain_relative(const char *p);

/* p with its leading, repeated and trailing slashes dropped ("/a//b/" is
 * "a/b") into out; -1 (ENAMETOOLONG) when it does not fit. Pure string
 * work; "." and ".." stay for sbx_path_plain_relative to refuse. */
int sbx_path_fold_slashes(const char *p, char *out, size_t size);


#endif
