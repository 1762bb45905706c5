/* output.c: the text and JSON forms of what the commands print. */

/*
 * Everything goes through a struct buf and leaves in one write, so a
 * failed write (a full disk, a closed pipe) is seen and reported by the
 * caller, which can then give the lock back.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "output.h"

static void
json_str_or_null(struct buf *b, const char *s)
{
	if (s == NULL || *s == '\0')
		buf_adds(b, "null");
	else
		json_string(b, s, strlen(s));
}

static const char *
or_unknown(const char *s)
{
	return s != NULL && *s != '\0' ? s : "?";
}

static const char *const node_state[] = {
	[NODE_FREE] = "free",
	[NODE_HOLDS] = "holds it",
	[NODE_OTHER] = "holds another token",
	[NODE_UNREACHABLE] = "unreachable",
};

static const char *const node_state_json[] = {
	[NODE_FREE] = "free",
	[NODE_HOLDS] = "holds",
	[NODE_OTHER] = "other",
	[NODE_UNREACHABLE] = "unreachable",
};

/* Quorum mode: one indented line per server. */
static void
nodes_text(struct buf *b, const struct lock_status *st)
{
	int	i;

	for (i = 0; i < st->nservers; i++) {
		buf_printf(b, "  %s: %s", st->nodes[i].url,
		    node_state[st->nodes[i].state]);
		if (st->nodes[i].error != NULL && *st->nodes[i].error != '\0')
			buf_printf(b, " (%s)", st->nodes[i].error);
		buf_adds(b, "\n");
	}
}

static void
nodes_json(struct buf *b, const struct lock_status *st)
{
	const char	*err;
	int		 i;

	if (st->nservers == 0)
		return;
	buf_adds(b, ",\"servers\":[");
	for (i = 0; i < st->nservers; i++) {
		buf_adds(b, i ? ",{\"url\":" : "{\"url\":");
		json_string(b, st->nodes[i].url, strlen(st->nodes[i].url));
		buf_printf(b, ",\"state\":\"%s\"",
		    node_state_json[st->nodes[i].state]);
		if ((err = st->nodes[i].error) != NULL && *err != '\0') {
			buf_adds(b, ",\"error\":");
			json_string(b, err, strlen(err));
		}
		buf_adds(b, "}");
	}
	buf_adds(b, "]");
}

void
output_status_text(struct buf *b, const struct lock_status *st)
{
	char	held[32], left[32];

	buf_printf(b, "%s: ", st->name);
	if (!st->held) {
		buf_adds(b, "free");
		if (st->last_fence > 0)
			buf_printf(b, ", last fence %lld", st->last_fence);
		buf_adds(b, "\n");
		nodes_text(b, st);
		return;
	}
	buf_printf(b, "held by %s@%s pid %lld", or_unknown(st->user),
	    or_unknown(st->host), st->pid);
	if (st->command != NULL && *st->command != '\0')
		buf_printf(b, " (%s)", st->command);
	if (st->acquired_ms > 0)
		buf_printf(b, " for %s", duration_format(st->now_ms -
		    st->acquired_ms, held, sizeof held));
	if (st->pttl_ms >= 0)
		buf_printf(b, ", expires in %s",
		    duration_format(st->pttl_ms, left, sizeof left));
	else
		buf_adds(b, ", never expires");
	buf_printf(b, ", fence %lld", st->fence);
	if (st->nservers > 0)
		buf_printf(b, " (on %d of %d servers)", st->nholding,
		    st->nservers);
	buf_adds(b, "\n");
	nodes_text(b, st);
}

void
output_status_json(struct buf *b, const struct lock_status *st)
{
	buf_adds(b, "{\"name\":");
	json_string(b, st->name, strlen(st->name));
	if (!st->held) {
		buf_printf(b, ",\"held\":false,\"fence\":%lld", st->last_fence);
		nodes_json(b, st);
		buf_adds(b, "}");
		return;
	}
	buf_adds(b, ",\"held\":true,\"host\":");
	json_str_or_null(b, st->host);
	buf_printf(b, ",\"pid\":%lld,\"user\":", st->pid);
	json_str_or_null(b, st->user);
	buf_adds(b, ",\"command\":");
	json_str_or_null(b, st->command);
	buf_printf(b, ",\"acquired_ms\":%lld,\"held_ms\":%lld,"
	    "\"expires_in_ms\":%lld,\"ttl_ms\":%lld,\"fence\":%lld",
	    st->acquired_ms, st->acquired_ms > 0 ?
	    st->now_ms - st->acquired_ms : 0, st->pttl_ms, st->ttl_ms,
	    st->fence);
	nodes_json(b, st);
	buf_adds(b, "}");
}

void
output_acquire_json(struct buf *b, const struct lock *l)
{
	buf_adds(b, "{\"name\":");
	json_string(b, l->name, strlen(l->name));
	buf_adds(b, ",\"token\":");
	json_string(b, l->token, strlen(l->token));
	buf_printf(b, ",\"fence\":%lld,\"ttl_ms\":%lld}\n", l->fence,
	    (long long)l->ttl_ms);
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

	buf_init(&b);
	buf_printf(&b, "rlock: waiting for %s: held by %s pid %lld", w->name,
	    w->host[0] != '\0' ? w->host : "?", w->pid);
	if (w->command[0] != '\0')
		buf_printf(&b, " (%.40s)", w->command);
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
