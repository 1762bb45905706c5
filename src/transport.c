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
 *
 * What the stream is once connected is a table of operations, as
 * hiredis's redisContextFuncs: plain (TCP or a Unix socket) or TLS over
 * the connected socket (tls.c).  The connecting, the polling and the
 * errors are the same for both; only the table knows what a read is.
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

struct transport;

/*
 * One kind of stream over the connected socket.  read and write are as
 * read(2) and send(2) on a non-blocking socket, and may set t->want to
 * the events they wait for (TLS may have to write to read); errno EPROTO
 * says the stream's protocol failed, and why says how (NULL: no more to
 * say than errno).
 */
struct transport_ops {
	/* Begin on t->fd: 1 ready, 0 a handshake to drive, -1 (e filled). */
	int	 (*start)(struct transport *, struct err *);
	/* Drive the handshake: 1 done, 0 under way (t->want), -1. */
	int	 (*handshake)(struct transport *, struct err *);
	ssize_t	 (*read)(struct transport *, void *, size_t);
	ssize_t	 (*write)(struct transport *, const void *, size_t);
	const char *(*why)(const struct transport *);
	/*
	 * An idle connection's socket is readable (revents): whether that is
	 * only protocol (TLS 1.3's session tickets), so still usable.
	 */
	int	 (*idle_ok)(struct transport *, short revents);
	void	 (*close)(struct transport *);
};

struct transport {
	enum phase		 phase;
	const struct transport_ops *ops;
	int			 fd;	/* once connected */
	struct tls		*tls;	/* the TLS ops' session */
	short			 want;	/* the events the stream waits for */
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

/* ---------------------------------------------------------------- plain */

static int
plain_start(struct transport *t, struct err *e)
{
	(void)t;
	(void)e;
	return 1;
}

static ssize_t
plain_read(struct transport *t, void *buf, size_t len)
{
	return read(t->fd, buf, len);
}

static ssize_t
plain_write(struct transport *t, const void *buf, size_t len)
{
	return send(t->fd, buf, len, MSG_NOSIGNAL);
}

/* A byte, or the end, on an idle plain connection: it is done. */
static int
plain_idle_ok(struct transport *t, short revents)
{
	(void)t;
	(void)revents;
	return 0;
}

static const struct transport_ops plain_ops = {
	.start = plain_start,
	.read = plain_read,
	.write = plain_write,
	.idle_ok = plain_idle_ok,
};

/* ------------------------------------------------------------------ TLS */

static int
tls_start(struct transport *t, struct err *e)
{
	if ((t->tls = tls_new(t->fd, t->url->host, t->url->port,
	    t->tls_opts, e)) == NULL)
		return -1;
	return 0;
}

static int
tls_step(struct transport *t, struct err *e)
{
	return tls_handshake(t->tls, &t->want, e);
}

static ssize_t
tls_stream_read(struct transport *t, void *buf, size_t len)
{
	return tls_read(t->tls, buf, len, &t->want);
}

static ssize_t
tls_stream_write(struct transport *t, const void *buf, size_t len)
{
	return tls_write(t->tls, buf, len, &t->want);
}

static const char *
tls_stream_why(const struct transport *t)
{
	return tls_why(t->tls);
}

/*
 * TLS 1.3 servers send session tickets after the handshake: bytes that
 * are protocol, not a reply.  Let TLS read them; only a byte of real
 * data, or the end of the stream, means the connection is done.
 */
static int
tls_idle_ok(struct transport *t, short revents)
{
	char	c;

	if (revents & (POLLHUP | POLLERR))
		return 0;
	return tls_read(t->tls, &c, 1, &t->want) == -1 && errno == EAGAIN;
}

static void
tls_close(struct transport *t)
{
	tls_free(t->tls);
	t->tls = NULL;
}

static const struct transport_ops tls_ops = {
	.start = tls_start,
	.handshake = tls_step,
	.read = tls_stream_read,
	.write = tls_stream_write,
	.why = tls_stream_why,
	.idle_ok = tls_idle_ok,
	.close = tls_close,
};

/* ------------------------------------------------------------ transport */

struct transport *
transport_open(const struct url *u, const struct tls_opts *tls, struct err *e)
{
	struct transport	*t;
	int			 rc;

	t = xcalloc(1, sizeof *t);
	t->fd = -1;
	t->url = u;
	t->tls_opts = tls;
	t->ops = u->scheme == URL_TLS ? &tls_ops : &plain_ops;
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
	switch (t->ops->start(t, e)) {
	case 1:
		t->phase = READY;
		return 1;
	case 0:
		t->phase = HANDSHAKE;
		return 0;
	default:
		return -1;
	}
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
		if ((rc = t->ops->handshake(t, e)) == 1)
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

/* An I/O failure, as a message: a protocol says why itself. */
static void
io_error(const struct transport *t, const char *what, int errnum,
    struct err *e)
{
	const char	*why;

	if (errnum == EPROTO && t->ops->why != NULL &&
	    (why = t->ops->why(t)) != NULL)
		err_set(e, ERR_PROTOCOL, "%s: %s", what, why);
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
		n = t->ops->write(t, buf, len);
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
		n = t->ops->read(t, buf, len);
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
	if (t->ops->close != NULL)
		t->ops->close(t);
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
	short		want = t->want;
	int		ok;

	if (t->phase != READY)
		return 1;	/* a connect under way is not a dead one */
	if (poll(&pfd, 1, 0) == 0)
		return 1;
	ok = t->ops->idle_ok(t, pfd.revents);
	t->want = want;	/* a look, not a read the caller waits on */
	return ok;
}
