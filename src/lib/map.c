/* map.c — open addressing with linear probing, grown at 50% load. */
#include "map.h"
#include "fnv.h"

#include <stdlib.h>
#include <string.h>

void sbx_map_init(struct sbx_map *m)
{
	memset(m, 0, sizeof(*m));
}

static struct sbx_map_slot *find(const struct sbx_map *m, uint64_t h, const void *key, size_t len)
{
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct sbx_map_slot *s = &m->slots[i];
		if (!s->key || (s->hash == h && s->key_len == len && memcmp(s->key, key, len) == 0))
			return s;
	}
}

bool sbx_map_has(const struct sbx_map *m, const void *key, size_t len)
{
	return m->cap && find(m, sbx_fnv1a64(SBX_FNV_INIT, key, len), key, len)->key != NULL;
}

void *sbx_map_get(const struct sbx_map *m, const void *key, size_t len)
{
	if (!m->cap)
		return NULL;
	struct sbx_map_slot *s = find(m, sbx_fnv1a64(SBX_FNV_INIT, key, len), key, len);
	return s->key ? s->value : NULL;
}

static bool grow(struct sbx_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct sbx_map_slot *old = m->slots;
	size_t old_cap = m->cap;

	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return false;
	}
	m->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].key)
			*find(m, old[i].hash, old[i].key, old[i].key_len) = old[i];
	free(old);
	return true;
}

bool sbx_map_put(struct sbx_map *m, const void *key, size_t len, void *value, bool *was_present)
{
	if ((m->len + 1) * 2 > m->cap && !grow(m))
		return false;
	uint64_t h = sbx_fnv1a64(SBX_FNV_INIT, key, len);
	struct sbx_map_slot *s = find(m, h, key, len);
	if (was_present)
		*was_present = s->key != NULL;
	if (!s->key) {
		if (!(s->key = malloc(len ? len : 1)))
			return false;
		memcpy(s->key, key, len);
		s->key_len = len;
		s->hash = h;
		m->len++;
	}
	s->value = value;
	return true;
}

void sbx_map_free(struct sbx_map *m, void (*free_value)(void *))
{
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].key)
			continue;
		free(m->slots[i].key);
		if (free_value)
			free_value(m->slots[i].value);
	}
	free(m->slots);
	sbx_map_init(m);
}
