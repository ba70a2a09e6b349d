#define _GNU_SOURCE
#include "log.h"
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

static enum cp_log_level current_level = CP_LOG_INFO;
static bool log_stderr = true;
static bool syslog_open = false;

static const char *const level_names[] = { "error", "warning", "info", "debug" };
static const int syslog_priority[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

void
cp_log_init (const char *ident, bool to_stderr)
{
  openlog (ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
  syslog_open = true;
  log_stderr = to_stderr;
}

void
cp_log_set_level (enum cp_log_level level)
{
  current_level = level;
}

int
cp_log_parse_level (const char *s, enum cp_log_level *out, cp_error_t *err)
{
  for (size_t i = 0; i < sizeof level_names / sizeof *level_names; i++)
    if (strcmp (s, level_names[i]) == 0)
      {
        *out = (enum cp_log_level) i;
        return 0;
      }
  return cp_fail_input (err, "invalid value `%.64s` (expected error|warning|info|debug)", s);
}

static void vlog (enum cp_log_level level, bool to_stderr, const char *fmt, va_list ap)
    __attribute__ ((format (printf, 3, 0)));

static void
vlog (enum cp_log_level level, bool to_stderr, const char *fmt, va_list ap)
{
  if (level > current_level)
    return;
  char line[2048];
  vsnprintf (line, sizeof line, fmt, ap);
  /* One line per message a terminal shows as it is, whatever the input put in
     it (policy/base/text.h); also where vsnprintf cut a sequence short. */
  cp_text_sanitize (line);
  if (syslog_open)
    syslog (syslog_priority[level], "%s", line);
  if (to_stderr)
    fprintf (stderr, "cachepin: %s: %s\n", level_names[level], line);
}

void
cp_log (enum cp_log_level level, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  vlog (level, log_stderr, fmt, ap);
  va_end (ap);
}

void
cp_log_syslog (enum cp_log_level level, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  vlog (level, false, fmt, ap);
  va_end (ap);
}

void
cp_log_tell (enum cp_log_level level, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  vlog (level, true, fmt, ap);
  va_end (ap);
}
