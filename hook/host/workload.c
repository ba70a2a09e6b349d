/* cachepin: the ring of pinned threads `cachepin measure` times (workload.h). */
#define _GNU_SOURCE
#include "workload.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

#define LINE 64

/* Each on a line of its own, so that a transfer is exactly what the ring asks for:
   the token's line and the shared lines move with the token; stop and ready are
   only read while waiting. */
struct ring
{
  _Alignas (LINE) atomic_ullong token;
  _Alignas (LINE) atomic_int stop;
  _Alignas (LINE) atomic_uint ready;
  _Alignas (LINE) struct
  {
    _Alignas (LINE) unsigned long long v;
  } lines[CP_WORKLOAD_MAX_LINES];
  unsigned n, n_lines;
  long long duration_ns;
  struct cp_workload_result result; /* thread 0's */
};

struct member
{
  struct ring *ring;
  unsigned index, cpu;
  int errnum; /* sched_setaffinity's, 0 when pinned */
};

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ volatile ("yield" ::: "memory");
#endif
}

static long long
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int
pin (unsigned cpu)
{
  cpu_set_t *set = CPU_ALLOC (cpu + 1);
  size_t size = CPU_ALLOC_SIZE (cpu + 1);
  CPU_ZERO_S (size, set);
  CPU_SET_S (cpu, size, set);
  int r = sched_setaffinity (0, size, set); /* 0: this thread (Linux) */
  int e = errno;
  CPU_FREE (set);
  return r < 0 ? e : 0;
}

/* Thread 0 alone reads the clock: every 64 of its own hand-offs, and every 4096
   turns of its wait, so that a ring stalled by a descheduled thread still ends on
   time.  The window's length is read after the stop, so what it counts is exact. */
static void
stop_if_late (struct ring *r, long long t0)
{
  long long t = now_ns ();
  if (t - t0 < r->duration_ns)
    return;
  r->result.hops = atomic_load_explicit (&r->token, memory_order_acquire);
  r->result.elapsed_ns = t - t0;
  atomic_store_explicit (&r->stop, 1, memory_order_release);
}

static void
hand_off (struct ring *r, unsigned long long token)
{
  /* The holder's update of what it shares: read the last holder's values and
     write its own, each line changing owner. */
  for (unsigned j = 0; j < r->n_lines; j++)
    r->lines[j].v += token;
  atomic_store_explicit (&r->token, token + 1, memory_order_release);
}

static void *
member_run (void *arg)
{
  struct member *m = arg;
  struct ring *r = m->ring;
  m->errnum = pin (m->cpu);
  if (m->errnum)
    atomic_store (&r->stop, 1);
  atomic_fetch_add (&r->ready, 1);
  while (atomic_load (&r->ready) < r->n)
    cpu_relax ();
  long long t0 = m->index == 0 ? now_ns () : 0;
  unsigned long long mine = 0;
  while (!atomic_load_explicit (&r->stop, memory_order_acquire))
    {
      unsigned long long token = atomic_load_explicit (&r->token, memory_order_acquire);
      if (token % r->n != m->index)
        {
          cpu_relax ();
          if (m->index == 0 && ++mine % 4096 == 0)
            stop_if_late (r, t0);
          continue;
        }
      hand_off (r, token);
      if (m->index == 0 && ++mine % 64 == 0)
        stop_if_late (r, t0);
    }
  return NULL;
}

static int
start_error (const struct member *members, unsigned started, int errnum, cp_error_t *err)
{
  if (errnum)
    return cp_fail_errno (err, errnum, "start a thread of the ring");
  for (unsigned i = 0; i < started; i++)
    if (members[i].errnum)
      return cp_fail_errno (err, members[i].errnum, "pin a thread to CPU %u: sched_setaffinity",
                            members[i].cpu);
  return 0;
}

int
cp_workload_ring (const unsigned *cpus, unsigned n, unsigned lines, long long duration_ns,
                  struct cp_workload_result *out, cp_error_t *err)
{
  if (n == 0 || n > CP_WORKLOAD_MAX_THREADS || lines > CP_WORKLOAD_MAX_LINES || duration_ns <= 0)
    return cp_fail_input (err, "ring: %u threads, %u lines, %lld ns: out of range", n, lines, duration_ns);
  struct ring *r = aligned_alloc (LINE, sizeof *r);
  if (r == NULL)
    abort ();
  memset (r, 0, sizeof *r);
  r->n = n;
  r->n_lines = lines;
  r->duration_ns = duration_ns;
  cleanup_free struct member *members = cp_xcalloc (n, sizeof *members);
  cleanup_free pthread_t *threads = cp_xcalloc (n, sizeof *threads);
  unsigned started = 0;
  int errnum = 0;
  for (; started < n; started++)
    {
      members[started] = (struct member) { .ring = r, .index = started, .cpu = cpus[started] };
      errnum = pthread_create (&threads[started], NULL, member_run, &members[started]);
      if (errnum)
        break;
    }
  if (started < n) /* the ones started wait for all: let them go */
    {
      atomic_store (&r->stop, 1);
      atomic_fetch_add (&r->ready, n - started);
    }
  for (unsigned i = 0; i < started; i++)
    pthread_join (threads[i], NULL);
  *out = r->result;
  free (r);
  return start_error (members, started, errnum, err);
}

double
cp_workload_clock_cost_ns (void)
{
  enum { CALLS = 20000 };
  long long t0 = now_ns (), t = t0;
  for (int i = 0; i < CALLS; i++)
    t = now_ns ();
  return (double) (t - t0) / CALLS;
}

int
cp_workload_allowed (hwloc_bitmap_t cpus, cp_error_t *err)
{
  hwloc_bitmap_zero (cpus);
  for (int count = 1024; count <= (1 << 20); count *= 2)
    {
      cpu_set_t *set = CPU_ALLOC (count);
      size_t size = CPU_ALLOC_SIZE (count);
      if (sched_getaffinity (0, size, set) == 0)
        {
          for (int c = 0; c < count; c++)
            if (CPU_ISSET_S (c, size, set))
              hwloc_bitmap_set (cpus, (unsigned) c);
          CPU_FREE (set);
          return 0;
        }
      int e = errno;
      CPU_FREE (set);
      if (e != EINVAL) /* EINVAL: the kernel's mask is larger than this one */
        return cp_fail_errno (err, e, "sched_getaffinity");
    }
  return cp_fail_runtime (err, "sched_getaffinity: the CPU mask is larger than 2^20 CPUs");
}
