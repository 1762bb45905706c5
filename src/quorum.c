/* quorum.c: send each lock operation to every server, gather the replies. */

/*
 * The contract: a request goes out on every connection before any reply
 * is read (each connection has its own deadline, fixed when it was sent),
 * so n servers cost one round trip.  A server that fails is remembered in
 * errs[] and reconnected on the next request; whether enough servers
 * answered is for lock.c to judge, since only it knows what the answers
 * mean.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quorum.h"
#include "util.h"

struct redis *
quorum_conn(struct quorum *q, int i, struct err *e)
{
	if (q->conn[i] != NULL && redis_broken(q->conn[i])) {
		redis_close(q->conn[i]);
		q->conn[i] = NULL;
	}
	if (q->conn[i] == NULL) {
		q->conn[i] = redis_connect(&q->urls[i], q->opts, e);
		if (q->conn[i] == NULL)
			q->errs[i] = *e;
	}
	return q->conn[i];
}

int
quorum_open(struct quorum *q, const struct url *urls, int n,
    const struct redis_opts *opts, struct err *e)
{
	int	i, ok = 0, first = -1;

	q->n = n;
	q->urls = urls;
	q->opts = opts;
	q->conn = xcalloc(n, sizeof *q->conn);
	q->errs = xcalloc(n, sizeof *q->errs);
	/* TODO(quorum): connect in parallel when n > 1. */
	for (i = 0; i < n; i++) {
		if (quorum_conn(q, i, &q->errs[i]) != NULL)
			ok++;
		else if (first == -1)
			first = i;
		if (q->errs[i].kind == ERR_INTERRUPTED)
			break;
	}
	if (ok >= quorum_majority(q))
		return 0;
	*e = q->errs[first];
	return -1;
}

void
quorum_close(struct quorum *q)
{
	int	i;

	for (i = 0; i < q->n; i++)
		redis_close(q->conn[i]);
	free(q->conn);
	free(q->errs);
	q->conn = NULL;
	q->errs = NULL;
}

int
quorum_script(struct quorum *q, struct script *s, int nkeys, const char **keys,
    int nargs, const char **args, struct redis_reply **replies, struct err *e)
{
	struct redis	*r;
	int		 i, ok = 0, first = -1, *sent;

	sent = xcalloc(q->n, sizeof *sent);
	for (i = 0; i < q->n; i++) {
		replies[i] = NULL;
		err_clear(&q->errs[i]);
		if ((r = quorum_conn(q, i, &q->errs[i])) == NULL)
			continue;
		if (redis_send_script(r, s, nkeys, keys, nargs, args,
		    &q->errs[i]) == 0)
			sent[i] = 1;
	}
	for (i = 0; i < q->n; i++) {
		if (!sent[i])
			continue;
		if (redis_recv(q->conn[i], &replies[i], &q->errs[i]) == -1)
			continue;
		if (replies[i]->type == REDIS_T_ERROR) {
			redis_reply_error(q->conn[i], replies[i], "",
			    &q->errs[i]);
			redis_reply_free(replies[i]);
			replies[i] = NULL;
		}
	}
	free(sent);
	for (i = 0; i < q->n; i++) {
		if (replies[i] != NULL)
			ok++;
		else if (first == -1 || q->errs[i].kind == ERR_INTERRUPTED)
			first = i;
	}
	if (ok < quorum_majority(q))
		*e = q->errs[first];
	return ok;
}

int
quorum_wait(struct quorum *q, const char *key, int64_t timeout_ms,
    struct err *e)
{
	struct redis_reply	*rr;
	struct redis		*r;
	const char		*argv[3];
	char			 secs[32];
	int			 woken;

	/* TODO(quorum): block on every server and wake on the first. */
	if ((r = quorum_conn(q, 0, e)) == NULL)
		return -1;
	if (timeout_ms < 1)
		timeout_ms = 1;	/* BLPOP 0 would block forever */
	snprintf(secs, sizeof secs, "%lld.%03lld",
	    (long long)(timeout_ms / 1000), (long long)(timeout_ms % 1000));
	argv[0] = "BLPOP";
	argv[1] = key;
	argv[2] = secs;
	if (redis_send(r, 3, argv, NULL, timeout_ms, e) == -1 ||
	    redis_recv(r, &rr, e) == -1)
		return -1;
	if (rr->type == REDIS_T_ERROR) {
		redis_reply_error(r, rr, "", e);
		redis_reply_free(rr);
		return -1;
	}
	woken = rr->type == REDIS_T_ARRAY;
	redis_reply_free(rr);
	return woken;
}

void
quorum_free_replies(struct quorum *q, struct redis_reply **replies)
{
	int	i;

	for (i = 0; i < q->n; i++) {
		redis_reply_free(replies[i]);
		replies[i] = NULL;
	}
}
