/* bind_stage.c — a private mount namespace in which every host object the
 * sandbox binds sits under /run/sbx-launch/<slot>, so bwrap's walk to it
 * as the workload uid never crosses a directory that uid cannot enter. */
#include "bind_stage.h"
#include "../lib/exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(struct sbx_error *e, const char *what)
{
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "bind-stage", "staging the sandbox's binds: %s: %s", what, strerror(errno));
	sbx_error_remedy(e, "sbx-launch needs CAP_SYS_ADMIN (it runs as root here) and a /run it may create %s in.",
			 SBX_BIND_STAGE_DIR);
	return -1;
}

/* /run/sbx-launch: a root-owned directory, never a link, created once. */
static int stage_dir(struct sbx_error *e)
{
	struct stat st;

	if (mkdir(SBX_BIND_STAGE_DIR, 0755) != 0 && errno != EEXIST) {
		fail(e, "mkdir " SBX_BIND_STAGE_DIR);
		return 1; /* a read-only /run (a container): not staged */
	}
	if (lstat(SBX_BIND_STAGE_DIR, &st) != 0)
		return fail(e, "lstat " SBX_BIND_STAGE_DIR);
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0) {
		errno = ENOTDIR;
		return fail(e, SBX_BIND_STAGE_DIR " is not a root-owned directory");
	}
	return 0;
}

/* Attaches a detached clone of a bound object at <stage>/<slot> and
 * returns an fd of it there. */
static int attach(int clone, size_t slot, struct sbx_error *e)
{
	char point[64];
	struct stat st;

	if (fstat(clone, &st) != 0)
		return fail(e, "fstat of a bound object");
	snprintf(point, sizeof(point), "%s/%zu", SBX_BIND_STAGE_DIR, slot);
	int made = S_ISDIR(st.st_mode) ? mkdir(point, 0755) : mknodat(AT_FDCWD, point, S_IFREG | 0444, 0);
	if (made != 0)
		return fail(e, "a mount point");
	if (move_mount(clone, "", AT_FDCWD, point, MOVE_MOUNT_F_EMPTY_PATH) != 0)
		return fail(e, "move_mount");
	int staged = open(point, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	if (staged < 0)
		return fail(e, "open of the staged mount");
	return staged;
}

int sbx_bind_stage(struct sbx_launch_plan *plan, struct sbx_error *e)
{
	int clones[SBX_BIND_FD_MAX];
	int rc = -1, overlay = -1;
	size_t n = 0;

	if (plan->n_bind == 0 && plan->overlay_dir < 0)
		return 0;
	/* A /run/sbx-launch that is not root's directory is tampering: said,
	 * never silently worked around. */
	int dir = stage_dir(e);
	if (dir != 0)
		return dir;
	/* Clones of the very objects the fds hold, taken in the namespace they
	 * live in (a bind across namespaces is refused); nothing is walked. */
	for (; n < plan->n_bind; n++) {
		clones[n] = -1;
		if (plan->bind_data[n])
			continue; /* bwrap reads data fds; it never walks to them */
		clones[n] = open_tree(plan->bind_src[n], "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
		if (clones[n] < 0) {
			rc = errno == EPERM || errno == ENOSYS ? 1 : -1; /* no sys_admin: not staged */
			fail(e, "open_tree");
			goto out;
		}
	}
	/* The overlay's directory too (upper/ and work/ must be mounts of this
	 * namespace for overlayfs to take them). */
	if (plan->overlay_dir >= 0 &&
	    (overlay = open_tree(plan->overlay_dir, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) < 0) {
		rc = errno == EPERM || errno == ENOSYS ? 1 : -1;
		fail(e, "open_tree of the overlay directory");
		goto out;
	}
	if (unshare(CLONE_NEWNS) != 0) {
		fail(e, "unshare(CLONE_NEWNS)");
		goto out;
	}
	/* Nothing mounted here propagates back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0 ||
	    mount("sbx-launch", SBX_BIND_STAGE_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=64k,nr_inodes=64") != 0) {
		fail(e, "a private tmpfs on " SBX_BIND_STAGE_DIR);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (clones[i] < 0)
			continue;
		int staged = attach(clones[i], i, e);
		if (staged < 0)
			goto out;
		plan->bind_src[i] = staged; /* held until exec; the original stays the spec's */
	}
	if (overlay >= 0) {
		/* overlay/ the workload's layers, merged/ where their overlay goes. */
		if (mkdir(SBX_BIND_STAGE_DIR "/overlay", 0755) != 0 || mkdir(SBX_BIND_STAGE_DIR "/merged", 0755) != 0 ||
		    move_mount(overlay, "", AT_FDCWD, SBX_BIND_STAGE_DIR "/overlay", MOVE_MOUNT_F_EMPTY_PATH) != 0) {
			fail(e, "the overlay directory's mount");
			goto out;
		}
		plan->overlay_dir = -1; /* staged: found by its name from here on */
	}
	rc = 0;
out:
	if (overlay >= 0)
		close(overlay);
	for (size_t i = 0; i < n; i++)
		if (clones[i] >= 0)
			close(clones[i]);
	return rc;
}
