/* history.h: a lock's history (PREFIX{NAME}:log), read back for rlock log. */
#ifndef RLOCK_HISTORY_H
#define RLOCK_HISTORY_H

#include <stdint.h>

#include "err.h"
#include "json.h"
#include "quorum.h"
#include "util.h"

/* An event's fields, as the scripts write them (see src/lua/lib.lua). */
enum hist_field {
	HF_EVENT,	/* e: acquired, released, lost, forced, leftovers
			   (expired: implied, see history_expired) */
	HF_HOST,	/* h, p, u, c: the holder */
	HF_PID,
	HF_USER,
	HF_COMMAND,
	HF_FENCE,	/* f */
	HF_WAITED,	/* w: ms waited before the grant */
	HF_HELD,	/* d: ms held */
	HF_OUTCOME,	/* x: exit:N, signal:NAME, max-runtime, release, "" */
	HF_WHY,		/* y: why it was lost */
	HF_BY_HOST,	/* bh, bp, bu: who forced it */
	HF_BY_PID,
	HF_BY_USER,
	HF_REMOVED,	/* n: holders a force removed */
	HF_RUN,		/* r: the run's id (its token, hashed) */
	HF_KIND,	/* k: "", shared, limit:N */
	HF__COUNT
};

struct hist_event {
	char		*name;		/* the lock's */
	long long	 time_ms;	/* the server's clock */
	long long	 seq;		/* the entry id's second part */
	int		 implied;	/* not recorded: history_expired */
	int		 servers;	/* that recorded it */
	int		 nservers;	/* asked */
	char		*v[HF__COUNT];	/* NULL: not recorded */
};

/*
 * The newest count events of each of n locks (only those of the last
 * since_ms when > 0), appended to *ev / *n lock after lock in the order
 * of names, each lock's newest first: a round trip for many locks (one a
 * lock in Redis Cluster).  In quorum mode every server that answers is
 * read and an event that several recorded is shown once.  0, or -1 with e
 * filled (fewer than a majority answered).
 */
int	history_read(struct quorum *, const char *prefix, char *const *names,
	    size_t n, int count, int64_t since_ms, struct hist_event **ev,
	    size_t *nev, struct err *e);
/*
 * One stream entry {id, {field, value, ...}} as an event (its time from
 * the id; name and servers left to the caller): 0, or -1 when it is not
 * one (ev then still to be freed).
 */
int	history_parse(const struct redis_reply *, struct hist_event *);
/*
 * The event the scripts do not record: a plain hold that was never
 * released and expired.  1 with *out filled (an 'expired' of prev's run,
 * at next's time, just before it) when next, an 'acquired', directly
 * follows prev in one server's stream and prev is a plain hold's
 * 'acquired' or 'leftovers'; else 0.
 */
/*
 * Whether ev is a deploy queue's event (superseded, replaced: exec
 * --pending, --replace), which says nothing of the holds around it: the
 * hold before it is the one an expiry is judged from.
 */
int	history_queue_event(const struct hist_event *ev);
int	history_expired(const struct hist_event *prev,
	    const struct hist_event *next, struct hist_event *out);
/*
 * Reply shapes: a list of stream entries {{id, {field, value, ...}}, ...}
 * (XREVRANGE's, XREAD's); the log script's {now, {list, ...}} with
 * *(size_t *)arg lists, each entries, an error (a damaged history) or nil
 * (another Cluster node's).  1 when r has it.
 */
int	history_entries_shape(const struct redis_reply *);
int	history_log_shape(const struct redis_reply *, void *arg);
void	history_event_free(struct hist_event *);
/* Newest first, whatever the lock; an implied event just before its cause. */
void	history_sort(struct hist_event *, size_t);
void	history_free(struct hist_event *, size_t);

/* One line of rlock log, and its --json object. */
void	history_text(struct buf *, const struct hist_event *);
void	history_json(struct json *, const struct hist_event *);

#endif
