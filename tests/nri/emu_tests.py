#!/usr/bin/python3
"""`cachepin nri` driven by the NRI runtime emulator (tests/nri/nri_emu.py), no containerd.

    /usr/bin/python3 tests/nri/emu_tests.py PATH-TO-cachepin [CASE...]

Each case starts the real plugin with a host config and a state directory of its own (a
temporary directory: state_dir, topology, kernel_root, kubelet_state "", log_level debug;
the sandbox as shipped, on) and a topology pinned by the host config (hwloc's synthetic
TOPOLOGY written as XML by lstopo-no-graphics): what a container gets is computed from that,
never from this machine's CPUs. The containers' cgroups are named under a cgroup that does
not exist (/cp-emu-PID/...): the plugin decides before the runtime makes them, and never
writes them.

  registration_dial         dialled (--socket, --name, --idx): registered as given;
                            Configure's mask is CreateContainer, PostCreateContainer,
                            StartContainer, UpdateContainer, StopContainer, RemoveContainer;
                            a method (and a service) it does not serve is Unimplemented
  registration_prelaunched  pre-launched (fd 3, NRI_PLUGIN_NAME, NRI_PLUGIN_IDX): registered
                            as the environment says; the connection closed, it exits 0
  create_stop               cachepin.io/cpus "1": an adjustment of one CPU of the topology,
                            held in `cachepin status --json` under the container id;
                            StopContainer releases it; a pod that asks nothing is left alone
  sync_parts                Synchronize in three parts (`more`) on a connection dialled
                            again: each part before the last answered more, no update; the
                            last carries an update for each running container that asks and
                            has no entry, and only those; then v0.12's dispatch: StartContainer,
                            RemoveContainer and PostCreateContainer answered by their own
                            methods (no StateChange), RemoveContainer releasing
  names                     NRI's names: `--name cachepin-nri` (a `-`, which NRI allows)
                            registers as 50-cachepin-nri, dialled and pre-launched; a name
                            NRI refuses exits 2 with one line
  ids                       container ids cachepin does not take (`/`, `.`, `..`, a control
                            character, `apply:...`, 5000 bytes): a container that asks is
                            failed with one line naming the id's rule (never quoting a long
                            id, so never cut), nothing held; one that asks nothing is left alone;
                            a cachepin.io/ key given twice in the pod's annotations is refused
  two_runtimes              two plugins on one state directory, each serving a runtime of its
                            own (two emulators): the second's Synchronize, listing nothing,
                            releases none of the first's entries; its StopContainer and
                            RemoveContainer of the same id (cgroupsPath empty, `/`, the parent)
                            release nothing; its UpdateContainer of that id answers no cpuset;
                            the first's own Synchronize then settles them
  sync_bounds               a container listed twice: one update; a `more` chain past 64 parts:
                            refused (RESOURCE_EXHAUSTED), the connection closed, one line, the
                            plugin dials again and its memory stays bounded
  sigterm_blocked           reading stopped and the socket full of the plugin's answers (the
                            plugin blocked writing): SIGTERM ends it within 1 s
  resize                    an in-place resize: a container sized by its CPU limit placed again
                            at UpdateContainer with a new limit (grown in its L3), the new
                            cpuset answered and held; past the host, not strict: its placement
                            stands; strict: the update refused with one line; one sized by
                            cachepin.io/cpus keeps its placement
  untrusted_state           ledger.json a symlink and ledger.lock a FIFO at start: repaired
                            before the sandbox, pods placed; ledger.lock made a directory, or
                            the state directory removed and made again, while it runs: the
                            call answered, then exit 1 with one line saying that a start
                            repairs it; started again, it places
  back_pressure             reading stopped: a call times out, the connection is closed as
                            the runtime closes it, the dialled plugin dials again

Exit: 0 passed, 1 failed, 77 skipped (no grpc_tools or protobuf, no lstopo-no-graphics, no
cpuset cgroup hierarchy). NRI_EMU_KEEP=1 keeps the directories, NRI_EMU_TRACE=1 traces the
calls.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nri_emu  # noqa: E402
from nri_emu import Emu, container, pod  # noqa: E402

TOPOLOGY = "pack:1 l3:2 core:2 pu:1"  # CPUs 0-3, two LLCs of two cores
SKIP = 77
BIN = None
TOP = f"/cp-emu-{os.getpid()}"  # the containers' cgroup parent (never made)
EVENTS = ("CREATE_CONTAINER", "POST_CREATE_CONTAINER", "START_CONTAINER", "UPDATE_CONTAINER", "STOP_CONTAINER",
          "REMOVE_CONTAINER")


class Skip(Exception):
    pass


# ---------------------------------------------------------------------------- the frame


class Frame:
    """The tally: ok / bad lines as tests/cri/lib.sh prints them, and the summary."""

    def __init__(self):
        self.passed = self.failed = 0
        self.case = ""

    def ok(self, what):
        self.passed += 1
        print(f"ok   {self.case}: {what}", flush=True)

    def bad(self, what):
        self.failed += 1
        print(f"FAIL {self.case}: {what}", flush=True)

    def check(self, what, cond, detail=""):
        """COND true: passed; else failed, with DETAIL (what was seen)."""
        if cond:
            self.ok(what)
        else:
            self.bad(what + (f" ({detail})" if detail != "" else ""))
        return bool(cond)

    def equal(self, what, got, want):
        return self.check(f"{what} ({got!r})" if got == want else what, got == want, f"got {got!r}, want {want!r}")


# ---------------------------------------------------------------------------- the host


def cpulist(text):
    """A cpulist ("0-2,5") as a set of ints."""
    out = set()
    for part in filter(None, (text or "").split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def cpuset_hierarchy():
    """Whether a cpuset hierarchy is mounted (v1, or v2 with the controller): the plugin
    names a container's cgroup in it."""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                sep = fields.index("-")
                fstype, opts = fields[sep + 1], fields[-1]
                if fstype == "cgroup" and "cpuset" in opts.split(","):
                    return True
                if fstype == "cgroup2":
                    with open(os.path.join(fields[4], "cgroup.controllers")) as c:
                        if "cpuset" in c.read().split():
                            return True
    except OSError:
        pass
    return False


class Host:
    """A case's host: a directory with the host config, the state directory and the
    pinned topology; PUS, the topology's CPUs."""

    def __init__(self, name):
        self.dir = tempfile.mkdtemp(prefix=f"cp-emu-{name}.", dir="/tmp")
        self.state = os.path.join(self.dir, "state")
        os.mkdir(self.state, 0o700)
        os.mkdir(os.path.join(self.dir, "kernel"))  # kernel_root: an empty tree, nothing of the host's
        self.topology = os.path.join(self.dir, "topology.xml")
        r = subprocess.run(["lstopo-no-graphics", "--input", TOPOLOGY, "--of", "xml", self.topology],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"lstopo-no-graphics --input '{TOPOLOGY}': {r.stderr.strip()}")
        with open(self.topology) as f:
            self.pus = {int(n) for n in re.findall(r'type="PU" os_index="([0-9]+)"', f.read())}
        self.config = os.path.join(self.dir, "cachepin.json")
        with open(self.config, "w") as f:
            json.dump({"state_dir": self.state, "topology": self.topology, "kernel_root": os.path.join(self.dir, "kernel"),
                       "kubelet_state": "", "log_level": "debug"}, f)

    def status(self):
        r = subprocess.run([BIN, "status", "--json", "--config", self.config], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"cachepin status: {r.stderr.strip()}")
        return json.loads(r.stdout)

    def held(self, cid):
        """The CPUs the ledger holds for container CID (a set), or None."""
        for e in self.status()["ledger"]["entries"]:
            if e["id"] == cid:
                return cpulist(e["cpus"])
        return None

    def cleanup(self):
        if os.environ.get("NRI_EMU_KEEP"):
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def dial(emu, host, *extra):
    """The plugin started dialling EMU's socket; connected (registered, configured, an
    empty Synchronize)."""
    path = emu.listen(os.path.join(host.dir, "nri.sock"))
    emu.start_plugin([BIN, "nri", "--socket", path, "--config", host.config, *extra],
                     log=os.path.join(host.dir, "plugin.log"))
    return emu.connect()


def cgroup(cid):
    return f"{TOP}/{cid}"


def adjusted_cpus(r):
    """The CPUs a CreateContainer answer's adjustment gives (a set), or None."""
    if r.response is None or not r.response.HasField("adjust") or not r.response.adjust.HasField("linux"):
        return None
    return cpulist(r.response.adjust.linux.resources.cpu.cpus)


# ---------------------------------------------------------------------------- the cases


def registration_dial(t, host):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host, "--name", "emudial", "--idx", "42")
        t.equal("dialled: registered as --name and --idx say", emu.registration[:2], ("emudial", "42"))
        want = nri_emu.event_mask(*EVENTS)
        t.equal(f"Configure's events mask: {', '.join(EVENTS)} (0x{want:x})", emu.events, want)
        a = nri_emu.api()
        r = emu.call("RunPodSandbox", a.RunPodSandboxRequest(pod=pod("p")))
        t.check("a method it does not serve (RunPodSandbox) is answered Unimplemented", r.unimplemented, r)
        r = emu.call("Anything", a.Empty(), service="nri.pkg.api.v1alpha1.Nothing")
        t.check("a service it does not serve is answered Unimplemented", r.unimplemented, r)
        t.check("the connection stays open after them", not emu.conn.closed.is_set(), emu.conn.close_reason)
        t.equal("SIGTERM: the plugin exits 0", emu.terminate(), 0)
        t.check("SIGTERM: the plugin said so", "nri: stopped by a signal" in emu.plugin_log())


def registration_prelaunched(t, host):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        emu.start_plugin([BIN, "nri", "--config", host.config], prelaunched=True, name="emupre", idx="07",
                         log=os.path.join(host.dir, "plugin.log"))
        emu.connect()
        t.equal("pre-launched: registered as NRI_PLUGIN_NAME and NRI_PLUGIN_IDX say", emu.registration[:2],
                ("emupre", "07"))
        t.check("pre-launched: the plugin took fd 3", "nri: pre-launched, on descriptor 3" in emu.plugin_log())
        t.equal("pre-launched: Configure's events mask", emu.events, nri_emu.event_mask(*EVENTS))
        emu.close()
        t.equal("pre-launched: its connection closed, the plugin exits 0", emu.wait_exit(5), 0)
        t.check("pre-launched: it said it exits for the runtime to start it again",
                emu.wait_log(r"nri: the connection to the runtime ended .*; exiting", timeout=1))


def create_stop(t, host):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host)
        p = pod("pod-b", annotations={"cachepin.io/cpus": "1"})
        c = container("ctr-b", p, cgroups_path=cgroup("ctr-b"), state="CREATED")
        r = emu.create(p, c)
        cpus = adjusted_cpus(r)
        t.check("cpus 1: CreateContainer answered OK", r.ok, r)
        t.check(f"cpus 1: the adjustment's linux.resources.cpu.cpus is one CPU of the topology ({cpus})",
                cpus is not None and len(cpus) == 1 and cpus <= host.pus, f"topology {sorted(host.pus)}")
        held = host.held("ctr-b")
        t.check(f"cpus 1: `cachepin status --json` holds that CPU under the container id ({held})",
                held is not None and held == cpus)
        t.check("cpus 1: the plugin logged the placement", emu.wait_log(r"placed ctr-b \(pod pod-b\)", timeout=1))
        r = emu.start(p, c)
        t.check("StartContainer (v0.8: StateChange) answered OK", r.ok and emu.calls[-1].method == "StateChange", r)
        r = emu.stop(p, c)
        t.check("StopContainer answered OK", r.ok, r)
        t.equal("StopContainer: the entry is released", host.held("ctr-b"), None)
        t.check("RemoveContainer (v0.8: StateChange) answered OK", emu.remove(p, c).ok)
        q = pod("pod-plain")
        d = container("ctr-plain", q, cgroups_path=cgroup("ctr-plain"))
        r = emu.create(q, d)
        t.check("no annotation: answered OK with no adjustment", r.ok and adjusted_cpus(r) is None, r)
        t.equal("no annotation: nothing held", host.held("ctr-plain"), None)


def sync_parts(t, host):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host)
        p1 = pod("pod-c1", annotations={"cachepin.io/cpus": "1"})
        p2 = pod("pod-c2")
        p3 = pod("pod-c3", annotations={"cachepin.io/cpus": "1"})
        kept = container("ctr-kept", p1, cgroups_path=cgroup("ctr-kept"), state="CREATED")
        r = emu.create(p1, kept)
        kept_cpus = adjusted_cpus(r)
        t.check(f"placed before the runtime goes ({kept_cpus})", r.ok and kept_cpus is not None, r)
        kept.linux.resources.cpu.cpus = r.response.adjust.linux.resources.cpu.cpus  # the runtime applied it
        # The runtime goes; the plugin dials again, here a v0.12 runtime.
        emu.close()
        emu.style = "v0.12"
        if not t.check("the runtime closed the connection: the plugin dials again", emu.accept(5)):
            return
        emu.wait_registered()
        t.check("registered again", emu.wait_log(r"nri: reconnected: registered again", timeout=1))
        t.check("Configure (v0.12, with NRI_version) answered OK", emu.configure().ok)
        kept.state = nri_emu.api().ContainerState.Value("CONTAINER_RUNNING")
        ctrs = [
            container("c-run-ask", p1, cgroups_path=cgroup("c-run-ask"), state="RUNNING", pid=4242),
            container("c-plain", p2, cgroups_path=cgroup("c-plain"), state="RUNNING"),
            container("c-created-ask", p3, cgroups_path=cgroup("c-created-ask"), state="CREATED"),
            container("c-stopped-ask", p1, cgroups_path=cgroup("c-stopped-ask"), state="STOPPED"),
            kept,
        ]
        s = emu.sync([p1, p2, p3], ctrs, parts=3)
        t.equal("Synchronize in 3 parts: each answered", [str(r) for r in s.parts], ["OK"] * 3)
        t.check("the first two answered more = true, with no update", s.ok and all(
            r.response.more and not r.response.update for r in s.parts[:2]), s)
        t.check("the plugin logged the parts", emu.wait_log(r"synchronization part .* more to come", count=2, timeout=1))
        got = {u.container_id: cpulist(u.linux.resources.cpu.cpus) for u in s.updates}
        t.equal("the last carries an update for each running container that asks and has no entry",
                sorted(got), ["c-created-ask", "c-run-ask"])
        new = list(got.values())
        t.check(f"each update is one CPU of the topology, none the kept one's ({new}, kept {kept_cpus})",
                all(len(x) == 1 and x <= host.pus for x in new) and len(set().union(*new)) == 2
                and not (set().union(*new) & kept_cpus))
        t.check("the ledger holds them as the updates say",
                all(host.held(cid) == cpus for cid, cpus in got.items()))
        t.equal("the kept container keeps its CPU", host.held("ctr-kept"), kept_cpus)
        # v0.12's dispatch: the plugin serves the methods of their own, no StateChange
        # (which v0.12 keeps only as a fallback NRI says will go).
        run_ask, created_ask = ctrs[0], ctrs[2]
        n = len(emu.calls)
        created_ask.state = nri_emu.api().ContainerState.Value("CONTAINER_RUNNING")
        created_ask.pid = 4343
        r = emu.start(p3, created_ask)
        t.equal("v0.12: StartContainer answered by its own method, OK",
                [(c.method, str(c.result)) for c in emu.calls[n:]], [("StartContainer", "OK")])
        n = len(emu.calls)
        r = emu.remove(p1, run_ask)
        t.equal("v0.12: RemoveContainer answered by its own method, OK",
                [(c.method, str(c.result)) for c in emu.calls[n:]], [("RemoveContainer", "OK")])
        t.equal("v0.12: RemoveContainer released the container's entry", host.held("c-run-ask"), None)
        n = len(emu.calls)
        r = emu.post_create(p3, created_ask)
        t.equal("v0.12: PostCreateContainer answered by its own method, OK",
                [(c.method, str(c.result)) for c in emu.calls[n:]], [("PostCreateContainer", "OK")])
        t.check("v0.12: no StateChange on this connection",
                all(c.method != "StateChange" for c in emu.calls if c in emu.calls[-3:]))


def back_pressure(t, host):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host)
        emu.request_timeout = 0.5  # after Configure: the plugin was told 2 s
        emu.stop_reading()
        q = pod("pod-plain")
        r = emu.create(q, container("ctr-plain", q, cgroups_path=cgroup("ctr-plain")))
        t.check("reading stopped: CreateContainer timed out", r.timed_out, r)
        t.check("the runtime closed the connection on it",
                emu.connections[-1].closed.is_set() and "timed out" in emu.connections[-1].close_reason,
                emu.connections[-1].close_reason)
        emu.request_timeout = 2.0
        t.check("the plugin dials again", emu.accept(5))
        emu.connect()
        r = emu.create(q, container("ctr-plain", q, cgroups_path=cgroup("ctr-plain")))
        t.check("and answers on the new connection", r.ok, r)


def names(t, host):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host, "--name", "cachepin-nri")
        t.equal("--name cachepin-nri: registered as 50-cachepin-nri", emu.registration[:2], ("cachepin-nri", "50"))
    with Emu(style="v0.8", workdir=host.dir) as emu:
        emu.start_plugin([BIN, "nri", "--config", host.config], prelaunched=True, name="cachepin-nri", idx="10",
                         log=os.path.join(host.dir, "plugin-pre.log"))
        emu.connect()
        t.equal("pre-launched as 10-cachepin-nri: registered so", emu.registration[:2], ("cachepin-nri", "10"))
    r = subprocess.run([BIN, "nri", "--name", "cache pin", "--config", host.config], capture_output=True, text=True)
    t.check(f"--name 'cache pin' (a space): exit 2 with one line ({r.stderr.strip()})",
            r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--name" in r.stderr)


def ids(t, host):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host)
        p = pod("pod-ids", annotations={"cachepin.io/cpus": "1"})
        bad = {"/": "'/'", ".": "not a container id", "..": "not a container id", "a\x01b": "control character",
               "apply:/x": "apply:", "x" * 5000: "longer than"}
        for cid, why in bad.items():
            r = emu.create(p, container(cid, p, cgroups_path=cgroup("odd")))
            shown = cid if len(cid) < 16 else cid[:8] + "..."
            t.check(f"id {shown!r}: CreateContainer failed with one line naming the id's rule ({r})",
                    r.code == nri_emu.FAILED_PRECONDITION and (r.message or "").startswith("cachepin: container")
                    and why in (r.message or "") and len(r.message) < 200)
        t.check("nothing held for them", not host.status()["ledger"]["entries"])
        q = pod("pod-plain")
        r = emu.create(q, container("/", q, cgroups_path=cgroup("odd")))
        t.check("a container that asks nothing is left alone whatever its id", r.ok and adjusted_cpus(r) is None, r)
        # cachepin.io/cpus twice in the pod's annotations, as the wire can carry it (a map
        # is repeated entries; concatenated messages merge, their entries appended).
        api = nri_emu.api()
        twice = pod("pod-twice", annotations={"cachepin.io/cpus": "1"}).SerializeToString() \
            + api.PodSandbox(annotations={"cachepin.io/cpus": "2"}).SerializeToString()
        rest = api.CreateContainerRequest(container=container("ctr-twice", None, cgroups_path=cgroup("ctr-twice")))
        payload = b"\x0a" + encode_len(len(twice)) + twice + rest.SerializeToString()
        r = emu.call("CreateContainer", nri_emu.Raw(payload))
        t.check(f"cachepin.io/cpus twice in the pod's annotations: refused, one line ({r})",
                r.code == nri_emu.FAILED_PRECONDITION and "given twice" in (r.message or ""))
        t.equal("nothing held for it", host.held("ctr-twice"), None)


def encode_len(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def two_runtimes(t, host):
    other_sock = os.path.join(host.dir, "other.sock")
    with Emu(style="v0.8", workdir=host.dir) as first, \
            Emu(style="v0.8", workdir=tempfile.mkdtemp(prefix="cp-emu-other.", dir=host.dir)) as second:
        dial(first, host)
        p = pod("pod-first", annotations={"cachepin.io/cpus": "1"})
        c = container("ctr-shared-id", p, cgroups_path=cgroup("ctr-shared-id"), state="CREATED")
        r = first.create(p, c)
        mine = adjusted_cpus(r)
        t.check(f"the first runtime's plugin placed its container ({mine})", r.ok and mine)
        path = second.listen(other_sock)
        second.start_plugin([BIN, "nri", "--socket", path, "--config", host.config],
                            log=os.path.join(host.dir, "plugin-second.log"))
        second.connect()  # its Synchronize lists nothing
        t.equal("a second plugin, another runtime, same state dir: its empty Synchronize released nothing",
                host.held("ctr-shared-id"), mine)
        for cg in ("", "/", TOP):
            q = pod("pod-second")
            d = container("ctr-shared-id", q, cgroups_path=cg, state="RUNNING")
            second.stop(q, d)
            second.remove(q, d)
            t.equal(f"the second runtime's Stop and Remove of the same id (cgroupsPath {cg!r}): nothing released",
                    host.held("ctr-shared-id"), mine)
        q = pod("pod-second")
        d = container("ctr-shared-id", q, cgroups_path="", state="RUNNING")
        r = second.update(q, d, nri_emu.resources(cpus="0-3"))
        t.check(f"the second runtime's UpdateContainer of that id: no cpuset answered ({r})",
                r.ok and not r.response.update)
        first.close()
        t.check("the first plugin dials again", first.accept(5))
        first.connect(pods=[p], ctrs=[])  # its own runtime no longer has the container
        t.equal("the first runtime's own Synchronize, not listing it: released", host.held("ctr-shared-id"), None)


def sync_bounds(t, host):
    with Emu(style="v0.8", workdir=host.dir, on_fatal="keep") as emu:
        dial(emu, host)
        p = pod("pod-d", annotations={"cachepin.io/cpus": "1"})
        c = container("ctr-twice", p, cgroups_path=cgroup("ctr-twice"), state="RUNNING", pid=4545)
        s = emu.sync([p], [c, c], parts=1)
        t.equal("a container listed twice: one update", [u.container_id for u in s.updates], ["ctr-twice"])
        a = nri_emu.api()
        filler = [container(f"fill-{i}", p, cgroups_path=cgroup(f"fill-{i}"), state="CREATED") for i in range(20)]
        last = None
        for i in range(66):
            last = emu.call("Synchronize", a.SynchronizeRequest(containers=filler, more=True))
            if not last.ok:
                break
        t.check(f"a `more` chain past 64 parts: refused with RESOURCE_EXHAUSTED ({last})",
                last is not None and last.code == nri_emu.RESOURCE_EXHAUSTED and "Synchronize past" in last.message)
        t.check("the plugin said it in one line", emu.wait_log(r"nri: Synchronize past 64 parts", timeout=1))
        t.check("and closed the connection", emu.conn.closed.wait(2))
        t.check("then dials again", emu.accept(5))


def sigterm_blocked(t, host):
    with Emu(style="v0.8", workdir=host.dir, on_fatal="keep") as emu:
        dial(emu, host)
        emu.stop_reading()
        q = pod("pod-plain")
        a = nri_emu.api()
        for i in range(6000):
            emu.post("CreateContainer", a.CreateContainerRequest(pod=q, container=container(f"c{i}", q)))
        time.sleep(1.0)  # the plugin answers until its writes block
        t0 = time.monotonic()
        rc = emu.terminate(timeout=3)
        dt = time.monotonic() - t0
        t.check(f"SIGTERM while blocked writing: the plugin exits within 1 s ({dt:.2f} s, exit {rc})",
                rc is not None and dt < 1.0)


def untrusted_state(t, host):
    ledger, lock = os.path.join(host.state, "ledger.json"), os.path.join(host.state, "ledger.lock")
    os.symlink("/etc/passwd", ledger)
    os.mkfifo(lock, 0o600)
    p = pod("pod-u", annotations={"cachepin.io/cpus": "1"})

    def placed(emu, cid):
        r = emu.create(p, container(cid, p, cgroups_path=cgroup(cid), state="CREATED"))
        return r.ok and adjusted_cpus(r) is not None and host.held(cid) == adjusted_cpus(r)

    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host)
        t.check("ledger.json a symlink and ledger.lock a FIFO at start: repaired before the sandbox, a pod placed",
                placed(emu, "u1"))
        t.check("  both regular files now", os.path.isfile(ledger) and not os.path.islink(ledger)
                and os.path.isfile(lock))
        os.unlink(lock)
        os.mkdir(lock)
        r = emu.create(p, container("u2", p, cgroups_path=cgroup("u2"), state="CREATED"))
        t.check(f"ledger.lock made a directory while it runs: the call is answered ({r})", r.ok)
        if "no_new_privs only" in emu.plugin_log():
            # A sanitizer build has no Landlock (hook/host/sandbox.h): it sets the lock
            # aside itself, as the hook does, and goes on.
            t.check("  (no Landlock here, a sanitizer build): repaired by the plugin itself, which goes on",
                    os.path.isfile(lock) and emu.proc.poll() is None and host.held("u2") is not None)
            emu.terminate()
        else:
            t.equal("  then the plugin exits 1", emu.wait_exit(5), 1)
            t.check("  with one line saying what and that a start repairs it",
                    emu.wait_log(r"ledger.lock is not a regular file .*exiting, to be started again", timeout=1))
    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host)
        t.check("started again: repaired, a pod placed", placed(emu, "u3"))
        shutil.rmtree(host.state)
        os.mkdir(host.state, 0o700)
        emu.create(p, container("u4", p, cgroups_path=cgroup("u4"), state="CREATED"))
        t.equal("the state directory removed and made again: the plugin exits 1", emu.wait_exit(5), 1)
        t.check("  with one line saying so", emu.wait_log(r"was removed or replaced since the plugin started", timeout=1))
    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host)
        t.check("started again on the new directory: a pod placed", placed(emu, "u5"))


def resize(t, host):
    """The topology's first L3 holds CPUs 0-1: a 1-CPU container placed there grows in it."""
    with Emu(style="v0.8", workdir=host.dir) as emu:
        dial(emu, host)
        p = pod("pod-r", annotations={"cachepin.io/align": "llc"})
        c = container("ctr-r", p, cgroups_path=cgroup("ctr-r"), state="RUNNING", pid=4646, quota=100000,
                      period=100000)
        r = emu.create(p, c)
        first = adjusted_cpus(r)
        t.check(f"sized by its limit (quota 100000 / period 100000): one CPU ({first})", r.ok and len(first or ()) == 1)
        c.linux.resources.cpu.cpus = ",".join(map(str, sorted(first)))  # what the runtime applied
        r = emu.update(p, c, nri_emu.resources(quota=200000, period=100000, cpus=c.linux.resources.cpu.cpus))
        got = {u.container_id: cpulist(u.linux.resources.cpu.cpus) for u in (r.response.update if r.ok else [])}
        grown = got.get("ctr-r")
        t.check(f"resized to quota 200000: placed again on 2 CPUs, its first one kept in its L3 ({grown})",
                r.ok and grown is not None and len(grown) == 2 and first <= grown and grown <= {0, 1}, r)
        t.equal("the ledger holds the new CPUs", host.held("ctr-r"), grown)
        t.check("the plugin logged the resize", emu.wait_log(r"resized ctr-r: its limit asks 2 CPUs \(it had 1\)", timeout=1))
        c.linux.resources.cpu.cpus = ",".join(map(str, sorted(grown)))
        r = emu.update(p, c, nri_emu.resources(quota=1600000, period=100000, cpus=c.linux.resources.cpu.cpus))
        kept = {u.container_id: cpulist(u.linux.resources.cpu.cpus) for u in (r.response.update if r.ok else [])}
        t.check(f"resized past the host (16 CPUs of 4), not strict: the placement stands ({kept.get('ctr-r')})",
                r.ok and kept.get("ctr-r") == grown, r)
        t.equal("  and the ledger still holds it", host.held("ctr-r"), grown)
        q = pod("pod-s", annotations={"cachepin.io/cpus": "1"})
        d = container("ctr-s", q, cgroups_path=cgroup("ctr-s"), state="RUNNING", pid=4747)
        one = adjusted_cpus(emu.create(q, d))
        r = emu.update(q, d, nri_emu.resources(quota=300000, period=100000))
        got = {u.container_id: cpulist(u.linux.resources.cpu.cpus) for u in (r.response.update if r.ok else [])}
        t.check(f"a count from cachepin.io/cpus: a new limit keeps its placement ({got.get('ctr-s')})",
                r.ok and got.get("ctr-s") == one, r)
        sp = pod("pod-strict", annotations={"cachepin.io/strict": "true"})
        e = container("ctr-strict", sp, cgroups_path=cgroup("ctr-strict"), state="RUNNING", pid=4848, quota=100000,
                      period=100000)
        emu.create(sp, e)
        r = emu.update(sp, e, nri_emu.resources(quota=1600000, period=100000))
        t.check(f"strict, resized past the host: the update refused with one line ({r})",
                r.code == nri_emu.FAILED_PRECONDITION and "cachepin:" in (r.message or ""))
        t.check("  its placement stands", host.held("ctr-strict") is not None and len(host.held("ctr-strict")) == 1)


def main_of(name, argv, cases, missing=None):
    """A test script's main on the emulator: its usage, BIN, the prerequisites (the
    emulator's, and MISSING(), a line saying what else is missing, or None) or 77 and
    why, then CASES (those named after BIN, or all) through run_cases()."""
    global BIN
    if len(argv) < 2:
        print(f"usage: {name} PATH-TO-cachepin [CASE...]", file=sys.stderr)
        return 2
    BIN = os.path.realpath(argv[1])
    try:
        nri_emu.load_protos()
    except nri_emu.Unavailable as e:
        print(f"SKIPPED: {e}")
        return SKIP
    why = missing() if missing else None
    if why is None and (shutil.which("lstopo-no-graphics") is None or not cpuset_hierarchy()):
        why = "no lstopo-no-graphics, or no cpuset cgroup hierarchy"
    if why:
        print(f"SKIPPED: {why}")
        return SKIP
    return run_cases(cases, argv[2:])


def run_cases(cases, chosen):
    """Each of CASES (those CHOSEN by name, or all) on a Host of its own, the plugin's
    last log lines shown for one that failed: 0 when every check passed, else 1."""
    t = Frame()
    t0 = time.monotonic()
    for case in cases:
        if chosen and case.__name__ not in chosen:
            continue
        t.case = case.__name__
        host = Host(case.__name__)
        failed = t.failed
        try:
            case(t, host)
        except Exception as e:  # noqa: BLE001 (a case that raises is one failure, the others run)
            t.bad(f"raised {type(e).__name__}: {e}")
        finally:
            log = os.path.join(host.dir, "plugin.log")
            if t.failed > failed and os.path.exists(log):
                with open(log, errors="replace") as f:
                    print("--- the plugin's log ---\n" + "".join(f.readlines()[-30:]), end="")
            host.cleanup()
    print(f"{t.passed} passed, {t.failed} failed ({time.monotonic() - t0:.1f} s)")
    return 1 if t.failed else 0


CASES = [registration_dial, registration_prelaunched, create_stop, sync_parts, back_pressure, names, ids,
         two_runtimes, sync_bounds, sigterm_blocked, untrusted_state, resize]


def main(argv):
    global BIN
    if len(argv) < 2:
        print("usage: emu_tests.py PATH-TO-cachepin [CASE...]", file=sys.stderr)
        return 2
    BIN = os.path.realpath(argv[1])
    chosen = argv[2:]
    unknown = set(chosen) - {c.__name__ for c in CASES}
    if unknown:
        print(f"emu_tests.py: no case {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    try:
        nri_emu.load_protos()
    except nri_emu.Unavailable as e:
        print(f"SKIPPED: {e}")
        return SKIP
    if shutil.which("lstopo-no-graphics") is None:
        print("SKIPPED: no lstopo-no-graphics (hwloc; scripts/deps.sh installs it)")
        return SKIP
    if not cpuset_hierarchy():
        print("SKIPPED: no cpuset cgroup hierarchy (the plugin names a container's cgroup in one)")
        return SKIP
    return run_cases(CASES, chosen)

if __name__ == "__main__":
    sys.exit(main(sys.argv))
