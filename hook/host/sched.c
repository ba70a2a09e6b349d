/* cachepin: the scheduler features (sched.h) but cache-aware scheduling's switch
 * (sched_cas.c): core scheduling's prctl, the sched_smt_asym_packing boot option,
 * the probe of everything, and the names. */
#define _GNU_SOURCE
#include "sched_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "io.h"
#include "util.h"

#define CMDLINE_MAX 16384

int
cp_sched_open_root (const char *root, cp_error_t *err)
{
  int fd = open (root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open root %s", root);
  return fd;
}

/* ------------------------------------------------------------------ core scheduling */

int
cp_sched_core_classify (int rc, int errnum, int smt_active, struct cp_sched_core *out, cp_error_t *err)
{
  *out = (struct cp_sched_core) { .avail = CP_SCHED_CORE_SUPPORTED, .smt_active = smt_active };
  if (rc == 0)
    return 0;
  out->errnum = errnum;
  switch (errnum)
    {
    case EINVAL: /* kernel/sys.c: PR_SCHED_CORE is compiled out, an unknown option */
      out->avail = CP_SCHED_CORE_NO_CONFIG;
      return 0;
    case ENODEV: /* kernel/sched/core_sched.c: !sched_smt_present */
      out->avail = CP_SCHED_CORE_NO_SMT;
      return 0;
    case EPERM:
    case EACCES:
      out->avail = CP_SCHED_CORE_DENIED;
      return 0;
    default:
      return cp_fail_errno (err, errnum ? errnum : EIO, "prctl(PR_SCHED_CORE_GET)");
    }
}

/* ROOT/sys/devices/system/cpu/smt/active: 1, 0, or -1 (absent or unreadable:
 * the file is only informative). */
static int
smt_active (int rootfd)
{
  cleanup_free char *text = NULL;
  cleanup_error cp_error_t ignored = NULL;
  if (cp_io_read_at (rootfd, "sys/devices/system/cpu/smt/active", 0, "smt/active", CP_SCHED_SWITCH_MAX, CP_IO_NO_NUL,
                     &text, NULL, &ignored)
      < 0)
    return -1;
  return cp_sched_parse_switch (text);
}

int
cp_sched_core_create (pid_t pid, cp_error_t *err)
{
  if (prctl (PR_SCHED_CORE, PR_SCHED_CORE_CREATE, (unsigned long) pid, CP_PIDTYPE_TGID, 0UL) < 0)
    return cp_fail_errno (err, errno, "core scheduling: create a cookie for pid %ld", (long) pid);
  return 0;
}

/* ------------------------------------------------------------------ boot option */

/* The kernel's kstrtobool(): y/Y/1/on true, n/N/0/off false. */
static enum cp_sched_boot
parse_bool (const char *v)
{
  switch (v[0])
    {
    case 'y':
    case 'Y':
    case '1':
      return CP_SCHED_BOOT_ON;
    case 'n':
    case 'N':
    case '0':
      return CP_SCHED_BOOT_OFF;
    case 'o':
    case 'O':
      if (v[1] == 'n' || v[1] == 'N')
        return CP_SCHED_BOOT_ON;
      if (v[1] == 'f' || v[1] == 'F')
        return CP_SCHED_BOOT_OFF;
      return CP_SCHED_BOOT_INVALID;
    default:
      return CP_SCHED_BOOT_INVALID;
    }
}

enum cp_sched_boot
cp_sched_boot_parse (const char *cmdline)
{
  static const char key[] = "sched_smt_asym_packing";
  enum cp_sched_boot found = CP_SCHED_BOOT_UNSET;
  cleanup_free char *copy = cp_xstrdup (cmdline);
  char *save = NULL;
  for (char *w = strtok_r (copy, " \t\n", &save); w; w = strtok_r (NULL, " \t\n", &save))
    {
      if (strcmp (w, "--") == 0) /* the rest is init's */
        break;
      if (strncmp (w, key, sizeof key - 1) != 0)
        continue;
      const char *rest = w + sizeof key - 1;
      if (*rest == '\0') /* a bare bool parameter is true */
        found = CP_SCHED_BOOT_ON;
      else if (*rest == '=')
        found = parse_bool (rest + 1);
    }
  return found;
}

static enum cp_sched_boot
boot_probe (int rootfd)
{
  cleanup_free char *text = NULL;
  cleanup_error cp_error_t ignored = NULL;
  if (cp_io_read_at (rootfd, "proc/cmdline", 0, "/proc/cmdline", CMDLINE_MAX, CP_IO_NO_NUL, &text, NULL, &ignored)
      < 0)
    return CP_SCHED_BOOT_UNKNOWN;
  return cp_sched_boot_parse (text);
}

/* ------------------------------------------------------------------ everything */

int
cp_sched_core_probe (const char *root, struct cp_sched_core *out, cp_error_t *err)
{
  cleanup_close int rootfd = cp_sched_open_root (root, err);
  if (rootfd < 0)
    return -1;
  uint64_t cookie = 0;
  int rc = prctl (PR_SCHED_CORE, PR_SCHED_CORE_GET, 0UL, CP_PIDTYPE_PID, (unsigned long) (uintptr_t) &cookie);
  int e = rc < 0 ? errno : 0;
  if (cp_sched_core_classify (rc, e, smt_active (rootfd), out, err) < 0)
    return cp_error_wrap (err, "core scheduling");
  return 0;
}

enum cp_sched_boot
cp_sched_boot_probe (const char *root)
{
  cleanup_error cp_error_t ignored = NULL;
  cleanup_close int rootfd = cp_sched_open_root (root, &ignored);
  return rootfd < 0 ? CP_SCHED_BOOT_UNKNOWN : boot_probe (rootfd);
}

int
cp_sched_probe (const char *root, struct cp_sched_state *out, cp_error_t *err)
{
  *out = (struct cp_sched_state) { 0 };
  if (cp_sched_cas_probe (root, &out->cas, err) < 0 || cp_sched_core_probe (root, &out->core, err) < 0)
    return -1;
  out->smt_asym_packing = cp_sched_boot_probe (root);
  return 0;
}

/* ------------------------------------------------------------------ names */

const char *
cp_sched_core_avail_name (enum cp_sched_core_avail avail)
{
  switch (avail)
    {
    case CP_SCHED_CORE_SUPPORTED:
      return "supported";
    case CP_SCHED_CORE_NO_CONFIG:
      return "unsupported";
    case CP_SCHED_CORE_NO_SMT:
      return "no-smt";
    case CP_SCHED_CORE_DENIED:
      return "denied";
    default:
      return "unknown";
    }
}

const char *
cp_sched_boot_name (enum cp_sched_boot boot)
{
  switch (boot)
    {
    case CP_SCHED_BOOT_UNSET:
      return "unset";
    case CP_SCHED_BOOT_ON:
      return "on";
    case CP_SCHED_BOOT_OFF:
      return "off";
    case CP_SCHED_BOOT_INVALID:
      return "invalid";
    case CP_SCHED_BOOT_UNKNOWN:
    default:
      return "unknown";
    }
}
