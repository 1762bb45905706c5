/* url.h: the Redis URLs rlock accepts. */
#ifndef RLOCK_URL_H
#define RLOCK_URL_H

#include <stddef.h>

enum url_scheme {
	URL_TCP,		/* redis://  */
	URL_TLS,		/* rediss:// */
	URL_UNIX,		/* unix://   */
	URL_SENTINEL,		/* redis-sentinel://, rediss-sentinel:// */
};

struct url_node {
	char		*host;
	int		 port;
};

struct url {
	enum url_scheme	 scheme;
	char		*host;		/* TCP/TLS: without IPv6 brackets */
	int		 port;		/* TCP/TLS: default 6379 */
	char		*path;		/* UNIX: socket path */
	char		*user;		/* percent-decoded; NULL if absent */
	char		*password;	/* percent-decoded; NULL if absent */
	int		 db;		/* -1 when the URL names none */
	char		*display;	/* for messages: never the password */
	/* SENTINEL: the sentinels to ask, and the master's name. */
	struct url_node	*sentinels;
	int		 nsentinels;
	char		*master;
	int		 tls;		/* rediss-sentinel://: TLS to all */
	/*
	 * TCP/TLS: the seed nodes of one Cluster, when the URL names several
	 * (redis://h1:7000,h2:7000/DB); host and port are the first.  0
	 * when it names one.
	 */
	struct url_node	*seeds;
	int		 nseeds;
};

/* The most seed nodes one URL may name. */
#define URL_MAX_SEEDS	16

/*
 * A copy of u pointing at another server (a sentinel's answer, a Cluster
 * redirection): same scheme family and credentials, new host and port;
 * rediss:// for a rediss:// or rediss-sentinel:// u, else redis://.
 */
void	url_retarget(struct url *dst, const struct url *u, const char *host,
	    int port);

/*
 * Parse
 *   redis://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/DB]
 *   rediss://...                          (same shape, TLS)
 *                                         (several HOSTs: seed nodes of
 *                                         one Cluster, see seeds)
 *   unix:///path/to/redis.sock[?db=N]
 *   redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/MASTER[?db=N]
 *                                         (sentinel port default 26379)
 *   rediss-sentinel://...                 (same shape, TLS to the sentinels
 *                                         and to the master they name)
 * IPv6 hosts come in brackets ("redis://[::1]:6380").  USER and PASSWORD
 * are percent-decoded.  DB is 0..2147483647.  display is built as
 * "redis://[USER@]HOST:PORT[/DB]" or "unix:///path[?db=N]" -- the password
 * never appears in it.  Returns 0, or -1 with a one-line reason in why
 * (which never contains the password either).  On failure *u holds nothing
 * to free.
 */
int	url_parse(const char *s, struct url *u, char *why, size_t whylen);
void	url_free(struct url *u);
/* A deep copy of u without its user and password (doctor's probe). */
void	url_dup_anonymous(struct url *dst, const struct url *u);
/*
 * Is host a loopback address: 127.0.0.0/8, ::1 or ::ffff:127.x.y.z,
 * written so or a name all of whose addresses are (looked up with
 * getaddrinfo; a name that does not resolve is not).  1 or 0.
 */
int	url_host_is_loopback(const char *host);
/* (Re)build u->display from everything in u but the password. */
void	url_build_display(struct url *u);

/*
 * Secrets in free text.  Anything shaped like a URL with a password,
 * SCHEME://USER:PASSWORD@HOST, in a word of s (words end at whitespace or
 * a quote), has its password shown as URL_MASK whatever its length.
 * url_find_password says where the next one is: the password's first byte
 * in *pw and the '@' after it in *at (pw == at for an empty one); NULL if
 * none.
 */
#define URL_MASK	"****"
const char *url_find_password(const char *s, const char **at);
/* s with every such password masked, into buf (cut to len); returns buf. */
char	*url_mask(const char *s, char *buf, size_t len);
/* The same, in a new string (xmalloc). */
char	*url_mask_dup(const char *s);

#endif
