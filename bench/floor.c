/* bench-floor: the floor for bench/hook-latency.sh.  A process that does what
 * every hook invocation must do and nothing else: start (dynamic linking of the
 * same shared libraries as cachepin), read the OCI state from stdin to the end,
 * exit 0.  One call into each library keeps it in the link under --as-needed, so
 * `ldd build/bench/bench-floor` lists what `ldd build/cachepin` lists (libcgroup,
 * linked by both, is dropped by both: cachepin calls nothing in it). */
#include <hwloc.h>
#include <json-c/json.h>
#include <seccomp.h>
#include <stdio.h>
#include <unistd.h>

int
main (void)
{
  char buf[65536];
  ssize_t n;
  size_t total = 0;
  while ((n = read (STDIN_FILENO, buf, sizeof buf)) > 0)
    total += (size_t) n;
  /* Never true (the API version is never 0): the calls are only for the link. */
  if (hwloc_get_api_version () == 0 && json_c_version () && seccomp_version ())
    printf ("%zu\n", total);
  return n < 0;
}
