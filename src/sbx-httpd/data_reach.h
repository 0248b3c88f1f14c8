/* data_reach.h — as root, a warning at startup when a directory above the
 * data dir is not searchable by the workspaces' uids. */
#ifndef SBX_HTTPD_DATA_REACH_H
#define SBX_HTTPD_DATA_REACH_H

#include <stdbool.h>
#include <sys/types.h>

void httpd_check_data_reach(const char *data_dir, gid_t sandbox_gid);

#endif
