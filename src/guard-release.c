/* guard-release.c: how the guard gives the lock back once rlock has died. */
#include "config.h"

/*
 * The held lock itself is handed on, not rlock's settings: before the
 * guard is told of the lock, guard_release_pack packs its target as rlock
 * settled it (the URLs, their passwords, struct redis_opts and its TLS,
 * the prefix) and its identity (held_pack, held-pack.c), and the guard
 * keeps the pack in its shared memory.  If rlock dies, the guard, once
 * nothing of the command is left, execs rlock's own binary (opened at the
 * start) as the release (guard_release_main), with that memory as
 * GUARD_FD_SHARED: no config file, environment or option is read again,
 * and no password is in argv or the environment.  An exec, not a call:
 * the guard may share the dead rlock's memory (the shared guard) or be
 * its fork, where only async-signal-safe calls may be made (guard-run.c);
 * the release is a program of its own, which the library can run in.
 */

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guard.h"
#include "guard-private.h"
#include "held.h"
#include "log.h"
#include "util.h"

/* What the history says of that release. */
#define KILLED_REASON	"rlock was killed"

/* Not for the release: rlock's settings, which it does not read. */
static int
dropped(const char *entry)
{
	return strncmp(entry, "RLOCK_", 6) == 0 ||
	    strncmp(entry, "REDISCLI_AUTH=", 14) == 0;
}

/*
 * What the release needs that the lock does not give: rlock's binary and
 * the environment, known before the lock is (the guard of a waiting exec
 * starts with them: guard_spawn).  The lock itself comes with
 * guard_release_pack, once held.
 */
int
guard_release_init(struct guard_release *rel, int syslog)
{
	extern char	**environ;
	char		**p;
	size_t		  n = 0, k = 0;

	memset(rel, 0, sizeof *rel);
	if ((rel->exe = open("/proc/self/exe", O_PATH | O_CLOEXEC)) == -1)
		return -1;
	rel->syslog = syslog;
	for (p = environ; *p != NULL; p++)
		n++;
	rel->envp = xcalloc(n + 1, sizeof *rel->envp);
	for (p = environ; *p != NULL; p++)
		if (!dropped(*p))
			rel->envp[k++] = xstrdup(*p);
	return 0;
}

void
guard_release_pack(struct guard_release *rel, const struct lock *l,
    const struct held_target *t)
{
	secret_free(rel->pack);
	rel->pack = held_pack(l, t, &rel->len);
}

void
guard_release_free(struct guard_release *rel)
{
	char	**p;

	if (rel->exe >= 0)
		close(rel->exe);
	secret_free(rel->pack);	/* wiped: the passwords */
	for (p = rel->envp; p != NULL && *p != NULL; p++)
		free(*p);
	free(rel->envp);
	memset(rel, 0, sizeof *rel);
	rel->exe = -1;
}

/* The guard's shared memory, mapped from GUARD_FD_SHARED; NULL if bad. */
static struct guard_shared *
shared_map(void)
{
	struct guard_shared	*sh;
	struct stat		 st;

	if (fstat(GUARD_FD_SHARED, &st) == -1 ||
	    st.st_size < (off_t)sizeof *sh || st.st_size > 1 << 20)
		return NULL;
	sh = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED,
	    GUARD_FD_SHARED, 0);
	close(GUARD_FD_SHARED);
	if (sh == MAP_FAILED)
		return NULL;
	if (sh->magic != GUARD_MAGIC || sh->size != (uint32_t)st.st_size ||
	    sh->release_len > sh->size - offsetof(struct guard_shared,
	    release)) {
		munmap(sh, (size_t)st.st_size);
		return NULL;
	}
	return sh;
}

int
guard_release_main(void)
{
	struct guard_shared	*sh;
	struct held_unpacked	 u;
	struct held		 h;
	struct err		 e;
	int			 rc;

#ifdef HAVE_PRCTL
	prctl(PR_SET_NAME, "rlock-guard");
	/* The passwords: not readable through /proc by what is left. */
	prctl(PR_SET_DUMPABLE, 0);
#endif
	err_clear(&e);
	if ((sh = shared_map()) == NULL)
		return EXIT_USAGE;
	log_set_level(LOG_LEVEL_QUIET);
	if (sh->release_syslog)
		log_open_syslog();
	if (sh->release_len == 0 ||
	    held_unpack(&u, sh->release, sh->release_len) == -1) {
		log_error("the guard's release: the lock rlock handed it is not "
		    "readable; it expires with its TTL");
		return EXIT_SOFTWARE;
	}
	/* No -w to end by, nor to offer: a release. */
	u.opts.end_ms = 0;
	u.opts.offer_wait = 0;
	held_clone(&h, &u.l, &u.t);
	/* As `rlock release --token` does (cmd-release.c). */
	rc = lock_release(&h.l, KILLED_REASON, &e);
	if (rc == -1 && (rc = lock_settle_release(&h.l, KILLED_REASON, 0,
	    &e)) == LOCK_SETTLED)
		rc = 1;
	if (rc == -1)
		log_error("release %s after rlock was killed: %s", h.l.name,
		    e.msg);
	else if (rc == 0)
		log_error("release %s after rlock was killed: not the holder "
		    "(the lock expired, or another token holds it)", h.l.name);
	held_free(&h);
	held_unpacked_free(&u);
	return rc == 1 ? 0 : rc == 0 ? EXIT_BUSY : err_exit_status(e.kind);
}
