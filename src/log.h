/* log.h: messages on stderr, and to syslog with --syslog. */
#ifndef RLOCK_LOG_H
#define RLOCK_LOG_H

enum log_level {
	LOG_LEVEL_QUIET = -1,	/* -q: errors only */
	LOG_LEVEL_NORMAL = 0,	/* errors and warnings */
	LOG_LEVEL_VERBOSE = 1,	/* -v: timestamped progress */
};

void	log_set_level(int);
int	log_level(void);
/* "rlock: MESSAGE" -- always printed, even with -q. */
void	log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
/* "rlock: warning: MESSAGE" -- not with -q. */
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
/* A notable event: to syslog (with --syslog), and to stderr with -v. */
void	log_notice(const char *, ...) __attribute__((format(printf, 1, 2)));
/* Write each stderr line as a JSON object (--json). */
void	log_set_json(int);
/* Send errors, warnings and notices to syslog too (--syslog). */
void	log_open_syslog(void);
/* "rlock: 2026-11-22T01:33:40.123Z MESSAGE" -- only with -v. */
void	log_verbose(const char *, ...) __attribute__((format(printf, 1, 2)));

#endif
