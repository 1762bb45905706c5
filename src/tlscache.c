/* tlscache.c: TLS sessions kept between runs, one private file per key. */

/*
 * A rediss:// run pays for OpenSSL's set-up and a full handshake; a run
 * that resumes the session of the run before skips the certificate
 * exchange and its verification (tls.c).  Sessions are secrets (whoever
 * holds one can speak as this client to the server for its lifetime), so
 * they live in a directory of the user's own, mode 0700, in files of mode
 * 0600: $XDG_RUNTIME_DIR/rlock/tls-sessions, else $XDG_CACHE_HOME (or
 * ~/.cache)/rlock/tls-sessions.  A directory or a file that another user
 * owns, or that group or others may read, is not used.
 *
 * An entry is named by tls.c's key (a hash of everything a session must
 * never be used across), holds one session, and is replaced whole by
 * rename(2), so readers see the old or the new one.  Its mtime is the time
 * it expires, which lets a store prune expired entries with one stat each:
 * the directory holds only the keys used within a ticket's lifetime.
 * Nothing here ever fails a command: a missing, unreadable or foreign
 * cache is a full handshake, and the reason is the caller's to log at -v.
 */

#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlscache.h"

#define DIRNAME		"tls-sessions"
#define TMP_PREFIX	".tmp-"
/* A temporary file this old is a writer that died before its rename. */
#define TMP_STALE_S	60

/*
 * Open (with create, making it) the component name under dfd as a
 * directory, never through a symlink, and check it: ours, and not
 * writable (last: not even readable) by anyone else.  -1 with why.
 */
static int
open_dir(int dfd, const char *name, int create, int last, char *why,
    size_t whylen)
{
	struct stat	st;
	int		fd;

	if (create && mkdirat(dfd, name, 0700) == -1 && errno != EEXIST) {
		snprintf(why, whylen, "cannot make %s: %s", name,
		    strerror(errno));
		return -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENOENT && !create)
			why[0] = '\0';	/* no cache yet: nothing to say */
		else
			snprintf(why, whylen, "cannot open %s: %s", name,
			    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid() ||
	    (st.st_mode & (last ? 077 : 022)) != 0) {
		snprintf(why, whylen, "%s is not a private directory of this "
		    "user's", name);
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The cache directory, open; -1 with why ("" when there is simply none
 * yet and create is off).
 */
static int
cache_dir(int create, char *why, size_t whylen)
{
	struct stat	 st;
	const char	*base, *comps[3];
	char		 path[4096];
	int		 fd, next, i, n = 0;

	if ((base = getenv("XDG_RUNTIME_DIR")) != NULL && base[0] == '/')
		comps[n++] = "rlock";
	else if ((base = getenv("XDG_CACHE_HOME")) != NULL && base[0] == '/')
		comps[n++] = "rlock";
	else if ((base = getenv("HOME")) != NULL && base[0] == '/') {
		comps[n++] = ".cache";
		comps[n++] = "rlock";
	} else {
		snprintf(why, whylen, "no XDG_RUNTIME_DIR, XDG_CACHE_HOME or "
		    "HOME to keep it in");
		return -1;
	}
	comps[n++] = DIRNAME;
	if ((fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(why, whylen, "cannot open %s: %s", base,
		    strerror(errno));
		return -1;
	}
	/*
	 * Nothing is made in another user's directory: root run by sudo with
	 * that user's HOME would leave a ~/.cache the user cannot write.
	 */
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid()) {
		snprintf(why, whylen, "%s is not this user's", base);
		close(fd);
		return -1;
	}
	for (i = 0; i < n; i++) {
		next = open_dir(fd, comps[i], create, i == n - 1, why, whylen);
		close(fd);
		if (next == -1) {
			if (why[0] != '\0') {
				/* Name the whole path: "tls-sessions" alone
				 * tells a person little. */
				snprintf(path, sizeof path, "%s", why);
				snprintf(why, whylen, "%s (under %s)", path,
				    base);
			}
			return -1;
		}
		fd = next;
	}
	return fd;
}

ssize_t
tlscache_load(const char *name, unsigned char *buf, char *why, size_t whylen)
{
	struct stat	st;
	ssize_t		n, got = 0;
	int		dfd, fd;

	why[0] = '\0';
	if ((dfd = cache_dir(0, why, whylen)) == -1)
		return why[0] != '\0' ? -1 : 0;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, whylen, "cannot open it: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
		snprintf(why, whylen, "it is not a private file of this user's");
		goto fail;
	}
	if (st.st_mtime <= time(NULL)) {
		snprintf(why, whylen, "it has expired");
		close(fd);
		return 0;
	}
	if (st.st_size <= 0 || st.st_size > TLSCACHE_MAX) {
		snprintf(why, whylen, "it is %lld bytes long",
		    (long long)st.st_size);
		goto fail;
	}
	while (got < st.st_size) {
		n = read(fd, buf + got, (size_t)(st.st_size - got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, whylen, "cannot read it: %s",
			    n == 0 ? "it shrank" : strerror(errno));
			goto fail;
		}
		got += n;
	}
	close(fd);
	return got;
fail:
	close(fd);
	return -1;
}

/*
 * Remove the entries past their time, and temporary files left behind:
 * the directory never holds more than the keys in use.
 */
static void
prune(int dfd)
{
	struct dirent	*d;
	struct stat	 st;
	DIR		*dir;
	time_t		 now = time(NULL);
	int		 fd;

	if ((fd = dup(dfd)) == -1)
		return;
	if ((dir = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((d = readdir(dir)) != NULL) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
			continue;
		if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (strncmp(d->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0 ?
		    st.st_mtime < now - TMP_STALE_S : st.st_mtime <= now)
			unlinkat(dfd, d->d_name, 0);
	}
	closedir(dir);
}

static int
write_all(int fd, const unsigned char *buf, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = write(fd, buf, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int
tlscache_store(const char *name, const unsigned char *buf, size_t len,
    time_t expires, char *why, size_t whylen)
{
	static unsigned	 seq;
	struct timespec	 ts[2];
	char		 tmp[64];
	int		 dfd, fd, i, rc;

	why[0] = '\0';
	if ((dfd = cache_dir(1, why, whylen)) == -1)
		return -1;
	prune(dfd);
	for (i = 0; i < 10; i++) {
		snprintf(tmp, sizeof tmp, TMP_PREFIX "%ld-%u", (long)getpid(),
		    __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd != -1 || errno != EEXIST)
			break;
	}
	if (fd == -1) {
		snprintf(why, whylen, "cannot create a file: %s",
		    strerror(errno));
		close(dfd);
		return -1;
	}
	/* atime: now; mtime: when the entry expires (see the top). */
	ts[0].tv_nsec = UTIME_NOW;
	ts[0].tv_sec = 0;
	ts[1].tv_sec = expires;
	ts[1].tv_nsec = 0;
	rc = write_all(fd, buf, len) == -1 || futimens(fd, ts) == -1 ? -1 : 0;
	if (close(fd) == -1)
		rc = -1;
	if (rc == 0 && renameat(dfd, tmp, dfd, name) == -1)
		rc = -1;
	if (rc == -1) {
		snprintf(why, whylen, "cannot write it: %s", strerror(errno));
		unlinkat(dfd, tmp, 0);
	}
	close(dfd);
	return rc;
}
