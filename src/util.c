/* util.c: small leaf helpers: growable buffers, UTF-8, lock names. */

/*
 * Everything here either succeeds or aborts: the buffers and the x*
 * allocators print "rlock: out of memory" and abort() rather than hand a
 * NULL to callers that have no sensible way to go on.  utf8_decode is the
 * one strict reading of UTF-8, shared by name_check and the JSON writer.
 * name_check is the single place that decides what a lock name may
 * contain, and says which byte is wrong when it refuses one.
 */

#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "util.h"

#define BUF_INITIAL	64

static void
die_oom(void)
{
	fputs("rlock: out of memory\n", stderr);
	abort();
}

/* ------------------------------------------------------------------ */
/* Allocation */

void *
xmalloc(size_t n)
{
	void	*p;

	/* malloc(0) may return NULL, which would look like failure. */
	if ((p = malloc(n == 0 ? 1 : n)) == NULL)
		die_oom();
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if ((p = calloc(n, size)) == NULL)
		die_oom();
	return p;
}

void *
xrealloc(void *old, size_t n)
{
	void	*p;

	if ((p = realloc(old, n == 0 ? 1 : n)) == NULL)
		die_oom();
	return p;
}

char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		die_oom();
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char	*p;

	if ((p = strndup(s, n)) == NULL)
		die_oom();
	return p;
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n < 0)
		die_oom();
	return n;
}

/* ------------------------------------------------------------------ */
/* Buffers */

void
buf_init(struct buf *b)
{
	b->p = xmalloc(BUF_INITIAL);
	b->p[0] = '\0';
	b->len = 0;
	b->cap = BUF_INITIAL;
}

void
buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* Make room for n more bytes and the terminating NUL. */
static void
grow(struct buf *b, size_t n)
{
	size_t	need, cap;

	if (n > SIZE_MAX - b->len - 1)
		die_oom();
	need = b->len + n + 1;
	if (b->p != NULL && need <= b->cap)
		return;
	cap = b->cap < BUF_INITIAL ? BUF_INITIAL : b->cap;
	while (cap < need) {
		if (cap > SIZE_MAX / 2) {
			cap = need;
			break;
		}
		cap *= 2;
	}
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
}

void
buf_reserve(struct buf *b, size_t n)
{
	grow(b, n);
}

void
buf_add(struct buf *b, const void *data, size_t n)
{
	grow(b, n);
	if (n != 0)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	grow(b, 0);
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		/* Only a bad format gets here; keep the buffer terminated. */
		b->p[b->len] = '\0';
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		grow(b, (size_t)n);
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/* ------------------------------------------------------------------ */
/* UTF-8 */

size_t
utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
	unsigned char	c = s[0], lo = 0x80, hi = 0xbf;
	size_t		n, i;
	uint32_t	v;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		v = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;	/* overlong below U+0800 */
		else if (c == 0xed)
			hi = 0x9f;	/* surrogates U+D800-U+DFFF */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		v = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;	/* overlong below U+10000 */
		else if (c == 0xf4)
			hi = 0x8f;	/* past U+10FFFF */
	} else
		return 0;
	if (len < n)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	*cp = v;
	return n;
}

/* ------------------------------------------------------------------ */
/* Lock names */

static int
is_unicode_space(uint32_t cp)
{
	switch (cp) {
	case 0x0085:
	case 0x00a0:
	case 0x1680:
	case 0x2028:
	case 0x2029:
	case 0x202f:
	case 0x205f:
	case 0x3000:
		return 1;
	}
	return cp >= 0x2000 && cp <= 0x200a;
}

/* Say what the ASCII byte c at 1-based position pos is, if it is banned. */
static int
refuse_ascii(unsigned char c, size_t pos, char *why, size_t whylen)
{
	const char	*what;

	switch (c) {
	case ' ':
		what = "a space";
		break;
	case '\t':
		what = "a tab";
		break;
	case '\n':
		what = "a newline";
		break;
	case '\r':
		what = "a carriage return";
		break;
	case '\v':
		what = "a vertical tab";
		break;
	case '\f':
		what = "a form feed";
		break;
	case '{':
	case '}':
		snprintf(why, whylen, "byte %zu is '%c' (0x%02x), reserved for "
		    "Redis Cluster hash tags", pos, c, c);
		return -1;
	default:
		if (c >= 0x20 && c != 0x7f)
			return 0;
		what = "a control character";
		break;
	}
	snprintf(why, whylen, "byte %zu is %s (0x%02x)", pos, what, c);
	return -1;
}

/*
 * Say which invisible or bidirectional code point (n bytes at s, from
 * 1-based byte pos) a name holds: "byte 7 is U+200B, an invisible format
 * character (0xe2 0x80 0x8b)".
 */
static void
refuse_invisible(const unsigned char *s, size_t n, size_t pos, uint32_t cp,
    const char *what, char *why, size_t whylen)
{
	char	bytes[24];
	size_t	i, k = 0;

	for (i = 0; i < n; i++)
		k += (size_t)snprintf(bytes + k, sizeof bytes - k, "%s0x%02x",
		    i > 0 ? " " : "", s[i]);
	snprintf(why, whylen, "byte %zu is U+%04X, %s (%s)", pos, (unsigned)cp,
	    what, bytes);
}

int
name_check(const char *name, char *why, size_t whylen)
{
	const unsigned char	*u = (const unsigned char *)name;
	const char		*what;
	char			 dummy[1];
	size_t			 len, i, n;
	uint32_t		 cp;

	if (why == NULL || whylen == 0) {
		why = dummy;
		whylen = sizeof dummy;
	}
	len = strlen(name);
	if (len == 0) {
		snprintf(why, whylen, "it is empty");
		return -1;
	}
	if (len > NAME_MAX_BYTES) {
		snprintf(why, whylen, "it is %zu bytes long; the limit is %d",
		    len, NAME_MAX_BYTES);
		return -1;
	}

	for (i = 0; i < len; i += n) {
		if (u[i] < 0x80) {
			n = 1;
			if (refuse_ascii(u[i], i + 1, why, whylen) != 0)
				return -1;
			continue;
		}
		if ((n = utf8_decode(u + i, len - i, &cp)) == 0) {
			snprintf(why, whylen, "byte %zu (0x%02x) is not valid "
			    "UTF-8", i + 1, u[i]);
			return -1;
		}
		if (cp >= 0x80 && cp <= 0x9f && cp != 0x85) {
			snprintf(why, whylen, "byte %zu is U+%04X, a control "
			    "character (0x%02x 0x%02x)", i + 1, (unsigned)cp,
			    u[i], u[i + 1]);
			return -1;
		}
		if (is_unicode_space(cp)) {
			/* U+0085 is a C1 control too, but reads as a space. */
			if (n == 2)
				snprintf(why, whylen, "byte %zu is U+%04X, a "
				    "space (0x%02x 0x%02x)", i + 1,
				    (unsigned)cp, u[i], u[i + 1]);
			else
				snprintf(why, whylen, "byte %zu is U+%04X, a "
				    "space (0x%02x 0x%02x 0x%02x)", i + 1,
				    (unsigned)cp, u[i], u[i + 1], u[i + 2]);
			return -1;
		}
		if ((what = escape_invisible(cp)) != NULL) {
			refuse_invisible(u + i, n, i + 1, cp, what, why,
			    whylen);
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Time */

static int64_t
read_clock_ms(clockid_t id)
{
	struct timespec	ts;

	/* Fails only for a bad clock id, and both ids here are standard. */
	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
now_mono_ms(void)
{
	return read_clock_ms(CLOCK_MONOTONIC);
}

int64_t
now_wall_ms(void)
{
	return read_clock_ms(CLOCK_REALTIME);
}

int
std_fds_open(void)
{
	int	fd;

	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		/* open() returns the lowest free descriptor: this one. */
		if (open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY) != fd)
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ secrets */

/*
 * Each secret gets its own mapping, with its length in front: rlock holds
 * a handful of them at most, and a page of its own is the only way to
 * keep a secret out of a core dump (malloc would share its page with
 * anything).
 */
#define SECRET_HEAD	16

char *
secret_alloc(size_t n)
{
	size_t	 page = (size_t)sysconf(_SC_PAGESIZE), len;
	char	*m;

	len = (n + 1 + SECRET_HEAD + page - 1) / page * page;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		fprintf(stderr, "rlock: out of memory\n");
		abort();
	}
	/* Not supported (before Linux 3.4): still wiped when freed. */
	(void)madvise(m, len, MADV_DONTDUMP);
	memcpy(m, &len, sizeof len);
	return m + SECRET_HEAD;	/* zeroed, as mmap leaves it */
}

char *
secret_strndup(const char *s, size_t n)
{
	char	*m = secret_alloc(n);

	memcpy(m, s, n);
	return m;
}

char *
secret_strdup(const char *s)
{
	return secret_strndup(s, strlen(s));
}

void
secret_free(char *p)
{
	size_t	len;

	if (p == NULL)
		return;
	p -= SECRET_HEAD;
	memcpy(&len, p, sizeof len);
	explicit_bzero(p, len);
	munmap(p, len);
}

/* Does path name one of our own descriptors (/dev/fd/N, /dev/stdin...)? */
static int
is_fd_path(const char *path)
{
	return strncmp(path, "/dev/fd/", 8) == 0 ||
	    strncmp(path, "/proc/self/fd/", 14) == 0 ||
	    strcmp(path, "/dev/stdin") == 0;
}

const char *
file_kind(const char *path)
{
	struct stat	st;

	if (stat(path, &st) == -1)
		return "file";
	if (S_ISFIFO(st.st_mode))
		return "FIFO";
	if (S_ISDIR(st.st_mode))
		return "directory";
	if (S_ISCHR(st.st_mode))
		return "character device";
	if (S_ISBLK(st.st_mode))
		return "block device";
	if (S_ISSOCK(st.st_mode))
		return "socket";
	return S_ISREG(st.st_mode) ? "regular file" : "special file";
}

int
is_null_device(const char *path)
{
	struct stat	st, null;

	/* By the device, not the name: a symlink to it is /dev/null too. */
	return stat(path, &st) == 0 && S_ISCHR(st.st_mode) &&
	    stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) &&
	    st.st_rdev == null.st_rdev;
}

int
read_bounded(const char *path, size_t max, char **text, size_t *len)
{
	struct stat	 st;
	char	*p;
	size_t	 n = 0;
	ssize_t	 got = 0;
	int	 fd, saved;

	/*
	 * Without blocking: a FIFO would wait for a writer forever.  Then
	 * only a regular file: a device, a socket or a FIFO in the file
	 * system is never what was meant.  A pipe the caller hands down as
	 * /dev/fd/N (the guard's release does, and so does the shell's
	 * <(...)) is the caller's choice, and is read as it comes.
	 */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !(S_ISREG(st.st_mode) ||
	    (S_ISFIFO(st.st_mode) && is_fd_path(path)))) {
		close(fd);
		return -3;
	}
	if (!S_ISREG(st.st_mode))
		(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	p = xmalloc(max + 2);
	/* One byte past the limit tells a file that is too big. */
	while (n <= max) {
		got = read(fd, p + n, max + 1 - n);
		if (got == -1 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	saved = errno;
	close(fd);
	if (got == -1) {
		free(p);
		errno = saved;
		return -1;
	}
	if (n > max) {
		free(p);
		return -2;
	}
	p[n] = '\0';
	*text = p;
	*len = n;
	return 0;
}

#ifndef __GLIBC__
/* As glibc's sigabbrev_np: the name without "SIG", NULL if none. */
const char *
util_sigabbrev(int sig)
{
	static const char *const names[] = {
		[SIGHUP] = "HUP", [SIGINT] = "INT", [SIGQUIT] = "QUIT",
		[SIGILL] = "ILL", [SIGTRAP] = "TRAP", [SIGABRT] = "ABRT",
		[SIGBUS] = "BUS", [SIGFPE] = "FPE", [SIGKILL] = "KILL",
		[SIGUSR1] = "USR1", [SIGSEGV] = "SEGV", [SIGUSR2] = "USR2",
		[SIGPIPE] = "PIPE", [SIGALRM] = "ALRM", [SIGTERM] = "TERM",
#ifdef SIGSTKFLT
		[SIGSTKFLT] = "STKFLT",
#endif
		[SIGCHLD] = "CHLD", [SIGCONT] = "CONT", [SIGSTOP] = "STOP",
		[SIGTSTP] = "TSTP", [SIGTTIN] = "TTIN", [SIGTTOU] = "TTOU",
		[SIGURG] = "URG", [SIGXCPU] = "XCPU", [SIGXFSZ] = "XFSZ",
		[SIGVTALRM] = "VTALRM", [SIGPROF] = "PROF",
		[SIGWINCH] = "WINCH", [SIGPOLL] = "POLL",
#ifdef SIGPWR
		[SIGPWR] = "PWR",
#endif
		[SIGSYS] = "SYS",
	};

	if (sig <= 0 || (size_t)sig >= sizeof names / sizeof names[0])
		return NULL;
	return names[sig];
}
#endif
