/* util.h: small leaf helpers: growable buffers, UTF-8, lock names. */
#ifndef RLOCK_UTIL_H
#define RLOCK_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define NAME_MAX_BYTES	255

/*
 * sigabbrev_np is glibc's (2.32 on), and musl, which the static build
 * (scripts/static.sh) uses, has none: there util.c gives the same answers.
 */
#ifndef __GLIBC__
#define sigabbrev_np	util_sigabbrev
const char	*util_sigabbrev(int sig);
#endif

/* A growable byte buffer, always NUL-terminated.  Aborts on out of memory. */
struct buf {
	char	*p;
	size_t	 len;
	size_t	 cap;
};

void	 buf_init(struct buf *);
void	 buf_free(struct buf *);
void	 buf_add(struct buf *, const void *, size_t);
void	 buf_adds(struct buf *, const char *);
/* Room for n more bytes at once: text that must not be left behind by a
 * realloc (a password) is written into a buffer that never moves. */
void	 buf_reserve(struct buf *, size_t);
void	 buf_printf(struct buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

/*
 * Length of the well-formed UTF-8 sequence at s (at most len bytes), with
 * its code point in *cp; 0 if the bytes there are not one.  Strict, as the
 * Unicode standard's table 3-7: no overlong forms, no surrogates, nothing
 * past U+10FFFF, no truncated sequences.
 */
size_t	 utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);

/*
 * Check a lock name: 1..255 bytes of valid UTF-8, no ASCII whitespace or
 * control characters (0x00-0x1f, 0x7f), no C1 controls (U+0080-U+009F), no
 * Unicode spaces (U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029,
 * U+202F, U+205F, U+3000), no invisible format or bidirectional control
 * characters (Unicode category Cf and the other default-ignorable code
 * points: U+200B, U+202E, U+FEFF, U+00AD..., see escape_invisible), no '{'
 * or '}'.  Returns 0, or -1 with a reason
 * naming the first offending byte by 1-based position and value, e.g.
 * "byte 4 is a space (0x20)", "byte 7 is U+200B, an invisible format
 * character (0xe2 0x80 0x8b)", "byte 2 is '{' (0x7b), reserved for Redis
 * Cluster hash tags", "byte 3 (0xff) is not valid UTF-8", "it is empty",
 * "it is 300 bytes long; the limit is 255".
 */
int	 name_check(const char *name, char *why, size_t whylen);

/* xmalloc family: abort with a message on out of memory. */
void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xrealloc(void *, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);

/*
 * Memory for a secret (a password, a URL holding one): pages of its own,
 * marked MADV_DONTDUMP so that a core dump leaves them out, and wiped
 * when freed.  secret_free(NULL) does nothing.  secret_alloc: n bytes
 * (and a NUL after them), zeroed.
 */
char	*secret_alloc(size_t n);
char	*secret_strndup(const char *, size_t);
char	*secret_strdup(const char *);
void	 secret_free(char *);
int	 xasprintf(char **, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

/*
 * Make sure descriptors 0, 1 and 2 are open, so that no socket or file
 * rlock opens later becomes its stdin, stdout or stderr.  A closed one is
 * opened on /dev/null the wrong way round (stdin write-only, stdout and
 * stderr read-only), so that using it still fails as a closed one would.
 * -1 if /dev/null cannot be opened.
 */
int	 std_fds_open(void);

/*
 * Read the whole file at path, at most max bytes, NUL-terminated, into
 * *text (*len: its length).  0; -1 with errno set; -2 when it holds more
 * than max bytes (a mistake); -3 when it is not a regular file (opened
 * without blocking, so a FIFO does not hang).
 */
int	 read_bounded(const char *path, size_t max, char **text, size_t *len);
/* What path is, for a message: "FIFO", "directory", "socket"... */
const char *file_kind(const char *path);
/* Is path /dev/null, or another name for the same device? */
int	 is_null_device(const char *path);

/* Milliseconds on CLOCK_MONOTONIC and on the wall clock. */
int64_t	 now_mono_ms(void);
int64_t	 now_wall_ms(void);

#endif
