/* cachepin: logging to syslog and stderr.
 *
 * A runtime shows a hook's stderr only when the hook fails (runc) or not at all
 * (crun sends it to /dev/null), so every decision also goes to syslog. */
#ifndef CP_LOG_H
#define CP_LOG_H

#include <stdbool.h>

#include "error.h"

enum cp_log_level
{
  CP_LOG_ERROR = 0,
  CP_LOG_WARNING,
  CP_LOG_INFO,
  CP_LOG_DEBUG,
};

/* Open syslog now (LOG_NDELAY), before any sandbox forbids the socket.  With
   TO_STDERR, a process whose stderr is systemd's journal stream ($JOURNAL_STREAM: the
   NRI plugin as a service) logs to stderr alone, each line with its priority prefix
   (`<4>`), cp_log_syslog()'s too: the journal would otherwise hold every line twice. */
void cp_log_init (const char *ident, bool to_stderr);
void cp_log_set_level (enum cp_log_level level);
int cp_log_parse_level (const char *s, enum cp_log_level *out, cp_error_t *err);

void cp_log (enum cp_log_level level, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

/* To syslog only: for an error main() is about to print on stderr itself, so
   that stderr carries it once. */
void cp_log_syslog (enum cp_log_level level, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

/* To syslog and to stderr whatever cp_log_init() said: what the user asked for
   and is placed without (cachepin.io/isolate), which `apply`, logging to syslog
   only, must still show. */
void cp_log_tell (enum cp_log_level level, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));

#endif
