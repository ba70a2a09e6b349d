/* cachepin: small shared helpers (allocation that aborts on OOM, cleanup attributes).
 *
 * Out of memory is not a condition the hook can recover from in any useful way,
 * so allocation failures abort (as crun does) instead of threading ENOMEM through
 * every caller. */
#ifndef CP_UTIL_H
#define CP_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *cp_xmalloc0 (size_t size);
void *cp_xrealloc (void *ptr, size_t size);
void *cp_xcalloc (size_t n, size_t size);
char *cp_xstrdup (const char *s);
char *cp_xstrndup (const char *s, size_t n);

/* Print "cachepin: out of memory" and abort: for allocations made by a library
 * (json-c, hwloc) that report failure instead of aborting. */
__attribute__ ((noreturn)) void cp_oom (void);
char *cp_xasprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* Milliseconds on CLOCK_MONOTONIC: for deadlines and timeouts. */
long long cp_monotonic_ms (void);

static inline void
cp_cleanup_free_fn (void *p)
{
  free (*(void **) p);
}

static inline void
cp_cleanup_close_fn (int *fd)
{
  if (*fd >= 0)
    close (*fd);
}

static inline void
cp_cleanup_file_fn (FILE **f)
{
  if (*f)
    fclose (*f);
}

#define cleanup_free __attribute__ ((cleanup (cp_cleanup_free_fn)))
#define cleanup_close __attribute__ ((cleanup (cp_cleanup_close_fn)))
#define cleanup_file __attribute__ ((cleanup (cp_cleanup_file_fn)))

/* Ownership hand-off: returns the pointer and clears the variable that held it,
 * so the cleanup attribute on that variable no longer frees it. */
#define cp_steal_pointer(pp) \
  __extension__ ({ __typeof__ (*(pp)) _stolen = *(pp); *(pp) = NULL; _stolen; })

#define CP_ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))

#endif
