/* gateway_ready.c — waiting for an egress gateway sbx-run started to say
 * it listens, or taking the reason it gave for not starting. */
#include "run.h"
#include "../lib/io.h"
#include "../lib/json.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READY_TIMEOUT_MS 10000

bool run_gateway_ready(int ready_fd, bool started, const char *err_path, char *line, size_t size)
{
	char buf[16] = "", *out;
	struct pollfd p = { .fd = ready_fd, .events = POLLIN };
	ssize_t n = started && poll(&p, 1, READY_TIMEOUT_MS) == 1 ? read(ready_fd, buf, sizeof(buf) - 1) : -1;
	close(ready_fd);
	if (n >= 6 && !strncmp(buf, "ready\n", 6))
		return true;
	size_t len;
	struct sbx_error ignored;
	snprintf(line, size, "the gateway did not start");
	if ((out = sbx_read_file_capped(err_path, 1u << 16, &len, &ignored))) {
		json_t *diag;
		sbx_last_line(out, line, size);
		if ((diag = json_loads(line, 0, NULL)))
			snprintf(line, size, "%s", sbx_json_string_or(diag, "message", line));
		json_decref(diag);
		free(out);
	}
	return false;
}

