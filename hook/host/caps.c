/* cachepin: giving up capabilities (caps.h). */
#define _GNU_SOURCE
#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
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
drop_bounding (cp_error_t *err)
{
  for (unsigned long cap = 0;; cap++)
    {
      int in = prctl (PR_CAPBSET_READ, cap, 0, 0, 0);
      if (in < 0)
        return errno == EINVAL ? 0 : cp_fail_errno (err, errno, "capabilities: read the bounding set");
      /* EPERM: no CAP_SETPCAP to drop with.  The bounding set only bounds what an
         execve() gains, and the sandbox kills execve: the sets below are what count. */
      if (in == 1 && prctl (PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
        return errno == EPERM ? 0 : cp_fail_errno (err, errno, "capabilities: drop %lu from the bounding set", cap);
    }
}

static bool
none_left (void)
{
  struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
  if (syscall (SYS_capget, &hdr, data) < 0)
    return false;
  for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
    if (data[i].effective || data[i].permitted || data[i].inheritable)
      return false;
  return true;
}

int
cp_caps_drop_all (cp_error_t *err)
{
  if (drop_bounding (err) < 0)
    return -1;
  /* EINVAL: a kernel before 4.3, which has no ambient set. */
  if (prctl (PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return cp_fail_errno (err, errno, "capabilities: clear the ambient set");
  struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
  if (syscall (SYS_capset, &hdr, data) < 0)
    return cp_fail_errno (err, errno, "capabilities: capset to none");
  if (!none_left ())
    return cp_fail_runtime (err, "capabilities: capset to none, but some are still there");
  return 0;
}
