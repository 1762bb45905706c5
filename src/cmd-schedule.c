/*
 * cmd-schedule.c: rlock schedule declare|list|pause|resume|remove [NAME]:
 * a schedule's life (exec --every's), as one noun.  See "Schedules across
 * a fleet" in rlock-schedules(7).
 */

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "duration.h"
#include "log.h"
#include "schedule.h"

static int	cmd_schedule_exec(struct cmd_ctx *);

const struct cmd_entry cmd_schedule_entry = {
	.name = "schedule",
	.args = "ACTION [NAME]",
	.summary = "Declare, list, pause, resume or remove a schedule",
	.options = OPT(EVERY) | OPT(CRON) | OPT(CRON_TZ) | OPT(GRACE) |
	    OPT(FOR) | OPT(OVERDUE) | OPT(FAILING),
	.min_args = 1,
	.max_args = 2,
	.opt_help = {
		[O_EVERY] = "declare: the schedule's period",
		[O_CRON] = "declare: the schedule's crontab(5) expression",
		[O_OVERDUE] = "list: only overdue schedules; exit 1 if any",
		[O_FAILING] = "list: only failing schedules; exit 1 if any",
	},
	.exec = cmd_schedule_exec,
};

/* Which options each action takes, beside the global ones. */
static const struct {
	const char	*name;
	int		 op;	/* enum sched_op; -1: list */
	uint64_t	 options;
} actions[] = {
	{ "declare", SCHED_DECLARE, OPT(EVERY) | OPT(CRON) | OPT(CRON_TZ) |
	    OPT(GRACE) },
	{ "list", -1, OPT(OVERDUE) | OPT(FAILING) },
	{ "pause", SCHED_PAUSE, OPT(FOR) },
	{ "resume", SCHED_RESUME, 0 },
	{ "remove", SCHED_REMOVE, 0 },
};

static int
check(struct cmd_ctx *ctx, int *a)
{
	struct opts		*o = &ctx->o;
	char			 slots[128], err[256];
	const char		*act = o->args[0];
	uint64_t		 stray;
	size_t			 i;

	for (i = 0; i < sizeof actions / sizeof *actions; i++)
		if (strcmp(actions[i].name, act) == 0)
			break;
	if (i == sizeof actions / sizeof *actions)
		return cmd_usage_error("schedule: unknown action '%s'; give "
		    "declare, list, pause, resume or remove", act);
	*a = (int)i;
	stray = o->given & (OPT(EVERY) | OPT(CRON) | OPT(CRON_TZ) |
	    OPT(GRACE) | OPT(FOR) | OPT(OVERDUE) | OPT(FAILING)) &
	    ~actions[i].options;
	if (stray != 0)
		return cmd_usage_error("option --%s does not apply to schedule "
		    "%s", options_first_name(stray), act);
	if (actions[i].op == -1 && o->nargs > 1)
		return cmd_usage_error("schedule list takes no NAME (rlock "
		    "status NAME shows one)");
	if (actions[i].op != -1 && o->nargs < 2)
		return cmd_usage_error("schedule %s needs NAME: rlock schedule "
		    "%s NAME", act, act);
	if (actions[i].op == SCHED_DECLARE && o->cron != NULL &&
	    o->every_ms != 0)
		return cmd_usage_error("give either --every PERIOD or --cron "
		    "'EXPR', not both");
	if (o->cron_tz != NULL && o->cron == NULL)
		return cmd_usage_error("--cron-tz goes with --cron 'EXPR'");
	if (actions[i].op == SCHED_DECLARE && o->cron != NULL &&
	    schedule_cron_slots(o->cron, o->cron_tz, time(NULL), slots,
	    sizeof slots, &o->every_ms, err, sizeof err) == -1)
		return cmd_usage_error("%s", err);
	if (actions[i].op == SCHED_DECLARE && o->every_ms == 0)
		return cmd_usage_error("schedule declare needs the period: "
		    "rlock schedule declare %s --every PERIOD (or --cron "
		    "'EXPR')", o->args[1]);
	if (actions[i].op == SCHED_DECLARE && o->every_ms < 2)
		return cmd_usage_error("--every is too short: give a period of "
		    "at least 2ms");
	return 0;
}

static int
cmd_schedule_exec(struct cmd_ctx *ctx)
{
	struct lock_meta	 meta;
	struct lock		 l;
	char			 by[400], d[32];
	long long		 until = 0;
	int			 a = 0, rc;

	if ((rc = check(ctx, &a)) != 0)
		return rc;
	if (actions[a].op == -1) {
		/* The status listing, of the names with a schedule only. */
		ctx->o.schedules = 1;
		ctx->o.nargs = 0;
		return cmd_status_entry.exec(ctx);
	}
	if (cmd_connect(ctx) == -1)
		return cmd_fail(ctx);
	ctx->o.args++;		/* NAME, as the other commands have it */
	ctx->o.nargs--;
	cmd_lock_init(ctx, &l, "");
	l.cron = ctx->o.cron;
	l.cron_tz = ctx->o.cron_tz;
	ctx->o.args--;
	ctx->o.nargs++;
	cmd_meta(&meta, (long long)getpid(), "");
	snprintf(by, sizeof by, "%s@%s", meta.user, meta.host);
	rc = schedule_change(&l, (enum sched_op)actions[a].op, ctx->o.every_ms,
	    ctx->o.grace_ms, ctx->o.for_ms, by, &until, &ctx->err);
	if (rc == -1) {
		lock_free(&l);
		return cmd_fail(ctx);
	}
	switch (actions[a].op) {
	case SCHED_DECLARE:
		log_verbose("%s: declared, every %s", l.name,
		    duration_format(ctx->o.every_ms, d, sizeof d));
		break;
	case SCHED_PAUSE:
		log_verbose("%s: paused %s%s", l.name, until > 0 ? "for " :
		    "until resumed", until > 0 ? duration_format(ctx->o.for_ms,
		    d, sizeof d) : "");
		break;
	case SCHED_RESUME:
		log_verbose("%s: %s", l.name, rc == 1 ? "resumed" :
		    "was not paused");
		break;
	default:
		log_verbose("%s: %s", l.name, rc == 1 ? "removed" :
		    "had no schedule");
		break;
	}
	lock_free(&l);
	return 0;
}
