/* fuzz_inventory.c — libFuzzer target: what host tools print, parsed:
 * `micromamba list --json` into package lines, and nvidia-smi's CSV rows
 * joined against a fixed proc tree (built once in a temporary directory). */
#include "../src/sbx-env/conda_list.c" /* sbx-env's own reader */
#include "../src/sbx-npu/nvidia.c" /* sbx-npu's own reader */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

/* The tree goes when the fuzzer exits (libFuzzer ends with exit()). */
static void remove_tree(void)
{
	char path[320];
	snprintf(path, sizeof(path), "%s/gpus/0000:07:00.0/information", root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/gpus/0000:07:00.0", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/gpus", root);
	rmdir(path);
	rmdir(root);
}

static void proc_tree(void)
{
	char path[256];
	snprintf(root, sizeof(root), "/tmp/fuzz-nvidia-XXXXXX");
	if (!mkdtemp(root))
		abort();
	atexit(remove_tree);
	snprintf(path, sizeof(path), "%s/gpus", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/gpus/0000:07:00.0", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/gpus/0000:07:00.0/information", root);
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fputs("Model: \t\t NVIDIA A100\nBus Location: \t 0000:07:00.0\nDevice Minor: \t 0\n", f);
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!root[0])
		proc_tree();
	char *text = malloc(size + 1), version[64] = "";
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	json_t *list = sbx_conda_list(text);
	if (list) {
		json_t *lines = sbx_conda_package_lines(list, "python", version, sizeof(version));
		if (json_array_size(lines) > json_array_size(list))
			abort();
		json_decref(lines);
	}
	json_decref(list);
	json_t *gpus = sbx_gpu_nvidia_parse(root, text);
	if (json_array_size(gpus) != 1)
		abort();
	json_decref(gpus);
	free(text);
	return 0;
}
