/*
 * rlock.pml: the lock protocol of src/lua/*.lua and the client's side of
 * it (src/lock.c), for SPIN.  Read README.md beside it first.
 *
 * One name on NS servers (1, or a quorum of 3), NC = 3 clients (tokens).
 * Every script is one atomic step (a d_step): Redis runs a script alone.
 * Between steps the environment (proctype env) may let a TTL pass, expire a
 * hold whose TTL passed, lapse a waiter's lease, take a server down; a client
 * may crash; a request or a reply may be lost or late (a budget of FAULTS).
 *
 * Rules: -DOLD models the scripts as on main 7d1b7b0 (the old rules); without
 * it, the rules of the scripts as they are now (issue 37), rlock(7)'s "One
 * rule for every mode".  YIELD and FIX_REL, which the model first found
 * missing from the design and the scripts now have, are part of them.  Each block that
 * mirrors Lua says which script and step it mirrors ("acquire.lua: ...").
 *
 * Configurations (check.sh compiles one at a time; -DEVERY adds exec
 * --every's refusals and its releases that hand nothing over; -DLATE, with
 * QUORUM, lets a script given up unanswered run later, or never):
 *   MIX    one server, 3 clients, modes mixed (plain, --shared, --limit 2,
 *          --fifo, the upgrade), safety properties.
 *   FIFO   one server: two --fifo writers that take, release and take again
 *          forever, and a third client (a reader or a plain writer) waiting
 *          without bound; liveness.
 *   QUORUM three servers (one may go down), 3 clients plain and --shared,
 *          safety properties and the client's loss rule.
 *   QLIVE  three servers, the third down: two readers looping, a writer
 *          waiting without bound; liveness.
 *   UPLIVE one server: two readers that each upgrade, waiting without
 *          bound; liveness (every run ends: granted or refused).
 *   PLIVE  one server, -DNEWEST: three plain writers with --pending 1
 *          waiting without bound, c0 and c1 looping, c2 once; liveness
 *          (the newest waiter is served: while c2 is the newest --pending
 *          waiter it comes to hold, or a newer one comes).
 *   RLIVE  one server, -DREPLACE: c0 and c1 plain writers looping, which
 *          extend and may hold for ever unless asked to stop; c2 a
 *          newcomer with --replace, once; liveness (a hold asked to stop
 *          ends, and the newcomer gets in).
 * -DNEWEST: every client asks with exec --pending 1 (newest waiter wins,
 * acquire.lua): a first listing supersedes every other waiter that holds
 * nothing (its entry becomes a mark, sp), whose next attempt is answered
 * R_SUPER, and so is any attempt after it (the mark stays: -DTAKE_MARK
 * is the script before, whose answer took it away), and gives up (lock.c:
 * a give-back everywhere, which takes the mark, then exit 36).  P_SUPER:
 * a waiter superseded in its run never holds in it (its command never
 * runs), unless its lease lapsed (a fault: the server may forget it).
 * -DREPLACE: exec --replace and --no-replace (roles -DRSn).  The acquire
 * script that finds a plain holder that may be replaced (no nr) marks its
 * record (qh: who asks it to stop) and lists the caller as any waiter;
 * the holder's extend answers 2 (extended, asked to stop), and its rlock
 * stops the command (its belief ends) and releases; the newcomer gets the
 * lock by that release's hand-over (or the expiry) as any waiter does.
 * P_MUTEX is then "a replaced holder's command is stopped before the
 * newcomer's starts" (the command runs only while its rlock believes it
 * holds: exec-loss.bats, replace.bats).
 * Sabotages, each of which check.sh --old shows caught: -DSAB_OLDEST (the
 * oldest waiter wins), -DSAB_HANDOLD (a mark read as a waiter by the
 * hand-over), -DSAB_RTAKE (--replace takes the lock at once), -DSAB_RDEAF
 * (the extend does not say the holder was asked to stop).
 * -DPRE48: the new rules as on main d2d3035, before issue 48's one order
 * of waiting (ONE_ORDER) and the refused second upgrade (UP_REFUSE).
 * Properties are switched on one at a time for the old rules (each break
 * found by its own property), all together for the new (P_ALL).
 */

#ifndef OLD
#define YIELD	1	/* acquire.lua: a reader yields a free name only to an
			 * older exclusive waiter */
#define FIX_REL	1	/* lock.c majority_left: a server that says it
			 * released counts as holding */
#ifndef PRE48
#define ONE_ORDER 1	/* issue 48: a waiter's place is the server's, set
			 * at its first listing and never moved; the --fifo
			 * line, a reader's deference, the hand-over read it */
#define UP_REFUSE 1	/* issue 48: while a reader's upgrade waits, a
			 * second reader's is refused (fcntl's EDEADLK) */
#endif
#endif

#if defined(QUORUM) || defined(QLIVE)
#define NS	3
#else
#define NS	1
#endif
#define NC	3
#define MAJ	(NS / 2 + 1)
#define LIM	2		/* --limit 2 */

#ifdef PLIVE
#define NEWEST	1		/* the newest waiter's liveness: --pending 1 */
#endif
#ifdef RLIVE
#define REPLACE	1		/* the replace request's liveness */
#endif
#if defined(REPLACE) && (defined(OLD) || defined(LATE))
#error "REPLACE models the new rules, without -DLATE"
#endif

#if defined(FIFO) || defined(QLIVE) || defined(UPLIVE) || defined(PLIVE) || \
    defined(RLIVE)
#define LIVE	1		/* a liveness configuration: loops, no fences */
#define NOFENCE	1
#endif

#ifdef P_ALL
#define P_MUTEX	1
#define P_FENCE	1
#define P_PHANTOM 1
#define P_LOSS	1
#define P_SERVER 1
#ifdef NEWEST
#define P_SUPER	1
#endif
#endif
#ifdef NOFENCE
#undef P_FENCE
#endif

#ifndef FAULTS
#define FAULTS	1		/* lost or late requests and replies, in all */
#endif
#ifndef DOWNS
#define DOWNS	0		/* servers that may go down, in all */
#endif
/* Roles (bit sets; see the client): kinds 2 X, 4 S, 8 L; fifo 1 no, 2 yes;
 * wait 1 -n, 2 -w; UP 1: may upgrade.  Default: anything. */
#define ROLE(R, c)	((c) == 0 -> R##0 : ((c) == 1 -> R##1 : R##2))
#ifndef KS0
#define KS0 14
#endif
#ifndef KS1
#define KS1 14
#endif
#ifndef KS2
#define KS2 14
#endif
#ifndef FS0
#define FS0 3
#endif
#ifndef FS1
#define FS1 3
#endif
#ifndef FS2
#define FS2 3
#endif
#ifndef WS0
#define WS0 3
#endif
#ifndef WS1
#define WS1 3
#endif
#ifndef WS2
#define WS2 3
#endif
#ifndef UP0
#define UP0 1
#endif
#ifndef RS0
#define RS0 1
#endif
#ifndef RS1
#define RS1 1
#endif
#ifndef RS2
#define RS2 1
#endif
#ifndef UP1
#define UP1 0
#endif
#ifndef UP2
#define UP2 0
#endif
#ifndef RUNS
#define RUNS	1		/* runs (lock_acquire calls) of each client */
#endif

/* The kind of a hold, a waiter entry, an ask. */
#define X	1		/* exclusive (plain) */
#define S	2		/* --shared */
#define L	3		/* --limit 2 */

/* A hold's a (new rules): the acquire run that created it. */
#define A_OLD	0		/* an earlier run of the token */
#define A_RUN	1		/* the token's current run */
#define A_G	2		/* handed over by a release, not yet claimed */

/* What one acquire script said (t_r). */
#define R_KEEP	1		/* granted: the token's hold kept */
#define R_NEW	2		/* granted: a hold taken afresh */
#define R_UP	3		/* granted: a reader's hold upgraded */
#define R_BUSYH	4		/* busy: a live holder keeps it */
#define R_BUSYW	5		/* busy: a waiter's turn, nobody's hold */
#define R_USAGE	6		/* refused: held with another kind */
#define R_DEADLK 7		/* refused: another reader's upgrade waits */
#define R_SUPER	8		/* refused: a newer waiter superseded it */

#define BIT(i)	(1 << (i))
#define POP(m)	(((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))

/* A server's state.  hk..hu: the token's record in the lock key, a hash
 * with a field per holder (lib.lua's hold_read/hold_write): its kind (k),
 * run (a), fence (f); its end (e) is hr, as the model keeps time.  Under
 * the new rules that record is all that says who holds a name, in every
 * mode; mk and mpin are the old rules' mark, kept in step with holders. */
typedef Srv {
	byte	hk[NC];		/* the token's hold: its kind (0: none) */
	byte	ha[NC];		/* its a */
	bit	hr[NC];		/* its TTL covers the holder's validity */
	byte	hf[NC];		/* its fence */
	byte	hs[NC];		/* endmax when it was created (P_FENCE) */
	bit	hu[NC];		/* new: an upgrade of the token's shared hold */
	byte	wk[NC];		/* the token's waiter entry: kind (0: none) */
	bit	wf[NC];		/* ... asked with --fifo */
	byte	wo[NC];		/* ... its place (1: first; 0 unlisted), set
				 * when it was listed: the order of first
				 * attempts, kept compact */
	bit	q[NC];		/* old: in the --fifo line (L:queue) */
	byte	mk;		/* old: the mark on the lock key (S, L, 0) */
	byte	mpin;		/* old: tokens whose TTL the mark's PTTL covers */
	byte	fc;		/* the fence counter L:fence */
	bit	down;
#ifdef NEWEST
	bit	sp[NC];		/* the token's entry is a mark: superseded */
#endif
#ifdef REPLACE
	bit	qh[NC];		/* the token's hold is asked to stop (qh, qp:
				 * a newcomer's exec --replace) */
	bit	nr[NC];		/* ... may not be (nr: --no-replace) */
#endif
#ifdef LATE
	bit	hl[NC];		/* the hold was taken by a late script, unheard */
#endif
};
Srv	srv[NS];

byte	bel[NC];	/* what the client believes it holds (0: nothing) */
byte	belf[NC];	/* ... with this fence */
bit	fresh[NC];	/* the attempt under way has validity left */
bit	lv[NC];		/* the waiter's lease cannot have lapsed */
bit	dead[NC];
bit	inrun[NC];	/* in lock_acquire (trying or waiting) */
byte	rk[NC];		/* order of the current runs' starts (0: oldest) */
byte	endmax;		/* the greatest fence of a belief that ended */
byte	faults = FAULTS;
#ifdef NEWEST
bit	gone[NC];	/* ghost: the client's run was superseded (P_SUPER) */
#endif
#if defined(PLIVE) || defined(RLIVE)
/* ghost: a holder whose command ended is releasing (its rlock extended
 * until then): in a liveness configuration its TTL passes then only as a
 * fault too.  (Else a looping plain writer's hold could expire before
 * each of its releases, which would hand nothing over, and take the free
 * name again, for ever: in rlock the heartbeat stops with the release.
 * The --fifo writers of FIFO do not barge so.) */
bit	rl[NC];
#define RL(c, v)	rl[c] = v
#define RELEASING(c)	rl[c]
#else
#define RL(c, v)	skip
#define RELEASING(c)	0
#endif
#ifdef PLIVE
byte	nw = NC;	/* ghost: the newest --pending waiter (its first
			 * listing), until it holds (NC: none) */
#endif
byte	downs = DOWNS;
#ifdef LATE
/* -DLATE: a script given up unanswered (BLOCKED) may run later, when a
 * release's wake pops its BLPOP before the server has seen the connection
 * close: after the give-back that followed it, or after the run's end.
 * late[c]: the servers where client c's given-up script is still pending;
 * lk, lf, lw: what it asked (kind, --fifo, wait). */
byte	late[NC];
byte	lk[NC];
bit	lf[NC];
byte	lw[NC];
#endif

/* Scratch of the atomic steps: never carried from one step to the next
 * (not hidden with -DNOHIDE, which BFS needs: more states, same runs). */
#ifdef NOHIDE
#define HIDDEN
#else
#define HIDDEN hidden
#endif
HIDDEN byte	t_d, t_o, t_nx, t_ns, t_nl, t_r, t_f, t_x, t_k, t_m;
HIDDEN byte	t_b, t_e, t_a, t_u, t_p, t_z;

/* -DTRACE (one server, spin's random simulation): every script step and
 * every change that env or a run's start makes to the server, each with
 * the server's abstract state after it, for the conformance check
 * (conform.py replays them against the real scripts; README.md,
 * "Conformance").  TRO op c kind fifo wait keep result; TRE what c (1 a
 * hold expires, 2 an entry lapses, 3 a finished run's hold goes at the
 * next run's start, 4 a crash); TRR c up (a run starts); TRS the state:
 * hk[0..2] ha[0..2] wk[0..2] wf[0..2] wo[0..2].  Nothing else changes:
 * without -DTRACE these print nothing.  -DREPLACE adds a field to TRO,
 * rp (0, 1 --replace, 2 --no-replace), and six to TRS, qh[0..2] and
 * nr[0..2]; an extend's result 2 is "extended, asked to stop". */
#ifdef TRACE
#ifdef REPLACE
#define TR_STATE(s)							\
	printf("TRS %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\n", \
	    srv[s].hk[0], srv[s].hk[1], srv[s].hk[2],			\
	    srv[s].ha[0], srv[s].ha[1], srv[s].ha[2],			\
	    srv[s].wk[0], srv[s].wk[1], srv[s].wk[2],			\
	    srv[s].wf[0], srv[s].wf[1], srv[s].wf[2],			\
	    srv[s].wo[0], srv[s].wo[1], srv[s].wo[2],			\
	    srv[s].qh[0], srv[s].qh[1], srv[s].qh[2],			\
	    srv[s].nr[0], srv[s].nr[1], srv[s].nr[2])
#define TR_OP(s, c, OP)							\
	printf("TRO %d %d %d %d %d %d %d %d\n", OP, c, k, fifo, wt, keep, t_r, \
	    rp);							\
	TR_STATE(s)
#else
#define TR_STATE(s)							\
	printf("TRS %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\n",	\
	    srv[s].hk[0], srv[s].hk[1], srv[s].hk[2],			\
	    srv[s].ha[0], srv[s].ha[1], srv[s].ha[2],			\
	    srv[s].wk[0], srv[s].wk[1], srv[s].wk[2],			\
	    srv[s].wf[0], srv[s].wf[1], srv[s].wf[2],			\
	    srv[s].wo[0], srv[s].wo[1], srv[s].wo[2])
#define TR_OP(s, c, OP)							\
	printf("TRO %d %d %d %d %d %d %d\n", OP, c, k, fifo, wt, keep, t_r); \
	TR_STATE(s)
#endif
#define TR_EV(W, s, c)	printf("TRE %d %d\n", W, c); TR_STATE(s)
#define TR_RUN(c)	printf("TRR %d %d\n", c, up)
/* A budget of crashes (default 1), so that a random run is not cut
 * short by one at its first choice. */
#ifndef CRASHES
#define CRASHES	1
#endif
byte	crashes = CRASHES;
#define CRASH	:: atomic { crashes > 0 -> crashes-- }; goto crash
#define CRASH_C2	:: atomic { c < 2 && crashes > 0 -> crashes-- }; goto crash
#else
#define CRASH	:: goto crash
#define CRASH_C2	:: c < 2 -> goto crash
#define TR_OP(s, c, OP)	skip
#define TR_EV(W, s, c)	skip
#define TR_RUN(c)	skip
#endif

#ifdef TRACE
/* (a simulation: no never claim) */
#elif defined(UPLIVE)
ltl live { [] (inrun[2] -> <> !inrun[2]) }
#elif defined(PLIVE)
/* the newest waiter is served: while c2 is the newest --pending waiter,
 * it comes to hold, or a newer waiter comes */
ltl live { [] (nw == 2 -> <> (nw != 2)) }
#elif defined(RLIVE)
/* a replace request is answered (c0's hold, asked to stop, ends) and
 * the newcomer c2 gets in */
ltl live { [] ((srv[0].qh[0] -> <> !srv[0].qh[0]) &&
    (inrun[2] -> <> (bel[2] != 0))) }
#elif defined(LIVE)
ltl live { [] (inrun[2] -> <> (bel[2] != 0)) }
#endif

/* The order of waiting.  ONE_ORDER: by place (wo), the server's, of the
 * first listing; a caller not listed comes after everyone listed.  Else
 * by the start of the current runs (rk): old, and, before issue 48, for a
 * reader's deference and the hand-over (an entry's s, which a later
 * attempt moved back to the run's start by the client's count), while the
 * --fifo line kept the first listing's place (PLACED). */
#define PLACED(s, d, c)	(srv[s].wk[c] == 0 || srv[s].wo[d] < srv[s].wo[c])
#ifdef ONE_ORDER
#define ORDER(s, d)	srv[s].wo[d]
#define LINE_BEFORE(s, d, c)	PLACED(s, d, c)
#define START_BEFORE(s, d, c)	PLACED(s, d, c)
#else
#define ORDER(s, d)	rk[d]
#define LINE_BEFORE(s, d, c)	PLACED(s, d, c)
#define START_BEFORE(s, d, c)	(rk[d] < rk[c])
#endif

/* ---------------------------------------------------------- helpers */

/* The live holds of server s, by kind. */
inline count(s)
{
	t_nx = 0; t_ns = 0; t_nl = 0; t_d = 0;
	do
	:: t_d < NC ->
		if
		:: srv[s].hk[t_d] == X -> t_nx++
		:: srv[s].hk[t_d] == S -> t_ns++
		:: srv[s].hk[t_d] == L -> t_nl++
		:: else
		fi;
		t_d++
	:: else -> break
	od
}

/* The oldest live waiter entry of kind kk (0: any) on s, into t_o (NC: none). */
inline oldest(s, kk)
{
	t_o = NC; t_d = 0;
	do
	:: t_d < NC ->
		if
		:: srv[s].wk[t_d] != 0 && (kk == 0 || srv[s].wk[t_d] == kk) &&
		    (t_o == NC || ORDER(s, t_d) < ORDER(s, t_o)) -> t_o = t_d
		:: else
		fi;
		t_d++
	:: else -> break
	od
}

/* lib.lua new_fence(): INCR, floored at the server's clock.  The floor is
 * what keeps fences rising across a counter that expired (new rules) or was
 * lost; it is abstracted away: the counter here never goes back. */
inline new_fence(s)
{
#ifdef NOFENCE
	t_f = 0
#else
	assert(srv[s].fc < 250);	/* (a bound of the model, not a property) */
	srv[s].fc++; t_f = srv[s].fc
#endif
}

/* -DLATE: a hold that a late script took after the release or extend
 * ran there is not one the client could have ended or kept: P_LOSS leaves
 * it out (HEARD_HOLD), until a reply of the client's own claims it. */
#ifdef LATE
#define UNLATE(s, c)	srv[s].hl[c] = 0
#define HEARD_HOLD(s, c)	!srv[s].hl[c]
#else
#define UNLATE(s, c)	skip
#define HEARD_HOLD(s, c)	1
#endif

/* The entry of c on s goes (its place: those behind move up one, so that
 * one order is one state). */
inline unlist(s, c)
{
	if
	:: srv[s].wo[c] != 0 ->
		t_u = 0;
		do
		:: t_u < NC ->
			if
			:: srv[s].wo[t_u] > srv[s].wo[c] -> srv[s].wo[t_u]--
			:: else
			fi;
			t_u++
		:: else -> break
		od;
		srv[s].wo[c] = 0
	:: else
	fi;
	srv[s].wk[c] = 0; srv[s].wf[c] = 0;
#ifdef NEWEST
	srv[s].sp[c] = 0
#else
	skip
#endif
}

inline drop_hold(s, c)
{
	srv[s].hk[c] = 0; srv[s].ha[c] = 0; srv[s].hr[c] = 0;
	srv[s].hf[c] = 0; srv[s].hs[c] = 0; srv[s].hu[c] = 0;
#ifdef REPLACE
	srv[s].qh[c] = 0; srv[s].nr[c] = 0;
#endif
	UNLATE(s, c)
}

inline take_hold(s, c, kind, a)
{
	new_fence(s);
	srv[s].hk[c] = kind; srv[s].ha[c] = a; srv[s].hr[c] = 1;
	srv[s].hf[c] = t_f;
#ifdef REPLACE
	/* a new record: nobody asked it to stop; nr is the asker's (acquire) */
	srv[s].qh[c] = 0; srv[s].nr[c] = 0;
#endif
#ifndef NOFENCE
	srv[s].hs[c] = endmax
#endif
}

/* The one compatibility rule on the holds of s (new rules: P_SERVER). */
inline server_ok(s)
{
#ifdef P_SERVER
	count(s);
	assert(t_nx <= 1 && (t_nx == 0 || t_ns + t_nl == 0) &&
	    (t_ns == 0 || t_nl == 0) && t_nl <= LIM)
#else
	skip
#endif
}

/* No lock held once every holder is gone: an acquire refused for a
 * holder's sake (busy, or held with another kind) has a live holder to
 * show (P_PHANTOM).  A waiter's turn (R_BUSYW) is no holder's. */
inline phantom(s)
{
#ifdef P_PHANTOM
	if
	:: t_r == R_BUSYH || t_r == R_USAGE || t_r == R_DEADLK ->
		count(s); assert(t_nx + t_ns + t_nl > 0)
	:: else
	fi
#else
	skip
#endif
}

/* A belief may end (release, loss, crash, validity): its fence is a
 * predecessor's for every hold created after. */
inline end_belief(c)
{
	if
	:: bel[c] != 0 ->
#ifndef NOFENCE
		if
		:: belf[c] > endmax -> endmax = belf[c]
		:: else
		fi;
#endif
		bel[c] = 0; belf[c] = 0
	:: else
	fi
}

/* =================================================== the old rules */
#ifdef OLD

/* acquire.lua's cur (GET KEYS[1]): a plain holder's token (t_x = its
 * client), else the mark: t_k = X (a token), S ('shared'), L ('limit:2'),
 * 0 (nil). */
inline old_cur(s)
{
	t_k = srv[s].mk; t_x = NC; t_d = 0;
	do
	:: t_d < NC ->
		if
		:: srv[s].hk[t_d] == X -> t_x = t_d; t_k = X
		:: else
		fi;
		t_d++
	:: else -> break
	od
}

/* lib.lua grant_info(): the grant's hash, and the waiter off the list and
 * the line. */
inline old_grant(s, d, kind)
{
	take_hold(s, d, kind, A_G);
	srv[s].wk[d] = 0; srv[s].wf[d] = 0; srv[s].q[d] = 0;
	printf("  hand-over: c%d granted kind %d on s%d\n", d, kind, s)
}

/* lib.lua hand_over(K, hist, after_writer, fifo_line). */
inline old_hand_over(s, after_writer)
{
	/* fifo_line: the L:queue key exists. */
	t_b = srv[s].q[0] || srv[s].q[1] || srv[s].q[2];
	oldest(s, 0);
	if
	:: t_o == NC -> skip		/* nobody waits */
	:: t_o != NC && t_b ->
		/* "The head of the line whose lease is live; dead heads go." */
		do
		:: true ->
			t_o = NC; t_d = 0;
			do
			:: t_d < NC ->
				if
				:: srv[s].q[t_d] &&
				    (t_o == NC || rk[t_d] < rk[t_o]) -> t_o = t_d
				:: else
				fi;
				t_d++
			:: else -> break
			od;
			if
			:: t_o == NC -> break
			:: t_o != NC && srv[s].wk[t_o] != 0 ->
				/* grant_writer: the head, whatever else waits */
				old_grant(s, t_o, X); srv[s].mk = 0; break
			:: else ->
				srv[s].q[t_o] = 0; srv[s].wk[t_o] = 0
			fi
		od
	:: t_o != NC && !t_b ->
		/* readers_in: every entry without x = 1 (a --limit waiter's
		 * too); writer: the oldest with x = 1. */
		t_e = 0; t_d = 0;
		do
		:: t_d < NC ->
			if
			:: srv[s].wk[t_d] != 0 && srv[s].wk[t_d] != X -> t_e = 1
			:: else
			fi;
			t_d++
		:: else -> break
		od;
		oldest(s, X);
		if
		:: t_e && (after_writer || t_o == NC) ->
			/* grant_readers: SET mark 'shared' PX longest */
			t_m = 0;
			do
			:: t_m < NC ->
				if
				:: srv[s].wk[t_m] != 0 && srv[s].wk[t_m] != X ->
					old_grant(s, t_m, S)
				:: else
				fi;
				t_m++
			:: else -> break
			od;
			srv[s].mk = S; srv[s].mpin = 0
		:: !(t_e && (after_writer || t_o == NC)) && t_o != NC ->
			t_m = t_o; old_grant(s, t_m, X); srv[s].mk = 0
		:: else
		fi
	fi
}

/* lib.lua hand_over_slot(): the freed slot to the oldest waiter, of any
 * kind. */
inline old_hand_over_slot(s)
{
	oldest(s, 0);
	if
	:: t_o != NC -> t_m = t_o; old_grant(s, t_m, L)
	:: else
	fi
}

/* acquire.lua busy(pttl, h, writer): listed for the lease when it waits;
 * x = 1 for an exclusive waiter. */
inline old_busy(s, c, writer, reason)
{
	t_r = reason;
	if
	:: wt != 0 ->
		srv[s].wk[c] = (writer -> X : k); lv[c] = 1
	:: else
	fi
}

/* acquire.lua take() and share(): a hold kept (re-acquire) or new. */
inline old_take(s, c, kind)
{
	if
	:: srv[s].hk[c] == kind ->
		/* "a token that already holds the lock keeps its fence" */
		srv[s].ha[c] = A_RUN; srv[s].hr[c] = 1; t_r = R_KEEP
	:: else ->
		drop_hold(s, c); take_hold(s, c, kind, A_RUN); t_r = R_NEW
	fi;
	/* ARGV[11] listed: HDEL KEYS[5] token */
	srv[s].wk[c] = 0
}

/* acquire.lua, whole: client c asks server s for kind k (fifo, wt). */
inline acquire(s, c)
{
	old_cur(s);
	count(s);
	if
	:: k == L || t_k == L ->
		/* "if limit > 1 or marked" */
		if
		:: t_k == S -> t_r = R_USAGE		/* {-1, 0} */
		:: t_k != S && t_k != 0 &&
		    (t_k == L -> 2 : 1) != (k == L -> 2 : 1) -> t_r = R_USAGE
		:: else ->
			/* a slot of mine, else a free one, else busy */
			if
			:: srv[s].hk[c] == L || t_nl < LIM ->
				old_take(s, c, L);
				/* "SET KEYS[1] 'limit:N' KEEPTTL", PTTL raised */
				srv[s].mk = L; srv[s].mpin = srv[s].mpin | BIT(c)
			:: else -> old_busy(s, c, 0, R_BUSYH)
			fi
		fi
	:: k == S && t_k != L && !(t_k == X && t_x == c) ->
		/* "if shared and cur ~= ARGV[1]" */
		if
		:: t_k == X -> old_busy(s, c, 0, R_BUSYH)
		:: else ->
			/* mine: a live reader; w: live exclusive waiters */
			t_e = 0; t_d = 0;
			do
			:: t_d < NC ->
				if
				:: t_d != c && srv[s].wk[t_d] == X -> t_e = 1
				:: else
				fi;
				t_d++
			:: else -> break
			od;
			if
			:: srv[s].hk[c] != S && t_e && t_ns == 0 ->
				/* "Free, and a writer's turn: wake it by name." */
				old_busy(s, c, 0, R_BUSYW)
			:: srv[s].hk[c] != S && t_e && t_ns != 0 ->
				old_busy(s, c, 0, R_BUSYH)
			:: else ->
				/* share(): join, the mark raised to my TTL */
				old_take(s, c, S);
				srv[s].mk = S; srv[s].mpin = srv[s].mpin | BIT(c)
			fi
		fi
	:: else ->
		/* exclusive: "if cur == SHARED": busy while another
		 * reader is live, else the lock is free (mark, readers,
		 * my reader hash deleted) */
		t_b = 0;
		if
		:: t_k == S ->
			if
			:: t_ns > (srv[s].hk[c] == S -> 1 : 0) ->
				old_busy(s, c, 1, R_BUSYH); t_b = 1
			:: else ->
				srv[s].mk = 0; srv[s].mpin = 0; t_k = 0;
				if
				:: srv[s].hk[c] == S -> drop_hold(s, c)
				:: else
				fi
			fi
		:: else
		fi;
		if
		:: t_b -> skip
		:: !t_b && fifo && wt != 0 && !(t_k == X && t_x == c) ->
			/* "ZADD queue NX": the head whose lease is live */
			srv[s].q[c] = 1;
			do
			:: true ->
				t_o = NC; t_d = 0;
				do
				:: t_d < NC ->
					if
					:: srv[s].q[t_d] &&
					    (t_o == NC || rk[t_d] < rk[t_o]) ->
						t_o = t_d
					:: else
					fi;
					t_d++
				:: else -> break
				od;
				if
				:: t_o == c || srv[s].wk[t_o] != 0 -> break
				:: else -> srv[s].q[t_o] = 0; srv[s].wk[t_o] = 0
				fi
			od;
			if
			:: t_k != 0 -> old_busy(s, c, 1, R_BUSYH)
			:: t_k == 0 && t_o != c -> old_busy(s, c, 1, R_BUSYW)
			:: else -> srv[s].q[c] = 0; old_take(s, c, X)
			fi
		:: !t_b && !(fifo && wt != 0 && !(t_k == X && t_x == c)) ->
			if
			:: t_k != 0 && !(t_k == X && t_x == c) ->
				old_busy(s, c, 1, R_BUSYH)
			:: else -> old_take(s, c, X)
			fi
		fi
	fi;
	if
	:: t_r == R_KEEP || t_r == R_NEW -> t_f = srv[s].hf[c]
	:: else
	fi;
	phantom(s)
}

/* release.lua: client c's release (outcome given or not: a give-back
 * is the same script).  t_r = 1 (released) or 0. */
inline release(s, c)
{
	old_cur(s);
	t_m = srv[s].hk[c];
	/* "A waiter giving up releases too: its entry and its place" */
	srv[s].wk[c] = 0; srv[s].wf[c] = 0; srv[s].q[c] = 0;
	if
	:: t_k == S ->
		/* a reader leaves; the last one out takes the mark with it
		 * and hands over (not after a writer) */
		if
		:: t_m == S ->
			drop_hold(s, c); t_r = 1;
			count(s);
			if
			:: t_ns == 0 ->
				srv[s].mk = 0; srv[s].mpin = 0;
				if
				:: NS == 1 -> old_hand_over(s, 0)
				:: else
				fi
			:: else
			fi
		:: else -> t_r = 0
		fi
	:: t_k != S && !(t_k == X && t_x == c) ->
		/* my slot, if a semaphore's */
		if
		:: t_m == L ->
			drop_hold(s, c); t_r = 1;
			if
			:: NS == 1 -> old_hand_over_slot(s)
			:: else
			fi;
			count(s);
			if
			:: t_nl == 0 -> srv[s].mk = 0; srv[s].mpin = 0
			:: else
			fi
		:: else -> t_r = 0		/* lost() */
		fi
	:: else ->
		/* the plain holder: DEL, then hand_over(after_writer, line) */
		drop_hold(s, c); t_r = 1;
		if
		:: NS == 1 -> old_hand_over(s, 1)
		:: else
		fi
	fi
}

/* A give-back (lock_unlist, undo_partial, the maybe_held release): the
 * release script with no outcome. */
inline giveback(s, c, keep)
{
	release(s, c)
}

/* extend.lua: t_r = 1 (extended) or 0. */
inline extend(s, c)
{
	old_cur(s);
	if
	:: t_k == S ->
		if
		:: srv[s].hk[c] == S ->
			srv[s].hr[c] = 1; srv[s].mpin = srv[s].mpin | BIT(c); t_r = 1
		:: else -> t_r = 0
		fi
	:: t_k != S && !(t_k == X && t_x == c) ->
		if
		:: srv[s].hk[c] == L ->
			srv[s].hr[c] = 1; srv[s].mpin = srv[s].mpin | BIT(c); t_r = 1
		:: else -> t_r = 0
		fi
	:: else -> srv[s].hr[c] = 1; t_r = 1
	fi
}

/* =================================================== the new rules */
#else

/* A grant (design-37 "Who gets a released lock"): a hold marked a = 'g',
 * leased for what is left of the waiter's lease; the entry goes. */
inline new_grant(s, d, kind)
{
	take_hold(s, d, kind, A_G);
	unlist(s, d);
	printf("  hand-over: c%d granted kind %d on s%d\n", d, kind, s)
}

/* release.lua's hand-over (one server only): freed_l, a limit slot freed;
 * was, the kind of the hold that ended (phase-fair: the other kind's turn
 * when it waits). */
inline hand_over(s, freed_l, was)
{
	count(s);
	if
	:: t_nx + t_ns + t_nl == 0 ->
		/* name free: after a writer every waiting reader, after the
		 * last reader the oldest writer; else the oldest live waiter:
		 * a reader brings every waiting reader, a limit-N waiter the
		 * one right behind it if it asks the same */
		t_o = NC;
		if
		:: was == X -> oldest(s, S)
		:: was == S -> oldest(s, X)
		:: else
		fi;
		if
		:: t_o == NC -> oldest(s, 0)
		:: else
		fi;
		if
		:: t_o != NC && srv[s].wk[t_o] == X ->
			t_m = t_o; new_grant(s, t_m, X)
		:: t_o != NC && srv[s].wk[t_o] == S ->
			t_m = 0;
			do
			:: t_m < NC ->
				if
				:: srv[s].wk[t_m] == S -> new_grant(s, t_m, S)
				:: else
				fi;
				t_m++
			:: else -> break
			od
		:: t_o != NC && srv[s].wk[t_o] == L ->
			t_m = t_o; new_grant(s, t_m, L);
			oldest(s, 0);
			if
			:: t_o != NC && srv[s].wk[t_o] == L ->
				t_m = t_o; new_grant(s, t_m, L)
			:: else
			fi
		:: else
		fi
	:: t_nl > 0 && t_nl < LIM && freed_l ->
		/* a slot freed while others hold: the oldest waiter, if it
		 * asks the same --limit */
		oldest(s, 0);
		if
		:: t_o != NC && srv[s].wk[t_o] == L ->
			t_m = t_o; new_grant(s, t_m, L)
		:: else
		fi
	:: else
	fi
}

inline new_busy(s, c, reason)
{
	t_r = reason; t_z = 0;
	if
	:: wt != 0 ->
		if
		:: srv[s].wk[c] == 0 ->
			/* listed: placed after everyone listed */
			t_u = 0; t_d = 0;
			do
			:: t_d < NC ->
				if
				:: srv[s].wo[t_d] > t_u -> t_u = srv[s].wo[t_d]
				:: else
				fi;
				t_d++
			:: else -> break
			od;
			srv[s].wo[c] = t_u + 1;
#ifdef NEWEST
			/* acquire.lua supersede(): a first listing leaves no
			 * other waiter (--pending 1), holders apart: each
			 * other entry becomes a mark */
			t_p = 0;
			do
			:: t_p < NC ->
				if
				:: t_p != c && srv[s].wk[t_p] != 0 &&
				    srv[s].hk[t_p] == 0 ->
#if defined(SAB_OLDEST)
					/* sabotage: the oldest wins, the
					 * newcomer is the one superseded */
					t_z = 1
#elif defined(SAB_HANDOLD)
					/* sabotage: the mark is still read as
					 * a waiter (waiting() without its
					 * check of s): the hand-over may give
					 * it the lock, as the oldest */
					srv[s].sp[t_p] = 1; gone[t_p] = lv[t_p]
#else
					/* (P_SUPER: unless its lease lapsed,
					 * a fault: the mark may lapse too) */
					unlist(s, t_p); srv[s].sp[t_p] = 1;
					gone[t_p] = lv[t_p]
#endif
				:: else
				fi;
				t_p++
			:: else -> break
			od;
#ifdef PLIVE
			nw = c;
#endif
#else
			skip
#endif
		:: else
		fi;
		srv[s].wk[c] = k; srv[s].wf[c] = fifo; lv[c] = 1;
#ifdef NEWEST
		if
		:: t_z -> unlist(s, c); srv[s].sp[c] = 1; gone[c] = 1
		:: else
		fi
#else
		skip
#endif
	:: else
	fi
}

/* acquire.lua (new): the one compatibility rule on live holders. */
inline acquire(s, c)
{
	count(s);
	/* t_b: an older live waiter; t_e: a live exclusive waiter (not me) */
	t_b = 0; t_e = 0; t_k = 0; t_d = 0;
	do
	:: t_d < NC ->
		if
		:: t_d != c && srv[s].wk[t_d] != 0 ->
			t_b = t_b || LINE_BEFORE(s, t_d, c);
			t_e = t_e || srv[s].wk[t_d] == X;
			t_k = t_k || srv[s].wk[t_d] == X && START_BEFORE(s, t_d, c)
		:: else
		fi;
		t_d++
	:: else -> break
	od;
	t_x = srv[s].hk[c];
	if
	:: t_x != 0 && (t_x == k || t_x == X) ->
		/* re-acquire (exclusive held by T: only T; a reader stays
		 * one; a place kept): keeps hold, fence and a; a grant is
		 * claimed (a := run, TTL) */
		/* acquire.lua hold(): a kept hold keeps its a; a grant
		 * ('g') is claimed by this run */
		if
		:: srv[s].ha[c] == A_G -> srv[s].ha[c] = A_RUN
		:: else
		fi;
		srv[s].hr[c] = 1; t_r = R_KEEP
	:: t_x == S && k == X ->
		/* exclusive ask on a shared name: R empty or {caller} */
		if
		:: t_ns == 1 ->
			/* acquire.lua, the upgrade: the plain hold keeps the
			 * run that took the shared one (upgraded), so a
			 * give-back of this run leaves an exclusive holder */
			t_a = srv[s].ha[c];
			drop_hold(s, c); take_hold(s, c, X, t_a); t_r = R_UP;
			srv[s].hu[c] = 1
#ifdef UP_REFUSE
		:: t_ns > 1 ->
			/* acquire.lua upgrader(): another reader listed as an
			 * exclusive waiter (its upgrade waits): refused, the
			 * caller's entry off */
			t_m = 0; t_d = 0;
			do
			:: t_d < NC ->
				if
				:: t_d != c && srv[s].hk[t_d] == S &&
				    srv[s].wk[t_d] == X -> t_m = 1
				:: else
				fi;
				t_d++
			:: else -> break
			od;
			if
			:: t_m -> t_r = R_DEADLK; unlist(s, c)
			:: else -> new_busy(s, c, R_BUSYH)
			fi
#else
		:: else -> new_busy(s, c, R_BUSYH)
#endif
		fi
	:: t_x != 0 && t_x != k && t_x != X && !(t_x == S && k == X) ->
		t_r = R_USAGE		/* limit vs shared, limit vs plain */
	:: t_x == 0 ->
		if
		:: t_nx + t_ns + t_nl == 0 ->
			/* free name: any kind; --fifo only with no older waiter */
			if
			:: fifo && t_b -> new_busy(s, c, R_BUSYW)
#ifdef YIELD
			/* proposed: a reader yields on a free name to an
			 * older live exclusive waiter (as written it takes
			 * it: a quorum writer starves, QLIVE; yielding to
			 * any exclusive waiter deadlocks with --fifo, FIFO) */
			:: !(fifo && t_b) && k == S && t_k ->
				new_busy(s, c, R_BUSYW)
#endif
			:: else -> take_hold(s, c, k, A_RUN); t_r = R_NEW
			fi
#ifdef REPLACE
		:: t_nx > 0 && k != L ->
			/* acquire.lua: exec --replace asks a plain holder
			 * that may be replaced (no nr) to stop: its record
			 * gets qh (the first to ask keeps its qh, qp), which
			 * its next extend answers; the caller waits as any
			 * waiter does */
			t_m = NC; t_d = 0;
			do
			:: t_d < NC ->
				if
				:: srv[s].hk[t_d] == X -> t_m = t_d
				:: else
				fi;
				t_d++
			:: else -> break
			od;
			if
			:: rp == 1 && t_m != NC && !srv[s].nr[t_m] ->
#ifdef SAB_RTAKE
				/* sabotage: the newcomer takes the lock as
				 * it asks (the holder's record goes, as
				 * release --force would): it does not wait
				 * for the holder to stop */
				drop_hold(s, t_m); take_hold(s, c, X, A_RUN);
				t_r = R_NEW
#else
				srv[s].qh[t_m] = 1; new_busy(s, c, R_BUSYH)
#endif
			:: else -> new_busy(s, c, R_BUSYH)
			fi
#else
		:: t_nx > 0 && k != L -> new_busy(s, c, R_BUSYH)
#endif
		:: t_nx > 0 && k == L ->
			/* acquire.lua: a plain holder's name asked with
			 * --limit N does not mix ({-1, 1}: exit 64, limit.bats);
			 * the model said busy until the conformance check
			 * (conform.py) found the difference */
			t_r = R_USAGE
		:: t_ns > 0 ->
			if
			:: k == S && (t_e || fifo && t_b) -> new_busy(s, c, R_BUSYW)
			:: k == S && !(t_e || fifo && t_b) ->
				take_hold(s, c, S, A_RUN); t_r = R_NEW
			:: k == X -> new_busy(s, c, R_BUSYH)
			:: k == L -> t_r = R_USAGE
			fi
		:: t_nl > 0 ->
			if
			:: k == L && t_nl < LIM && fifo && t_b ->
				new_busy(s, c, R_BUSYW)
			:: k == L && t_nl < LIM && !(fifo && t_b) ->
				take_hold(s, c, L, A_RUN); t_r = R_NEW
			:: k == L && t_nl >= LIM -> new_busy(s, c, R_BUSYH)
			:: k != L -> t_r = R_USAGE
			fi
		fi
	:: else
	fi;
	if
	:: t_r == R_KEEP || t_r == R_NEW || t_r == R_UP ->
		t_f = srv[s].hf[c];
#ifdef REPLACE
		/* acquire.lua: the hold's nr is the ask's (--no-replace),
		 * a kept one's too; a kept hold keeps its qh */
		srv[s].nr[c] = (rp == 2);
#endif
		/* a grant takes the entry off, except in quorum mode, where
		 * it goes with the release or lapses */
		if
		:: NS == 1 -> unlist(s, c)
		:: else
		fi
	:: else
	fi;
	server_ok(s);
	phantom(s)
}

/* release.lua (new): every hold of the token and its entry go; capacity
 * freed goes to the waiters (one server).  With exec --every, the
 * release of the run that counts for its slot hands nothing over: the
 * waiters are woken, each judged by the slot it fired in (refused, or let
 * in for a later slot: an ordinary attempt, as any woken waiter's).  Which
 * slot a firing falls in (a grid of --every's period, or --cron's
 * expression's time nearest it; the firing's moment before --splay) is
 * time, which the model does not have: a
 * run counts, or not, as env chooses. */
inline release(s, c)
{
	t_x = srv[s].hk[c];
	unlist(s, c);
	if
	:: t_x != 0 ->
		drop_hold(s, c); t_r = 1;
		if
		:: NS == 1 -> hand_over(s, t_x == L, t_x)
#ifdef EVERY
		:: NS == 1 && t_x == X -> skip
#endif
		:: else
		fi
	:: else -> t_r = 0
	fi;
	server_ok(s)
}

/* release.lua give-back of a run (new): only holds whose a is this run or
 * 'g'; the entry too, unless keep (quorum, between attempts). */
inline giveback(s, c, keep)
{
	t_x = srv[s].hk[c];
	if
	:: !keep -> unlist(s, c)
	:: else
	fi;
	if
	:: t_x != 0 && srv[s].ha[c] != A_OLD ->
		drop_hold(s, c); t_r = 1;
		if
		:: NS == 1 -> hand_over(s, t_x == L, t_x)
		:: else
		fi
	:: else -> t_r = 0
	fi;
	server_ok(s)
}

/* extend.lua (new): the token's own hold, whatever its kind. */
inline extend(s, c)
{
	if
	:: srv[s].hk[c] != 0 && srv[s].ha[c] != A_G -> srv[s].hr[c] = 1; t_r = 1;
#if defined(REPLACE) && !defined(SAB_RDEAF)
		/* the reply says who asked the hold to stop (qh, qp), if
		 * anyone did: 2 here.  (-DSAB_RDEAF, a sabotage: it does
		 * not say) */
		if
		:: srv[s].qh[c] -> t_r = 2
		:: else
		fi
#else
		skip
#endif
	:: else -> t_r = 0
	fi
}
#endif

/* ======================================================= the client */

/* One server: a client's request, its script and what the client makes of
 * the reply are one atomic sequence (nothing else can tell the steps apart
 * but time, which the faults and env's TTL model); several servers: each
 * script is a step of its own, other clients' steps between. */
/* QLIVE too: there, one client's attempt on the servers is not cut by
 * another's (two attempts that split the servers between them and both
 * give back, for ever, is the livelock that lock.c's jitter breaks, with
 * probability 1; weak fairness cannot say so). */
#if NS == 1 || defined(QLIVE)
#define BEGIN	atomic {
#define END	}
#else
#define BEGIN	if :: true ->
#define END	fi
#endif

/* Mutual exclusion and capacity, among the clients that believe they hold:
 * exclusive alone, readers never with a writer (nor a semaphore), at most
 * LIM in a semaphore.  Checked when a belief starts. */
inline check_mutex(c)
{
#ifdef P_MUTEX
	t_m = 0; t_d = 0;
	do
	:: t_d < NC ->
		if
		:: t_d != c && bel[t_d] != 0 ->
			assert(bel[c] != X && bel[t_d] != X);
			assert(bel[c] == bel[t_d]);
			t_m++
		:: else
		fi;
		t_d++
	:: else -> break
	od;
	assert(bel[c] != L || t_m < LIM)
#else
	skip
#endif
}

/* An attempt that went out behind a BLPOP on every server of a quorum
 * (wk, lock.c try_acquire after a wait): a server that has not answered
 * when the others have settled the round (its BLPOP blocking, or its
 * script under way) is given up, its connection closed, and counted busy
 * (bl, quorum.h's blocked); its script runs or not, unheard.  Not a fault:
 * no budget.  (Not in the liveness configurations, where a server given
 * up for ever would be a wake that never comes.) */
#if defined(QUORUM) && !defined(LIVE)
#ifdef LATE
#define PENDING(i)	late[c] = late[c] | BIT(i); lk[c] = k; lf[c] = fifo; lw[c] = wt
#else
#define PENDING(i)	skip
#endif
#define BLOCKED(STEP, OP)						\
	:: d_step { OP == 0 && wk && i < NS && !srv[i].down ->		\
		no = no | BIT(i); bl = bl | BIT(i); PENDING(i);		\
		printf("  (s%d blocked: given up)\n", i); i++ }		\
	:: d_step { OP == 0 && wk && i < NS && !srv[i].down ->		\
		STEP(i, c); HEARD(i, OP); no = no | BIT(i);		\
		bl = bl | BIT(i);					\
		printf("  (s%d blocked: given up as it ran)\n", i); i++ }
#define WOKEN	wk = 1
#else
#define BLOCKED(STEP, OP)
#define WOKEN	skip
#endif

/* One request to every server, each run there as one step, in order; a
 * server down or a request lost runs nothing, a reply lost or late leaves
 * the script run but unanswered.  yes/no: who answered 1/0; rf: where it
 * ran and refreshed the token's hold; us: a usage refusal. */
#define SERVE(STEP, OP)							\
	skip;								\
	do								\
	:: d_step { i < NS && srv[i].down -> i++ }			\
	BLOCKED(STEP, OP)						\
	:: d_step { i < NS && !srv[i].down -> STEP(i, c); ANSWER(i, OP); i++ }	\
	:: d_step { i < NS && !srv[i].down && faults > 0 ->		\
		faults--; STEP(i, c); HEARD(i, OP);			\
		printf("  (reply from s%d lost)\n", i); i++ }		\
	:: d_step { i < NS && !srv[i].down && faults > 0 ->		\
		faults--; printf("  (request to s%d lost)\n", i); i++ }	\
	:: d_step { i == NS -> i = 0 } -> break			\
	od;								\
	skip

/* What the client hears of step STEP on server i (t_r): acquire's R_*
 * (OP 0), or 1/0 for the others.  HEARD: the script ran, its reply was
 * not heard. */
#define ANSWER(i, OP)							\
	if								\
	:: OP == 0 && (t_r == R_KEEP || t_r == R_NEW || t_r == R_UP) ->	\
		yes = yes | BIT(i); rf = rf | BIT(i); UNLATE(i, c);	\
		if :: t_f > f -> f = t_f :: else fi;			\
		if :: srv[i].hs[c] < mh -> mh = srv[i].hs[c] :: else fi	\
	:: OP == 0 && (t_r == R_BUSYH || t_r == R_BUSYW) -> no = no | BIT(i)	\
	:: OP == 0 && (t_r == R_USAGE || t_r == R_DEADLK) -> us = 1	\
	:: OP == 0 && t_r == R_SUPER -> sp = 1				\
	:: OP != 0 && t_r == 1 -> yes = yes | BIT(i); rf = rf | BIT(i);	\
		UNLATE(i, c)						\
	:: OP == 2 && t_r == 2 -> yes = yes | BIT(i); rf = rf | BIT(i);	\
		UNLATE(i, c); STOP_HEARD				\
	:: OP != 0 && t_r == 0 -> no = no | BIT(i)			\
	:: else								\
	fi;								\
	printf("  c%d op %d on s%d: %d\n", c, OP, i, t_r);		\
	t_r = 0; t_f = 0
#define HEARD(i, OP)							\
	if								\
	:: (OP == 0 && (t_r == R_KEEP || t_r == R_NEW || t_r == R_UP)) ||	\
	    (OP != 0 && t_r != 0) -> rf = rf | BIT(i)			\
	:: else								\
	fi;								\
	t_r = 0; t_f = 0

/* heartbeat.c, keeper.c: an extend's reply that names who asked the
 * holder to stop (exec --replace) */
#ifdef REPLACE
#define STOP_HEARD	rq = 1
#else
#define STOP_HEARD	skip
#endif

/* A release's had: where the token surely held (its TTL not passed) when
 * the script ran (-DLATE: a hold the client took, not a late script's). */
#define REL(i, c)	had = had | (srv[i].hk[c] != 0 && srv[i].hr[c] &&	\
			    HEARD_HOLD(i, c) -> BIT(i) : 0); release(i, c);	\
			TR_OP(i, c, 1)
#ifdef NEWEST
/* acquire.lua: a superseded waiter's attempt finds its mark, which stays
 * until its give-back (or its lease ends): an attempt sent again after a
 * lost reply is told the same.  -DTAKE_MARK: the script before, whose
 * answer took the mark away (P_SUPER breaks: the retry is listed anew). */
#ifdef TAKE_MARK
#define MARK_READ(i, c)	srv[i].sp[c] = 0
#else
#define MARK_READ(i, c)	skip
#endif
#define ACQ(i, c)	if						\
			:: srv[i].sp[c] -> MARK_READ(i, c); t_r = R_SUPER	\
			:: else -> acquire(i, c)				\
			fi; TR_OP(i, c, 0)
#else
#define ACQ(i, c)	acquire(i, c); TR_OP(i, c, 0)
#endif
#define EXT(i, c)	extend(i, c); TR_OP(i, c, 2)
#define GIVE(i, c)	giveback(i, c, keep); TR_OP(i, c, 3)

proctype client(byte c)
{
	byte	k, fifo, wt, up, runs, i, tries;
	byte	yes, no, rf, had, won, f, mh, bl;
	bit	us, keep, rerr, upg, rv, wk, sp;
#ifdef REPLACE
	byte	rp;		/* 0, 1 --replace, 2 --no-replace */
	bit	rq;		/* an extend said: asked to stop */
#endif

#ifdef LIVE
	runs = 255;
#else
	runs = RUNS;
#endif
#ifdef TWO
	if :: c == 2 -> runs = 0 :: else fi;
#endif
idle:
	/* A new run (lock_acquire): what it asks is the configuration's. */
	atomic {
	if
	:: runs == 0 -> goto done
	:: else
	fi;
#ifndef LIVE
	runs--;
#endif
#if !defined(LIVE)
	/* The client's role (check.sh: -DKSn kinds, -DFSn fifo, -DWSn
	 * waits, as bit sets): one of them, at random. */
	if
	:: (ROLE(KS, c) & 2) -> k = X
	:: (ROLE(KS, c) & 4) -> k = S
	:: (ROLE(KS, c) & 8) -> k = L
	fi;
	if
	:: (ROLE(FS, c) & 1) -> fifo = 0
	:: (ROLE(FS, c) & 2) -> fifo = 1
	fi;
	if
	:: (ROLE(WS, c) & 1) -> wt = 0
	:: (ROLE(WS, c) & 2) -> wt = 1
	fi;
	/* lock.c acquire_args: --fifo goes to the script only with a wait
	 * (the model kept it with -n, deferring where the script does not,
	 * until the conformance check found it, conform.py) */
	if
	:: wt == 0 -> fifo = 0
	:: else
	fi;
#ifdef REPLACE
	/* -DRSn: 1 neither, 2 --replace (plain, with a wait: exec refuses
	 * it else), 4 --no-replace (plain) */
	if
	:: (ROLE(RS, c) & 1) -> rp = 0
	:: (ROLE(RS, c) & 2) && k == X && wt != 0 -> rp = 1
	:: (ROLE(RS, c) & 4) && k == X -> rp = 2
	:: else -> rp = 0
	fi;
#endif
#endif
#ifdef FIFO
	if
	:: c < 2 -> k = X; fifo = 1; wt = 2
	:: else -> wt = 2; fifo = 0; runs = 0;	/* one run, waits without bound */
		if :: k = S :: k = X fi
	fi;
#endif
#ifdef QLIVE
	if
	:: c < 2 -> k = S; wt = 2
	:: else -> k = X; wt = 2; runs = 0
	fi;
#endif
#ifdef PLIVE
	/* every client a plain writer with --pending 1, waiting without
	 * bound; c0 and c1 loop, c2 runs once */
	k = X; fifo = 0; wt = 2;
	if
	:: c == 2 -> runs = 0
	:: else
	fi;
#endif
#ifdef RLIVE
	/* c0 and c1 plain writers that loop, and may hold for ever (they
	 * extend, unless asked to stop); c2 a newcomer with --replace,
	 * once, waiting without bound */
	k = X; fifo = 0; wt = 2;
	if
	:: c == 2 -> runs = 0; rp = 1
	:: else -> rp = 0
	fi;
#endif
#ifdef UPLIVE
	/* c0 and c2 read once, and each may then upgrade; c1 stays out */
	if
	:: c == 1 -> goto done
	:: else -> k = S; wt = 2; fifo = 0; runs = 0
	fi;
#endif
	};
start: skip;
	/* A run's id is new: the token's holds are an earlier run's now. */
	d_step {
		printf("c%d: run: kind %d fifo %d wait %d up %d\n", c, k,
		    fifo, wt, up);
		TR_RUN(c);
#ifndef ONE_ORDER
		/* (read by the old rules and -DPRE48 only) */
		t_d = 0;
		do
		:: t_d < NC ->
			if
			:: rk[t_d] > rk[c] -> rk[t_d]--
			:: else
			fi;
			t_d++
		:: else -> break
		od;
		rk[c] = NC - 1;
#endif
		t_d = 0;
		do
		:: t_d < NS ->
			if
			:: srv[t_d].hk[c] != 0 && bel[c] == 0 ->
				/* a finished run's hold (its release lost): in
				 * rlock a run has a token of its own, so this
				 * one's attempts never find it theirs; it ends
				 * with its TTL, here at once (finite: the same
				 * for liveness, and no hold less is never less
				 * safe) */
				drop_hold(t_d, c);
				TR_EV(3, t_d, c)
			:: srv[t_d].hk[c] != 0 && bel[c] != 0 &&
			    srv[t_d].ha[c] == A_RUN ->
				/* held on (acquire --token again, the upgrade):
				 * an earlier run's */
				srv[t_d].ha[c] = A_OLD
			:: else
			fi;
#ifdef NEWEST
			/* a finished run's mark (its give-back lost): the new
			 * run's token is another (conform.py takes it away) */
			srv[t_d].sp[c] = 0;
#endif
			t_d++
		:: else -> break
		od;
#ifdef NEWEST
		gone[c] = 0;
#endif
		inrun[c] = 1
	};
attempt: skip;
#ifdef EVERY
	/* acquire.lua with exec --every: the start is refused (its schedule
	 * is paused: rlock schedule pause, at any attempt; or its slot's run
	 * has started, and counts: a slot the run fired in, by the server's
	 * clock at its first attempt, which the model does not have, so at any
	 * attempt but its own run's after it recorded the start: the same
	 * nondeterministic choice) whatever holds the name; on a server where
	 * the caller was listed its entry goes, and lock.c gives back, on every
	 * server, what the run may hold (a hand-over's grant, a quorum's
	 * partial win) and its places among the waiters, then ends the run: a
	 * give-back, which removes the entries as the refusal does. */
	if
	:: k == X && !up -> goto giveup
	:: skip
	fi;
#endif
	/* lock.c try_acquire(): acquire.lua on every server. */
	BEGIN
	d_step { fresh[c] = 1; mh = 255;
#if defined(TRIES) && !defined(LIVE)
		tries++
#endif
	};
	SERVE(ACQ, 0);
	/* Its outcome (try_acquire after the replies), judged in one step
	 * with the validity left (env may end it between any two steps). */
#define GRANTED	(!us && POP(yes) >= MAJ && fresh[c])
#define ANSWERS	POP(yes | no)
#define RESET	yes = 0; no = 0; rf = 0; f = 0; mh = 0; bl = 0; wk = 0; sp = 0
	if
	:: d_step { us ->
		/* mixed_limit: a usage error, nothing given back */
		printf("c%d: usage error\n", c); us = 0; RESET };
		goto endrun
	:: d_step { GRANTED ->
#ifndef OLD
			/* a server given up unanswered after a wait may hold
			 * it: won, as far as the loss rule goes, until it says
			 * "not the holder" */
			won = yes | bl;
#endif
			/* lock.c align_fences: winners raised to the greatest */
			i = 0;
			do
			:: i < NS ->
				if
				:: (yes & BIT(i)) && srv[i].fc < f -> srv[i].fc = f
				:: else
				fi;
				if
				:: (yes & BIT(i)) -> srv[i].hf[c] = f
				:: else
				fi;
				i++
			:: else -> i = 0; break
			od;
			/* holds this run did not refresh may go before the
			 * validity it starts */
			i = 0;
			do
			:: i < NS ->
				if
				:: !(rf & BIT(i)) -> srv[i].hr[c] = 0
				:: else
				fi;
				i++
			:: else -> i = 0; break
			od;
			bel[c] = (up -> X : k); belf[c] = f;
			printf("c%d: HOLDS kind %d fence %d\n", c, bel[c], f);
			check_mutex(c);
#ifdef P_SUPER
			/* a superseded waiter never runs its command */
			assert(!gone[c]);
#endif
#ifdef PLIVE
			if
			:: nw == c -> nw = NC
			:: else
			fi;
#endif
#ifdef P_FENCE
			/* fences rise: above every belief that ended before
			 * all the holds counted were created */
			assert(f > mh);
#endif
			inrun[c] = 0; up = 0; fresh[c] = 0; RESET
		};
		goto hold
	:: d_step { sp && !us && !GRANTED ->
		/* lock.c: superseded (--pending): a give-back everywhere, and
		 * the run ends without its command */
		printf("c%d: superseded\n", c); RESET };
		goto giveup
	:: d_step { !sp && !us && !GRANTED && ANSWERS < MAJ ->
		/* an error (too few answers): ride_through tries again, or
		 * the caller gives back what may be held */
		printf("c%d: no majority answered\n", c); RESET };
		if
#if defined(TRIES) && !defined(LIVE)
		:: tries < TRIES -> goto attempt
		:: tries >= TRIES -> goto giveup
#else
		:: goto attempt
#endif
		:: wt != 2 -> goto giveup
		fi
	:: d_step { !sp && !us && !GRANTED && ANSWERS >= MAJ &&
	    (yes != 0 || ANSWERS < NS || bl != 0) ->
		/* busy, or granted too late: give back what was taken, on
		 * every server (lock.c undo_partial; a server given up
		 * unanswered after a wait is one that may have taken it) */
		printf("c%d: busy, partial or late: give back\n", c); RESET;
		keep = (wt != 0) };
		SERVE(GIVE, 3);
		d_step { RESET; keep = 0 };
		if
		:: wt == 0 -> goto endrun
		:: else -> goto waiting
		fi
	:: d_step { !sp && !us && !GRANTED && ANSWERS >= MAJ &&
	    !(yes != 0 || ANSWERS < NS || bl != 0) ->
		printf("c%d: busy\n", c); RESET };
		if
		:: wt == 0 -> goto endrun
		:: else -> goto waiting
		fi
	fi
	END;
waiting:
	/* Between attempts: try again (woken, or the lock's PTTL), or the
	 * wait runs out (-w), or the client dies. */
	if
#if defined(TRIES) && !defined(LIVE)
	/* (a bound of the model: TRIES attempts a run, then -w runs out) */
	:: tries < TRIES -> WOKEN; goto attempt
	:: tries >= TRIES -> goto giveup
#else
	:: WOKEN; goto attempt
#endif
	:: wt == 1 -> goto giveup
#ifdef LIVE
	CRASH_C2
#else
	CRASH
#endif
	fi;
giveup: skip;
	/* lock_unlist / a give-back of the run: lock_release(NULL). */
	BEGIN
	keep = 0;
	SERVE(GIVE, 3);
	d_step { yes = 0; no = 0; rf = 0 }
	END;
endrun: skip;
	d_step { inrun[c] = 0; fresh[c] = 0; tries = 0 };
	if
	:: up -> up = 0; goto hold	/* a failed upgrade: still a reader */
	:: else -> goto idle
	fi;
hold:
	/* The holder: extend (keeper, exec's heartbeat), release, upgrade
	 * (a reader asks exclusively: rlock(7)), or die.  A holder whose
	 * validity ran out (bel cleared by env) stops and releases. */
	if
	:: bel[c] == 0 -> goto rel
	:: bel[c] != 0 -> goto rel
#if (!defined(LIVE) && (NS > 1 || defined(TRACE))) || defined(REPLACE)
	/* (one server: -DTRACE only, so that the conformance check replays
	 * extend.lua too; its outcome there is the release's; and REPLACE,
	 * where its reply may ask the holder to stop) */
	:: bel[c] != 0 -> goto ext
#endif
#ifndef LIVE
	:: bel[c] == S && !upg && (ROLE(UP, c) & 1) ->
		/* (one upgrade a client, beside its runs) */
		upg = 1; up = 1; k = X; wt = 1; fifo = 0; goto start
	CRASH
#else
#ifdef UPLIVE
	:: bel[c] == S && !upg ->
		/* an upgrade that waits without bound */
		upg = 1; up = 1; k = X; wt = 2; fifo = 0; goto start
#endif
	CRASH_C2
#endif
	fi;
ext: skip;
	SERVE(EXT, 2);
	if
	:: d_step { bel[c] == 0 -> skip }	/* its validity ended meanwhile */
	:: d_step { bel[c] != 0 ->
#ifdef OLD
			/* lock_extend: -1 when fewer than a majority
			 * answered; 0 (lost) when fewer said yes */
			if
			:: POP(yes | no) >= MAJ && POP(yes) < MAJ -> t_b = 1
			:: else -> t_b = 0
			fi;
#else
			/* lost only when the servers won that could still
			 * hold it are fewer than a majority */
			won = (won & ~no) | yes;
			t_b = POP(won) < MAJ;
#endif
			if
			:: t_b ->
				printf("c%d: extend says LOST\n", c);
#ifdef P_LOSS
				t_m = 0; i = 0;
				do
				:: i < NS ->
					if
					:: srv[i].hk[c] != 0 && srv[i].hr[c] &&
					    HEARD_HOLD(i, c) -> t_m++
					:: else
					fi;
					i++
				:: else -> i = 0; break
				od;
				assert(t_m < MAJ);
#endif
				end_belief(c)
			:: !t_b && POP(yes) >= MAJ ->
				/* extended: a validity anew, which a hold
				 * not refreshed may not cover */
				i = 0;
				do
				:: i < NS ->
					if
					:: !(rf & BIT(i)) -> srv[i].hr[c] = 0
					:: else
					fi;
					i++
				:: else -> i = 0; break
				od
			:: else
			fi;
			yes = 0; no = 0; rf = 0
		}
	fi;
	d_step { yes = 0; no = 0; rf = 0 };
#ifdef REPLACE
	/* asked to stop: its rlock stops the command (the --on-lost
	 * signal, SIGKILL after --kill-after, every process of it: its
	 * belief ends), then releases (exits 37) */
	if
	:: rq -> rq = 0; goto rel
	:: else
	fi;
#endif
	goto hold;
rel: skip;
	/* exec's end, rlock release, the keeper: the command has ended. */
	/* rv: it held in its own view as it released (else its validity
	 * had run out: it stopped as a loss already) */
	d_step { printf("c%d: release\n", c); rv = (bel[c] != 0);
	    RL(c, rv); end_belief(c); had = 0 };
again: skip;
	BEGIN
	SERVE(REL, 1);
	d_step {
#ifdef OLD
		/* lock_release: -1 below a majority of answers, else
		 * released when a majority said 1, else lost */
		if
		:: POP(yes | no) < MAJ -> rerr = 1; t_b = 0
		:: else -> rerr = 0; t_b = POP(yes) < MAJ
		fi;
#else
		/* lost only when the servers won that could still hold it
		 * (won less those that said "not the holder") are fewer than
		 * a majority; no answer is "unknown", settled, never lost */
#ifdef FIX_REL
		/* proposed: a server that says it released counts as
		 * holding, won or not (a reply to the acquire lost) */
		rerr = 0; t_b = POP((won & ~no) | yes) < MAJ;
#else
		rerr = 0; t_b = POP(won & ~no) < MAJ;
#endif
#endif
		if
		:: t_b ->
			printf("c%d: release says LOST\n", c);
#ifdef P_LOSS
			/* never when a majority held it as the release ran
			 * (or still holds it) */
			t_m = 0; i = 0;
			do
			:: i < NS ->
				if
				:: (had & BIT(i)) || srv[i].hk[c] != 0 &&
				    srv[i].hr[c] && HEARD_HOLD(i, c) -> t_m++
				:: else
				fi;
				i++
			:: else -> i = 0; break
			od;
			assert(!rv || t_m < MAJ)
#endif
		:: else
		fi;
		yes = 0; no = 0; rf = 0; t_b = 0
	};
	if
	:: rerr -> rerr = 0;
		/* "failed": the keeper sends it again, or gives up */
		if
		:: goto again
		:: skip
		fi
	:: else
	fi;
	d_step { had = 0; won = 0; rerr = 0; rv = 0; RL(c, 0) }
	END;
	goto idle;
crash: skip;
	d_step {
		printf("c%d: CRASH\n", c);
		TR_EV(4, 0, c);
		end_belief(c); dead[c] = 1; inrun[c] = 0; fresh[c] = 0;
		k = 0; fifo = 0; wt = 0; up = 0; runs = 0; won = 0
	};
done:
	skip
}

/* ================================================== the environment */

/* Time passes for client c: the TTL of its holds from before (and its
 * validity) may have run out.  In a liveness configuration an alive
 * holder's or waiter's time runs out only as a fault. */
#ifdef LIVE
#define TTL_OK(c)	((dead[c] || !(bel[c] || inrun[c] || RELEASING(c))) || \
			    faults > 0)
#define TTL_FAULT(c)	if :: !(dead[c] || !(bel[c] || inrun[c] || RELEASING(c))) -> \
			    faults-- :: else fi
#else
/* An attempt under way outlived by its TTL (a grant that comes too late,
 * lock.c's LATE_MAX) is a fault too: else late grants would take fresh
 * fences for ever. */
#define TTL_OK(c)	(!(fresh[c] && !bel[c]) || faults > 0)
#define TTL_FAULT(c)	if :: fresh[c] && !bel[c] -> faults-- :: else fi
#endif
#define TTL(c)								\
	:: d_step { (bel[c] || fresh[c] || srv[0].hr[c] ||			\
	    (NS > 1 && (srv[NS-1].hr[c] || srv[NS/2].hr[c]))) && TTL_OK(c) ->	\
								\
			TTL_FAULT(c);					\
			printf("env: c%d's TTL passes\n", c);		\
			end_belief(c); fresh[c] = 0;			\
			t_d = 0;					\
			do						\
			:: t_d < NS ->					\
				srv[t_d].hr[c] = 0;			\
				srv[t_d].mpin = srv[t_d].mpin & ~BIT(c);	\
				t_d++					\
			:: else -> t_d = 0; break			\
			od						\
		}

/* A hold expires once its TTL passed; a grant once the waiter's lease did. */
#define EXPIRE(s, c)							\
	:: d_step { srv[s].hk[c] != 0 &&						\
	    (srv[s].ha[c] == A_G -> !lv[c] : !srv[s].hr[c]) ->		\
		 printf("env: c%d's hold on s%d expires\n", c, s);	\
		    drop_hold(s, c); TR_EV(1, s, c) }

/* A waiter's lease lapses: it died, or its run ended (its entry, if a
 * give-back missed it), or (a fault) it did not renew in time. */
#ifdef LIVE
#define LAPSE_OK(c)	(dead[c] || !inrun[c])
#else
#define LAPSE_OK(c)	(dead[c] || !inrun[c] || faults > 0)
#endif
/* A waiter whose lease lapsed while it waits (a fault) is forgotten, and
 * comes back as a new one: its mark may lapse too (P_SUPER speaks of a
 * waiter the server remembers). */
#ifdef NEWEST
#define LAPSE_FORGET(c)	if :: !(dead[c] || !inrun[c]) -> gone[c] = 0 :: else fi
#else
#define LAPSE_FORGET(c)	skip
#endif
#define LAPSE(c)							\
	:: d_step { lv[c] && LAPSE_OK(c) ->					\
								\
			if						\
			:: !(dead[c] || !inrun[c]) -> faults--		\
			:: else						\
			fi;						\
			printf("env: c%d's waiter lease lapses\n", c);	\
			LAPSE_FORGET(c);				\
			lv[c] = 0					\
		}
#ifdef NEWEST
#define LISTED(s, c)	(srv[s].wk[c] != 0 || srv[s].sp[c])	/* a mark too */
#else
#define LISTED(s, c)	(srv[s].wk[c] != 0)
#endif
#define ENTRY(s, c)							\
	:: d_step { LISTED(s, c) && !lv[c] ->				\
		 printf("env: c%d's entry on s%d lapses\n", c, s);	\
		    unlist(s, c); TR_EV(2, s, c) }

/* old: the mark expires at its PTTL, never below a holder's TTL. */
#define MARK(s)								\
	:: d_step { srv[s].mk != 0 && srv[s].mpin == 0 &&				\
	    srv[s].hk[0] != S && srv[s].hk[0] != L &&			\
	    srv[s].hk[1] != S && srv[s].hk[1] != L &&			\
	    srv[s].hk[2] != S && srv[s].hk[2] != L ->			\
		 printf("env: the mark on s%d expires\n", s);	\
		    srv[s].mk = 0 }

#define DOWN(s)								\
	:: d_step { downs > 0 && !srv[s].down ->					\
		 printf("env: s%d goes down\n", s);		\
		    downs--; srv[s].down = 1 }

/* -DLATE: client cc's given-up script on s runs now, as acquire.lua with
 * what it asked, unheard; or the server sees the connection close first,
 * and it never runs. */
#ifdef LATE
#define LATE_RUN(s, cc)							\
	:: d_step { (late[cc] & BIT(s)) && !srv[s].down ->		\
		late[cc] = late[cc] & ~BIT(s);				\
		k = lk[cc]; fifo = lf[cc]; wt = lw[cc];			\
		printf("env: c%d's given-up script runs late on s%d\n", cc, s); \
		acquire(s, cc);						\
		if							\
		:: t_r == R_NEW -> srv[s].hl[cc] = 1			\
		:: else							\
		fi;							\
		printf("  c%d op 0 on s%d: %d (unheard)\n", cc, s, t_r);	\
		t_r = 0; t_f = 0; k = 0; fifo = 0; wt = 0 }		\
	:: d_step { (late[cc] & BIT(s)) ->				\
		late[cc] = late[cc] & ~BIT(s);				\
		printf("env: c%d's given-up script on s%d never runs\n", cc, s) }
#define PER_LATE(s)	LATE_RUN(s, 0) LATE_RUN(s, 1) LATE_RUN(s, 2)
#else
#define PER_LATE(s)
#endif

#define PER_S(s)							\
	EXPIRE(s, 0) EXPIRE(s, 1) EXPIRE(s, 2)				\
	ENTRY(s, 0) ENTRY(s, 1) ENTRY(s, 2)				\
	PER_LATE(s)

proctype env()
{
#ifdef LATE
	byte	k, fifo, wt;	/* a late script's ask (LATE_RUN) */
#endif
end_env:
	do
	TTL(0) TTL(1) TTL(2)
	LAPSE(0) LAPSE(1) LAPSE(2)
	PER_S(0)
#if NS > 1
	PER_S(1) PER_S(2)
	DOWN(0) DOWN(1) DOWN(2)
#endif
#ifdef OLD
	MARK(0)
#if NS > 1
	MARK(1) MARK(2)
#endif
#endif
	od
}

init
{
	atomic {
		rk[0] = 0; rk[1] = 1; rk[2] = 2;
#ifdef QLIVE
		srv[2].down = 1;		/* the third server is down */
#endif
		run env();
		run client(0); run client(1); run client(2)
	}
}
