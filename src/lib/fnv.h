/* fnv.h — FNV-1a, a fast non-cryptographic 64-bit hash for cache file
 * names and table fingerprints; never for anything an attacker chooses
 * to collide with (those compare the full key). */
#ifndef SBX_FNV_H
#define SBX_FNV_H

#include <stddef.h>
#include <stdint.h>

#define SBX_FNV_INIT 1469598103934665603ull

uint64_t sbx_fnv1a64(uint64_t h, const void *data, size_t len);

#endif
