/* cmd.c: the command table and dispatch, and what every command shares. */

/*
 * options.c parses argv against the table of every option; here each
 * command says which options and how many arguments it takes, and one
 * that does not fit is a usage error naming the command.  settings.c then
 * weighs flag > environment > config file > default, and the command
 * runs.  Only this layer (and the cmd-*.c files) print errors and choose
 * exit statuses.
 */

#include "config.h"

#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/types.h>

#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "duration.h"
#include "log.h"
#include "output.h"
#include "schedule.h"
#include "settings.h"
#include "signals.h"
#ifdef RLOCK_STATIC_TLS
#include "tls.h"	/* only for --version: which TLS a static build carries */
#endif
#include "util.h"

/* ----------------------------------------------------------- dispatch */

/*
 * rlock --version: the version alone, as every build has printed it; a
 * static build (scripts/static.sh) also says so, for which machine, with
 * which C library, and which TLS library it carries, since that TLS is
 * updated only by a new rlock.
 */
static void
print_version(void)
{
#ifdef RLOCK_STATIC_TLS
#if defined(__x86_64__)
	const char	*arch = " x86_64";
#elif defined(__aarch64__)
	const char	*arch = " aarch64";
#else
	const char	*arch = "";
#endif

	printf("rlock %s (static%s build, %s; TLS: %s)\n", PACKAGE_VERSION,
	    arch, RLOCK_LIBC, tls_library());
#else
	printf("rlock %s\n", PACKAGE_VERSION);
#endif
}

/*
 * rlock help [COMMAND]: what --help prints, for those who type it as git
 * and go taught them.  Answered before any setting is read: help needs
 * no config file, no password and no server.
 */
static const struct cmd_entry cmd_help_entry = {
	.name = "help",
	.args = "[COMMAND]",
	.summary = "Show this help, or a command's (as COMMAND --help)",
	.min_args = 0,
	.max_args = 1,
};

static const struct cmd_entry *const cmd_table[] = {
	&cmd_acquire_entry,
	&cmd_release_entry,
	&cmd_extend_entry,
	&cmd_status_entry,
	&cmd_exec_entry,
	&cmd_log_entry,
	&cmd_watch_entry,
	&cmd_doctor_entry,
	&cmd_schedule_entry,
	&cmd_help_entry,
	NULL
};

/* "acquire, release, ..." */
static const char *
command_list(char *list, size_t len)
{
	const struct cmd_entry *const	*c;
	size_t				 n = 0;

	for (c = cmd_table; *c != NULL && n < len; c++)
		n += snprintf(list + n, len - n, "%s%s",
		    c == cmd_table ? "" : ", ", (*c)->name);
	return list;
}

/* The command called name, or NULL once a usage error has said so. */
static const struct cmd_entry *
find_cmd(const char *name)
{
	const struct cmd_entry *const	*c;
	char				 shown[128], list[256];

	for (c = cmd_table; *c != NULL; c++)
		if (strcmp((*c)->name, name) == 0)
			return *c;
	cmd_usage_error("unknown command '%s'; commands are: %s",
	    options_printable(name, shown, sizeof shown),
	    command_list(list, sizeof list));
	return NULL;
}

/* Does argv fit ce: its options, its number of arguments, their names? */
static int
check_args(const struct cmd_entry *ce, const struct opts *o)
{
	uint64_t	stray;
	int		i;

	if ((stray = o->given & ~(ce->options | OPTS_GLOBAL)) != 0)
		return cmd_usage_error("option --%s does not apply to %s; see "
		    "'rlock %s --help'", options_first_name(stray), ce->name,
		    ce->name);
	if (o->nargs < ce->min_args)
		return cmd_usage_error("%s needs %s; usage: rlock %s %s",
		    ce->name, ce->args, ce->name, ce->args);
	if (ce->max_args >= 0 && o->nargs > ce->max_args)
		return cmd_usage_error("unexpected argument '%s'; usage: rlock "
		    "%s%s%s", o->args[ce->max_args], ce->name,
		    *ce->args ? " " : "", ce->args);
	for (i = 0; i < o->nargs; i++)
		if (cmd_check_name(o->args[i]) == -1)
			return EXIT_USAGE;
	return 0;
}

static void
ctx_free(struct cmd_ctx *ctx)
{
	int	i;

	if (ctx->connected)
		quorum_close(&ctx->q);
	for (i = 0; i < ctx->set.nurls; i++)
		url_free(&ctx->set.urls[i]);
	secret_free(ctx->set.password);
	secret_free(ctx->set.sentinel_password);
	free(ctx->o.args);
	options_clear_urls(&ctx->o);
	secret_free(ctx->set.config_text);
}

/*
 * --limit N > 1 needs one server: a majority of servers each granting one
 * of its own N slots does not bound the total (3 servers, limit 2:
 * holders on {1,2}, {2,3} and {1,3} make 3).  Nor, yet, does it go with
 * --fifo, which needs one server too.
 */
static int
check_limit(struct cmd_ctx *ctx)
{
	/*
	 * Each server keeps its own line, in the order requests reached it:
	 * two servers' heads can disagree, and a strict order would need
	 * them to agree first.
	 */
	if (ctx->o.fifo && ctx->set.nurls > 1)
		return cmd_usage_error("--fifo needs a single server: in quorum "
		    "mode each server keeps its own line and their heads can "
		    "disagree (use one server, Sentinel or Cluster)");
	if (ctx->o.shared && (ctx->o.limit > 1 || ctx->o.fifo))
		return cmd_usage_error("--shared and %s do not go together; "
		    "drop one", ctx->o.fifo ? "--fifo" : "--limit");
	if (ctx->o.limit <= 1)
		return 0;
	if (ctx->set.nurls > 1)
		return cmd_usage_error("--limit %d needs a single server: in "
		    "quorum mode majorities of per-server slots do not bound "
		    "the total (use one server, Sentinel or Cluster)",
		    ctx->o.limit);
	if (ctx->o.fifo)
		return cmd_usage_error("--limit and --fifo do not go together "
		    "yet; drop one");
	return 0;
}

/*
 * release and extend act for the owner, whose token is --token, else
 * RLOCK_TOKEN: the variable gets --token's checks (256 bytes, or a byte
 * that is not printable, are refused, not used or cut), before anything
 * is sent.  acquire and exec make their own token and never read it.
 */
static int
owner_token(const struct cmd_entry *ce, struct opts *o)
{
	if (ce != &cmd_release_entry && ce != &cmd_extend_entry)
		return 0;
	return settings_apply_env(o, "token", "RLOCK_TOKEN");
}

/* rlock help [COMMAND] */
static int
help(const struct opts *o)
{
	const struct cmd_entry	*ce = NULL;

	if (o->nargs > 1)
		return cmd_usage_error("unexpected argument '%s'; usage: rlock "
		    "help [COMMAND]", o->args[1]);
	if (o->nargs == 1 && (ce = find_cmd(o->args[0])) == NULL)
		return EXIT_USAGE;
	options_help(stdout, ce, cmd_table);
	return 0;
}

int
cmd_main(int argc, char **argv)
{
	struct cmd_ctx		 ctx;
	struct opts		*o = &ctx.o;
	const struct cmd_entry	*ce;
	char			 list[256];
	int			 i, rc;

	/* Before anything is opened: see std_fds_open. */
	if (std_fds_open() == -1)
		return EXIT_SOFTWARE;
	memset(&ctx, 0, sizeof ctx);
	/* Before parsing: a cron job's usage error belongs in syslog too. */
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--syslog") == 0)
			log_open_syslog();
	settings_defaults(o);

	if ((rc = options_parse(o, argc, argv, find_cmd, &ce)) != 0)
		goto out;
	log_set_level(o->verbosity);
	if (o->given & OPT(VERSION)) {
		print_version();
		goto out;
	}
	if (o->given & OPT(HELP)) {
		options_help(stdout, ce, cmd_table);
		goto out;
	}
	if (ce == &cmd_help_entry) {
		rc = help(o);
		goto out;
	}
	if (ce == NULL) {
		rc = cmd_usage_error("no command given; commands are: %s; "
		    "see 'rlock --help'", command_list(list, sizeof list));
		goto out;
	}
	if ((rc = check_args(ce, o)) != 0)
		goto out;
	ctx.entry = ce;
	if ((rc = settings_read_config(&ctx.set, &ctx.o)) != 0)
		goto out;
	log_set_level(o->verbosity);
	log_set_json(o->json);
	if (o->syslog)
		log_open_syslog();
	if ((rc = settings_settle(&ctx.set, &ctx.o)) != 0 ||
	    (rc = owner_token(ce, &ctx.o)) != 0 ||
	    (rc = check_limit(&ctx)) != 0)
		goto out;
	/* Messages offer -w only to a command that takes it. */
	ctx.set.ropts.offer_wait = (ce->options & OPT(WAIT)) != 0;
	signals_catch();
	rc = ce->exec(&ctx);
	/* A listing that left out a damaged lock (said on stderr). */
	if (rc == 0 && lock_damage_count() > 0)
		rc = EXIT_UNAVAILABLE;
out:
	ctx_free(&ctx);
	return rc;
}

/* ------------------------------------------------------ shared helpers */

int
cmd_connect(struct cmd_ctx *ctx)
{
	if (ctx->connected)
		return 0;
	if (quorum_open(&ctx->q, ctx->set.urls, ctx->set.nurls, &ctx->set.ropts,
	    &ctx->err) == -1) {
		quorum_close(&ctx->q);
		return -1;
	}
	ctx->connected = 1;
	return 0;
}

/*
 * --splay: before the first attempt, sleep a random time in [0, DUR), so
 * that a fleet's crons, firing in the same second, reach the server
 * spread out and the winner is any of them.  A signal ends the sleep as
 * it ends a wait: -1 with ctx->err set, nothing taken.
 */
int
cmd_splay(struct cmd_ctx *ctx)
{
	struct timespec	ts;
	uint64_t		 r = 0;
	int64_t		 ms, until;
	char		 d[32], s[32];

	if (ctx->o.splay_ms <= 0)
		return 0;
	if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
		r = (uint64_t)now_wall_ms() * 2654435761u ^ (uint64_t)getpid();
	ms = (int64_t)(r % (uint64_t)ctx->o.splay_ms);
	log_verbose("sleeping %s first (--splay %s)", duration_format(ms, d,
	    sizeof d), duration_format(ctx->o.splay_ms, s, sizeof s));
	for (until = now_mono_ms() + ms; !signal_caught &&
	    (ms = until - now_mono_ms()) > 0; ) {
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = ms % 1000 * 1000000;
		nanosleep(&ts, NULL);
	}
	if (signal_caught) {
		err_set(&ctx->err, ERR_INTERRUPTED, "interrupted by a signal "
		    "during --splay");
		return -1;
	}
	return 0;
}

int
cmd_fail(struct cmd_ctx *ctx)
{
	if (ctx->err.kind == ERR_INTERRUPTED)
		signals_reraise();
	log_error("%s", ctx->err.msg);
	return err_exit_status(ctx->err.kind);
}

int
cmd_check_name(const char *name)
{
	char	why[256], shown[128];

	if (name_check(name, why, sizeof why) == 0)
		return 0;
	cmd_usage_error("invalid lock name '%s': %s; names are 1-255 bytes "
	    "of printable UTF-8 without whitespace, invisible characters, "
	    "'{' or '}'",
	    options_printable(name, shown, sizeof shown), why);
	return -1;
}

const char *
cmd_token(struct cmd_ctx *ctx)
{
	/* --token, else RLOCK_TOKEN, both checked by now: see owner_token. */
	return ctx->o.token;
}

/*
 * lock_wait_fn while acquire waits at a terminal: the holder as of now,
 * for output_wait_show.  Never on a pipe or in cron mail, never with -q
 * (see cmd_lock_init).
 */
static void
show_wait(const struct lock *l, const struct lock_holder *h,
    int64_t waited_ms, int64_t left_ms)
{
	int64_t			since = now_mono_ms() - h->seen_at;
	struct output_wait	w;
	struct winsize		ws;

	w.name = l->name;
	w.host = h->host;
	w.pid = h->pid;
	w.command = h->command;
	w.held_ms = h->held_ms >= 0 ? h->held_ms + since : -1;
	w.expires_ms = h->pttl_ms < 0 ? -1 :
	    h->pttl_ms > since ? h->pttl_ms - since : 0;
	w.waited_ms = waited_ms;
	w.left_ms = left_ms;
	w.width = 80;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		w.width = ws.ws_col;
	output_wait_show(&w);
}

static const enum output_server_state server_state[] = {
	[NODE_FREE] = OUTPUT_FREE,
	[NODE_HOLDS] = OUTPUT_HOLDS,
	[NODE_OTHER] = OUTPUT_OTHER,
	[NODE_UNREACHABLE] = OUTPUT_UNREACHABLE,
};

void
cmd_status_view(const struct lock_status *st, struct output_status *v)
{
	struct output_server	*sv = NULL;
	struct output_waiter	*wv = NULL;
	struct output_slot	*lv = NULL;
	int			 i;

	if (st->nservers > 0)
		sv = xcalloc((size_t)st->nservers, sizeof *sv);
	for (i = 0; i < st->nservers; i++) {
		sv[i].url = st->nodes[i].url;
		sv[i].state = server_state[st->nodes[i].state];
		sv[i].error = st->nodes[i].error;
	}
	if (st->nwaiters > 0)
		wv = xcalloc((size_t)st->nwaiters, sizeof *wv);
	for (i = 0; i < st->nwaiters; i++)
		wv[i] = (struct output_waiter){
			.host = st->waiters[i].host, .user = st->waiters[i].user,
			.command = st->waiters[i].command,
			.pid = st->waiters[i].pid,
			.waiting_ms = st->waiters[i].waiting_ms,
			.place = st->waiters[i].place,
		};
	if (st->nslots > 0)
		lv = xcalloc((size_t)st->nslots, sizeof *lv);
	for (i = 0; i < st->nslots; i++)
		lv[i] = (struct output_slot){
			.host = st->slots[i].host, .user = st->slots[i].user,
			.command = st->slots[i].command, .pid = st->slots[i].pid,
			.acquired_ms = st->slots[i].acquired_ms,
			.held_ms = st->slots[i].acquired_ms > 0 ?
			    st->now_ms - st->slots[i].acquired_ms : 0,
			.expires_in_ms = st->slots[i].pttl_ms,
			.ttl_ms = st->slots[i].ttl_ms,
			.fence = st->slots[i].fence,
		};
	*v = (struct output_status){
		.name = st->name, .held = st->held,
		.last_fence = st->last_fence, .host = st->host,
		.user = st->user, .command = st->command, .pid = st->pid,
		.acquired_ms = st->acquired_ms,
		/* Both wall clocks are the server's: no skew between them. */
		.held_ms = st->acquired_ms > 0 ?
		    st->now_ms - st->acquired_ms : 0,
		.expires_in_ms = st->pttl_ms, .ttl_ms = st->ttl_ms,
		.fence = st->fence, .nservers = st->nservers,
		.nholding = st->nholding, .servers = sv,
		.nwaiters = st->nwaiters, .waiters = wv,
		.limit = st->limit, .nslots = st->nslots, .slots = lv,
		.shared = st->shared && st->nslots > 0,
		.every_ms = st->every_ms, .last_start_ms = st->last_start_ms,
		.last_start_ago_ms = st->now_ms - st->last_start_ms,
		.last_host = st->last_host, .last_pid = st->last_pid,
		.last_outcome = st->last_outcome,
		.overdue = cmd_overdue(st),
		.replace_host = st->replace_host, .replace_pid = st->replace_pid,
		.now_ms = st->now_ms,
		.grace_ms = cmd_grace(st),
		.next_due_ms = cmd_next_due(st),
		.declared_ms = st->declared_ms,
		.last_success_ms = st->last_success_ms,
		.failures = st->failures,
		.failing = cmd_failing(st),
		.paused = cmd_paused(st),
		.paused_by = st->paused_by,
		.paused_until_ms = st->paused_until_ms,
		.cron = st->cron,
		.cron_tz = st->cron_tz,
	};
}

/* Whether rlock schedule pause stops NAME's starts now. */
int
cmd_paused(const struct lock_status *st)
{
	return st->every_ms > 0 && st->paused_until_ms != 0;
}

/*
 * When the next start is due (server's clock): the slot after the last
 * started one (a period after its time; --cron: the expression's next
 * time after it), or the same after the declaration of one never
 * started; 0 when paused or unknown.  *grace: how late its start may
 * come, its own or by default half the slot (--cron: half the gap to the
 * time after).
 */
static long long
next_due(const struct lock_status *st, long long *grace)
{
	long long	base, due, g;

	*grace = st->grace_ms > 0 ? st->grace_ms : st->every_ms / 2;
	if (st->every_ms <= 0 || cmd_paused(st))
		return 0;
	base = st->last_start_ms > 0 ? (st->slot_ms > 0 ? st->slot_ms :
	    st->last_start_ms) : st->declared_ms;
	if (base <= 0)
		return 0;
	if (st->cron != NULL && *st->cron != '\0') {
		if (schedule_cron_due(st->cron, st->cron_tz, base, &due,
		    &g) == -1)
			return 0;
		if (st->grace_ms <= 0)
			*grace = g;
		return due;
	}
	return base + st->every_ms;
}

/* How late a slot's start may come: its grace, half the period unset. */
long long
cmd_grace(const struct lock_status *st)
{
	long long	g;

	next_due(st, &g);
	return g;
}

long long
cmd_next_due(const struct lock_status *st)
{
	long long	g;

	return next_due(st, &g);
}

/*
 * A schedule is overdue when a slot's time and its grace (half the slot
 * by default, the time by which a machine's start may be late) have passed
 * with no start, on the server's clock; never while it is paused.
 */
int
cmd_overdue(const struct lock_status *st)
{
	long long	g, due = next_due(st, &g);

	return due > 0 && st->now_ms > due + g;
}

/* Its last run failed (and it is not paused): rlock status --failing. */
int
cmd_failing(const struct lock_status *st)
{
	return st->every_ms > 0 && !cmd_paused(st) && st->failures > 0;
}

void
cmd_lock_init(struct cmd_ctx *ctx, struct lock *l, const char *token)
{
	lock_init(l, &ctx->q, ctx->o.prefix, ctx->o.args[0], token);
	l->wait_replicas = ctx->o.wait_replicas;
	l->fifo = ctx->o.fifo;
	l->limit = ctx->o.limit;
	l->shared = ctx->o.shared;
	l->history_len = ctx->o.no_history ? 0 : ctx->o.history_length;
	l->history_ttl_ms = ctx->o.history_expiry_ms;
	/* Whoever runs this, until acquire says who holds it. */
	cmd_meta(&l->meta, (long long)getppid(), "");
	l->wait_timeout_ms = ctx->o.timeout_ms;
	if (isatty(STDERR_FILENO) && log_level() == LOG_LEVEL_NORMAL)
		l->on_wait = show_wait;
}

/* The name of uid from /etc/passwd itself: 0, or -1 to ask NSS instead. */
static int
passwd_name(uid_t uid, char *buf, size_t len)
{
	FILE	*f;
	char	 line[512], *name, *rest, *save;
	int	 rc = -1;

	if ((f = fopen("/etc/passwd", "re")) == NULL)
		return -1;
	while (rc == -1 && fgets(line, sizeof line, f) != NULL) {
		if ((name = strtok_r(line, ":", &save)) == NULL ||
		    strtok_r(NULL, ":", &save) == NULL ||
		    (rest = strtok_r(NULL, ":", &save)) == NULL)
			continue;
		if (strtoul(rest, NULL, 10) == uid && *rest != '\0') {
			snprintf(buf, len, "%s", name);
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

void
cmd_meta(struct lock_meta *m, long long pid, const char *command)
{
	/* Looked up once, and kept: m points at them for the whole run. */
	static char	 host[256], user[64];
	struct passwd	*pw;
	const char	*env;

	if (host[0] == '\0' && gethostname(host, sizeof host - 1) == -1)
		snprintf(host, sizeof host, "unknown");
	if (user[0] == '\0') {
		/*
		 * The environment first, then /etc/passwd itself: the name is
		 * only shown, and asking NSS (nscd, LDAP...) costs more than
		 * the whole lock.  NSS only for users not in /etc/passwd.
		 */
		if ((env = getenv("LOGNAME")) != NULL && *env != '\0')
			snprintf(user, sizeof user, "%s", env);
		else if ((env = getenv("USER")) != NULL && *env != '\0')
			snprintf(user, sizeof user, "%s", env);
		else if (passwd_name(geteuid(), user, sizeof user) == 0)
			;
		else if ((pw = getpwuid(geteuid())) != NULL)
			snprintf(user, sizeof user, "%s", pw->pw_name);
		else
			snprintf(user, sizeof user, "%u", geteuid());
	}
	m->host = host;
	m->user = user;
	m->pid = pid;
	m->command = command != NULL ? command : "";
}

void
cmd_give_back(struct lock *l)
{
	int		sig = signal_caught;
	int64_t		saved = l->q->limit, until;

	/*
	 * The run is failing anyway: its own error is the one to report.
	 * Only what this run took goes back: a hold the token had before
	 * (a reader that asked to upgrade, acquire --token again) stays.
	 * Within a grace of its own (a sixteenth of --timeout): a server that
	 * took the request and never answered gets no second --timeout, and
	 * what it may hold expires with its TTL.
	 */
	until = now_mono_ms() + redis_grace_ms(l->q->opts);
	if (saved > 0 && saved < until)
		until = saved;
	signal_caught = 0;
	quorum_limit(l->q, until);
	lock_give_back(l);
	quorum_limit(l->q, saved);
	signal_caught = sig;
}

int
cmd_lock_acquire(struct cmd_ctx *ctx, struct lock *l,
    const struct lock_meta *m)
{
	int	rc;

	ctx->set.ropts.end_ms = ctx->o.wait_ms > 0 ? now_mono_ms() +
	    ctx->o.wait_ms : 0;
	rc = lock_acquire(l, ctx->o.ttl_ms, ctx->o.wait_ms, m, &ctx->err);
	ctx->set.ropts.end_ms = 0;
	return rc;
}
