#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cpulist.h"
#include "ledger.h"
#include "sandbox.h"
#include "topo_codec.h"
#include "util.h"

struct cp_topo *
tu_topo (const char *source)
{
  struct cp_topo *topo = NULL;
  cp_error_t err = NULL;
  if (cp_topo_load (source, &topo, &err) < 0)
    fail_msg ("loading %s: %s", source, cp_error_message (err));
  return topo;
}

hwloc_bitmap_t
tu_set (const char *cpulist)
{
  hwloc_bitmap_t b = hwloc_bitmap_alloc ();
  cp_error_t err = NULL;
  if (cp_cpulist_parse (cpulist, CP_CPULIST_ALLOW_EMPTY, b, &err) < 0)
    fail_msg ("test cpulist %s: %s", cpulist, cp_error_message (err));
  return b;
}

void
tu_assert_set_ (hwloc_const_bitmap_t set, const char *expected, const char *file, int line)
{
  char *got = cp_cpulist_format (set);
  if (strcmp (got, expected) != 0)
    {
      print_error ("%s:%d: set is `%s`, expected `%s`\n", file, line, got, expected);
      free (got);
      _fail (file, line);
    }
  free (got);
}

void
tu_assert_contains_ (const char *msg, const char *needle, const char *file, int line)
{
  if (msg == NULL || strstr (msg, needle) == NULL)
    {
      print_error ("%s:%d: message `%s` does not contain `%s`\n", file, line, msg ? msg : "(null)", needle);
      _fail (file, line);
    }
}

struct cp_request
tu_req (unsigned cpus, enum cp_level align, enum cp_smt smt, enum cp_mode mode, bool strict)
{
  struct cp_request r;
  cp_request_init (&r);
  r.cpus = cpus;
  r.align = align;
  r.smt = smt;
  r.mode = mode;
  r.strict = strict;
  return r;
}

static int
place (const struct cp_topo *topo, const char *allowed, const char *held, const struct cp_request *req,
       struct cp_plan **plan, cp_error_t *err)
{
  hwloc_bitmap_t a = allowed ? tu_set (allowed) : NULL;
  hwloc_bitmap_t h = held ? tu_set (held) : NULL;
  struct cp_usage usage = { .held = h };
  int r = cp_place (topo, a, NULL, &usage, req, plan, err);
  hwloc_bitmap_free (a);
  hwloc_bitmap_free (h);
  return r;
}

struct cp_plan *
tu_place (const struct cp_topo *topo, const char *allowed, const char *held, const struct cp_request *req)
{
  struct cp_plan *plan = NULL;
  cp_error_t err = NULL;
  if (place (topo, allowed, held, req, &plan, &err) < 0)
    fail_msg ("cp_place (cpus=%u align=%s smt=%s mode=%s allowed=%s held=%s) on %s: %s", req->cpus,
              cp_align_name (req->align), cp_smt_name (req->smt), cp_mode_name (req->mode),
              allowed ? allowed : "-", held ? held : "-", topo->source, cp_error_message (err));
  assert_non_null (plan);
  return plan;
}

char *
tu_place_fail (const struct cp_topo *topo, const char *allowed, const char *held, const struct cp_request *req,
               enum cp_error_kind kind)
{
  struct cp_plan *plan = NULL;
  cp_error_t err = NULL;
  if (place (topo, allowed, held, req, &plan, &err) == 0)
    {
      char *cpus = cp_cpulist_format (plan->cpus);
      print_error ("cp_place unexpectedly succeeded with cpus %s (%s)\n", cpus, plan->reason);
      free (cpus);
      cp_plan_free (plan);
      fail ();
    }
  assert_null (plan);
  assert_non_null (err);
  if (err->kind != kind)
    fail_msg ("error kind %d, expected %d: %s", (int) err->kind, (int) kind, cp_error_message (err));
  assert_non_null (err->msg);
  assert_true (strchr (err->msg, '\n') == NULL);
  char *msg = cp_xstrdup (err->msg);
  cp_error_free (&err);
  return msg;
}

/* CACHEPIN_TEST_CAPTURED=skip: this run leaves the captured cases to an entry of
   their own (testutil.h, TU_CAPTURED). */
static bool tu_captured_skipped;

const char *
tu_topologies_dir (void)
{
  if (tu_captured_skipped)
    fail_msg ("this case reads the captured topologies: name it " TU_CAPTURED
              " so that it runs in the binary's .captured CTest entry (tests/CMakeLists.txt)");
  const char *dir = getenv ("CACHEPIN_TOPOLOGIES");
  struct stat st;
  if (dir == NULL || *dir == '\0' || stat (dir, &st) < 0 || !S_ISDIR (st.st_mode))
    return NULL;
  return dir;
}

static void
collect_xml (const char *dir, char ***out, size_t *n)
{
  DIR *d = opendir (dir);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir (d)))
    {
      if (e->d_name[0] == '.')
        continue;
      char *path = cp_xasprintf ("%s/%s", dir, e->d_name);
      struct stat st;
      if (stat (path, &st) == 0 && S_ISDIR (st.st_mode))
        {
          collect_xml (path, out, n);
          free (path);
          continue;
        }
      size_t len = strlen (e->d_name);
      if (len > 4 && strcmp (e->d_name + len - 4, ".xml") == 0)
        {
          *out = cp_xrealloc (*out, (*n + 1) * sizeof **out);
          (*out)[(*n)++] = path;
        }
      else
        free (path);
    }
  closedir (d);
}

static int
cmp_path (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

char **
tu_captured_xml (const char **dir, size_t *n)
{
  *dir = tu_topologies_dir ();
  if (*dir == NULL)
    {
      print_message ("SKIP: CACHEPIN_TOPOLOGIES (%s) is not a folder: no captured topologies to test on\n",
                     getenv ("CACHEPIN_TOPOLOGIES") ? getenv ("CACHEPIN_TOPOLOGIES") : "unset");
      tu_skip ();
    }
  char **files = NULL;
  *n = 0;
  collect_xml (*dir, &files, n);
  if (*n == 0)
    {
      print_message ("SKIP: no *.xml under %s\n", *dir);
      tu_skip ();
    }
  qsort (files, *n, sizeof *files, cmp_path);
  return files;
}

char *
tu_topology_file_or_skip (const char *rel)
{
  const char *dir = tu_topologies_dir ();
  if (dir == NULL)
    {
      print_message ("SKIP: CACHEPIN_TOPOLOGIES (%s) is not a folder; the captured topologies are not here\n",
                     getenv ("CACHEPIN_TOPOLOGIES") ? getenv ("CACHEPIN_TOPOLOGIES") : "unset");
      tu_skip ();
    }
  char *path = cp_xasprintf ("%s/%s", dir, rel);
  struct stat st;
  if (stat (path, &st) < 0)
    {
      print_message ("SKIP: %s is missing\n", path);
      free (path);
      tu_skip ();
    }
  return path;
}

void
tu_check_error (const char *name, int r, const cp_error_t *err, const char *expected)
{
  if (r >= 0)
    fail_msg ("%s: succeeded, expected `%s`", name, expected);
  if (strcmp (cp_error_message (*err), expected) != 0)
    fail_msg ("%s:\n   got `%s`\nexpected `%s`", name, cp_error_message (*err), expected);
}

void
tu_write_file (const char *path, const char *data, size_t len)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write (fd, data, len) != (ssize_t) len)
    fail_msg ("writing %s: %s", path, strerror (errno));
  close (fd);
}

void
tu_assert_full_load_model (const struct cp_topo *loaded, hwloc_topology_t full, const char *what)
{
  cp_error_t err = NULL;
  struct cp_topo *reference = NULL;
  if (cp_topo_from_hwloc (full, loaded->source, &reference, &err) < 0)
    fail_msg ("%s: model from the full load: %s", what, cp_error_message (err));
  char *a = NULL, *b = NULL;
  size_t la = 0, lb = 0;
  if (cp_topo_encode (loaded, "same", &a, &la, &err) < 0 || cp_topo_encode (reference, "same", &b, &lb, &err) < 0)
    fail_msg ("%s: encode: %s", what, cp_error_message (err));
  if (la != lb || memcmp (a, b, la) != 0)
    fail_msg ("%s: the model cachepin loads differs from the one a full hwloc load gives", what);
  free (a);
  free (b);
  cp_topo_free (reference);
}

char *
tu_tmpdir (const char *name)
{
  char *dir = cp_xasprintf ("/tmp/cp-%s-XXXXXX", name);
  if (mkdtemp (dir) == NULL)
    fail_msg ("mkdtemp %s: %s", dir, strerror (errno));
  return dir;
}

void
tu_rmtree (const char *dir)
{
  cleanup_free char *cmd = cp_xasprintf ("rm -rf -- '%s'", dir);
  if (system (cmd) != 0)
    fail_msg ("%s failed", cmd);
}

void
tu_hostconfig (struct cp_hostconfig *hc, const char *state_dir, const char *kernel_root)
{
  cp_hostconfig_init (hc);
  free (hc->state_dir);
  hc->state_dir = cp_xstrdup (state_dir);
  if (kernel_root)
    {
      free (hc->kernel_root);
      hc->kernel_root = cp_xstrdup (kernel_root);
    }
  free (hc->kubelet_state);
  hc->kubelet_state = cp_xstrdup ("");
  free (hc->cdi_dir);
  hc->cdi_dir = cp_xasprintf ("%s/cdi", state_dir); /* never the host's */
}

unsigned tu_skipped;

/* CACHEPIN_TEST_ONLY and CACHEPIN_TEST_EXCEPT: cmocka's test and skip filters, set
   before main runs the group (tests/CMakeLists.txt splits a test that may skip on
   some hosts into a CTest entry of its own with them).  CACHEPIN_TEST_CAPTURED
   (only, skip) does the same for the cases named TU_CAPTURED; cmocka has one filter
   of each kind, so an explicit pattern wins (CMake gives one only to a binary with
   no captured case, and there tu_topologies_dir() still guards). */
__attribute__ ((constructor)) static void
tu_filters (void)
{
  const char *only = getenv ("CACHEPIN_TEST_ONLY"), *except = getenv ("CACHEPIN_TEST_EXCEPT");
  const char *captured = getenv ("CACHEPIN_TEST_CAPTURED");
  if (captured && strcmp (captured, "only") == 0 && !(only && *only))
    only = TU_CAPTURED;
  if (captured && strcmp (captured, "skip") == 0)
    {
      tu_captured_skipped = true;
      if (!(except && *except))
        except = TU_CAPTURED;
    }
  if (only && *only)
    cmocka_set_test_filter (only);
  if (except && *except)
    cmocka_set_skip_filter (except);
}

bool
tu_under_valgrind (void)
{
  const char *preload = getenv ("LD_PRELOAD");
  return preload && strstr (preload, "vgpreload");
}

int
tu_exit (int failed)
{
  if (failed > 0 || tu_skipped == 0)
    return failed;
  print_message ("SKIPPED: %u test%s did not run (listed above): the binary exits 77, reported as skipped\n",
                 tu_skipped, tu_skipped == 1 ? "" : "s");
  return 77;
}

pid_t
tu_sleeper (void)
{
  pid_t child = fork ();
  assert_true (child >= 0);
  if (child == 0)
    {
      prctl (PR_SET_PDEATHSIG, SIGKILL); /* not left behind by a failed assertion */
      pause ();
      _exit (0);
    }
  return child;
}

void
tu_reap (pid_t child)
{
  kill (child, SIGKILL);
  waitpid (child, NULL, 0);
}

char *
tu_status_field (pid_t pid, const char *key)
{
  char path[64], line[256];
  snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
  FILE *f = fopen (path, "re");
  assert_non_null (f);
  char *value = NULL;
  while (value == NULL && fgets (line, sizeof line, f))
    if (strncmp (line, key, strlen (key)) == 0 && line[strlen (key)] == ':')
      {
        value = cp_xstrdup (line + strlen (key) + 1 + strspn (line + strlen (key) + 1, " \t"));
        value[strcspn (value, "\n")] = '\0';
      }
  fclose (f);
  assert_non_null (value);
  return value;
}

int
tu_fds_above_stdio (pid_t pid)
{
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/fd", (int) pid);
  DIR *d = opendir (path);
  assert_non_null (d);
  int n = 0;
  for (struct dirent *e; (e = readdir (d));)
    if (e->d_name[0] != '.' && atoi (e->d_name) > 2)
      n++;
  closedir (d);
  return n;
}

void
tu_assert_helper_confined (pid_t pid, int cap)
{
  cleanup_free char *seccomp = tu_status_field (pid, "Seccomp");
  assert_string_equal (seccomp, CP_SANDBOX_SANITIZER_BUILD ? "0" : "2");
  cleanup_free char *nnp = tu_status_field (pid, "NoNewPrivs");
  assert_string_equal (nnp, "1");
  cleanup_free char *ours = tu_status_field (getpid (), "CapEff");
  unsigned long long kept = strtoull (ours, NULL, 16) & (1ULL << cap);
  cleanup_free char *eff = tu_status_field (pid, "CapEff");
  cleanup_free char *prm = tu_status_field (pid, "CapPrm");
  cleanup_free char *bnd = tu_status_field (pid, "CapBnd");
  assert_int_equal (strtoull (eff, NULL, 16), kept);
  assert_int_equal (strtoull (prm, NULL, 16), kept);
  if (kept)
    assert_int_equal (strtoull (bnd, NULL, 16), kept);
}

void
tu_assert_helper_exits (int *fd, pid_t *pid)
{
  close (*fd);
  int st;
  assert_int_equal (waitpid (*pid, &st, 0), *pid);
  assert_true (WIFEXITED (st));
  assert_int_equal (WEXITSTATUS (st), 0);
  *fd = -1;
  *pid = 0;
}

char *
tu_ledger_cpus (const char *state_dir, const char *id)
{
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (state_dir, 1000, &l, &err) < 0)
    fail_msg ("ledger %s: %s", state_dir, cp_error_message (err));
  const struct cp_ledger_entry *e = cp_ledger_find (l, id);
  char *cpus = e ? cp_cpulist_format (e->cpus) : NULL;
  cp_ledger_close (l);
  return cpus;
}
