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
#include "transport.h"
#include "util.h"

volatile int	transport_interrupted;

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
		if (transport_interrupted) {
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

/* Connect fd to addr within the deadline: 0, or -1 with e filled. */
static int
connect_fd(int fd, const struct sockaddr *sa, socklen_t salen, int64_t deadline,
    int64_t budget, struct err *e)
{
	socklen_t	len = sizeof(int);
	int		soerr = 0;
	char		d[32];

	if (connect(fd, sa, salen) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EINTR) {
		err_set(e, ERR_UNAVAILABLE, "%s", reason(errno));
		return -1;
	}
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
connect_unix(const struct url *u, int64_t deadline, int64_t budget,
    struct err *e)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(u->path) >= sizeof sun.sun_path) {
		err_set(e, ERR_USAGE, "socket path is longer than %zu bytes",
		    sizeof sun.sun_path - 1);
		return -1;
	}
	strcpy(sun.sun_path, u->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		err_set(e, ERR_UNAVAILABLE, "socket: %s", reason(errno));
		return -1;
	}
	if (connect_fd(fd, (struct sockaddr *)&sun, sizeof sun, deadline,
	    budget, e) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
connect_tcp(const struct url *u, int64_t deadline, int64_t budget,
    struct err *e)
{
	struct addrinfo	 hints, *res, *ai;
	char		 port[16];
	int		 fd = -1, rc, one = 1;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof port, "%d", u->port);
	if ((rc = getaddrinfo(u->host, port, &hints, &res)) != 0) {
		err_set(e, ERR_UNAVAILABLE, "cannot resolve %s: %s", u->host,
		    rc == EAI_SYSTEM ? reason(errno) : gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family,
		    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd == -1) {
			err_set(e, ERR_UNAVAILABLE, "socket: %s",
			    reason(errno));
			continue;
		}
		if (connect_fd(fd, ai->ai_addr, ai->ai_addrlen, deadline,
		    budget, e) == 0)
			break;
		close(fd);
		fd = -1;
		if (e->kind == ERR_INTERRUPTED || now_mono_ms() >= deadline)
			break;
	}
	freeaddrinfo(res);
	if (fd == -1)
		return -1;
	/* Lock commands are tiny request/reply pairs: never wait for Nagle. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

struct transport *
transport_connect(const struct url *u, const struct tls_opts *tls,
    int64_t deadline, struct err *e)
{
	struct transport	*t;
	int64_t			 budget = deadline - now_mono_ms();
	int			 fd;

	if (u->scheme == URL_UNIX)
		fd = connect_unix(u, deadline, budget, e);
	else
		fd = connect_tcp(u, deadline, budget, e);
	if (fd == -1)
		return NULL;
	t = xcalloc(1, sizeof *t);
	t->fd = fd;
	t->ops = &plain_ops;
	t->display = u->display;
	if (u->scheme == URL_TLS && tls_start(t, u, tls, deadline, budget,
	    e) == -1) {
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
