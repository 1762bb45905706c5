/* cmd-log.c: rlock log [NAME...]: what happened to the locks, newest first. */

#include <stdlib.h>

#include "cmd.h"
#include "history.h"
#include "output.h"
#include "util.h"

static int	cmd_log_exec(struct cmd_ctx *);

const struct cmd_entry cmd_log_entry = {
	.name = "log",
	.args = "[NAME...]",
	.summary = "Show the locks' history (no NAME: every lock's)",
	.options = OPT(COUNT) | OPT(SINCE),
	.min_args = 0,
	.max_args = -1,
	.exec = cmd_log_exec,
};

static int
cmd_log_exec(struct cmd_ctx *ctx)
{
	struct hist_event	 *ev = NULL;
	struct buf		  out;
	struct json		  j;
	char			**names = ctx->o.args;
	size_t			  n = ctx->o.nargs, nev = 0, i;
	int			  listing = n == 0, rc = 0;

	for (i = 0; i < n; i++)
		if (cmd_check_name(names[i]) == -1)
			return EXIT_USAGE;
	/* A listing may send no script: INFO says if the server is too old. */
	ctx->set.ropts.check_version = listing;
	if (cmd_connect(ctx) == -1)
		return cmd_fail(ctx);
	if (listing && (lock_list(&ctx->q, ctx->o.prefix, ":log", &names, &n,
	    &ctx->err) == -1 || quorum_distinct(&ctx->q, &ctx->err) == -1))
		return cmd_fail(ctx);
	if (history_read(&ctx->q, ctx->o.prefix, names, n, ctx->o.count,
	    ctx->o.since_ms, &ev, &nev, &ctx->err) == -1)
		rc = cmd_fail(ctx);
	if (rc == 0) {
		history_sort(ev, nev);
		buf_init(&out);
		/* --json: one object a line, to read as it comes. */
		for (i = 0; i < nev; i++) {
			if (ctx->o.json) {
				json_open(&j, &out, 0);
				history_json(&j, &ev[i]);
				buf_adds(&out, "\n");
			} else
				history_text(&out, &ev[i]);
		}
		if (output_flush(&out) == -1)
			rc = EXIT_SOFTWARE;
		buf_free(&out);
	}
	history_free(ev, nev);
	if (listing) {
		for (i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	return rc;
}
