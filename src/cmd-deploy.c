/* cmd-deploy.c: exec's deploy-queue policies, checked and told. */

/*
 * Newest waiter wins (exec --pending N, see rlock-exec(7)): at most N of
 * the waiters that ask with it wait on NAME, the oldest beyond N
 * superseded by the newest, which the acquire script does in the round
 * trip that lists the newcomer (acquire.lua).  What is left here: the
 * mixes that make no sense, refused before anything is sent, and the one
 * line a superseded waiter says.
 */

#include "cmd.h"
#include "deploy.h"
#include "log.h"

int
deploy_check(const struct opts *o)
{
	if (o->pending == 0)
		return 0;
	if (o->wait_ms == 0)
		return cmd_usage_error("--pending %d keeps the newest waiters, "
		    "and -n (or -w 0) does not wait: drop one", o->pending);
	if (o->shared)
		return cmd_usage_error("--pending supersedes waiting deploys, "
		    "and readers (--shared) all run together: drop one");
	return 0;
}

int
deploy_superseded(const struct lock *l)
{
	log_error("%s: superseded by a newer waiter on %s pid %s (--pending "
	    "%d); not running the command", l->name, l->superseded_host,
	    l->superseded_pid, l->pending);
	return EXIT_SUPERSEDED;
}
