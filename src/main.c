/* main.c: rlock, a distributed lock for shell scripts and cron, backed by Redis. */
#include <stdlib.h>

#include "cmd.h"

int
main(int argc, char **argv)
{
	return cmd_main(argc, argv);
}
