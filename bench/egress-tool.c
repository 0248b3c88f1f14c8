/* egress-tool.c — the loopback ends of bench-egress.sh: a sink and an echo
 * server, and clients that push bytes, hold many tunnels, or time connects,
 * directly or through an HTTP proxy with CONNECT NAME:PORT.
 *   egress-tool serve PORTFILE            sink and echo ports, one line each
 *   egress-tool push HOST PORT BYTES [NAME:PORT]      prints seconds
 *   egress-tool tunnels HOST PORT N NAME:PORT         prints failures
 *   egress-tool latency HOST PORT N [NAME:PORT]       prints p50 p99 in ms */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int listen_any(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 4096) != 0)
		exit(1);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void *sink(void *arg)
{
	int fd = (int)(long)arg;
	char *buf = malloc(1 << 20);
	while (buf && read(fd, buf, 1 << 20) > 0)
		;
	free(buf);
	close(fd);
	return NULL;
}

static void *echo(void *arg)
{
	int fd = (int)(long)arg;
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n)
			break;
	close(fd);
	return NULL;
}

static void *acceptor(void *arg)
{
	int *l = arg;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (;;) {
		int fd = accept(l[0], NULL, NULL);
		pthread_t t;
		if (fd >= 0 && pthread_create(&t, &attr, l[1] ? echo : sink, (void *)(long)fd) != 0)
			close(fd);
	}
	return NULL;
}

static int connect_to(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, host, &sa.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* CONNECT target through the proxy on fd; 0 on a 200. */
static int tunnel(int fd, const char *target)
{
	char req[600], head[4096];
	size_t got = 0;
	int n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
	if (write(fd, req, (size_t)n) != n)
		return -1;
	while (got < sizeof(head) - 1) {
		ssize_t r = read(fd, head + got, 1); /* byte by byte: never read past the head */
		if (r <= 0)
			return -1;
		got++;
		head[got] = '\0';
		if (got >= 4 && !memcmp(head + got - 4, "\r\n\r\n", 4))
			return strncmp(head, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
	}
	return -1;
}

static int open_path(const char *host, int port, const char *target)
{
	int fd = connect_to(host, port);
	if (fd >= 0 && target && tunnel(fd, target) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int ping(int fd)
{
	char b[5];
	size_t got = 0;
	if (write(fd, "ping\n", 5) != 5)
		return -1;
	while (got < 5) {
		ssize_t r = read(fd, b + got, 5 - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return memcmp(b, "ping\n", 5) == 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (argc == 3 && !strcmp(argv[1], "serve")) {
		static int s[2], e[2];
		int sp, ep;
		s[0] = listen_any(&sp);
		e[0] = listen_any(&ep);
		e[1] = 1;
		FILE *f = fopen(argv[2], "w");
		fprintf(f, "%d %d\n", sp, ep);
		fclose(f);
		pthread_t t;
		pthread_create(&t, NULL, acceptor, e);
		acceptor(s);
	}
	if (argc >= 5 && !strcmp(argv[1], "push")) {
		long long total = atoll(argv[4]), sent = 0;
		static char buf[1 << 20];
		memset(buf, 'x', sizeof(buf));
		double t0 = now();
		int fd = open_path(argv[2], atoi(argv[3]), argc > 5 ? argv[5] : NULL);
		if (fd < 0)
			return 1;
		while (sent < total) {
			size_t chunk = total - sent < (long long)sizeof(buf) ? (size_t)(total - sent) : sizeof(buf);
			ssize_t w = write(fd, buf, chunk);
			if (w <= 0)
				return 1;
			sent += w;
		}
		shutdown(fd, SHUT_WR);
		while (read(fd, buf, sizeof(buf)) > 0) /* the sink's close: every byte arrived */
			;
		printf("%.4f\n", now() - t0);
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "tunnels")) {
		int n = atoi(argv[4]), failed = 0;
		int *fds = calloc((size_t)n, sizeof(int));
		for (int i = 0; i < n; i++)
			failed += (fds[i] = open_path(argv[2], atoi(argv[3]), argv[5])) < 0;
		/* All held at once: each still carries bytes both ways. */
		for (int i = 0; i < n; i++)
			if (fds[i] >= 0 && ping(fds[i]) != 0)
				failed++;
		printf("%d\n", failed);
		return 0;
	}
	if (argc >= 5 && !strcmp(argv[1], "latency")) {
		int n = atoi(argv[4]);
		double *t = calloc((size_t)n, sizeof(double));
		for (int i = 0; i < n; i++) {
			double t0 = now();
			int fd = open_path(argv[2], atoi(argv[3]), argc > 5 ? argv[5] : NULL);
			if (fd < 0 || ping(fd) != 0)
				return 1;
			t[i] = (now() - t0) * 1000;
			close(fd);
		}
		qsort(t, (size_t)n, sizeof(double), cmp_double);
		printf("%.3f %.3f\n", t[n / 2], t[(n * 99) / 100]);
		return 0;
	}
	fprintf(stderr, "usage: see the comment at the top of bench/egress-tool.c\n");
	return 2;
}
