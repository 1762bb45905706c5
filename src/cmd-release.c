/* cmd-release.c: rlock release NAME: give the lock back (owner only, or --force). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "escape.h"
#include "keeper.h"
#include "log.h"
#include "output.h"
#include "util.h"

static int	cmd_release_exec(struct cmd_ctx *);

const struct cmd_entry cmd_release_entry = {
	.name = "release",
	.args = "NAME",
	.summary = "Give the lock back (owner only, or --force)",
	.options = OPT(TOKEN) | OPT(FORCE) | OPT(REASON) | OPTS_HISTORY,
	.min_args = 1,
	.max_args = 1,
	.opt_help = {
		[O_TOKEN] = "the owner's token (default $RLOCK_TOKEN)",
	},
	.exec = cmd_release_exec,
};

static int
force(struct cmd_ctx *ctx, struct lock *l)
{
	struct lock_status	st;
	struct output_status	v;
	struct buf		out;
	const char		*p;
	size_t			n;
	int			rc;

	if ((rc = lock_force_release(l, &st, &ctx->err)) == -1) {
		lock_status_free(&st);
		return cmd_fail(ctx);
	}
	if (rc == 0 && st.damage == NULL) {
		log_error("release --force %s: the lock is not held", l->name);
		lock_status_free(&st);
		return EXIT_BUSY;
	}
	buf_init(&out);
	if (rc == 1) {
		buf_adds(&out, "removed ");
		cmd_status_view(&st, &v);
		output_status_text(&out, &v);
		free(v.servers);
		free((void *)v.waiters);
		free((void *)v.slots);
		log_notice("release --force: %.*s", (int)strcspn(out.p, "\n"),
		    out.p);
	}
	/* Keys that held what rlock never writes: each said, a line. */
	for (p = st.damage; p != NULL && *p != '\0'; p += n + 1) {
		n = strcspn(p, "\n");
		buf_adds(&out, "removed ");
		escape_add(&out, p, n);
		buf_adds(&out, "\n");
		log_notice("release --force %s: removed %.*s", l->name, (int)n,
		    p);
		if (p[n] == '\0')
			break;
	}
	rc = output_flush(&out) == -1 ? EXIT_SOFTWARE : 0;
	buf_free(&out);
	lock_status_free(&st);
	return rc;
}

static int
cmd_release_exec(struct cmd_ctx *ctx)
{
	struct lock	 l;
	const char	*token = cmd_token(ctx), *reason;
	int		 rc, kfd;

	if (!ctx->o.force && token == NULL)
		return cmd_usage_error("release needs the lock's token: pass "
		    "--token TOKEN or set RLOCK_TOKEN (or use --force)");
	if (cmd_connect(ctx) == -1)
		return cmd_fail(ctx);
	cmd_lock_init(ctx, &l, token);
	/*
	 * The lock may be an exec --every run's, released by hand once its
	 * rlock died: its schedule learns how the run ended (release.lua).
	 */
	l.every_ms = -1;
	if (ctx->o.force)
		rc = force(ctx, &l);
	else {
		/*
		 * A keeper of this lock on this host (acquire --hold) hears of
		 * the release before it is sent, and of its outcome: it
		 * extends no more, takes no refusal for a loss, and exits.
		 */
		kfd = keeper_announce(ctx->o.prefix, l.name, token);
		reason = ctx->o.reason != NULL && *ctx->o.reason != '\0' ?
		    ctx->o.reason : "release";
		rc = lock_release(&l, reason, &ctx->err);
		/*
		 * A release whose reply was lost is settled, not failed: the
		 * token no longer holding the lock after it is that release's
		 * doing as far as anyone can tell (we do not know when the
		 * lock's validity ends), and so it is released: exit 0, and
		 * the keeper told so.  Only a first answer of "not the
		 * holder" exits 1.
		 */
		if (rc == -1 && (rc = lock_settle_release(&l, reason, 0,
		    &ctx->err)) == LOCK_SETTLED)
			rc = 1;
		keeper_released(kfd, rc);
	}
	if (ctx->o.force)
		;
	else if (rc == -1)
		rc = cmd_fail(ctx);
	else if (rc == 0) {
		log_error("release %s: not the holder (the lock expired, or "
		    "another token holds it)", l.name);
		rc = EXIT_BUSY;
	} else {
		log_verbose("released %s", l.name);
		rc = 0;
	}
	lock_free(&l);
	return rc;
}
