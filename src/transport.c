/* transport.c: TCP, Unix-socket and TLS byte streams that never wait. */

/*
 * A transport is one connection to one server address, made and used
 * without blocking: every call does what can be done now and says what it
 * waits for (transport_pollfds), and the caller's event loop polls and
 * calls again.  Time bounds are the caller's (redis.c): nothing here reads
 * a clock but the pause between connect attempts.
 *
 * A host name with several addresses is connected to as RFC 8305 (Happy
 * Eyeballs) does: the first address is tried, and if it has not answered
 * within ATTEMPT_DELAY_MS the next is tried beside it, and so on; the
 * first to connect wins and the others are closed.  An address that drops
 * SYNs then costs ATTEMPT_DELAY_MS, not the whole --connect-timeout.
 * Sockets are non-blocking and close-on-exec from birth, so a child that
 * exec's never inherits one.  Name resolution (getaddrinfo) cannot be
 * bounded and happens once, in transport_open.
 */

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "duration.h"
#include "tls.h"
#include "transport.h"
#include "util.h"

/* How long one address has before the next is tried beside it. */
#define ATTEMPT_DELAY_MS	250

enum phase { CONNECTING, HANDSHAKE, READY };

struct transport {
	enum phase		 phase;
	int			 fd;	/* once connected */
	struct tls		*tls;	/* rediss:// */
	short			 want;	/* the events TLS waits for */
	const struct url	*url;
	const struct tls_opts	*tls_opts;

	/* While connecting: the attempts under way, the addresses left. */
	int			 attempt[TRANSPORT_MAX_FDS];
	int			 nattempts;
	struct addrinfo		*addrs;
	struct addrinfo		*next;
	int64_t			 next_at;	/* when to try the next */
	struct err		 last;		/* the last attempt's failure */
};

/* strerror, in the lower case of the rest of a message. */
static const char *
reason(int errnum)
{
	static __thread char	buf[128];

	snprintf(buf, sizeof buf, "%s", strerror(errnum));
	if (buf[0] >= 'A' && buf[0] <= 'Z' && (buf[1] < 'A' || buf[1] > 'Z'))
		buf[0] += 'a' - 'A';
	return buf;
}

/* A socket that cannot be connected to: refused, unreachable, gone. */
static void
connect_error(struct err *e, int errnum)
{
	err_set(e, errnum == ETIMEDOUT ? ERR_TIMEOUT : ERR_REFUSED, "%s",
	    reason(errnum));
}

/* Start a connect on a new socket: 0 under way (or done), -1 (e filled). */
static int
start_attempt(struct transport *t, int family, int type, int protocol,
    const struct sockaddr *sa, socklen_t salen, struct err *e)
{
	int	fd;

	if ((fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    protocol)) == -1) {
		err_set(e, ERR_UNAVAILABLE, "socket: %s", reason(errno));
		return -1;
	}
	if (connect(fd, sa, salen) == -1 && errno != EINPROGRESS &&
	    errno != EINTR) {
		connect_error(e, errno);
		close(fd);
		return -1;
	}
	t->attempt[t->nattempts++] = fd;
	return 0;
}

/* Try the addresses left until one connect is under way. */
static void
start_next(struct transport *t)
{
	struct addrinfo	*ai;

	while ((ai = t->next) != NULL &&
	    t->nattempts < TRANSPORT_MAX_FDS) {
		t->next = ai->ai_next;
		if (start_attempt(t, ai->ai_family, ai->ai_socktype,
		    ai->ai_protocol, ai->ai_addr, ai->ai_addrlen,
		    &t->last) == 0) {
			t->next_at = now_mono_ms() + ATTEMPT_DELAY_MS;
			return;
		}
	}
}

static int
open_unix(struct transport *t, const struct url *u, struct err *e)
{
	struct sockaddr_un	sun;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(u->path) >= sizeof sun.sun_path) {
		err_set(e, ERR_USAGE, "socket path is longer than %zu bytes",
		    sizeof sun.sun_path - 1);
		return -1;
	}
	strcpy(sun.sun_path, u->path);
	return start_attempt(t, AF_UNIX, SOCK_STREAM, 0,
	    (struct sockaddr *)&sun, sizeof sun, e);
}

static int
open_tcp(struct transport *t, const struct url *u, struct err *e)
{
	struct addrinfo	 hints;
	char		 port[16];
	int		 rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof port, "%d", u->port);
	if ((rc = getaddrinfo(u->host, port, &hints, &t->addrs)) != 0) {
		t->addrs = NULL;
		err_set(e, ERR_REFUSED, "cannot resolve %s: %s", u->host,
		    rc == EAI_SYSTEM ? reason(errno) : gai_strerror(rc));
		return -1;
	}
	t->next = t->addrs;
	start_next(t);
	if (t->nattempts == 0) {
		*e = t->last;
		return -1;
	}
	return 0;
}

struct transport *
transport_open(const struct url *u, const struct tls_opts *tls, struct err *e)
{
	struct transport	*t;
	int			 rc;

	t = xcalloc(1, sizeof *t);
	t->fd = -1;
	t->url = u;
	t->tls_opts = tls;
	if (u->scheme == URL_UNIX)
		rc = open_unix(t, u, e);
	else
		rc = open_tcp(t, u, e);
	if (rc == -1) {
		transport_close(t);
		return NULL;
	}
	return t;
}

/* The attempt that connected (fd) becomes the connection. */
static int
connected(struct transport *t, int fd, struct err *e)
{
	int	one = 1, i;

	t->fd = fd;
	for (i = 0; i < t->nattempts; i++)
		close(t->attempt[i]);
	t->nattempts = 0;
	if (t->addrs != NULL) {
		freeaddrinfo(t->addrs);
		t->addrs = t->next = NULL;
		/* Lock commands are tiny request/reply pairs: never Nagle. */
		setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	if (t->url->scheme != URL_TLS) {
		t->phase = READY;
		return 1;
	}
	if ((t->tls = tls_new(t->fd, t->url->host, t->url->port,
	    t->tls_opts, e)) == NULL)
		return -1;
	t->phase = HANDSHAKE;
	return 0;
}

/* See which attempts are done; start the next address when it is time. */
static int
step_connect(struct transport *t, struct err *e)
{
	struct pollfd	pfd[TRANSPORT_MAX_FDS];
	socklen_t	len;
	int		i, k, fd, soerr, won = -1;

	for (i = 0; i < t->nattempts; i++) {
		pfd[i].fd = t->attempt[i];
		pfd[i].events = POLLOUT;
		pfd[i].revents = 0;
	}
	if (poll(pfd, t->nattempts, 0) > 0) {
		for (i = k = 0; i < t->nattempts; i++) {
			fd = t->attempt[i];
			if (pfd[i].revents == 0) {
				t->attempt[k++] = fd;
				continue;
			}
			len = sizeof soerr;
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr,
			    &len) == -1)
				soerr = errno;
			if (soerr == 0 && won == -1) {
				won = fd;
				continue;
			}
			if (soerr != 0)
				connect_error(&t->last, soerr);
			close(fd);
		}
		t->nattempts = k;
		if (won != -1)
			return connected(t, won, e);
	}
	if (t->next != NULL && (t->nattempts == 0 ||
	    now_mono_ms() >= t->next_at))
		start_next(t);
	if (t->nattempts == 0) {
		*e = t->last;
		return -1;
	}
	return 0;
}

int
transport_step(struct transport *t, struct err *e)
{
	int	rc;

	if (t->phase == CONNECTING && (rc = step_connect(t, e)) == -1)
		return -1;
	if (t->phase == HANDSHAKE) {
		t->want = 0;
		if ((rc = tls_handshake(t->tls, &t->want, e)) == 1)
			t->phase = READY;
		return rc;
	}
	return t->phase == READY;
}

int
transport_pollfds(const struct transport *t, short events,
    struct pollfd *pfd)
{
	int	i;

	if (t->phase == CONNECTING) {
		for (i = 0; i < t->nattempts; i++) {
			pfd[i].fd = t->attempt[i];
			pfd[i].events = POLLOUT;
			pfd[i].revents = 0;
		}
		return t->nattempts;
	}
	/* TLS may need the other way round to go on: ask for both. */
	pfd[0].fd = t->fd;
	pfd[0].events = t->phase == HANDSHAKE ? t->want : events | t->want;
	pfd[0].revents = 0;
	return 1;
}

int64_t
transport_wake(const struct transport *t)
{
	return t->phase == CONNECTING && t->next != NULL ? t->next_at : -1;
}

int
transport_ready(const struct transport *t)
{
	return t->phase == READY;
}

void
transport_timed_out(const struct transport *t, int64_t budget_ms,
    struct err *e)
{
	char	d[32];

	duration_format(budget_ms, d, sizeof d);
	if (t->phase == HANDSHAKE)
		err_set(e, ERR_TIMEOUT, "TLS handshake timed out after %s "
		    "(--connect-timeout; is that port TLS?)", d);
	else
		err_set(e, ERR_TIMEOUT, "timed out after %s", d);
}

/* An I/O failure, as a message: TLS says why itself. */
static void
io_error(const struct transport *t, const char *what, int errnum,
    struct err *e)
{
	if (errnum == EPROTO && t->tls != NULL && tls_why(t->tls) != NULL)
		err_set(e, ERR_PROTOCOL, "%s: %s", what, tls_why(t->tls));
	else
		err_set(e, ERR_UNAVAILABLE, "%s: %s", what, reason(errnum));
}

ssize_t
transport_write(struct transport *t, const void *buf, size_t len,
    struct err *e)
{
	ssize_t	n;

	for (;;) {
		t->want = 0;
		if (t->tls != NULL)
			n = tls_write(t->tls, buf, len, &t->want);
		else
			n = send(t->fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		io_error(t, "write", errno, e);
		return -1;
	}
}

ssize_t
transport_read(struct transport *t, void *buf, size_t len, struct err *e)
{
	ssize_t	n;

	for (;;) {
		t->want = 0;
		if (t->tls != NULL)
			n = tls_read(t->tls, buf, len, &t->want);
		else
			n = read(t->fd, buf, len);
		if (n > 0)
			return n;
		if (n == 0) {
			err_set(e, ERR_UNAVAILABLE,
			    "connection closed by the server");
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		io_error(t, "read", errno, e);
		return -1;
	}
}

void
transport_close(struct transport *t)
{
	int	i;

	if (t == NULL)
		return;
	tls_free(t->tls);
	if (t->fd != -1)
		close(t->fd);
	for (i = 0; i < t->nattempts; i++)
		close(t->attempt[i]);
	if (t->addrs != NULL)
		freeaddrinfo(t->addrs);
	free(t);
}

int
transport_idle_ok(struct transport *t)
{
	struct pollfd	pfd = { .fd = t->fd, .events = POLLIN };
	short		want;
	char		c;

	if (t->phase != READY)
		return 1;	/* a connect under way is not a dead one */
	if (poll(&pfd, 1, 0) == 0)
		return 1;
	/*
	 * TLS 1.3 servers send session tickets after the handshake: bytes
	 * that are protocol, not a reply.  Let TLS read them; only a byte of
	 * real data, or the end of the stream, means the connection is done.
	 */
	if (t->tls != NULL && !(pfd.revents & (POLLHUP | POLLERR)))
		return tls_read(t->tls, &c, 1, &want) == -1 && errno == EAGAIN;
	return 0;
}
