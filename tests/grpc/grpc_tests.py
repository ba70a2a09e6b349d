#!/usr/bin/env python3
"""cli.grpc_kubelet: the grpc layer (hook/grpc) served by tests/grpc/grpc_serve.c with a
canned callback table, driven as a kubelet drives it (Debian's grpcio, the vendored protos)
and with what no kubelet sends (python3-h2, raw HTTP/2):

  - GetInfo: DRAPlugin, cachepin.io, the DRA socket, ["v1.DRAPlugin", "v1beta1.DRAPlugin"];
    NotifyRegistrationStatus reaches the callback;
  - NodePrepareResources and NodeUnprepareResources, v1 and v1beta1: one entry per claim,
    the canned CDI id or the canned error; an unknown method: UNIMPLEMENTED;
  - a claim left pending by the front end (deferred): the call answered when it answers
    (0.3 s later), another call served meanwhile; one never answered: DEADLINE_EXCEEDED
    after the deferred-call bound (2 s here; 30 s in the agent), not the stall timeout;
  - malformed: a request that is no protobuf, a claim without its uid (INVALID_ARGUMENT);
    a compressed message, one over 256 KiB announced in its prefix, two messages in a unary
    call (INVALID_ARGUMENT); headers over 16 KiB, bytes that are no HTTP/2 (connection
    closed); a ninth call at once on one connection (refused); a seventeenth connection
    (closed at once); a call stalled mid-message (closed after the stall timeout, 1 s here;
    10 s in the agent), while another connection is served meanwhile;
  - a client's GOAWAY naming its own last stream (as grpc-go's, the kubelet's, does on
    close): the connection ends, no warning;
  - each refusal one log line; the server alive after all of it; SIGTERM: exit 0, both
    sockets gone.

Usage: grpc_tests.py GRPC_SERVE.  Exit 0 passed, 1 failed, 77 skipped (and why)."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubelet_client as kc  # noqa: E402

STALL_MS = 1000
DEFER_MS = 2000
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def code_of(fn):
    import grpc
    try:
        fn()
    except grpc.RpcError as e:
        return e.code()
    return grpc.StatusCode.OK


def main(argv):
    try:
        reg_pb, v1, v1beta1 = kc.protos()
    except kc.Unavailable as e:
        print(f"SKIP: {e}")
        return 77
    import grpc
    tmp = tempfile.mkdtemp(prefix="grpc-tests.")
    reg, dra = os.path.join(tmp, "reg.sock"), os.path.join(tmp, "dra.sock")
    log_path = os.path.join(tmp, "serve.log")
    log = open(log_path, "w")
    p = subprocess.Popen([argv[1], tmp, str(STALL_MS), "0", str(DEFER_MS)], stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        check(p.stdout.readline().strip() == "ready", "the server listens")
        check(os.stat(reg).st_mode & 0o777 == 0o600 and os.stat(dra).st_mode & 0o777 == 0o600,
              "both sockets are 0600")

        info = kc.get_info(reg)
        check((info.type, info.name, info.endpoint) == ("DRAPlugin", "cachepin.io", dra),
              f"GetInfo: {info.type} {info.name} {info.endpoint}")
        check(list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin"],
              f"GetInfo: versions {list(info.supported_versions)}, v1 first")
        kc.notify(reg, True)
        check(p.stdout.readline().strip() == "notified registered=1 error=", "NotifyRegistrationStatus reaches the callback")
        kc.notify(reg, False, "no such version")
        check(p.stdout.readline().strip() == "notified registered=0 error=no such version",
              "NotifyRegistrationStatus: a refusal and its error")

        claims = [("uid-1", "default", "good"), ("uid-2", "default", "bad")]
        for version in ("v1", "v1beta1"):
            got = kc.prepare(dra, claims, version)
            check(sorted(got) == ["uid-1", "uid-2"], f"{version} prepare: one entry per claim")
            ok = got["uid-1"]
            check(ok.error == "" and len(ok.devices) == 1 and list(ok.devices[0].cdi_device_ids)
                  == ["cachepin.io/claim=uid-1"] and ok.devices[0].pool_name == "node-a"
                  and ok.devices[0].device_name == "l3-0" and list(ok.devices[0].request_names) == ["cpus"],
                  f"{version} prepare: the device, its request and its CDI id")
            check(got["uid-2"].error == "canned: this claim cannot be prepared" and not got["uid-2"].devices,
                  f"{version} prepare: the claim's error")
            lines = [p.stdout.readline().strip() for _ in claims]
            check(lines == ["prepare default/good uid-1", "prepare default/bad uid-2"],
                  f"{version} prepare: the callback got the claims' references")
            got = kc.unprepare(dra, claims, version)
            check(got["uid-1"].error == "" and got["uid-2"].error == "canned: this claim cannot be unprepared",
                  f"{version} unprepare: every claim answered")
            [p.stdout.readline() for _ in claims]
        check(kc.prepare(dra, [], "v1") == {}, "prepare with no claim: an empty answer")

        # Deferred: "later" answered 0.3 s later; "never" left to the bound.
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            t0 = time.monotonic()
            fut = ex.submit(kc.prepare, dra, [("uid-l", "default", "later"), ("uid-g", "default", "good")], "v1", 10)
            time.sleep(0.1)
            quick = kc.prepare(dra, [("uid-q", "default", "good")], "v1")
            check(time.monotonic() - t0 < 0.3 and quick["uid-q"].error == "",
                  "a call served while another waits for its pending claim")
            got = fut.result()
            took = time.monotonic() - t0
            check(0.25 <= took < 2 and got["uid-l"].error == "" and list(got["uid-l"].devices[0].cdi_device_ids)
                  == ["cachepin.io/claim=uid-l"] and got["uid-g"].error == "",
                  f"a pending claim: the call answered when the front end answers ({took:.2f} s)")
            t0 = time.monotonic()
            c = code_of(lambda: kc.prepare(dra, [("uid-n", "default", "never")], "v1", 10))
            took = time.monotonic() - t0
            check(c == grpc.StatusCode.DEADLINE_EXCEEDED and DEFER_MS / 1000 - 0.2 <= took < DEFER_MS / 1000 + 1.5,
                  f"a claim never answered: {c} after {took:.1f} s (the bound, not the {STALL_MS} ms stall)")
        lines = []
        while len([x for x in lines if x.startswith("answered")]) < 1:
            lines.append(p.stdout.readline().strip())
        check("answered uid-l" in lines, "the front end's answer reached the call")

        with kc.channel(reg) as ch:
            c = code_of(lambda: kc.call_raw(ch, kc.DRA_V1 + "NodePrepareResources", b""))
            check(c == grpc.StatusCode.UNIMPLEMENTED, f"the DRA service is not on the registration socket ({c})")
        with kc.channel(dra) as ch:
            c = code_of(lambda: kc.call_raw(ch, kc.DRA_V1 + "NoSuchMethod", b""))
            check(c == grpc.StatusCode.UNIMPLEMENTED, f"an unknown method: {c}")
            c = code_of(lambda: kc.call_raw(ch, kc.DRA_V1 + "NodePrepareResources", b"\x0a\x64abc"))
            check(c == grpc.StatusCode.INVALID_ARGUMENT, f"no protobuf: {c}")
            req = v1.NodePrepareResourcesRequest(claims=[v1.Claim(namespace="default", name="x")])
            c = code_of(lambda: kc.call(ch, kc.DRA_V1 + "NodePrepareResources", req, v1.NodePrepareResourcesResponse))
            check(c == grpc.StatusCode.INVALID_ARGUMENT, f"a claim without its uid: {c}")

        path = kc.DRA_V1 + "NodePrepareResources"
        r = kc.Raw(dra)
        sid = r.start(path)
        r.send(sid, kc.grpc_prefix(1, flags=1) + b"x", end=True)
        check(r.status(sid) == "3", "a compressed message: INVALID_ARGUMENT")
        sid = r.start(path)
        r.send(sid, kc.grpc_prefix(300 * 1024) + b"\0" * 1000)
        check(r.status(sid) == "3", "a message announced over 256 KiB: INVALID_ARGUMENT before it comes")
        sid = r.start(path)
        r.send(sid, kc.grpc_prefix(0) + kc.grpc_prefix(0), end=True)
        check(r.status(sid) == "3", "two messages in a unary call: INVALID_ARGUMENT")
        sid = r.start(path)
        r.send(sid, kc.grpc_prefix(0), end=True)
        check(r.status(sid) == "0" and r.data.get(sid) == kc.grpc_prefix(0),
              "then a good call on the same connection: OK, an empty answer")
        r.close()

        # grpc-go's client (the kubelet) ends a connection with a GOAWAY naming its own last
        # stream (http2Client.outgoingGoAwayHandler: nextID - 2), which RFC 9113 would have
        # name the server's: the client leaving, no fault to warn about.
        r = kc.Raw(reg)
        sid = r.start(kc.REG + "GetInfo")
        r.send(sid, kc.grpc_prefix(0), end=True)
        check(r.status(sid) == "0", "a GetInfo on the registration socket: OK")
        r.conn.close_connection(last_stream_id=sid)
        r.flush()
        check(r.wait_closed(3), "then the client's GOAWAY naming its own stream: the connection ends")
        r.close()

        # Nine calls at once, sent before the server's SETTINGS are read.
        r = kc.Raw(dra)
        sids = [r.start(path) for _ in range(9)]
        r.pump(lambda: sids[8] in r.reset, 3)
        check(r.reset.get(sids[8]) == 7 or r.closed, f"a ninth call at once: refused ({r.reset.get(sids[8])}, "
                                                      f"closed {r.closed})")
        check(not any(s in r.reset for s in sids[:8]), "the first eight calls are not refused")
        r.close()

        r = kc.Raw(dra)
        r.start(path, extra=[("x-big", "a" * 17000)])
        check(r.wait_closed(3), "headers over 16 KiB: the connection closed")
        r.close()

        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(dra)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\0" * 64)
        s.settimeout(3)
        try:
            while s.recv(4096):
                pass
            closed = True
        except (socket.timeout, OSError):
            closed = False
        check(closed, "bytes that are no HTTP/2: the connection closed")
        s.close()

        conns = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(17)]
        for c in conns[:16]:
            c.connect(reg)
        time.sleep(0.3)
        conns[16].connect(reg)
        conns[16].settimeout(3)
        try:
            extra_closed = conns[16].recv(4096) == b""
        except (socket.timeout, OSError):
            extra_closed = False
        check(extra_closed, "a seventeenth connection: closed at once")
        for c in conns:
            c.close()
        time.sleep(0.3)

        r = kc.Raw(dra)
        sid = r.start(path)
        r.send(sid, kc.grpc_prefix(100) + b"half")
        t0 = time.monotonic()
        info = kc.get_info(reg)
        check(info.name == "cachepin.io", "another connection served while one stalls")
        closed = r.wait_closed(STALL_MS / 1000 + 3)
        took = time.monotonic() - t0
        check(closed and STALL_MS / 1000 - 0.2 <= took, f"a call stalled mid-message: closed after {took:.1f} s")
        r.close()

        check(p.poll() is None, "the server is alive after all of it")
        check(kc.get_info(reg).name == "cachepin.io", "and answers")
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        log.close()
    check(rc == 0, f"SIGTERM: exit {rc}")
    check(not os.path.exists(reg) and not os.path.exists(dra), "both sockets removed")
    text = open(log_path).read()
    lines = [l for l in text.splitlines() if l.strip()]
    print("--- server log\n" + text, end="")
    refused = [l for l in lines if "warning" in l]
    check(all(len(l) < 400 for l in lines), "every log line one short line")
    check(len(refused) >= 11, f"each refusal logged ({len(refused)} warnings)")
    check(not [l for l in refused if "type 7," in l], "a client's GOAWAY is no warning")
    check(any("refused: Stream was refused" in l or "calls at once" in l for l in lines),
          "the ninth call's refusal logged")
    check("Sanitizer" not in text and "runtime error" not in text, "no sanitizer report")
    if failures:
        print(f"{len(failures)} failed: " + "; ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
