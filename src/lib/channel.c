/* channel.c — the incremental frame decoder and the encoder. */
#include "channel.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbx_channel_init(struct sbx_channel *c, size_t max_frame)
{
	memset(c, 0, sizeof(*c));
	c->max_frame = max_frame ? max_frame : SBX_CHANNEL_MAX_FRAME;
}

void sbx_channel_free(struct sbx_channel *c)
{
	free(c->frame);
	c->frame = NULL;
}

static int violate(struct sbx_channel *c, const char *what)
{
	c->violated = true;
	snprintf(c->violation, sizeof(c->violation), "frame %llu: %s", (unsigned long long)c->frames + 1, what);
	return -1;
}

/* Strict UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
static bool valid_utf8(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned char b = p[i];
		size_t n = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
		if (n == 0 || b == 0xC0 || b == 0xC1 || b > 0xF4 || i + n > len)
			return false;
		for (size_t k = 1; k < n; k++)
			if ((p[i + k] & 0xC0) != 0x80)
				return false;
		if ((b == 0xE0 && p[i + 1] < 0xA0) || (b == 0xED && p[i + 1] > 0x9F) ||
		    (b == 0xF0 && p[i + 1] < 0x90) || (b == 0xF4 && p[i + 1] > 0x8F))
			return false;
		i += n;
	}
	return true;
}

static int deliver(struct sbx_channel *c, sbx_channel_cb cb, void *arg)
{
	char why[200];
	json_error_t jerr;
	const char *type = NULL;

	if (c->terminal_seen)
		return violate(c, "a message after the terminal result or error");
	if (!valid_utf8((const unsigned char *)c->frame, c->frame_len))
		return violate(c, "not valid UTF-8");
	json_t *m = json_loadb(c->frame, c->frame_len, JSON_REJECT_DUPLICATES, &jerr);
	if (!m) {
		snprintf(why, sizeof(why), "not valid JSON (column %d: %.80s)", jerr.column, jerr.text);
		return violate(c, why);
	}
	int kind = sbx_channel_check(m, &type, why, sizeof(why));
	if (kind < 0) {
		json_decref(m);
		return violate(c, why);
	}
	c->frames++;
	c->terminal_seen = kind == 1;
	int rc = cb ? cb(m, type, arg) : 0;
	json_decref(m);
	return rc;
}

int sbx_channel_feed(struct sbx_channel *c, const void *data, size_t len, sbx_channel_cb cb, void *arg)
{
	const unsigned char *p = data;

	if (c->violated)
		return -1;
	while (len > 0) {
		if (c->header_have < 4) {
			size_t n = 4 - c->header_have < len ? 4 - c->header_have : len;
			memcpy(c->header + c->header_have, p, n);
			c->header_have += n;
			p += n;
			len -= n;
			if (c->header_have < 4)
				break;
			uint32_t want = (uint32_t)c->header[0] << 24 | (uint32_t)c->header[1] << 16 |
					(uint32_t)c->header[2] << 8 | c->header[3];
			if (want == 0)
				return violate(c, "an empty frame");
			if (want > c->max_frame) {
				char why[96];
				snprintf(why, sizeof(why), "a length of %u bytes, over the %zu byte maximum", want, c->max_frame);
				return violate(c, why);
			}
			/* Only now, with a length within the cap, is memory taken. */
			char *frame = realloc(c->frame, want);
			if (!frame)
				return violate(c, "out of memory for a frame");
			c->frame = frame;
			c->frame_len = want;
			c->frame_have = 0;
		}
		size_t n = c->frame_len - c->frame_have < len ? c->frame_len - c->frame_have : len;
		memcpy(c->frame + c->frame_have, p, n);
		c->frame_have += n;
		p += n;
		len -= n;
		if (c->frame_have == c->frame_len) {
			c->header_have = 0;
			int rc = deliver(c, cb, arg);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

bool sbx_channel_mid_frame(const struct sbx_channel *c)
{
	return c->header_have != 0;
}

char *sbx_channel_encode(const json_t *message, size_t *len)
{
	char *text = json_dumps(message, JSON_COMPACT);
	if (!text)
		return NULL;
	size_t n = strlen(text);
	char *frame = malloc(n + 4);
	if (frame) {
		frame[0] = (char)(n >> 24);
		frame[1] = (char)(n >> 16);
		frame[2] = (char)(n >> 8);
		frame[3] = (char)n;
		memcpy(frame + 4, text, n);
		*len = n + 4;
	}
	free(text);
	return frame;
}
