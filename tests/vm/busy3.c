/* A process of three busy threads (the main thread and two more), for the
 * cache-aware scheduling check in tests/vm/sched-tests.sh: CAS should pack them
 * onto one LLC when it is on, and the load balancer spreads them when it is off.
 * Built static on the host (the guest has no libc of its own for it). */
#include <pthread.h>
#include <unistd.h>

static volatile unsigned long sink;

static void *
spin (void *arg)
{
  (void) arg;
  for (;;)
    sink++;
  return NULL;
}

int
main (void)
{
  pthread_t t;
  for (int i = 0; i < 2; i++)
    if (pthread_create (&t, NULL, spin, NULL) != 0)
      return 1;
  spin (NULL);
  return 0;
}
