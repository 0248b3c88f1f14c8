/* snap_pin.c — a live run's pins: <store>/pins/<random>, flocked by the run
 * for as long as it lives, one digest a line for what it stored that no
 * ref reaches (media, checkpoints, outputs). A collection spares them; a
 * pin file nobody holds is a dead run's and goes. */
#include "snap_store.h"
#include "snap_gc.h"
#include "exitcodes.h"
#include "io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

void sbx_snap_pin_init(struct sbx_snap_pin *p)
{
	p->fd = -1;
	p->path[0] = '\0';
	sbx_map_init(&p->seen);
}

void sbx_snap_pin_close(struct sbx_snap_pin *p)
{
	if (p->fd >= 0) {
		unlink(p->path);
		close(p->fd);
	}
	sbx_map_free(&p->seen, NULL);
	sbx_snap_pin_init(p);
}

/* Under the shared lock (the caller's): made and flocked before any
 * collection's barrier can look at it. */
int sbx_snap_pin_add(const char *store, struct sbx_snap_pin *p, const char *digest, struct sbx_error *e)
{
	bool seen = false;
	if (sbx_map_has(&p->seen, digest, strlen(digest)))
		return 0;
	if (p->fd < 0) {
		snprintf(p->path, sizeof(p->path), "%s/pins/run.XXXXXX", store);
		p->fd = mkostemp(p->path, O_CLOEXEC | O_APPEND);
		if (p->fd < 0 || flock(p->fd, LOCK_EX | LOCK_NB) != 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "store-write", "%s: %s", p->path, strerror(errno));
			if (p->fd >= 0) {
				unlink(p->path);
				close(p->fd);
			}
			p->fd = -1;
			return -1;
		}
	}
	char line[80];
	int n = snprintf(line, sizeof(line), "%s\n", digest);
	if (sbx_write_all(p->fd, line, (size_t)n) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "store-write", "%s: %s", p->path, strerror(errno));
		return -1;
	}
	if (!sbx_map_put(&p->seen, digest, strlen(digest), NULL, &seen)) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "pins");
		return -1;
	}
	return 0;
}

void snap_pins_hold(const char *store, struct snap_pins *p)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/pins", store);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_name[0] == '.')
			continue;
		int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_SH | LOCK_NB) == 0) { /* nobody holds it: its run is gone */
			unlinkat(dfd, de->d_name, 0);
			close(fd);
			continue;
		}
		if (p->n == p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 16;
			int *fds = realloc(p->fds, cap * sizeof(*fds));
			if (!fds) {
				close(fd);
				continue;
			}
			p->fds = fds;
			p->cap = cap;
		}
		p->fds[p->n++] = fd;
	}
	if (d)
		closedir(d);
	else if (dfd >= 0)
		close(dfd);
}

void snap_pins_mark(struct snap_pins *p, struct sbx_map *live)
{
	char line[128];
	for (size_t i = 0; i < p->n; i++) {
		FILE *f = fdopen(p->fds[i], "r");
		if (!f) {
			close(p->fds[i]);
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			if (sbx_snap_valid_digest(line))
				sbx_map_put(live, line, strlen(line), NULL, NULL);
		}
		fclose(f);
	}
	free(p->fds);
	p->fds = NULL;
	p->n = p->cap = 0;
}
