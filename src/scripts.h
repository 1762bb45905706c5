/*
 * scripts.h: the Lua scripts compiled in from src/lua/, one per file, and
 * exec --every's variants of acquire and release (see src/lua/embed.sh).
 */
#ifndef RLOCK_SCRIPTS_H
#define RLOCK_SCRIPTS_H

struct script {
	const char	*name;
	const char	*sha;	/* hex SHA1 of body, computed at build time */
	const char	*body;
};

extern struct script script_acquire;
extern struct script script_release;
extern struct script script_acquire_every;
extern struct script script_release_every;
extern struct script script_extend;
extern struct script script_force;
extern struct script script_inspect;
extern struct script script_fence;
extern struct script script_note;
extern struct script script_log;
extern struct script script_sched;

/* All of the above, NULL-terminated. */
extern struct script *scripts_all[];

#endif
