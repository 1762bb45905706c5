/* err.c: fill and map struct err. */
#include <stdio.h>
#include <string.h>

#include "err.h"

void
err_vset(struct err *e, enum err_kind kind, const char *fmt, va_list ap)
{
	e->kind = kind;
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
}

void
err_set(struct err *e, enum err_kind kind, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	err_vset(e, kind, fmt, ap);
	va_end(ap);
}

void
err_prefix(struct err *e, const char *fmt, ...)
{
	char	head[256], old[sizeof e->msg];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof old);
	/* A long message is cut short rather than lost. */
	if (snprintf(e->msg, sizeof e->msg, "%s: %s", head, old) < 0)
		e->msg[0] = '\0';
}

void
err_clear(struct err *e)
{
	e->kind = ERR_NONE;
	e->signo = 0;
	e->msg[0] = '\0';
}

int
err_exit_status(enum err_kind kind)
{
	switch (kind) {
	case ERR_NONE:
		return 0;
	case ERR_BUSY:
	case ERR_NOT_HOLDER:
		return EXIT_BUSY;
	case ERR_USAGE:
		return EXIT_USAGE;
	case ERR_UNAVAILABLE:
	case ERR_TIMEOUT:
	case ERR_REFUSED:
	case ERR_AUTH:
	case ERR_PROTOCOL:
	case ERR_REPLY:
		return EXIT_UNAVAILABLE;
	case ERR_LOST:
		return EXIT_LOST;
	case ERR_DEADLOCK:
		return EXIT_DEADLOCK;
	case ERR_INTERRUPTED:
	case ERR_SOFTWARE:
		break;
	}
	return EXIT_SOFTWARE;
}

int
err_unavailable(enum err_kind kind)
{
	return err_exit_status(kind) == EXIT_UNAVAILABLE;
}
