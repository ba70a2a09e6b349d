/* bench-nri: what the NRI plugin's CreateContainer costs, beside the hook's cost for
 * the same placement (issue 22); run by bench/nri-latency.sh, which makes the
 * cgroups, the ledger and the host config.
 *
 *   bench-nri --cachepin BIN --config CFG --cgroups-path PATH --create STATE
 *             --poststop STATE --widen FILE=CPUS [--rounds N] [--out TSV]
 *             [--no-hook] [--plugin EXE] [--base BIN2 --base-config CFG2]
 *
 * It plays the runtime: starts `BIN nri --config CFG` in the pre-launched form (one
 * end of a socketpair as fd 3, NRI_PLUGIN_SOCKET=3), answers its RegisterPlugin,
 * sends Configure and Synchronize, then N rounds, each, in an order that alternates
 * with the round:
 *   nri   CreateContainer (a container asking cachepin.io/cpus: 1, its
 *         linux.cgroupsPath PATH) timed from the request's write to the answer's
 *         read, then StopContainer (timed too), so that the ledger is back where it
 *         was;
 *   hook  `BIN hook --config CFG createRuntime` fed STATE (--create), then
 *         `poststop` fed --poststop, each timed fork to wait4, the cgroup's
 *         cpuset.cpus (FILE) given CPUS again before, untimed.
 * --no-hook: the plugin's rounds alone (the ledger's only writer, as on a node where
 * NRI is the only route).  --plugin EXE: started in BIN's place as the plugin (a
 * wrapper that runs BIN under valgrind or strace, say), with the same arguments.
 * --base BIN2 --base-config CFG2: a second side, BIN2's plugin (and hook) on the
 * ledger of CFG2's state directory, measured in the same rounds, the sides' order
 * alternating by round; the ratios this / base are printed.
 * Every CreateContainer must be answered with the same cpuset, and every hook pair
 * exit 0 (the script checks the hook's placement): the bench stops otherwise.
 * Prints the medians and 99th percentiles (us) and the ratio, and CreateContainer
 * split by the ledger's last writer before it (the plugin itself in even rounds: its
 * parsed ledger is reused; the hook in odd rounds: the file is read again); --out
 * writes every sample (round, what, us). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nri_conn.h"
#include "nri_rpc.h"

typedef Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry ann_t;

/* One plugin and its hook on one ledger (its host config's state directory). */
struct side
{
  const char *name; /* "" (this build) or "base " */
  const char *bin, *plugin, *config;
  pid_t pid;
  struct cp_nri_conn c;
  uint32_t stream; /* the next call's: odd, as a ttrpc client's */
  long long *create, *stop, *hook_create, *hook_stop;
  char first[256];
};

struct opts
{
  const char *cgroups_path, *create, *poststop, *widen_file, *widen_cpus, *out;
  int rounds;
  bool hook;
  struct side sides[2];
  int n_sides;
};

static long long
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
die (const char *what, cp_error_t err)
{
  fprintf (stderr, "bench-nri: %s%s%s\n", what, err ? ": " : "", err ? cp_error_message (err) : "");
  exit (1);
}

/* S's plugin, pre-launched on one end of a socketpair as fd 3; S->c the other. */
static void
start_plugin (struct side *s)
{
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    die ("socketpair", NULL);
  pid_t pid = fork ();
  if (pid < 0)
    die ("fork", NULL);
  if (pid == 0)
    {
      if (dup2 (sv[1], 3) < 0)
        _exit (126);
      setenv ("NRI_PLUGIN_SOCKET", "3", 1);
      setenv ("NRI_PLUGIN_NAME", "cachepin", 1);
      setenv ("NRI_PLUGIN_IDX", "50", 1);
      execl (s->plugin, s->plugin, "nri", "--config", s->config, (char *) NULL);
      _exit (127);
    }
  close (sv[1]);
  s->pid = pid;
  s->stream = 1;
  cp_nri_conn_adopt (sv[0], &s->c);
}

/* The next message on CONN (the other connection's are refused: one call at a time). */
static void
recv_on (struct cp_nri_conn *c, uint32_t want, struct cp_ttrpc_msg *m)
{
  cp_error_t err = NULL;
  uint32_t conn;
  /* 60 s: a plugin under valgrind answers its first CreateContainer (1,000 entries
     checked) in seconds. */
  int r = cp_nri_conn_recv (c, 60000, &conn, m, &err);
  if (r <= 0)
    die (r == 0 ? "the plugin closed the connection" : "receive", err);
  if (conn != want)
    die ("a message on the other connection", NULL);
}

/* Send SERVICE.METHOD(MSG) on S's connection 1 and read its answer: its status code,
   and the payload decoded as DESC (NULL: not OK, or no DESC). */
static ProtobufCMessage *
call (struct side *s, const char *method, const ProtobufCMessage *msg, const ProtobufCMessageDescriptor *desc,
      int32_t *code)
{
  cp_error_t err = NULL;
  struct cp_buf out = { 0 };
  uint32_t stream = s->stream;
  s->stream += 2;
  if (cp_rpc_request_encode (CP_MUX_CONN_PLUGIN, stream, CP_NRI_SERVICE_PLUGIN, method, msg, &out, &err) < 0
      || cp_nri_conn_send (&s->c, &out, &err) < 0)
    die (method, err);
  cp_buf_free (&out);
  struct cp_ttrpc_msg m;
  recv_on (&s->c, CP_MUX_CONN_PLUGIN, &m);
  if (m.type != CP_TTRPC_RESPONSE || m.stream != stream)
    die ("an answer that is not the call's", NULL);
  Ttrpc__Response *resp = ttrpc__response__unpack (NULL, m.len, m.payload);
  if (resp == NULL)
    die ("an answer that does not decode", NULL);
  *code = resp->status ? resp->status->code : 0;
  if (*code != 0)
    fprintf (stderr, "bench-nri: %s: %s\n", method, resp->status->message ? resp->status->message : "");
  ProtobufCMessage *reply = NULL;
  if (*code == 0 && desc)
    reply = protobuf_c_message_unpack (desc, NULL, resp->payload.len, resp->payload.data);
  ttrpc__response__free_unpacked (resp, NULL);
  cp_ttrpc_msg_clear (&m);
  return reply;
}

/* RegisterPlugin answered, Configure, Synchronize (no pods, no containers). */
static void
handshake (struct side *s)
{
  struct cp_ttrpc_msg m;
  recv_on (&s->c, CP_MUX_CONN_RUNTIME, &m);
  if (m.type != CP_TTRPC_REQUEST)
    die ("the plugin's first message is not RegisterPlugin", NULL);
  cp_error_t err = NULL;
  struct cp_buf out = { 0 };
  Nri__Pkg__Api__V1alpha1__Empty empty = NRI__PKG__API__V1ALPHA1__EMPTY__INIT;
  if (cp_rpc_response_encode (CP_MUX_CONN_RUNTIME, m.stream, CP_RPC_OK, NULL, &empty.base, &out, &err) < 0
      || cp_nri_conn_send (&s->c, &out, &err) < 0)
    die ("RegisterPlugin's answer", err);
  cp_buf_free (&out);
  cp_ttrpc_msg_clear (&m);
  int32_t code;
  Nri__Pkg__Api__V1alpha1__ConfigureRequest cfg = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;
  cfg.runtime_name = "bench-nri";
  cfg.runtime_version = "1";
  cfg.registration_timeout = 5000;
  cfg.request_timeout = 2000;
  ProtobufCMessage *r = call (s, "Configure", &cfg.base, &nri__pkg__api__v1alpha1__configure_response__descriptor, &code);
  if (r == NULL)
    die ("Configure refused", NULL);
  protobuf_c_message_free_unpacked (r, NULL);
  Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
  r = call (s, "Synchronize", &sync.base, &nri__pkg__api__v1alpha1__synchronize_response__descriptor, &code);
  if (r == NULL)
    die ("Synchronize refused", NULL);
  protobuf_c_message_free_unpacked (r, NULL);
}

/* One CreateContainer of S's plugin (timed) and its StopContainer (timed too), into
   round R's samples; the cpuset answered must be the first round's. */
static void
nri_round (struct side *s, const struct opts *o, int r)
{
  char id[64];
  snprintf (id, sizeof id, "bench-nri-%06d", r);
  ann_t a = NRI__PKG__API__V1ALPHA1__CONTAINER__ANNOTATIONS_ENTRY__INIT;
  a.key = "cachepin.io/cpus";
  a.value = "1";
  ann_t *anns[1] = { &a };
  Nri__Pkg__Api__V1alpha1__LinuxContainer lc = NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER__INIT;
  lc.cgroups_path = (char *) o->cgroups_path;
  Nri__Pkg__Api__V1alpha1__Container ctr = NRI__PKG__API__V1ALPHA1__CONTAINER__INIT;
  ctr.id = id;
  ctr.name = "bench";
  ctr.n_annotations = 1;
  ctr.annotations = anns;
  ctr.linux = &lc;
  Nri__Pkg__Api__V1alpha1__PodSandbox pod = NRI__PKG__API__V1ALPHA1__POD_SANDBOX__INIT;
  pod.id = "bench-pod";
  pod.name = "bench";
  Nri__Pkg__Api__V1alpha1__CreateContainerRequest req = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
  req.pod = &pod;
  req.container = &ctr;
  int32_t code;
  long long t0 = now_ns ();
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse *resp = (void *) call (
      s, "CreateContainer", &req.base, &nri__pkg__api__v1alpha1__create_container_response__descriptor, &code);
  s->create[r] = now_ns () - t0;
  if (resp == NULL || resp->adjust == NULL || resp->adjust->linux == NULL || resp->adjust->linux->resources == NULL
      || resp->adjust->linux->resources->cpu == NULL || resp->adjust->linux->resources->cpu->cpus == NULL)
    die ("CreateContainer: answered without a cpuset (not placed)", NULL);
  const char *cpus = resp->adjust->linux->resources->cpu->cpus;
  if (s->first[0] == '\0')
    snprintf (s->first, sizeof s->first, "%s", cpus);
  else if (strcmp (s->first, cpus) != 0)
    die ("CreateContainer answered another cpuset than in the first round", NULL);
  protobuf_c_message_free_unpacked (&resp->base, NULL);
  Nri__Pkg__Api__V1alpha1__StopContainerRequest stop = NRI__PKG__API__V1ALPHA1__STOP_CONTAINER_REQUEST__INIT;
  stop.pod = &pod;
  stop.container = &ctr;
  t0 = now_ns ();
  ProtobufCMessage *sr = call (s, "StopContainer", &stop.base,
                               &nri__pkg__api__v1alpha1__stop_container_response__descriptor, &code);
  s->stop[r] = now_ns () - t0;
  if (sr == NULL)
    die ("StopContainer refused", NULL);
  protobuf_c_message_free_unpacked (sr, NULL);
}

/* S's BIN hook --config CFG STEP, stdin from INPUT, timed fork to wait4. */
static long long
spawn_hook (const struct side *s, const char *step, const char *input)
{
  int in = open (input, O_RDONLY | O_CLOEXEC);
  int null = open ("/dev/null", O_WRONLY | O_CLOEXEC);
  if (in < 0 || null < 0)
    die ("open the hook's input", NULL);
  long long t0 = now_ns ();
  pid_t pid = fork ();
  if (pid < 0)
    die ("fork", NULL);
  if (pid == 0)
    {
      if (dup2 (in, 0) < 0 || dup2 (null, 1) < 0 || dup2 (null, 2) < 0)
        _exit (126);
      execl (s->bin, s->bin, "hook", "--config", s->config, step, (char *) NULL);
      _exit (127);
    }
  int status;
  if (waitpid (pid, &status, 0) < 0)
    die ("wait", NULL);
  long long ns = now_ns () - t0;
  close (in);
  close (null);
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    {
      fprintf (stderr, "bench-nri: %shook %s: exit status %d\n", s->name, step, status);
      exit (1);
    }
  return ns;
}

static void
widen (const struct opts *o)
{
  int fd = open (o->widen_file, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write (fd, o->widen_cpus, strlen (o->widen_cpus)) < 0)
    die ("widen the hook's cgroup", NULL);
  close (fd);
}

/* S's hook pair on its ledger, the sleeper's cgroup widened first (untimed). */
static void
hook_round (struct side *s, const struct opts *o, int r)
{
  widen (o);
  s->hook_create[r] = spawn_hook (s, "createRuntime", o->create);
  s->hook_stop[r] = spawn_hook (s, "poststop", o->poststop);
}

static int
cmp_ll (const void *a, const void *b)
{
  long long x = *(const long long *) a, y = *(const long long *) b;
  return (x > y) - (x < y);
}

/* The Q-th quantile (0..1) of N samples, nearest rank, in us (V sorted in place). */
static double
quantile_us (long long *v, int n, double q)
{
  qsort (v, (size_t) n, sizeof *v, cmp_ll);
  int k = (int) (q * n + 0.999999);
  if (k < 1)
    k = 1;
  if (k > n)
    k = n;
  return v[k - 1] / 1000.0;
}

static double
median_us (long long *v, int n)
{
  qsort (v, (size_t) n, sizeof *v, cmp_ll);
  return (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1000.0;
}

/* A copy of the N samples of V, the sums with W's if W is not NULL. */
static long long *
samples (const long long *v, const long long *w, int n)
{
  long long *out = calloc ((size_t) n, sizeof *out);
  if (out == NULL)
    die ("out of memory", NULL);
  for (int i = 0; i < n; i++)
    out[i] = v[i] + (w ? w[i] : 0);
  return out;
}

static void
report (const char *side, const char *name, const long long *in, int n)
{
  long long *v = samples (in, NULL, n);
  char label[64];
  snprintf (label, sizeof label, "%s%s", side, name);
  double med = median_us (v, n);
  printf ("%-27s median %9.1f us  p99 %9.1f us  min %9.1f  max %9.1f\n", label, med, quantile_us (v, n, 0.99),
          v[0] / 1000.0, v[n - 1] / 1000.0);
  free (v);
}

/* S's CreateContainer samples of the rounds whose parity is PARITY. */
static void
report_parity (const struct side *s, const char *name, int n, int parity)
{
  long long *v = calloc ((size_t) n, sizeof *v);
  int k = 0;
  for (int r = parity; r < n; r += 2)
    v[k++] = s->create[r];
  if (k > 0)
    report (s->name, name, v, k);
  free (v);
}

static void
report_side (const struct side *s, const struct opts *o)
{
  int n = o->rounds;
  report (s->name, "nri CreateContainer", s->create, n);
  /* With the hook, the ledger's last writer before a CreateContainer: in even
     rounds the plugin itself (the previous round ended with its StopContainer), so
     its parsed ledger is reused; in odd rounds the hook, whose write the plugin
     must read. */
  if (o->hook && n > 1)
    {
      report_parity (s, "  after its own write", n, 0);
      report_parity (s, "  after the hook's", n, 1);
    }
  report (s->name, "nri StopContainer", s->stop, n);
  long long *pair = samples (s->create, s->stop, n);
  report (s->name, "nri pair", pair, n);
  free (pair);
  if (!o->hook)
    return;
  report (s->name, "hook createRuntime", s->hook_create, n);
  report (s->name, "hook poststop", s->hook_stop, n);
  pair = samples (s->hook_create, s->hook_stop, n);
  report (s->name, "hook pair", pair, n);
  free (pair);
}

/* NAME's median and p99 of A over B's. */
static void
ratio (const char *name, const long long *a, const long long *b, int n)
{
  long long *x = samples (a, NULL, n), *y = samples (b, NULL, n);
  printf ("  %-25s median %.2f, p99 %.2f\n", name, median_us (x, n) / median_us (y, n),
          quantile_us (x, n, 0.99) / quantile_us (y, n, 0.99));
  free (x);
  free (y);
}

static void
usage (void)
{
  die ("usage: bench-nri --cachepin BIN --config CFG --cgroups-path PATH --create STATE --poststop STATE "
       "--widen FILE=CPUS [--rounds N] [--out TSV] [--no-hook] [--plugin EXE] [--base BIN2 --base-config CFG2]",
       NULL);
}

static void
parse_opts (int argc, char **argv, struct opts *o)
{
  static const struct option longs[] = {
    { "cachepin", required_argument, NULL, 'b' }, { "config", required_argument, NULL, 'c' },
    { "cgroups-path", required_argument, NULL, 'p' }, { "create", required_argument, NULL, 'C' },
    { "poststop", required_argument, NULL, 'P' }, { "widen", required_argument, NULL, 'w' },
    { "rounds", required_argument, NULL, 'n' }, { "out", required_argument, NULL, 'o' },
    { "no-hook", no_argument, NULL, 'H' }, { "plugin", required_argument, NULL, 'x' },
    { "base", required_argument, NULL, 'B' }, { "base-config", required_argument, NULL, 'G' },
    { NULL, 0, NULL, 0 },
  };
  *o = (struct opts) { .rounds = 200, .hook = true, .sides = { { .name = "" }, { .name = "base " } } };
  struct side *a = &o->sides[0], *b = &o->sides[1];
  int opt;
  while ((opt = getopt_long (argc, argv, "", longs, NULL)) != -1)
    switch (opt)
      {
      case 'b': a->bin = optarg; break;
      case 'c': a->config = optarg; break;
      case 'x': a->plugin = optarg; break;
      case 'B': b->bin = optarg; break;
      case 'G': b->config = optarg; break;
      case 'p': o->cgroups_path = optarg; break;
      case 'C': o->create = optarg; break;
      case 'P': o->poststop = optarg; break;
      case 'o': o->out = optarg; break;
      case 'n': o->rounds = atoi (optarg); break;
      case 'H': o->hook = false; break;
      case 'w':
        {
          char *eq = strchr (optarg, '=');
          if (eq == NULL)
            die ("--widen FILE=CPUS", NULL);
          *eq = '\0';
          o->widen_file = optarg;
          o->widen_cpus = eq + 1;
          break;
        }
      default: usage ();
      }
  if (!a->bin || !a->config || !o->cgroups_path || !o->create || !o->poststop || !o->widen_file || o->rounds < 1
      || o->rounds > 1000000 || !b->bin != !b->config)
    usage ();
  o->n_sides = b->bin ? 2 : 1;
  for (int i = 0; i < o->n_sides; i++)
    {
      struct side *s = &o->sides[i];
      if (s->plugin == NULL)
        s->plugin = s->bin;
      size_t n = (size_t) o->rounds;
      s->create = calloc (n, sizeof (long long));
      s->stop = calloc (n, sizeof (long long));
      s->hook_create = calloc (n, sizeof (long long));
      s->hook_stop = calloc (n, sizeof (long long));
      if (!s->create || !s->stop || !s->hook_create || !s->hook_stop)
        die ("out of memory", NULL);
    }
}

/* Round R of side S: its plugin's pair and its hook's pair, in an order that
   alternates with the round (the plugin first in even rounds). */
static void
side_round (struct side *s, const struct opts *o, int r)
{
  for (int k = 0; k < 2; k++)
    if ((k + r) % 2 == 0)
      nri_round (s, o, r);
    else if (o->hook)
      hook_round (s, o, r);
}

static void
write_samples (const struct opts *o)
{
  FILE *out = fopen (o->out, "w");
  if (out == NULL)
    die ("open --out", NULL);
  fprintf (out, "round");
  for (int i = 0; i < o->n_sides; i++)
    {
      const char *p = i ? "base_" : "";
      fprintf (out, "\t%snri_create_us\t%snri_stop_us\t%shook_create_us\t%shook_poststop_us", p, p, p, p);
    }
  fprintf (out, "\n");
  for (int r = 0; r < o->rounds; r++)
    {
      fprintf (out, "%d", r);
      for (int i = 0; i < o->n_sides; i++)
        {
          const struct side *s = &o->sides[i];
          fprintf (out, "\t%.1f\t%.1f\t%.1f\t%.1f", s->create[r] / 1000.0, s->stop[r] / 1000.0,
                   s->hook_create[r] / 1000.0, s->hook_stop[r] / 1000.0);
        }
      fprintf (out, "\n");
    }
  fclose (out);
}

int
main (int argc, char **argv)
{
  struct opts o;
  parse_opts (argc, argv, &o);
  signal (SIGPIPE, SIG_IGN);
  for (int i = 0; i < o.n_sides; i++)
    {
      start_plugin (&o.sides[i]);
      handshake (&o.sides[i]);
    }
  for (int r = 0; r < o.rounds; r++)
    for (int i = 0; i < o.n_sides; i++)
      side_round (&o.sides[(i + r) % o.n_sides], &o, r); /* the sides' order alternates too */
  if (o.out)
    write_samples (&o);
  bool ok = true;
  for (int i = 0; i < o.n_sides; i++)
    {
      struct side *s = &o.sides[i];
      cp_nri_conn_close (&s->c); /* the plugin exits when the runtime closes the connection */
      int status;
      waitpid (s->pid, &status, 0);
      ok &= WIFEXITED (status) && WEXITSTATUS (status) == 0;
    }
  printf ("rounds %d%s, CreateContainer answered cpus %s\n", o.rounds, o.hook ? "" : ", plugin only (no hook)",
          o.sides[0].first);
  if (o.n_sides > 1 && strcmp (o.sides[0].first, o.sides[1].first) != 0)
    die ("the base plugin answered another cpuset", NULL);
  for (int i = 0; i < o.n_sides; i++)
    report_side (&o.sides[i], &o);
  const struct side *a = &o.sides[0], *b = &o.sides[1];
  if (o.hook)
    {
      printf ("ratio hook createRuntime / nri CreateContainer:\n");
      for (int i = 0; i < o.n_sides; i++)
        ratio (o.sides[i].name[0] ? "base" : "this build", o.sides[i].hook_create, o.sides[i].create, o.rounds);
    }
  if (o.n_sides > 1)
    {
      printf ("ratio this build / base (the same rounds):\n");
      ratio ("nri CreateContainer", a->create, b->create, o.rounds);
      ratio ("nri StopContainer", a->stop, b->stop, o.rounds);
      if (o.hook)
        {
          ratio ("hook createRuntime", a->hook_create, b->hook_create, o.rounds);
          ratio ("hook poststop", a->hook_stop, b->hook_stop, o.rounds);
        }
    }
  return ok ? 0 : 1;
}
