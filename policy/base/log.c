#define _GNU_SOURCE
#include "log.h"
#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

static enum cp_log_level current_level = CP_LOG_INFO;
static bool log_stderr = true;
static bool syslog_open = false;

static const char *const level_names[] = { "error", "warning", "info", "debug" };
static const int syslog_priority[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

static bool journal; /* stderr is the journal's stream: the one copy of every line */

/* A service whose stderr systemd connected to the journal: $JOURNAL_STREAM names that
   stream's device and inode (systemd.exec(5)), and fd 2 is still it (not redirected by
   a child's caller).  The journal then has each stderr line already, and syslog's copy,
   which journald also reads, would be the second. */
static bool
stderr_is_journal (void)
{
  const char *js = getenv ("JOURNAL_STREAM");
  unsigned long long dev, ino;
  char extra;
  struct stat st;
  if (js == NULL || sscanf (js, "%llu:%llu%c", &dev, &ino, &extra) != 2 || fstat (STDERR_FILENO, &st) < 0)
    return false;
  return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void
cp_log_init (const char *ident, bool to_stderr)
{
  log_stderr = to_stderr;
  journal = to_stderr && stderr_is_journal ();
  if (journal)
    return; /* stderr alone, the field's way for a service (systemd's daemon(7)) */
  openlog (ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
  syslog_open = true;
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
  if (journal) /* every line, the syslog-only ones too; <N>: its priority (sd-daemon(3)) */
    fprintf (stderr, "<%d>cachepin: %s: %s\n", syslog_priority[level], level_names[level], line);
  else if (to_stderr)
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
