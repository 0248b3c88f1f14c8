/* nvidia.h — NVIDIA GPUs as the driver shows them: one directory per
 * GPU under /proc/driver/nvidia/gpus (model, bus, device minor), joined
 * with `nvidia-smi --query-gpu` readings on the bus id. */
#ifndef SBX_GPU_NVIDIA_H
#define SBX_GPU_NVIDIA_H

#include <jansson.h>

/* GPUs from the proc tree under proc_root, each {hostIndex (the device
 * minor: N of /dev/nvidiaN), cardId, chipId, chipName, health, busId,
 * aiCorePercent (GPU utilisation), hbmUsedMB, hbmTotalMB, powerW,
 * temperatureC}; query is nvidia-smi's CSV (NULL: readings null).
 * Sorted by hostIndex; never NULL. */
json_t *sbx_gpu_nvidia_parse(const char *proc_root, const char *query);

/* The --query-gpu fields, in the order the parser reads them. */
#define SBX_NVIDIA_QUERY "pci.bus_id,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu"

#endif
