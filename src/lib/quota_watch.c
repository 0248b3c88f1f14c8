/* quota_watch.c — one quota check. */
#include "quota_watch.h"
#include "quota.h"

#include <fcntl.h>
#include <unistd.h>

bool sbx_quota_exceeded_at(int rootfd, uint64_t limit, uint64_t *bytes)
{
	struct sbx_usage u;
	struct sbx_error e;

	*bytes = 0;
	if (limit == 0 || sbx_quota_usage_at(rootfd, &u, &e) != 0)
		return false;
	*bytes = u.bytes;
	sbx_usage_free(&u);
	return u.bytes > limit;
}

bool sbx_quota_exceeded(const char *root, uint64_t limit, uint64_t *bytes)
{
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	*bytes = 0;
	if (fd < 0)
		return false;
	bool over = sbx_quota_exceeded_at(fd, limit, bytes);
	close(fd);
	return over;
}
