/* program_path.h — where a program is: on PATH like execvp, or next to the
 * running executable. */
#ifndef SBX_PROGRAM_PATH_H
#define SBX_PROGRAM_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* Resolves a program name like execvp: a name with a '/' is taken as is,
 * otherwise each $PATH entry is tried for an executable regular file.
 * Writes an absolute path into out; false when nothing is found. */
bool sbx_find_executable(const char *name, char *out, size_t size);

/* The program next to this executable (bin/sbx-launch), else on PATH. */
int sbx_sibling_program(const char *name, char *out, size_t size);

#endif
