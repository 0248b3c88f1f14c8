/* tool_output.h — the vendor tools and chip probes sbx-npu runs: their
 * deadline, and the one line of their output worth showing. */
#ifndef SBX_NPU_TOOL_OUTPUT_H
#define SBX_NPU_TOOL_OUTPUT_H

#include <stddef.h>

#define SBX_NPU_TOOL_TIMEOUT_MS 20000

/* The first line of a tool's output worth showing: stderr before stdout,
 * trimmed, skipping table rules ('+', '|') and the Ascend driver's
 * DrvMngGetConsoleLogLevel noise; a JSON diagnostic gives its message. */
void sbx_npu_reason_line(const char *err, const char *out, char *line, size_t size);

#endif
