/* Helpers shared by the unit tests. */
#ifndef CP_TESTUTIL_H
#define CP_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <hwloc.h>

#include "bitmap.h"
#include "error.h"
#include "hostconfig.h"
#include "placement.h"
#include "request.h"
#include "topo.h"

/* Skips, reported as skips.  cmocka counts a skip() as no failure, so a binary
 * whose tests partly did not run would exit 0 and CTest would call it passed.
 * tu_skip() counts it, and tu_exit() (each main's return) turns "no failure, some
 * skipped" into 77, which CTest reports as skipped (SKIP_RETURN_CODE): a failure
 * still wins, so nothing failing is hidden; what is hidden is only the passes
 * beside a skip, and the output lists both.  A test that may skip on a host's
 * kind (a kernel without a feature) can be given a CTest entry of its own with
 * CACHEPIN_TEST_ONLY / CACHEPIN_TEST_EXCEPT (one cmocka name pattern each, read
 * before main), so that its binary's other tests still count as passed. */
extern unsigned tu_skipped;
#define tu_skip()     \
  do                  \
    {                 \
      tu_skipped++;   \
      skip ();        \
    }                 \
  while (0)
int tu_exit (int failed);

/* True under valgrind (its preload library is in LD_PRELOAD).  valgrind implements
 * neither seccomp() nor Landlock: a process that loads a filter there has it
 * applied to valgrind's own system calls and dies, so what checks a sandbox skips. */
bool tu_under_valgrind (void);

/* A child that pauses until killed (and dies with the test: PR_SET_PDEATHSIG), and
 * its end: SIGKILL, reaped. */
pid_t tu_sleeper (void);
void tu_reap (pid_t child);

/* The value of KEY ("CapEff") in /proc/PID/status, allocated; fails the test when
 * there is none. */
char *tu_status_field (pid_t pid, const char *key);

/* How many descriptors process PID holds above stdio (its /proc/PID/fd). */
int tu_fds_above_stdio (pid_t pid);

/* A helper process of the NRI plugin (hook/host/helper.h) as it serves: its seccomp
 * filter loaded (not in a sanitizer build, which only builds it), no_new_privs, and of
 * this process's capabilities CAP alone (CapEff, CapPrm; CapBnd too where we have it). */
void tu_assert_helper_confined (pid_t pid, int cap);

/* Close *FD, the helper's socket: process *PID exits, status 0, and is reaped; both
 * reset. */
void tu_assert_helper_exits (int *fd, pid_t *pid);

/* Load a synthetic or XML topology; fails the test on error. */
struct cp_topo *tu_topo (const char *source);

/* A bitmap from a cpulist literal (test-side, via our strict parser). */
hwloc_bitmap_t tu_set (const char *cpulist);

/* Assert that SET equals the cpulist EXPECTED, printing both when not. */
#define tu_assert_set(set, expected) tu_assert_set_ (set, expected, __FILE__, __LINE__)
void tu_assert_set_ (hwloc_const_bitmap_t set, const char *expected, const char *file, int line);

/* Assert that the error message MSG contains NEEDLE, printing both when not. */
#define tu_assert_contains(msg, needle) tu_assert_contains_ (msg, needle, __FILE__, __LINE__)
void tu_assert_contains_ (const char *msg, const char *needle, const char *file, int line);

/* A request from its fields (cpus 0: unset). */
struct cp_request tu_req (unsigned cpus, enum cp_level align, enum cp_smt smt, enum cp_mode mode, bool strict);

/* cp_place() with cpulist literals (NULL: the default) for the allowed set and the
 * CPUs others hold; fails the test when placement fails. */
struct cp_plan *tu_place (const struct cp_topo *topo, const char *allowed, const char *held,
                          const struct cp_request *req);

/* cp_place() that must fail with KIND; returns the message (caller frees). */
char *tu_place_fail (const struct cp_topo *topo, const char *allowed, const char *held, const struct cp_request *req,
                     enum cp_error_kind kind);

/* The cases that read the captured topologies (../shared/topologies, not in every
 * clone) are named test_captured_*: tests/CMakeLists.txt gives them a CTest entry of
 * their own per binary (unit.NAME.captured, CACHEPIN_TEST_CAPTURED=only), skipped
 * where the captures are absent, and runs the binary's other cases as unit.NAME
 * (CACHEPIN_TEST_CAPTURED=skip), which then passes on a fresh clone.  In that entry
 * a read of the captures fails the test: a case that needs them and is named
 * otherwise would make the whole entry skip again. */
#define TU_CAPTURED "test_captured_*"

/* The captured topologies folder (env CACHEPIN_TOPOLOGIES) when it exists, else NULL.
 * Fails the test under CACHEPIN_TEST_CAPTURED=skip (above). */
const char *tu_topologies_dir (void);

/* Every *.xml under the captured topologies folder (its subfolders too), sorted, each
   a path to free, and the folder in *DIR; skips the case (reported) when the folder
   or its XMLs are not there. */
char **tu_captured_xml (const char **dir, size_t *n);

/* "$CACHEPIN_TOPOLOGIES/REL" when the file exists (caller frees); otherwise prints
 * why and skips the calling test. */
char *tu_topology_file_or_skip (const char *rel);

/* Assert that R is a failure whose message is exactly EXPECTED; NAME labels the case. */
void tu_check_error (const char *name, int r, const cp_error_t *err, const char *expected);

/* Assert that LOADED, a model cp_topo_load() built (hwloc told to build only what
 * the model reads), is the one cp_topo_from_hwloc() builds from FULL, an hwloc
 * topology loaded with everything: byte for byte once encoded.  WHAT labels it. */
void tu_assert_full_load_model (const struct cp_topo *loaded, hwloc_topology_t full, const char *what);

/* Write LEN bytes of DATA to PATH (created 0644, truncated); fails the test on error. */
void tu_write_file (const char *path, const char *data, size_t len);

/* A new directory /tmp/cp-NAME-XXXXXX (mode 0700, as mkdtemp makes it: a state
 * directory the ledger accepts); the caller frees the path.  Fails the test on error. */
char *tu_tmpdir (const char *name);

/* Remove DIR and everything below it; fails the test on error. */
void tu_rmtree (const char *dir);

/* HC: the defaults, with the ledger in STATE_DIR, the kernel's files under
 * KERNEL_ROOT (NULL: the default, /), no kubelet state file read and CDI specs in
 * STATE_DIR/cdi, so that a
 * test touches only its own trees.  cp_hostconfig_free() it. */
void tu_hostconfig (struct cp_hostconfig *hc, const char *state_dir, const char *kernel_root);

/* The CPUs the ledger in STATE_DIR holds for ID, a cpulist (the caller frees; NULL:
   no such entry); the test fails when the ledger cannot be opened. */
char *tu_ledger_cpus (const char *state_dir, const char *id);

#endif
