/* dcmi.h — Ascend chips from the driver's DCMI library (libdcmi.so,
 * loaded with dlopen at run time, so sbx needs no Ascend SDK to build). */
#ifndef SBX_NPU_DCMI_H
#define SBX_NPU_DCMI_H

#include <jansson.h>
#include <stddef.h>

/* The chips DCMI reports, each {hostIndex (logic id), cardId, chipId,
 * chipName, health, busId, aiCorePercent, hbmUsedMB, hbmTotalMB, powerW,
 * temperatureC}, readings null where DCMI has none. NULL when the library
 * is absent, fails to initialise or reports no chip (why goes to why):
 * the caller then asks npu-smi instead. */
json_t *sbx_npu_dcmi_devices(const char *library, char *why, size_t why_size);

#endif
