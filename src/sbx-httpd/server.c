/* server.c — the one instance of sbx-httpd's state (server.h): set up by
 * main.c at startup, read by the handlers. */
#include "server.h"

struct server g_server;
