/* doctor.h: the report rlock doctor writes, shared by its checks (cmd-doctor.c, doctor-acl.c). */
#ifndef RLOCK_DOCTOR_H
#define RLOCK_DOCTOR_H

#include "json.h"
#include "quorum.h"
#include "url.h"
#include "util.h"

enum severity { SEV_OK, SEV_INFO, SEV_WARN, SEV_ERROR };

struct report {
	struct buf	 out;
	int		 json;
	struct json	 j;		/* with json: the array of findings */
	enum severity	 worst;
	int		 broken;	/* this server answered a wrong shape */
	const char	*unusable;	/* the first server not usable */
};

/*
 * One finding: its severity, the server, the check, the message, and what
 * to do about it (remedy, or NULL); as a line, or with json an object.
 */
void	doctor_finding(struct report *, const char *server, const char *check,
	    enum severity, const char *remedy, const char *fmt, ...)
	    __attribute__((format(printf, 6, 7)));
/*
 * A reply of a shape Redis never gives to what was asked: an error finding,
 * and the server counts as one that cannot be used (exit 69).
 */
void	doctor_wrong_shape(struct report *, const char *server,
	    const char *check, const char *what, const struct redis_reply *);
/* An error reply that says the ACL stands in the way, or a renamed command. */
int	doctor_refused(const char *err);
/* Send argv and wait: the reply, an error reply too; NULL on a failure. */
struct redis_reply *doctor_ask(struct quorum *, int argc, const char **argv,
	    struct err *);
/*
 * May u's user run every command rlock sends, on keys under prefix
 * (doctor-acl.c)?  One finding, with the ACL SETUSER line that fixes it.
 */
void	doctor_check_acl(struct report *, struct quorum *, const struct url *,
	    const char *prefix, int cluster);

#endif
