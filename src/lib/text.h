/* text.h — trimming ASCII white space, in place or into a copy. */
#ifndef SBX_TEXT_H
#define SBX_TEXT_H

#include <stddef.h>

/* s without leading and trailing white space (the end is cut in place). */
char *sbx_trim(char *s);
/* A trimmed copy of the n bytes at s (NULL when out of memory); free() it. */
char *sbx_trim_dup(const char *s, size_t n);

#endif
