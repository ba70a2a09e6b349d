/* cachepin: the NRI agent's HTTP listener (`cachepin nri --metrics-listen`): the
 * metrics (Prometheus' text format, docs/metrics.md) on a path of the admin's
 * choosing, and the probes /readyz and /livez, served by libmicrohttpd.
 *
 * Not a thread of its own: the agent's one loop serves it between the runtime's
 * calls (the guide: a long-running agent's endpoints share one loop).  libmicrohttpd
 * runs in its external-epoll mode: every socket it holds is non-blocking and sits in
 * one epoll descriptor, which the loop polls beside the runtime's socket as a side
 * descriptor (nri_conn.h); cp_nri_http_run() then does what is ready and returns, so
 * a scraper that connects and never reads, or sends half a request, costs the loop
 * nothing but a descriptor until the connection's timeout drops it.  The socket is
 * bound before the sandbox, which then allows accept on it and epoll on its set,
 * nothing more (sandbox.h). */
#ifndef CP_NRI_HTTP_H
#define CP_NRI_HTTP_H

#include <stdbool.h>

#include "error.h"

#define CP_NRI_HTTP_DEFAULT_PATH "/metrics"
#define CP_NRI_HTTP_READY_PATH "/readyz"
#define CP_NRI_HTTP_LIVE_PATH "/livez"

/* An idle or half-sent connection is closed after this long, and no more than
 * this many are open at once (a scraper and the kubelet's probes need three). */
#define CP_NRI_HTTP_TIMEOUT_S 10
#define CP_NRI_HTTP_MAX_CONNECTIONS 16

/* What the listener answers with, the agent's: each runs in the loop, between two
   of the runtime's calls. */
struct cp_nri_http_handlers
{
  void *ctx;
  char *(*metrics) (void *ctx); /* the exposition (the caller frees) */
  char *(*ready) (void *ctx);   /* NULL when ready, else why not, one line (the caller frees) */
  char *(*live) (void *ctx);    /* the same for liveness */
};

struct cp_nri_http;

/* LISTEN and PATH (may be NULL) as cp_nri_http_open() takes them, checked without
   binding anything: for the command line, before the run starts. */
int cp_nri_http_check (const char *listen, const char *path, cp_error_t *err);

/* Listen on LISTEN ("ADDR:PORT": an IPv4 address, or an IPv6 one in brackets;
   port 0 takes a free one) and serve H, the metrics at PATH (NULL: the default;
   it must start with `/`, and not be one of the probes' paths).  Errors name the
   option (--metrics-listen, --metrics-path). */
int cp_nri_http_open (const char *listen, const char *path, const struct cp_nri_http_handlers *h,
                      struct cp_nri_http **out, cp_error_t *err);

/* The epoll descriptor to poll for reading (the loop's side descriptor), and the
   listening socket (the sandbox's accept rule). */
int cp_nri_http_fd (const struct cp_nri_http *http);
int cp_nri_http_listen_fd (const struct cp_nri_http *http);

/* The port bound (the one taken, for port 0). */
unsigned cp_nri_http_port (const struct cp_nri_http *http);

/* What is ready served, connections past their timeout closed; never blocks. */
void cp_nri_http_run (struct cp_nri_http *http);

void cp_nri_http_close (struct cp_nri_http *http);
void cp_nri_http_closep (struct cp_nri_http **http);
#define cleanup_nri_http __attribute__ ((cleanup (cp_nri_http_closep)))

#endif
