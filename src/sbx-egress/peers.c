/* peers.c — what each peer of the gateway holds (a peer is the SO_PEERCRED
 * uid of a Unix connection: each workspace's sandboxes run as their own uid)
 * against its caps, so one at its cap never starves another, and the rate
 * limit that folds a peer's refusals into one audit line per interval. */
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

struct peer {
	struct peer *next;
	uid_t uid;
	int conns, heads, refusing;
	long long window_ms;  /* when its refusal interval began; 0: none open */
	int logged;           /* refusals of the interval logged whole */
	long long suppressed; /* and those only counted */
	bool same;
	struct audit first;   /* the first one counted */
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

/* Takes the summary of p's interval when it has counted any; closes it. */
static bool take_summary(struct peer *p, long long now, struct refusal_summary *s)
{
	bool any = p->suppressed > 0;
	if (any) {
		s->peer = p->uid;
		s->count = p->suppressed;
		s->seconds = (now - p->window_ms + 999) / 1000;
		s->same = p->same;
		s->first = p->first;
	}
	p->window_ms = 0;
	p->logged = 0;
	p->suppressed = 0;
	return any;
}

/* Counts a refusal in p's interval (under the lock). Whether to log it
 * whole; *due when the interval before it ended with a summary to write. */
static bool count_refusal(struct gateway *g, struct peer *p, const struct audit *a, struct refusal_summary *s,
			  bool *due)
{
	long long now = sbx_monotonic_ms();
	*due = false;
	if (p->window_ms && now - p->window_ms >= g->refusal_interval_s * 1000LL)
		*due = take_summary(p, now, s);
	if (!p->window_ms)
		p->window_ms = now;
	if (p->logged < g->refusal_burst) {
		p->logged++;
		return true;
	}
	if (p->suppressed++ == 0) {
		p->first = *a;
		p->same = true;
	} else if (p->same &&
		   (p->first.port != a->port || p->first.status != a->status || strcmp(p->first.host, a->host))) {
		p->same = false;
	}
	return false;
}

bool peers_admit(struct gateway *g, uid_t uid, struct admission *ad)
{
	struct peers *t = &g->peers;
	memset(ad, 0, sizeof(*ad));
	ad->uid = uid;
	ad->accepted_ms = sbx_monotonic_ms();
	pthread_mutex_lock(&t->lock);
	struct peer *p = find_or_add(t, uid);
	int serving = atomic_load(&g->serving);
	if (!p || p->refusing >= PEER_REFUSING_MAX || atomic_load(&g->active) >= g->max_tunnels + GLOBAL_SLACK) {
		/* Counted all the same, so the log says who was turned away. */
		struct audit a = { .peer = uid, .decision = "busy" };
		struct refusal_summary s;
		bool due = false, whole = false;
		snprintf(a.reason, sizeof(a.reason), "closed unanswered: %s",
			 !p ? "too many peers" : p->refusing >= PEER_REFUSING_MAX ? "too many refusals of this sandbox in progress"
										   : "far past the gateway's connection cap");
		if (p)
			whole = count_refusal(g, p, &a, &s, &due);
		pthread_mutex_unlock(&t->lock);
		if (due)
			audit_write_summary(g, &s);
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
	struct refusal_summary s;
	bool due;
	pthread_mutex_lock(&g->peers.lock);
	bool whole = count_refusal(g, ad->peer, a, &s, &due);
	pthread_mutex_unlock(&g->peers.lock);
	if (due)
		audit_write_summary(g, &s);
	if (whole)
		audit_write(g, a);
}

void peers_sweep(struct gateway *g, bool flush)
{
	struct peers *t = &g->peers;
	long long now = sbx_monotonic_ms();
	struct refusal_summary s;
	pthread_mutex_lock(&t->lock);
	for (int b = 0; b < PEER_BUCKETS; b++) {
		for (struct peer **link = &t->bucket[b]; *link;) {
			struct peer *p = *link;
			if (p->window_ms && (flush || now - p->window_ms >= g->refusal_interval_s * 1000LL) &&
			    take_summary(p, now, &s))
				audit_write_summary(g, &s); /* lock order: peers, then the log */
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
