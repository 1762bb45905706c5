/* guard-release.c: how the guard gives the lock back once rlock has died. */
#include "config.h"

/*
 * rlock's own binary, exec'ed as `rlock release` with rlock's settings
 * (settings_config_text) and passwords in pipes, never in argv or the
 * environment, which the command could read: everything is made here,
 * before the guard starts (guard.c), and used by the guard (rlock_died in
 * guard-run.c) only if rlock dies.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guard.h"
#include "util.h"

/* What the history says of that release. */
#define KILLED_REASON	"rlock was killed"

/* A pipe holding text, its write end closed: the read end, or -1. */
static int
text_pipe(const char *text)
{
	size_t	len = strlen(text), done = 0;
	ssize_t	n;
	int	p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	while (done < len) {
		n = write(p[1], text + done, len - done);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Larger than the pipe holds: no release, the TTL. */
			close(p[0]);
			close(p[1]);
			return -1;
		}
		done += (size_t)n;
	}
	close(p[1]);
	return p[0];
}

/* Not for the release: what the pipes say instead, and exec's own. */
static int
dropped(const char *entry)
{
	return strncmp(entry, "RLOCK_", 6) == 0 ||
	    strncmp(entry, "REDISCLI_AUTH=", 14) == 0;
}

int
guard_release_init(struct guard_release *rel, const char *config,
    const char *password, int password_argv, const char *sentinel_password,
    const char *const *extra, const char *name, const char *token)
{
	extern char	**environ;
	char		**p;
	size_t		  n = 0, k = 0;
	char		  cfg[32], pw[32], spw[32], *text, *t2;

	memset(rel, 0, sizeof *rel);
	rel->exe = rel->config = rel->password = rel->sentinel_password = -1;
	snprintf(cfg, sizeof cfg, "/dev/fd/%d", GUARD_FD_CONFIG);
	snprintf(pw, sizeof pw, "/dev/fd/%d", GUARD_FD_PASSWORD);
	snprintf(spw, sizeof spw, "/dev/fd/%d", GUARD_FD_SENTINEL_PASSWORD);
	/* Where exec had it: on the command line, or with the file's rank. */
	if (password != NULL && !password_argv)
		xasprintf(&text, "%spassword-file = %s\n", config, pw);
	else
		text = xstrdup(config);
	/* The sentinels' own, wherever it came from: their pipe. */
	if (sentinel_password != NULL) {
		xasprintf(&t2, "%ssentinel-password-file = %s\n", text, spw);
		explicit_bzero(text, strlen(text));
		free(text);
		text = t2;
	}
	rel->config = text_pipe(text);
	explicit_bzero(text, strlen(text));	/* URLs with passwords */
	free(text);
	if ((rel->exe = open("/proc/self/exe", O_PATH | O_CLOEXEC)) == -1 ||
	    rel->config == -1 ||
	    (password != NULL && (rel->password = text_pipe(password)) == -1) ||
	    (sentinel_password != NULL &&
	    (rel->sentinel_password = text_pipe(sentinel_password)) == -1))
		goto fail;
	for (n = 0; extra != NULL && extra[n] != NULL; n++)
		;
	rel->argv = xcalloc(n + 16, sizeof *rel->argv);
	rel->argv[k++] = xstrdup("rlock");
	rel->argv[k++] = xstrdup("--config");
	rel->argv[k++] = xstrdup(cfg);
	for (n = 0; extra != NULL && extra[n] != NULL; n++)
		rel->argv[k++] = xstrdup(extra[n]);
	if (password != NULL && password_argv) {
		rel->argv[k++] = xstrdup("--password-file");
		rel->argv[k++] = xstrdup(pw);
	}
	rel->argv[k++] = xstrdup("release");
	rel->argv[k++] = xstrdup("--reason");
	rel->argv[k++] = xstrdup(KILLED_REASON);
	rel->argv[k++] = xstrdup("--token");
	rel->argv[k++] = xstrdup(token);
	rel->argv[k++] = xstrdup("--");
	rel->argv[k++] = xstrdup(name);
	for (n = 0, p = environ; *p != NULL; p++)
		n++;
	rel->envp = xcalloc(n + 1, sizeof *rel->envp);
	for (k = 0, p = environ; *p != NULL; p++)
		if (!dropped(*p))
			rel->envp[k++] = xstrdup(*p);
	return 0;
fail:
	guard_release_free(rel);
	return -1;
}

static void
free_vector(char **v)
{
	char	**p;

	if (v == NULL)
		return;
	for (p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

void
guard_release_free(struct guard_release *rel)
{
	if (rel->exe >= 0)
		close(rel->exe);
	if (rel->config >= 0)
		close(rel->config);
	if (rel->password >= 0)
		close(rel->password);
	if (rel->sentinel_password >= 0)
		close(rel->sentinel_password);
	free_vector(rel->argv);
	free_vector(rel->envp);
	memset(rel, 0, sizeof *rel);
	rel->exe = rel->config = rel->password = rel->sentinel_password = -1;
}
