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

#endif
