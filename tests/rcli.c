/*
 * rcli: redis-cli for the tests' plain commands, at a tenth of its start.
 *
 * The suite asks its servers some tens of thousands of questions, most of
 * them one command from a shell function; Debian's redis-cli loads
 * OpenSSL, systemd's library and jemalloc to answer each, which made the
 * asking cost as much CPU as the rlock processes under test.  This does
 * what redis-cli does when its output goes to a pipe, for one command over
 * TCP or a Unix socket:
 *
 *	rcli [-h HOST] [-p PORT] [-s SOCKET] [--no-auth-warning] [--raw]
 *	    COMMAND [ARG...]
 *
 * and hands anything else (another option, a password, a terminal on
 * standard output, no command, a command that streams, that redis-cli
 * formats its own way or that ends the connection) to the real redis-cli,
 * as it was given.  The reply is printed as redis-cli's raw mode prints
 * it: a string as it is, an integer in decimal, nil as nothing, an
 * error's message and an empty line, an array's elements one a line
 * (nested ones flattened), and a newline after the whole, but for the
 * reports redis-cli prints verbatim (INFO, CLIENT LIST and INFO, CLUSTER
 * NODES and INFO).  Like redis-cli, it exits 0 whatever the reply, and 1
 * when it cannot connect or the connection fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

static void
print_reply(const redisReply *r)
{
	size_t	i;

	switch (r->type) {
	case REDIS_REPLY_NIL:
		break;
	case REDIS_REPLY_INTEGER:
		printf("%lld", r->integer);
		break;
	case REDIS_REPLY_ERROR:
		fwrite(r->str, 1, r->len, stdout);
		putchar('\n');
		break;
	case REDIS_REPLY_ARRAY:
		for (i = 0; i < r->elements; i++) {
			if (i > 0)
				putchar('\n');
			print_reply(r->element[i]);
		}
		break;
	default:	/* a string or a status */
		if (r->str != NULL)
			fwrite(r->str, 1, r->len, stdout);
		break;
	}
}

static void
redis_cli(char **argv)
{
	argv[0] = "redis-cli";
	execvp(argv[0], argv);
	perror("rcli: redis-cli");
	exit(127);
}

/* Commands redis-cli streams, formats its own way or ends on: its own. */
static int
special(const char *cmd)
{
	static const char *const list[] = {
		"monitor", "subscribe", "psubscribe", "ssubscribe", "sync",
		"psync", "hello", "lolwut", "debug", "memory", "latency",
		"proxy", "reset", "select", "auth", "quit", "shutdown", NULL
	};
	int	i;

	for (i = 0; list[i] != NULL; i++)
		if (strcasecmp(cmd, list[i]) == 0)
			return 1;
	return 0;
}

/* A report redis-cli prints as it came, with no newline added. */
static int
verbatim(int argc, char **argv)
{
	return strcasecmp(argv[0], "info") == 0 ||
	    (argc >= 2 && strcasecmp(argv[0], "client") == 0 &&
	    (strcasecmp(argv[1], "list") == 0 ||
	    strcasecmp(argv[1], "info") == 0)) ||
	    (argc == 2 && strcasecmp(argv[0], "cluster") == 0 &&
	    (strcasecmp(argv[1], "nodes") == 0 ||
	    strcasecmp(argv[1], "info") == 0));
}

int
main(int argc, char **argv)
{
	const char	*host = "127.0.0.1", *sock = NULL;
	int		 port = 6379, i;
	redisContext	*c;
	redisReply	*r;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-h") == 0 && i + 1 < argc)
			host = argv[++i];
		else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			sock = argv[++i];
		else if (strcmp(argv[i], "--no-auth-warning") != 0 &&
		    strcmp(argv[i], "--raw") != 0)
			redis_cli(argv);
	}
	if (i == argc || isatty(STDOUT_FILENO) || special(argv[i]))
		redis_cli(argv);

	c = sock != NULL ? redisConnectUnix(sock) : redisConnect(host, port);
	if (c == NULL || c->err) {
		if (sock != NULL)
			fprintf(stderr, "Could not connect to Redis at %s: %s\n",
			    sock, c != NULL ? c->errstr : "out of memory");
		else
			fprintf(stderr, "Could not connect to Redis at %s:%d: %s\n",
			    host, port, c != NULL ? c->errstr : "out of memory");
		return 1;
	}
	r = redisCommandArgv(c, argc - i, (const char **)argv + i, NULL);
	if (r == NULL) {
		fprintf(stderr, "Error: %s\n", c->errstr);
		return 1;
	}
	print_reply(r);
	if (!verbatim(argc - i, argv + i))
		putchar('\n');
	return fflush(stdout) == 0 ? 0 : 1;
}
