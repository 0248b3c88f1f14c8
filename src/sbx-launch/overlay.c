/* overlay.c — the workspace's overlay for a speculative launch, mounted in
 * the launcher's own mount namespace (bwrap 0.8 has no --overlay) and
 * bound by fd where the workspace would go. */
#include "overlay.h"
#include "bind_stage.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Never a redirect or a metadata-only copy: upper/ then holds every
 * change whole, which is what the change set and a commit read. */
#define OVERLAY_OPTIONS "redirect_dir=off,metacopy=off,index=off"

static int refuse(struct sbx_error *e, const char *what, int err)
{
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "overlay-refused", "speculative: the kernel refused the workspace's overlay: %s: %s",
		      what, strerror(err));
	sbx_error_remedy(e, "Run without \"speculative\", or give the execution directory a filesystem that overlayfs takes "
			    "as its upper layer (ext4, xfs, btrfs; not overlayfs or NFS) and, when not root, a kernel "
			    "(5.11 or later) that allows overlayfs in a user namespace.");
	return -1;
}

/* Its merged directory in the workspace's slot, the skill extensions
 * below it in theirs. */
static int take_merged(struct sbx_launch_plan *plan, const struct sbx_launch_spec *spec, int merged,
		       struct sbx_error *e)
{
	if (plan->ws_slot < 0) {
		close(merged);
		return refuse(e, "no workspace slot", EINVAL);
	}
	if (plan->bind_src[plan->ws_slot] != spec->workspace.fd)
		close(plan->bind_src[plan->ws_slot]); /* the staged one: the overlay's lower layer now */
	plan->bind_src[plan->ws_slot] = merged;
	if (plan->ext_slot >= 0 && spec->skills_ext_rel) {
		int ext = sbx_open_beneath(merged, spec->skills_ext_rel, O_PATH | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
		if (ext < 0)
			return refuse(e, "skills.extensions below the overlay", errno);
		if (plan->bind_src[plan->ext_slot] != spec->skills_ext.fd)
			close(plan->bind_src[plan->ext_slot]);
		plan->bind_src[plan->ext_slot] = ext;
	}
	return 0;
}

/* As root, in the staging's namespace: the staged workspace is the lower
 * layer, the staged overlay directory holds upper/ and work/, and the
 * merged directory is a mount point on the staging's tmpfs, where bwrap
 * (as the workload's uid) can walk to it. */
static int mount_staged(struct sbx_launch_plan *plan, const struct sbx_launch_spec *spec, struct sbx_error *e)
{
	char options[512], lower[64];
	const char *merged_at = SBX_BIND_STAGE_DIR "/merged";
	snprintf(lower, sizeof(lower), "%s/%d", SBX_BIND_STAGE_DIR, plan->ws_slot);
	snprintf(options, sizeof(options), "lowerdir=%s,upperdir=%s/overlay/upper,workdir=%s/overlay/work,%s", lower,
		 SBX_BIND_STAGE_DIR, SBX_BIND_STAGE_DIR, OVERLAY_OPTIONS);
	if (mkdir(merged_at, 0755) != 0)
		return refuse(e, "a mount point", errno);
	if (mount("sbx-overlay", merged_at, "overlay", MS_NOSUID | MS_NODEV, options) != 0)
		return refuse(e, "mount", errno);
	int merged = open(merged_at, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (merged < 0)
		return refuse(e, "open of the merged directory", errno);
	return take_merged(plan, spec, merged, e);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int err = errno;
	close(fd);
	errno = err;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* fd's directory opened again by its name in this (new) namespace, and
 * checked to be the very same directory. */
static int reopen_here(int fd, const char *what, struct sbx_error *e)
{
	char path[4096];
	struct stat was, now;
	if (fstat(fd, &was) != 0 || sbx_fd_path(fd, path, sizeof(path)) != 0)
		return refuse(e, what, errno);
	int here = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (here < 0 || fstat(here, &now) != 0 || now.st_dev != was.st_dev || now.st_ino != was.st_ino) {
		if (here >= 0)
			close(here);
		return refuse(e, what, here < 0 ? errno : ESTALE);
	}
	return here;
}

/* Not root: a user namespace of our own (this uid and gid mapped to
 * themselves) owns the mount namespace; overlayfs keeps its marks in
 * user.* xattrs there. bwrap then runs inside it, unprivileged as before. */
static int mount_userns(struct sbx_launch_plan *plan, const struct sbx_launch_spec *spec, struct sbx_error *e)
{
	char map[64], options[512];
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
		return refuse(e, "unshare(CLONE_NEWUSER | CLONE_NEWNS)", errno);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) != 0)
		return refuse(e, "uid_map", errno);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if (write_file("/proc/self/setgroups", "deny") != 0 || write_file("/proc/self/gid_map", map) != 0)
		return refuse(e, "gid_map", errno);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return refuse(e, "a private mount namespace", errno);
	int lower = reopen_here(spec->workspace.fd, "the workspace in the launcher's namespace", e);
	int dir = lower >= 0 ? reopen_here(spec->overlay.fd, "the overlay directory in the launcher's namespace", e) : -1;
	if (dir < 0)
		return -1;
	int upper = openat(dir, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int work = openat(dir, "work", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int point = openat(dir, "merged", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (upper < 0 || work < 0 || point < 0)
		return refuse(e, "upper/, work/ and merged/ of the overlay directory", errno);
	snprintf(options, sizeof(options),
		 "userxattr,lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d", lower, upper,
		 work);
	char target[64];
	snprintf(target, sizeof(target), "/proc/self/fd/%d", point);
	if (mount("sbx-overlay", target, "overlay", MS_NOSUID | MS_NODEV, options) != 0)
		return refuse(e, "mount (in a user namespace)", errno);
	int merged = openat(dir, "merged", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(lower);
	close(upper);
	close(work);
	close(point);
	close(dir);
	if (merged < 0)
		return refuse(e, "open of the merged directory", errno);
	return take_merged(plan, spec, merged, e);
}

int sbx_overlay_mount(struct sbx_launch_plan *plan, const struct sbx_launch_spec *spec, bool staged,
		      struct sbx_error *e)
{
	if (spec->overlay.fd < 0)
		return 0;
	return staged ? mount_staged(plan, spec, e) : mount_userns(plan, spec, e);
}
