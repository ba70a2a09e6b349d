/* cachepin: giving up capabilities (caps.h). */
#define _GNU_SOURCE
#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* The bounding set: each capability still in it dropped (PR_CAPBSET_READ says 0 or 1,
   EINVAL past the last one this kernel knows). */
static int
drop_bounding (int keep, cp_error_t *err)
{
  for (unsigned long cap = 0;; cap++)
    {
      int in = keep >= 0 && cap == (unsigned long) keep ? 0 : prctl (PR_CAPBSET_READ, cap, 0, 0, 0);
      if (in < 0)
        return errno == EINVAL ? 0 : cp_fail_errno (err, errno, "capabilities: read the bounding set");
      /* EPERM: no CAP_SETPCAP to drop with.  The bounding set only bounds what an
         execve() gains, and the sandbox kills execve: the sets below are what count. */
      if (in == 1 && prctl (PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
        return errno == EPERM ? 0 : cp_fail_errno (err, errno, "capabilities: drop %lu from the bounding set", cap);
    }
}

static int
capget_self (struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3])
{
  struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  return (int) syscall (SYS_capget, &hdr, data);
}

static bool
only_left (const struct __user_cap_data_struct want[_LINUX_CAPABILITY_U32S_3])
{
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
  if (capget_self (data) < 0)
    return false;
  for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
    if (data[i].effective != want[i].effective || data[i].permitted != want[i].permitted || data[i].inheritable)
      return false;
  return true;
}

int
cp_caps_drop_all (cp_error_t *err)
{
  return cp_caps_keep_only (-1, err);
}

int
cp_caps_keep_only (int keep, cp_error_t *err)
{
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
  if (keep >= 0 && capget_self (data) < 0)
    return cp_fail_errno (err, errno, "capabilities: capget");
  struct __user_cap_data_struct want[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
  if (keep >= 0 && keep < 32 * _LINUX_CAPABILITY_U32S_3)
    {
      uint32_t bit = 1U << (keep % 32);
      want[keep / 32].permitted = data[keep / 32].permitted & bit;
      want[keep / 32].effective = want[keep / 32].permitted;
    }
  if (drop_bounding (keep, err) < 0)
    return -1;
  /* EINVAL: a kernel before 4.3, which has no ambient set. */
  if (prctl (PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return cp_fail_errno (err, errno, "capabilities: clear the ambient set");
  struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  if (syscall (SYS_capset, &hdr, want) < 0)
    return cp_fail_errno (err, errno, "capabilities: capset to none");
  if (!only_left (want))
    return cp_fail_runtime (err, "capabilities: capset to none, but some are still there");
  return 0;
}

bool
cp_caps_effective (int cap)
{
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  if (cap < 0 || cap >= 32 * _LINUX_CAPABILITY_U32S_3 || capget_self (data) < 0)
    return false;
  return (data[cap / 32].effective & (1U << (cap % 32))) != 0;
}
