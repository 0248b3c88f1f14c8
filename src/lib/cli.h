/* cli.h — what every sbx program's command line shares: --version output,
 * the exit-code table in --help, and strict integer option parsing. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <stdbool.h>
#include <stdio.h>

#ifndef SBX_VERSION
#define SBX_VERSION "0.0.0"
#endif

void sbx_cli_print_version(const char *program);
void sbx_cli_print_exit_codes(FILE *out);
/* Parses a whole decimal integer in [min, max] for option `name`; on bad
 * input prints a usage diagnostic naming the option and exits 2. */
long sbx_cli_parse_long(const char *name, const char *text, long min, long max);
/* getopt_long's '?': names the offending argument and exits 2. */
_Noreturn void sbx_cli_bad_option(const char *program, const char *arg);
/* Prints a usage diagnostic ("see --help") and exits 2. */
_Noreturn void sbx_cli_usage_error(const char *program, const char *message);

#endif
