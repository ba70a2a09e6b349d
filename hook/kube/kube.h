/* cachepin: a client of the Kubernetes API server (issue 34, docs/dra.md "Publishing").
 *
 * REST and JSON over https only, through libcurl's multi interface (loaded with
 * dlopen(): a host that never talks to an API server never loads it).  The
 * configuration is in-cluster (KUBERNETES_SERVICE_HOST and _PORT, the service
 * account's token and CA under /var/run/secrets/kubernetes.io/serviceaccount) or
 * given (--kube-api URL, --kube-ca FILE, --kube-token-file FILE).  The token is
 * read again when its file changes (a projected token rotates) and after a 401;
 * it is never logged nor put in an error. */
#ifndef CP_KUBE_H
#define CP_KUBE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define CP_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define CP_KUBE_MAX_ANSWER (16u << 20) /* bytes of one answer (a list of a node's slices) */
#define CP_KUBE_MAX_TOKEN 16384u       /* bytes of a token file */
#define CP_KUBE_TIMEOUT_MS 30000       /* one request, connection included */

/* What the command line says; NULL members: in-cluster. */
struct cp_kube_options
{
  const char *api;        /* https://HOST[:PORT] */
  const char *ca;         /* PEM file of the CA that signs the server's certificate */
  const char *token_file; /* the bearer token's file */
};

/* The API server, its CA and token file: from O, or in-cluster where O names none
 * (the environment's KUBERNETES_SERVICE_HOST and _PORT, CP_KUBE_SA_DIR's files).
 * Errors name the option or variable: "--kube-api: `http://x`: https only". */
struct cp_kube_config
{
  char *server; /* https://HOST:PORT, no trailing slash */
  char *ca;
  char *token_file;
};
int cp_kube_config_resolve (const struct cp_kube_options *o, struct cp_kube_config *out, cp_error_t *err);
void cp_kube_config_clear (struct cp_kube_config *c);
/* The TCP port of C's server (443 where its URL names none; 0: not a port). */
unsigned cp_kube_config_port (const struct cp_kube_config *c);
/* Whether C's server is named by an address (IPv4, or IPv6 in brackets), not a
   host name: the publisher's sandbox resolves no names (libcurl's resolver is a
   thread, which its seccomp filter refuses). */
bool cp_kube_config_host_is_address (const struct cp_kube_config *c);

/* An answer: the HTTP status and the body (NUL-terminated, at most CP_KUBE_MAX_ANSWER). */
struct cp_kube_answer
{
  long status;
  char *body;
  size_t len;
};
void cp_kube_answer_clear (struct cp_kube_answer *a);

struct cp_kube_client;

/* A client of CONFIG's server (copied): libcurl loaded, the token read once to
 * check that it can be ("--kube-token-file FILE: ..." otherwise). */
int cp_kube_open (const struct cp_kube_config *config, struct cp_kube_client **out, cp_error_t *err);
void cp_kube_close (struct cp_kube_client *c);

/* cp_kube_config_resolve() then cp_kube_open(): what a command line asks for. */
int cp_kube_open_options (const struct cp_kube_options *o, struct cp_kube_client **out, cp_error_t *err);
static inline void
cp_kube_closep (struct cp_kube_client **c)
{
  if (*c)
    cp_kube_close (*c);
}
#define cleanup_kube __attribute__ ((cleanup (cp_kube_closep)))

/* One request, waited for (at most CP_KUBE_TIMEOUT_MS): METHOD (GET, POST, PUT,
 * DELETE) on PATH (from "/", query included), BODY (NULL: none) sent as JSON.
 * Any HTTP status is an answer (0); a 401 reads the token again and tries once
 * more.  -1: no answer (connection, TLS, timeout, an answer over the cap). */
int cp_kube_request (struct cp_kube_client *c, const char *method, const char *path, const char *body,
                     struct cp_kube_answer *ans, cp_error_t *err);

/* A watch (PATH with watch=1): a transfer of its own that runs while the caller waits
 * in cp_kube_watch_wait(), each line of the answer (one event, at most
 * CP_KUBE_MAX_EVENT bytes) given to LINE.  The token is the client's as it is at the
 * start.  Ended by the server (its timeout, a restart), a failure, or
 * cp_kube_watch_stop(). */
struct cp_kube_watch;
int cp_kube_watch_start (struct cp_kube_client *c, const char *path, void (*line) (void *ctx, const char *l, size_t n),
                         void *ctx, struct cp_kube_watch **out, cp_error_t *err);
/* Up to TIMEOUT_MS for the watch's lines, or FD (-1: none) readable: 1 FD readable,
   0 the time passed, -1 the watch ended (*ERR says how, its HTTP status included;
   a clean end is an error too: start another). */
int cp_kube_watch_wait (struct cp_kube_watch *w, int fd, int timeout_ms, cp_error_t *err);
void cp_kube_watch_stop (struct cp_kube_watch *w);

/* "WHAT: HTTP 409: <the Status object's message>" as a runtime error (an input
 * error for 400, 401, 403, 422: what we were given or sent is refused); returns -1. */
int cp_kube_fail_answer (const char *what, const struct cp_kube_answer *a, cp_error_t *err);

/* How many times the token was read (tests and metrics). */
unsigned cp_kube_token_reads (const struct cp_kube_client *c);
/* The configuration C was opened with (its server, CA and token files). */
const struct cp_kube_config *cp_kube_client_config (const struct cp_kube_client *c);

/* PATH's query value VALUE escaped for a URL (caller frees). */
char *cp_kube_escape (const char *value);

#endif
