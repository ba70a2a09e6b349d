#!/usr/bin/python3
"""A storm on one state directory: the OCI hook, `cachepin apply`/`release` and the NRI
plugin (driven by the runtime emulator, tests/nri/nri_emu.py) placing and releasing at
once, the plugin SIGKILLed at random points (between calls and in the middle of one), and
checked against the live cgroups: no CPU held twice, no release lost (issue 31).

    /usr/bin/python3 tests/nri/storm.py PATH-TO-cachepin [SECONDS [SEED]]

Real cpuset cgroups under the cpuset hierarchy (cp-storm-PID), real processes in them; the
host's own CPUs and topology (what a placement gets is never predicted: only the
invariants are checked).  Three workers, each asking for 1 CPU, exclusive:
  hook    a sleeping process in a cgroup of its own, `cachepin hook createRuntime` for it,
          a while, `cachepin hook poststop`, the process and the cgroup gone;
  apply   a cgroup, `cachepin apply --cpus 1`, a while, `cachepin release`, the cgroup gone;
  nri     the runtime: CreateContainer; the cgroup made with the answer's cpuset (or its
          parent's, unplaced, when there was none or the call failed), a process in it,
          StartContainer; a while; StopContainer, the process and the cgroup gone,
          RemoveContainer.  The plugin is SIGKILLed every 0.3 to 1.5 s (a third of the time
          while a call is in flight), and every 5th CreateContainer finds it stopped
          (SIGSTOP) past the runtime's timeout, which closes the connection, then continued;
          each time it is started again (or dials again) and is synchronized with what the
          runtime has, whose updates the runtime applies to the cgroups.
At checkpoints (every worker between two steps) and at the end:
  1. the cgroups that run on fewer CPUs than their parent (placed by someone) are pairwise
     disjoint: no CPU held twice, whoever placed it;
  2. each of them is on exactly the CPUs a ledger entry holds for it (by its cgroup path),
     and every entry whose cgroup stands holds exactly what that cgroup runs on (no CPU
     withheld for what a container was never given: an answer that never arrived);
  3. at the end, every container gone and the plugin synchronized once more, the ledger is
     empty: no release lost.

Exit: 0 passed, 1 failed, 77 skipped (not root, no cpuset hierarchy, no grpc_tools).
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

SKIP = 77


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


def cpuset_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            sep = parts.index("-")
            if parts[sep + 1] == "cgroup" and "cpuset" in parts[-1].split(","):
                return parts[4]
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            if "cpuset" in f.read().split():
                return "/sys/fs/cgroup"
    return None


def expand(text):
    out = set()
    for part in text.strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def fmt(cpus):
    return ",".join(str(c) for c in sorted(cpus))


class Cgroups:
    """The storm's cgroups under MOUNT/cp-storm-PID."""

    def __init__(self, mount):
        self.mount = mount
        self.v2 = mount == "/sys/fs/cgroup"
        self.top = os.path.join(mount, f"cp-storm-{os.getpid()}")
        if self.v2:
            self._enable(mount)
        self.make(self.top, parent=mount)
        if self.v2:
            self._enable(self.top)
        self.all = self.cpus(self.top)

    def _enable(self, d):
        with open(os.path.join(d, "cgroup.subtree_control")) as f:
            if "cpuset" in f.read().split():
                return
        with open(os.path.join(d, "cgroup.subtree_control"), "w") as f:
            f.write("+cpuset")

    def make(self, path, parent=None, cpus=None):
        os.mkdir(path)
        parent = parent or self.top
        if not self.v2:
            with open(os.path.join(parent, "cpuset.mems")) as f:
                mems = f.read().strip()
            with open(os.path.join(path, "cpuset.mems"), "w") as f:
                f.write(mems)
            if cpus is None:
                with open(os.path.join(parent, "cpuset.cpus")) as f:
                    cpus = f.read().strip()
        if cpus is not None:
            with open(os.path.join(path, "cpuset.cpus"), "w") as f:
                f.write(cpus)

    def set_cpus(self, path, cpus):
        with open(os.path.join(path, "cpuset.cpus"), "w") as f:
            f.write(cpus)

    def cpus(self, path):
        for name in ("cpuset.cpus.effective", "cpuset.cpus"):
            p = os.path.join(path, name)
            if os.path.exists(p):
                with open(p) as f:
                    return expand(f.read())
        return set()

    def procs(self, path):
        return os.path.join(path, "cgroup.procs")

    def rel(self, path):
        return path[len(self.mount):] or "/"

    def remove(self, path):
        for _ in range(50):
            try:
                os.rmdir(path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)

    def cleanup(self):
        for d in sorted(os.listdir(self.top)) if os.path.isdir(self.top) else []:
            p = os.path.join(self.top, d)
            if os.path.isdir(p):
                try:
                    with open(self.procs(p)) as f:
                        for pid in f.read().split():
                            try:
                                os.kill(int(pid), signal.SIGKILL)
                            except ProcessLookupError:
                                pass
                except OSError:
                    pass
                self.remove(p)
        self.remove(self.top)


def sleeper_in(cg, path):
    """A sleeping process moved into cgroup PATH: the Popen."""
    p = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    with open(cg.procs(path), "w") as f:
        f.write(str(p.pid))
    return p


def end(p):
    p.kill()
    p.wait()


class Storm:
    def __init__(self, binary, seconds, seed):
        import nri_emu  # noqa: F401 (grpc_tools needed: checked before)
        self.binary = binary
        self.seconds = seconds
        self.rng = random.Random(seed)
        self.dir = tempfile.mkdtemp(prefix="cp-storm.", dir="/tmp")
        self.state = os.path.join(self.dir, "state")
        os.mkdir(self.state, 0o700)
        self.config = os.path.join(self.dir, "cachepin.json")
        with open(self.config, "w") as f:
            json.dump({"state_dir": self.state, "kubelet_state": "", "log_level": "info", "lock_timeout_ms": 10000}, f)
        mount = cpuset_mount()
        if mount is None:
            skip("no cpuset hierarchy")
        self.cg = Cgroups(mount)
        self.gate = threading.Condition()
        self.busy = 0  # workers in a step
        self.paused = False
        self.stop = threading.Event()
        self.failures = []
        self.passed = 0
        self.counts = {"hook": 0, "apply": 0, "nri": 0, "kills": 0, "stalls": 0, "checks": 0}
        self.bundle = os.path.join(self.dir, "bundle")
        os.mkdir(self.bundle)
        with open(os.path.join(self.bundle, "config.json"), "w") as f:
            json.dump({"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}, f)

    # -- steps and checkpoints: a checkpoint waits for every step in flight to end

    def step(self):
        storm = self

        class Step:
            def __enter__(self):
                with storm.gate:
                    while storm.paused:
                        storm.gate.wait()
                    storm.busy += 1

            def __exit__(self, *exc):
                with storm.gate:
                    storm.busy -= 1
                    storm.gate.notify_all()

        return Step()

    def checkpoint(self, final=False):
        with self.gate:
            self.paused = True
            while self.busy:
                self.gate.wait()
        try:
            self.check_invariants(final)
        finally:
            with self.gate:
                self.paused = False
                self.gate.notify_all()

    def fail(self, what):
        self.failures.append(what)
        print(f"FAIL {what}", flush=True)

    def ledger(self):
        try:
            with open(os.path.join(self.state, "ledger.json")) as f:
                return json.load(f)["entries"]
        except FileNotFoundError:
            return []

    def check_invariants(self, final):
        self.counts["checks"] += 1
        placed = {}
        for d in os.listdir(self.cg.top):
            p = os.path.join(self.cg.top, d)
            if os.path.isdir(p):
                cpus = self.cg.cpus(p)
                if cpus and cpus != self.cg.all:
                    placed[p] = cpus
        seen = {}
        for p, cpus in placed.items():
            for c in cpus:
                if c in seen:
                    self.fail(f"CPU {c} held twice: by {self.cg.rel(seen[c])} and {self.cg.rel(p)}")
                seen[c] = p
        entries = self.ledger()
        held = {e["cgroup"]: expand(e["cpus"]) for e in entries if e["mode"] == "exclusive"}
        for e in entries:
            path = e["cgroup_mount"] + e["cgroup"]
            if path.startswith(self.cg.top + "/") and os.path.isdir(path) and self.cg.cpus(path) != expand(e["cpus"]):
                self.fail(f"{e['id']}: the ledger holds CPUs {e['cpus']} for {e['cgroup']}, which runs on "
                          f"{fmt(self.cg.cpus(path))} (CPUs withheld for what it was never given)")
        for p, cpus in placed.items():
            if held.get(self.cg.rel(p)) != cpus:
                self.fail(f"{self.cg.rel(p)} runs on CPUs {fmt(cpus)}, the ledger holds "
                          f"{fmt(held[self.cg.rel(p)]) if self.cg.rel(p) in held else 'nothing'} for it")
        if final:
            left = self.ledger()
            if left:
                self.fail(f"every container gone, the ledger still holds {[e['id'] for e in left]}")
        if not self.failures:
            self.passed += 1

    # -- the hook worker

    def hook(self, stage, cid, pid):
        state = {"ociVersion": "1.0.2", "id": cid, "status": "creating" if stage == "createRuntime" else "stopped",
                 "bundle": self.bundle, "annotations": {"cachepin.io/cpus": "1"}}
        if pid:
            state["pid"] = pid
        subprocess.run([self.binary, "hook", "--config", self.config, stage], input=json.dumps(state), text=True,
                       capture_output=True)

    def hook_worker(self):
        i = 0
        while not self.stop.is_set():
            i += 1
            path = os.path.join(self.cg.top, f"h{i}")
            with self.step():
                self.cg.make(path)
                proc = sleeper_in(self.cg, path)
                self.hook("createRuntime", f"hook-{i}", proc.pid)
            time.sleep(self.rng.uniform(0.05, 0.4))
            with self.step():
                end(proc)
                self.hook("poststop", f"hook-{i}", 0)
                self.cg.remove(path)
            self.counts["hook"] += 1
            time.sleep(self.rng.uniform(0.05, 0.6))  # idle: CPUs free for the others

    # -- the apply worker

    def apply_worker(self):
        i = 0
        while not self.stop.is_set():
            i += 1
            path = os.path.join(self.cg.top, f"a{i}")
            with self.step():
                self.cg.make(path)
                subprocess.run([self.binary, "apply", "--cgroup", path, "--cpus", "1", "--config", self.config],
                               capture_output=True)
            time.sleep(self.rng.uniform(0.05, 0.4))
            with self.step():
                subprocess.run([self.binary, "release", "--cgroup", path, "--config", self.config],
                               capture_output=True)
                self.cg.remove(path)
            self.counts["apply"] += 1
            time.sleep(self.rng.uniform(0.05, 0.6))

    # -- the runtime and its plugin

    def start_plugin(self, emu, start=True):
        from nri_emu import container, pod
        if start:
            emu.start_plugin([self.binary, "nri", "--socket", emu.socket_path, "--config", self.config],
                             log=os.path.join(self.dir, "plugin.log"))
        if not emu.accept(10):
            raise RuntimeError("the plugin did not dial")
        emu.wait_registered()
        emu.configure()
        pods, ctrs = [], []
        for cid, c in self.ctrs.items():
            p = pod(f"pod-{cid}", annotations={"cachepin.io/cpus": "1"})
            pods.append(p)
            ctrs.append(container(cid, p, cgroups_path=self.cg.rel(c["path"]), state=c["state"],
                                  pid=c["proc"].pid if c["proc"] else 0, cpus=c["spec"] or None))
        s = emu.sync(pods, ctrs)
        for u in s.updates:  # the runtime applies them: spec, cgroup
            c = self.ctrs.get(u.container_id)
            if c and os.path.isdir(c["path"]):
                self.cg.set_cpus(c["path"], u.linux.resources.cpu.cpus)
                c["spec"] = u.linux.resources.cpu.cpus

    def ensure_connected(self, emu):
        """The plugin started again when it died, or accepted when it dials again (the
        runtime closed the connection on a call that timed out), and synchronized."""
        if emu.proc.poll() is not None:
            self.start_plugin(emu)
        elif emu.conn is None or emu.conn.closed.is_set():
            self.start_plugin(emu, start=False)

    def kill_plugin(self, emu):
        if emu.proc and emu.proc.poll() is None:
            emu.proc.kill()
            emu.proc.wait()
            self.counts["kills"] += 1
        emu.close("the plugin was killed")

    def nri_worker(self):
        from nri_emu import Emu, container, pod
        self.ctrs = {}
        with Emu(style="v0.12", workdir=self.dir, request_timeout=2.0) as emu:
            emu.listen(os.path.join(self.dir, "nri.sock"))
            with self.step():
                self.start_plugin(emu)
            next_kill = time.monotonic() + self.rng.uniform(0.3, 1.5)
            i = 0
            while not self.stop.is_set():
                i += 1
                cid = f"nri-{i}"
                path = os.path.join(self.cg.top, f"n{i}")
                p = pod(f"pod-{cid}", annotations={"cachepin.io/cpus": "1"})
                with self.step():
                    killer = None
                    stalled = i % 5 == 0  # stopped past the runtime's timeout, then continued
                    if stalled:
                        os.kill(emu.proc.pid, signal.SIGSTOP)
                        emu.request_timeout = 0.5
                    elif time.monotonic() >= next_kill and self.rng.random() < 0.33:
                        killer = threading.Timer(self.rng.uniform(0, 0.01), self.kill_plugin, (emu,))
                        killer.start()  # in the middle of the call
                        next_kill = time.monotonic() + self.rng.uniform(0.3, 1.5)
                    r = emu.create(p, container(cid, p, cgroups_path=self.cg.rel(path), state="CREATED"))
                    if killer:
                        killer.join()
                    if stalled:
                        self.counts["stalls"] += 1
                        emu.request_timeout = 2.0
                        os.kill(emu.proc.pid, signal.SIGCONT)
                    answer = r.response.adjust.linux.resources.cpu.cpus if r.ok and r.response.HasField(
                        "adjust") else ""
                    self.cg.make(path, cpus=answer or None)
                    proc = sleeper_in(self.cg, path)
                    self.ctrs[cid] = {"path": path, "proc": proc, "state": "RUNNING", "spec": answer}
                    if emu.conn and not emu.conn.closed.is_set():
                        emu.start(p, container(cid, p, cgroups_path=self.cg.rel(path), state="RUNNING", pid=proc.pid,
                                               cpus=answer or None))
                    if time.monotonic() >= next_kill:
                        self.kill_plugin(emu)
                        next_kill = time.monotonic() + self.rng.uniform(0.3, 1.5)
                    self.ensure_connected(emu)
                time.sleep(self.rng.uniform(0.05, 0.4))
                with self.step():
                    c = self.ctrs.pop(cid)
                    end(c["proc"])
                    cc = container(cid, p, cgroups_path=self.cg.rel(path), state="STOPPED")
                    if emu.conn and not emu.conn.closed.is_set():
                        emu.stop(p, cc)
                    self.cg.remove(path)
                    if emu.conn and not emu.conn.closed.is_set():
                        emu.remove(p, cc)
                    self.ensure_connected(emu)
                self.counts["nri"] += 1
            # The end: the plugin started once more and synchronized with nothing left.
            with self.step():
                self.kill_plugin(emu)
                self.start_plugin(emu)
                emu.terminate()

    def run(self):
        workers = [threading.Thread(target=self.guard(f), name=f.__name__)
                   for f in (self.hook_worker, self.apply_worker, self.nri_worker)]
        for w in workers:
            w.start()
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline and all(w.is_alive() for w in workers):
            time.sleep(self.rng.uniform(0.2, 0.6))
            self.checkpoint()
        self.stop.set()
        for w in workers:
            w.join(120)
        self.checkpoint(final=True)
        print(f"note: {self.counts['hook']} hook, {self.counts['apply']} apply and {self.counts['nri']} NRI containers, "
              f"{self.counts['kills']} plugin kills, {self.counts['stalls']} stalls, {self.counts['checks']} checkpoints")
        if len(self.failures) == 0 and self.counts["nri"] and self.counts["hook"] and self.counts["apply"]:
            print(f"{self.passed} passed, 0 failed")
            return 0
        if not self.failures:
            self.fail("a worker did nothing")
        print(f"{self.passed} passed, {len(self.failures)} failed")
        try:
            with open(os.path.join(self.dir, "plugin.log")) as f:
                print("--- the plugin's log (end) ---\n" + "".join(f.readlines()[-30:]))
        except OSError:
            pass
        return 1

    def guard(self, fn):
        def run():
            try:
                fn()
            except Exception as e:  # noqa: BLE001 (a worker's crash fails the storm, with why)
                self.fail(f"worker {fn.__name__}: {type(e).__name__}: {e}")
                self.stop.set()
        return run

    def cleanup(self):
        self.cg.cleanup()
        if os.environ.get("NRI_EMU_KEEP"):
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        skip("needs root (real cgroups, the hook)")
    try:
        import nri_emu
        nri_emu.load_protos()
    except Exception as e:  # noqa: BLE001
        skip(f"the emulator cannot run here: {e}")
    seconds = float(argv[2]) if len(argv) > 2 else 20
    seed = int(argv[3]) if len(argv) > 3 else int(time.time())
    print(f"storm: {seconds:.0f} s, seed {seed}")
    s = Storm(os.path.realpath(argv[1]), seconds, seed)
    try:
        return s.run()
    finally:
        s.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
