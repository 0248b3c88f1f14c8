/* atomic_file.h — crash-safe file replacement: temp file in the same
 * directory, fsync, rename over the target, fsync the directory. */
#ifndef SBX_ATOMIC_FILE_H
#define SBX_ATOMIC_FILE_H

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Replaces path with exactly buf[0..len) and the given mode. Readers see
 * the old content or the new, never a mix; on failure nothing is left. */
int sbx_atomic_write(const char *path, const void *buf, size_t len, mode_t mode,
		     struct sbx_error *e);
/* The same; without durable, no fsync: for transient files whose loss in a
 * power cut is harmless (a rename still shows old or new, never a mix). */
int sbx_atomic_replace(const char *path, const void *buf, size_t len, mode_t mode, bool durable,
		       struct sbx_error *e);

/* The same (durable) for name below dirfd: the temp file is made there
 * too, with O_EXCL | O_NOFOLLOW, so no path is resolved again. */
int sbx_atomic_write_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode,
			struct sbx_error *e);

/* mkdir -p: the last component is created with mode, missing parents 0755. */
int sbx_mkdir_p(const char *path, mode_t mode, struct sbx_error *e);

#endif
