/* supervisor_record.h — supervisor.json in an execution directory: the
 * pid and start time of the sbx-run that owns it, and whether it lives. */
#ifndef SBX_SUPERVISOR_RECORD_H
#define SBX_SUPERVISOR_RECORD_H

#include <stdbool.h>
#include <sys/types.h>

/* True when dir (relative to dirfd) holds a supervisor.json whose pid is
 * still the process that wrote it (pid and start time both match); *pid
 * gets the recorded pid (0 without a readable record). Nothing followed:
 * the record must be a regular file of at most 4 KiB. */
bool sbx_supervisor_alive(int dirfd, const char *dir, pid_t *pid);

#endif
