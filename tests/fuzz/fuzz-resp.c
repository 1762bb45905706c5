/*
 * fuzz-resp.c: libFuzzer target for what rlock makes of a server's reply:
 * arbitrary RESP, parsed as a reply and read as the answer of each script
 * (acquire/extend grant, inspect/force status), then printed as status.
 * redis_parse frames the bytes first, as the read loop does (a reply of
 * 64 MiB and 4,194,304 elements at most, numbers that fit): the corpus
 * has the hostile server's cases of tests/bounded.bats, and replies with
 * extreme integers, which must be clamped before any arithmetic.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "output.h"
#include "redis.h"
#include "util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct redis_reply	*r;
	struct lock_status	 st;
	struct output_status	 v;
	struct buf		 b;
	struct json		 j;
	long long		 fence = 0;

	if ((r = redis_parse((const char *)data, size)) == NULL)
		return 0;
	lock_reply_granted(r, &fence);
	memset(&st, 0, sizeof st);
	st.name = strdup("job");
	lock_reply_status(r, &st);
	/* As cmd-status.c fills it; a reply alone names no servers. */
	v = (struct output_status){
		.name = st.name, .held = st.held, .last_fence = st.last_fence,
		.host = st.host, .user = st.user, .command = st.command,
		.pid = st.pid, .acquired_ms = st.acquired_ms,
		.held_ms = st.acquired_ms > 0 ? st.now_ms - st.acquired_ms : 0,
		.expires_in_ms = st.pttl_ms, .ttl_ms = st.ttl_ms,
		.fence = st.fence,
	};
	buf_init(&b);
	output_status_text(&b, &v);
	json_open(&j, &b, 0);
	output_status_json(&j, &v);
	buf_free(&b);
	lock_status_free(&st);
	redis_reply_free(r);
	return 0;
}
