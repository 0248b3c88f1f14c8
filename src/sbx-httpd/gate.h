/* gate.h — named FIFO gates (see gate.c). */
#ifndef SBX_HTTPD_GATE_H
#define SBX_HTTPD_GATE_H

#include <pthread.h>
#include <stdbool.h>

struct waiter;

/* Waits for the gate `name`; give_up(arg) is asked every 100 ms while
 * waiting. The holder's handle, or NULL when it gave up. */
struct waiter *gate_enter(const char *name, bool (*give_up)(void *), void *arg);
/* gate_enter in two steps: take a place in line now (the wall-clock ms
 * of that moment into *joined_ms), wait for it later, maybe in another
 * thread. gate_wait returns w once it holds the gate, NULL when it gave up
 * (w has then left the line). */
struct waiter *gate_join(const char *name, long long *joined_ms);
struct waiter *gate_wait(struct waiter *w, bool (*give_up)(void *), void *arg);
void gate_leave(struct waiter *w);

#endif
