/* metrics.h: status --format openmetrics, the Prometheus text format. */
#ifndef RLOCK_METRICS_H
#define RLOCK_METRICS_H

#include <stddef.h>

#include "history.h"
#include "lock.h"
#include "util.h"

/* What is shown of one lock: its status, and what its history says. */
struct metrics_lock {
	const struct lock_status	*st;
	const struct hist_event		*ev;	/* its history, newest first */
	size_t				 nev;
};

/* Every metric family for these locks, then "# EOF". */
void	metrics_write(struct buf *, const struct metrics_lock *, size_t n);

#endif
