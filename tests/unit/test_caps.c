/* Capabilities given up (hook/host/caps.c), for real, in a child: afterwards
 * /proc/self/status says none effective, permitted, inheritable or ambient, and an
 * empty bounding set where the process could empty it (CAP_SETPCAP: root here);
 * something that needs a capability (CAP_SYS_ADMIN's sethostname to the same name)
 * is refused.  Without root, the sets were empty to start with: the call still
 * succeeds, and the bounding set is left as it was. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "util.h"

/* KEY's hex mask in /proc/self/status. */
static unsigned long long
mask (const char *key)
{
  FILE *f = fopen ("/proc/self/status", "re");
  char line[256];
  unsigned long long v = ~0ULL;
  size_t n = strlen (key);
  while (f && fgets (line, sizeof line, f))
    if (strncmp (line, key, n) == 0 && line[n] == ':')
      v = strtoull (line + n + 1, NULL, 16);
  if (f)
    fclose (f);
  return v;
}

static void
test_drop_all (void **state)
{
  (void) state;
  bool setpcap = (mask ("CapEff") >> 8) & 1; /* CAP_SETPCAP is 8 */
  unsigned long long bounding = mask ("CapBnd");
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      cp_error_t err = NULL;
      char host[256];
      int ok = cp_caps_drop_all (&err) == 0 && mask ("CapEff") == 0 && mask ("CapPrm") == 0
               && mask ("CapInh") == 0 && mask ("CapAmb") == 0
               && mask ("CapBnd") == (setpcap ? 0 : bounding) && gethostname (host, sizeof host) == 0
               && sethostname (host, strlen (host)) < 0 && errno == EPERM;
      if (err)
        fprintf (stderr, "%s\n", cp_error_message (err));
      _exit (ok ? 0 : 1);
    }
  int st;
  assert_int_equal (waitpid (child, &st, 0), child);
  assert_true (WIFEXITED (st));
  assert_int_equal (WEXITSTATUS (st), 0);
}

/* One kept: CAP_SYS_PTRACE (19) alone, effective, permitted and bounding, where we
   have it. */
static void
test_keep_one (void **state)
{
  (void) state;
  unsigned long long ptrace = mask ("CapEff") & (1ULL << 19);
  bool setpcap = (mask ("CapEff") >> 8) & 1;
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      cp_error_t err = NULL;
      int ok = cp_caps_keep_only (19, &err) == 0 && mask ("CapEff") == ptrace && mask ("CapPrm") == ptrace
               && mask ("CapInh") == 0 && (!setpcap || mask ("CapBnd") == (1ULL << 19));
      if (err)
        fprintf (stderr, "%s\n", cp_error_message (err));
      _exit (ok ? 0 : 1);
    }
  int st;
  assert_int_equal (waitpid (child, &st, 0), child);
  assert_true (WIFEXITED (st));
  assert_int_equal (WEXITSTATUS (st), 0);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_drop_all),
    cmocka_unit_test (test_keep_one),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
