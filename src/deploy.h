/* deploy.h: exec's deploy-queue policies (--pending), checked and told. */
#ifndef RLOCK_DEPLOY_H
#define RLOCK_DEPLOY_H

#include "lock.h"
#include "options.h"

/*
 * The status of a waiter that a newer one superseded (--pending): not 1,
 * which says "busy" to a wrapper that alerts on it, and not a failure.
 */
#define EXIT_SUPERSEDED		36
/* The status of a holder that a newcomer replaced (--replace). */
#define EXIT_REPLACED		37

/* 0, or the usage error's status after saying why (o: exec's options). */
int	deploy_check(const struct opts *o);
/* Say who superseded l (one line, even with -q); its exit status. */
int	deploy_superseded(const struct lock *l);

#endif
