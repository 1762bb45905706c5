/* output.c: the text and JSON forms of what the commands print. */

/*
 * Everything goes through a struct buf and leaves in one write, so a
 * failed write (a full disk, a closed pipe) is seen and reported by the
 * caller, which can then give the lock back.  What is printed arrives as
 * plain values (struct output_status), so this file knows nothing of the
 * lock layer, and all JSON is written by json.c.  Every string in those
 * values came from outside (Redis, a server's error, a URL) and goes into
 * the text forms through escape_add: no byte of it can steer a terminal.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "escape.h"
#include "output.h"

static void	int_or_null(struct json *, long long);

/* Unknown and empty are both null in JSON. */
static void
str_or_null(struct json *j, const char *s)
{
	json_str(j, s != NULL && *s != '\0' ? s : NULL);
}

static const char *
or_unknown(const char *s)
{
	return s != NULL && *s != '\0' ? s : "?";
}

/* "USER@HOST pid PID (COMMAND)", each part escaped. */
static void
who_text(struct buf *b, const char *user, const char *host, long long pid,
    const char *command)
{
	escape_adds(b, or_unknown(user));
	buf_adds(b, "@");
	escape_adds(b, or_unknown(host));
	buf_printf(b, " pid %lld", pid);
	if (command != NULL && *command != '\0') {
		buf_adds(b, " (");
		escape_adds(b, command);
		buf_adds(b, ")");
	}
}

static const char *const node_state[] = {
	[OUTPUT_FREE] = "free",
	[OUTPUT_HOLDS] = "holds it",
	[OUTPUT_OTHER] = "holds another token",
	[OUTPUT_UNREACHABLE] = "unreachable",
};

static const char *const node_state_json[] = {
	[OUTPUT_FREE] = "free",
	[OUTPUT_HOLDS] = "holds",
	[OUTPUT_OTHER] = "other",
	[OUTPUT_UNREACHABLE] = "unreachable",
};

/* Quorum mode: one indented line per server. */
static void
nodes_text(struct buf *b, const struct output_status *st)
{
	const struct output_server	*sv;
	int				 i;

	for (i = 0; i < st->nservers; i++) {
		sv = &st->servers[i];
		buf_adds(b, "  ");
		escape_adds(b, sv->url);
		buf_printf(b, ": %s", node_state[sv->state]);
		if (sv->error != NULL && *sv->error != '\0') {
			buf_adds(b, " (");
			escape_adds(b, sv->error);
			buf_adds(b, ")");
		}
		buf_adds(b, "\n");
	}
}

/* Quorum mode: "servers":[{"url":…,"state":…,"error":…},…]. */
static void
nodes_json(struct json *j, const struct output_status *st)
{
	const struct output_server	*sv;
	int				 i;

	if (st->nservers == 0)
		return;
	json_key(j, "servers");
	json_array_begin(j);
	for (i = 0; i < st->nservers; i++) {
		sv = &st->servers[i];
		json_object_begin(j);
		json_key(j, "url");
		json_str(j, sv->url);
		json_key(j, "state");
		json_str(j, node_state_json[sv->state]);
		if (sv->error != NULL && *sv->error != '\0') {
			json_key(j, "error");
			json_str(j, sv->error);
		}
		json_object_end(j);
	}
	json_array_end(j);
}

/* "  waiting [#PLACE]: USER@HOST pid PID (COMMAND) for 3.2s", one a line. */
static void
waiters_text(struct buf *b, const struct output_status *st)
{
	const struct output_waiter	*w;
	char				 d[32];
	int				 i;

	for (i = 0; i < st->nwaiters; i++) {
		w = &st->waiters[i];
		buf_adds(b, "  waiting");
		if (w->place > 0)
			buf_printf(b, " #%lld", w->place);
		buf_adds(b, ": ");
		who_text(b, w->user, w->host, w->pid, w->command);
		buf_printf(b, " for %s\n", duration_format(w->waiting_ms, d,
		    sizeof d));
	}
}

/* "waiters":[{"host":…,"pid":…,"user":…,"command":…,"waiting_ms":…},…] */
static void
waiters_json(struct json *j, const struct output_status *st)
{
	const struct output_waiter	*w;
	int				 i;

	/* Like "servers": only when there is something to say. */
	if (st->nwaiters == 0)
		return;
	json_key(j, "waiters");
	json_array_begin(j);
	for (i = 0; i < st->nwaiters; i++) {
		w = &st->waiters[i];
		json_object_begin(j);
		json_key(j, "host");
		str_or_null(j, w->host);
		json_key(j, "pid");
		json_int(j, w->pid);
		json_key(j, "user");
		str_or_null(j, w->user);
		json_key(j, "command");
		str_or_null(j, w->command);
		json_key(j, "waiting_ms");
		json_int(j, w->waiting_ms);
		if (w->place > 0) {
			json_key(j, "place");
			json_int(j, w->place);
		}
		json_object_end(j);
	}
	json_array_end(j);
}

/* "  held by USER@HOST pid PID (COMMAND) for 3.2s, expires in 26.8s, fence 7" */
static void
holder_text(struct buf *b, const char *user, const char *host, long long pid,
    const char *command, long long acquired_ms, long long held_ms,
    long long expires_in_ms, long long fence)
{
	char	held[32], left[32];

	buf_adds(b, "held by ");
	who_text(b, user, host, pid, command);
	if (acquired_ms > 0)
		buf_printf(b, " for %s", duration_format(held_ms, held,
		    sizeof held));
	if (expires_in_ms >= 0)
		buf_printf(b, ", expires in %s",
		    duration_format(expires_in_ms, left, sizeof left));
	else
		buf_adds(b, ", never expires");
	buf_printf(b, ", fence %lld", fence);
}

/*
 * The exit status in a run's outcome ("exit:N"), or -1 (running, lost,
 * signalled, or stopped at --max-runtime).
 */
static long long
exit_status_of(const char *outcome)
{
	char	*end;
	long	 v;

	if (outcome == NULL || strncmp(outcome, "exit:", 5) != 0)
		return -1;
	v = strtol(outcome + 5, &end, 10);
	return *end == '\0' && end != outcome + 5 && v >= 0 && v <= 255 ?
	    v : -1;
}

/*
 * The rest of a schedule's line: failures in a row and the last success,
 * a pause (by whom, until when), "; overdue"; and the newline.
 */
static void
schedule_record_text(struct buf *b, const struct output_status *st)
{
	char	ago[32];

	if (st->failures > 0) {
		buf_printf(b, "; %lld failed in a row, ", st->failures);
		if (st->last_success_ms > 0)
			buf_printf(b, "last success %s ago",
			    duration_format(st->now_ms - st->last_success_ms > 0 ?
			    st->now_ms - st->last_success_ms : 0, ago,
			    sizeof ago));
		else
			buf_adds(b, "no success yet");
	}
	/* --cron: when the next is due (--every's is a period on). */
	if (st->cron != NULL && *st->cron != '\0' && st->next_due_ms > 0) {
		if (st->next_due_ms >= st->now_ms)
			buf_printf(b, "; next due in %s", duration_format(
			    st->next_due_ms - st->now_ms, ago, sizeof ago));
		else
			buf_printf(b, "; next was due %s ago", duration_format(
			    st->now_ms - st->next_due_ms, ago, sizeof ago));
	}
	if (st->paused) {
		buf_adds(b, "; paused by ");
		escape_adds(b, or_unknown(st->paused_by));
		if (st->paused_until_ms > 0)
			buf_printf(b, " for %s more", duration_format(
			    st->paused_until_ms - st->now_ms > 0 ?
			    st->paused_until_ms - st->now_ms : 0, ago,
			    sizeof ago));
		else
			buf_adds(b, " until resumed");
	}
	buf_adds(b, st->overdue ? "; overdue\n" : "\n");
}

/*
 * A name run with --every: "  every 1h: started 5m ago on HOST pid PID,
 * exit 0", and "; overdue" when nothing has started it for more than one
 * and a half periods.
 */
static void
schedule_text(struct buf *b, const struct output_status *st)
{
	char	p[32], ago[32];

	if (st->every_ms <= 0)
		return;
	if (st->cron != NULL && *st->cron != '\0') {
		buf_adds(b, "  cron '");
		escape_adds(b, st->cron);
		buf_adds(b, "'");
		if (st->cron_tz != NULL && *st->cron_tz != '\0') {
			buf_adds(b, " ");
			escape_adds(b, st->cron_tz);
		}
	} else
		buf_printf(b, "  every %s", duration_format(st->every_ms, p,
		    sizeof p));
	if (st->last_start_ms <= 0) {
		buf_printf(b, ": declared %s ago, never started",
		    duration_format(st->now_ms - st->declared_ms > 0 ?
		    st->now_ms - st->declared_ms : 0, ago, sizeof ago));
		schedule_record_text(b, st);
		return;
	}
	buf_printf(b, ": started %s ago on ",
	    duration_format(st->last_start_ago_ms > 0 ? st->last_start_ago_ms :
	    0, ago, sizeof ago));
	escape_adds(b, or_unknown(st->last_host));
	buf_printf(b, " pid %lld, ", st->last_pid);
	if (st->last_outcome == NULL || *st->last_outcome == '\0')
		buf_adds(b, "running");
	else if (strcmp(st->last_outcome, "ended-without-release") == 0)
		buf_adds(b, "ended without a release");
	else if (exit_status_of(st->last_outcome) >= 0)
		buf_printf(b, "exit %lld", exit_status_of(st->last_outcome));
	else
		escape_adds(b, st->last_outcome);
	schedule_record_text(b, st);
}

/* The same as JSON fields (see the schema). */
static void
schedule_json(struct json *j, const struct output_status *st)
{
	long long	x;

	if (st->every_ms <= 0)
		return;
	json_key(j, "every_ms");
	json_int(j, st->every_ms);
	json_key(j, "last_start_ms");
	json_int(j, st->last_start_ms);
	json_key(j, "last_start_host");
	str_or_null(j, st->last_host);
	json_key(j, "last_start_pid");
	json_int(j, st->last_pid);
	json_key(j, "last_outcome");
	json_str(j, st->last_outcome == NULL || *st->last_outcome == '\0' ?
	    "running" : st->last_outcome);
	json_key(j, "last_exit_status");
	if ((x = exit_status_of(st->last_outcome)) >= 0)
		json_int(j, x);
	else
		json_null(j);
	json_key(j, "overdue");
	json_bool(j, st->overdue);
	json_key(j, "grace_ms");
	json_int(j, st->grace_ms > 0 ? st->grace_ms : 1);
	json_key(j, "next_due_ms");
	int_or_null(j, st->next_due_ms);
	json_key(j, "declared_ms");
	int_or_null(j, st->declared_ms);
	json_key(j, "last_success_ms");
	int_or_null(j, st->last_success_ms);
	json_key(j, "failures");
	json_int(j, st->failures);
	json_key(j, "failing");
	json_bool(j, st->failing);
	json_key(j, "paused");
	json_bool(j, st->paused);
	json_key(j, "paused_by");
	str_or_null(j, st->paused ? st->paused_by : NULL);
	json_key(j, "paused_until_ms");
	int_or_null(j, st->paused && st->paused_until_ms > 0 ?
	    st->paused_until_ms : 0);
	json_key(j, "cron");
	str_or_null(j, st->cron);
	json_key(j, "cron_tz");
	str_or_null(j, st->cron_tz);
}

/* A time, or null for 0 (none). */
static void
int_or_null(struct json *j, long long v)
{
	if (v > 0)
		json_int(j, v);
	else
		json_null(j);
}

/*
 * A semaphore: "NAME: 2 of 3 held", a shared lock: "NAME: shared by 2"
 * (and its servers in quorum mode); then a line per holder.
 */
static void
slots_text(struct buf *b, const struct output_status *st)
{
	const struct output_slot	*s;
	int				 i;

	escape_adds(b, st->name);
	if (st->shared) {
		buf_printf(b, ": shared by %d", st->nslots);
		if (st->nservers > 0)
			buf_printf(b, " (on %d of %d servers)", st->nholding,
			    st->nservers);
		buf_adds(b, "\n");
	} else
		buf_printf(b, ": %d of %d held\n", st->nslots, st->limit);
	schedule_text(b, st);
	for (i = 0; i < st->nslots; i++) {
		s = &st->slots[i];
		buf_adds(b, "  ");
		holder_text(b, s->user, s->host, s->pid, s->command,
		    s->acquired_ms, s->held_ms, s->expires_in_ms, s->fence);
		buf_adds(b, "\n");
	}
	nodes_text(b, st);
	waiters_text(b, st);
}

void
output_status_text(struct buf *b, const struct output_status *st)
{
	if (st->limit > 1 || st->shared) {
		slots_text(b, st);
		return;
	}

	escape_adds(b, st->name);
	buf_adds(b, ": ");
	if (!st->held) {
		buf_adds(b, "free");
		if (st->last_fence > 0)
			buf_printf(b, ", last fence %lld", st->last_fence);
		buf_adds(b, "\n");
		schedule_text(b, st);
		nodes_text(b, st);
		waiters_text(b, st);
		return;
	}
	holder_text(b, st->user, st->host, st->pid, st->command,
	    st->acquired_ms, st->held_ms, st->expires_in_ms, st->fence);
	if (st->nservers > 0)
		buf_printf(b, " (on %d of %d servers)", st->nholding,
		    st->nservers);
	if (st->replace_host != NULL) {
		buf_adds(b, ", being replaced by ");
		escape_adds(b, st->replace_host);
		buf_printf(b, " pid %lld", st->replace_pid);
	}
	buf_adds(b, "\n");
	schedule_text(b, st);
	nodes_text(b, st);
	waiters_text(b, st);
}

/*
 * A semaphore: "limit":N, a shared lock: "shared":true; then
 * "holders":[{…},…] and the last fence.
 */
static void
slots_json(struct json *j, const struct output_status *st)
{
	const struct output_slot	*s;
	int				 i;

	if (st->shared) {
		json_key(j, "shared");
		json_bool(j, 1);
	} else {
		json_key(j, "limit");
		json_int(j, st->limit);
	}
	json_key(j, "holders");
	json_array_begin(j);
	for (i = 0; i < st->nslots; i++) {
		s = &st->slots[i];
		json_object_begin(j);
		json_key(j, "host");
		str_or_null(j, s->host);
		json_key(j, "pid");
		json_int(j, s->pid);
		json_key(j, "user");
		str_or_null(j, s->user);
		json_key(j, "command");
		str_or_null(j, s->command);
		json_key(j, "acquired_ms");
		json_int(j, s->acquired_ms);
		json_key(j, "held_ms");
		json_int(j, s->held_ms);
		json_key(j, "expires_in_ms");
		json_int(j, s->expires_in_ms);
		json_key(j, "ttl_ms");
		json_int(j, s->ttl_ms);
		json_key(j, "fence");
		json_int(j, s->fence);
		json_object_end(j);
	}
	json_array_end(j);
	json_key(j, "fence");
	json_int(j, st->last_fence);
	schedule_json(j, st);
	nodes_json(j, st);
	waiters_json(j, st);
	json_object_end(j);
}

void
output_status_json(struct json *j, const struct output_status *st)
{
	json_object_begin(j);
	json_key(j, "name");
	json_str(j, st->name);
	json_key(j, "held");
	json_bool(j, st->held);
	if (st->limit > 1 || st->shared) {
		slots_json(j, st);
		return;
	}
	if (!st->held) {
		json_key(j, "fence");
		json_int(j, st->last_fence);
		schedule_json(j, st);
		nodes_json(j, st);
		waiters_json(j, st);
		json_object_end(j);
		return;
	}
	json_key(j, "host");
	str_or_null(j, st->host);
	json_key(j, "pid");
	json_int(j, st->pid);
	json_key(j, "user");
	str_or_null(j, st->user);
	json_key(j, "command");
	str_or_null(j, st->command);
	json_key(j, "acquired_ms");
	json_int(j, st->acquired_ms);
	json_key(j, "held_ms");
	json_int(j, st->held_ms);
	json_key(j, "expires_in_ms");
	json_int(j, st->expires_in_ms);
	json_key(j, "ttl_ms");
	json_int(j, st->ttl_ms);
	json_key(j, "fence");
	json_int(j, st->fence);
	if (st->replace_host != NULL) {
		json_key(j, "replaced_by");
		json_object_begin(j);
		json_key(j, "host");
		json_str(j, st->replace_host);
		json_key(j, "pid");
		json_int(j, st->replace_pid);
		json_object_end(j);
	}
	schedule_json(j, st);
	nodes_json(j, st);
	waiters_json(j, st);
	json_object_end(j);
}

void
output_acquire_json(struct buf *b, const char *name, const char *token,
    long long fence, long long ttl_ms)
{
	struct json	j;

	json_open(&j, b, 0);
	json_object_begin(&j);
	json_key(&j, "name");
	json_str(&j, name);
	json_key(&j, "token");
	json_str(&j, token);
	json_key(&j, "fence");
	json_int(&j, fence);
	json_key(&j, "ttl_ms");
	json_int(&j, ttl_ms);
	json_object_end(&j);
	buf_adds(b, "\n");
}

int
output_flush(struct buf *b)
{
	size_t	n;

	n = fwrite(b->p, 1, b->len, stdout);
	if (fflush(stdout) != 0 || n != b->len || ferror(stdout)) {
		if (errno == 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------- the waiting line */

/*
 * While acquire waits at a terminal: one status line on stderr, rewritten
 * in place, and cleared when the wait ends.  There is one stderr, so one
 * flag says whether a row of it needs taking back.
 */
static int	wait_shown;

void
output_wait_show(const struct output_wait *w)
{
	char		held[32], exp[32], waited[32], left[32];
	struct buf	b;
	size_t		n;

	buf_init(&b);
	buf_adds(&b, "rlock: waiting for ");
	escape_adds(&b, w->name);
	buf_adds(&b, ": held by ");
	escape_adds(&b, w->host[0] != '\0' ? w->host : "?");
	buf_printf(&b, " pid %lld", w->pid);
	if (w->command[0] != '\0') {
		/* 40 bytes of it, not cut inside a UTF-8 sequence. */
		if ((n = strlen(w->command)) > 40)
			for (n = 40; n > 0 &&
			    ((unsigned char)w->command[n] & 0xc0) == 0x80; n--)
				;
		buf_adds(&b, " (");
		escape_add(&b, w->command, n);
		buf_adds(&b, ")");
	}
	if (w->held_ms >= 0)
		buf_printf(&b, " for %s", duration_format(w->held_ms, held,
		    sizeof held));
	if (w->expires_ms >= 0)
		buf_printf(&b, ", expires in %s", duration_format(
		    w->expires_ms, exp, sizeof exp));
	buf_printf(&b, "; waited %s", duration_format(w->waited_ms, waited,
	    sizeof waited));
	if (w->left_ms >= 0)
		buf_printf(&b, ", %s left", duration_format(w->left_ms, left,
		    sizeof left));
	/*
	 * One screen row at most: "\r\033[K" can only take back the row the
	 * cursor is on, so a wrapped line would leave its first rows behind.
	 */
	if (b.len > w->width - 1) {
		b.len = w->width - 1;
		/* Do not cut a UTF-8 sequence in half. */
		while (b.len > 0 && ((unsigned char)b.p[b.len] & 0xc0) == 0x80)
			b.len--;
		b.p[b.len] = '\0';
	}
	fprintf(stderr, "\r\033[K%s", b.p);
	fflush(stderr);
	buf_free(&b);
	wait_shown = 1;
}

void
output_wait_done(void)
{
	if (wait_shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		wait_shown = 0;
	}
}
