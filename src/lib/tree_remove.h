/* tree_remove.h — deleting a directory tree through directory fds, never
 * following a symlink (a path-based walk can be redirected mid-way). */
#ifndef SBX_TREE_REMOVE_H
#define SBX_TREE_REMOVE_H

/* Removes name below dirfd (a file, a symlink itself, or a directory and
 * everything in it). 0, or -1 with errno (ENOENT when it was not there). */
int sbx_remove_tree_at(int dirfd, const char *name);
/* The same for a path. */
int sbx_remove_tree(const char *path);

#endif
