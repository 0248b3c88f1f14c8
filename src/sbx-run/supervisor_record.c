/* supervisor_record.c — reading an execution directory's supervisor.json
 * and telling a live supervisor from a dead one or a reused pid. */
#include "supervisor_record.h"
#include "../lib/beneath.h"
#include "../lib/io.h"

#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool sbx_supervisor_alive(int dirfd, const char *dir, pid_t *pid)
{
	*pid = 0;
	char rel[4096];
	if (snprintf(rel, sizeof(rel), "%s%ssupervisor.json", strcmp(dir, ".") ? dir : "", strcmp(dir, ".") ? "/" : "") >=
	    (int)sizeof(rel))
		return false;
	int fd = sbx_open_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, SBX_BENEATH_NO_SYMLINKS);
	struct stat st;
	char text[4097];
	ssize_t n = -1;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= 4096)
		n = read(fd, text, sizeof(text) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	json_t *doc = json_loadb(text, (size_t)n, 0, NULL);
	json_int_t recorded = json_integer_value(json_object_get(doc, "pid"));
	const char *start = json_string_value(json_object_get(doc, "startTime"));
	char now[32];
	bool alive = recorded > 0 && recorded < (1 << 30) && start &&
		     sbx_process_start_time((pid_t)recorded, now, sizeof(now)) == 0 && !strcmp(now, start);
	*pid = recorded > 0 && recorded < (1 << 30) ? (pid_t)recorded : 0;
	json_decref(doc);
	return alive;
}
