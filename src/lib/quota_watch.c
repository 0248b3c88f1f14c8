/* quota_watch.c — one quota check. */
#include "quota_watch.h"
#include "quota.h"
#include "workspace_owner.h"

enum sbx_quota_state sbx_quota_check_at(int rootfd, uint64_t max_bytes, uint64_t max_files, uint64_t *bytes)
{
	struct sbx_usage u;
	struct sbx_error e;

	*bytes = 0;
	if ((max_bytes == 0 && max_files == 0) || sbx_quota_usage_capped_at(rootfd, max_bytes, max_files, &u, &e) != 0)
		return SBX_QUOTA_FITS;
	*bytes = u.charged_bytes;
	sbx_usage_free(&u);
	if (max_bytes && u.charged_bytes > max_bytes)
		return SBX_QUOTA_OVER;
	if (max_files && u.entries > max_files)
		return SBX_QUOTA_OVER_FILES;
	return u.max_depth > SBX_WORKSPACE_MAX_DEPTH ? SBX_QUOTA_TOO_DEEP : SBX_QUOTA_FITS;
}

bool sbx_quota_breach(enum sbx_quota_state q, bool during, uint64_t max_bytes, uint64_t max_files, char *out,
		      size_t size)
{
	if (q == SBX_QUOTA_OVER)
		sbx_quota_message(during, max_bytes, out, size);
	else if (q == SBX_QUOTA_OVER_FILES)
		sbx_quota_files_message(during, max_files, out, size);
	return sbx_quota_over(q);
}

bool sbx_quota_exceeded_at(int rootfd, uint64_t limit, uint64_t *bytes)
{
	return sbx_quota_check_at(rootfd, limit, 0, bytes) == SBX_QUOTA_OVER;
}
