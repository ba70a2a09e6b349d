/* Where the log goes (policy/base/log.c): a process whose stderr is the journal's
 * stream, as systemd names it in $JOURNAL_STREAM (device:inode of fd 2), writes every
 * line once, to stderr, with its priority prefix, the syslog-only lines too; with
 * $JOURNAL_STREAM naming another file (fd 2 redirected), or absent, stderr lines are
 * plain.  Each case in a child: cp_log_init() holds for the process. */
#define _GNU_SOURCE
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* What a child logging with stderr on a file wrote there; JOURNAL: "same" (the file's
   dev:ino), "other" (another file's) or NULL (unset). */
static char *
logged (const char *journal)
{
  char path[] = "/tmp/cp-log-XXXXXX";
  int fd = mkstemp (path);
  assert_true (fd >= 0);
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      dup2 (fd, STDERR_FILENO);
      struct stat st;
      fstat (STDERR_FILENO, &st);
      char js[64];
      snprintf (js, sizeof js, "%llu:%llu", (unsigned long long) st.st_dev,
                (unsigned long long) st.st_ino + (journal && strcmp (journal, "other") == 0 ? 1 : 0));
      if (journal)
        setenv ("JOURNAL_STREAM", js, 1);
      else
        unsetenv ("JOURNAL_STREAM");
      cp_log_init ("cachepin-test", true);
      cp_log (CP_LOG_WARNING, "placed without it");
      cp_log_syslog (CP_LOG_ERROR, "container x not started");
      _exit (0);
    }
  int st;
  assert_int_equal (waitpid (child, &st, 0), child);
  assert_true (WIFEXITED (st) && WEXITSTATUS (st) == 0);
  char buf[512] = { 0 };
  assert_true (pread (fd, buf, sizeof buf - 1, 0) >= 0);
  close (fd);
  unlink (path);
  return cp_xstrdup (buf);
}

static void
test_journal_stream (void **state)
{
  (void) state;
  cleanup_free char *out = logged ("same");
  assert_string_equal (out, "<4>cachepin: warning: placed without it\n<3>cachepin: error: container x not started\n");
}

static void
test_not_the_journal (void **state)
{
  (void) state;
  cleanup_free char *other = logged ("other");
  assert_string_equal (other, "cachepin: warning: placed without it\n");
  cleanup_free char *unset = logged (NULL);
  assert_string_equal (unset, "cachepin: warning: placed without it\n");
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_journal_stream),
    cmocka_unit_test (test_not_the_journal),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
