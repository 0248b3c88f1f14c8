/* overlay.c — the workspace's overlay for a speculative launch, mounted in
 * the workload's own user and mount namespaces (bwrap 0.8 has no
 * --overlay) and bound by fd where the workspace would go. */
#include "overlay.h"
#include "bind_stage.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int refuse(struct sbx_error *e, const char *what, int err)
{
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "overlay-refused", "speculative: the kernel refused the workspace's overlay: %s: %s",
		      what, strerror(err));
	sbx_error_remedy(e, "Run without \"speculative\", or use a kernel (5.11 or later) that lets an unprivileged user "
			    "namespace mount overlayfs, with the execution directory on a filesystem overlayfs takes as "
			    "its upper layer with user xattrs (ext4, xfs, btrfs; not overlayfs or NFS).");
	return -1;
}

/* Its merged directory in the workspace's slot, the skill extensions
 * below it in theirs. */
static int take_merged(struct sbx_launch_plan *plan, const struct sbx_launch_spec *spec, int merged,
		       struct sbx_error *e)
{
	close(plan->bind_src[plan->ws_slot]); /* reopened here: the overlay's lower layer now */
	plan->bind_src[plan->ws_slot] = merged;
	if (plan->ext_slot >= 0 && spec->skills_ext_rel) {
		int ext = sbx_open_beneath(merged, spec->skills_ext_rel, O_PATH | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
		if (ext < 0)
			return refuse(e, "skills.extensions below the overlay", errno);
		close(plan->bind_src[plan->ext_slot]); /* reopened here */
		plan->bind_src[plan->ext_slot] = ext;
	}
	return 0;
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

/* A user namespace mapping this uid and gid to themselves, owning a new
 * mount namespace that propagates nothing back. */
static int enter_namespaces(struct sbx_error *e)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
		return refuse(e, "unshare(CLONE_NEWUSER | CLONE_NEWNS)", errno);
	/* The uid switch left this process not dumpable, and so its /proc
	 * files root's: dumpable just while it writes its own maps. */
	int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	int rc = write_file("/proc/self/uid_map", map);
	const char *what = "uid_map";
	if (rc == 0) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		rc = write_file("/proc/self/setgroups", "deny") != 0 || write_file("/proc/self/gid_map", map) != 0 ? -1 : 0;
		what = "gid_map";
	}
	int err = errno;
	prctl(PR_SET_DUMPABLE, dumpable > 0 ? dumpable : 0, 0, 0, 0);
	if (rc != 0)
		return refuse(e, what, err);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return refuse(e, "a private mount namespace", errno);
	return 0;
}

/* Where an fd's object is, by name and identity. */
struct named {
	char path[4096];
	dev_t dev;
	ino_t ino;
	bool set;
};

static int name_of(int fd, struct named *n)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || sbx_fd_path(fd, n->path, sizeof(n->path)) != 0)
		return -1;
	n->dev = st.st_dev;
	n->ino = st.st_ino;
	n->set = true;
	return 0;
}

/* The same object opened again by its name in this (new) namespace: an fd
 * of the old one names no path here, for bwrap or for overlayfs. */
static int reopen(const struct named *n)
{
	struct stat st;
	int fd = open(n->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != n->dev || st.st_ino != n->ino)) {
		close(fd);
		return errno = ESTALE, -1;
	}
	return fd;
}

static int open_in(int dir, const char *name)
{
	return openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int sbx_overlay_mount(struct sbx_launch_plan *plan, const struct sbx_launch_spec *spec, bool staged,
		      struct sbx_error *e)
{
	char options[512], target[64];
	if (spec->overlay.fd < 0)
		return 0;
	if (plan->ws_slot < 0)
		return refuse(e, "no workspace slot", EINVAL);
	/* Every object bwrap mounts (and the layers), named before the new
	 * namespaces and opened again by that name in them. */
	struct named *names = calloc(plan->n_bind + 1, sizeof(*names));
	if (!names)
		return refuse(e, "naming the binds", ENOMEM);
	int rc = -1;
	for (size_t i = 0; i < plan->n_bind; i++)
		if (!plan->bind_data[i] && name_of(plan->bind_src[i], &names[i]) != 0) {
			refuse(e, "naming a bound object", errno);
			goto out;
		}
	if (!staged && name_of(spec->overlay.fd, &names[plan->n_bind]) != 0) {
		refuse(e, "naming the overlay directory", errno);
		goto out;
	}
	if (enter_namespaces(e) != 0)
		goto out;
	for (size_t i = 0; i < plan->n_bind; i++) {
		if (!names[i].set)
			continue;
		int fd = reopen(&names[i]);
		if (fd < 0) {
			refuse(e, "a bound object in the launcher's namespace", errno);
			goto out;
		}
		if (staged)
			close(plan->bind_src[i]); /* the staging's; a spec's own stays the spec's */
		plan->bind_src[i] = fd;
	}
	/* The layers and the mount point as directories of this namespace
	 * (overlayfs takes no mount of another), named by fd. */
	int lower = plan->bind_src[plan->ws_slot];
	int dir = staged ? open(SBX_BIND_STAGE_DIR "/overlay", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			 : reopen(&names[plan->n_bind]);
	int point = dir < 0 ? -1
		    : staged ? open(SBX_BIND_STAGE_DIR "/merged", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			     : open_in(dir, "merged");
	int upper = dir < 0 ? -1 : open_in(dir, "upper"), work = dir < 0 ? -1 : open_in(dir, "work");
	if (upper < 0 || work < 0 || point < 0) {
		refuse(e, "the overlay directory's upper/, work/ and merged/", errno);
		goto out;
	}
	/* userxattr: the marks are user.overlay.*, and neither redirects nor
	 * metadata-only copies are made (upper/ holds every change whole). */
	snprintf(options, sizeof(options),
		 "userxattr,lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d", lower, upper,
		 work);
	snprintf(target, sizeof(target), "/proc/self/fd/%d", point);
	if (mount("sbx-overlay", target, "overlay", MS_NOSUID | MS_NODEV, options) != 0) {
		refuse(e, "mount", errno);
		goto out;
	}
	/* The mount point's name now reaches the overlay's root. */
	int merged = staged ? open(SBX_BIND_STAGE_DIR "/merged", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			    : open_in(dir, "merged");
	close(upper);
	close(work);
	close(point);
	close(dir);
	if (merged < 0)
		refuse(e, "open of the merged directory", errno);
	else
		rc = take_merged(plan, spec, merged, e);
out:
	free(names);
	return rc;
}
