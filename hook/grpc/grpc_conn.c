/* cachepin: one gRPC connection (grpc_conn.h). */
#define _GNU_SOURCE
#include "grpc_conn.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grpc_frame.h"
#include "log.h"
#include "util.h"

#define PATH_MAX_LEN 256

/* One call. */
struct stream
{
  int32_t id;
  size_t header_bytes;
  char path[PATH_MAX_LEN];
  bool post, grpc_type, bad_header;
  uint8_t *body; /* the request's bytes so far (prefix included) */
  size_t len;
  bool answered;      /* an answer submitted: later bytes are dropped */
  long long last_ms;  /* the last byte of the request seen */
  uint8_t *out;       /* the answer's DATA: prefix and message */
  size_t out_len, out_off;
  struct cp_grpc_call *call; /* deferred: its method answers later (grpc_server.h) */
  struct stream *next;
};

struct cp_grpc_conn
{
  int fd;
  const struct cp_grpc_conn_config *cfg;
  nghttp2_session *session;
  struct stream *streams;
  size_t n_streams;
  bool refused_logged, invalid_logged;
  bool failed;          /* a callback decided the connection is over */
  uint8_t *pending;     /* bytes nghttp2 gave that the socket has not taken */
  size_t pending_len, pending_off;
  long long opened_ms, last_ms, write_stalled_ms;
  bool preface_seen;
};

static long long
now_ms (void)
{
  return cp_monotonic_ms ();
}

static struct stream *
find_stream (struct cp_grpc_conn *c, int32_t id)
{
  for (struct stream *s = c->streams; s; s = s->next)
    if (s->id == id)
      return s;
  return NULL;
}

/* A deferred call: CONN NULL once the server gave it up (its answer then dropped). */
struct cp_grpc_call
{
  struct cp_grpc_conn *conn;
  int32_t id;
  long long deadline_ms;
};

static void
stream_free (struct stream *s)
{
  if (s->call)
    s->call->conn = NULL;
  free (s->body);
  free (s->out);
  free (s);
}

/* ---- answers ---------------------------------------------------------------------- */

/* grpc-message's percent-encoding (PROTOCOL-HTTP2.md): bytes outside 0x20-0x7e and
   `%` as %XX. */
static char *
percent_encode (const char *m)
{
  size_t n = strlen (m);
  char *out = cp_xmalloc0 (n * 3 + 1), *o = out;
  for (const unsigned char *p = (const unsigned char *) m; *p; p++)
    if (*p < 0x20 || *p > 0x7e || *p == '%')
      o += sprintf (o, "%%%02X", *p);
    else
      *o++ = (char) *p;
  *o = '\0';
  return out;
}

#define NV(n, v) { (uint8_t *) (n), (uint8_t *) (v), sizeof (n) - 1, strlen (v), NGHTTP2_NV_FLAG_NONE }

/* A trailers-only answer: the status in the one HEADERS frame, which ends the stream. */
static void
answer_status (struct cp_grpc_conn *c, struct stream *s, enum cp_grpc_code code, const char *message)
{
  char status[12];
  snprintf (status, sizeof status, "%d", (int) code);
  cleanup_free char *enc = percent_encode (message ? message : "");
  nghttp2_nv nva[] = {
    NV (":status", "200"),
    NV ("content-type", "application/grpc"),
    NV ("grpc-status", status),
    NV ("grpc-message", enc),
  };
  s->answered = true;
  int r = nghttp2_submit_response (c->session, s->id, nva, message ? 4 : 3, NULL);
  if (r != 0)
    cp_log (CP_LOG_DEBUG, "grpc: %s: stream %d: %s", c->cfg->name, s->id, nghttp2_strerror (r));
}

/* The answer's DATA, then its trailers. */
static ssize_t
read_answer (nghttp2_session *session, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
             nghttp2_data_source *source, void *user)
{
  (void) source;
  struct cp_grpc_conn *c = user;
  struct stream *s = find_stream (c, id);
  if (s == NULL)
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  size_t n = s->out_len - s->out_off;
  if (n > length)
    n = length;
  memcpy (buf, s->out + s->out_off, n);
  s->out_off += n;
  if (s->out_off == s->out_len)
    {
      *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
      nghttp2_nv trailers[] = { NV ("grpc-status", "0") };
      int r = nghttp2_submit_trailer (session, id, trailers, 1);
      if (r != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
  return (ssize_t) n;
}

static void
answer_ok (struct cp_grpc_conn *c, struct stream *s, struct cp_grpc_reply *reply)
{
  if (reply->len > CP_GRPC_MAX_MESSAGE)
    {
      cp_log (CP_LOG_WARNING, "grpc: %s: %s: an answer of %zu bytes, over the limit of %u", c->cfg->name, s->path,
              reply->len, CP_GRPC_MAX_MESSAGE);
      answer_status (c, s, CP_GRPC_RESOURCE_EXHAUSTED, "the answer is over the message limit");
      return;
    }
  s->out_len = CP_GRPC_PREFIX_LEN + reply->len;
  s->out = cp_xmalloc0 (s->out_len);
  cp_grpc_frame_prefix (s->out, (uint32_t) reply->len);
  if (reply->len)
    memcpy (s->out + CP_GRPC_PREFIX_LEN, reply->body, reply->len);
  nghttp2_nv nva[] = { NV (":status", "200"), NV ("content-type", "application/grpc") };
  nghttp2_data_provider data = { .read_callback = read_answer };
  s->answered = true;
  int r = nghttp2_submit_response (c->session, s->id, nva, 2, &data);
  if (r != 0)
    cp_log (CP_LOG_DEBUG, "grpc: %s: stream %d: %s", c->cfg->name, s->id, nghttp2_strerror (r));
}

/* A refused call: one line, and its status. */
static void
refuse (struct cp_grpc_conn *c, struct stream *s, enum cp_grpc_code code, const char *why)
{
  cp_log (CP_LOG_WARNING, "grpc: %s: %.64s refused: %s", c->cfg->name, s->path[0] ? s->path : "a call", why);
  answer_status (c, s, code, why);
}

/* The request is whole: its method runs, its answer is queued. */
static void
dispatch (struct cp_grpc_conn *c, struct stream *s)
{
  if (s->bad_header)
    return refuse (c, s, CP_GRPC_INVALID_ARGUMENT, "a header's value has a byte that is not printable");
  if (!s->post)
    return refuse (c, s, CP_GRPC_INVALID_ARGUMENT, "the method is not POST");
  if (!s->grpc_type)
    return refuse (c, s, CP_GRPC_INVALID_ARGUMENT, "the content-type is not application/grpc");
  const struct cp_grpc_method *m = NULL;
  for (size_t i = 0; i < c->cfg->n_methods && m == NULL; i++)
    if (strcmp (c->cfg->methods[i].path, s->path) == 0)
      m = &c->cfg->methods[i];
  if (m == NULL)
    return refuse (c, s, CP_GRPC_UNIMPLEMENTED, "no such method on this socket");
  cleanup_error cp_error_t e = NULL;
  const uint8_t *msg;
  size_t len;
  if (cp_grpc_frame_unary (s->body, s->len, CP_GRPC_MAX_MESSAGE, &msg, &len, &e) < 0)
    return refuse (c, s, CP_GRPC_INVALID_ARGUMENT, cp_error_message (e));
  struct cp_grpc_reply reply = { .code = CP_GRPC_OK, .conn_ = c, .stream_ = s->id };
  m->call (m->ctx, msg, len, &reply);
  free (s->body);
  s->body = NULL;
  s->len = 0;
  if (reply.deferred_)
    {
      s->call = reply.deferred_;
      s->answered = true; /* no stall: the deadline is the call's */
    }
  else if (reply.code == CP_GRPC_OK)
    answer_ok (c, s, &reply);
  else
    answer_status (c, s, reply.code, reply.message ? reply.message : "failed");
  free (reply.body);
  free (reply.message);
}

/* ---- nghttp2's callbacks ------------------------------------------------------------ */

static int
on_begin_headers (nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
  struct cp_grpc_conn *c = user;
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  if (c->n_streams >= CP_GRPC_MAX_STREAMS)
    {
      if (!c->refused_logged)
        cp_log (CP_LOG_WARNING, "grpc: %s: more than %d calls at once on one connection: the next refused "
                                "(REFUSED_STREAM)",
                c->cfg->name, CP_GRPC_MAX_STREAMS);
      c->refused_logged = true;
      nghttp2_submit_rst_stream (session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM);
      return 0;
    }
  struct stream *s = cp_xmalloc0 (sizeof *s);
  s->id = frame->hd.stream_id;
  s->last_ms = now_ms ();
  s->next = c->streams;
  c->streams = s;
  c->n_streams++;
  return 0;
}

static bool
printable (const uint8_t *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (v[i] < 0x20 || v[i] > 0x7e)
      return false;
  return true;
}

static int
on_header (nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
           const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
  (void) session, (void) flags;
  struct cp_grpc_conn *c = user;
  if (frame->hd.type != NGHTTP2_HEADERS)
    return 0;
  struct stream *s = find_stream (c, frame->hd.stream_id);
  if (s == NULL)
    return 0;
  /* RFC 9113's accounting: name, value and 32 bytes each. */
  s->header_bytes += namelen + valuelen + 32;
  if (s->header_bytes > CP_GRPC_MAX_HEADERS)
    {
      cp_log (CP_LOG_WARNING, "grpc: %s: a call's headers over %d bytes: connection closed", c->cfg->name,
              CP_GRPC_MAX_HEADERS);
      c->failed = true;
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
  if (frame->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0; /* trailers of a request: nothing a unary call needs */
  if (namelen == 5 && memcmp (name, ":path", 5) == 0)
    {
      if (valuelen >= sizeof s->path || !printable (value, valuelen))
        s->bad_header = true;
      else
        memcpy (s->path, value, valuelen), s->path[valuelen] = '\0';
    }
  else if (namelen == 7 && memcmp (name, ":method", 7) == 0)
    s->post = valuelen == 4 && memcmp (value, "POST", 4) == 0;
  else if (namelen == 12 && memcmp (name, "content-type", 12) == 0)
    s->grpc_type = valuelen >= 16 && memcmp (value, "application/grpc", 16) == 0
                   && (valuelen == 16 || value[16] == '+' || value[16] == ';');
  return 0;
}

static bool flush (struct cp_grpc_conn *c);

struct cp_grpc_call *
cp_grpc_reply_defer (struct cp_grpc_reply *reply)
{
  struct cp_grpc_call *call = cp_xmalloc0 (sizeof *call);
  call->conn = reply->conn_;
  call->id = reply->stream_;
  long defer = reply->conn_ ? reply->conn_->cfg->defer_ms : CP_GRPC_DEFER_MS;
  call->deadline_ms = now_ms () + (defer > 0 ? defer : CP_GRPC_DEFER_MS);
  reply->deferred_ = call;
  return call;
}

void
cp_grpc_call_answer (struct cp_grpc_call *call, struct cp_grpc_reply *reply)
{
  struct cp_grpc_conn *c = call->conn;
  struct stream *s = c ? find_stream (c, call->id) : NULL;
  if (s && s->call == call)
    {
      s->call = NULL;
      if (reply->code == CP_GRPC_OK)
        answer_ok (c, s, reply);
      else
        answer_status (c, s, reply->code, reply->message ? reply->message : "failed");
      if (!flush (c))
        c->failed = true; /* closed at the server's next run */
    }
  else
    cp_log (CP_LOG_DEBUG, "grpc: a deferred call's answer dropped: the server gave the call up");
  free (reply->body);
  free (reply->message);
  reply->body = NULL;
  reply->message = NULL;
  free (call);
}

static int
on_data_chunk (nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *user)
{
  (void) session, (void) flags;
  struct cp_grpc_conn *c = user;
  struct stream *s = find_stream (c, id);
  if (s == NULL || s->answered)
    return 0;
  s->last_ms = now_ms ();
  /* At most one prefix and one message of the limit are kept: the check refuses
     any byte past them. */
  size_t keep = len;
  if (s->len + keep > CP_GRPC_PREFIX_LEN + CP_GRPC_MAX_MESSAGE + 1)
    keep = CP_GRPC_PREFIX_LEN + CP_GRPC_MAX_MESSAGE + 1 - s->len;
  s->body = cp_xrealloc (s->body, s->len + keep);
  memcpy (s->body + s->len, data, keep);
  s->len += keep;
  cleanup_error cp_error_t e = NULL;
  if (cp_grpc_frame_check (s->body, s->len, CP_GRPC_MAX_MESSAGE, &e) < 0)
    {
      free (s->body);
      s->body = NULL;
      s->len = 0;
      refuse (c, s, CP_GRPC_INVALID_ARGUMENT, cp_error_message (e));
    }
  return 0;
}

static int
on_frame_recv (nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
  (void) session;
  struct cp_grpc_conn *c = user;
  c->preface_seen = true;
  if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
      || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
    return 0;
  struct stream *s = find_stream (c, frame->hd.stream_id);
  if (s && !s->answered)
    dispatch (c, s);
  return 0;
}

static int
on_stream_close (nghttp2_session *session, int32_t id, uint32_t error_code, void *user)
{
  (void) session, (void) error_code;
  struct cp_grpc_conn *c = user;
  for (struct stream **p = &c->streams; *p; p = &(*p)->next)
    if ((*p)->id == id)
      {
        struct stream *s = *p;
        *p = s->next;
        stream_free (s);
        c->n_streams--;
        break;
      }
  return 0;
}

/* A frame nghttp2 refused itself (a stream past our SETTINGS_MAX_CONCURRENT_STREAMS,
   a frame on a closed stream...): one line per connection. Not a GOAWAY: grpc-go's
   client (the kubelet's) closes a connection with one naming its own last stream
   (RFC 9113 wants the server's), which nghttp2 refuses; the client is leaving, and the
   connection ends either way. */
static int
on_invalid_frame (nghttp2_session *session, const nghttp2_frame *frame, int lib_error_code, void *user)
{
  (void) session;
  struct cp_grpc_conn *c = user;
  if (frame->hd.type == NGHTTP2_GOAWAY)
    {
      cp_log (CP_LOG_DEBUG, "grpc: %s: the client's GOAWAY (last stream %d): the connection ends", c->cfg->name,
              frame->goaway.last_stream_id);
      return 0;
    }
  if (!c->invalid_logged)
    cp_log (CP_LOG_WARNING, "grpc: %s: a frame (type %u, stream %d) refused: %s", c->cfg->name,
            (unsigned) frame->hd.type, frame->hd.stream_id, nghttp2_strerror (lib_error_code));
  c->invalid_logged = true;
  return 0;
}

/* ---- the connection ----------------------------------------------------------------- */

struct cp_grpc_conn *
cp_grpc_conn_new (int fd, const struct cp_grpc_conn_config *cfg)
{
  struct cp_grpc_conn *c = cp_xmalloc0 (sizeof *c);
  c->fd = fd;
  c->cfg = cfg;
  c->opened_ms = c->last_ms = now_ms ();
  nghttp2_session_callbacks *cb;
  nghttp2_option *opt;
  if (nghttp2_session_callbacks_new (&cb) != 0 || nghttp2_option_new (&opt) != 0)
    abort (); /* out of memory, as cp_xmalloc() */
  nghttp2_session_callbacks_set_on_begin_headers_callback (cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback (cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback (cb, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback (cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback (cb, on_stream_close);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback (cb, on_invalid_frame);
  /* nghttp2 refuses a peer's streams past our SETTINGS_MAX_CONCURRENT_STREAMS
     once acknowledged; on_begin_headers() counts before that too. */
  nghttp2_option_set_max_deflate_dynamic_table_size (opt, 4096);
  int r = nghttp2_session_server_new2 (&c->session, cb, c, opt);
  nghttp2_session_callbacks_del (cb);
  nghttp2_option_del (opt);
  if (r != 0)
    abort ();
  nghttp2_settings_entry settings[] = {
    { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, CP_GRPC_MAX_STREAMS },
    { NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, CP_GRPC_MAX_HEADERS },
  };
  nghttp2_submit_settings (c->session, NGHTTP2_FLAG_NONE, settings, CP_ARRAY_SIZE (settings));
  return c;
}

int
cp_grpc_conn_fd (const struct cp_grpc_conn *c)
{
  return c->fd;
}

/* Write what is pending, and what nghttp2 has next, until the socket is full:
   false on a write error. */
static bool
flush (struct cp_grpc_conn *c)
{
  for (;;)
    {
      if (c->pending_off == c->pending_len)
        {
          const uint8_t *data;
          ssize_t n = nghttp2_session_mem_send (c->session, &data);
          if (n < 0)
            {
              cp_log (CP_LOG_WARNING, "grpc: %s: connection closed: %s", c->cfg->name, nghttp2_strerror ((int) n));
              return false;
            }
          if (n == 0)
            {
              c->write_stalled_ms = 0;
              return true;
            }
          free (c->pending);
          c->pending = cp_xmalloc0 ((size_t) n);
          memcpy (c->pending, data, (size_t) n);
          c->pending_len = (size_t) n;
          c->pending_off = 0;
        }
      ssize_t w = write (c->fd, c->pending + c->pending_off, c->pending_len - c->pending_off);
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        {
          if (c->write_stalled_ms == 0)
            c->write_stalled_ms = now_ms ();
          return true;
        }
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        {
          cp_log (CP_LOG_DEBUG, "grpc: %s: write: %s", c->cfg->name, strerror (errno));
          return false;
        }
      c->pending_off += (size_t) w;
      c->write_stalled_ms = 0;
    }
}

bool
cp_grpc_conn_serve (struct cp_grpc_conn *c)
{
  uint8_t buf[16384];
  for (;;)
    {
      ssize_t n = read (c->fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        break;
      if (n <= 0)
        {
          if (n < 0)
            cp_log (CP_LOG_DEBUG, "grpc: %s: read: %s", c->cfg->name, strerror (errno));
          return false; /* the peer left */
        }
      c->last_ms = now_ms ();
      ssize_t r = nghttp2_session_mem_recv (c->session, buf, (size_t) n);
      if (r < 0 || c->failed)
        {
          if (!c->failed)
            cp_log (CP_LOG_WARNING, "grpc: %s: connection closed: %s", c->cfg->name, nghttp2_strerror ((int) r));
          flush (c); /* its GOAWAY, where nghttp2 queued one */
          return false;
        }
      if (!flush (c))
        return false;
    }
  if (!flush (c))
    return false;
  return nghttp2_session_want_read (c->session) || nghttp2_session_want_write (c->session)
         || c->pending_off < c->pending_len;
}

bool
cp_grpc_conn_wants_write (const struct cp_grpc_conn *c)
{
  return c->pending_off < c->pending_len;
}

bool
cp_grpc_conn_check_time (struct cp_grpc_conn *c, long long now)
{
  if (c->failed)
    return false;
  bool expired = false;
  for (struct stream *s = c->streams; s; s = s->next)
    if (s->call && now >= s->call->deadline_ms)
      {
        cp_log (CP_LOG_WARNING, "grpc: %s: %s: no answer within %ld ms: answered DEADLINE_EXCEEDED", c->cfg->name,
                s->path, c->cfg->defer_ms);
        s->call->conn = NULL; /* its holder's answer, later, is dropped */
        s->call = NULL;
        answer_status (c, s, CP_GRPC_DEADLINE_EXCEEDED, "cachepin: no answer within the plugin's bound");
        expired = true;
      }
  /* Sent after the walk: a stream whose answer is sent is closed, and freed, there. */
  if (expired && !flush (c))
    return false;
  if (c->write_stalled_ms && now - c->write_stalled_ms > c->cfg->stall_ms)
    {
      cp_log (CP_LOG_WARNING, "grpc: %s: the peer took no byte of an answer for %ld ms: connection closed",
              c->cfg->name, c->cfg->stall_ms);
      return false;
    }
  if (!c->preface_seen && now - c->opened_ms > c->cfg->stall_ms)
    {
      cp_log (CP_LOG_WARNING, "grpc: %s: no HTTP/2 preface within %ld ms: connection closed", c->cfg->name,
              c->cfg->stall_ms);
      return false;
    }
  for (struct stream *s = c->streams; s; s = s->next)
    if (!s->answered && now - s->last_ms > c->cfg->stall_ms)
      {
        cp_log (CP_LOG_WARNING, "grpc: %s: a call stalled mid-request for %ld ms: connection closed", c->cfg->name,
                c->cfg->stall_ms);
        return false;
      }
  if (c->n_streams == 0 && now - c->last_ms > c->cfg->idle_ms)
    {
      cp_log (CP_LOG_INFO, "grpc: %s: idle for %ld ms: connection closed", c->cfg->name, c->cfg->idle_ms);
      return false;
    }
  return true;
}

void
cp_grpc_conn_free (struct cp_grpc_conn *c)
{
  if (c == NULL)
    return;
  nghttp2_session_del (c->session); /* closes its streams: on_stream_close() frees them */
  while (c->streams)
    {
      struct stream *s = c->streams;
      c->streams = s->next;
      stream_free (s);
    }
  free (c->pending);
  close (c->fd);
  free (c);
}
