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
	if (o->replace && o->no_replace)
		return cmd_usage_error("--replace stops the holder and "
		    "--no-replace keeps this run from being stopped: give one");
	if (o->replace && o->wait_ms == 0)
		return cmd_usage_error("--replace waits for the holder it "
		    "stops, and -n (or -w 0) does not wait: drop one");
	if ((o->replace || o->no_replace) && (o->shared || o->limit > 1))
		return cmd_usage_error("--%sreplace is for a plain lock's one "
		    "holder, not %s: drop one", o->replace ? "" : "no-",
		    o->shared ? "--shared" : "--limit");
	if (o->replace && o->every_ms > 0)
		return cmd_usage_error("--every keeps one start a period, and "
		    "--replace would stop it for another: drop one");
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
