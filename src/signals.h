/* signals.h: the flag a caught signal sets, and which signals rlock inherited ignored. */
#ifndef RLOCK_SIGNALS_H
#define RLOCK_SIGNALS_H

#include <signal.h>

/*
 * While a command talks to Redis, SIGINT, SIGTERM, SIGHUP and SIGQUIT only
 * set signal_caught to the signal's number: every wait below the command
 * layer looks at it and gives up with ERR_INTERRUPTED, the command gives
 * back what it holds, and then dies of the signal (signals_reraise).
 */
extern volatile sig_atomic_t	signal_caught;

/*
 * Install the handlers.  A signal that was ignored when rlock started
 * (nohup's SIGHUP) stays ignored in every phase, and for exec's command.
 */
void	signals_catch(void);
/* The signals found ignored at start. */
void	signals_ignored(sigset_t *);
/*
 * If a signal interrupted the command, restore its default action and
 * raise it again, so the caller sees rlock die of it, as a shell would.
 */
void	signals_reraise(void);

#endif
