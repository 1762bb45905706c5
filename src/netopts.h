/* netopts.h: how rlock reaches its servers: time bounds, password, TLS. */
#ifndef RLOCK_NETOPTS_H
#define RLOCK_NETOPTS_H

#include <stdint.h>

/* TLS settings for rediss:// and rediss-sentinel:// URLs. */
struct tls_opts {
	const char	*ca;		/* CA file; NULL: the system store */
	const char	*cert;		/* client certificate (chain) */
	const char	*key;		/* its private key */
	const char	*server_name;	/* checked instead of the URL's host */
	int		 insecure;	/* do not verify the server at all */
};

/* What every connection to a server is made with; outlives them all. */
struct redis_opts {
	int64_t		 connect_timeout_ms;	/* TCP + TLS + AUTH/SELECT */
	int64_t		 timeout_ms;		/* one round trip */
	const char	*password;		/* when the URL has none */
	const struct tls_opts *tls;		/* for rediss:// */
	/*
	 * What the sentinels of a redis-sentinel:// URL are authenticated
	 * with (AUTH [user] password before asking them), when they have
	 * credentials of their own; NULL: none are sent unless a sentinel
	 * answers NOAUTH, then the master's (the URL's userinfo, else
	 * password above), as before these existed.
	 */
	const char	*sentinel_user;
	const char	*sentinel_password;
	int		 identify;	/* learn each server's run_id */
	int		 check_version;	/* INFO only to refuse a server < 6.0 */
	/*
	 * Messages may offer -w against a failover or a reshard: set while
	 * the command takes -w and has yet to acquire (cmd.c, cmd-acquire.c,
	 * cmd-exec.c).
	 */
	int		 offer_wait;
	/*
	 * The command's end (CLOCK_MONOTONIC ms; 0: none), while -w D runs
	 * (cmd_lock_acquire): no request outlasts it by more than a grace
	 * (redis_grace_ms), and one started after it, to give back or
	 * unlist, has only the grace.
	 */
	int64_t		 end_ms;
};

#endif
