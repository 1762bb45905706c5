/* cmd-extend.c: rlock extend NAME: push the lock's expiry out (owner only). */

#include "cmd.h"
#include "duration.h"
#include "log.h"

static int	cmd_extend_exec(struct cmd_ctx *);

const struct cmd_entry cmd_extend_entry = {
	.name = "extend",
	.args = "NAME",
	.summary = "Push the lock's expiry out (owner only)",
	.options = OPT(TOKEN) | OPT(TTL) |
	    OPT(WAIT_REPLICAS),
	.min_args = 1,
	.max_args = 1,
	.opt_help = {
		[O_TOKEN] = "the owner's token (default $RLOCK_TOKEN)",
		[O_TTL] = "new time to live from now (default: as acquired)",
	},
	.exec = cmd_extend_exec,
};

static int
cmd_extend_exec(struct cmd_ctx *ctx)
{
	struct lock	 l;
	const char	*token = cmd_token(ctx);
	char		 d[32];
	int		 rc;

	if (token == NULL)
		return cmd_usage_error("extend needs the lock's token: pass "
		    "--token TOKEN or set RLOCK_TOKEN");
	if (cmd_connect(ctx) == -1)
		return cmd_fail(ctx);
	cmd_lock_init(ctx, &l, token);
	/* Without -t, the script uses the TTL the lock was acquired with. */
	rc = lock_extend(&l, ctx->o.given & OPT(TTL) ? ctx->o.ttl_ms : 0,
	    &ctx->err);
	if (rc == -1)
		rc = cmd_fail(ctx);
	else if (rc == 0) {
		log_error("extend %s: not the holder (the lock expired, or "
		    "another token holds it)", l.name);
		rc = EXIT_BUSY;
	} else {
		log_verbose("extended %s by %s (fence %lld)", l.name,
		    duration_format(l.ttl_ms, d, sizeof d), l.fence);
		rc = 0;
	}
	lock_free(&l);
	return rc;
}
