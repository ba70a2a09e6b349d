/* bench-nri: what the NRI plugin's CreateContainer costs, beside the hook's cost for
 * the same placement (issue 22); run by bench/nri-latency.sh, which makes the
 * cgroups, the ledger and the host config.
 *
 *   bench-nri --cachepin BIN --config CFG --cgroups-path PATH --create STATE
 *             --poststop STATE --widen FILE=CPUS [--rounds N] [--out TSV]
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

struct opts
{
  const char *bin, *config, *cgroups_path, *create, *poststop, *widen_file, *widen_cpus, *out;
  int rounds;
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

/* The plugin, pre-launched on SV[1] as fd 3. */
static pid_t
start_plugin (const struct opts *o, int sv[2])
{
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
      execl (o->bin, o->bin, "nri", "--config", o->config, (char *) NULL);
      _exit (127);
    }
  close (sv[1]);
  return pid;
}

/* The next message on CONN (the other connection's are refused: one call at a time). */
static void
recv_on (struct cp_nri_conn *c, uint32_t want, struct cp_ttrpc_msg *m)
{
  cp_error_t err = NULL;
  uint32_t conn;
  int r = cp_nri_conn_recv (c, 10000, &conn, m, &err);
  if (r <= 0)
    die (r == 0 ? "the plugin closed the connection" : "receive", err);
  if (conn != want)
    die ("a message on the other connection", NULL);
}

/* Send SERVICE.METHOD(MSG) on connection 1 and read its answer: its status code,
   and the payload decoded as DESC (NULL: not OK, or no DESC). */
static ProtobufCMessage *
call (struct cp_nri_conn *c, const char *method, const ProtobufCMessage *msg, const ProtobufCMessageDescriptor *desc,
      int32_t *code)
{
  static uint32_t stream = 1;
  cp_error_t err = NULL;
  struct cp_buf out = { 0 };
  uint32_t s = stream;
  stream += 2;
  if (cp_rpc_request_encode (CP_MUX_CONN_PLUGIN, s, CP_NRI_SERVICE_PLUGIN, method, msg, &out, &err) < 0
      || cp_nri_conn_send (c, &out, &err) < 0)
    die (method, err);
  cp_buf_free (&out);
  struct cp_ttrpc_msg m;
  recv_on (c, CP_MUX_CONN_PLUGIN, &m);
  if (m.type != CP_TTRPC_RESPONSE || m.stream != s)
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
handshake (struct cp_nri_conn *c)
{
  struct cp_ttrpc_msg m;
  recv_on (c, CP_MUX_CONN_RUNTIME, &m);
  if (m.type != CP_TTRPC_REQUEST)
    die ("the plugin's first message is not RegisterPlugin", NULL);
  cp_error_t err = NULL;
  struct cp_buf out = { 0 };
  Nri__Pkg__Api__V1alpha1__Empty empty = NRI__PKG__API__V1ALPHA1__EMPTY__INIT;
  if (cp_rpc_response_encode (CP_MUX_CONN_RUNTIME, m.stream, CP_RPC_OK, NULL, &empty.base, &out, &err) < 0
      || cp_nri_conn_send (c, &out, &err) < 0)
    die ("RegisterPlugin's answer", err);
  cp_buf_free (&out);
  cp_ttrpc_msg_clear (&m);
  int32_t code;
  Nri__Pkg__Api__V1alpha1__ConfigureRequest cfg = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;
  cfg.runtime_name = "bench-nri";
  cfg.runtime_version = "1";
  cfg.registration_timeout = 5000;
  cfg.request_timeout = 2000;
  ProtobufCMessage *r = call (c, "Configure", &cfg.base, &nri__pkg__api__v1alpha1__configure_response__descriptor, &code);
  if (r == NULL)
    die ("Configure refused", NULL);
  protobuf_c_message_free_unpacked (r, NULL);
  Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
  r = call (c, "Synchronize", &sync.base, &nri__pkg__api__v1alpha1__synchronize_response__descriptor, &code);
  if (r == NULL)
    die ("Synchronize refused", NULL);
  protobuf_c_message_free_unpacked (r, NULL);
}

/* One CreateContainer (timed, *NS) and its StopContainer (*STOP_NS); the cpuset
   answered into CPUS. */
static void
nri_round (struct cp_nri_conn *c, const struct opts *o, int round, long long *ns, long long *stop_ns, char *cpus,
           size_t cpus_len)
{
  char id[64];
  snprintf (id, sizeof id, "bench-nri-%06d", round);
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
      c, "CreateContainer", &req.base, &nri__pkg__api__v1alpha1__create_container_response__descriptor, &code);
  *ns = now_ns () - t0;
  if (resp == NULL || resp->adjust == NULL || resp->adjust->linux == NULL || resp->adjust->linux->resources == NULL
      || resp->adjust->linux->resources->cpu == NULL || resp->adjust->linux->resources->cpu->cpus == NULL)
    die ("CreateContainer: answered without a cpuset (not placed)", NULL);
  snprintf (cpus, cpus_len, "%s", resp->adjust->linux->resources->cpu->cpus);
  protobuf_c_message_free_unpacked (&resp->base, NULL);
  Nri__Pkg__Api__V1alpha1__StopContainerRequest stop = NRI__PKG__API__V1ALPHA1__STOP_CONTAINER_REQUEST__INIT;
  stop.pod = &pod;
  stop.container = &ctr;
  t0 = now_ns ();
  ProtobufCMessage *sr = call (c, "StopContainer", &stop.base,
                               &nri__pkg__api__v1alpha1__stop_container_response__descriptor, &code);
  *stop_ns = now_ns () - t0;
  if (sr == NULL)
    die ("StopContainer refused", NULL);
  protobuf_c_message_free_unpacked (sr, NULL);
}

/* BIN hook --config CFG STEP, stdin from INPUT, timed fork to wait4. */
static long long
spawn_hook (const struct opts *o, const char *step, const char *input)
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
      execl (o->bin, o->bin, "hook", "--config", o->config, step, (char *) NULL);
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
      fprintf (stderr, "bench-nri: hook %s: exit status %d\n", step, status);
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

static int
cmp_ll (const void *a, const void *b)
{
  long long x = *(const long long *) a, y = *(const long long *) b;
  return (x > y) - (x < y);
}

/* The Q-th quantile (0..1) of N sorted samples, nearest rank, in us. */
static double
quantile_us (const long long *v, int n, double q)
{
  int k = (int) (q * n + 0.999999);
  if (k < 1)
    k = 1;
  if (k > n)
    k = n;
  return v[k - 1] / 1000.0;
}

static double
median_us (const long long *v, int n)
{
  return (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1000.0;
}

static void
report (const char *name, long long *v, int n)
{
  qsort (v, (size_t) n, sizeof *v, cmp_ll);
  printf ("%-22s median %9.1f us  p99 %9.1f us  min %9.1f  max %9.1f\n", name, median_us (v, n),
          quantile_us (v, n, 0.99), v[0] / 1000.0, v[n - 1] / 1000.0);
}

static void
parse_opts (int argc, char **argv, struct opts *o)
{
  static const struct option longs[] = {
    { "cachepin", required_argument, NULL, 'b' }, { "config", required_argument, NULL, 'c' },
    { "cgroups-path", required_argument, NULL, 'p' }, { "create", required_argument, NULL, 'C' },
    { "poststop", required_argument, NULL, 'P' }, { "widen", required_argument, NULL, 'w' },
    { "rounds", required_argument, NULL, 'n' }, { "out", required_argument, NULL, 'o' },
    { NULL, 0, NULL, 0 },
  };
  *o = (struct opts) { .rounds = 200 };
  int opt;
  while ((opt = getopt_long (argc, argv, "", longs, NULL)) != -1)
    switch (opt)
      {
      case 'b': o->bin = optarg; break;
      case 'c': o->config = optarg; break;
      case 'p': o->cgroups_path = optarg; break;
      case 'C': o->create = optarg; break;
      case 'P': o->poststop = optarg; break;
      case 'o': o->out = optarg; break;
      case 'n': o->rounds = atoi (optarg); break;
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
      default: die ("usage: see bench/nri.c", NULL);
      }
  if (!o->bin || !o->config || !o->cgroups_path || !o->create || !o->poststop || !o->widen_file || o->rounds < 1
      || o->rounds > 1000000)
    die ("usage: bench-nri --cachepin BIN --config CFG --cgroups-path PATH --create STATE --poststop STATE "
         "--widen FILE=CPUS [--rounds N] [--out TSV]",
         NULL);
}

int
main (int argc, char **argv)
{
  struct opts o;
  parse_opts (argc, argv, &o);
  signal (SIGPIPE, SIG_IGN);
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    die ("socketpair", NULL);
  pid_t plugin = start_plugin (&o, sv);
  struct cp_nri_conn c;
  cp_nri_conn_adopt (sv[0], &c);
  handshake (&c);
  int n = o.rounds;
  long long *create = calloc ((size_t) n, sizeof *create), *stop = calloc ((size_t) n, sizeof *stop);
  long long *hook_create = calloc ((size_t) n, sizeof *hook_create);
  long long *hook_stop = calloc ((size_t) n, sizeof *hook_stop);
  long long *pair = calloc ((size_t) n, sizeof *pair), *hook_pair = calloc ((size_t) n, sizeof *hook_pair);
  FILE *out = o.out ? fopen (o.out, "w") : NULL;
  if (o.out && out == NULL)
    die ("open --out", NULL);
  if (out)
    fprintf (out, "round\tnri_create_us\tnri_stop_us\thook_create_us\thook_poststop_us\n");
  char first[256] = "", cpus[256];
  for (int r = 0; r < n; r++)
    {
      for (int k = 0; k < 2; k++)
        if ((k + r) % 2 == 0)
          {
            nri_round (&c, &o, r, &create[r], &stop[r], cpus, sizeof cpus);
            if (first[0] == '\0')
              snprintf (first, sizeof first, "%s", cpus);
            else if (strcmp (first, cpus) != 0)
              die ("CreateContainer answered another cpuset than in the first round", NULL);
          }
        else
          {
            widen (&o);
            hook_create[r] = spawn_hook (&o, "createRuntime", o.create);
            hook_stop[r] = spawn_hook (&o, "poststop", o.poststop);
          }
      pair[r] = create[r] + stop[r];
      hook_pair[r] = hook_create[r] + hook_stop[r];
      if (out)
        fprintf (out, "%d\t%.1f\t%.1f\t%.1f\t%.1f\n", r, create[r] / 1000.0, stop[r] / 1000.0,
                 hook_create[r] / 1000.0, hook_stop[r] / 1000.0);
    }
  if (out)
    fclose (out);
  cp_nri_conn_close (&c); /* the plugin exits when the runtime closes the connection */
  int status;
  waitpid (plugin, &status, 0);
  printf ("rounds %d, CreateContainer answered cpus %s\n", n, first);
  /* The ledger's last writer before a CreateContainer: in even rounds the plugin
     itself (the previous round ended with its StopContainer), so its parsed ledger
     is reused; in odd rounds the hook, whose write the plugin must read. */
  long long *own = calloc ((size_t) n, sizeof *own), *hooks = calloc ((size_t) n, sizeof *hooks);
  int n_own = 0, n_hooks = 0;
  for (int r = 0; r < n; r++)
    if (r % 2 == 0)
      own[n_own++] = create[r];
    else
      hooks[n_hooks++] = create[r];
  report ("nri CreateContainer", create, n);
  if (n_own > 0 && n_hooks > 0)
    {
      report ("  after its own write", own, n_own);
      report ("  after the hook's", hooks, n_hooks);
    }
  free (own);
  free (hooks);
  report ("nri StopContainer", stop, n);
  report ("nri pair", pair, n);
  report ("hook createRuntime", hook_create, n);
  report ("hook poststop", hook_stop, n);
  report ("hook pair", hook_pair, n);
  printf ("ratio hook createRuntime / nri CreateContainer: median %.1f, p99 %.1f\n",
          median_us (hook_create, n) / median_us (create, n),
          quantile_us (hook_create, n, 0.99) / quantile_us (create, n, 0.99));
  return WIFEXITED (status) && WEXITSTATUS (status) == 0 ? 0 : 1;
}
