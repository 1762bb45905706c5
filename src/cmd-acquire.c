/* cmd-acquire.c: rlock acquire NAME: take the lock and print its token. */

/*
 * With --hold, a keeper (keeper.c) is forked once the token is printed:
 * a keeper that cannot be forked costs the lock (and exit 70), and an
 * rlock killed before it has printed the token leaves no keeper.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "deploy.h"
#include "duration.h"
#include "keeper.h"
#include "log.h"
#include "output.h"
#include "signals.h"
#include "util.h"

static int	cmd_acquire_exec(struct cmd_ctx *);

const struct cmd_entry cmd_acquire_entry = {
	.name = "acquire",
	.args = "NAME",
	.summary = "Take the lock and print its token",
	.options = OPT(TTL) | OPT(WAIT) | OPT(NO_WAIT) |
	    OPT(CONFLICT_EXIT_CODE) | OPT(TOKEN) |
	    OPT(WAIT_REPLICAS) | OPT(FIFO) | OPT(LIMIT) |
	    OPT(SHARED) | OPT(HOLD) | OPT(PID) | OPT(ON_LOST) | OPT(SPLAY) |
	    OPT(NO_REPLACE) | OPTS_HISTORY,
	.min_args = 1,
	.max_args = 1,
	.opt_help = {
		[O_ON_LOST] = "with --hold: signal the owner if lost (default TERM)",
	},
	.exec = cmd_acquire_exec,
};

/*
 * --hold: who the lock is kept for, watched from now on (before anything
 * is taken), and its command line for status.  0, or an exit status.
 */
static int
ready_hold(struct cmd_ctx *ctx, struct keeper *k, char *command, size_t len)
{
	const struct opts	*o = &ctx->o;

	k->pidfd = -1;
	k->pid = -1;
	if (!o->hold) {
		if (o->given & (OPT(PID) | OPT(ON_LOST)))
			return cmd_usage_error("--%s needs --hold: rlock acquire "
			    "--hold [--pid PID] NAME", o->given & OPT(PID) ?
			    "pid" : "on-lost");
		return 0;
	}
	k->owner = o->pid > 0 ? (pid_t)o->pid : getppid();
	k->on_lost = o->on_lost;
	k->target.prefix = o->prefix;
	k->target.urls = ctx->set.urls;
	k->target.nurls = ctx->set.nurls;
	k->target.opts = &ctx->set.ropts;
	if (keeper_watch(k, &ctx->err) == -1) {
		if (o->pid > 0)
			return cmd_usage_error("--pid %d: %s", o->pid,
			    "no such process");
		return cmd_fail(ctx);
	}
	/* The caller ended already, and we were handed on to another. */
	if (o->pid <= 0 && getppid() != k->owner) {
		close(k->pidfd);
		k->pidfd = -1;
		err_set(&ctx->err, ERR_SOFTWARE, "acquire --hold: the caller "
		    "(pid %d) has ended; nothing was taken", (int)k->owner);
		return cmd_fail(ctx);
	}
	keeper_owner_command(k->owner, command, len);
	return 0;
}

/*
 * Fork the keeper once the token is out, with /dev/null for standard
 * output first: the keeper would otherwise hold the caller's $(...) pipe
 * open until it is scheduled and closes it, a delay on the caller's path.
 * 0, or -1 with the lock given back and said so.
 */
static int
start_keeper(struct cmd_ctx *ctx, struct keeper *k, struct lock *l)
{
	int	fd;

	fflush(stdout);
	if ((fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) != -1) {
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
	if (keeper_start(k, l, &ctx->err) == 0)
		return 0;
	cmd_give_back(l);
	log_error("%s; the lock %s was released", ctx->err.msg, l->name);
	return -1;
}

static int
cmd_acquire_exec(struct cmd_ctx *ctx)
{
	struct lock_meta	 meta;
	struct lock		 l;
	struct buf		 out;
	struct keeper		 k;
	char			 token[TOKEN_MAX + 1], d[32], t[32];
	char			 command[256];
	int64_t			 start;
	int			 rc;

	if ((rc = deploy_check(&ctx->o)) != 0 ||
	    (rc = ready_hold(ctx, &k, command, sizeof command)) != 0)
		return rc;
	if (ctx->o.token != NULL)
		snprintf(token, sizeof token, "%s", ctx->o.token);
	else
		lock_new_token(token, sizeof token);
	/* rlock exits at once: the holder is the script that ran it. */
	cmd_meta(&meta, (long long)getppid(), "");
	if (ctx->o.hold)
		cmd_meta(&meta, (long long)k.owner, command);
	if (cmd_splay(ctx) == -1 || cmd_connect(ctx) == -1) {
		rc = cmd_fail(ctx);
		goto out_keeper;
	}
	buf_init(&out);
	cmd_lock_init(ctx, &l, token);
	l.no_replace = ctx->o.no_replace;
	start = now_mono_ms();
	rc = cmd_lock_acquire(ctx, &l, &meta);
	output_wait_done();
	/* -w is spent: it does not help the give-back or --hold's keeper. */
	ctx->set.ropts.offer_wait = 0;
	if (rc == 1 && signal_caught) {
		err_set(&ctx->err, ERR_INTERRUPTED, "interrupted");
		rc = -1;
		l.maybe_held = 1;
	}
	if (rc == -1) {
		if (l.maybe_held)
			cmd_give_back(&l);
		rc = cmd_fail(ctx);
		goto out;
	}
	if (rc == 0) {
		log_verbose("%s: still busy after %s", l.name,
		    duration_format(now_mono_ms() - start, d, sizeof d));
		rc = ctx->o.conflict_exit_code;
		goto out;
	}
	/* Taking a lock that was busy is worth a line in syslog. */
	(l.waited ? log_notice : log_verbose)("acquired %s in %s (fence %lld, "
	    "ttl %s)", l.name, duration_format(now_mono_ms() - start, d,
	    sizeof d), l.fence, duration_format(l.ttl_ms, t, sizeof t));
	if (ctx->o.json)
		output_acquire_json(&out, l.name, l.token, l.fence, l.ttl_ms);
	else
		buf_printf(&out, "%s\n", l.token);
	if (output_flush(&out) == -1) {
		rc = errno;
		cmd_give_back(&l);
		log_error("cannot write the token of %s to stdout: %s; the "
		    "lock was released", l.name, strerror(rc));
		rc = EXIT_SOFTWARE;
		goto out;
	}
	if (ctx->o.hold && start_keeper(ctx, &k, &l) == -1) {
		rc = EXIT_SOFTWARE;
		goto out;
	}
	rc = 0;
out:
	buf_free(&out);
	lock_free(&l);
out_keeper:
	if (k.pidfd != -1)
		close(k.pidfd);
	return rc;
}
