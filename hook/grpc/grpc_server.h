/* cachepin: gRPC servers on unix sockets, for the kubelet plugin (grpc_kubelet.h,
 * grpc_dra.h): HTTP/2 by libnghttp2, one session per connection, unary calls only.
 *
 * Not a thread of its own: every socket it holds (the listening ones, the
 * connections, a one-second timer) is non-blocking and sits in one epoll set,
 * which the agent's loop polls beside the runtime's socket as a side descriptor
 * (nri_conn.h); cp_grpc_server_run() then does what is ready and returns.  A
 * call's method runs there, between two of the runtime's calls.
 *
 * Limits (a kubelet is trusted, but what reaches the sockets is fuzzed): at most
 * CP_GRPC_MAX_CONNECTIONS connections (one more is accepted and closed at once),
 * CP_GRPC_MAX_STREAMS calls at once per connection (one more is refused with
 * RST_STREAM REFUSED_STREAM), CP_GRPC_MAX_HEADERS bytes of a call's headers (more
 * closes the connection), CP_GRPC_MAX_MESSAGE bytes per message (grpc_frame.h: the
 * call answered INVALID_ARGUMENT).  A peer that stops mid-call (a call's headers
 * or message started, not ended; an answer it does not read) is closed after the
 * stall timeout, a connection with no call after the idle timeout.  Each refusal
 * is one log line (warning); nothing a peer sends ends the server. */
#ifndef CP_GRPC_SERVER_H
#define CP_GRPC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CP_GRPC_MAX_CONNECTIONS 16
#define CP_GRPC_MAX_STREAMS 8
#define CP_GRPC_MAX_HEADERS (16 * 1024)
#define CP_GRPC_STALL_MS 10000
#define CP_GRPC_IDLE_MS (3600 * 1000)
/* A call its method deferred (cp_grpc_reply_defer()) is answered DEADLINE_EXCEEDED
   when the front end has not answered it within this: less than the kubelet's 45 s. */
#define CP_GRPC_DEFER_MS 30000

/* gRPC's status codes the services answer with (grpc's doc/statuscodes.md). */
enum cp_grpc_code
{
  CP_GRPC_OK = 0,
  CP_GRPC_INVALID_ARGUMENT = 3,
  CP_GRPC_DEADLINE_EXCEEDED = 4,
  CP_GRPC_RESOURCE_EXHAUSTED = 8,
  CP_GRPC_UNIMPLEMENTED = 12,
  CP_GRPC_INTERNAL = 13,
};

/* A method's answer: CODE OK and BODY (LEN bytes, the serialized response
   message, malloc()ed: the server frees it), or another CODE and MESSAGE (one
   line, malloc()ed, may be NULL). */
struct cp_grpc_reply
{
  enum cp_grpc_code code;
  uint8_t *body;
  size_t len;
  char *message;
  /* The server's own (a method leaves them): the call, should it be deferred. */
  struct cp_grpc_conn *conn_;
  int32_t stream_;
  struct cp_grpc_call *deferred_;
};

/* A call whose answer comes later (the method could not answer at once: the claim
   is fetched by another process).  The method calls cp_grpc_reply_defer() and
   leaves *REPLY otherwise unset; the call is neither a stalled one (the stall
   timeout spares it) nor kept past CP_GRPC_DEFER_MS (then answered
   DEADLINE_EXCEEDED by the server).  Whoever holds the call answers it exactly once
   with cp_grpc_call_answer(), which frees it: an answer to a call the server gave
   up (its deadline, the peer gone) is dropped. */
struct cp_grpc_call;
struct cp_grpc_call *cp_grpc_reply_defer (struct cp_grpc_reply *reply);
/* CALL answered with REPLY (as a method fills it; its body and message freed here). */
void cp_grpc_call_answer (struct cp_grpc_call *call, struct cp_grpc_reply *reply);

/* One unary method: PATH ("/package.Service/Method"), CALL with the request
   message's bytes (REQ, N) filling *REPLY. */
struct cp_grpc_method
{
  const char *path;
  void (*call) (void *ctx, const uint8_t *req, size_t n, struct cp_grpc_reply *reply);
  void *ctx;
};

struct cp_grpc_server;

/* A server with nothing to listen on yet. */
int cp_grpc_server_new (struct cp_grpc_server **out, cp_error_t *err);

/* The stall and idle timeouts (tests shorten them; 0 keeps one). */
void cp_grpc_server_set_timeouts (struct cp_grpc_server *s, long stall_ms, long idle_ms);
/* The deferred calls' bound (CP_GRPC_DEFER_MS; 0 keeps it). */
void cp_grpc_server_set_defer (struct cp_grpc_server *s, long defer_ms);

/* Listen on the unix socket PATH (a stale socket there is replaced; the file is
   made 0600, the directory must exist) and serve METHODS (N, kept: they must
   outlive the server) on its connections. */
int cp_grpc_server_listen (struct cp_grpc_server *s, const char *path, const struct cp_grpc_method *methods,
                           size_t n, cp_error_t *err);

/* The epoll set to poll for reading (the loop's side descriptor). */
int cp_grpc_server_fd (const struct cp_grpc_server *s);

/* The listening sockets (the sandbox's accept rule): up to MAX into FDS, how many. */
size_t cp_grpc_server_listen_fds (const struct cp_grpc_server *s, int *fds, size_t max);

/* What is ready served, connections past their timeouts closed; never blocks. */
void cp_grpc_server_run (struct cp_grpc_server *s);

/* Every connection closed, every socket closed and its path removed. */
void cp_grpc_server_free (struct cp_grpc_server *s);
void cp_grpc_server_freep (struct cp_grpc_server **s);
#define cleanup_grpc_server __attribute__ ((cleanup (cp_grpc_server_freep)))

#endif
