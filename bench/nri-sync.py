#!/usr/bin/python3
"""The NRI plugin's Synchronize, timed from the runtime's side (issue 31: under 200 ms for
1,000 containers), with the project's runtime emulator (tests/nri/nri_emu.py).

    /usr/bin/python3 bench/nri-sync.py PATH-TO-cachepin [CONTAINERS [ROUNDS]]

The plugin runs as shipped (sandboxed, debug log off) on a pinned synthetic topology of 64
CPUs in 8 L3s, its state directory on /dev/shm (a tmpfs, as /run/cachepin is). Each round
dials the plugin again (the emulator closes the connection: a runtime restart) and times the
whole Synchronize call, request sent to answer read, as containerd's 2 s timeout counts it.
Scenarios, each with its own state directory:

  restart      CONTAINERS running containers that asked, each with the plugin's entry, its
               cgroup recorded (the common case: the plugin or the runtime restarted)
  none-ask     CONTAINERS running containers, none asks (a node where few pods do)
  away         CONTAINERS/10 running containers that ask (shared, 1 CPU) and have no entry,
               among CONTAINERS: placed at Synchronize (the plugin was away while they
               started); a fresh state directory each round
  away-all     the same with every container asking: the worst case, bounded by the
               plugin's 1 s budget (what is left waits for the next Synchronize)

SCENARIOS (the environment, space-separated) picks some; an older build whose ledger has
no "runtime" key cannot run `restart`.

Prints the median, p99 (the largest of ROUNDS when ROUNDS < 100) and max per scenario, in
milliseconds, and the plugin's peak RSS.  Needs root (the plugin's sandbox), a cpuset cgroup
hierarchy, grpc_tools, lstopo-no-graphics.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "..", "tests", "nri"))
import nri_emu  # noqa: E402
from nri_emu import Emu, container, pod  # noqa: E402

TOPOLOGY = "pack:2 l3:4 core:8 pu:1"  # 64 CPUs, 8 L3s of 8 cores
TOP = f"/cp-bench-{os.getpid()}"


def host_dir(name):
    d = tempfile.mkdtemp(prefix=f"cp-nri-sync-{name}.", dir="/dev/shm" if os.path.isdir("/dev/shm") else "/tmp")
    state = os.path.join(d, "state")
    os.mkdir(state, 0o700)
    os.mkdir(os.path.join(d, "kernel"))
    topo = os.path.join(d, "topology.xml")
    subprocess.run(["lstopo-no-graphics", "--input", TOPOLOGY, "--of", "xml", topo], check=True)
    cfg = os.path.join(d, "cachepin.json")
    with open(cfg, "w") as f:
        json.dump({"state_dir": state, "topology": topo, "kernel_root": os.path.join(d, "kernel"), "kubelet_state": "",
                   "log_level": "warning"}, f)
    return d, state, cfg


def ledger_with(state, sock, n):
    """N shared entries of the plugin's (runtime SOCK), their cgroups recorded under a
    directory that is no cgroup (reconcile cannot tell them gone: kept, as live ones)."""
    mount = os.path.join(os.path.dirname(state), "nocgroup")
    os.mkdir(mount)
    entries = [{"id": f"c{i}", "cgroup_mount": mount, "cgroup": f"/c{i}", "cgroup_ino": 1000 + i, "pid": 0,
                "start_time": 0, "mode": "shared", "cpus": str(i % 64), "held": "", "mems": "0", "placed_at": 1,
                "sched_cache": "none", "core_sched": False, "drift": "", "runtime": sock} for i in range(n)]
    path = os.path.join(state, "ledger.json")
    with open(path, "w") as f:
        json.dump({"version": 3, "entries": entries}, f)
    os.chmod(path, 0o600)


def listing(n, asking):
    pods, ctrs = [], []
    for i in range(n):
        ann = {"cachepin.io/cpus": "1", "cachepin.io/mode": "shared"} if asking(i) else {}
        p = pod(f"pod{i}", annotations=ann)
        pods.append(p)
        ctrs.append(container(f"c{i}", p, cgroups_path=f"{TOP}/c{i}", state="RUNNING", pid=100000 + i))
    return pods, ctrs


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def timed_sync(emu, pods, ctrs):
    emu.close()
    if not emu.accept(10):
        raise RuntimeError("the plugin did not dial again")
    emu.wait_registered()
    emu.configure()
    t0 = time.monotonic()
    s = emu.sync(pods, ctrs)
    ms = (time.monotonic() - t0) * 1000
    if s.error:
        raise RuntimeError(s.error)
    return ms, len(s.updates)


def run(binary, name, n, rounds, fresh_each_round, prepare, asking):
    times, updates, rss = [], [], 0
    pods, ctrs = listing(n, asking)
    for r in range(rounds if fresh_each_round else 1):
        d, state, cfg = host_dir(name)
        try:
            with Emu(style="v0.8", workdir=d, request_timeout=10.0) as emu:
                sock = emu.listen(os.path.join(d, "nri.sock"))
                prepare(state, sock)
                emu.start_plugin([binary, "nri", "--socket", sock, "--config", cfg], log=os.path.join(d, "plugin.log"))
                emu.connect()
                for _ in range(1 if fresh_each_round else rounds):
                    ms, u = timed_sync(emu, pods, ctrs)
                    times.append(ms)
                    updates.append(u)
                rss = max(rss, rss_kb(emu.proc.pid))
        finally:
            shutil.rmtree(d, ignore_errors=True)
    times.sort()
    p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
    print(f"{name:10} {n:6} containers  {len(times):3} rounds  median {statistics.median(times):8.1f} ms  "
          f"p99 {p99:8.1f} ms  max {times[-1]:8.1f} ms  updates {statistics.median(updates):6.0f}  "
          f"peak RSS {rss / 1024:.1f} MiB", flush=True)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.realpath(argv[1])
    n = int(argv[2]) if len(argv) > 2 else 1000
    rounds = int(argv[3]) if len(argv) > 3 else 20
    want = os.environ.get("SCENARIOS", "restart none-ask away away-all").split()
    if "restart" in want:
        run(binary, "restart", n, rounds, False, lambda state, sock: ledger_with(state, sock, n), lambda i: True)
    if "none-ask" in want:
        run(binary, "none-ask", n, rounds, False, lambda state, sock: None, lambda i: False)
    if "away" in want:
        run(binary, "away", n, max(3, rounds // 4), True, lambda state, sock: None, lambda i: i % 10 == 0)
    if "away-all" in want:
        run(binary, "away-all", n, max(3, rounds // 4), True, lambda state, sock: None, lambda i: True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
