/* cmd-status.c: rlock status [NAME...]: who holds what. */

#include <stdlib.h>

#include "cmd.h"
#include "output.h"
#include "util.h"

static int	cmd_status_exec(struct cmd_ctx *);

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.args = "[NAME...]",
	.summary = "Show who holds the locks (no NAME: every held lock)",
	.options = 0,
	.min_args = 0,
	.max_args = -1,
	.exec = cmd_status_exec,
};

/*
 * Describe each name into out (through j with --json).  Returns how many
 * were held, or -1.  With only_held, free ones are left out (the listing:
 * a name SCAN found may have expired since).
 */
static int
describe(struct cmd_ctx *ctx, char **names, size_t n, int only_held,
    struct json *j, struct buf *out)
{
	struct lock_status	st;
	struct output_status	v;
	struct lock		l;
	size_t			i;
	int			held = 0, rc;

	for (i = 0; i < n; i++) {
		lock_init(&l, &ctx->q, ctx->o.prefix, names[i], NULL);
		rc = lock_inspect(&l, &st, &ctx->err);
		lock_free(&l);
		/* Counted "on 3 of 5" only if the five are five servers. */
		if (rc == 0 && quorum_distinct(&ctx->q, &ctx->err) == -1)
			rc = -1;
		if (rc == -1) {
			lock_status_free(&st);
			return -1;
		}
		held += st.held;
		if (st.held || !only_held) {
			cmd_status_view(&st, &v);
			if (ctx->o.json)
				output_status_json(j, &v);
			else
				output_status_text(out, &v);
			free(v.servers);
			free((void *)v.waiters);
			free((void *)v.slots);
		}
		lock_status_free(&st);
	}
	return held;
}

static int
cmd_status_exec(struct cmd_ctx *ctx)
{
	struct buf	  out;
	struct json	  j;
	char		**names = ctx->o.args;
	size_t		  n = ctx->o.nargs, i;
	int		  listing = n == 0, array, held, rc;

	if (cmd_connect(ctx) == -1)
		return cmd_fail(ctx);
	if (listing && (lock_list(&ctx->q, ctx->o.prefix, &names, &n,
	    &ctx->err) == -1 || quorum_distinct(&ctx->q, &ctx->err) == -1))
		return cmd_fail(ctx);
	array = ctx->o.json && (listing || n > 1);
	buf_init(&out);
	json_open(&j, &out, 0);
	if (array)
		json_array_begin(&j);
	held = describe(ctx, names, n, listing, &j, &out);
	if (array)
		json_array_end(&j);
	if (ctx->o.json)
		buf_adds(&out, "\n");
	if (held == -1)
		rc = cmd_fail(ctx);
	else if (output_flush(&out) == -1)
		rc = EXIT_SOFTWARE;
	else
		rc = listing || (size_t)held == n ? 0 : EXIT_BUSY;
	buf_free(&out);
	if (listing) {
		for (i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	return rc;
}
