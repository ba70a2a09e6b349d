#!/usr/bin/python3
"""An NRI runtime emulator: drives an NRI plugin (`cachepin nri`) as containerd's NRI
adaptation does, without containerd.

The wire is hook/nri/nri_wire.h's (containerd/nri pkg/net/multiplex, containerd/ttrpc
channel.go): 8-byte multiplexer frames (connection id, payload length; big-endian) on one
socket, connection 1 the plugin's Plugin service (the runtime calls it), connection 2 the
runtime's Runtime service (the plugin calls RegisterPlugin and UpdateContainers on it); on
each connection a byte stream of ttrpc messages (10-byte header: length, stream id, type,
flags), Request{service, method, payload} and Response{status, payload}. Frames written
here carry at most WRITE_MAX bytes (the Go side's limit on what it reads); frames of any
size are read.

The messages are hook/nri/proto's (api.proto, request.proto, status.proto), compiled at run
time with `python3 -m grpc_tools.protoc` into a temporary directory (load_protos()); nothing
generated is kept in the tree. Debian 12's grpc_tools (1.14, protoc 3.5.1) writes each
top-level enum value as a module constant, and api.proto v0.12's `Field.None` would be
`None = 0`, a syntax error: such a line (a Python keyword) is commented out, nothing else.

What the runtime does, from containerd/nri pkg/adaptation (v0.8.0, what containerd 2.1
runs; v0.12.2, the newest), and so the emulator:
  - the two forms: the plugin dials the runtime's socket (listen(), the plugin started with
    `--socket PATH`), or the runtime starts it with one end of a socketpair as fd 3 and an
    environment of exactly NRI_PLUGIN_SOCKET=3, NRI_PLUGIN_NAME, NRI_PLUGIN_IDX
    (start_plugin(..., prelaunched=True));
  - RegisterPlugin answered (a dialled plugin's name and index checked as the runtime
    checks them: v0.8 a non-empty name, v0.12 CheckPluginName's [a-zA-Z0-9_.+-]; two digits;
    a pre-launched plugin's are not: the runtime named it),
    then Configure (config, runtime name and version, registration and request timeouts in
    ms, v0.12 also NRI_version), its events mask recorded (0 means every event; a bit past
    the style's valid events fails the plugin), then Synchronize;
  - Synchronize in parts (`more`, NRI v0.9+): a part before the last must be answered
    with more = true and no update, or the runtime gives up on the plugin;
  - each event only when the plugin subscribed to it; CreateContainer, UpdateContainer,
    StopContainer through their methods; the other events the v0.8 way (StateChange with
    the Event) or the v0.12 way (the dedicated method; the first Unimplemented answer to
    any of RunPodSandbox, PostUpdatePodSandbox, StopPodSandbox, RemovePodSandbox,
    PostCreateContainer, StartContainer, PostStartContainer, PostUpdateContainer,
    RemoveContainer wraps the plugin for the rest of its connection: from then on each of
    those goes to StateChange directly, pkg/adaptation/plugin_type.go's wrapOrigImpl);
    UpdatePodSandbox has no StateChange fallback;
  - a request timeout (2 s by default): the call returns DEADLINE_EXCEEDED, "timed out".
    The runtime takes that (and a closed connection, and a failed Synchronize) as fatal:
    it closes the plugin's connection, and kills a plugin it started (on_fatal="close",
    the default); on_fatal="keep" keeps the connection (a late answer is dropped, kept in
    .late).
  - Shutdown: the emulator can send it; neither NRI version ever does (a runtime that goes
    closes the socket).

As a library (tests/nri/emu_tests.py):

    emu = Emu(style="v0.8")
    path = emu.listen()
    emu.start_plugin([BIN, "nri", "--socket", path, "--config", CFG])
    emu.connect()                                   # registered, configured, synchronized
    p = pod("pod1", annotations={"cachepin.io/cpus": "1"})
    c = container("ctr1", p, cgroups_path="/emu/ctr1", state="CREATED")
    code, message, resp = emu.create(p, c)
    emu.stop(p, c); emu.remove(p, c)
    emu.cleanup()

As a command (manual runs; `nri_emu.py --help`):

    nri_emu.py --style v0.12 -- build/cachepin nri --config cfg.json
"""

import argparse
import collections
import importlib
import importlib.util
import json
import keyword
import os
import re
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "hook", "nri", "proto"))

MUX_HEADER = struct.Struct(">II")  # connection id, payload length
TTRPC_HEADER = struct.Struct(">IIBB")  # length, stream id, type, flags
PLUGIN_CONN, RUNTIME_CONN = 1, 2
REQUEST, RESPONSE, DATA = 1, 2, 3
MESSAGE_MAX = 4 << 20  # ttrpc's messageLengthMax
WRITE_MAX = 4096  # bytes of payload per frame written
PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin"
RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime"

# gRPC status codes, as ttrpc carries them.
OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED = 0, 1, 2, 3, 4
RESOURCE_EXHAUSTED, FAILED_PRECONDITION, UNIMPLEMENTED, INTERNAL, UNAVAILABLE = 8, 9, 12, 13, 14
CODE_NAMES = {OK: "OK", CANCELLED: "CANCELLED", UNKNOWN: "UNKNOWN", INVALID_ARGUMENT: "INVALID_ARGUMENT",
              DEADLINE_EXCEEDED: "DEADLINE_EXCEEDED", 5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED",
              RESOURCE_EXHAUSTED: "RESOURCE_EXHAUSTED", FAILED_PRECONDITION: "FAILED_PRECONDITION", 10: "ABORTED",
              11: "OUT_OF_RANGE", UNIMPLEMENTED: "UNIMPLEMENTED", INTERNAL: "INTERNAL", UNAVAILABLE: "UNAVAILABLE"}

STYLES = ("v0.8", "v0.12")
# Event.LAST of each style's api.proto: the runtime refuses a mask with bits at or past it.
LAST_EVENT = {"v0.8": 12, "v0.12": 15}
NRI_VERSION = {"v0.8": "", "v0.12": "v0.12.2"}

# The events with a dedicated method in v0.12 that falls back to StateChange on
# Unimplemented (pkg/adaptation/plugin_type.go), by Event name.
FALLBACK_METHODS = {
    "RUN_POD_SANDBOX": "RunPodSandbox",
    "POST_UPDATE_POD_SANDBOX": "PostUpdatePodSandbox",
    "STOP_POD_SANDBOX": "StopPodSandbox",
    "REMOVE_POD_SANDBOX": "RemovePodSandbox",
    "POST_CREATE_CONTAINER": "PostCreateContainer",
    "START_CONTAINER": "StartContainer",
    "POST_START_CONTAINER": "PostStartContainer",
    "POST_UPDATE_CONTAINER": "PostUpdateContainer",
    "REMOVE_CONTAINER": "RemoveContainer",
}
POD_EVENTS = ("RUN_POD_SANDBOX", "UPDATE_POD_SANDBOX", "POST_UPDATE_POD_SANDBOX", "STOP_POD_SANDBOX",
              "REMOVE_POD_SANDBOX")


class Unavailable(Exception):
    """A prerequisite is missing (grpc_tools, the protos): a test says skipped."""


class EmuError(Exception):
    """The emulator could not do what it was asked (no connection, no registration)."""


# ---------------------------------------------------------------------------- protos

_protos = None


class _Protos:
    def __init__(self, api, request, status, directory):
        self.api, self.request, self.status, self.dir = api, request, status, directory


def load_protos(proto_dir=PROTO_DIR):
    """api_pb2, request_pb2 and status_pb2 from PROTO_DIR's .proto files, generated once per
    process into a temporary directory (removed at exit)."""
    global _protos
    if _protos is not None:
        return _protos
    for mod in ("grpc_tools.protoc", "google.protobuf"):
        try:
            found = importlib.util.find_spec(mod) is not None
        except ImportError:
            found = False
        if not found:
            raise Unavailable(f"python3-grpc-tools and python3-protobuf are needed (no {mod})")
    files = [os.path.join(proto_dir, f) for f in ("api.proto", "request.proto", "status.proto")]
    for f in files:
        if not os.path.isfile(f):
            raise Unavailable(f"{f} is missing")
    out = tempfile.mkdtemp(prefix="nri-emu-pb.")
    import atexit
    atexit.register(shutil.rmtree, out, True)
    r = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I" + proto_dir, "--python_out=" + out] + files,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise EmuError(f"grpc_tools.protoc failed on {proto_dir}: {r.stderr.strip()}")
    # protoc 3.5's module constants for enum values: one that is a Python keyword
    # (api.proto's Field.None) is not a valid statement.
    path = os.path.join(out, "api_pb2.py")
    with open(path) as f:
        text = f.read()
    text = re.sub(r"^([A-Za-z_][A-Za-z0-9_]*) = (-?[0-9]+)$",
                  lambda m: ("# " + m.group(0) + "  (a Python keyword)") if keyword.iskeyword(m.group(1)) else m.group(0),
                  text, flags=re.M)
    with open(path, "w") as f:
        f.write(text)
    sys.path.insert(0, out)
    try:
        status = importlib.import_module("status_pb2")
        request = importlib.import_module("request_pb2")
        api = importlib.import_module("api_pb2")
    finally:
        sys.path.remove(out)
    _protos = _Protos(api, request, status, out)
    return _protos


def api():
    return load_protos().api


def event_value(name):
    """The Event enum's value of NAME ('START_CONTAINER', 'StartContainer' or a number)."""
    if isinstance(name, int):
        return name
    e = api().Event
    if name in e.keys():
        return e.Value(name)
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", name).upper()
    return e.Value(snake)


def event_name(value):
    return api().Event.Name(event_value(value))


def event_bit(name):
    """The bit of event NAME in ConfigureResponse.events: 1 << (event - 1)."""
    return 1 << (event_value(name) - 1)


def event_mask(*names):
    m = 0
    for n in names:
        m |= event_bit(n)
    return m


def mask_names(mask):
    return [api().Event.Name(v) for v in range(1, 31) if mask & (1 << (v - 1)) and v in api().Event.values()]


# ---------------------------------------------------------------------------- builders

STATES = ("UNKNOWN", "CREATED", "PAUSED", "RUNNING", "STOPPED")


def pod(id, name=None, namespace="default", uid=None, annotations=None, labels=None, cgroup_parent=None, pid=0,
        runtime_handler=""):
    """A PodSandbox: its annotations (a dict), linux.cgroup_parent, pid."""
    a = api()
    p = a.PodSandbox(id=id, name=name or id, namespace=namespace, uid=uid or "uid-" + id, pid=pid,
                     runtime_handler=runtime_handler)
    p.annotations.update(annotations or {})
    p.labels.update(labels or {})
    if cgroup_parent is not None:
        p.linux.cgroup_parent = cgroup_parent
    return p


def container(id, pod=None, name=None, annotations=None, cgroups_path=None, state="CREATED", pid=0, quota=None,
              period=None, cpus=None, mems=None, shares=None, labels=None):
    """A Container of POD: its annotations (a dict), linux.cgroupsPath (default: the pod's
    cgroup_parent/ID when the pod has one), linux.resources.cpu (quota, period, cpus, mems,
    shares: None leaves one out), its state (CREATED, RUNNING, STOPPED, UNKNOWN, PAUSED, or
    the enum's value) and pid."""
    a = api()
    if isinstance(state, str):
        state = a.ContainerState.Value("CONTAINER_" + state.upper())
    c = a.Container(id=id, pod_sandbox_id=pod.id if pod is not None else "", name=name or id, state=state, pid=pid)
    c.annotations.update(annotations or {})
    c.labels.update(labels or {})
    if cgroups_path is None and pod is not None and pod.HasField("linux") and pod.linux.cgroup_parent:
        cgroups_path = pod.linux.cgroup_parent.rstrip("/") + "/" + id
    if cgroups_path is not None:
        c.linux.cgroups_path = cgroups_path
    set_cpu(c.linux.resources.cpu if any(v is not None for v in (quota, period, cpus, mems, shares)) else None,
            quota=quota, period=period, cpus=cpus, mems=mems, shares=shares)
    return c


def set_cpu(cpu, quota=None, period=None, cpus=None, mems=None, shares=None):
    """Fill a LinuxCPU (None: nothing to fill)."""
    if cpu is None:
        return None
    if quota is not None:
        cpu.quota.value = quota
    if period is not None:
        cpu.period.value = period
    if shares is not None:
        cpu.shares.value = shares
    if cpus is not None:
        cpu.cpus = cpus
    if mems is not None:
        cpu.mems = mems
    return cpu


def resources(quota=None, period=None, cpus=None, mems=None, shares=None):
    """A LinuxResources with only its cpu part, as an UpdateContainer carries it."""
    r = api().LinuxResources()
    set_cpu(r.cpu, quota=quota, period=period, cpus=cpus, mems=mems, shares=shares)
    return r


# ---------------------------------------------------------------------------- results


class Raw:
    """A request already serialized, for bytes no message object makes (a map key given
    twice on the wire): pass it to call() or post() as the request."""

    def __init__(self, data):
        self.data = data

    def SerializeToString(self):
        return self.data


class Result(collections.namedtuple("Result", "code message response")):
    """A call's outcome: CODE (a gRPC code; None when nothing was sent: an event the
    plugin did not subscribe to), MESSAGE (the status message), RESPONSE (the decoded
    response message, when OK)."""

    __slots__ = ()

    @property
    def ok(self):
        return self.code == OK

    @property
    def timed_out(self):
        return self.code == DEADLINE_EXCEEDED

    @property
    def unimplemented(self):
        return self.code == UNIMPLEMENTED

    @property
    def sent(self):
        return self.code is not None

    def __str__(self):
        if self.code is None:
            return f"not sent ({self.message})"
        name = CODE_NAMES.get(self.code, str(self.code))
        return name if self.code == OK else f"{name}: {self.message}"


class SyncResult:
    """A Synchronize: PARTS (one Result per part sent), UPDATES (the last part's
    ContainerUpdates), ERROR (why the runtime would give up on the plugin, or None)."""

    def __init__(self):
        self.parts, self.updates, self.error = [], [], None

    @property
    def ok(self):
        return self.error is None

    def update_of(self, container_id):
        for u in self.updates:
            if u.container_id == container_id:
                return u
        return None

    def __repr__(self):
        return f"SyncResult(parts={[str(p) for p in self.parts]}, updates={len(self.updates)}, error={self.error!r})"


class Call:
    """One call made (Emu.calls): METHOD (what went on the wire: StateChange for an event
    sent that way), EVENT (the Event name it carried, for an event), RESULT, SECONDS."""

    def __init__(self, method, event, result, seconds):
        self.method, self.event, self.result, self.seconds = method, event, result, seconds

    def __repr__(self):
        ev = f" ({self.event})" if self.event and self.event != self.method else ""
        return f"Call({self.method}{ev}: {self.result}, {self.seconds * 1000:.1f} ms)"


# ---------------------------------------------------------------------------- connection


class _Pending:
    def __init__(self):
        self.done = threading.Event()
        self.code, self.message, self.payload = None, "", b""


class Connection:
    """One plugin's socket: the reader (frames in, responses matched, the Runtime service
    answered) and the writer (a queue, as ttrpc's sender), each a thread."""

    def __init__(self, sock, style, trace, external=True):
        self.sock = sock
        self.external = external  # dialled: its RegisterPlugin's name and index are checked
        self.sock.setblocking(False)
        self.style = style
        self.trace = trace
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.reading = threading.Event()  # cleared: the reader stops reading ...
        self.reading.set()
        self.paused = threading.Event()  # ... and says it did
        self.registered = threading.Event()
        self.registration = None  # (name, idx, nri_version)
        self.registration_error = None
        self.update_requests = []  # UpdateContainersRequest the plugin sent
        self.pending = {}
        self.late = []  # (stream, code, message): answers nobody waited for any more
        self.next_stream = 1
        self.frames_dropped = 0
        self.protocol_error = None
        self.close_reason = None
        self.wrapped = False  # v0.12: the StateChange fallback is on for this connection
        self.events = None  # the events mask Configure answered (after its 0 -> all rule)
        self._mux = bytearray()  # frames read, not yet whole
        self._in = {PLUGIN_CONN: bytearray(), RUNTIME_CONN: bytearray()}
        self._out = collections.deque()
        self._out_ready = threading.Condition(self.lock)
        self._reader = threading.Thread(target=self._read_loop, name="nri-emu-reader", daemon=True)
        self._writer = threading.Thread(target=self._write_loop, name="nri-emu-writer", daemon=True)
        self._reader.start()
        self._writer.start()

    # -- writing

    def send(self, conn, stream, mtype, payload, flags=0):
        """Queue one ttrpc message on connection CONN, cut into frames."""
        if len(payload) > MESSAGE_MAX:
            raise EmuError(f"a message of {len(payload)} bytes: more than ttrpc's {MESSAGE_MAX}")
        data = TTRPC_HEADER.pack(len(payload), stream, mtype, flags) + payload
        out = bytearray()
        for i in range(0, len(data), WRITE_MAX):
            chunk = data[i:i + WRITE_MAX]
            out += MUX_HEADER.pack(conn, len(chunk)) + chunk
        with self.lock:
            self._out.append(bytes(out))
            self._out_ready.notify()

    def send_raw(self, data):
        """Queue bytes as they are (a test's malformed frame)."""
        with self.lock:
            self._out.append(bytes(data))
            self._out_ready.notify()

    def _write_loop(self):
        while True:
            with self.lock:
                while not self._out and not self.closed.is_set():
                    self._out_ready.wait(0.1)
                if self.closed.is_set():
                    return
                data = self._out.popleft()
            view = memoryview(data)
            while view and not self.closed.is_set():
                try:
                    n = self.sock.send(view)
                    view = view[n:]
                except BlockingIOError:
                    select.select([], [self.sock], [], 0.1)
                except OSError as e:
                    self._lost(f"write: {e.strerror}")
                    return

    # -- reading

    def _read_loop(self):
        while not self.closed.is_set():
            if not self.reading.is_set():
                self.paused.set()
                self.reading.wait(0.1)
                continue
            self.paused.clear()
            try:
                r, _, _ = select.select([self.sock], [], [], 0.05)
            except (OSError, ValueError):
                return
            if not r or not self.reading.is_set():
                continue
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError as e:
                self._lost(f"read: {e.strerror}")
                return
            if not data:
                self._lost("the plugin closed it")
                return
            try:
                self._feed(data)
            except EmuError as e:
                self.protocol_error = str(e)
                self._lost(f"protocol error: {e}")
                return

    def _feed(self, data):
        buf = self._mux
        buf += data
        while len(buf) >= MUX_HEADER.size:
            conn, length = MUX_HEADER.unpack_from(buf)
            if length > TTRPC_HEADER.size + MESSAGE_MAX:
                raise EmuError(f"a frame of {length} bytes on connection {conn}")
            if len(buf) < MUX_HEADER.size + length:
                break
            payload = bytes(buf[MUX_HEADER.size:MUX_HEADER.size + length])
            del buf[:MUX_HEADER.size + length]
            if conn not in self._in:
                self.frames_dropped += 1  # as the Go reader drops a frame nobody opened
                continue
            self._in[conn] += payload
            self._messages(conn)

    def _messages(self, conn):
        b = self._in[conn]
        while len(b) >= TTRPC_HEADER.size:
            length, stream, mtype, flags = TTRPC_HEADER.unpack_from(b)
            if length > MESSAGE_MAX:
                raise EmuError(f"a ttrpc message of {length} bytes on connection {conn}")
            if len(b) < TTRPC_HEADER.size + length:
                break
            payload = bytes(b[TTRPC_HEADER.size:TTRPC_HEADER.size + length])
            del b[:TTRPC_HEADER.size + length]
            self._message(conn, stream, mtype, flags, payload)

    def _message(self, conn, stream, mtype, flags, payload):
        P = load_protos()
        if conn == PLUGIN_CONN:
            if mtype != RESPONSE:
                raise EmuError(f"a ttrpc message of type {mtype} on the plugin's connection")
            resp = P.request.Response()
            resp.ParseFromString(payload)
            with self.lock:
                p = self.pending.pop(stream, None)
            if p is None:  # timed out, or posted without waiting
                self.late.append((stream, resp.status.code, resp.status.message))
                self.trace(f"late answer on stream {stream}: code {resp.status.code}")
                return
            p.code, p.message, p.payload = resp.status.code, resp.status.message, resp.payload
            p.done.set()
            return
        if mtype != REQUEST:
            raise EmuError(f"a ttrpc message of type {mtype} on the runtime's connection")
        req = P.request.Request()
        req.ParseFromString(payload)
        code, message, body = self._serve_runtime(req)
        resp = P.request.Response(payload=body.SerializeToString() if body is not None else b"")
        resp.status.code = code
        resp.status.message = message
        self.send(RUNTIME_CONN, stream, RESPONSE, resp.SerializeToString())

    def _serve_runtime(self, req):
        a = api()
        if req.service != RUNTIME_SERVICE:
            return UNIMPLEMENTED, f"service {req.service}", None
        if req.method == "RegisterPlugin":
            r = a.RegisterPluginRequest()
            r.ParseFromString(req.payload)
            why = check_registration(self.style, r.plugin_name, r.plugin_idx) if self.external else None
            self.trace(f"RegisterPlugin {r.plugin_idx}-{r.plugin_name}" + (f": refused, {why}" if why else ""))
            if why:
                self.registration_error = why
                self.registered.set()
                return UNKNOWN, why, a.Empty()
            nri_version = getattr(r, "NRI_version", "")
            self.registration = (r.plugin_name, r.plugin_idx, nri_version)
            self.registered.set()
            return OK, "", a.Empty()
        if req.method == "UpdateContainers":
            r = a.UpdateContainersRequest()
            r.ParseFromString(req.payload)
            self.update_requests.append(r)
            return OK, "", a.UpdateContainersResponse()
        return UNIMPLEMENTED, f"service {req.service}: method {req.method}", None

    # -- calls

    def post(self, method, request, timeout, service=PLUGIN_SERVICE, wait=False):
        """Send a request of METHOD: its stream id (its answer, when one comes, in .late),
        or with WAIT (stream, the _Pending its answer fills)."""
        P = load_protos()
        with self.lock:
            stream = self.next_stream
            self.next_stream += 2
            p = self.pending[stream] = _Pending() if wait else None
        req = P.request.Request(service=service, method=method, payload=request.SerializeToString(),
                                timeout_nano=int(timeout * 1e9))
        self.send(PLUGIN_CONN, stream, REQUEST, req.SerializeToString())
        return (stream, p) if wait else stream

    def call(self, method, request, response_type, timeout, service=PLUGIN_SERVICE):
        """Call METHOD and wait at most TIMEOUT seconds: a Result."""
        if self.closed.is_set():
            return Result(UNAVAILABLE, f"ttrpc: closed ({self.close_reason})", None)
        stream, p = self.post(method, request, timeout, service, wait=True)
        deadline = time.monotonic() + timeout
        while not p.done.wait(0.05):
            if self.closed.is_set():
                with self.lock:
                    self.pending.pop(stream, None)
                return Result(UNAVAILABLE, f"ttrpc: closed ({self.close_reason})", None)
            if time.monotonic() >= deadline:
                with self.lock:
                    waited = self.pending.pop(stream, None)
                if waited is not None:
                    return Result(DEADLINE_EXCEEDED, "timed out", None)
                p.done.wait(1)  # the reader took it just now
                break
        if p.code != OK:
            return Result(p.code, p.message, None)
        resp = response_type()
        try:
            resp.ParseFromString(p.payload)
        except Exception as e:  # noqa: BLE001 (the decoder's errors vary)
            return Result(INTERNAL, f"cannot decode {response_type.DESCRIPTOR.name}: {e}", None)
        return Result(OK, p.message, resp)

    # -- the end

    def _lost(self, why):
        if self.close_reason is None:
            self.close_reason = why
            self.trace(f"connection ended: {why}")
        self.closed.set()

    def close(self, why="closed by the emulator"):
        self._lost(why)
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        for t in (self._reader, self._writer):
            if t is not threading.current_thread():
                t.join(2)
        self.sock.close()


def check_registration(style, name, idx):
    """Why the runtime refuses a dialled plugin's RegisterPlugin (None: it does not)."""
    if style == "v0.12":
        if not name:
            return "invalid plugin name: name is empty"
        bad = [ch for ch in name if not (ch.isascii() and (ch.isalnum() or ch in "-_.+"))]
        if bad:
            return f"invalid plugin name {name!r}: contains invalid character {bad[0]!r}"
    elif not name:
        return "invalid (empty) plugin name"
    if len(idx) != 2 or not all("0" <= ch <= "9" for ch in idx):
        return f"invalid plugin index {idx!r}, must be 2 digits"
    return None


# ---------------------------------------------------------------------------- the runtime


class Emu:
    """The runtime side of NRI for one plugin at a time (a new connection replaces the
    last: a dialled plugin that dials again).

    style            "v0.8" (StateChange for the events without a method of their own)
                     or "v0.12" (the dedicated methods, StateChange on Unimplemented)
    request_timeout  seconds a call waits for its answer (the runtime's 2 s)
    registration_timeout  seconds RegisterPlugin is waited for (the runtime's 5 s)
    on_fatal         "close": a timed-out call, a failed Synchronize or a refused
                     registration closes the connection and kills a plugin the emulator
                     started pre-launched, as the runtime does; "keep": nothing closed
    honor_events     send an event only when the plugin subscribed to it (as the runtime)
    workdir          where the socket and the plugin's log go (default: a new temporary
                     directory, removed by cleanup())
    """

    def __init__(self, style="v0.8", request_timeout=2.0, registration_timeout=5.0, runtime_name="nri-emu",
                 runtime_version="0.1", config="", on_fatal="close", honor_events=True, workdir=None, trace=None):
        if style not in STYLES:
            raise ValueError(f"style {style!r}: one of {', '.join(STYLES)}")
        if on_fatal not in ("close", "keep"):
            raise ValueError(f"on_fatal {on_fatal!r}: close or keep")
        load_protos()
        self.style = style
        self.request_timeout = request_timeout
        self.registration_timeout = registration_timeout
        self.runtime_name, self.runtime_version, self.config = runtime_name, runtime_version, config
        self.on_fatal = on_fatal
        self.honor_events = honor_events
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="nri-emu.", dir="/tmp")
        self.trace_lines = []
        self._trace_out = trace if trace is not None else bool(os.environ.get("NRI_EMU_TRACE"))
        self.socket_path = None
        self.listener = None
        self.proc = None
        self.prelaunched = False
        self.log_path = None
        self._log_file = None
        self.conn = None
        self.connections = []  # every connection so far, the current one last
        self.calls = []  # Call records of the current and earlier connections
        self.configure_error = None

    # -- tracing

    def trace(self, line):
        line = f"{time.monotonic():.3f} {line}"
        self.trace_lines.append(line)
        if self._trace_out:
            print("nri-emu: " + line, file=sys.stderr, flush=True)

    # -- the plugin's process and connection

    def listen(self, path=None):
        """Listen on PATH (default: WORKDIR/nri.sock) for a dialling plugin; the path."""
        self.socket_path = path or os.path.join(self.workdir, "nri.sock")
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.listener.bind(self.socket_path)
        self.listener.listen(8)
        return self.socket_path

    def start_plugin(self, argv, prelaunched=False, name="cachepin", idx="50", env=None, log=None):
        """Start ARGV, its stdout and stderr appended to LOG (default WORKDIR/plugin.log).
        Pre-launched: it gets one end of a socketpair as fd 3 and the runtime's
        environment, exactly NRI_PLUGIN_SOCKET=3, NRI_PLUGIN_NAME=NAME, NRI_PLUGIN_IDX=IDX
        (ENV's variables added); dialled: the emulator's environment (ENV's added), and
        ARGV names the socket itself (listen()'s path)."""
        self.log_path = log or os.path.join(self.workdir, "plugin.log")
        self._log_file = open(self.log_path, "ab")
        if prelaunched:
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            penv = {"NRI_PLUGIN_SOCKET": "3", "NRI_PLUGIN_NAME": name, "NRI_PLUGIN_IDX": idx}
            penv.update(env or {})
            fd = theirs.fileno()

            def to_fd3():
                if fd == 3:
                    os.set_inheritable(3, True)
                else:
                    os.dup2(fd, 3)  # dup2 leaves 3 inheritable

            self.proc = subprocess.Popen(argv, env=penv, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                         stderr=subprocess.STDOUT, close_fds=False, preexec_fn=to_fd3)
            theirs.close()
            self.prelaunched = True
            self._adopt(mine, external=False)
        else:
            penv = dict(os.environ)
            penv.update(env or {})
            self.proc = subprocess.Popen(argv, env=penv, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                         stderr=subprocess.STDOUT)
            self.prelaunched = False
        self.trace(f"started {' '.join(shlex.quote(a) for a in argv)} (pid {self.proc.pid}"
                   f"{', pre-launched' if prelaunched else ''})")
        return self.proc

    def _adopt(self, sock, external=True):
        if self.conn is not None and not self.conn.closed.is_set():
            self.conn.close("replaced by a new connection")
        self.conn = Connection(sock, self.style, self.trace, external)
        self.connections.append(self.conn)
        return self.conn

    def accept(self, timeout=5.0):
        """Wait for the plugin to dial: True when it did."""
        if self.listener is None:
            raise EmuError("accept: listen() first")
        self.listener.settimeout(timeout)
        try:
            s, _ = self.listener.accept()
        except socket.timeout:
            return False
        self.trace("a plugin connected")
        self._adopt(s)
        return True

    def wait_registered(self, timeout=None):
        """Wait for RegisterPlugin: (name, idx).  Raises EmuError when it does not come or is
        refused (the connection closed as the runtime closes it, on_fatal "close")."""
        c = self._need_conn()
        if not c.registered.wait(self.registration_timeout if timeout is None else timeout):
            self._fatal("plugin registration timed out")
            raise EmuError("plugin registration timed out")
        if c.registration_error:
            self._fatal(f"failed to register plugin: {c.registration_error}")
            raise EmuError(f"registration refused: {c.registration_error}")
        return c.registration[:2]

    @property
    def registration(self):
        """(name, idx, NRI_version) the current connection registered with, or None."""
        return self.conn.registration if self.conn else None

    @property
    def events(self):
        """The events mask of the current connection's Configure, or None."""
        return self.conn.events if self.conn else None

    def connect(self, pods=(), ctrs=(), parts=1, accept_timeout=5.0):
        """The runtime's start of a plugin: accepted (dialled form, when no connection
        is open), registered, configured, synchronized (PODS and CTRS in PARTS).  The
        SyncResult; raises EmuError where a step fails."""
        if self.conn is None or self.conn.closed.is_set():
            if self.prelaunched and self.conn is not None:
                raise EmuError("connect: the pre-launched plugin's connection is closed")
            if not self.accept(accept_timeout):
                raise EmuError(f"connect: no plugin dialled {self.socket_path} in {accept_timeout} s")
        self.wait_registered()
        r = self.configure()
        if not r.ok or self.configure_error:
            raise EmuError(f"Configure: {self.configure_error or r}")
        s = self.sync(pods, ctrs, parts=parts)
        if not s.ok:
            raise EmuError(f"Synchronize: {s.error}")
        return s

    def _need_conn(self):
        if self.conn is None:
            raise EmuError("no plugin connection")
        return self.conn

    def _fatal(self, why):
        self.trace(f"fatal: {why}")
        if self.on_fatal != "close":
            return
        if self.conn is not None and not self.conn.closed.is_set():
            self.conn.close(f"closed by the runtime: {why}")
        if self.prelaunched and self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    # -- calls

    def call(self, method, request, timeout=None, service=PLUGIN_SERVICE, event=None):
        """Call METHOD of the Plugin service with REQUEST (a message): a Result whose
        response is decoded as the method's output type (api.proto's service)."""
        c = self._need_conn()
        svc = api().DESCRIPTOR.services_by_name.get(service.rsplit(".", 1)[-1])
        m = svc.methods_by_name.get(method) if svc else None
        out = getattr(api(), m.output_type.name) if m else api().Empty
        t0 = time.monotonic()
        r = c.call(method, request, out, self.request_timeout if timeout is None else timeout, service)
        secs = time.monotonic() - t0
        self.calls.append(Call(method, event, r, secs))
        self.trace(f"{method}{' (' + event + ')' if event and event != method else ''}: {r} in {secs * 1000:.1f} ms")
        if r.code in (DEADLINE_EXCEEDED, UNAVAILABLE):
            self._fatal(f"failed to handle {method} request: {r.message}")
        return r

    def post(self, method, request, service=PLUGIN_SERVICE):
        """Send METHOD's REQUEST and wait for nothing (a flood, back-pressure): its stream
        id; an answer read later goes to the connection's .late list, (stream, code,
        message)."""
        c = self._need_conn()
        if c.closed.is_set():
            raise EmuError(f"post {method}: the connection is closed ({c.close_reason})")
        return c.post(method, request, self.request_timeout, service)

    def configure(self, config=None):
        """Configure: the Result; the answered mask in .events (0 read as every event, as
        the runtime reads it)."""
        a = api()
        req = a.ConfigureRequest(config=self.config if config is None else config, runtime_name=self.runtime_name,
                                 runtime_version=self.runtime_version,
                                 registration_timeout=int(self.registration_timeout * 1000),
                                 request_timeout=int(self.request_timeout * 1000))
        if self.style == "v0.12":
            setattr(req, "NRI_version", NRI_VERSION["v0.12"])
        self.configure_error = None
        r = self.call("Configure", req)
        if r.ok:
            valid = (1 << (LAST_EVENT[self.style] - 1)) - 1
            mask = r.response.events
            if mask == 0:
                mask = valid
            elif mask & ~valid:
                self.configure_error = f"invalid plugin events: 0x{mask & ~valid:x}"
                self._fatal(self.configure_error)
            self.conn.events = mask
        else:
            self.configure_error = f"failed to configure plugin: {r}"
            self._fatal(self.configure_error)
        return r

    def subscribed(self, event):
        mask = self.events
        return mask is not None and bool(mask & event_bit(event))

    def sync(self, pods=(), ctrs=(), parts=1, chunks=None):
        """Synchronize with PODS and CTRS, in PARTS messages (NRI v0.9+'s `more`: the
        pods and the containers each cut in PARTS; a part may be empty when there are
        fewer of them than parts), or in CHUNKS, a list of (pods, ctrs) of a test's own.  A part before the last answered with an update or without
        `more` is what the runtime gives up on (the connection closed)."""
        a = api()
        pods, ctrs = list(pods), list(ctrs)
        if chunks is None:
            parts = max(1, parts)
            pp = -(-len(pods) // parts) if pods else 0
            cp = -(-len(ctrs) // parts) if ctrs else 0
            chunks = [(pods[i * pp:(i + 1) * pp], ctrs[i * cp:(i + 1) * cp]) for i in range(parts)]
        out = SyncResult()
        for i, (ps, cs) in enumerate(chunks):
            more = i < len(chunks) - 1
            req = a.SynchronizeRequest(pods=ps, containers=cs, more=more)
            r = self.call("Synchronize", req)
            out.parts.append(r)
            if not r.ok:
                out.error = f"part {i + 1} of {len(chunks)}: {r}"
                break
            if more and (len(r.response.update) > 0 or r.response.more != more):
                out.error = "plugin does not handle split sync requests"
                break
            if not more:
                out.updates = list(r.response.update)
        if out.error:
            self._fatal(f"failed to synchronize plugin: {out.error}")
        return out

    def create(self, pod, ctr):
        """CreateContainer: (code, message, CreateContainerResponse)."""
        if not self._sendable("CREATE_CONTAINER"):
            return Result(None, "not subscribed", None)
        return self.call("CreateContainer", api().CreateContainerRequest(pod=pod, container=ctr))

    def update(self, pod, ctr, linux_resources=None):
        """UpdateContainer with LINUX_RESOURCES (resources(...); default: the container's)."""
        if not self._sendable("UPDATE_CONTAINER"):
            return Result(None, "not subscribed", None)
        req = api().UpdateContainerRequest(pod=pod, container=ctr)
        if linux_resources is not None:
            req.linux_resources.CopyFrom(linux_resources)
        elif ctr.HasField("linux") and ctr.linux.HasField("resources"):
            req.linux_resources.CopyFrom(ctr.linux.resources)
        return self.call("UpdateContainer", req)

    def stop(self, pod, ctr):
        """StopContainer: (code, message, StopContainerResponse)."""
        if not self._sendable("STOP_CONTAINER"):
            return Result(None, "not subscribed", None)
        return self.call("StopContainer", api().StopContainerRequest(pod=pod, container=ctr))

    def state_change(self, event, pod, ctr=None, timeout=None):
        """StateChange(EVENT) as it is, whatever the style and the mask."""
        ev = api().StateChangeEvent(event=event_value(event), pod=pod)
        if ctr is not None:
            ev.container.CopyFrom(ctr)
        return self.call("StateChange", ev, timeout=timeout, event=event_name(event))

    def event(self, event, pod, ctr=None):
        """EVENT (an Event name: START_CONTAINER or StartContainer) delivered as the
        style's runtime delivers it: CreateContainer, UpdateContainer, StopContainer and,
        under v0.12, UpdatePodSandbox by their methods; the others as StateChange (v0.8)
        or by their dedicated method, StateChange once the plugin answered Unimplemented
        to one of them (v0.12)."""
        name = event_name(event)
        if name == "CREATE_CONTAINER":
            return self.create(pod, ctr)
        if name == "UPDATE_CONTAINER":
            return self.update(pod, ctr)
        if name == "STOP_CONTAINER":
            return self.stop(pod, ctr)
        if name == "VALIDATE_CONTAINER_ADJUSTMENT":
            raise EmuError("ValidateContainerAdjustment: call() it with its request")
        if self.style == "v0.8" and event_value(name) >= LAST_EVENT["v0.8"]:
            raise EmuError(f"{name}: no such event in NRI v0.8")
        if not self._sendable(name):
            return Result(None, "not subscribed", None)
        if self.style == "v0.8":
            return self.state_change(name, pod, ctr if name not in POD_EVENTS else None)
        a = api()
        if name == "UPDATE_POD_SANDBOX":
            return self.call("UpdatePodSandbox", a.UpdatePodSandboxRequest(pod=pod), event=name)
        method = FALLBACK_METHODS[name]
        if not self.conn.wrapped:
            req = getattr(a, method + "Request")(pod=pod)
            if name not in POD_EVENTS and ctr is not None:
                req.container.CopyFrom(ctr)
            r = self.call(method, req, event=name)
            if not r.unimplemented:
                return r
            self.conn.wrapped = True
            self.trace(f"{method} unimplemented: StateChange from now on for this plugin")
        return self.state_change(name, pod, ctr if name not in POD_EVENTS else None)

    def _sendable(self, event):
        self._need_conn()
        return not self.honor_events or self.subscribed(event)

    # The events by name.
    def run_pod(self, pod):
        return self.event("RUN_POD_SANDBOX", pod)

    def update_pod(self, pod):
        return self.event("UPDATE_POD_SANDBOX", pod)

    def post_update_pod(self, pod):
        return self.event("POST_UPDATE_POD_SANDBOX", pod)

    def stop_pod(self, pod):
        return self.event("STOP_POD_SANDBOX", pod)

    def remove_pod(self, pod):
        return self.event("REMOVE_POD_SANDBOX", pod)

    def post_create(self, pod, ctr):
        return self.event("POST_CREATE_CONTAINER", pod, ctr)

    def start(self, pod, ctr):
        return self.event("START_CONTAINER", pod, ctr)

    def post_start(self, pod, ctr):
        return self.event("POST_START_CONTAINER", pod, ctr)

    def post_update(self, pod, ctr):
        return self.event("POST_UPDATE_CONTAINER", pod, ctr)

    def remove(self, pod, ctr):
        return self.event("REMOVE_CONTAINER", pod, ctr)

    def shutdown(self, timeout=None):
        """Shutdown (no NRI runtime sends it; a plugin should take it all the same)."""
        return self.call("Shutdown", api().Empty(), timeout=timeout)

    # -- back-pressure

    def stop_reading(self):
        """Read nothing more from the socket (the plugin's answers pile up in it, then its
        writes block); calls are still sent.  Returns once the reader has stopped."""
        c = self._need_conn()
        c.reading.clear()
        if not c.paused.wait(2) and not c.closed.is_set():
            raise EmuError("stop_reading: the reader did not stop")
        self.trace("reading stopped")

    def resume_reading(self):
        self._need_conn().reading.set()
        self.trace("reading resumed")

    # -- the plugin's side

    def plugin_log(self):
        """What the plugin wrote on stdout and stderr so far."""
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def wait_log(self, pattern, count=1, timeout=5.0):
        """Wait until the plugin's log has COUNT lines matching PATTERN (a regular
        expression): True when it does."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            if sum(1 for line in self.plugin_log().splitlines() if rx.search(line)) >= count:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def wait_exit(self, timeout=5.0):
        """The plugin's exit status once it exits within TIMEOUT seconds, else None."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self, sig=signal.SIGTERM, timeout=5.0):
        """Send SIG to the plugin; its exit status, or None when it did not exit."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        return self.wait_exit(timeout)

    def close(self, why="closed by the runtime"):
        """Close the current connection (a runtime that goes away)."""
        if self.conn is not None and not self.conn.closed.is_set():
            self.conn.close(why)

    def cleanup(self):
        """Everything gone: the connection, the plugin (SIGTERM, then SIGKILL), the
        listener, the work directory if it is the emulator's."""
        self.close()
        if self.proc is not None and self.proc.poll() is None:
            if self.terminate(timeout=3) is None:
                self.proc.kill()
                self.proc.wait()
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._own_workdir and not os.environ.get("NRI_EMU_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()


# ---------------------------------------------------------------------------- the command


def to_json(msg):
    from google.protobuf import json_format
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def _kv(words):
    opts, ann = {}, {}
    for w in words:
        k, sep, v = w.partition("=")
        if not sep:
            raise EmuError(f"`{w}`: KEY=VALUE expected")
        (ann if "/" in k or "." in k else opts)[k] = v
    return opts, ann


def run_script(emu, lines, out=sys.stdout):
    """Run the command's language on EMU.
       commands, one a line (`#` comments):
         pod ID [name=N] [parent=CGROUP_PARENT] [KEY=VALUE...]      KEY with a / or .: annotation
         ctr ID POD [path=CGROUPS_PATH] [state=RUNNING] [pid=N] [cpus=L] [mems=L] [quota=N] [period=N]
             [KEY=VALUE...]
         connect [parts=N]          accept, registration, Configure, Synchronize of the pods and
                                    containers so far
         sync [parts=N]             Synchronize again
         create CTR | stop CTR | update CTR [cpus=L] [quota=N] [period=N]
         event NAME CTR-OR-POD      an event as the style sends it (START_CONTAINER, RemoveContainer...)
         state-change NAME CTR-OR-POD
         shutdown | close | stop-reading | resume-reading | sleep SECONDS | log
       Each prints one JSON line (log: the plugin's log so far)."""
    pods, ctrs = {}, {}

    def emit(what, r):
        if isinstance(r, SyncResult):
            d = {"parts": [str(p) for p in r.parts], "updates": [to_json(u) for u in r.updates], "error": r.error}
        elif isinstance(r, Result):
            d = {"code": r.code, "status": str(r), "response": to_json(r.response) if r.response is not None else None}
        else:
            d = r
        print(json.dumps({what: d}), file=out, flush=True)

    def pod_of(cid):
        c = ctrs[cid]
        return pods.get(c.pod_sandbox_id) or pod(c.pod_sandbox_id)

    for raw in lines:
        words = shlex.split(raw, comments=True)
        if not words:
            continue
        cmd, args = words[0], words[1:]
        try:
            if cmd == "pod":
                opts, ann = _kv(args[1:])
                pods[args[0]] = pod(args[0], name=opts.get("name"), annotations=ann, cgroup_parent=opts.get("parent"))
                emit("pod", to_json(pods[args[0]]))
            elif cmd == "ctr":
                opts, ann = _kv(args[2:])
                num = {k: int(opts[k]) for k in ("pid", "quota", "period") if k in opts}
                ctrs[args[0]] = container(args[0], pods.get(args[1]) or pod(args[1]), annotations=ann,
                                          cgroups_path=opts.get("path"), state=opts.get("state", "CREATED"),
                                          cpus=opts.get("cpus"), mems=opts.get("mems"), **num)
                emit("ctr", to_json(ctrs[args[0]]))
            elif cmd == "connect":
                opts, _ = _kv(args)
                emit("connect", emu.connect(pods.values(), ctrs.values(), parts=int(opts.get("parts", 1))))
                emit("registered", {"registration": list(emu.registration), "events": mask_names(emu.events)})
            elif cmd == "sync":
                opts, _ = _kv(args)
                emit("sync", emu.sync(pods.values(), ctrs.values(), parts=int(opts.get("parts", 1))))
            elif cmd in ("create", "stop"):
                emit(cmd, getattr(emu, cmd)(pod_of(args[0]), ctrs[args[0]]))
            elif cmd == "update":
                opts, _ = _kv(args[1:])
                num = {k: int(opts[k]) for k in ("quota", "period") if k in opts}
                emit(cmd, emu.update(pod_of(args[0]), ctrs[args[0]], resources(cpus=opts.get("cpus"), **num)))
            elif cmd in ("event", "state-change"):
                target = args[1]
                p, c = (pod_of(target), ctrs[target]) if target in ctrs else (pods[target], None)
                fn = emu.event if cmd == "event" else emu.state_change
                emit(cmd, fn(args[0], p, c))
            elif cmd == "shutdown":
                emit(cmd, emu.shutdown())
            elif cmd == "close":
                emu.close()
                emit(cmd, "closed")
            elif cmd == "stop-reading":
                emu.stop_reading()
                emit(cmd, "stopped")
            elif cmd == "resume-reading":
                emu.resume_reading()
                emit(cmd, "resumed")
            elif cmd == "sleep":
                time.sleep(float(args[0]))
            elif cmd == "log":
                print(emu.plugin_log(), file=out, end="", flush=True)
            else:
                raise EmuError(f"unknown command `{cmd}`")
        except (EmuError, KeyError, IndexError, ValueError) as e:
            print(json.dumps({"error": f"{raw.strip()}: {e}"}), file=out, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=textwrap.fill("An NRI runtime for one plugin: listens on --socket for the plugin to dial (started "
        "by you, or from the command after --, which then names the same --socket), or starts the plugin "
        "pre-launched (--prelaunch: the command after --); then runs the commands of --script or stdin, "
        "each answered with a JSON line.", 90),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent(run_script.__doc__.split("\n", 1)[1]) + "\nexample:\n  printf 'pod p "
        "cachepin.io/cpus=1\\nctr c p path=/emu/c\\nconnect\\ncreate c\\nstop c\\n' |\n    nri_emu.py --socket "
        "/tmp/nri.sock -- build/cachepin nri --socket /tmp/nri.sock --config cfg.json\n")
    ap.add_argument("--socket", help="listen here (the dial form); default WORKDIR/nri.sock")
    ap.add_argument("--prelaunch", action="store_true", help="start the plugin with a socketpair as fd 3")
    ap.add_argument("--name", default="cachepin", help="NRI_PLUGIN_NAME (pre-launched)")
    ap.add_argument("--idx", default="50", help="NRI_PLUGIN_IDX (pre-launched)")
    ap.add_argument("--style", choices=STYLES, default="v0.8")
    ap.add_argument("--timeout", type=float, default=2.0, help="request timeout, seconds")
    ap.add_argument("--keep", action="store_true", help="on_fatal=keep: never close the plugin")
    ap.add_argument("--script", help="commands from this file (default: stdin)")
    ap.add_argument("--trace", action="store_true", help="every call and frame event on stderr")
    ap.add_argument("plugin", nargs=argparse.REMAINDER, help="-- the plugin's command")
    a = ap.parse_args(argv)
    cmd = a.plugin[1:] if a.plugin[:1] == ["--"] else a.plugin
    try:
        emu = Emu(style=a.style, request_timeout=a.timeout, on_fatal="keep" if a.keep else "close", trace=a.trace)
    except Unavailable as e:
        print(f"nri_emu: {e}", file=sys.stderr)
        return 77
    try:
        if a.prelaunch:
            if not cmd:
                ap.error("--prelaunch needs the plugin's command")
            emu.start_plugin(cmd, prelaunched=True, name=a.name, idx=a.idx)
        else:
            path = emu.listen(a.socket)
            print(json.dumps({"listening": path}), flush=True)
            if cmd:
                emu.start_plugin(cmd)
        lines = open(a.script) if a.script else sys.stdin
        run_script(emu, lines)
        if emu.proc is not None:
            print(emu.plugin_log(), file=sys.stderr, end="")
    finally:
        emu.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
