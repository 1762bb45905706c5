/* cmd-acquire.c: rlock acquire NAME: take the lock and print its token. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "duration.h"
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
	    OPT(SHARED) | OPTS_HISTORY,
	.min_args = 1,
	.max_args = 1,
	.exec = cmd_acquire_exec,
};

static int
cmd_acquire_exec(struct cmd_ctx *ctx)
{
	struct lock_meta	 meta;
	struct lock		 l;
	struct buf		 out;
	char			 token[TOKEN_MAX + 1], d[32], t[32];
	int64_t			 start;
	int			 rc;

	if (ctx->o.token != NULL)
		snprintf(token, sizeof token, "%s", ctx->o.token);
	else
		lock_new_token(token, sizeof token);
	/* rlock exits at once: the holder is the script that ran it. */
	cmd_meta(&meta, (long long)getppid(), "");
	if (cmd_connect(ctx) == -1)
		return cmd_fail(ctx);
	buf_init(&out);
	cmd_lock_init(ctx, &l, token);
	start = now_mono_ms();
	rc = lock_acquire(&l, ctx->o.ttl_ms, ctx->o.wait_ms, &meta, &ctx->err);
	output_wait_done();
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
	rc = 0;
out:
	buf_free(&out);
	lock_free(&l);
	return rc;
}
