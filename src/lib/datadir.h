/* datadir.h — where sbx keeps state when no flag says otherwise. */
#ifndef SBX_DATADIR_H
#define SBX_DATADIR_H

#include <stddef.h>

/* $SBX_DATA_DIR, else $SCIENCE_AGENT_DATA_DIR, else /var/lib/sbx for root,
 * else ${XDG_STATE_HOME:-$HOME/.local/state}/sbx. 0, or -1 if it does not fit. */
int sbx_data_dir(char *out, size_t size);

#endif
