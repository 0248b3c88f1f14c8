/* smi.h — Ascend chips as `npu-smi info` and `npu-smi info -m` print
 * them (sandbox.md 5, npu.md 3): the status table's head and chip rows,
 * the mapping table's logic ids (Mcu rows skipped), joined on (card, chip).
 * Device identity is always the logic id, never the card number. */
#ifndef SBX_NPU_SMI_H
#define SBX_NPU_SMI_H

#include <jansson.h>

/* The devices of `npu-smi info` text, each {hostIndex, cardId, chipId,
 * chipName, health, busId, aiCorePercent, hbmUsedMB, hbmTotalMB, powerW,
 * temperatureC}; with the `info -m` text (NULL or empty: readings alone,
 * hostIndex = card id) hostIndex becomes the chip's logic id and the name
 * loses its "Ascend " prefix. Junk rows are skipped; never NULL. */
json_t *sbx_npu_smi_parse(const char *info, const char *mapping);

#endif
