/* cachepin: an NRI plugin's side of the protocol, what every plugin does whatever it
 * decides (containerd/nri pkg/stub/stub.go's part, in C): connect (dial the
 * runtime's socket, or take the connected one a runtime that pre-launched the
 * plugin hands it), register (Runtime.RegisterPlugin{name, idx} on connection 2),
 * serve the Plugin service on connection 1 from ONE table of methods, which yields
 * both the dispatch and the events subscribed to (Configure's answer), answer
 * Shutdown, and when the runtime goes dial again with a backoff (the dialled form) or
 * end (the pre-launched form: the runtime starts it again).  One request at a time,
 * answered before the next is read.
 *
 * No decision here and no log of its own: the plugin's handlers decide, and the
 * stub tells the plugin what happened to the connection through LOG. */
#ifndef CP_NRI_STUB_H
#define CP_NRI_STUB_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "api.pb-c.h"
#include "error.h"
#include "nri_conn.h"
#include "nri_wire.h"

/* A call of the runtime being answered: its stream, and where the answer's frames go. */
struct cp_nri_call
{
  uint32_t stream;
  struct cp_buf *out;
};

/* A handler's return besides 0 and < 0 (*ERR): answered, then the connection is
   closed (the runtime asked for what the plugin will not hold: a Synchronize past
   its bounds). */
#define CP_NRI_CLOSE_AFTER 1

/* One method of the Plugin service: its request's descriptor, its handler (CTX is
   the stub's config->ctx; it answers CALL, a reply or an error status, and returns 0,
   CP_NRI_CLOSE_AFTER, or < 0 when the answer itself could not be made), and the NRI
   Event it handles (its bit, 1 << (event - 1), subscribed to; 0: a call every plugin
   gets, Synchronize, StateChange). */
struct cp_nri_method
{
  const char *name;
  const ProtobufCMessageDescriptor *desc;
  int (*fn) (void *ctx, const ProtobufCMessage *req, struct cp_nri_call *call, cp_error_t *err);
  int event;
};

/* The events METHODS (N) subscribe to: Configure's answer. */
int32_t cp_nri_events_of (const struct cp_nri_method *methods, size_t n);

enum cp_nri_log_level
{
  CP_NRI_LOG_ERROR,
  CP_NRI_LOG_WARNING,
  CP_NRI_LOG_INFO,
  CP_NRI_LOG_DEBUG,
};

struct cp_nri_stub
{
  const char *name, *idx; /* what it registers as (cp_nri_check_name(), cp_nri_check_idx()) */
  const char *socket;     /* the socket it dials; with PRELAUNCHED_FD >= 0, not dialled */
  int prelaunched_fd;     /* the connected socket a runtime handed it, or -1 */
  const struct cp_nri_method *methods;
  size_t n_methods;
  void *ctx;
  const volatile sig_atomic_t *stopping; /* set by SIGTERM's handler: the run ends at once */
  /* Told of Configure's request before it is answered (may be NULL). */
  void (*configured) (void *ctx, const Nri__Pkg__Api__V1alpha1__ConfigureRequest *req);
  /* Once connected, before the first request (may be NULL): the plugin's sandbox; < 0
     ends the run (*ERR). */
  int (*connected) (void *ctx, cp_error_t *err);
  /* After each call answered (may be NULL): < 0 (*ERR) ends the run with that error. */
  int (*answered) (void *ctx, const char *method, long us, cp_error_t *err);
  /* A connection ended (may be NULL): what the plugin keeps per connection dropped. */
  void (*ended) (void *ctx);
  void (*log) (enum cp_nri_log_level level, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
  /* The process's other endpoints, served by this loop while it waits for the
     runtime or to dial it again (nri_conn.h; may be none). */
  const struct cp_nri_side *side;
  size_t n_side;
};

/* Serve the runtime until SIGTERM (*STOPPING): 0; the pre-launched form until its
   connection ends: 0; -1 (*ERR) for what a new connection would not cure (a refused
   registration, a message that cannot be read, a handler's or a hook's error). */
int cp_nri_stub_run (const struct cp_nri_stub *s, cp_error_t *err);

/* NRI's rules for a plugin's name (pkg/api: 1 to 64 of letters, digits, `_.+-`) and
   index (exactly two digits); WHAT names the option or variable in the error. */
int cp_nri_check_name (const char *what, const char *arg, cp_error_t *err);
int cp_nri_check_idx (const char *what, const char *arg, cp_error_t *err);

/* The pre-launched form's descriptor from NRI_PLUGIN_SOCKET (unset from the
   environment then, not for what the plugin may start): >= 3; 0 when the variable
   is not set; -1 (*ERR) when it names no connected socket. */
int cp_nri_prelaunched_fd (cp_error_t *err);

#endif
