/* The agent's HTTP listener (hook/agent/nri_http.c) driven as the agent's loop drives
 * it: its epoll descriptor polled, cp_nri_http_run() when it is readable, clients in
 * the same process.
 *   - the metrics at the path given, with Prometheus' content type (version 0.0.4);
 *     /readyz and /livez 200 "ok" or 503 with the handler's reason; 404 elsewhere
 *     (the default path too, when another is given); 405 for POST; HEAD answered;
 *   - never blocking: a client that sends half a request, one that connects and says
 *     nothing, one that asks and never reads (a 1 KiB receive buffer, an exposition
 *     of 256 KiB): each run returns at once, and another client is answered;
 *   - the address: IPv4, IPv6 in brackets, port 0 (a port taken, and said); what is
 *     not ADDR:PORT, a port past 65535, a name, a path that is not one or is a
 *     probe's: refused with one line naming the option. */
#define _GNU_SOURCE
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nri_http.h"
#include "util.h"

struct fake
{
  bool ready, live;
  size_t metrics_size; /* 0: a short exposition */
  int metrics_calls;
};

static char *
f_metrics (void *ctx)
{
  struct fake *f = ctx;
  f->metrics_calls++;
  if (f->metrics_size == 0)
    return cp_xstrdup ("# HELP cachepin_x A test.\n# TYPE cachepin_x gauge\ncachepin_x 1\n");
  char *s = cp_xmalloc0 (f->metrics_size + 1);
  memset (s, '#', f->metrics_size - 1);
  s[f->metrics_size - 1] = '\n';
  return s;
}

static char *
f_ready (void *ctx)
{
  return ((struct fake *) ctx)->ready ? NULL : cp_xstrdup ("not ready: not registered");
}

static char *
f_live (void *ctx)
{
  return ((struct fake *) ctx)->live ? NULL : cp_xstrdup ("not live: stuck");
}

static struct cp_nri_http *
open_fake (struct fake *f, const char *path)
{
  const struct cp_nri_http_handlers h = { .ctx = f, .metrics = f_metrics, .ready = f_ready, .live = f_live };
  struct cp_nri_http *http = NULL;
  cp_error_t err = NULL;
  if (cp_nri_http_open ("127.0.0.1:0", path, &h, &http, &err) < 0)
    fail_msg ("cp_nri_http_open: %s", cp_error_message (err));
  assert_true (cp_nri_http_port (http) > 0);
  return http;
}

static double
now_s (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

/* The loop's part for up to MS: the epoll descriptor polled, a run when readable;
   the longest run (seconds) into *LONGEST when not NULL. */
static void
serve_for (struct cp_nri_http *http, int ms, double *longest)
{
  double end = now_s () + ms / 1000.0;
  while (now_s () < end)
    {
      struct pollfd p = { .fd = cp_nri_http_fd (http), .events = POLLIN };
      if (poll (&p, 1, 10) > 0)
        {
          double t0 = now_s ();
          cp_nri_http_run (http);
          if (longest && now_s () - t0 > *longest)
            *longest = now_s () - t0;
        }
    }
}

static int
client (const struct cp_nri_http *http, int rcvbuf)
{
  int s = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true (s >= 0);
  if (rcvbuf)
    assert_int_equal (setsockopt (s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) cp_nri_http_port (http)),
                            .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  assert_int_equal (connect (s, (struct sockaddr *) &sa, sizeof sa), 0);
  return s;
}

/* METHOD PATH asked and the whole answer read (the server closes: Connection: close). */
static char *
ask (struct cp_nri_http *http, const char *method, const char *path)
{
  int s = client (http, 0);
  char req[256];
  int n = snprintf (req, sizeof req, "%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", method, path);
  assert_int_equal (send (s, req, (size_t) n, MSG_NOSIGNAL), n);
  size_t len = 0, cap = 4096;
  char *out = cp_xmalloc0 (cap);
  double end = now_s () + 5;
  for (;;)
    {
      serve_for (http, 20, NULL);
      ssize_t r = recv (s, out + len, cap - len - 1, MSG_DONTWAIT);
      if (r == 0)
        break;
      if (r > 0)
        len += (size_t) r;
      if (len + 1 == cap)
        out = realloc (out, cap *= 2);
      if (r < 0 && errno != EAGAIN)
        fail_msg ("recv: %s", strerror (errno));
      if (now_s () > end)
        fail_msg ("no whole answer to %s %s in 5 s (%zu bytes)", method, path, len);
    }
  out[len] = '\0';
  close (s);
  return out;
}

static void
expect_answer (const char *got, const char *status, const char *body)
{
  if (strncmp (got, status, strlen (status)) != 0)
    fail_msg ("expected `%s`, got `%.80s`", status, got);
  const char *b = strstr (got, "\r\n\r\n");
  assert_non_null (b);
  if (body)
    assert_string_equal (b + 4, body);
}

static void
test_answers (void **state)
{
  (void) state;
  struct fake f = { .ready = false, .live = true };
  struct cp_nri_http *http = open_fake (&f, "/m");
  cleanup_free char *m = ask (http, "GET", "/m");
  expect_answer (m, "HTTP/1.1 200", "# HELP cachepin_x A test.\n# TYPE cachepin_x gauge\ncachepin_x 1\n");
  assert_non_null (strstr (m, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  cleanup_free char *r1 = ask (http, "GET", "/readyz");
  expect_answer (r1, "HTTP/1.1 503", "not ready: not registered\n");
  f.ready = true;
  cleanup_free char *r2 = ask (http, "GET", "/readyz");
  expect_answer (r2, "HTTP/1.1 200", "ok\n");
  cleanup_free char *l1 = ask (http, "GET", "/livez");
  expect_answer (l1, "HTTP/1.1 200", "ok\n");
  f.live = false;
  cleanup_free char *l2 = ask (http, "GET", "/livez");
  expect_answer (l2, "HTTP/1.1 503", "not live: stuck\n");
  cleanup_free char *nf = ask (http, "GET", "/metrics");
  expect_answer (nf, "HTTP/1.1 404", NULL);
  cleanup_free char *post = ask (http, "POST", "/m");
  expect_answer (post, "HTTP/1.1 405", NULL);
  cleanup_free char *head = ask (http, "HEAD", "/m");
  expect_answer (head, "HTTP/1.1 200", "");
  cp_nri_http_close (http);
}

static void
test_default_path (void **state)
{
  (void) state;
  struct fake f = { .ready = true, .live = true };
  struct cp_nri_http *http = open_fake (&f, NULL);
  cleanup_free char *m = ask (http, "GET", CP_NRI_HTTP_DEFAULT_PATH);
  expect_answer (m, "HTTP/1.1 200", NULL);
  assert_int_equal (f.metrics_calls, 1);
  cp_nri_http_close (http);
}

/* No run waits on a client: each returns within 50 ms whatever the stalled ones do. */
static void
test_stalled_clients (void **state)
{
  (void) state;
  struct fake f = { .ready = true, .live = true, .metrics_size = 256 * 1024 };
  struct cp_nri_http *http = open_fake (&f, NULL);
  int silent = client (http, 0);
  int half = client (http, 0);
  assert_int_equal (send (half, "GET /metrics HTTP/1.1\r\nHo", 25, MSG_NOSIGNAL), 25);
  int deaf = client (http, 1024);
  const char req[] = "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
  assert_int_equal (send (deaf, req, sizeof req - 1, MSG_NOSIGNAL), (ssize_t) sizeof req - 1);
  double longest = 0;
  serve_for (http, 300, &longest);
  if (longest > 0.05)
    fail_msg ("a run took %.0f ms with stalled clients", longest * 1000);
  assert_int_equal (f.metrics_calls, 1); /* the deaf one's answer made, and waiting */
  f.metrics_size = 0;
  cleanup_free char *m = ask (http, "GET", "/readyz");
  expect_answer (m, "HTTP/1.1 200", "ok\n");
  close (silent);
  close (half);
  close (deaf);
  cp_nri_http_close (http);
}

static void
expect_refused (const char *listen, const char *path, const char *option)
{
  struct fake f = { 0 };
  const struct cp_nri_http_handlers h = { .ctx = &f, .metrics = f_metrics, .ready = f_ready, .live = f_live };
  struct cp_nri_http *http = NULL;
  cp_error_t err = NULL;
  if (cp_nri_http_open (listen, path, &h, &http, &err) == 0)
    fail_msg ("%s %s: accepted", listen, path ? path : "");
  const char *msg = cp_error_message (err);
  if (strncmp (msg, option, strlen (option)) != 0 || strchr (msg, '\n'))
    fail_msg ("%s %s: `%s` does not start with %s", listen, path ? path : "", msg, option);
  cp_error_free (&err);
}

static void
test_addresses (void **state)
{
  (void) state;
  expect_refused ("127.0.0.1", NULL, "--metrics-listen");
  expect_refused (":9464", NULL, "--metrics-listen");
  expect_refused ("127.0.0.1:", NULL, "--metrics-listen");
  expect_refused ("127.0.0.1:65536", NULL, "--metrics-listen");
  expect_refused ("127.0.0.1:-1", NULL, "--metrics-listen");
  expect_refused ("127.0.0.1:94x", NULL, "--metrics-listen");
  expect_refused ("localhost:9464", NULL, "--metrics-listen");
  expect_refused ("::1:9464", NULL, "--metrics-listen");
  expect_refused ("[127.0.0.1]:9464", NULL, "--metrics-listen");
  expect_refused ("[::1:9464", NULL, "--metrics-listen");
  expect_refused ("127.0.0.1:0", "metrics", "--metrics-path");
  expect_refused ("127.0.0.1:0", "/a b", "--metrics-path");
  expect_refused ("127.0.0.1:0", "/readyz", "--metrics-path");
  expect_refused ("127.0.0.1:0", "/livez", "--metrics-path");
  /* A port taken. */
  struct fake f = { .ready = true, .live = true };
  struct cp_nri_http *a = open_fake (&f, NULL);
  char taken[32];
  snprintf (taken, sizeof taken, "127.0.0.1:%u", cp_nri_http_port (a));
  expect_refused (taken, NULL, "--metrics-listen");
  cp_nri_http_close (a);
  /* IPv6, where this host has a loopback for it. */
  int s6 = socket (AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in6 lo = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
  bool v6 = s6 >= 0 && bind (s6, (struct sockaddr *) &lo, sizeof lo) == 0;
  if (s6 >= 0)
    close (s6);
  if (v6)
    {
      const struct cp_nri_http_handlers h = { .ctx = &f, .metrics = f_metrics, .ready = f_ready, .live = f_live };
      struct cp_nri_http *b = NULL;
      cp_error_t err = NULL;
      if (cp_nri_http_open ("[::1]:0", NULL, &h, &b, &err) < 0)
        fail_msg ("[::1]:0: %s", cp_error_message (err));
      assert_true (cp_nri_http_port (b) > 0);
      cp_nri_http_close (b);
    }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_answers),
    cmocka_unit_test (test_default_path),
    cmocka_unit_test (test_stalled_clients),
    cmocka_unit_test (test_addresses),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
