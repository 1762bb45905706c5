/* main.c: rlock, a distributed lock for shell scripts and cron, backed by Redis. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "guard.h"

int
main(int argc, char **argv)
{
	/* exec's guard (guard.c), before anything else costs it time. */
	if (argc == 2 && strcmp(argv[1], GUARD_ARG) == 0)
		return guard_exec_main();
	return cmd_main(argc, argv);
}
