/* cmd-status.c: rlock status [NAME...]: who holds what. */

#include <stdlib.h>

#include <string.h>

#include "cmd.h"
#include "history.h"
#include "metrics.h"
#include "output.h"
#include "util.h"

static int	cmd_status_exec(struct cmd_ctx *);

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.args = "[NAME...]",
	.summary = "Show who holds the locks (no NAME: every held lock)",
	.options = OPT(FORMAT) | OPT(OVERDUE) | OPT(FAILING),
	.min_args = 0,
	.max_args = -1,
	.exec = cmd_status_exec,
};

/*
 * What --overdue and --failing (either: both) ask for, and whether st is
 * one of them.
 */
static int
alerting(const struct cmd_ctx *ctx, const struct lock_status *st)
{
	return (ctx->o.overdue && cmd_overdue(st)) ||
	    (ctx->o.failing && cmd_failing(st));
}

/*
 * Describe each name into out (through j with --json).  Returns how many
 * were held (with --overdue or --failing: how many were so), or -1.  With
 * only_held, free ones are left out, but for names run with --every (the
 * listing: a name SCAN found may have expired since); with --overdue, all
 * but the overdue ones.
 */
static int
describe(struct cmd_ctx *ctx, char **names, size_t n, int only_held,
    struct json *j, struct buf *out)
{
	struct lock_status	*st;
	struct output_status	 v;
	size_t			 i;
	int			 held = 0;

	/* Every name at once: a round trip for many (see lock_inspect_many). */
	st = xcalloc(n > 0 ? n : 1, sizeof *st);
	if (lock_inspect_many(&ctx->q, ctx->o.prefix, names, n, st,
	    &ctx->err) == -1) {
		free(st);
		return -1;
	}
	/* Counted "on 3 of 5" only if the five are five servers. */
	if (n > 0 && quorum_distinct(&ctx->q, &ctx->err) == -1)
		held = -1;
	for (i = 0; i < n; i++) {
		if (held >= 0 && st[i].damage != NULL) {
			lock_damage_report(st[i].damage);
			lock_status_free(&st[i]);
			continue;
		}
		if (held >= 0 && (ctx->o.overdue || ctx->o.failing ?
		    alerting(ctx, &st[i]) : ctx->o.schedules ?
		    st[i].every_ms > 0 :
		    st[i].held || st[i].every_ms > 0 || !only_held)) {
			cmd_status_view(&st[i], &v);
			if (ctx->o.json)
				output_status_json(j, &v);
			else
				output_status_text(out, &v);
			free(v.servers);
			free((void *)v.waiters);
			free((void *)v.slots);
		}
		if (held >= 0)
			held += ctx->o.overdue || ctx->o.failing ?
			    alerting(ctx, &st[i]) : st[i].held;
		lock_status_free(&st[i]);
	}
	free(st);
	return held;
}

/* Add to names[0..*n) those of the locks with a key of suffix, each once. */
static int
add_names(struct cmd_ctx *ctx, const char *suffix, char ***names, size_t *n)
{
	char	**more;
	size_t	  nmore, i, k, m;

	if (lock_list(&ctx->q, ctx->o.prefix, suffix, &more, &nmore,
	    &ctx->err) == -1)
		return -1;
	m = *n;
	for (i = 0; i < nmore; i++) {
		for (k = 0; k < m && strcmp((*names)[k], more[i]) != 0; k++)
			;
		if (k < m) {
			free(more[i]);
			continue;
		}
		*names = xrealloc(*names, (*n + 1) * sizeof **names);
		(*names)[(*n)++] = more[i];
	}
	free(more);
	return 0;
}

/*
 * The names of locks held now, and of those with a history (":log") or a
 * schedule (":every", exec --every) when asked, each once.
 */
static int
names_with(struct cmd_ctx *ctx, int logs, char ***names, size_t *n)
{
	if (lock_list(&ctx->q, ctx->o.prefix, "", names, n, &ctx->err) == -1)
		return -1;
	if (logs && add_names(ctx, ":log", names, n) == -1)
		return -1;
	return add_names(ctx, ":every", names, n);
}

/*
 * --format openmetrics: each lock's status and its whole history, then
 * every metric family at once.
 */
static int
metrics(struct cmd_ctx *ctx, char **names, size_t n)
{
	struct metrics_lock	*m;
	struct lock_status	*st;
	struct hist_event	*ev = NULL;
	struct buf		 out;
	size_t			 nev = 0, i, k = 0, nm = 0;
	int			 rc = 0;

	m = xcalloc(n + 1, sizeof *m);
	st = xcalloc(n + 1, sizeof *st);
	/* Two round trips for them all: their status, their histories. */
	if (lock_inspect_many(&ctx->q, ctx->o.prefix, names, n, st,
	    &ctx->err) == -1) {
		rc = cmd_fail(ctx);
		n = 0;
	} else if (history_read(&ctx->q, ctx->o.prefix, names, n, 100000, 0,
	    &ev, &nev, &ctx->err) == -1)
		rc = cmd_fail(ctx);
	/*
	 * The events come lock after lock, in the order of names.  A damaged
	 * lock is said on stderr and left out: the scrape stays whole.
	 */
	for (i = 0, nm = 0; i < n && rc == 0; i++) {
		if (st[i].damage != NULL) {
			lock_damage_report(st[i].damage);
			while (k < nev && strcmp(ev[k].name, names[i]) == 0)
				k++;
			continue;
		}
		m[nm] = (struct metrics_lock){ &st[i], ev + k, 0 };
		while (k < nev && strcmp(ev[k].name, names[i]) == 0) {
			m[nm].nev++;
			k++;
		}
		nm++;
	}
	if (rc == 0) {
		buf_init(&out);
		metrics_write(&out, m, nm);
		if (output_flush(&out) == -1)
			rc = EXIT_SOFTWARE;
		buf_free(&out);
	}
	for (i = 0; i < n; i++)
		lock_status_free(&st[i]);
	history_free(ev, nev);
	free(m);
	free(st);
	return rc;
}

static int
cmd_status_exec(struct cmd_ctx *ctx)
{
	struct buf	  out;
	struct json	  j;
	char		**names = ctx->o.args;
	size_t		  n = ctx->o.nargs, i;
	int		  listing = n == 0, array, held, rc;

	if (ctx->o.format != NULL && strcmp(ctx->o.format, "json") == 0)
		ctx->o.json = 1;
	/* A listing may send no script: INFO says if the server is too old. */
	ctx->set.ropts.check_version = listing;
	if (cmd_connect(ctx) == -1)
		return cmd_fail(ctx);
	if (ctx->o.format != NULL && strcmp(ctx->o.format, "openmetrics") == 0) {
		/* No NAME: the held locks, those with a history or a schedule. */
		if (listing && (names_with(ctx, 1, &names, &n) == -1 ||
		    quorum_distinct(&ctx->q, &ctx->err) == -1))
			return cmd_fail(ctx);
		rc = metrics(ctx, names, n);
		goto out;
	}
	/* No NAME: the held locks, and the names run with --every. */
	if (listing && (names_with(ctx, 0, &names, &n) == -1 ||
	    quorum_distinct(&ctx->q, &ctx->err) == -1))
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
	else if (lock_damage_count() > 0)
		rc = EXIT_UNAVAILABLE;	/* said on stderr, a line a lock */
	else if (ctx->o.overdue || ctx->o.failing)
		rc = held > 0 ? EXIT_BUSY : 0;	/* one overdue at least */
	else if (ctx->o.schedules)
		rc = 0;
	else
		rc = listing || (size_t)held == n ? 0 : EXIT_BUSY;
	buf_free(&out);
out:
	if (listing) {
		for (i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	return rc;
}
