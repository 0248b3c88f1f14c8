/* gate.h — named FIFO gates (see gate.c). */
#ifndef SBX_HTTPD_GATE_H
#define SBX_HTTPD_GATE_H

#include <pthread.h>
#include <stdbool.h>

struct waiter;

/* Waits for the gate `name`; give_up(arg) is asked every 100 ms while
 * waiting. The holder's handle, or NULL when it gave up. */
struct waiter *gate_enter(const char *name, bool (*give_up)(void *), void *arg);
void gate_leave(struct waiter *w);

#endif
