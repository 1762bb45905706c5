/* cmd-exec.c: rlock exec NAME CMD...: run a command while holding the lock. */

/*
 * The order matters, and is the whole point of this command:
 *  1. acquire (signals still interrupt the wait, and a lock taken by an
 *     interrupted run is given back);
 *  2. block the signals the supervisor waits for, so none is lost and no
 *     thread but the supervisor ever sees one;
 *  3. fork and exec the command (its environment prepared beforehand:
 *     the lock's name, key, token and fence, and no password);
 *  4. start the heartbeat thread on its own connection;
 *  5. wait, forwarding signals, and signal the command if the lock is lost;
 *  6. stop the heartbeat, then release (or, with --min-hold, leave the lock
 *     to expire when the minimum is up), and exit with the command's status.
 */

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "deploy.h"
#include "duration.h"
#include "heartbeat.h"
#include "log.h"
#include "output.h"
#include "schedule.h"
#include "settings.h"
#include "supervise.h"
#include "signals.h"
#include "url.h"
#include "util.h"

/* How much of the command line is stored with the lock for status. */
#define COMMAND_SHOWN_MAX	200

static int	cmd_exec_exec(struct cmd_ctx *);

const struct cmd_entry cmd_exec_entry = {
	.name = "exec",
	.args = "NAME [--] COMMAND [ARG...]",
	.summary = "Run COMMAND (or -c STRING) holding the lock",
	.options = OPT(TTL) | OPT(WAIT) | OPT(NO_WAIT) |
	    OPT(CONFLICT_EXIT_CODE) | OPT(TOKEN) | OPT(HEARTBEAT) |
	    OPT(ON_LOST) | OPT(KILL_AFTER) | OPT(FOREGROUND) | OPT(COMMAND) |
	    OPT(MIN_HOLD) | OPT(LEFTOVERS) |
	    OPT(WAIT_REPLICAS) | OPT(FIFO) | OPT(LIMIT) | OPT(MAX_RUNTIME) |
	    OPT(SHARED) | OPT(RECORD) | OPT(LABEL) | OPT(EVERY) |
	    OPT(RETRY_FAILED) | OPT(SPLAY) | OPT(CRON) | OPT(CRON_TZ) |
	    OPT(PENDING) | OPT(REPLACE) | OPT(NO_REPLACE) | OPTS_HISTORY,
	.min_args = 1,
	.max_args = 1,
	.child_after = 1,
	.exec = cmd_exec_exec,
};

/* s cut to COMMAND_SHOWN_MAX bytes, "..." marking the cut. */
static char *
cut_short(char *s)
{
	struct buf	b;

	b.p = s;
	b.len = strlen(s);
	b.cap = b.len + 1;
	if (b.len > COMMAND_SHOWN_MAX) {
		b.len = COMMAND_SHOWN_MAX - 3;
		/* Do not cut a UTF-8 sequence in half. */
		while (b.len > 0 && ((unsigned char)b.p[b.len] & 0xc0) == 0x80)
			b.len--;
		b.p[b.len] = '\0';
		buf_adds(&b, "...");
	}
	return b.p;
}

/* A shell's VAR=value word, which may hold a secret (PGPASSWORD=...). */
static int
is_assignment(const char *w, size_t len)
{
	size_t	i;

	if (len == 0 || !(isalpha((unsigned char)w[0]) || w[0] == '_'))
		return 0;
	for (i = 1; i < len && (isalnum((unsigned char)w[i]) || w[i] == '_');
	    i++)
		;
	return i < len && w[i] == '=';
}

/*
 * What the lock and its history keep of the command, for everyone who can
 * read the server, for as long as the history lasts (30 days by default).
 * Arguments often carry secrets (a database URL, -pPASSWORD, a token), so
 * by default only the first word is kept: the program, which is what an
 * operator asks "who holds this?" about, with the host and pid to find the
 * rest with ps on that host.  For -c it is the shell command's first word
 * past any VAR=value.  --record full keeps every word (cut to 200 bytes),
 * and --label a text of the user's instead.  A URL's password is masked
 * in whatever is kept.
 */
static char *
command_record(const struct opts *o, char *const *argv)
{
	struct buf	 b;
	const char	*w;
	char		*masked;
	size_t		 i, len;

	buf_init(&b);
	if (o->label != NULL)
		buf_adds(&b, o->label);
	else if (o->record == RECORD_FULL) {
		for (i = 0; argv[i] != NULL && b.len <= 4 * COMMAND_SHOWN_MAX;
		    i++) {
			if (i > 0)
				buf_adds(&b, " ");
			buf_adds(&b, argv[i]);
		}
	} else if (o->record == RECORD_NAME && o->command != NULL) {
		for (w = o->command;; w += len) {
			w += strspn(w, " \t\n");
			len = strcspn(w, " \t\n");
			if (!is_assignment(w, len))
				break;
		}
		buf_add(&b, w, len);
	} else if (o->record == RECORD_NAME)
		buf_adds(&b, argv[0]);
	masked = url_mask_dup(b.p);
	buf_free(&b);
	return cut_short(masked);
}

static int
is_secret(const char *entry)
{
	return strncmp(entry, "RLOCK_PASSWORD=", 15) == 0 ||
	    strncmp(entry, "RLOCK_SENTINEL_PASSWORD=", 24) == 0 ||
	    strncmp(entry, "REDISCLI_AUTH=", 14) == 0 ||
	    strncmp(entry, "RLOCK_URL=", 10) == 0 ||
	    strncmp(entry, "RLOCK_NAME=", 11) == 0 ||
	    strncmp(entry, "RLOCK_KEY=", 10) == 0 ||
	    strncmp(entry, "RLOCK_TOKEN=", 12) == 0 ||
	    strncmp(entry, "RLOCK_FENCE=", 12) == 0;
}

/*
 * "RLOCK_URL=..." for the child: each URL of the list as its display form,
 * which never holds the password; one that does not parse is left out.
 */
static char *
url_without_passwords(const char *list)
{
	struct buf	 b;
	struct url	 u;
	char		*copy = xstrdup(list), *word, *save = NULL;

	buf_init(&b);
	buf_adds(&b, "RLOCK_URL=");
	for (word = strtok_r(copy, " \t\n", &save); word != NULL;
	    word = strtok_r(NULL, " \t\n", &save)) {
		if (url_parse(word, &u, NULL, 0) == -1)
			continue;
		buf_printf(&b, "%s%s", b.p[b.len - 1] == '=' ? "" : " ",
		    u.display);
		url_free(&u);
	}
	free(copy);
	return b.p;
}

/*
 * The child's environment: ours, without any password, plus the lock's
 * name, key, token and fence.  RLOCK_URL is passed on with its password
 * removed, so a child that runs rlock itself still finds the server.
 */
static char **
child_env(const struct lock *l)
{
	extern char	**environ;
	const char	 *url = getenv("RLOCK_URL");
	char		**env, **p;
	size_t		  n = 0, k = 0;

	for (p = environ; *p != NULL; p++)
		n++;
	env = xcalloc(n + 6, sizeof *env);
	for (p = environ; *p != NULL; p++)
		if (!is_secret(*p))
			env[k++] = xstrdup(*p);
	if (url != NULL)
		env[k++] = url_without_passwords(url);
	xasprintf(&env[k++], "RLOCK_NAME=%s", l->name);
	xasprintf(&env[k++], "RLOCK_KEY=%s", l->key);
	xasprintf(&env[k++], "RLOCK_TOKEN=%s", l->token);
	xasprintf(&env[k++], "RLOCK_FENCE=%lld", l->fence);
	return env;
}

static void
free_env(char **env)
{
	char	**p;

	if (env == NULL)
		return;
	for (p = env; *p != NULL; p++)
		free(*p);
	free(env);
}

/*
 * A loss found after the command ended: one line, and 75 -- unless the
 * command failed, whose own status says more (the line still tells).
 */
static int
lost_after(const struct lock *l, const char *how, int status)
{
	char	when[64];

	log_error("lock '%s' was lost before %s (found at %s): its key was "
	    "gone or held another token%s", l->name, how,
	    format_time(now_wall_ms(), when, sizeof when),
	    status != 0 ? "; exiting with the command's status" : "");
	return status != 0 ? status : EXIT_LOST;
}

/*
 * The command ended before --min-hold was up: leave the lock to expire
 * when it is, instead of releasing it now.
 */
static int
hold_on(struct cmd_ctx *ctx, struct lock *l, int64_t left, int status,
    int over_in_time)
{
	int64_t	sent = now_mono_ms();
	char	d[32];

	switch (lock_extend(l, left, &ctx->err)) {
	case 1:
		log_verbose("%s: leaving the lock to expire in %s (--min-hold)",
		    l->name, duration_format(left, d, sizeof d));
		return status;
	case 0:
		/* Gone after the validity, the command over before: expired. */
		if (over_in_time && sent >= l->valid_until)
			return status;
		return lost_after(l, "the --min-hold hand-off", status);
	}
	log_warn("%s: cannot leave the lock to expire: %s", l->name,
	    ctx->err.msg);
	return status;
}

/*
 * How soon after taking the lock a run that did not wait may end before
 * another machine's cron, firing the same minute a little later, is
 * likely to find the lock free and run the command a second time: the
 * clock skew of a fleet kept by NTP plus cron's own start-up delay, with
 * a wide margin.
 */
#define SKEW_ALLOWANCE_MS	5000

/*
 * `exec -n` in a crontab on many machines is the first thing rlock is
 * for, and without --every (or --min-hold) a short job runs once per
 * machine whose cron fires after it ended.  Say so, where cron mails it,
 * unless the user chose: --min-hold 0 keeps the quick release and
 * silences this.
 */
static void
warn_quick_release(const struct cmd_ctx *ctx, const struct lock *l,
    int64_t held_ms)
{
	char	d[32];

	if (ctx->o.wait_ms != 0 || ctx->o.limit > 1 || ctx->o.shared ||
	    ctx->o.every_ms > 0 ||
	    ((ctx->o.given | ctx->o.from_file) & OPT(MIN_HOLD)) ||
	    held_ms >= SKEW_ALLOWANCE_MS)
		return;
	log_warn("%s: the command ended %s after taking the lock; with -n, a "
	    "machine whose cron fires a moment later can take it and run the "
	    "command again: add --every with the crontab's period (see --every "
	    "in rlock(1)), or --min-hold 30s, or --min-hold 0 to keep the quick "
	    "release", l->name, duration_format(held_ms, d, sizeof d));
}

/* How the command ended, for the history: "exit:N", "signal:NAME"... */
static const char *
outcome(const struct supervise *sv, int status, char *buf, size_t len)
{
	const char	*abbrev;

	if (sv->replaced)
		return "replaced";
	if (sv->timed_out)
		return "max-runtime";
	if (sv->signaled && (abbrev = sigabbrev_np(sv->signaled)) != NULL)
		snprintf(buf, len, "signal:%s", abbrev);
	else if (sv->signaled)
		snprintf(buf, len, "signal:%d", sv->signaled);
	else
		snprintf(buf, len, "exit:%d", status);
	return buf;
}

/* release_end: the lock expired after the command ended in time. */
#define RELEASE_EXPIRED	2

/*
 * Release at the end, settled if its reply is lost (lock.c says how):
 * 1 released, 0 found gone or another's (a loss), -1 not known,
 * RELEASE_EXPIRED.  over_in_time: the command was over while the lock was
 * surely ours (supervise.h).
 */
static int
release_end(struct cmd_ctx *ctx, struct lock *l, const char *outcome,
    int over_in_time)
{
	int64_t	sent = now_mono_ms();
	int	rc;

	if (over_in_time && sent >= l->valid_until) {
		/*
		 * rlock was stopped past the validity after the command
		 * ended: the key may have expired by now, with nobody
		 * under it.  Such a release is as unknown as one whose
		 * reply was lost, and settled the same way: asked first,
		 * and sent (as a settling release, which records no loss)
		 * only where the token still holds the lock.  Not held any
		 * more, it expired: the command's run still ended under it.
		 */
		err_set(&ctx->err, ERR_TIMEOUT, "the release comes after the "
		    "lock's validity");
		rc = lock_settle_release(l, outcome, 0, &ctx->err);
		return rc == LOCK_SETTLED ? RELEASE_EXPIRED : rc;
	}
	if ((rc = lock_release(l, outcome, &ctx->err)) != -1)
		return rc;
	if ((rc = lock_settle_release(l, outcome, 0, &ctx->err)) !=
	    LOCK_SETTLED)
		return rc;
	/*
	 * No longer the token's after a release that was sent.  Sent while
	 * the lock was surely ours (valid_until, as the heartbeat last
	 * confirmed it), it ended a section the lock guarded to its end:
	 * whatever removed the key since, that release or the TTL, it is
	 * released.  Sent after, the key may have gone before the command
	 * ended: a loss, as when the first answer says so.
	 */
	return sent < l->valid_until;
}

static int
finish(struct cmd_ctx *ctx, struct lock *l, struct supervise *sv, int status)
{
	char	when[64], how[32];
	int64_t	left;

	if (sv->lost) {
		/* Said in the history too: one round trip, on this path only. */
		lock_note(l, "lost", sv->why, outcome(sv, status, how,
		    sizeof how));
		/*
		 * No release: either the key is gone or another's, or its TTL
		 * has run out on the server too (our validity ends before it
		 * does), and the server may not even answer.
		 */
		format_time(sv->lost_at, when, sizeof when);
		if (sv->sent) {
			log_error("lock '%s' was lost at %s: %s; the command "
			    "was sent SIG%s", l->name, when, sv->why,
			    sigabbrev_np(sv->sent));
			return EXIT_LOST;
		}
		/* --on-lost ignore: said as it came; the command ran on. */
		return status != 0 ? status : EXIT_LOST;
	}
	if (sv->replaced) {
		log_error("%s: replaced by %s (--replace); the command was "
		    "stopped (SIG%s)", l->name, sv->replaced_by,
		    sigabbrev_np(sv->timed_out));
		status = EXIT_REPLACED;
	} else if (sv->timed_out) {
		/* As timeout(1): whatever the command's own status. */
		log_warn("%s: --max-runtime %s ran out; the command was stopped "
		    "(SIG%s)", l->name, duration_format(ctx->o.max_runtime_ms,
		    when, sizeof when), sigabbrev_np(sv->timed_out));
		status = EXIT_TIMEOUT;
	} else
		warn_quick_release(ctx, l, now_mono_ms() - l->taken_at);
	left = ctx->o.min_hold_ms - (now_mono_ms() - l->taken_at);
	/* A replaced run lets go at once: the newcomer asked for it. */
	if (ctx->o.min_hold_ms > 0 && left > 0 && !sv->replaced) {
		lock_note(l, "released", "left to expire at --min-hold",
		    outcome(sv, status, how, sizeof how));
		return hold_on(ctx, l, left, status, sv->over_in_time);
	}
	switch (release_end(ctx, l, outcome(sv, status, how, sizeof how),
	    sv->over_in_time)) {
	case RELEASE_EXPIRED:
		log_warn("%s: rlock was stopped past the lock's validity after "
		    "the command ended: the lock expired instead of being "
		    "released", l->name);
		lock_note(l, "released", "expired after the command ended, "
		    "while rlock was stopped", outcome(sv, status, how,
		    sizeof how));
		/* The run's outcome, in its schedule: a success counts. */
		if (l->every_ms != 0)
			lock_release_ended(l, outcome(sv, status, how,
			    sizeof how));
		break;
	case -1:
		log_warn("%s: the command ended but the release failed: %s; "
		    "the lock expires by itself", l->name, ctx->err.msg);
		break;
	case 0:
		return lost_after(l, "its release", status);
	default:
		log_verbose("released %s", l->name);
	}
	return status;
}

/*
 * --every: one start a slot across machines (see rlock-schedules(7)).  It keeps
 * the period's other starts out itself, so --min-hold has nothing left to
 * do beside it; and a start a period is one holder's, not a reader's or a
 * semaphore's.  --splay must leave the start inside the half period that
 * a late machine may be let in by.
 */
static int
check_every(struct opts *o)
{
	char	p[32], s[32], slots[128], err[256];
	int64_t	gap;

	if (o->cron_tz != NULL && o->cron == NULL)
		return cmd_usage_error("--cron-tz goes with --cron 'EXPR': it "
		    "names the expression's time zone");
	if (o->cron != NULL) {
		if (o->every_ms != 0)
			return cmd_usage_error("give either --every PERIOD or "
			    "--cron 'EXPR', not both");
		/* The period, for the checks below: the gap around now. */
		if (schedule_cron_slots(o->cron, o->cron_tz, time(NULL), slots,
		    sizeof slots, &gap, err, sizeof err) == -1)
			return cmd_usage_error("%s", err);
		o->every_ms = gap;
	}
	if (o->retry_failed && o->every_ms == 0)
		return cmd_usage_error("--retry-failed goes with --every PERIOD "
		    "or --cron 'EXPR': it says which runs count for their slot");
	if (o->every_ms == 0)
		return 0;
	if (o->shared || o->limit > 1)
		return cmd_usage_error("--every starts NAME once a period, on one "
		    "machine: it does not go with %s", o->shared ? "--shared" :
		    "--limit");
	if (o->given & OPT(MIN_HOLD))
		return cmd_usage_error("--every keeps the period's other starts "
		    "out by itself: drop --min-hold");
	if (o->every_ms < 2)
		return cmd_usage_error("--every %s is too short: give a period "
		    "of at least 2ms", duration_format(o->every_ms, p, sizeof p));
	if (o->cron != NULL && o->splay_ms >= o->every_ms / 2 +
	    (o->every_ms % 2))
		return cmd_usage_error("--splay %s is not less than half the "
		    "time between two of --cron's times (%s now): a start that "
		    "late would be taken for the next one's; give a shorter "
		    "--splay", duration_format(o->splay_ms, s, sizeof s),
		    duration_format(o->every_ms, p, sizeof p));
	if (o->splay_ms >= o->every_ms / 2 + (o->every_ms % 2))
		return cmd_usage_error("--splay %s is not less than half of "
		    "--every %s: a start that late would be taken for the next "
		    "period's; give a shorter --splay",
		    duration_format(o->splay_ms, s, sizeof s),
		    duration_format(o->every_ms, p, sizeof p));
	return 0;
}

static int
check_options(struct cmd_ctx *ctx, char ***argvp)
{
	struct opts	*o = &ctx->o;
	static char	*sh[4];
	char		 d[32], t[32];
	int		 rc;

	if (o->command != NULL && o->nchild > 0)
		return cmd_usage_error("give either -c 'SHELL COMMAND' or a "
		    "command after NAME, not both");
	if (o->command == NULL && o->nchild == 0)
		return cmd_usage_error("exec needs a command: rlock exec NAME "
		    "[--] COMMAND [ARG...], or rlock exec NAME -c 'STRING'");
	if (o->heartbeat_ms == 0)
		o->heartbeat_ms = o->ttl_ms / 3 > 0 ? o->ttl_ms / 3 : 1;
	if (o->heartbeat_ms >= o->ttl_ms - lock_drift(o->ttl_ms))
		return cmd_usage_error("--heartbeat %s is too slow for --ttl "
		    "%s: extends must come well inside the TTL (try TTL/3)",
		    duration_format(o->heartbeat_ms, d, sizeof d),
		    duration_format(o->ttl_ms, t, sizeof t));
	if ((rc = check_every(o)) != 0 || (rc = deploy_check(o)) != 0)
		return rc;
	if (o->command != NULL) {
		sh[0] = "sh";
		sh[1] = "-c";
		sh[2] = (char *)o->command;
		sh[3] = NULL;
		*argvp = sh;
	} else
		*argvp = o->child;
	return 0;
}

/*
 * --cron: the expression's times around this machine's clock now, for the
 * acquire script to pick the slot of its firing from (the one nearest the
 * server's clock at its first attempt), and the gap around now as the
 * period.  0, or -1 with ctx->err (a zone file gone since the check).
 */
static int
set_cron(struct cmd_ctx *ctx, struct lock *l)
{
	char	err[256];
	int64_t	gap;

	if (schedule_cron_slots(ctx->o.cron, ctx->o.cron_tz, time(NULL),
	    l->slots, sizeof l->slots, &gap, err, sizeof err) == -1) {
		err_set(&ctx->err, ERR_USAGE, "%s", err);
		return -1;
	}
	l->every_ms = gap;
	l->cron = ctx->o.cron;
	l->cron_tz = ctx->o.cron_tz != NULL ? ctx->o.cron_tz : "";
	return 0;
}

/*
 * Acquire l (waiting as --wait says): 1 held, or 0 with nothing held and
 * *status the exit status (which -E may make 0: never "held").
 */
static int
take_lock(struct cmd_ctx *ctx, struct lock *l, const struct lock_meta *meta,
    int *status)
{
	int64_t	start = now_mono_ms();
	char	d[32], p[32];
	int	rc;

	rc = cmd_lock_acquire(ctx, l, meta);
	output_wait_done();
	/* -w is spent: it does not help the heartbeat or the release. */
	ctx->set.ropts.offer_wait = 0;
	if (rc == 0 && l->superseded) {
		*status = deploy_superseded(l);
		return 0;
	}
	if (rc == 0 && l->refused && l->paused_until_ms != 0) {
		/* Its own status, whatever -E: a pause is not a skip. */
		log_verbose("%s: its schedule is paused by %s %s; not running "
		    "the command (rlock schedule resume %s)", l->name,
		    l->paused_by[0] != '\0' ? l->paused_by : "?",
		    l->paused_until_ms > 0 ? "for a while" : "until resumed",
		    l->name);
		*status = EXIT_PAUSED;
		return 0;
	}
	if (rc == 0 && l->refused) {
		log_verbose("%s: this slot's run started %s ago on %s pid %lld "
		    "(%s %s); not running the command", l->name,
		    duration_format(l->started_ago_ms > 0 ? l->started_ago_ms : 0,
		    d, sizeof d), l->started_host[0] != '\0' ? l->started_host :
		    "?", l->started_pid, ctx->o.cron != NULL ? "--cron" :
		    "--every", ctx->o.cron != NULL ? ctx->o.cron :
		    duration_format(ctx->o.every_ms, p, sizeof p));
		*status = ctx->o.conflict_exit_code;
		return 0;
	}
	if (rc == 0) {
		log_verbose("%s: still busy after %s; not running the command",
		    l->name, duration_format(now_mono_ms() - start, d,
		    sizeof d));
		*status = ctx->o.conflict_exit_code;
		return 0;
	}
	if (rc == -1) {
		if (l->maybe_held)
			cmd_give_back(l);
		*status = cmd_fail(ctx);
		return 0;
	}
	(l->waited ? log_notice : log_verbose)("acquired %s in %s (fence "
	    "%lld)", l->name, duration_format(now_mono_ms() - start, d,
	    sizeof d), l->fence);
	return 1;
}

/* quorum_waiting's: the guard of an exec that waits (cmd_exec_exec). */
static void
spawn_guard(void *arg)
{
	struct supervise	*sv = arg;
	struct err		 e;

	err_clear(&e);
	if (supervise_spawn_guard(sv, sv->release, &e) == -1)
		log_verbose("%s", e.msg);
}

static int
cmd_exec_exec(struct cmd_ctx *ctx)
{
	struct heartbeat	 hb;
	struct held_target	 target = { ctx->o.prefix, ctx->set.urls,
				    ctx->set.nurls, &ctx->set.ropts };
	struct supervise	 sv;
	struct guard_release	 rel;
	struct lock_meta	 meta;
	struct lock		 l;
	char			 token[TOKEN_MAX + 1], **argv = NULL;
	char			**env = NULL;
	char			*cmdline = NULL;
	int64_t			 fired;
	int			 rc, status;

	if ((rc = check_options(ctx, &argv)) != 0)
		return rc;
	if (ctx->o.token != NULL)
		snprintf(token, sizeof token, "%s", ctx->o.token);
	else
		lock_new_token(token, sizeof token);
	cmdline = command_record(&ctx->o, argv);
	cmd_meta(&meta, (long long)getpid(), cmdline);
	supervise_init(&sv);
	memset(&rel, 0, sizeof rel);
	rel.exe = -1;

	fired = now_mono_ms();	/* the firing, before --splay */
	if (cmd_splay(ctx) == -1 || cmd_connect(ctx) == -1) {
		free(cmdline);
		return cmd_fail(ctx);
	}
	cmd_lock_init(ctx, &l, token);
	l.every_ms = ctx->o.every_ms;
	l.retry_failed = ctx->o.retry_failed;
	l.pending = ctx->o.pending;
	l.replace = ctx->o.replace;
	l.no_replace = ctx->o.no_replace;
	l.fired_mono = ctx->o.splay_ms > 0 ? fired : 0;
	/* --cron: its times around now, after the splay. */
	if (ctx->o.cron != NULL && set_cron(ctx, &l) == -1) {
		lock_free(&l);
		free(cmdline);
		return cmd_fail(ctx);
	}
	/*
	 * An exec that may wait starts its guard as the wait begins, with
	 * what the guard needs that the lock does not give (guard-release.c):
	 * a hand-over then goes from the wake to the command without a
	 * process's start between.  If that fails, supervise_spawn starts
	 * one; an exec that does not wait (-n: a fleet's refused machines)
	 * does nothing of it before the lock is its own.
	 */
	if (!ctx->o.foreground && ctx->o.wait_ms != 0) {
		if (guard_release_init(&rel, ctx->o.syslog) == 0)
			sv.release = &rel;
		quorum_waiting(l.q, spawn_guard, &sv);
	}
	if (!take_lock(ctx, &l, &meta, &rc)) {
		quorum_waiting(l.q, NULL, NULL);
		goto out;
	}
	quorum_waiting(l.q, NULL, NULL);

	signals_ignored(&sv.ignored);
	supervise_block_signals(&sv.ignored);
	if (signal_caught) {
		/* A signal came between the acquire and the block. */
		cmd_give_back(&l);
		signals_reraise();
	}
	env = child_env(&l);
	sv.name = l.name;
	sv.argv = argv;
	sv.envp = env;
	sv.foreground = ctx->o.foreground;
	sv.on_lost = ctx->o.on_lost;
	sv.kill_after_ms = ctx->o.kill_after_ms;
	sv.max_runtime_ms = ctx->o.max_runtime_ms;
	sv.leftovers = ctx->o.leftovers;
	/*
	 * What the guard needs to give the lock back if rlock dies: the held
	 * lock itself, on the target the heartbeat clones it onto (see
	 * guard-release.c).  Else the lock expires by itself.
	 */
	if (!sv.foreground && sv.release == NULL &&
	    guard_release_init(&rel, ctx->o.syslog) == 0)
		sv.release = &rel;
	if (sv.release != NULL)
		guard_release_pack(&rel, &l, &target);
	sv.lock = &l;
	if (supervise_spawn(&sv, &status, &ctx->err) == -1) {
		cmd_give_back(&l);
		log_error("%s", ctx->err.msg);
		rc = status;
		goto out;
	}
	heartbeat_init(&hb, &l, &target, ctx->o.heartbeat_ms, SUPERVISE_WAKE);
	hb.on_extend = supervise_confirmed;
	hb.on_extend_arg = &sv;
	status = supervise_wait(&sv, &hb, &ctx->err);
	/*
	 * How long the lock is surely ours, for a release to be settled; and
	 * where: a server that told the heartbeat "not the holder" no longer
	 * counts as holding it, so its silence at the release (or --min-hold's
	 * extend) cannot hide a loss (majority_left, lock.c).
	 */
	heartbeat_stop(&hb, &l);
	if (status == -1) {
		cmd_give_back(&l);
		rc = cmd_fail(ctx);
		goto out;
	}
	if (sv.left > 0)
		lock_note(&l, "leftovers", sv.left_note, "");
	rc = finish(ctx, &l, &sv, status);
out:
	supervise_end(&sv);
	guard_release_free(&rel);
	free_env(env);
	free(cmdline);
	lock_free(&l);
	return rc;
}
