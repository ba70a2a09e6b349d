/* Fuzz the kubelet plugin's gRPC transport (hook/grpc) as its sockets read what a
 * peer sends: gRPC's message prefix (grpc_frame.c), the services' protobuf
 * decoding (grpc_kubelet.c, grpc_dra.c), and a whole connection (grpc_conn.c: the
 * nghttp2 session, its streams, the limits, the answers).
 *
 * Input: the bytes a client sends after HTTP/2's connection preface, which the
 * target writes first (so that the fuzzer spends its time past it; fuzz/corpus/grpc
 * holds real sessions: GetInfo, NotifyRegistrationStatus, prepare and unprepare,
 * v1 and v1beta1).  Invariants:
 *   - the prefix: a refusal is an input error of one line; a unary body taken is
 *     exactly one prefix and the message it announces, within the limit;
 *   - each method, called with the bytes as its request: an answer of OK with a
 *     body of at most CP_GRPC_MAX_MESSAGE bytes, or another code with one line;
 *   - the connection, fed the bytes in reads of 1..256 bytes (the input's first
 *     byte): served or closed, never a crash, and the process lives on. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "grpc_conn.h"
#include "grpc_dra.h"
#include "grpc_frame.h"
#include "grpc_kubelet.h"
#include "log.h"
#include "util.h"

static void
prepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, struct cp_grpc_prepared *out)
{
  (void) ctx;
  for (size_t i = 0; i < n; i++)
    {
      FUZZ_CHECK (claims[i].uid[0] && claims[i].namespace[0] && claims[i].name[0]);
      if (i % 2)
        out[i].error = cp_xstrdup ("no");
      else
        {
          out[i].n_devices = 1;
          out[i].devices = cp_xcalloc (1, sizeof *out[i].devices);
          out[i].devices[0] = (struct cp_grpc_device) { .request = cp_xstrdup ("r/s"),
                                                        .cdi_id = cp_xasprintf ("cachepin.io/claim=%s-0",
                                                                                claims[i].uid) };
        }
    }
}

static void
unprepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, char **errors)
{
  (void) ctx, (void) claims;
  for (size_t i = 0; i < n; i += 2)
    errors[i] = cp_xstrdup ("no");
}

static struct cp_grpc_method methods[2 + CP_GRPC_DRA_N_METHODS];
static size_t n_methods;
static struct cp_grpc_kubelet reg = { .endpoint = "/run/dra.sock" };
static struct cp_grpc_dra dra = { .ops = { .prepare = prepare, .unprepare = unprepare } };

static void
setup (void)
{
  if (n_methods)
    return;
  cp_log_set_level (CP_LOG_ERROR); /* one line per refusal: not thousands a second */
  size_t nk, nd;
  const struct cp_grpc_method *k = cp_grpc_kubelet_methods (&reg, &nk);
  const struct cp_grpc_method *d = cp_grpc_dra_methods (&dra, &nd);
  memcpy (methods, k, nk * sizeof *k);
  memcpy (methods + nk, d, nd * sizeof *d);
  n_methods = nk + nd;
}

static void
check_frame (const uint8_t *data, size_t size)
{
  cp_error_t err = NULL;
  const uint8_t *msg;
  size_t len;
  if (cp_grpc_frame_unary (data, size, 4096, &msg, &len, &err) == 0)
    {
      FUZZ_CHECK (len <= 4096 && msg == data + CP_GRPC_PREFIX_LEN && CP_GRPC_PREFIX_LEN + len == size);
      FUZZ_CHECK (cp_grpc_frame_check (data, size, 4096, &err) == 0);
    }
  else
    {
      FUZZ_CHECK (cp_error_kind (err) == CP_ERR_INPUT);
      FUZZ_CHECK (strchr (cp_error_message (err), '\n') == NULL);
    }
  cp_error_free (&err);
}

static void
check_methods (const uint8_t *data, size_t size)
{
  for (size_t i = 0; i < n_methods; i++)
    {
      struct cp_grpc_reply r = { .code = CP_GRPC_OK };
      methods[i].call (methods[i].ctx, data, size, &r);
      if (r.code == CP_GRPC_OK)
        FUZZ_CHECK (r.body != NULL && r.len <= CP_GRPC_MAX_MESSAGE && r.message == NULL);
      else
        FUZZ_CHECK (r.body == NULL && r.message && strchr (r.message, '\n') == NULL);
      free (r.body);
      free (r.message);
    }
}

static void
drain (int fd)
{
  uint8_t buf[65536];
  while (read (fd, buf, sizeof buf) > 0)
    ;
}

static void
check_conn (const uint8_t *data, size_t size)
{
  static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  int sv[2];
  FUZZ_CHECK (socketpair (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
  int big = 1 << 20;
  setsockopt (sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt (sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  struct cp_grpc_conn_config cfg
    = { .name = "fuzz.sock", .methods = methods, .n_methods = n_methods, .stall_ms = 10000, .idle_ms = 3600000 };
  struct cp_grpc_conn *c = cp_grpc_conn_new (sv[0], &cfg);
  bool alive = cp_grpc_conn_serve (c);
  FUZZ_CHECK (write (sv[1], preface, sizeof preface - 1) == (ssize_t) (sizeof preface - 1));
  size_t cut = size ? (size_t) data[0] + 1 : 1;
  for (size_t off = size ? 1 : 0; off < size && alive;)
    {
      size_t n = size - off < cut ? size - off : cut;
      ssize_t w = write (sv[1], data + off, n);
      if (w <= 0)
        break;
      off += (size_t) w;
      alive = cp_grpc_conn_serve (c);
      drain (sv[1]);
    }
  if (alive)
    {
      shutdown (sv[1], SHUT_WR);
      alive = cp_grpc_conn_serve (c);
    }
  cp_grpc_conn_free (c); /* closes sv[0] */
  close (sv[1]);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  setup ();
  check_frame (data, size);
  check_methods (data, size);
  check_conn (data, size);
  return 0;
}
