/* conda_list.h — what `micromamba list --json` prints (an array of
 * packages, or {packages: [...]}) into the inventory sbx-env records. */
#ifndef SBX_CONDA_LIST_H
#define SBX_CONDA_LIST_H

#include <jansson.h>
#include <stddef.h>

/* The package array of the text; NULL when it is neither form. */
json_t *sbx_conda_list(const char *text);
/* "name=version[=build]" per package with a name and a version, and the
 * version of the package named runtime (into version, unchanged if none). */
json_t *sbx_conda_package_lines(const json_t *packages, const char *runtime, char *version, size_t size);

#endif
