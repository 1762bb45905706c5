/* output.h: what rlock prints on stdout, as text or JSON. */
#ifndef RLOCK_OUTPUT_H
#define RLOCK_OUTPUT_H

#include "json.h"
#include "util.h"

/* One server's part in a lock, in quorum mode. */
enum output_server_state {
	OUTPUT_FREE,
	OUTPUT_HOLDS,		/* the holder's token */
	OUTPUT_OTHER,		/* another token (a partial acquire) */
	OUTPUT_UNREACHABLE,
};

struct output_server {
	const char			*url;	/* display form */
	enum output_server_state	 state;
	const char			*error;	/* why unreachable; NULL or "" */
};

/* Someone waiting for the lock. */
struct output_waiter {
	const char	*host;
	const char	*user;
	const char	*command;
	long long	 pid;
	long long	 waiting_ms;
	long long	 place;		/* in the --fifo line, from 1; 0: none */
};

/* One holder of a semaphore (--limit) or of a shared lock (--shared). */
struct output_slot {
	const char	*host;
	const char	*user;
	const char	*command;
	long long	 pid;
	long long	 acquired_ms;
	long long	 held_ms;
	long long	 expires_in_ms;
	long long	 ttl_ms;
	long long	 fence;
};

/*
 * What status shows about one lock, as plain values: the command layer
 * fills it from what the lock layer found.  Strings may be NULL or "" when
 * unknown; times are in milliseconds.
 */
struct output_status {
	const char	*name;
	int		 held;
	long long	 last_fence;	/* free: the counter; 0 if never taken */
	/* Held: */
	const char	*host;
	const char	*user;
	const char	*command;
	long long	 pid;
	long long	 acquired_ms;	/* server's wall clock; 0 if unknown */
	long long	 held_ms;	/* 0 if unknown */
	long long	 expires_in_ms;	/* -1: never */
	long long	 ttl_ms;
	long long	 fence;
	int		 nwaiters;
	const struct output_waiter *waiters;
	/*
	 * A semaphore (limit > 1) or a shared lock held by readers (shared):
	 * its holders, instead of the ones above.
	 */
	int		 shared;
	int		 limit;
	int		 nslots;
	const struct output_slot *slots;
	/* Quorum mode (nservers > 0): */
	int		 nservers;
	int		 nholding;
	struct output_server *servers;	/* nservers of them */
	/* A name run with exec --every (every_ms > 0): */
	long long	 every_ms;
	long long	 last_start_ms;	/* server's wall clock */
	long long	 last_start_ago_ms;
	const char	*last_host;
	long long	 last_pid;
	const char	*last_outcome;	/* "" while it runs */
	int		 overdue;	/* no start for 1.5 periods */
	/* Held: who asked the holder to stop (exec --replace), or NULL. */
	const char	*replace_host;
	long long	 replace_pid;
	/* Its record, and rlock schedule's settings (see struct lock_status): */
	long long	 now_ms;	/* the server's clock */
	long long	 grace_ms;	/* as it applies */
	long long	 next_due_ms;	/* 0: none (paused) */
	long long	 declared_ms, last_success_ms, failures;
	int		 failing;
	int		 paused;
	const char	*paused_by;
	long long	 paused_until_ms;	/* -1: until resumed */
	const char	*cron, *cron_tz;	/* --cron's; NULL or "": none */
};

/* "NAME: held by USER@HOST pid PID (COMMAND) for 3.2s, expires in 26.8s, fence 7" */
void	output_status_text(struct buf *, const struct output_status *);
/* {"name":…,"held":true,"host":…,…}, as one value of j */
void	output_status_json(struct json *, const struct output_status *);
/* {"name":…,"token":…,"fence":…,"ttl_ms":…} and a newline */
void	output_acquire_json(struct buf *, const char *name, const char *token,
	    long long fence, long long ttl_ms);
/* Write b to stdout and flush: 0, or -1 with errno set. */
int	output_flush(struct buf *);

/* What the line shown while acquire waits says: plain values, in ms. */
struct output_wait {
	const char	*name;
	const char	*host;		/* "": unknown */
	long long	 pid;
	const char	*command;	/* "": none */
	int64_t		 held_ms;	/* so far; -1: unknown */
	int64_t		 expires_ms;	/* from now; -1: no expiry */
	int64_t		 waited_ms;
	int64_t		 left_ms;	/* of --wait; -1: no limit */
	size_t		 width;		/* the terminal's columns */
};
/* Show w on stderr, in place of the waiting line shown before. */
void	output_wait_show(const struct output_wait *);
/* Take the waiting line back, if one is shown (after lock_acquire). */
void	output_wait_done(void);

#endif
