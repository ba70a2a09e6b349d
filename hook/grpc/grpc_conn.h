/* cachepin: one gRPC connection (grpc_server.h): its nghttp2 session, its calls
 * (streams) and their answers.  Used by grpc_server.c alone. */
#ifndef CP_GRPC_CONN_H
#define CP_GRPC_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "grpc_server.h"

/* What the server hands each connection. */
struct cp_grpc_conn_config
{
  const char *name; /* the socket's file name, for log lines */
  const struct cp_grpc_method *methods;
  size_t n_methods;
  long stall_ms, idle_ms, defer_ms;
};

struct cp_grpc_conn;

/* A connection on FD (accepted, non-blocking; taken: closed by cp_grpc_conn_free()). */
struct cp_grpc_conn *cp_grpc_conn_new (int fd, const struct cp_grpc_conn_config *cfg);
int cp_grpc_conn_fd (const struct cp_grpc_conn *c);

/* Read what there is, answer what is complete, write what can go: false when the
   connection is over (the peer left, broke the protocol or a limit; logged). */
bool cp_grpc_conn_serve (struct cp_grpc_conn *c);

/* Whether it has bytes the peer has not taken yet (poll for writing). */
bool cp_grpc_conn_wants_write (const struct cp_grpc_conn *c);

/* False when it is past a timeout at NOW_MS (CLOCK_MONOTONIC; logged). */
bool cp_grpc_conn_check_time (struct cp_grpc_conn *c, long long now_ms);

void cp_grpc_conn_free (struct cp_grpc_conn *c);

#endif
