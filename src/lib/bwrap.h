/* bwrap.h — finding the bubblewrap binary and reading what it says of
 * itself (--version, --help), with the same caps and deadline as a probe. */
#ifndef SBX_BWRAP_H
#define SBX_BWRAP_H

#include <stdbool.h>
#include <stddef.h>

#include "program_path.h"

/* The bwrap the caller asked for: the flag, else $SBX_BWRAP, else
 * $SCIENCE_AGENT_BWRAP_PATH, else "bwrap". */
const char *sbx_bwrap_requested(const char *flag);

/* "0.8.0" from "bubblewrap 0.8.0"; "" when it cannot be read. */
void sbx_bwrap_version(const char *bwrap, int timeout_ms, char *out, size_t size);

/* Compares dotted versions numerically: <0, 0, >0. */
int sbx_version_compare(const char *a, const char *b);

/* The options sbx cannot work without. */
extern const char *const sbx_bwrap_required_options[];

/* Runs `bwrap --help` and lists the required options it lacks,
 * space-separated, in missing. Returns false when --help cannot run
 * (the reason is in missing). */
bool sbx_bwrap_check_help(const char *bwrap, int timeout_ms, char *missing, size_t size);

#endif
