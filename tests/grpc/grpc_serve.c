/* The grpc layer served alone, for tests/grpc/grpc_tests.py: the registration
 * service on DIR/reg.sock and the DRA service on DIR/dra.sock, with a canned
 * callback table (a claim named "bad" fails to prepare and to unprepare; any other
 * gets one device, pool "node-a", device "l3-0", CDI id cachepin.io/claim=<uid>; one
 * named "later" is left pending and answered so 0.3 s later, one named "never" is left
 * pending until the server's deferred-call bound, DEFER_MS, answers the call, and is
 * answered (dropped) at the end).
 * Prints "ready" once both listen, and one line per callback; SIGTERM or SIGINT
 * end it (0) with both sockets removed.
 *
 *   grpc_serve DIR [STALL_MS [IDLE_MS [DEFER_MS]]] */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_dra.h"
#include "grpc_kubelet.h"
#include "grpc_server.h"
#include "log.h"
#include "util.h"

static volatile sig_atomic_t stop;

static void
on_signal (int sig)
{
  (void) sig;
  stop = 1;
}

static void
notified (void *ctx, bool registered, const char *error)
{
  (void) ctx;
  printf ("notified registered=%d error=%s\n", registered, error);
  fflush (stdout);
}

/* The claims left pending. */
#define MAX_PENDING 16
static struct
{
  struct cp_grpc_dra_call *call;
  size_t index;
  char *uid;
  bool never;
  long long due_ms;
} pending[MAX_PENDING];

static void
canned (struct cp_grpc_prepared *out, const char *uid)
{
  out->n_devices = 1;
  out->devices = cp_xcalloc (1, sizeof *out->devices);
  out->devices[0] = (struct cp_grpc_device) { .request = cp_xstrdup ("cpus"), .pool = cp_xstrdup ("node-a"),
                                              .device = cp_xstrdup ("l3-0"),
                                              .cdi_id = cp_xasprintf ("cachepin.io/claim=%s", uid) };
}

/* The pending claims due at NOW_MS answered (ALL: every one). */
static void
answer_due (long long now_ms, bool all)
{
  for (size_t i = 0; i < MAX_PENDING; i++)
    if (pending[i].call && (all || (!pending[i].never && now_ms >= pending[i].due_ms)))
      {
        struct cp_grpc_prepared ans = { 0 };
        canned (&ans, pending[i].uid);
        struct cp_grpc_dra_call *call = pending[i].call;
        size_t index = pending[i].index;
        printf ("answered %s\n", pending[i].uid);
        fflush (stdout);
        free (pending[i].uid);
        pending[i].call = NULL;
        pending[i].uid = NULL;
        cp_grpc_dra_answer (call, index, &ans);
      }
}

static void
prepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, struct cp_grpc_prepared *out)
{
  (void) ctx;
  for (size_t i = 0; i < n; i++)
    {
      printf ("prepare %s/%s %s\n", claims[i].namespace, claims[i].name, claims[i].uid);
      if (strcmp (claims[i].name, "bad") == 0)
        {
          out[i].error = cp_xstrdup ("canned: this claim cannot be prepared");
          continue;
        }
      bool never = strcmp (claims[i].name, "never") == 0;
      if (never || strcmp (claims[i].name, "later") == 0)
        for (size_t j = 0; j < MAX_PENDING; j++)
          if (pending[j].call == NULL)
            {
              pending[j].call = out[i].call;
              pending[j].index = out[i].index;
              pending[j].uid = cp_xstrdup (claims[i].uid);
              pending[j].never = never;
              pending[j].due_ms = cp_monotonic_ms () + 300;
              out[i].pending = true;
              break;
            }
      if (!out[i].pending)
        canned (&out[i], claims[i].uid);
    }
  fflush (stdout);
}

static void
unprepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, char **errors)
{
  (void) ctx;
  for (size_t i = 0; i < n; i++)
    {
      printf ("unprepare %s/%s %s\n", claims[i].namespace, claims[i].name, claims[i].uid);
      if (strcmp (claims[i].name, "bad") == 0)
        errors[i] = cp_xstrdup ("canned: this claim cannot be unprepared");
    }
  fflush (stdout);
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    {
      fprintf (stderr, "usage: grpc_serve DIR [STALL_MS [IDLE_MS [DEFER_MS]]]\n");
      return 2;
    }
  cp_log_init ("grpc_serve", true);
  cleanup_free char *reg = cp_xasprintf ("%s/reg.sock", argv[1]);
  cleanup_free char *dra = cp_xasprintf ("%s/dra.sock", argv[1]);
  struct cp_grpc_kubelet k = { .endpoint = dra, .notified = notified };
  struct cp_grpc_dra d = { .ops = { .prepare = prepare, .unprepare = unprepare } };
  cleanup_grpc_server struct cp_grpc_server *s = NULL;
  cleanup_error cp_error_t err = NULL;
  size_t nk, nd;
  const struct cp_grpc_method *km = cp_grpc_kubelet_methods (&k, &nk);
  const struct cp_grpc_method *dm = cp_grpc_dra_methods (&d, &nd);
  if (cp_grpc_server_new (&s, &err) < 0 || cp_grpc_server_listen (s, reg, km, nk, &err) < 0
      || cp_grpc_server_listen (s, dra, dm, nd, &err) < 0)
    {
      fprintf (stderr, "grpc_serve: %s\n", cp_error_message (err));
      return 1;
    }
  if (argc > 2)
    cp_grpc_server_set_timeouts (s, atol (argv[2]), argc > 3 ? atol (argv[3]) : 0);
  if (argc > 4)
    cp_grpc_server_set_defer (s, atol (argv[4]));
  struct sigaction sa = { .sa_handler = on_signal };
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);
  signal (SIGPIPE, SIG_IGN);
  printf ("ready\n");
  fflush (stdout);
  while (!stop)
    {
      struct pollfd p = { .fd = cp_grpc_server_fd (s), .events = POLLIN };
      int r = poll (&p, 1, 100);
      if (r < 0 && errno != EINTR)
        {
          perror ("poll");
          return 1;
        }
      if (r > 0)
        cp_grpc_server_run (s);
      answer_due (cp_monotonic_ms (), false);
    }
  answer_due (0, true);
  return 0;
}
