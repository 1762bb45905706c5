/* cmd-watch.c: rlock watch [NAME...]: the locks' events as they happen. */

/*
 * A blocking XREAD on the history streams (rlock-protocol(7), History), each
 * from the newest entry it had when seen first, so nothing is shown twice
 * and nothing between two reads is missed.  With no NAME the streams are
 * found with SCAN, again every RESCAN_MS: a lock whose first event comes
 * later is followed from its first entry.  In quorum mode one server is
 * followed (the first that answers; the next if it fails).
 *
 * At a terminal (and without --json) the screen is redrawn after each
 * read instead, at most BLOCK_MS apart: each lock's status, then the
 * newest events.
 */

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "escape.h"
#include "history.h"
#include "lock.h"
#include "output.h"
#include "scripts.h"
#include "signals.h"
#include "supervise.h"
#include "util.h"

/* How long one read blocks: also how soon a closed stdout is noticed. */
#define BLOCK_MS	1000
/* With no NAME, how often new locks are looked for. */
#define RESCAN_MS	2000
/* At most this many streams (XREAD's arguments) in one read. */
#define WATCH_MAX	1000
/* At a terminal: the locks shown at most, and the events under them. */
#define SHOWN_MAX	20
#define RECENT_MAX	10

static int	cmd_watch_exec(struct cmd_ctx *);

const struct cmd_entry cmd_watch_entry = {
	.name = "watch",
	.args = "[NAME...]",
	.summary = "Follow the locks' events live (no NAME: every lock)",
	.options = 0,
	.min_args = 0,
	.max_args = -1,
	.exec = cmd_watch_exec,
};

struct stream {
	char			*name;
	char			*key;		/* PREFIX{NAME}:log */
	char			 id[48];	/* the newest entry seen */
	int			 damaged;	/* not a stream: said once */
	/* That entry, to tell from the next one an expiry (history_expired). */
	struct hist_event	 last;
	int			 has_last;
};

struct watch {
	struct cmd_ctx	*ctx;
	struct stream	*s;
	size_t		 n;
	int		 server;	/* the one followed */
	int		*only;		/* ... as a mask */
	int		 tty;		/* redraw a view, not a stream of lines */
	char		*recent[RECENT_MAX];	/* the view's events, oldest first */
	int		 nrecent;
};

/* Keep one event line for the view, dropping the oldest. */
static void
remember(struct watch *w, const struct hist_event *ev)
{
	struct buf	b;

	buf_init(&b);
	history_text(&b, ev);
	if (b.len > 0 && b.p[b.len - 1] == '\n')
		b.p[--b.len] = '\0';
	if (w->nrecent == RECENT_MAX) {
		free(w->recent[0]);
		memmove(w->recent, w->recent + 1,
		    (RECENT_MAX - 1) * sizeof *w->recent);
		w->nrecent--;
	}
	w->recent[w->nrecent++] = b.p;
}

/* The terminal view: clear the screen, each lock's status, the events. */
static int
redraw(struct watch *w)
{
	struct lock_status	st[SHOWN_MAX];
	struct output_status	v;
	struct buf		out;
	char			when[64], *names[SHOWN_MAX];
	size_t			i, n = w->n < SHOWN_MAX ? w->n : SHOWN_MAX;
	int			k, rc;

	buf_init(&out);
	buf_adds(&out, "\033[H\033[2J");
	buf_printf(&out, "rlock watch: %zu lock%s, %s\n\n", w->n,
	    w->n == 1 ? "" : "s", format_time(now_wall_ms(), when,
	    sizeof when));
	for (i = 0; i < n; i++)
		names[i] = w->s[i].name;
	/* One round trip for them all. */
	if (lock_inspect_many(&w->ctx->q, w->ctx->o.prefix, names, n, st,
	    &w->ctx->err) == -1) {
		buf_adds(&out, "(");
		escape_adds(&out, w->ctx->err.msg);
		buf_adds(&out, ")\n");
	} else
		for (i = 0; i < n; i++) {
			if (st[i].damage != NULL) {
				escape_adds(&out, st[i].damage);
				buf_adds(&out, "\n");
				lock_status_free(&st[i]);
				continue;
			}
			cmd_status_view(&st[i], &v);
			output_status_text(&out, &v);
			free(v.servers);
			free((void *)v.waiters);
			free((void *)v.slots);
			lock_status_free(&st[i]);
		}
	if (w->n > SHOWN_MAX)
		buf_printf(&out, "(and %zu more)\n", w->n - SHOWN_MAX);
	buf_adds(&out, "\nrecent events:\n");
	for (k = 0; k < w->nrecent; k++)
		buf_printf(&out, "  %s\n", w->recent[k]);
	rc = output_flush(&out);
	buf_free(&out);
	return rc;
}

/* The newest entry seen of st is now ev (taken over), or none (NULL). */
static void
set_last(struct stream *st, struct hist_event *ev)
{
	if (st->has_last)
		history_event_free(&st->last);
	st->has_last = ev != NULL;
	if (ev != NULL)
		st->last = *ev;
}

static struct stream *
find_stream(struct watch *w, const char *name)
{
	size_t	i;

	for (i = 0; i < w->n; i++)
		if (strcmp(w->s[i].name, name) == 0)
			return &w->s[i];
	return NULL;
}

/*
 * Set st->id to the newest entry the followed server has ("0-0": none),
 * and st->last to that entry: the first acquired that comes may follow a
 * hold that expired.
 */
static int
newest_id(struct watch *w, struct stream *st)
{
	struct redis_reply	**rep, *r;
	const char		 *keys[1], *args[2] = { "1", "0" };
	struct hist_event	  ev;
	size_t			  one = 1;
	int			  rc = 0, ok;

	snprintf(st->id, sizeof st->id, "0-0");
	set_last(st, NULL);
	keys[0] = st->key;
	rep = xcalloc(w->ctx->q.n, sizeof *rep);
	ok = quorum_run(&w->ctx->q, &(struct quorum_req){
	    .script = &script_log, .only = w->only, .nkeys = 1, .keys = keys,
	    .nargs = 2, .args = args }, rep, &w->ctx->err);
	/* A wrong shape is no "no history yet": said, and the end. */
	quorum_check(&w->ctx->q, rep, history_log_shape, &one, "the log script",
	    ok, &w->ctx->err);
	if ((r = rep[w->server]) == NULL)
		rc = -1;
	else if (r->type == REDIS_T_ARRAY && r->elements >= 2 &&
	    r->element[1]->type == REDIS_T_ARRAY &&
	    r->element[1]->elements > 0 &&
	    r->element[1]->element[0]->type == REDIS_T_ERROR) {
		/* Another program's key: said, and the others followed. */
		char	*words = lock_damage_words(r->element[1]->element[0]->str);

		lock_damage_report(words);
		free(words);
		st->damaged = 1;
	} else if (r->type == REDIS_T_ARRAY && r->elements >= 2 &&
	    r->element[1]->type == REDIS_T_ARRAY &&
	    r->element[1]->elements > 0 &&
	    (r = r->element[1]->element[0])->type == REDIS_T_ARRAY &&
	    r->elements > 0 &&
	    r->element[0]->type == REDIS_T_ARRAY &&
	    r->element[0]->elements > 0 &&
	    r->element[0]->element[0]->type == REDIS_T_STRING) {
		/* {now, {{newest entry {id, fields}}}} */
		snprintf(st->id, sizeof st->id, "%s", r->element[0]->element[0]->str);
		if (history_parse(r->element[0], &ev) == 0)
			set_last(st, &ev);
		else
			history_event_free(&ev);
	}
	if (rc == -1)
		w->ctx->err = w->ctx->q.errs[w->server];
	quorum_free_replies(&w->ctx->q, rep);
	free(rep);
	return rc;
}

/* Follow name from its newest entry (from_start: from its first). */
static int
add_stream(struct watch *w, const char *name, int from_start)
{
	struct stream	*st;

	w->s = xrealloc(w->s, (w->n + 1) * sizeof *w->s);
	st = &w->s[w->n++];
	memset(st, 0, sizeof *st);
	st->name = xstrdup(name);
	xasprintf(&st->key, "%s{%s}:log", w->ctx->o.prefix, name);
	snprintf(st->id, sizeof st->id, "0-0");
	/* (xrealloc's new memory is not zeroed) */
	st->damaged = st->has_last = 0;
	return from_start ? 0 : newest_id(w, st);
}

/* With no NAME: look for locks with a history not followed yet. */
static int
rescan(struct watch *w, int first)
{
	char	**names;
	size_t	  n, i;
	int	  rc = 0;

	if (lock_list(&w->ctx->q, w->ctx->o.prefix, ":log", &names, &n,
	    &w->ctx->err) == -1)
		return -1;
	for (i = 0; i < n; i++) {
		if (rc == 0 && w->n < WATCH_MAX && find_stream(w, names[i]) == NULL)
			rc = add_stream(w, names[i], !first);
		free(names[i]);
	}
	free(names);
	return rc;
}

/* Has the reader of stdout gone (a closed pipe)? */
static int
stdout_gone(void)
{
	struct pollfd	pfd = { .fd = STDOUT_FILENO, .events = 0 };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLERR | POLLHUP));
}

/* One event, as the view's line, a JSON object or a line of text. */
static void
show_event(struct watch *w, struct buf *out, const struct hist_event *ev)
{
	struct json	j;

	if (w->tty)
		remember(w, ev);
	else if (w->ctx->o.json) {
		json_open(&j, out, 0);
		history_json(&j, ev);
		buf_adds(out, "\n");
	} else
		history_text(out, ev);
}

/*
 * Print the entries of one XREAD reply, each after the expiry it implies
 * (history_expired); -1 when stdout is gone.
 */
static int
show(struct watch *w, const struct redis_reply *r)
{
	const struct redis_reply	*sr, *list;
	struct hist_event		 ev, implied;
	struct stream			*st;
	struct buf			 out;
	size_t				 i, k;
	int				 rc;

	buf_init(&out);
	for (i = 0; r->type == REDIS_T_ARRAY && i < r->elements; i++) {
		sr = r->element[i];
		if (sr->type != REDIS_T_ARRAY || sr->elements < 2 ||
		    sr->element[0]->type != REDIS_T_STRING ||
		    (list = sr->element[1])->type != REDIS_T_ARRAY)
			continue;
		for (st = NULL, k = 0; k < w->n && st == NULL; k++)
			if (strcmp(w->s[k].key, sr->element[0]->str) == 0)
				st = &w->s[k];
		for (k = 0; st != NULL && k < list->elements; k++) {
			if (list->element[k]->type == REDIS_T_ARRAY &&
			    list->element[k]->elements > 0 &&
			    list->element[k]->element[0]->type == REDIS_T_STRING)
				snprintf(st->id, sizeof st->id, "%s",
				    list->element[k]->element[0]->str);
			if (history_parse(list->element[k], &ev) == -1) {
				history_event_free(&ev);
				set_last(st, NULL);
				continue;
			}
			ev.name = xstrdup(st->name);
			ev.servers = ev.nservers = 1;
			if (st->has_last &&
			    history_expired(&st->last, &ev, &implied)) {
				show_event(w, &out, &implied);
				history_event_free(&implied);
			}
			show_event(w, &out, &ev);
			if (!history_queue_event(&ev))
				set_last(st, &ev);
		}
	}
	rc = out.len > 0 ? output_flush(&out) : 0;
	buf_free(&out);
	return rc;
}

/*
 * XREAD's reply: nil (nothing came within BLOCK), or {{key, entries}, ...}.
 * Anything else is no answer: shown as nothing, a loop would spin on it.
 */
static int
xread_shape(const struct redis_reply *r)
{
	const struct redis_reply	*sr;
	size_t				 i;

	if (r->type == REDIS_T_NIL)
		return 1;
	if (r->type != REDIS_T_ARRAY)
		return 0;
	for (i = 0; i < r->elements; i++) {
		sr = r->element[i];
		if (sr->type != REDIS_T_ARRAY || sr->elements != 2 ||
		    sr->element[0]->type != REDIS_T_STRING ||
		    !history_entries_shape(sr->element[1]))
			return 0;
	}
	return 1;
}

/* The entries in an XREAD reply of the right shape. */
static size_t
entries_in(const struct redis_reply *r)
{
	size_t	i, n = 0;

	for (i = 0; r->type == REDIS_T_ARRAY && i < r->elements; i++)
		n += r->element[i]->element[1]->elements;
	return n;
}

/*
 * Until `ms` (monotonic) unless a signal comes: a server that answers
 * "nothing came" before its BLOCK is up would otherwise be asked again at
 * once, thousands of times a second.
 */
static void
pace_until(int64_t ms)
{
	struct timespec	ts;
	int64_t		left;

	if (signal_caught || (left = ms - now_mono_ms()) <= 0)
		return;
	ts.tv_sec = (time_t)(left / 1000);
	ts.tv_nsec = (long)(left % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}

/* One blocking read of every stream: 0, or -1 (ctx->err filled). */
static int
read_once(struct watch *w)
{
	struct redis_reply	**rep;
	const char		**argv;
	char			  ms[16];
	size_t			  i, argc = 0;
	int64_t			  start;
	int			  rc = 0;

	if (w->n == 0) {
		/* Nothing to follow yet: wait for the next scan. */
		struct timespec	ts = { RESCAN_MS / 1000, 0 };

		if (!signal_caught)
			nanosleep(&ts, NULL);
		return 0;
	}
	argv = xcalloc(2 * w->n + 5, sizeof *argv);
	snprintf(ms, sizeof ms, "%d", BLOCK_MS);
	argv[argc++] = "XREAD";
	argv[argc++] = "BLOCK";
	argv[argc++] = ms;
	argv[argc++] = "STREAMS";
	for (i = 0; i < w->n; i++)
		if (!w->s[i].damaged)
			argv[argc++] = w->s[i].key;
	for (i = 0; i < w->n; i++)
		if (!w->s[i].damaged)
			argv[argc++] = w->s[i].id;
	if (argc == 4) {
		/* Only damaged ones: nothing to read until the next scan. */
		struct timespec	ts = { RESCAN_MS / 1000, 0 };

		free(argv);
		if (!signal_caught)
			nanosleep(&ts, NULL);
		return 0;
	}
	rep = xcalloc(w->ctx->q.n, sizeof *rep);
	start = now_mono_ms();
	quorum_command(&w->ctx->q, w->only, (int)argc, argv, BLOCK_MS, rep,
	    &w->ctx->err);
	if (signal_caught)
		rc = 0;
	else if (rep[w->server] == NULL) {
		w->ctx->err = w->ctx->q.errs[w->server];
		rc = -1;
	} else if (!xread_shape(rep[w->server])) {
		err_set(&w->ctx->err, ERR_PROTOCOL, "%s: XREAD was answered "
		    "with %s of a shape Redis never gives; is it a Redis "
		    "server, with nothing in between?",
		    redis_display(w->ctx->q.conn[w->server]),
		    quorum_reply_kind(rep[w->server]));
		w->ctx->q.errs[w->server] = w->ctx->err;
		rc = -1;
	} else if (show(w, rep[w->server]) == -1 ||
	    (w->tty && redraw(w) == -1))
		rc = -2;
	else if (entries_in(rep[w->server]) == 0)
		pace_until(start + BLOCK_MS);
	quorum_free_replies(&w->ctx->q, rep);
	free(rep);
	free(argv);
	return rc;
}

static int
cmd_watch_exec(struct cmd_ctx *ctx)
{
	struct watch	w;
	size_t		i;
	int64_t		scanned;
	int		rc = 0, listing = ctx->o.nargs == 0;

	for (i = 0; i < (size_t)ctx->o.nargs; i++)
		if (cmd_check_name(ctx->o.args[i]) == -1)
			return EXIT_USAGE;
	if (ctx->o.nargs > WATCH_MAX)
		return cmd_usage_error("watch follows at most %d locks at once",
		    WATCH_MAX);
	/* Watch sends no script: INFO says if the server is too old. */
	ctx->set.ropts.check_version = 1;
	if (cmd_connect(ctx) == -1)
		return cmd_fail(ctx);
	memset(&w, 0, sizeof w);
	w.ctx = ctx;
	w.only = xcalloc(ctx->q.n, sizeof *w.only);
	w.only[0] = 1;
	w.tty = isatty(STDOUT_FILENO) && !ctx->o.json;
	for (i = 0; rc == 0 && i < (size_t)ctx->o.nargs; i++)
		rc = add_stream(&w, ctx->o.args[i], 0);
	if (rc == 0 && listing)
		rc = rescan(&w, 1);
	scanned = now_mono_ms();
	if (rc == 0 && w.tty && redraw(&w) == -1)
		rc = -2;
	while (rc == 0 && !signal_caught && !stdout_gone()) {
		rc = read_once(&w);
		if (rc == -1 && w.server + 1 < ctx->q.n &&
		    ctx->err.kind != ERR_USAGE) {
			/* Quorum mode: follow the next server from now on. */
			w.only[w.server++] = 0;
			w.only[w.server] = 1;
			for (i = 0, rc = 0; rc == 0 && i < w.n; i++)
				rc = newest_id(&w, &w.s[i]);
			continue;
		}
		if (rc == 0 && listing && now_mono_ms() - scanned >= RESCAN_MS) {
			rc = rescan(&w, 0);
			scanned = now_mono_ms();
		}
	}
	/* Interrupted (SIGINT, SIGTERM) or the reader gone: a clean end. */
	if (rc == -1 && strstr(ctx->err.msg, "CROSSSLOT") != NULL)
		rc = cmd_usage_error("watch: in Redis Cluster the names live in "
		    "different slots; watch one name at a time");
	else if (rc == -1)
		rc = cmd_fail(ctx);
	else
		rc = 0;
	for (i = 0; i < w.n; i++) {
		free(w.s[i].name);
		free(w.s[i].key);
		set_last(&w.s[i], NULL);
	}
	free(w.s);
	free(w.only);
	for (i = 0; i < (size_t)w.nrecent; i++)
		free(w.recent[i]);
	return rc;
}
