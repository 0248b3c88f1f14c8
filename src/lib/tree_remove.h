/* tree_remove.h — deleting a directory tree through directory fds, never
 * following a symlink at any level (a path-based walk can be redirected
 * mid-way). */
#ifndef SBX_TREE_REMOVE_H
#define SBX_TREE_REMOVE_H

/* Removes name below dirfd (a file, a symlink itself, or a directory and
 * everything in it, however deep, with a bounded number of fds). 0, or -1
 * with errno (ENOENT when it was not there). */
int sbx_remove_tree_at(int dirfd, const char *name);
/* The same for rel below rootfd: the directories leading to its last
 * component are opened with no symlink at any level (sbx_beneath_parent, beneath.h);
 * -1 with ELOOP when one is a symlink, EINVAL when rel is not plain. */
int sbx_remove_tree_beneath(int rootfd, const char *rel);
/* The same for a path, taken from "/" (or the current directory when
 * relative): every directory leading to it must be a real one. */
int sbx_remove_tree(const char *path);

#endif
