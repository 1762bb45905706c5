/* metrics.c: status --format openmetrics (Prometheus' text format). */

/*
 * One family after another (OpenMetrics wants a family's samples
 * together), a sample per lock, each labelled name="NAME"; the values
 * from the lock's status and from its history (see rlock-protocol(7),
 * History).
 * node_exporter's textfile collector reads it as the Prometheus text
 * format, where the closing "# EOF" is a comment.
 */

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"	/* cmd_overdue */
#include "metrics.h"
#include "util.h"

/* A family: its name, help, and how to get a lock's value (0: none). */
struct family {
	const char	*name;
	const char	*help;
	int		(*value)(const struct metrics_lock *, double *);
};

/* The newest completed run: released with exec's outcome, or lost. */
static const struct hist_event *
last_run(const struct metrics_lock *m)
{
	const char	*e, *x;
	size_t		 i;

	for (i = 0; i < m->nev; i++) {
		e = m->ev[i].v[HF_EVENT];
		x = m->ev[i].v[HF_OUTCOME];
		if (x == NULL || (strcmp(e, "released") != 0 &&
		    strcmp(e, "lost") != 0))
			continue;
		if (strncmp(x, "exit:", 5) == 0 || strncmp(x, "signal:", 7) == 0 ||
		    strcmp(x, "max-runtime") == 0)
			return &m->ev[i];
	}
	return NULL;
}

static int
v_held(const struct metrics_lock *m, double *v)
{
	*v = m->st->held;
	return 1;
}

static int
v_holders(const struct metrics_lock *m, double *v)
{
	*v = m->st->nslots > 0 ? m->st->nslots : m->st->held;
	return 1;
}

static int
v_waiters(const struct metrics_lock *m, double *v)
{
	*v = m->st->nwaiters;
	return 1;
}

/* 1 while a newcomer's exec --replace has asked the holder to stop. */
static int
v_replace_requested(const struct metrics_lock *m, double *v)
{
	*v = m->st->held && m->st->replace_host != NULL;
	return 1;
}

static int
v_held_seconds(const struct metrics_lock *m, double *v)
{
	long long	since = m->st->acquired_ms;
	int		i;

	/* Several holders: the longest. */
	for (i = 0; i < m->st->nslots; i++)
		if (since == 0 || (m->st->slots[i].acquired_ms > 0 &&
		    m->st->slots[i].acquired_ms < since))
			since = m->st->slots[i].acquired_ms;
	*v = m->st->held && since > 0 ? (m->st->now_ms - since) / 1000.0 : 0;
	return 1;
}

static int
v_fence(const struct metrics_lock *m, double *v)
{
	*v = (double)(m->st->fence > m->st->last_fence ? m->st->fence :
	    m->st->last_fence);
	return 1;
}

static int
v_last_time(const struct metrics_lock *m, double *v)
{
	const struct hist_event	*r = last_run(m);

	if (r == NULL)
		return 0;
	*v = r->time_ms / 1000.0;
	return 1;
}

/* The status rlock exec exited with: N, 128+S, 124, or 75 when lost. */
static int
v_last_status(const struct metrics_lock *m, double *v)
{
	const struct hist_event	*r = last_run(m);
	const char		*x, *abbrev;
	int			 s;

	if (r == NULL)
		return 0;
	x = r->v[HF_OUTCOME];
	if (strcmp(r->v[HF_EVENT], "lost") == 0)
		*v = 75;
	else if (strncmp(x, "exit:", 5) == 0)
		*v = atoi(x + 5);
	else if (strcmp(x, "max-runtime") == 0)
		*v = 124;
	else if (strcmp(x, "replaced") == 0)
		*v = 37;
	else {
		*v = 128;
		for (s = 1; s < NSIG; s++)
			if ((abbrev = sigabbrev_np(s)) != NULL &&
			    strcmp(abbrev, x + 7) == 0) {
				*v = 128 + s;
				break;
			}
	}
	return 1;
}

static int
v_last_duration(const struct metrics_lock *m, double *v)
{
	const struct hist_event	*r = last_run(m);

	if (r == NULL || r->v[HF_HELD] == NULL || *r->v[HF_HELD] == '\0')
		return 0;
	*v = strtoll(r->v[HF_HELD], NULL, 10) / 1000.0;
	return 1;
}

static int
v_lost(const struct metrics_lock *m, double *v)
{
	size_t	i;

	*v = 0;
	for (i = 0; i < m->nev; i++)
		*v += strcmp(m->ev[i].v[HF_EVENT], "lost") == 0;
	return 1;
}

/* exec --every: the name's period, its last start, whether it is overdue. */
static int
v_every(const struct metrics_lock *m, double *v)
{
	*v = m->st->every_ms / 1000.0;
	return m->st->every_ms > 0;
}

static int
v_last_start(const struct metrics_lock *m, double *v)
{
	*v = m->st->last_start_ms / 1000.0;
	return m->st->every_ms > 0;
}

static int
v_overdue(const struct metrics_lock *m, double *v)
{
	*v = cmd_overdue(m->st);
	return m->st->every_ms > 0;
}

/* Its runs' record and its pause (rlock schedule). */
static int
v_failures(const struct metrics_lock *m, double *v)
{
	*v = (double)m->st->failures;
	return m->st->every_ms > 0;
}

static int
v_last_success(const struct metrics_lock *m, double *v)
{
	*v = m->st->last_success_ms / 1000.0;
	return m->st->every_ms > 0 && m->st->last_success_ms > 0;
}

static int
v_failing(const struct metrics_lock *m, double *v)
{
	*v = cmd_failing(m->st);
	return m->st->every_ms > 0;
}

static int
v_paused(const struct metrics_lock *m, double *v)
{
	*v = cmd_paused(m->st);
	return m->st->every_ms > 0;
}

static const struct family families[] = {
	{ "rlock_held", "Whether the lock is held (1) or free (0).",
	  v_held },
	{ "rlock_holders", "How many hold it (semaphores and shared locks "
	  "may have several).", v_holders },
	{ "rlock_waiters", "How many wait for it.", v_waiters },
	{ "rlock_replace_requested", "1 while a newcomer (exec --replace) "
	  "has asked the holder to stop.", v_replace_requested },
	{ "rlock_held_seconds", "How long it has been held (the longest "
	  "holder); 0 when free.", v_held_seconds },
	{ "rlock_fence", "The newest fencing token handed out.", v_fence },
	{ "rlock_last_run_end_timestamp_seconds", "When the newest run of a "
	  "command under rlock exec ended (from the history).", v_last_time },
	{ "rlock_last_run_exit_status", "The exit status of rlock exec for "
	  "that run: the command's, 128+N for signal N, 124 at --max-runtime, "
	  "75 when the lock was lost.", v_last_status },
	{ "rlock_last_run_duration_seconds", "How long that run held the "
	  "lock.", v_last_duration },
	{ "rlock_lost_events", "Losses among the events the history keeps.",
	  v_lost },
	{ "rlock_every_seconds", "The period of a name run with rlock exec "
	  "--every.", v_every },
	{ "rlock_last_start_timestamp_seconds", "When its last start was "
	  "(the server's clock).", v_last_start },
	{ "rlock_overdue", "Whether a slot's time and its grace passed with "
	  "no start, and it is not paused (1) or not (0).", v_overdue },
	{ "rlock_schedule_failures", "Its failed runs in a row (0 after a "
	  "success).", v_failures },
	{ "rlock_last_success_timestamp_seconds", "When its last successful "
	  "run ended (the server's clock).", v_last_success },
	{ "rlock_failing", "Whether its last run failed, and it is not paused "
	  "(1) or not (0).", v_failing },
	{ "rlock_paused", "Whether rlock schedule pause stops its starts (1) "
	  "or not (0).", v_paused },
};

/*
 * A label value: backslash, double quote and newline escaped, as the
 * format wants, and nothing it cannot hold.  Names are checked before they
 * get here (lock_list leaves out any other), so the rest is a guard: a
 * control character or a byte that is not UTF-8 would make the parser
 * reject the whole scrape, and becomes U+FFFD.
 */
static void
label(struct buf *b, const char *s)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 len = strlen(s), i, n;
	uint32_t		 cp;

	for (i = 0; i < len; i += n) {
		n = 1;
		if (u[i] == '\\' || u[i] == '"')
			buf_printf(b, "\\%c", u[i]);
		else if (u[i] == '\n')
			buf_adds(b, "\\n");
		else if (u[i] < 0x20 || u[i] == 0x7f)
			buf_adds(b, "\xef\xbf\xbd");
		else if (u[i] < 0x80)
			buf_add(b, s + i, 1);
		else if ((n = utf8_decode(u + i, len - i, &cp)) > 0)
			buf_add(b, s + i, n);
		else {
			buf_adds(b, "\xef\xbf\xbd");
			n = 1;
		}
	}
}

void
metrics_write(struct buf *b, const struct metrics_lock *m, size_t n)
{
	const struct family	*f;
	double			 v;
	size_t			 i, k;

	for (k = 0; k < sizeof families / sizeof families[0]; k++) {
		f = &families[k];
		buf_printf(b, "# TYPE %s gauge\n# HELP %s %s\n", f->name,
		    f->name, f->help);
		for (i = 0; i < n; i++) {
			if (!f->value(&m[i], &v))
				continue;
			buf_printf(b, "%s{name=\"", f->name);
			label(b, m[i].st->name);
			/* Fences are above 2^50: whole numbers as such. */
			if (v == (double)(long long)v)
				buf_printf(b, "\"} %lld\n", (long long)v);
			else
				buf_printf(b, "\"} %.3f\n", v);
		}
	}
	buf_adds(b, "# EOF\n");
}
