/* quota_watch.c — one quota check. */
#include "quota_watch.h"
#include "quota.h"
#include "workspace_owner.h"

#include <fcntl.h>
#include <unistd.h>

enum sbx_quota_state sbx_quota_check_at(int rootfd, uint64_t limit, uint64_t *bytes)
{
	struct sbx_usage u;
	struct sbx_error e;

	*bytes = 0;
	if (limit == 0 || sbx_quota_usage_at(rootfd, &u, &e) != 0)
		return SBX_QUOTA_FITS;
	*bytes = u.bytes;
	sbx_usage_free(&u);
	return u.bytes > limit ? SBX_QUOTA_OVER : u.max_depth > SBX_WORKSPACE_MAX_DEPTH ? SBX_QUOTA_TOO_DEEP : SBX_QUOTA_FITS;
}

bool sbx_quota_exceeded_at(int rootfd, uint64_t limit, uint64_t *bytes)
{
	return sbx_quota_check_at(rootfd, limit, bytes) == SBX_QUOTA_OVER;
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
