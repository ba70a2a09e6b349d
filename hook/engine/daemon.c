/* What a long-running front end needs of the state directory (daemon.h). */
#include "daemon.h"

#include <errno.h>
#include <sys/stat.h>

#include "instance.h"
#include "journal.h"
#include "ledger.h"
#include "placer.h"
#include "recheck.h"
#include "sdnotify.h"
#include "ledger_store.h"
#include "topocache.h"
#include "util.h"

int
cp_daemon_lock_instance (const struct cp_hostconfig *hc, const char *kind, const char *key, cp_error_t *err)
{
  return cp_instance_lock (hc->state_dir, kind, key, err);
}

void
cp_daemon_keep_caches (void)
{
  cp_topocache_keep (true);
  cp_placer_recheck_after (CP_PLACER_RECHECK_SECONDS, NULL);
  cp_ledger_cache_keep (true);
  cp_journal_cache_keep (true);
}

int
cp_daemon_open_state (const struct cp_hostconfig *hc, struct cp_daemon_state *st, cp_error_t *err)
{
  struct stat sb;
  struct cp_ledger *l = NULL;
  if (cp_ledger_open (hc->state_dir, hc->lock_timeout_ms, &l, err) < 0)
    return -1;
  cp_ledger_close (l);
  if (stat (hc->state_dir, &sb) < 0)
    return cp_fail_errno (err, errno, "state directory %s", hc->state_dir);
  *st = (struct cp_daemon_state) { .dev = sb.st_dev, .ino = sb.st_ino };
  return 0;
}

char *
cp_daemon_state_trouble (const struct cp_hostconfig *hc, const struct cp_daemon_state *st)
{
  const char *dir = hc->state_dir;
  struct stat sb;
  if (stat (dir, &sb) < 0 || sb.st_dev != st->dev || sb.st_ino != st->ino)
    return cp_xasprintf ("the state directory %s was removed or replaced since the plugin started (its sandbox "
                         "reaches only the one it started with)", dir);
  static const char *const files[] = { CP_LEDGER_FILE, CP_LEDGER_LOCK_FILE };
  for (size_t i = 0; i < CP_ARRAY_SIZE (files); i++)
    {
      cleanup_free char *path = cp_xasprintf ("%s/%s", dir, files[i]);
      if (lstat (path, &sb) == 0 && !S_ISREG (sb.st_mode))
        return cp_xasprintf ("%s/%s is not a regular file (a link, a directory, a FIFO), which the sandboxed plugin "
                             "cannot set aside", dir, files[i]);
    }
  return NULL;
}

int
cp_daemon_ledger_readable (const struct cp_hostconfig *hc, cp_error_t *err)
{
  const char *state = NULL;
  struct cp_ledger *l = NULL;
  if (cp_ledger_read (hc->state_dir, &state, &l, err) < 0)
    return cp_error_wrap (err, "ledger in %s", hc->state_dir);
  cp_ledger_close (l);
  return 0;
}

bool
cp_daemon_notify_init (uint64_t *watchdog_usec)
{
  return cp_sdnotify_init (watchdog_usec);
}

void
cp_daemon_notify (const char *state)
{
  cp_sdnotify (state);
}
