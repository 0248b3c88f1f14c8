/* sbx-npu — accelerators by host index: list them (probed, cached 60 s),
 * probe one chip in a real launch shape, or print the launch spec's
 * `devices` fragment for a selection after re-probing exactly it. */
#include "../lib/cli.h"
#include "../lib/program_path.h"
#include "../lib/datadir.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "host_paths.h"
#include "inventory.h"
#include "select.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct options {
	const char *command;
	bool refresh;
	const char *chips;    /* fragment --chips, list --only */
	long chip;            /* probe --chip */
	const char *cache_dir;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-npu [OPTIONS] list [--refresh] [--only N,...]\n"
		"       sbx-npu [OPTIONS] probe --chip N\n"
		"       sbx-npu [OPTIONS] fragment --chips N,...\n"
		"\n"
		"Ascend NPUs (or NVIDIA GPUs) by host index: N is the logic id, /dev/davinciN\n"
		"(/dev/nvidiaN). Prints JSON on stdout. See sbx-npu(1).\n"
		"\n"
		"  list               inventory with a sandbox probe per chip (cached 60 s)\n"
		"  probe --chip N     whether a sandbox can open chip N, and why not\n"
		"  fragment --chips L re-probe exactly L and print {\"devices\": ...} for sbx-launch\n"
		"\n"
		"  --vendor ascend|nvidia   (default ascend)\n"
		"  --dev-root DIR           device nodes (default $SBX_DEV_ROOT or /dev)\n"
		"  --npu-smi PATH           (default $SCIENCE_AGENT_NPU_SMI_PATH, else /usr/local/bin,\n"
		"                           /usr/local/sbin, /usr/bin)\n"
		"  --dcmi PATH              libdcmi.so (default $SBX_DCMI_LIBRARY, else\n"
		"                           <driver>/lib64/driver/libdcmi.so)\n"
		"  --toolkit DIR            CANN toolkit (default $SCIENCE_AGENT_ASCEND_TOOLKIT)\n"
		"  --nvidia-smi PATH        (default $SBX_NVIDIA_SMI_PATH, else /usr/bin/nvidia-smi)\n"
		"  --proc-root DIR          NVIDIA proc tree (default $SBX_NVIDIA_PROC_ROOT or\n"
		"                           /proc/driver/nvidia)\n"
		"  --cache-dir DIR          (default <data dir>/cache)\n"
		"  --help, --version\n");
	sbx_cli_print_exit_codes(out);
}

static void copy(char *dst, const char *src)
{
	if (strlen(src) >= PATH_MAX)
		sbx_cli_usage_error("sbx-npu", "a path option is longer than PATH_MAX");
	strcpy(dst, src);
}

static void parse_options(int argc, char **argv, struct options *o, struct sbx_npu_config *cfg)
{
	enum { OPT_VENDOR = 256, OPT_DEV_ROOT, OPT_NPU_SMI, OPT_DCMI, OPT_TOOLKIT, OPT_NVIDIA_SMI, OPT_PROC_ROOT,
	       OPT_CACHE_DIR, OPT_REFRESH, OPT_ONLY, OPT_CHIP, OPT_CHIPS, OPT_VERSION };
	static const struct option options[] = {
		{ "vendor", required_argument, NULL, OPT_VENDOR },
		{ "dev-root", required_argument, NULL, OPT_DEV_ROOT },
		{ "npu-smi", required_argument, NULL, OPT_NPU_SMI },
		{ "dcmi", required_argument, NULL, OPT_DCMI },
		{ "toolkit", required_argument, NULL, OPT_TOOLKIT },
		{ "nvidia-smi", required_argument, NULL, OPT_NVIDIA_SMI },
		{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
		{ "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
		{ "refresh", no_argument, NULL, OPT_REFRESH },
		{ "only", required_argument, NULL, OPT_ONLY },
		{ "chip", required_argument, NULL, OPT_CHIP },
		{ "chips", required_argument, NULL, OPT_CHIPS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	/* The vendor decides the defaults; flags then override them. */
	enum sbx_npu_vendor vendor = SBX_NPU_ASCEND;
	for (int i = 1; i < argc; i++) {
		const char *v = !argv[i] ? NULL : !strcmp(argv[i], "--vendor") && i + 1 < argc ? argv[i + 1]
				: !strncmp(argv[i], "--vendor=", 9) ? argv[i] + 9 : NULL;
		if (v && !strcmp(v, "nvidia"))
			vendor = SBX_NPU_NVIDIA;
		else if (v && strcmp(v, "ascend"))
			sbx_cli_usage_error("sbx-npu", "--vendor: must be ascend or nvidia");
	}
	sbx_npu_config_from_env(vendor, cfg);
	o->chip = -1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case OPT_VENDOR: break;
		case OPT_DEV_ROOT: copy(cfg->dev_root, optarg); break;
		case OPT_NPU_SMI: copy(cfg->npu_smi, optarg); break;
		case OPT_DCMI: copy(cfg->dcmi, optarg); break;
		case OPT_TOOLKIT: copy(cfg->toolkit, optarg); break;
		case OPT_NVIDIA_SMI: copy(cfg->nvidia_smi, optarg); break;
		case OPT_PROC_ROOT: copy(cfg->proc_root, optarg); break;
		case OPT_CACHE_DIR: o->cache_dir = optarg; break;
		case OPT_REFRESH: o->refresh = true; break;
		case OPT_ONLY: case OPT_CHIPS: o->chips = optarg; break;
		case OPT_CHIP: o->chip = sbx_cli_parse_long("--chip", optarg, 0, SBX_NPU_MAX_INDEX); break;
		case 'h': usage(stdout); exit(SBX_EXIT_OK);
		case OPT_VERSION: sbx_cli_print_version("sbx-npu"); exit(SBX_EXIT_OK);
		default: sbx_cli_bad_option("sbx-npu", argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		sbx_cli_usage_error("sbx-npu", "one command: list, probe or fragment");
	o->command = argv[optind];
	if (sbx_sibling_program("sbx-launch", cfg->launch, sizeof(cfg->launch)) != 0)
		cfg->launch[0] = '\0';
}

/* "4,6" into a sorted, unique list. */
static int parse_chips(const char *text, int *out)
{
	struct sbx_error e;
	json_t *list = json_array();
	char *copy_ = strdup(text), *save = NULL;
	for (char *t = copy_ ? strtok_r(copy_, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
		json_array_append_new(list, json_integer(sbx_cli_parse_long("--chips", t, 0, SBX_NPU_MAX_INDEX)));
	free(copy_);
	int n = json_array_size(list) ? sbx_npu_chip_list(list, "--chips", out, &e) : 0;
	json_decref(list);
	if (n <= 0)
		sbx_cli_usage_error("sbx-npu", n == 0 ? "--chips: at least one index" : e.message);
	return n;
}

static int print_and_free(json_t *doc, int rc)
{
	if (!doc || sbx_json_print(stdout, doc) != 0)
		rc = SBX_EXIT_INTERNAL;
	json_decref(doc);
	return rc;
}

static int list(const struct options *o, const struct sbx_npu_config *cfg)
{
	char cache[PATH_MAX];
	if (o->cache_dir)
		snprintf(cache, sizeof(cache), "%s", o->cache_dir);
	else if (sbx_data_dir(cache, sizeof(cache) - 8) == 0)
		strcat(cache, "/cache");
	else
		sbx_cli_usage_error("sbx-npu", "data directory path too long");
	json_t *inv = sbx_npu_inventory(cfg, cache, o->refresh);
	if (o->chips) {
		int chips[SBX_NPU_MAX_CHIPS], n = parse_chips(o->chips, chips);
		json_t *kept = json_array(), *d;
		size_t i;
		json_array_foreach(json_object_get(inv, "devices"), i, d)
			for (int k = 0; k < n; k++)
				if (json_integer_value(json_object_get(d, "hostIndex")) == chips[k])
					json_array_append(kept, d);
		json_object_set_new(inv, "devices", kept);
	}
	return print_and_free(inv, SBX_EXIT_OK);
}

static int probe(const struct options *o, const struct sbx_npu_config *cfg)
{
	if (o->chip < 0)
		sbx_cli_usage_error("sbx-npu", "probe needs --chip N");
	int chip = (int)o->chip;
	struct sbx_error e;
	json_t *frag = sbx_npu_select(cfg, &chip, 1, &e);
	json_t *out = json_pack("{s:i,s:b}", "hostIndex", chip, "sandboxUsable", frag != NULL);
	if (!frag) {
		/* The one reason, without the selection's preamble. */
		const char *colon = strstr(e.message, "machine: ");
		json_object_set_new(out, "sandboxUnusableReason", json_string(colon ? colon + 9 : e.message));
	}
	json_decref(frag);
	return print_and_free(out, frag ? SBX_EXIT_OK : SBX_EXIT_POLICY);
}

static int fragment(const struct options *o, const struct sbx_npu_config *cfg)
{
	if (!o->chips)
		sbx_cli_usage_error("sbx-npu", "fragment needs --chips N,...");
	int chips[SBX_NPU_MAX_CHIPS], n = parse_chips(o->chips, chips);
	struct sbx_error e;
	json_t *frag = sbx_npu_select(cfg, chips, (size_t)n, &e);
	if (!frag)
		sbx_die(&e);
	return print_and_free(json_pack("{s:o}", "devices", frag), SBX_EXIT_OK);
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct sbx_npu_config cfg;

	sbx_diag_program("sbx-npu");
	parse_options(argc, argv, &o, &cfg);
	if (!strcmp(o.command, "list"))
		return list(&o, &cfg);
	if (!strcmp(o.command, "probe"))
		return probe(&o, &cfg);
	if (!strcmp(o.command, "fragment"))
		return fragment(&o, &cfg);
	sbx_cli_usage_error("sbx-npu", "unknown command (list, probe or fragment)");
}
