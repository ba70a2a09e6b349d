/* Helpers shared by the stress and crash tests. */
#define _GNU_SOURCE
#include "stresslib.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ledger.h"
#include "cpulist.h"
#include "util.h"

#define CAPTURED "hwloc/x86-AMD-19h-Zen4-2xEpyc-9654.xml"
/* The shape of a 2x EPYC 9654: 24 L3s of 8 cores, SMT2 numbered N and N+192. */
#define SYNTHETIC "package:2 l3cache:12 core:8 pu:2(indexes=core)"

static char *kept_root;

void
st_fail (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  fprintf (stderr, "FAIL: ");
  vfprintf (stderr, fmt, ap);
  fprintf (stderr, "\n");
  va_end (ap);
  if (kept_root)
    fprintf (stderr, "(kept %s for inspection)\n", kept_root);
  fflush (NULL);
  exit (1);
}

struct cp_topo *
st_topology (void)
{
  const char *dir = getenv ("CACHEPIN_TOPOLOGIES");
  cleanup_free char *xml = cp_xasprintf ("%s/" CAPTURED, dir ? dir : "");
  const char *source = dir && access (xml, R_OK) == 0 ? xml : SYNTHETIC;
  struct cp_topo *topo = NULL;
  cp_error_t err = NULL;
  if (cp_topo_load (source, &topo, &err) < 0)
    st_fail ("topology %s: %s", source, cp_error_message (err));
  printf ("topology: %s (%d PUs, %u cores, %u LLCs)%s\n", source, hwloc_bitmap_weight (topo->allowed), topo->n_cores,
          topo->n_domains[CP_LEVEL_LLC], source == xml ? " [captured]" : " [synthetic: captured file not found]");
  return topo;
}

char *
st_make_root (const char *tag)
{
  const char *tmp = getenv ("TMPDIR");
  char *root = cp_xasprintf ("%s/cp-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
  if (mkdtemp (root) == NULL)
    st_fail ("mkdtemp %s: %s", root, strerror (errno));
  free (kept_root);
  kept_root = cp_xstrdup (root);
  return root;
}

static int
rm_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st, (void) flag, (void) ftw;
  return remove (path);
}

void
st_remove_tree (const char *root)
{
  nftw (root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free (kept_root);
  kept_root = NULL;
}

/* The hierarchies this process mounted, by mount point, for st_cgroup_unmount(). */
#define ST_MAX_HIERARCHIES 64
static struct
{
  char *dir;
  char *name;
} hierarchies[ST_MAX_HIERARCHIES];

static char *
hierarchy_opts (const char *name)
{
  return cp_xasprintf ("none,name=%s", name);
}

void
st_cgroup_mount (const char *dir)
{
  static bool own_namespace;
  static unsigned n;
  if (!own_namespace && (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0))
    st_fail ("a mount namespace of our own (root needed): %s", strerror (errno));
  own_namespace = true;
  unsigned slot = 0;
  while (slot < ST_MAX_HIERARCHIES && hierarchies[slot].dir)
    slot++;
  st_check (slot < ST_MAX_HIERARCHIES, "more than %d cgroup hierarchies mounted at once", ST_MAX_HIERARCHIES);
  char *name = cp_xasprintf ("cachepin-stress-%d-%u", (int) getpid (), n++);
  char *opts = hierarchy_opts (name);
  if (mount ("none", dir, "cgroup", 0, opts) < 0)
    st_fail ("mount a cgroup hierarchy (%s) on %s: %s", opts, dir, strerror (errno));
  free (opts);
  hierarchies[slot].dir = cp_xstrdup (dir);
  hierarchies[slot].name = name;
}

static int
cg_rmdir_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st;
  if (flag == FTW_DP && ftw->level > 0)
    rmdir (path);
  return 0;
}

/* Whether /proc/self/cgroup, which lists every v1 hierarchy there is (mounted or
   not, in any mount namespace), has one whose name starts with PREFIX
   ("cachepin-stress-12-3:" for that one, "cachepin-stress-12-" for any of 12's). */
static bool
hierarchy_listed (const char *prefix)
{
  cleanup_free char *text = st_read_file ("/proc/self/cgroup", NULL);
  st_check (text != NULL, "read /proc/self/cgroup");
  cleanup_free char *needle = cp_xasprintf (":name=%s", prefix);
  return strstr (text, needle) != NULL;
}

/* The kernel destroys a v1 hierarchy at its last umount only if its list of
   children is already empty, and a removed child leaves that list later
   (asynchronously, once its last reference goes): an umount right after the
   rmdirs leaves the hierarchy behind, in every process's /proc/<pid>/cgroup,
   until the next boot.  So while it is still listed, mount it again by its name
   (its children are gone by then) and umount it again.  A hierarchy being
   destroyed is also listed until that is done (asynchronously too): give that
   200 ms before each new try.  About 5 s at most. */
static void
hierarchy_destroy (const char *dir, const char *name)
{
  cleanup_free char *listed = cp_xasprintf ("%s:", name);
  cleanup_free char *opts = hierarchy_opts (name);
  for (int i = 1; i <= 250 && hierarchy_listed (listed); i++)
    {
      usleep (20 * 1000);
      if (i % 10 == 0 && hierarchy_listed (listed) && mount ("none", dir, "cgroup", 0, opts) == 0 && umount (dir) < 0)
        st_fail ("umount %s (%s again): %s", dir, name, strerror (errno));
    }
  st_check (!hierarchy_listed (listed), "the cgroup hierarchy %s outlived its umount", name);
}

void
st_cgroup_unmount (const char *dir)
{
  unsigned slot = 0;
  while (slot < ST_MAX_HIERARCHIES && !(hierarchies[slot].dir && strcmp (hierarchies[slot].dir, dir) == 0))
    slot++;
  st_check (slot < ST_MAX_HIERARCHIES, "%s: not a hierarchy st_cgroup_mount() mounted", dir);
  nftw (dir, cg_rmdir_one, 16, FTW_DEPTH | FTW_PHYS);
  if (umount (dir) < 0)
    st_fail ("umount %s: %s", dir, strerror (errno));
  hierarchy_destroy (dir, hierarchies[slot].name);
  free (hierarchies[slot].dir);
  free (hierarchies[slot].name);
  hierarchies[slot].dir = hierarchies[slot].name = NULL;
}

void
st_cgroup_check_gone (void)
{
  cleanup_free char *mine = cp_xasprintf ("cachepin-stress-%d-", (int) getpid ());
  st_check (!hierarchy_listed (mine), "a cgroup hierarchy of this test (name=%s*) is left in /proc/self/cgroup", mine);
}

long long
st_now_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

char *
st_read_file (const char *path, size_t *len)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      if (errno == ENOENT)
        return NULL;
      st_fail ("open %s: %s", path, strerror (errno));
    }
  size_t cap = 64 * 1024, n = 0;
  char *buf = cp_xmalloc0 (cap);
  for (;;)
    {
      if (n + 1 == cap)
        buf = cp_xrealloc (buf, cap *= 2);
      ssize_t r = read (fd, buf + n, cap - n - 1);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        st_fail ("read %s: %s", path, strerror (errno));
      if (r == 0)
        break;
      n += (size_t) r;
    }
  close (fd);
  buf[n] = '\0';
  if (len)
    *len = n;
  return buf;
}

bool
st_exists (const char *path)
{
  struct stat st;
  return lstat (path, &st) == 0;
}

void
st_die_with_parent (void)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  if (getppid () == 1)
    _exit (0);
}

pid_t
st_spawn_holder (void)
{
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    st_fail ("fork: %s", strerror (errno));
  if (pid == 0)
    {
      st_die_with_parent ();
      for (;;)
        pause ();
    }
  return pid;
}

void
st_kill_holder (pid_t pid)
{
  if (kill (pid, SIGKILL) < 0)
    st_fail ("kill %d: %s", (int) pid, strerror (errno));
  int status;
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      st_fail ("waitpid %d: %s", (int) pid, strerror (errno));
}

/* ------------------------------------------------------ independent checks */

/* Strict cpulist reader written for the tests: "", "N", "A-B" joined by ','; no
 * leading zeros, A <= B, nothing else.  Sets MARK[cpu] for each CPU; returns the
 * number of CPUs or -1. */
static int
read_cpulist (const char *s, unsigned char *mark)
{
  memset (mark, 0, CP_CPULIST_MAX + 1);
  if (*s == '\0')
    return 0;
  int count = 0;
  for (;;)
    {
      long range[2];
      int k = 0;
      for (;;)
        {
          if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
            return -1;
          long v = 0;
          while (*s >= '0' && *s <= '9')
            {
              v = v * 10 + (*s++ - '0');
              if (v > CP_CPULIST_MAX)
                return -1;
            }
          range[k++] = v;
          if (k == 2 || *s != '-')
            break;
          s++;
        }
      if (k == 1)
        range[1] = range[0];
      if (range[1] < range[0])
        return -1;
      for (long c = range[0]; c <= range[1]; c++)
        {
          if (mark[c])
            return -1;
          mark[c] = 1;
          count++;
        }
      if (*s == '\0')
        return count;
      if (*s != ',')
        return -1;
      s++;
    }
}

static int
fail_why (char **why, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  if (vasprintf (why, fmt, ap) < 0)
    abort ();
  va_end (ap);
  return -1;
}

static const char *
str_field (struct json_object *o, const char *key)
{
  struct json_object *v;
  if (!json_object_object_get_ex (o, key, &v) || !json_object_is_type (v, json_type_string))
    return NULL;
  return json_object_get_string (v);
}

static bool
int_field (struct json_object *o, const char *key, long long *out)
{
  struct json_object *v;
  if (!json_object_object_get_ex (o, key, &v) || !json_object_is_type (v, json_type_int))
    return false;
  *out = (long long) json_object_get_int64 (v);
  return true;
}

static int
check_json (struct json_object *root, struct st_ledger *out, char **why)
{
  struct json_object *v, *entries;
  if (!json_object_is_type (root, json_type_object) || !json_object_object_get_ex (root, "version", &v)
      || !json_object_is_type (v, json_type_int) || json_object_get_int64 (v) != CP_LEDGER_VERSION)
    return fail_why (why, "not a current-version ledger");
  if (!json_object_object_get_ex (root, "entries", &entries) || !json_object_is_type (entries, json_type_array))
    return fail_why (why, "no entries array");
  size_t n = json_object_array_length (entries);
  out->e = cp_xcalloc (n ? n : 1, sizeof *out->e);
  cleanup_free unsigned char *cpus = cp_xmalloc0 (CP_CPULIST_MAX + 1);
  cleanup_free unsigned char *held = cp_xmalloc0 (CP_CPULIST_MAX + 1);
  cleanup_free const char **owner = cp_xcalloc (CP_CPULIST_MAX + 1, sizeof *owner);
  for (size_t i = 0; i < n; i++)
    {
      struct json_object *o = json_object_array_get_idx (entries, i);
      struct st_entry *e = &out->e[out->n];
      const char *id = str_field (o, "id"), *mode = str_field (o, "mode");
      const char *c = str_field (o, "cpus"), *h = str_field (o, "held");
      long long pid, start;
      if (!id || !mode || !c || !h || !str_field (o, "cgroup") || !str_field (o, "cgroup_mount")
          || !int_field (o, "pid", &pid) || !int_field (o, "start_time", &start))
        return fail_why (why, "entry %zu: a field is missing or mistyped", i);
      e->id = cp_xstrdup (id);
      e->pid = (pid_t) pid;
      e->start_time = (unsigned long long) start;
      e->cpus = cp_xstrdup (c);
      e->held = cp_xstrdup (h);
      out->n++;
      if (st_ledger_find (out, id) != e)
        return fail_why (why, "id %s appears twice", id);
      if (strcmp (mode, "exclusive") != 0 && strcmp (mode, "shared") != 0)
        return fail_why (why, "%s: mode %s", id, mode);
      e->exclusive = strcmp (mode, "exclusive") == 0;
      int nh = read_cpulist (h, held), nc = read_cpulist (c, cpus);
      if (nc <= 0 || nh < 0)
        return fail_why (why, "%s: bad cpulist cpus `%s` held `%s`", id, c, h);
      e->n_cpus = (unsigned) nc;
      e->n_held = (unsigned) nh;
      if (!e->exclusive)
        {
          if (nh != 0)
            return fail_why (why, "%s: shared with held `%s`", id, h);
          continue;
        }
      for (unsigned cpu = 0; cpu <= CP_CPULIST_MAX; cpu++)
        {
          if (cpus[cpu] && !held[cpu])
            return fail_why (why, "%s: cpu %u is in cpus but not held", id, cpu);
          if (!held[cpu])
            continue;
          if (owner[cpu])
            return fail_why (why, "CPU %u is held by both %s and %s", cpu, owner[cpu], id);
          owner[cpu] = e->id;
        }
    }
  return 0;
}

int
st_ledger_check (const char *text, size_t len, struct st_ledger *out, char **why)
{
  memset (out, 0, sizeof *out);
  *why = NULL;
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_parse (text, len, &l, &err) < 0)
    {
      fail_why (why, "cp_ledger_parse refuses it: %s", cp_error_message (err));
      cp_error_free (&err);
      return -1;
    }
  size_t n_ledger = cp_ledger_count (l);
  cp_ledger_close (l);
  struct json_tokener *tok = json_tokener_new ();
  struct json_object *root = json_tokener_parse_ex (tok, text, (int) len);
  bool complete = root != NULL;
  for (size_t i = json_tokener_get_parse_end (tok); complete && i < len; i++)
    complete = strchr (" \t\r\n", text[i]) != NULL;
  json_tokener_free (tok);
  if (!complete)
    {
      json_object_put (root);
      return fail_why (why, "json-c does not read it as one complete document");
    }
  int ret = check_json (root, out, why);
  json_object_put (root);
  if (ret == 0 && out->n != n_ledger)
    ret = fail_why (why, "%zu entries here, %zu for cp_ledger_parse", out->n, n_ledger);
  if (ret < 0)
    st_ledger_free (out);
  return ret;
}

void
st_ledger_free (struct st_ledger *l)
{
  for (size_t i = 0; i < l->n; i++)
    {
      free (l->e[i].id);
      free (l->e[i].cpus);
      free (l->e[i].held);
    }
  free (l->e);
  memset (l, 0, sizeof *l);
}

const struct st_entry *
st_ledger_find (const struct st_ledger *l, const char *id)
{
  for (size_t i = 0; i < l->n; i++)
    if (strcmp (l->e[i].id, id) == 0)
      return &l->e[i];
  return NULL;
}

/* ------------------------------------------------------------------- PRNG */

static unsigned long long rng_state = 1;

void
st_seed (unsigned long long seed)
{
  rng_state = seed ? seed : 1;
}

unsigned
st_rnd (unsigned n)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (unsigned) ((rng_state * 2685821657736338717ULL) >> 33) % n;
}
