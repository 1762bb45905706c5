/* output.h: what rlock prints on stdout, as text or JSON. */
#ifndef RLOCK_OUTPUT_H
#define RLOCK_OUTPUT_H

#include "lock.h"
#include "util.h"

/* "NAME: held by USER@HOST pid PID (COMMAND) for 3.2s, expires in 26.8s, fence 7" */
void	output_status_text(struct buf *, const struct lock_status *);
/* {"name":…,"held":true,"host":…,…} */
void	output_status_json(struct buf *, const struct lock_status *);
/* {"name":…,"token":…,"fence":…,"ttl_ms":…} */
void	output_acquire_json(struct buf *, const struct lock *);
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
