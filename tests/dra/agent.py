#!/usr/bin/python3
"""`cachepin nri --dra-node`: the NRI agent publishing its node's ResourceSlices, driven by the
NRI runtime emulator (tests/nri/nri_emu.py) against the API server tests/dra/agent.sh brought up
(tests/dra/lib.sh; its URL, CA, admin token and directory in the environment).

    /usr/bin/python3 tests/dra/agent.py PATH-TO-cachepin

The promises (docs/dra.md "Publishing"): the node's slices published once the agent runs, equal
to `cachepin dra slice --json` of the same host config and ledger; a container placed by the
NRI plugin (CPUs held outside DRA) publishes a new generation whose capacity is the CPUs left,
within a few seconds; a token rotated mid-run keeps working; a slice someone deleted is put back
at once (the agent watches its node's slices) and so is one someone edited; the API server stopped, CreateContainer is answered as fast
as ever and the failures are counted; the API server back, the agent catches up. The metrics
count the rounds, the failures and the generation.

Exit: 0 passed, 1 failed, 77 skipped (what tests/nri/emu_tests.py skips for).
"""

import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "nri"))
import emu_tests  # noqa: E402
import http_tests  # noqa: E402
import nri_emu  # noqa: E402
from emu_tests import Frame, Host, cgroup  # noqa: E402
from nri_emu import Emu, container, pod  # noqa: E402

URL = os.environ["DRA_URL"]
D = os.environ["DRA_D"]
ADMIN = os.environ["ADMIN_TOKEN"]
DRIVER = os.environ["DRIVER"]
NODE = "node-a"
G = "/apis/resource.k8s.io/v1"
CTX = ssl.create_default_context(cafile=os.path.join(D, "ca.crt"))


def api(method, path, token=ADMIN, body=None):
    req = urllib.request.Request(URL + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=CTX, timeout=10) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
        return 0, str(e)


def listed():
    code, body = api("GET", f"{G}/resourceslices?fieldSelector=spec.nodeName%3D{NODE}")
    return sorted(body["items"], key=lambda s: s["metadata"]["name"]) if code == 200 else None


def generation():
    items = listed()
    return items[0]["spec"]["pool"]["generation"] if items else None


def subset(want, have):
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(map(subset, want, have))
    return want == have


def same_as_slice(host):
    """Whether the listed slices' specs are `dra slice --json`'s (the generation aside)."""
    r = subprocess.run([emu_tests.BIN, "dra", "slice", "--node", NODE, "--config", host.config, "--json"],
                       capture_output=True, text=True, check=True)
    want = [json.loads(line) for line in r.stdout.splitlines()]
    got = listed() or []
    for s in want + got:
        s["spec"]["pool"]["generation"] = 0
    return len(want) == len(got) and all(subset(w["spec"], g["spec"]) for w, g in zip(want, got))


def capacity():
    """{device: capacity} of the listed slices."""
    return {d["name"]: int(d["capacity"]["cpus"]["value"]) for s in listed() or [] for d in s["spec"]["devices"]}


def wait(cond, timeout):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(0.2)


def metric(port, name, labels=""):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    m = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def add_token(name):
    tok = f"{name}-{os.urandom(12).hex()}"
    path = os.path.join(D, "tokens.csv")
    with open(path) as f:
        lines = f.read()
    with open(path + ".new", "w") as f:
        f.write(lines + f'{tok},{DRIVER},uid-{DRIVER},"system:serviceaccounts"\n')
    os.rename(path + ".new", path)
    return tok


def drop_token(tok):
    path = os.path.join(D, "tokens.csv")
    with open(path) as f:
        lines = [ln for ln in f if not ln.startswith(tok + ",")]
    with open(path + ".new", "w") as f:
        f.writelines(lines)
    os.rename(path + ".new", path)


def write_token(tok):
    path = os.path.join(D, "token")
    with open(path + ".new", "w") as f:
        f.write(tok + "\n")
    os.rename(path + ".new", path)


def api_stop():
    """The API server stopped; its command line, to start it again."""
    pid = int(open(os.path.join(D, "api.pid")).read())
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0") if a]
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break
        time.sleep(0.1)
    return argv


def api_start(argv):
    log = open(os.path.join(D, "apiserver.log"), "a")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    with open(os.path.join(D, "api.pid"), "w") as f:
        f.write(str(p.pid))
    return wait(lambda: api("GET", f"{G}/resourceslices?limit=1")[0] == 200, 60)


def run(t, host, tok):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        port = http_tests.start(emu, host, "--dra-node", NODE, "--kube-api", URL, "--kube-ca",
                                os.path.join(D, "ca.crt"), "--kube-token-file", os.path.join(D, "token"))
        emu.connect()
        publisher_sandboxed(t, emu)
        g1 = wait(generation, 10)
        t.check(f"the slices published once the agent runs (generation {g1})", g1 is not None)
        t.check("they equal dra slice --json", same_as_slice(host), listed())
        t.check("l3-0 and l3-1 of 2 CPUs each", capacity() == {"l3-0": 2, "l3-1": 2}, capacity())
        t.check("the metrics: a round ok, the generation",
                wait(lambda: metric(port, "cachepin_dra_publish_rounds_total", '{outcome="ok"}'), 5)
                and metric(port, "cachepin_dra_pool_generation") == g1
                and metric(port, "cachepin_dra_publisher_up") == 1)

        p = pod("pod-d", annotations={"cachepin.io/cpus": "1"})
        c1 = container("ctr-d1", p, cgroups_path=cgroup("ctr-d1"))
        r = emu.create(p, c1)
        t.check("CreateContainer of 1 CPU answered", r.ok, r)
        g2 = wait(lambda: (generation() or 0) > g1 and generation(), 10)
        t.check(f"the placement published a new generation ({g1} -> {g2}) within 10 s", g2)
        t.check(f"the capacity is the CPUs left: {capacity()}", sorted(capacity().values()) == [1, 2], capacity())
        t.check("and equal to dra slice --json", same_as_slice(host))

        tok2 = add_token("driver2")
        write_token(tok2)
        drop_token(tok)
        c2 = container("ctr-d2", p, cgroups_path=cgroup("ctr-d2"))
        r = emu.create(p, c2)
        t.check("a second CreateContainer answered", r.ok, r)
        g3 = wait(lambda: (generation() or 0) > g2 and generation(), 10)
        t.check(f"the token rotated mid-run: the next placement published (generation {g3})", g3)
        # both in l3-0 (the engine packs), which has none left: left out of the slice
        t.check(f"the capacity is the CPUs left: {capacity()}", sum(capacity().values()) == 2 and same_as_slice(host),
                capacity())

        name = listed()[0]["metadata"]["name"]
        code, _ = api("DELETE", f"{G}/resourceslices/{name}")
        t.equal("someone deletes the slice", code, 200)
        t0 = time.monotonic()
        back = wait(lambda: listed(), 10)
        t.check(f"put back within 10 s, seen by the watch of its slices ({time.monotonic() - t0:.1f} s, generation "
                f"{generation()})", back and same_as_slice(host))
        one = listed()[0]
        one["spec"]["devices"][0]["capacity"]["cpus"]["value"] = "99"
        code, _ = api("PUT", f"{G}/resourceslices/{one['metadata']['name']}", body=one)
        t.equal("someone edits a device's capacity", code, 200)
        t.check("the edit undone within 10 s", wait(lambda: same_as_slice(host), 10), capacity())

        argv = api_stop()
        c3 = container("ctr-d3", p, cgroups_path=cgroup("ctr-d3"))
        r = emu.create(p, c3)
        t.check("the API server stopped: a third CreateContainer answered", r.ok, r)
        failed = wait(lambda: metric(port, "cachepin_dra_publish_rounds_total", '{outcome="failed"}'), 10)
        t.check(f"the failed round counted ({failed})", failed)
        t0 = time.monotonic()
        r = emu.remove(p, c1)
        took = time.monotonic() - t0
        t.check(f"RemoveContainer answered in {took * 1000:.0f} ms while the publisher fails (< 500)",
                r.ok and took < 0.5, r)
        t.check("the API server started again", api_start(argv))
        caught = wait(lambda: listed() is not None and same_as_slice(host), 70)
        t.check(f"the agent caught up after the restart (generation {generation()})", caught, capacity())
        t.check("the metrics say when it last succeeded",
                (metric(port, "cachepin_dra_publish_last_success_timestamp_seconds") or 0) > time.time() - 120)
        t.check("the token never in the agent's log", tok not in emu.plugin_log() and tok2 not in emu.plugin_log())


def publisher_sandboxed(t, emu):
    """The publisher process in its own sandbox (docs/security.md): no new privileges,
    a seccomp filter, no capability."""
    m = re.search(r"dra: publishing node \S+ ResourceSlices \(process ([0-9]+)\)", emu.plugin_log())
    t.check("the publisher's process named in the log", m, emu.plugin_log()[-500:])
    if not m:
        return
    pid = m.group(1)
    want = {"NoNewPrivs": "1", "Seccomp": "2", "CapEff": "0000000000000000"}

    def seen():
        try:
            with open(f"/proc/{pid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            return {}
        return {k: fields.get(k, "").strip() for k in want}

    # entered once forked, before its first round: allowed a moment
    t.check(f"the publisher (process {pid}) sandboxed: {seen()}", wait(lambda: seen() == want, 5), seen())


def emu_main(case, body, logs=("plugin.log",)):
    """Run BODY(t, host) as the test CASE on the NRI emulator: skipped (77) when what
    it needs is missing; the tails of LOGS (in the host's directory) shown on a failure;
    the exit status."""
    try:
        nri_emu.load_protos()
    except nri_emu.Unavailable as e:
        print(f"SKIPPED: {e}")
        return 77
    if shutil.which("lstopo-no-graphics") is None or not emu_tests.cpuset_hierarchy():
        print("SKIPPED: no lstopo-no-graphics, or no cpuset cgroup hierarchy")
        return 77
    t = Frame()
    t.case = case
    host = Host(case)
    t0 = time.monotonic()
    try:
        body(t, host)
    except Exception as e:  # noqa: BLE001
        t.bad(f"raised {type(e).__name__}: {e}")
    finally:
        for name in logs:
            log = os.path.join(host.dir, name)
            if t.failed and os.path.exists(log):
                with open(log, errors="replace") as f:
                    print(f"--- {name} ---\n" + "".join(f.readlines()[-30:]), end="")
        host.cleanup()
    print(f"{t.passed} passed, {t.failed} failed ({time.monotonic() - t0:.1f} s)")
    return 1 if t.failed else 0


def main(argv):
    emu_tests.BIN = os.path.realpath(argv[1])
    return emu_main("dra-agent", lambda t, host: run(t, host, open(os.path.join(D, "token")).read().strip()))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
