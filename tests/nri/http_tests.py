#!/usr/bin/python3
"""`cachepin nri --metrics-listen`: the agent's HTTP listener, driven by the NRI runtime
emulator (tests/nri/nri_emu.py), no containerd; each case's host as emu_tests.py makes it
(the sandbox as shipped, on: every request below is served inside it).

    /usr/bin/python3 tests/nri/http_tests.py PATH-TO-cachepin [CASE...]

  probes      /readyz: 503 before the registration (the plugin dialled, the runtime has
              not answered), 200 once registered, 503 once the runtime went away (the
              plugin dialling again), 200 after it registered again; 503 when the ledger
              cannot be read; /livez 200 throughout; the metrics: cachepin_nri_registered
              follows, cachepin_nri_reconnects_total counts the new registration, the
              CreateContainer histogram counts the call answered, the status families
              are there (the ledger's entries); --metrics-path; 404 and 405
  stalled     scrapers that connect and say nothing, send half a request, or ask for the
              metrics and never read (a receive buffer of 1 KiB): CreateContainer still
              answered within 1 s (the runtime's timeout is 2 s), and another scraper answered;
              the stalled ones closed by the listener at its timeout (10 s)
  stop_while_serving
              SIGTERM while two scrapers keep the listener busy, 10 times: each exit 0
              within 3 s (a signal that comes while the loop serves a request is not lost)
  options     --metrics-listen that is not ADDR:PORT, a port past 65535; --metrics-path
              without --metrics-listen, or not a path: exit 2, one line naming the option,
              before anything runs; an address taken: exit 1, the last line naming it

Exit: 0 passed, 1 failed, 77 skipped (what emu_tests.py skips for).
"""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emu_tests  # noqa: E402
from emu_tests import cgroup  # noqa: E402
from nri_emu import Emu, container, pod  # noqa: E402



METRICS_ON = r"nri: metrics on .* \(port ([0-9]+)\)"


def start(emu, host, *extra, listen="127.0.0.1:0"):
    """The plugin started dialling EMU's socket with its listener on LISTEN; the port it
    took (from its log line), the connection not accepted yet. The log is appended to by
    every plugin started in HOST: the port is this one's line, the one after those there."""
    log = os.path.join(host.dir, "plugin.log")
    before = len(re.findall(METRICS_ON, open(log, errors="replace").read())) if os.path.exists(log) else 0
    path = emu.listen(os.path.join(host.dir, "nri.sock"))
    emu.start_plugin([emu_tests.BIN, "nri", "--socket", path, "--config", host.config, "--metrics-listen", listen,
                      *extra], log=log)
    if not emu.wait_log(METRICS_ON, count=before + 1, timeout=5):
        raise RuntimeError("no `nri: metrics on` line in the plugin's log")
    return int(re.findall(METRICS_ON, emu.plugin_log())[before])


def get(port, path, method="GET", timeout=5):
    """(status, body) of METHOD http://127.0.0.1:PORT/PATH."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def sample(text, name, labels=""):
    """The value of sample NAME{LABELS} in an exposition, or None."""
    m = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def wait_status(port, path, want, timeout=5):
    """Poll PATH until it answers WANT: (status, body) last seen."""
    deadline = time.monotonic() + timeout
    while True:
        got = get(port, path)
        if got[0] == want or time.monotonic() >= deadline:
            return got
        time.sleep(0.05)


def probes(t, host):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        port = start(emu, host, "--metrics-path", "/m")
        t.check("the listener is served inside the sandbox", emu.wait_log(r"nri: sandboxed", timeout=5))
        code, body = get(port, "/readyz")
        t.check(f"before the registration: /readyz 503 ({body.strip()})",
                code == 503 and "not registered" in body, (code, body))
        t.equal("before the registration: /livez 200", get(port, "/livez")[0], 200)
        t.equal("before: cachepin_nri_registered 0", sample(get(port, "/m")[1], "cachepin_nri_registered"), 0)
        emu.connect()
        t.equal("registered: /readyz 200", get(port, "/readyz"), (200, "ok\n"))
        text = get(port, "/m")[1]
        t.equal("registered: cachepin_nri_registered 1", sample(text, "cachepin_nri_registered"), 1)
        t.equal("first registration: cachepin_nri_reconnects_total 0",
                sample(text, "cachepin_nri_reconnects_total"), 0)
        p = pod("pod-h", annotations={"cachepin.io/cpus": "1"})
        r = emu.create(p, container("ctr-h", p, cgroups_path=cgroup("ctr-h")))
        t.check("CreateContainer answered", r.ok, r)
        text = get(port, "/m")[1]
        t.equal("the CreateContainer histogram counts it",
                sample(text, "cachepin_nri_request_duration_seconds_count", '{method="CreateContainer"}'), 1)
        t.check("the status families are there (an entry of the ledger)",
                re.search(r"^cachepin_ledger_entries\S* [1-9]", text, re.M), text[:400])
        t.equal("the metrics at --metrics-path only: /metrics is 404", get(port, "/metrics")[0], 404)
        t.equal("POST: 405", get(port, "/m", method="POST")[0], 405)
        emu.close()
        code, body = wait_status(port, "/readyz", 503)
        t.check(f"the runtime gone: /readyz 503 ({body.strip()})", code == 503 and "ended" in body, (code, body))
        t.equal("the runtime gone: cachepin_nri_registered 0",
                sample(get(port, "/m")[1], "cachepin_nri_registered"), 0)
        t.equal("the runtime gone: /livez 200", get(port, "/livez")[0], 200)
        emu.connect()
        t.equal("registered again: /readyz 200", wait_status(port, "/readyz", 200)[0], 200)
        t.equal("registered again: cachepin_nri_reconnects_total 1",
                sample(get(port, "/m")[1], "cachepin_nri_reconnects_total"), 1)
        ledger = os.path.join(host.state, "ledger.json")
        with open(ledger, "w") as f:
            f.write("{ not json")
        code, body = get(port, "/readyz")
        t.check(f"a ledger that cannot be read: /readyz 503 ({body.strip()[:80]})",
                code == 503 and "ledger" in body, (code, body))
        os.unlink(ledger)
        t.equal("the ledger readable again: /readyz 200", get(port, "/readyz")[0], 200)


def stalled(t, host):
    with Emu(style="v0.8", workdir=host.dir) as emu:
        port = start(emu, host)
        emu.connect()
        p = pod("pod-s", annotations={"cachepin.io/cpus": "1"})
        r = emu.create(p, container("ctr-s0", p, cgroups_path=cgroup("ctr-s0")))  # the topology read once
        t.check("before them: CreateContainer answered", r.ok, r)
        silent = socket.create_connection(("127.0.0.1", port))
        half = socket.create_connection(("127.0.0.1", port))
        half.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Ag")
        deaf = socket.socket()
        deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        deaf.connect(("127.0.0.1", port))
        try:  # answers that fill its buffer, never read (the listener may drop it for that)
            for _ in range(20):
                deaf.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        except (ConnectionResetError, BrokenPipeError):
            pass
        time.sleep(0.3)
        t0 = time.monotonic()
        r = emu.create(p, container("ctr-s", p, cgroups_path=cgroup("ctr-s")))
        took = time.monotonic() - t0
        # Blocked by one, it would not be answered at all (the runtime's timeout is 2 s).
        t.check(f"three stalled scrapers: CreateContainer answered in {took * 1000:.0f} ms (< 1000)",
                r.ok and took < 1.0, r)
        t0 = time.monotonic()
        code, _ = get(port, "/metrics")
        t.check(f"another scraper answered meanwhile ({time.monotonic() - t0:.2f} s)", code == 200, code)
        for s, what in ((silent, "silent"), (half, "half a request")):
            s.settimeout(15)
            try:
                gone = s.recv(4096) == b""
            except (ConnectionResetError, socket.timeout) as e:
                gone = isinstance(e, ConnectionResetError)
            t.check(f"the {what} scraper closed by the listener at its timeout", gone)
        for s in (silent, half, deaf):
            s.close()
        r = emu.create(p, container("ctr-s2", p, cgroups_path=cgroup("ctr-s2")))
        t.check("after them: CreateContainer answered", r.ok, r)


def stop_while_serving(t, host):
    """SIGTERM while scrapers keep the listener busy: the signal often comes while the loop
    serves a request, not while it waits; it must still end the run at once."""
    import threading
    slow = []
    for i in range(10):
        with Emu(style="v0.8", workdir=host.dir) as emu:
            port = start(emu, host)
            emu.connect()
            done = threading.Event()

            def scrape():
                while not done.is_set():
                    try:
                        get(port, "/metrics", timeout=1)
                    except OSError:
                        pass
            threads = [threading.Thread(target=scrape, daemon=True) for _ in range(2)]
            for th in threads:
                th.start()
            time.sleep(0.3)
            t0 = time.monotonic()
            rc = emu.terminate(timeout=3)
            took = time.monotonic() - t0
            done.set()
            for th in threads:
                th.join(timeout=5)
            if rc != 0:
                slow.append((i, rc, round(took, 2)))
    t.equal("SIGTERM amid scrapes, 10 times: each exit 0 within 3 s", slow, [])


def options(t, host):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    busy = f"127.0.0.1:{taken.getsockname()[1]}"
    cases = [
        (["--metrics-listen", "localhost"], "--metrics-listen"),
        (["--metrics-listen", "127.0.0.1:70000"], "--metrics-listen"),
        (["--metrics-listen", "localhost:9464"], "--metrics-listen"),
        (["--metrics-listen", "::1:9464"], "--metrics-listen"),
        (["--metrics-listen", busy], "--metrics-listen"),
        (["--metrics-path", "/m"], "--metrics-path"),
        (["--metrics-listen", "127.0.0.1:0", "--metrics-path", "m"], "--metrics-path"),
        (["--metrics-listen", "127.0.0.1:0", "--metrics-path", "/readyz"], "--metrics-path"),
    ]
    for args, name in cases:
        r = subprocess.run([emu_tests.BIN, "nri", "--socket", os.path.join(host.dir, "none.sock"), "--config",
                            host.config, *args], capture_output=True, text=True, timeout=10)
        lines = r.stderr.strip().splitlines()
        if args[-1] == busy:  # found at the run's start: after its start-up lines, the last one says it
            t.check(f"{' '.join(args)}: exit 1, its last line names {name}",
                    r.returncode == 1 and lines and lines[-1].startswith(f"cachepin nri: {name}"), r.stderr)
            continue
        t.check(f"{' '.join(args)}: exit 2, one line naming {name}",
                r.returncode == 2 and len(lines) == 1 and name in lines[0], (r.returncode, r.stderr))
    taken.close()


CASES = [probes, stalled, stop_while_serving, options]


def main(argv):
    return emu_tests.main_of("http_tests.py", argv, CASES)

if __name__ == "__main__":
    sys.exit(main(sys.argv))
