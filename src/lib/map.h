/* map.h — a hash map from byte-string keys to pointers, open addressing:
 * hard-link dedupe (device + inode) and the snapshot's stat cache (path). */
#ifndef SBX_MAP_H
#define SBX_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sbx_map_slot {
	uint64_t hash;
	void *key;      /* owned copy; NULL marks an empty slot */
	size_t key_len;
	void *value;
};

struct sbx_map {
	struct sbx_map_slot *slots;
	size_t cap, len;
};

void sbx_map_init(struct sbx_map *m);
/* Whether key is present (its value may be NULL). */
bool sbx_map_has(const struct sbx_map *m, const void *key, size_t len);
/* The value stored under key, or NULL. */
void *sbx_map_get(const struct sbx_map *m, const void *key, size_t len);
/* Inserts or replaces; false on allocation failure. *was_present tells
 * whether the key existed (may be NULL). */
bool sbx_map_put(struct sbx_map *m, const void *key, size_t len, void *value, bool *was_present);
/* Frees the keys; values are the caller's (free_value may be NULL). */
void sbx_map_free(struct sbx_map *m, void (*free_value)(void *));

#endif
