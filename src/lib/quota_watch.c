/* quota_watch.c — one quota check. */
#include "quota_watch.h"
#include "quota.h"

bool sbx_quota_exceeded(const char *root, uint64_t limit, uint64_t *bytes)
{
	struct sbx_usage u;
	struct sbx_error e;

	*bytes = 0;
	if (limit == 0 || sbx_quota_usage(root, &u, &e) != 0)
		return false;
	*bytes = u.bytes;
	sbx_usage_free(&u);
	return u.bytes > limit;
}
