"""What a kubelet does on the plugin's sockets, for tests/grpc and tests/nri: the vendored
protos (hook/grpc/proto) compiled at run time with `python3 -m grpc_tools.protoc` into a
temporary directory (nothing generated is kept in the tree), calls made with Debian's grpcio
as the kubelet's grpc-go makes them (unary, over unix:PATH), and raw HTTP/2 with python3-h2
for what no well-behaved client sends (bad prefixes, oversized messages, too many streams,
stalls).

Unavailable: a prerequisite is missing (a test then exits 77 and says which)."""

import importlib
import importlib.util
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "hook", "grpc", "proto")

REG = "/pluginregistration.Registration/"
DRA_V1 = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
DRA_V1BETA1 = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"


class Unavailable(Exception):
    """A prerequisite is missing (grpcio, grpc_tools, h2)."""


_pb = None


def protos():
    """(pluginregistration_v1_pb2, dra_v1_pb2, dra_v1beta1_pb2), compiled once per process."""
    global _pb
    if _pb is not None:
        return _pb
    for mod in ("grpc", "grpc_tools.protoc", "google.protobuf", "h2.connection"):
        try:
            found = importlib.util.find_spec(mod) is not None
        except ImportError:
            found = False
        if not found:
            raise Unavailable(f"python3-grpcio, python3-grpc-tools, python3-protobuf and python3-h2 are needed "
                              f"(no {mod})")
    names = ("pluginregistration_v1", "dra_v1", "dra_v1beta1")
    out = tempfile.mkdtemp(prefix="kubelet-pb.")
    import atexit
    atexit.register(shutil.rmtree, out, True)
    r = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + PROTO_DIR, "--python_out=" + out]
                       + [os.path.join(PROTO_DIR, n + ".proto") for n in names], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"grpc_tools.protoc failed: {r.stderr.strip()}")
    sys.path.insert(0, out)
    _pb = tuple(importlib.import_module(n + "_pb2") for n in names)
    return _pb


def channel(path):
    import grpc
    return grpc.insecure_channel("unix:" + path)


def call(ch, method, request, response_type, timeout=5):
    """A unary call: the response message, or grpc.RpcError."""
    f = ch.unary_unary(method, request_serializer=lambda m: m.SerializeToString(),
                       response_deserializer=response_type.FromString)
    return f(request, timeout=timeout)


def call_raw(ch, method, payload, timeout=5):
    """A unary call with PAYLOAD's bytes as the request: the response's bytes, or grpc.RpcError."""
    f = ch.unary_unary(method, request_serializer=None, response_deserializer=None)
    return f(payload, timeout=timeout)


def get_info(path):
    reg, _, _ = protos()
    with channel(path) as ch:
        return call(ch, REG + "GetInfo", reg.InfoRequest(), reg.PluginInfo)


def notify(path, registered, error=""):
    reg, _, _ = protos()
    with channel(path) as ch:
        return call(ch, REG + "NotifyRegistrationStatus",
                    reg.RegistrationStatus(plugin_registered=registered, error=error), reg.RegistrationStatusResponse)


def _dra(path, claims, version, method, timeout=5):
    """METHOD (NodePrepareResources, NodeUnprepareResources) of CLAIMS ((uid, namespace,
    name)...) in VERSION: its answer's claims, {uid: the claim's response}."""
    _, v1, v1beta1 = protos()
    pb, base = (v1, DRA_V1) if version == "v1" else (v1beta1, DRA_V1BETA1)
    req = getattr(pb, method + "Request")(claims=[pb.Claim(uid=u, namespace=ns, name=n) for u, ns, n in claims])
    with channel(path) as ch:
        return dict(call(ch, base + method, req, getattr(pb, method + "Response"), timeout).claims)


def prepare(path, claims, version="v1", timeout=5):
    return _dra(path, claims, version, "NodePrepareResources", timeout)


def unprepare(path, claims, version="v1", timeout=5):
    return _dra(path, claims, version, "NodeUnprepareResources", timeout)


def wait_socket(path, proc=None, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


# ---------------------------------------------------------------------------- raw HTTP/2

def grpc_prefix(n, flags=0):
    return struct.pack(">BI", flags, n)


class Raw:
    """One HTTP/2 connection to a unix socket, with h2 as the client; what the server
    answers, collected per stream."""

    def __init__(self, path, timeout=5):
        import h2.config
        import h2.connection
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.headers, self.data, self.ended, self.reset = {}, {}, set(), {}
        self.closed = False
        self.flush()

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def start(self, path, end=False, extra=()):
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
                ("content-type", "application/grpc"), ("te", "trailers")] + list(extra)
        self.conn.send_headers(sid, hdrs, end_stream=end)
        self.flush()
        return sid

    def send(self, sid, data, end=False):
        self.conn.send_data(sid, data, end_stream=end)
        self.flush()

    def pump(self, until, timeout=5):
        """Read and handle events until UNTIL() or the connection ends: UNTIL()'s last value."""
        import h2.events
        end = time.monotonic() + timeout
        while not until() and not self.closed and time.monotonic() < end:
            try:
                self.sock.settimeout(max(0.01, end - time.monotonic()))
                b = self.sock.recv(65536)
            except socket.timeout:
                break
            except OSError:
                self.closed = True
                break
            if not b:
                self.closed = True
                break
            for ev in self.conn.receive_data(b):
                sid = getattr(ev, "stream_id", None)
                if isinstance(ev, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                    self.headers.setdefault(sid, {}).update(dict(ev.headers))
                elif isinstance(ev, h2.events.DataReceived):
                    self.data[sid] = self.data.get(sid, b"") + ev.data
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, sid)
                elif isinstance(ev, h2.events.StreamReset):
                    self.reset[sid] = ev.error_code
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    self.closed = True
                if isinstance(ev, h2.events.StreamEnded):
                    self.ended.add(sid)
            try:
                self.flush()
            except OSError:
                self.closed = True
        return until()

    def status(self, sid, timeout=5):
        """The stream's grpc-status (a string), or None."""
        self.pump(lambda: sid in self.ended or sid in self.reset, timeout)
        return self.headers.get(sid, {}).get("grpc-status")

    def wait_closed(self, timeout):
        """Whether the server closed the connection within TIMEOUT seconds."""
        self.pump(lambda: False, timeout)
        return self.closed

    def close(self):
        self.sock.close()
