/* main.c: rlock, a distributed lock for shell scripts and cron, backed by Redis. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "guard.h"
#include "keeper.h"

int
main(int argc, char **argv)
{
	/* exec's guard (guard.c), before anything else costs it time. */
	if (argc == 2 && strcmp(argv[1], GUARD_ARG) == 0)
		return guard_exec_main();
	/* ... and its release, once rlock has died (guard-release.c). */
	if (argc == 2 && strcmp(argv[1], GUARD_RELEASE_ARG) == 0)
		return guard_release_main();
	/* acquire --hold's keeper's watcher (keeper.c). */
	if (argc == 2 && strcmp(argv[1], KEEPER_WATCH_ARG) == 0)
		return keeper_watch_main();
	return cmd_main(argc, argv);
}
