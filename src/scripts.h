/* scripts.h: the Lua scripts compiled in from src/lua/, one per file. */
#ifndef RLOCK_SCRIPTS_H
#define RLOCK_SCRIPTS_H

struct script {
	const char	*name;
	const char	*body;
	char		 sha[41];	/* hex SHA1 of body, filled on first use */
};

extern struct script script_acquire;
extern struct script script_release;
extern struct script script_extend;
extern struct script script_force;
extern struct script script_inspect;
extern struct script script_fence;

/* All of the above, NULL-terminated. */
extern struct script *scripts_all[];

#endif
