/* uuid.h — random (version 4) UUIDs from getrandom(2), lower-case. */
#ifndef SBX_UUID_H
#define SBX_UUID_H

#include <stddef.h>

#define SBX_UUID_LEN 36

/* prefix followed by a new UUID, into out. */
void sbx_uuid4(const char *prefix, char *out, size_t size);

#endif
