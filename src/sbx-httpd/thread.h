/* thread.h — a detached thread of sbx-httpd's own (a watchdog, a ticker). */
#ifndef SBX_HTTPD_THREAD_H
#define SBX_HTTPD_THREAD_H

#include <stdbool.h>
#include <stddef.h>

/* Starts fn(arg) detached with a stack of stack bytes; false when it could
 * not start (a warning with code and what is lost was said). */
bool thread_detached(void *(*fn)(void *), void *arg, size_t stack, const char *code, const char *lost);

#endif
