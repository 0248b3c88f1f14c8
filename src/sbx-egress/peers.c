/* peers.c — what each peer of the gateway holds (a peer is the SO_PEERCRED
 * uid of a Unix connection: each workspace's sandboxes run as their own uid)
 * against its caps, so one at its cap never starves another, and the rate
 * limit that folds a peer's refusals into a few audit lines per interval,
 * counted per connecting pid and target so each run can find its own. */
#include "egress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct peers tracked at once; a connection of one more is closed. */
#define PEER_MAX 4096
/* Refusals a peer may have in progress (each a thread answering 429);
 * a connection past that is closed unanswered. */
#define PEER_REFUSING_MAX 8
/* Past the global cap, connections still get their 429; this far past it,
 * a close. */
#define GLOBAL_SLACK 256
/* Past its burst, a peer's refusals are counted per (pid, target, status):
 * this many tallies per peer and interval, this many held by all peers. */
#define PEER_TALLIES 8
#define TALLIES_MAX 1024

/* The refusals of one pid and target past the burst: the first logged
 * whole, the count of those after it. */
struct tally {
	long long count;
	struct audit first;
};

struct peer {
	struct peer *next;
	uid_t uid;
	int conns, heads, refusing;
	long long window_ms;  /* when its refusal interval began; 0: none open */
	int logged;           /* refusals of the interval logged whole */
	struct tally *tallies; /* n_tallies of them, past the burst */
	int n_tallies;
	long long suppressed; /* refusals past the tallies, only counted */
	bool same, same_pid;  /* all of first's target and status; all of its pid */
	struct audit first;   /* the first of those */
};

static unsigned bucket_of(uid_t uid)
{
	return (unsigned)((uid * 2654435761u) >> 8) % PEER_BUCKETS;
}

static struct peer *find_or_add(struct peers *t, uid_t uid)
{
	struct peer **head = &t->bucket[bucket_of(uid)];
	for (struct peer *p = *head; p; p = p->next)
		if (p->uid == uid)
			return p;
	if (t->n >= PEER_MAX)
		return NULL;
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->uid = uid;
	p->next = *head;
	*head = p;
	t->n++;
	return p;
}

static bool same_target(const struct audit *x, const struct audit *y)
{
	return x->port == y->port && x->status == y->status && !strcmp(x->host, y->host);
}

/* One summary line of p's interval (under the peers lock: lock order
 * peers, then the log). */
static void summarise(struct gateway *g, const struct peer *p, const struct audit *first, long long count, bool same,
		      bool one_pid, long long now)
{
	struct refusal_summary s = { .peer = p->uid, .count = count, .seconds = (now - p->window_ms + 999) / 1000,
				     .same = same, .one_pid = one_pid, .first = *first };
	audit_write_summary(g, &s);
}

/* Writes the summaries of p's interval and closes it. */
static void close_window(struct gateway *g, struct peer *p, long long now)
{
	for (int i = 0; i < p->n_tallies; i++)
		if (p->tallies[i].count)
			summarise(g, p, &p->tallies[i].first, p->tallies[i].count, true, true, now);
	if (p->suppressed)
		summarise(g, p, &p->first, p->suppressed, p->same, p->same_pid, now);
	g->peers.tallies -= p->n_tallies;
	free(p->tallies);
	p->tallies = NULL;
	p->n_tallies = 0;
	p->window_ms = 0;
	p->logged = 0;
	p->suppressed = 0;
}

/* Counts a refusal in p's interval (under the lock), closing the one
 * before when it ended. Whether to log it whole: the first burst of the
 * interval, and past it the first of each pid and target (while tallies
 * last), so a run learns of every target it was refused at once. */
static bool count_refusal(struct gateway *g, struct peer *p, const struct audit *a)
{
	long long now = sbx_monotonic_ms();
	if (p->window_ms && now - p->window_ms >= g->refusal_interval_s * 1000LL)
		close_window(g, p, now);
	if (!p->window_ms)
		p->window_ms = now;
	if (p->logged < g->refusal_burst) {
		p->logged++;
		return true;
	}
	for (int i = 0; i < p->n_tallies; i++)
		if (p->tallies[i].first.peer_pid == a->peer_pid && same_target(&p->tallies[i].first, a)) {
			p->tallies[i].count++;
			return false;
		}
	if (p->n_tallies < PEER_TALLIES && g->peers.tallies < TALLIES_MAX) {
		struct tally *t = realloc(p->tallies, (size_t)(p->n_tallies + 1) * sizeof(*t));
		if (t) {
			p->tallies = t;
			t[p->n_tallies].count = 0;
			t[p->n_tallies++].first = *a;
			g->peers.tallies++;
			return true;
		}
	}
	if (p->suppressed++ == 0) {
		p->first = *a;
		p->same = p->same_pid = true;
	} else {
		p->same = p->same && same_target(&p->first, a);
		p->same_pid = p->same_pid && p->first.peer_pid == a->peer_pid;
	}
	return false;
}

bool peers_admit(struct gateway *g, uid_t uid, pid_t pid, struct admission *ad)
{
	struct peers *t = &g->peers;
	memset(ad, 0, sizeof(*ad));
	ad->uid = uid;
	ad->pid = pid;
	ad->accepted_ms = sbx_monotonic_ms();
	pthread_mutex_lock(&t->lock);
	struct peer *p = find_or_add(t, uid);
	int serving = atomic_load(&g->serving);
	if (!p || p->refusing >= PEER_REFUSING_MAX || atomic_load(&g->active) >= g->max_tunnels + GLOBAL_SLACK) {
		/* Counted all the same, so the log says who was turned away. */
		struct audit a = { .peer = uid, .peer_pid = pid, .decision = "busy" };
		bool whole = false;
		snprintf(a.reason, sizeof(a.reason), "closed unanswered: %s",
			 !p ? "too many peers" : p->refusing >= PEER_REFUSING_MAX ? "too many refusals of this sandbox in progress"
										   : "far past the gateway's connection cap");
		if (p)
			whole = count_refusal(g, p, &a);
		pthread_mutex_unlock(&t->lock);
		if (whole) {
			a.started_ms = ad->accepted_ms;
			audit_write(g, &a);
		}
		return false;
	}
	ad->peer = p;
	if (p->conns >= g->peer_max_connections)
		snprintf(ad->reason, sizeof(ad->reason),
			 "Sandbox network access allows at most %d concurrent connections per sandbox",
			 g->peer_max_connections);
	else if (p->heads >= g->peer_max_heads)
		snprintf(ad->reason, sizeof(ad->reason),
			 "Sandbox network access allows at most %d connections per sandbox still sending a request head",
			 g->peer_max_heads);
	else if (serving >= g->max_tunnels)
		snprintf(ad->reason, sizeof(ad->reason), "Sandbox network access allows at most %d concurrent connections",
			 g->max_tunnels);
	ad->refuse = ad->reason[0] != '\0';
	if (ad->refuse) {
		p->refusing++;
	} else {
		p->conns++;
		p->heads++;
		ad->head_pending = true;
		atomic_fetch_add(&g->serving, 1);
	}
	atomic_fetch_add(&g->active, 1);
	pthread_mutex_unlock(&t->lock);
	return true;
}

void peers_head_end(struct gateway *g, struct admission *ad)
{
	if (!ad->head_pending)
		return;
	pthread_mutex_lock(&g->peers.lock);
	ad->peer->heads--;
	ad->head_pending = false;
	pthread_mutex_unlock(&g->peers.lock);
}

void peers_release(struct gateway *g, struct admission *ad)
{
	pthread_mutex_lock(&g->peers.lock);
	if (ad->refuse) {
		ad->peer->refusing--;
	} else {
		ad->peer->conns--;
		ad->peer->heads -= ad->head_pending ? 1 : 0;
		atomic_fetch_sub(&g->serving, 1);
	}
	atomic_fetch_sub(&g->active, 1);
	pthread_mutex_unlock(&g->peers.lock);
	ad->peer = NULL;
}

void peers_refused(struct gateway *g, struct admission *ad, const struct audit *a)
{
	pthread_mutex_lock(&g->peers.lock);
	bool whole = count_refusal(g, ad->peer, a);
	pthread_mutex_unlock(&g->peers.lock);
	if (whole)
		audit_write(g, a);
}

void peers_sweep(struct gateway *g, bool flush)
{
	struct peers *t = &g->peers;
	long long now = sbx_monotonic_ms();
	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < PEER_BUCKETS; b++) {
		for (struct peer **link = &t->bucket[b]; *link;) {
			struct peer *p = *link;
			if (p->window_ms && (flush || now - p->window_ms >= g->refusal_interval_s * 1000LL))
				close_window(g, p, now);
			if (!p->window_ms && !p->conns && !p->heads && !p->refusing) {
				*link = p->next;
				free(p);
				t->n--;
			} else {
				link = &p->next;
			}
		}
	}
	pthread_mutex_unlock(&t->lock);
}

void peers_flush_pid(struct gateway *g, pid_t pid)
{
	struct peers *t = &g->peers;
	long long now = sbx_monotonic_ms();
	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < PEER_BUCKETS; b++) {
		for (struct peer *p = t->bucket[b]; p; p = p->next) {
			for (int i = 0; i < p->n_tallies;) {
				struct tally *x = &p->tallies[i];
				if (x->first.peer_pid != pid) {
					i++;
					continue;
				}
				if (x->count)
					summarise(g, p, &x->first, x->count, true, true, now);
				*x = p->tallies[--p->n_tallies];
				t->tallies--;
			}
			if (p->suppressed && p->same_pid && p->first.peer_pid == pid) {
				summarise(g, p, &p->first, p->suppressed, p->same, true, now);
				p->suppressed = 0;
			}
		}
	}
	pthread_mutex_unlock(&t->lock);
}
