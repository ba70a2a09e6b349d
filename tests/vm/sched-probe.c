/* cachepin-sched-probe: hook/host/sched.c on the running kernel, for the VM suite
 * (tests/vm/sched-tests.sh) and for a person at a shell.  Not installed.
 *
 *   cachepin-sched-probe [--root DIR] [--as-uid UID] probe
 *   cachepin-sched-probe [--root DIR] set on|off
 *   cachepin-sched-probe core-create PID
 *
 * probe prints key=value lines (cas.avail, cas.iface, cas.enabled, cas.errno,
 * core.avail, core.errno, core.smt_active, smt_asym_packing); set prints
 * iface, before, after, written.  --as-uid drops to UID (and its gid) first, to
 * see what an unprivileged process sees.  Exit 1 with the error on stderr. */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched.h"

static int
fail (cp_error_t *err)
{
  fprintf (stderr, "cachepin-sched-probe: %s\n", cp_error_message (*err));
  cp_error_free (err);
  return 1;
}

static int
usage (void)
{
  fprintf (stderr, "usage: cachepin-sched-probe [--root DIR] [--as-uid UID] probe | set on|off | core-create PID\n");
  return 2;
}

static int
do_probe (const char *root)
{
  struct cp_sched_state st;
  cp_error_t err = NULL;
  if (cp_sched_probe (root, &st, &err) < 0)
    return fail (&err);
  printf ("cas.avail=%s\ncas.iface=%s\ncas.enabled=%d\ncas.errno=%d\n", cp_sched_avail_name (st.cas.avail),
          cp_sched_cas_iface_name (st.cas.iface), st.cas.enabled, st.cas.errnum);
  printf ("core.avail=%s\ncore.errno=%d\ncore.smt_active=%d\n", cp_sched_core_avail_name (st.core.avail),
          st.core.errnum, st.core.smt_active);
  printf ("smt_asym_packing=%s\n", cp_sched_boot_name (st.smt_asym_packing));
  return 0;
}

static int
do_set (const char *root, const char *value)
{
  if (strcmp (value, "on") != 0 && strcmp (value, "off") != 0)
    return usage ();
  struct cp_sched_cas_change ch;
  cp_error_t err = NULL;
  if (cp_sched_cas_set (root, strcmp (value, "on") == 0, &ch, &err) < 0)
    return fail (&err);
  printf ("iface=%s\nbefore=%d\nafter=%d\nwritten=%d\n", cp_sched_cas_iface_name (ch.iface), ch.before, ch.after,
          ch.written ? 1 : 0);
  return 0;
}

int
main (int argc, char **argv)
{
  const char *root = "/";
  int i = 1;
  for (; i + 1 < argc && argv[i][0] == '-'; i += 2)
    {
      if (strcmp (argv[i], "--root") == 0)
        root = argv[i + 1];
      else if (strcmp (argv[i], "--as-uid") == 0)
        {
          uid_t id = (uid_t) strtoul (argv[i + 1], NULL, 10);
          if (setgroups (0, NULL) < 0 || setresgid (id, id, id) < 0 || setresuid (id, id, id) < 0)
            {
              perror ("cachepin-sched-probe: drop privileges");
              return 1;
            }
        }
      else
        return usage ();
    }
  if (i < argc && strcmp (argv[i], "probe") == 0 && i + 1 == argc)
    return do_probe (root);
  if (i + 2 == argc && strcmp (argv[i], "set") == 0)
    return do_set (root, argv[i + 1]);
  if (i + 2 == argc && strcmp (argv[i], "core-create") == 0)
    {
      cp_error_t err = NULL;
      if (cp_sched_core_create ((pid_t) strtol (argv[i + 1], NULL, 10), &err) < 0)
        {
          printf ("errno=%d\n", cp_error_errno (err));
          return fail (&err);
        }
      printf ("errno=0\n");
      return 0;
    }
  return usage ();
}
