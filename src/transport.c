/* transport.c: TCP and Unix-socket byte streams with CLOCK_MONOTONIC deadlines. */

/*
 * Sockets are non-blocking and close-on-exec from birth, so a child that
 * exec's never inherits one, and every wait is a poll() for what remains of
 * the caller's deadline.  The read/write/close calls go through an ops
 * table so that TLS can sit under the same struct without the layers above
 * noticing.  Name resolution uses getaddrinfo(), which cannot be bounded;
 * connect attempts to each address share the one deadline.
 */

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "duration.h"
#include "log.h"
#include "tls.h"
#include "signals.h"
#include "transport.h"
#include "util.h"


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

static void
plain_close(struct transport *t)
{
	if (t->fd != -1)
		close(t->fd);
	t->fd = -1;
}

static const struct transport_ops plain_ops = {
	.read = plain_read,
	.write = plain_write,
	.close = plain_close,
};

/*
 * Wait until fd is ready for events or the deadline passes.  Returns 1 when
 * ready, 0 on timeout, -1 on interruption (e filled).
 */
int
transport_wait_fd(int fd, short events, int64_t deadline, struct err *e)
{
	struct pollfd	pfd = { .fd = fd, .events = events };
	int64_t		left;
	int		n;

	for (;;) {
		if (signal_caught) {
			err_set(e, ERR_INTERRUPTED, "interrupted by a signal");
			return -1;
		}
		if (deadline < 0)
			left = -1;
		else if ((left = deadline - now_mono_ms()) < 0)
			left = 0;
		n = poll(&pfd, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (n > 0)
			return 1;
		if (n == 0) {
			if (left >= 0 && now_mono_ms() >= deadline)
				return 0;
			continue;
		}
		if (errno != EINTR) {
			err_set(e, ERR_UNAVAILABLE, "poll: %s", reason(errno));
			return -1;
		}
	}
}

/* Start connecting fd: 1 connected, 0 under way, -1 failed (e filled). */
static int
connect_start(int fd, const struct sockaddr *sa, socklen_t salen,
    struct err *e)
{
	if (connect(fd, sa, salen) == 0)
		return 1;
	if (errno == EINPROGRESS || errno == EINTR)
		return 0;
	err_set(e, ERR_UNAVAILABLE, "%s", reason(errno));
	return -1;
}

/* Wait for the connect under way on fd: 0, or -1 with e filled. */
static int
connect_wait(int fd, int64_t deadline, int64_t budget, struct err *e)
{
	socklen_t	len = sizeof(int);
	int		soerr = 0;
	char		d[32];

	switch (transport_wait_fd(fd, POLLOUT, deadline, e)) {
	case 0:
		err_set(e, ERR_UNAVAILABLE, "timed out after %s",
		    duration_format(budget, d, sizeof d));
		return -1;
	case -1:
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == -1)
		soerr = errno;
	if (soerr != 0) {
		err_set(e, ERR_UNAVAILABLE, "%s", reason(soerr));
		return -1;
	}
	return 0;
}

static int
start_unix(struct transport *t, const struct url *u, struct err *e)
{
	struct sockaddr_un	sun;
	int			rc;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(u->path) >= sizeof sun.sun_path) {
		err_set(e, ERR_USAGE, "socket path is longer than %zu bytes",
		    sizeof sun.sun_path - 1);
		return -1;
	}
	strcpy(sun.sun_path, u->path);
	t->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (t->fd == -1) {
		err_set(e, ERR_UNAVAILABLE, "socket: %s", reason(errno));
		return -1;
	}
	if ((rc = connect_start(t->fd, (struct sockaddr *)&sun, sizeof sun,
	    e)) == -1) {
		close(t->fd);
		t->fd = -1;
		return -1;
	}
	t->connecting = rc == 0;
	return 0;
}

/* Start on t->addr or, failing that at once, the addresses after it. */
static int
start_tcp_next(struct transport *t, struct err *e)
{
	struct addrinfo	*ai;
	int		 rc;

	for (; (ai = t->addr) != NULL; t->addr = ai->ai_next) {
		t->fd = socket(ai->ai_family,
		    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (t->fd == -1) {
			err_set(e, ERR_UNAVAILABLE, "socket: %s",
			    reason(errno));
			continue;
		}
		if ((rc = connect_start(t->fd, ai->ai_addr, ai->ai_addrlen,
		    e)) >= 0) {
			t->connecting = rc == 0;
			return 0;
		}
		close(t->fd);
		t->fd = -1;
	}
	return -1;
}

static int
start_tcp(struct transport *t, const struct url *u, struct err *e)
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
		err_set(e, ERR_UNAVAILABLE, "cannot resolve %s: %s", u->host,
		    rc == EAI_SYSTEM ? reason(errno) : gai_strerror(rc));
		return -1;
	}
	t->addr = t->addrs;
	return start_tcp_next(t, e);
}

struct transport *
transport_start(const struct url *u, int64_t deadline, struct err *e)
{
	struct transport	*t;
	int			 rc;

	t = xcalloc(1, sizeof *t);
	t->fd = -1;
	t->ops = &plain_ops;
	t->display = u->display;
	t->budget = deadline - now_mono_ms();
	if (u->scheme == URL_UNIX)
		rc = start_unix(t, u, e);
	else
		rc = start_tcp(t, u, e);
	if (rc == -1) {
		transport_close(t);
		return NULL;
	}
	return t;
}

int
transport_finish(struct transport *t, const struct url *u,
    const struct tls_opts *tls, int64_t deadline, struct err *e)
{
	int	one = 1;

	while (t->connecting) {
		if (connect_wait(t->fd, deadline, t->budget, e) == 0)
			break;
		close(t->fd);
		t->fd = -1;
		/* The host's next address, if it has one and time is left. */
		if (t->addr == NULL || e->kind == ERR_INTERRUPTED ||
		    now_mono_ms() >= deadline)
			return -1;
		t->addr = t->addr->ai_next;
		if (start_tcp_next(t, e) == -1)
			return -1;
	}
	t->connecting = 0;
	if (t->addrs != NULL) {
		freeaddrinfo(t->addrs);
		t->addrs = t->addr = NULL;
		/* Lock commands are tiny request/reply pairs: never Nagle. */
		setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	if (u->scheme == URL_TLS)
		return tls_start(t, u, tls, deadline, t->budget, e);
	return 0;
}

int
transport_connected(const struct transport *t)
{
	struct pollfd	pfd = { .fd = t->fd, .events = POLLOUT };

	return !t->connecting || poll(&pfd, 1, 0) != 0;
}

struct transport *
transport_connect(const struct url *u, const struct tls_opts *tls,
    int64_t deadline, struct err *e)
{
	struct transport	*t;

	if ((t = transport_start(u, deadline, e)) == NULL)
		return NULL;
	if (transport_finish(t, u, tls, deadline, e) == -1) {
		transport_close(t);
		return NULL;
	}
	return t;
}

int
transport_write(struct transport *t, const void *buf, size_t len,
    int64_t deadline, struct err *e)
{
	const char	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		t->want = 0;
		n = t->ops->write(t, p, len);
		if (n > 0) {
			p += n;
			len -= n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			switch (transport_wait_fd(t->fd, t->want ? t->want :
			    POLLOUT, deadline, e)) {
			case 1:
				continue;
			case 0:
				err_set(e, ERR_UNAVAILABLE, "write timed out");
				/* FALLTHROUGH */
			default:
				return -1;
			}
		}
		err_set(e, ERR_UNAVAILABLE, "write: %s",
		    n == 0 ? "connection closed" : errno == EPROTO &&
		    t->tls_err[0] ? t->tls_err : reason(errno));
		return -1;
	}
	return 0;
}

ssize_t
transport_read(struct transport *t, void *buf, size_t len, int64_t deadline,
    struct err *e)
{
	ssize_t	n;

	for (;;) {
		t->want = 0;
		n = t->ops->read(t, buf, len);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			err_set(e, ERR_UNAVAILABLE, "read: %s", errno == EPROTO &&
			    t->tls_err[0] ? t->tls_err : reason(errno));
			return -1;
		}
		switch (transport_wait_fd(t->fd, t->want ? t->want : POLLIN,
		    deadline, e)) {
		case 1:
			continue;
		case 0:
			err_set(e, ERR_UNAVAILABLE, "timed out");
			/* FALLTHROUGH */
		default:
			return -1;
		}
	}
}

void
transport_close(struct transport *t)
{
	if (t == NULL)
		return;
	t->ops->close(t);
	if (t->addrs != NULL)
		freeaddrinfo(t->addrs);
	free(t);
}

int
transport_idle_ok(struct transport *t)
{
	struct pollfd	pfd = { .fd = t->fd, .events = POLLIN };

	char		c;

	if (t->fd == -1)
		return 0;
	if (poll(&pfd, 1, 0) == 0)
		return 1;
	/*
	 * TLS 1.3 servers send session tickets after the handshake: bytes
	 * that are protocol, not a reply.  Let TLS read them; only a byte of
	 * real data, or the end of the stream, means the connection is done.
	 */
	if (t->tls != NULL && !(pfd.revents & (POLLHUP | POLLERR)))
		return t->ops->read(t, &c, 1) == -1 && errno == EAGAIN;
	return 0;
}
