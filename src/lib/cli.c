/* cli.c — shared command-line helpers. */
#include "cli.h"
#include "diag.h"
#include "exitcodes.h"

#include <errno.h>
#include <stdlib.h>

void sbx_cli_print_version(const char *program)
{
	printf("%s %s\n", program, SBX_VERSION);
}

void sbx_cli_print_exit_codes(FILE *out)
{
	fprintf(out, "\nExit codes:\n");
	for (size_t i = 0; i < sbx_exit_table_len; i++)
		fprintf(out, "  %d  %s\n", sbx_exit_table[i].code, sbx_exit_table[i].meaning);
}

_Noreturn void sbx_cli_usage_error(const char *program, const char *message)
{
	char remedy[128];
	snprintf(remedy, sizeof(remedy), "Run %s --help.", program);
	sbx_diag("error", "usage", remedy, "%s", message);
	exit(SBX_EXIT_USAGE);
}

long sbx_cli_parse_long(const char *name, const char *text, long min, long max)
{
	char *end;
	char message[256];

	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < min || v > max) {
		snprintf(message, sizeof(message), "%s: expected an integer from %ld to %ld, got '%.64s'",
			 name, min, max, text);
		sbx_cli_usage_error(sbx_diag_program_name(), message);
	}
	return v;
}

_Noreturn void sbx_cli_bad_option(const char *program, const char *arg)
{
	char message[256];
	snprintf(message, sizeof(message), "unknown option or missing argument: '%.64s'", arg);
	sbx_cli_usage_error(program, message);
}
