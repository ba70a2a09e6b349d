#!/usr/bin/python3
"""`cachepin nri --kubelet-plugin`: the agent as the kubelet's DRA plugin, driven by the NRI
runtime emulator (tests/nri/nri_emu.py) on one side and, on the other, by grpcio as a kubelet
drives its plugins (tests/grpc/kubelet_client.py), no containerd, no kubelet; each case's host
as emu_tests.py makes it (the sandbox as shipped, on: every call below is served inside it).

    /usr/bin/python3 tests/nri/kubelet_tests.py PATH-TO-cachepin [CASE...]

  serve     both sockets made under --kubelet-root (plugins_registry/cachepin.io-reg.sock,
            plugins/cachepin.io/dra.sock, 0600); GetInfo: DRAPlugin, cachepin.io, the DRA
            socket, v1 then v1beta1; NotifyRegistrationStatus logged; NodePrepareResources
            (v1 and v1beta1) with --dra-node naming an API server that is not there: each
            claim answered, within the bound, with an error naming the claim and the
            fetch (the answer deferred until the publisher's reply, the loop free);
            NodeUnprepareResources of claims never prepared: each claim, no error; a
            compressed message: INVALID_ARGUMENT, one line; CreateContainer answered between
            the kubelet's calls (one loop); the metrics count the claims by outcome; SIGTERM: exit 0, both sockets gone (removed
            inside the sandbox)
  options   --kubelet-root without --kubelet-plugin, not absolute, or not a directory: exit
            2, one line naming it; --kubelet-plugin without --dra-node: exit 2, one line
            naming --dra-node; --kube-api naming a host, not an address: exit 2, one line
            naming --kube-api; a root whose plugins_registry cannot be made: exit 1, the
            last line naming --kubelet-root

Exit: 0 passed, 1 failed, 77 skipped (what emu_tests.py skips for; no grpcio, grpc_tools or h2).
"""

import os
import re
import socket
import stat
import subprocess
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "grpc"))
import emu_tests  # noqa: E402
import http_tests  # noqa: E402
import kubelet_client as kc  # noqa: E402
from emu_tests import cgroup  # noqa: E402
from nri_emu import Emu, container, pod  # noqa: E402



def api_args(host, url=None):
    """--dra-node and an API server that is not one: a port that closes each connection at
    once (the TLS handshake fails at once, every request an error), or URL."""
    tok = os.path.join(host.dir, "token")
    with open(tok, "w") as f:
        f.write("not-a-real-token\n")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def closer():
        while True:
            conn, _ = srv.accept()
            conn.close()
    threading.Thread(target=closer, daemon=True).start()
    url = url or f"https://127.0.0.1:{srv.getsockname()[1]}"
    return ["--dra-node", "node-a", "--kube-api", url, "--kube-ca", tok, "--kube-token-file", tok]


def serve(t, host):
    import grpc
    root = os.path.join(host.dir, "kubelet")
    os.mkdir(root)
    reg = os.path.join(root, "plugins_registry", "cachepin.io-reg.sock")
    dra = os.path.join(root, "plugins", "cachepin.io", "dra.sock")
    with Emu(style="v0.8", workdir=host.dir) as emu:
        port = http_tests.start(emu, host, "--kubelet-plugin", "--kubelet-root", root, *api_args(host))
        t.check("the kubelet plugin's sockets listen", emu.wait_log(r"nri: kubelet plugin cachepin.io", timeout=5))
        for p in (reg, dra):
            t.check(f"{os.path.relpath(p, root)}: a socket, 0600",
                    stat.S_ISSOCK(os.stat(p).st_mode) and os.stat(p).st_mode & 0o777 == 0o600)
        emu.connect()
        t.check("sandboxed", emu.wait_log(r"nri: sandboxed", timeout=5))
        line = [l for l in emu.plugin_log().splitlines() if "nri: sandboxed" in l]
        print(f"     ({line[0].strip() if line else 'no sandbox line'})")

        info = kc.get_info(reg)
        t.equal("GetInfo", (info.type, info.name, info.endpoint, list(info.supported_versions)),
                ("DRAPlugin", "cachepin.io", dra, ["v1.DRAPlugin", "v1beta1.DRAPlugin"]))
        kc.notify(reg, True)
        t.check("NotifyRegistrationStatus logged", emu.wait_log(r"grpc: the kubelet registered the plugin", timeout=5))

        claims = [("uid-1", "default", "claim-a"), ("uid-2", "team", "claim-b")]
        for version in ("v1", "v1beta1"):
            got = kc.prepare(dra, claims, version, timeout=40)
            errors = {u: (r.error, len(r.devices)) for u, r in got.items()}
            t.check(f"{version} NodePrepareResources: each claim answered with the fetch's error, no device",
                    set(errors) == {"uid-1", "uid-2"}
                    and all(n == 0 and e.startswith(f"cachepin: claim {ns}/{name} ({u}): ")
                            and f"GET resourceclaim {ns}/{name}" in e
                            for (u, ns, name), (e, n) in ((c, errors[c[0]]) for c in claims)), errors)
            got = kc.unprepare(dra, claims, version)
            t.equal(f"{version} NodeUnprepareResources: each claim, no error",
                    {u: r.error for u, r in got.items()}, {"uid-1": "", "uid-2": ""})

        p = pod("pod-k", annotations={"cachepin.io/cpus": "1"})
        r = emu.create(p, container("ctr-k", p, cgroups_path=cgroup("ctr-k")))
        t.check("CreateContainer answered between the kubelet's calls", r.ok, r)

        raw = kc.Raw(dra)
        sid = raw.start(kc.DRA_V1 + "NodePrepareResources")
        raw.send(sid, kc.grpc_prefix(1, flags=1) + b"x", end=True)
        t.equal("a compressed message: INVALID_ARGUMENT", raw.status(sid), "3")
        raw.close()
        t.check("one line says so", emu.wait_log(r"grpc: dra.sock: .* refused: grpc: message flags 0x01", timeout=5))
        with kc.channel(dra) as ch:
            try:
                kc.call_raw(ch, kc.DRA_V1 + "NodePrepareResources", b"\x0a\x64abc")
                code = grpc.StatusCode.OK
            except grpc.RpcError as e:
                code = e.code()
        t.equal("no protobuf: INVALID_ARGUMENT", code, grpc.StatusCode.INVALID_ARGUMENT)
        t.check("the agent lives on", emu.proc.poll() is None)
        status, text = http_tests.get(port, "/metrics")
        got = dict(re.findall(r"^(cachepin_dra_(?:kubelet|prepares|unprepares)\S*) (\S+)$", text, re.M))
        t.equal("the metrics: registered, each claim of the kubelet's calls by outcome (the two malformed "
                "calls are no claim's)", (status, got),
                (200, {"cachepin_dra_kubelet_registered": "1", 'cachepin_dra_prepares_total{outcome="ok"}': "0",
                       'cachepin_dra_prepares_total{outcome="failed"}': "4",
                       'cachepin_dra_unprepares_total{outcome="ok"}': "4",
                       'cachepin_dra_unprepares_total{outcome="failed"}': "0", "cachepin_dra_prepares_waiting": "0"}))
        t.equal("GetInfo still answered", kc.get_info(reg).name, "cachepin.io")

        rc = emu.terminate()
        t.equal("SIGTERM: exit 0", rc, 0)
        t.check("both sockets gone", not os.path.exists(reg) and not os.path.exists(dra),
                (os.path.exists(reg), os.path.exists(dra)))
        log = emu.plugin_log()
        t.check("no sanitizer report, no seccomp kill", "Sanitizer" not in log and "runtime error" not in log)


def options(t, host):
    notdir = os.path.join(host.dir, "file")
    open(notdir, "w").close()
    os.mkdir(os.path.join(host.dir, "ro"))
    open(os.path.join(host.dir, "ro", "plugins_registry"), "w").close()  # a file where the directory goes
    cases = [
        (["--kubelet-root", "/var/lib/kubelet"], 2, "--kubelet-root"),
        (["--kubelet-plugin"], 2, "--dra-node"),
        (["--kubelet-plugin", "--kubelet-root", "var/lib/kubelet"], 2, "--kubelet-root"),
        (["--kubelet-plugin", "--kubelet-root", notdir], 2, "--kubelet-root"),
        (["--kubelet-plugin", "--kubelet-root", os.path.join(host.dir, "none")], 2, "--kubelet-root"),
        # A host name for the API server: the publisher's sandbox resolves none (an address).
        (["--kubelet-plugin", "--kubelet-root", host.dir, *api_args(host, "https://localhost:6443")], 2,
         "--kube-api"),
        # A root whose plugins_registry cannot be made: found at the run's start.
        (["--kubelet-plugin", "--kubelet-root", os.path.join(host.dir, "ro"), *api_args(host)], 1,
         "--kubelet-root"),
    ]
    for args, code, name in cases:
        r = subprocess.run([emu_tests.BIN, "nri", "--socket", os.path.join(host.dir, "none.sock"), "--config",
                            host.config, *args], capture_output=True, text=True, timeout=10)
        lines = r.stderr.strip().splitlines()
        if code == 2:
            t.check(f"{' '.join(args)}: exit 2, one line naming {name}",
                    r.returncode == 2 and len(lines) == 1 and name in lines[0], (r.returncode, r.stderr))
        else:
            t.check(f"{' '.join(args)}: exit 1, its last line names {name}",
                    r.returncode == 1 and lines and lines[-1].startswith(f"cachepin nri: {name}"),
                    (r.returncode, r.stderr))


CASES = [serve, options]


def missing():
    try:
        kc.protos()
    except kc.Unavailable as e:
        return str(e)
    return None


def main(argv):
    return emu_tests.main_of("kubelet_tests.py", argv, CASES, missing)

if __name__ == "__main__":
    sys.exit(main(sys.argv))
