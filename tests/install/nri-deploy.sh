#!/usr/bin/env bash
# The NRI plugin's node files as `cmake --install` lays them out (docs/kubernetes.md):
# <prefix>/lib/systemd/system/cachepin-nri.service and <prefix>/libexec/cachepin/50-cachepin,
# both naming <prefix>/bin/cachepin nri. Checked: systemd-analyze verify accepts the unit
# with nothing to say; its ExecStart's options are ones `cachepin nri` accepts; and, as
# root, both run for real in a mount namespace where the staged prefix is the prefix and
# /run is empty: the unit's ExecStart under its sandbox's capability set (none) and
# NoNewPrivileges dials the default socket /var/run/nri/nri.sock, and the pre-launched
# script, started as containerd starts it (no environment but NRI_PLUGIN_*, a connected
# socket as fd 3, no stdout or stderr), both send RegisterPlugin as 50-cachepin to a
# fake runtime; when it closes the connection the unit's plugin dials again (until SIGTERM,
# exit 0) and the pre-launched one exits 0 (containerd starts it again). The unit is
# Type=notify with WatchdogSec=: its ExecStart, run the same way with NOTIFY_SOCKET naming
# a datagram socket this test reads and WATCHDOG_USEC set, says nothing before a runtime
# (the NRI emulator, tests/nri/nri_emu.py) has registered it, then READY=1, then
# WATCHDOG=1 while it waits for calls.
#   bash tests/install/nri-deploy.sh BUILD_DIR
# systemd-analyze (systemd) and python3; exit 77 (skipped) without them. The runs need
# root, unshare and setpriv (util-linux): without them they are skipped and said so.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(realpath "$1")
for tool in systemd-analyze python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: needs $tool"; exit 77; }
done
DIR=$(mktemp -d /tmp/cachepin-nri-deploy.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
PREFIX=/usr/local
ROOT=$DIR/root
UNIT_REL=$PREFIX/lib/systemd/system/cachepin-nri.service
UNIT=$ROOT$UNIT_REL
PLUGIN_REL=$PREFIX/libexec/cachepin/50-cachepin
PLUGIN=$ROOT$PLUGIN_REL

DESTDIR=$ROOT cmake --install "$BUILD" --prefix "$PREFIX" >"$DIR/install.log" 2>&1 ||
  { cat "$DIR/install.log"; fail "cmake --install"; finish; exit; }
check "$UNIT_REL installed, not executable" bash -c "[ -f '$UNIT' ] && [ ! -x '$UNIT' ]"
check "$PLUGIN_REL installed, executable" [ -x "$PLUGIN" ]
check "nothing enabled: no .wants link in the staged tree [$(find "$ROOT" -name '*.wants')]" \
  [ -z "$(find "$ROOT" -name '*.wants')" ]
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
check "the unit is Type=notify with a WatchdogSec= [$(grep -E '^(Type|WatchdogSec)=' "$UNIT" | tr '\n' ' ')]" \
  bash -c "grep -qx 'Type=notify' '$UNIT' && grep -qE '^WatchdogSec=[1-9]' '$UNIT'"
check "the unit runs $PREFIX/bin/cachepin nri [$exec_start]" [ "${exec_start%% *}" = "$PREFIX/bin/cachepin" ]
exec_line=$(grep '^exec ' "$PLUGIN")
check "the script execs $PREFIX/bin/cachepin nri [$exec_line]" [ "$exec_line" = "exec $PREFIX/bin/cachepin nri" ]
check "the script is sh (sh -n)" sh -n "$PLUGIN"
# shellcheck disable=SC2086 # ExecStart's words, as systemd splits them (no quotes in it)
out=$("$ROOT"${exec_start%% *} ${exec_start#* } --help 2>&1)
check "ExecStart's options are accepted (with --help after them) [$(head -1 <<< "$out")]" \
  grep -q '^Usage: cachepin nri' <<< "$out"

# systemd-analyze verify in the staged root: the unit, the binary it names, the man page of
# its Documentation=. The root needs the targets it is ordered against (the host's, copied).
# verify exits 0 on a key it does not know or a value it cannot parse, saying so: both count.
mkdir -p "$ROOT/lib/systemd/system"
for u in /lib/systemd/system/*.target /lib/systemd/system/*.slice; do cp -a "$u" "$ROOT/lib/systemd/system/"; done
verify () { MANPATH=$ROOT$PREFIX/share/man systemd-analyze verify --root="$ROOT" "$UNIT_REL" 2>&1; }
quiet_success () { [ "$1" = 0 ] && [ -z "$2" ]; }
out=$(verify)
rc=$?
check "systemd-analyze verify $(basename "$UNIT"): exit 0, nothing said (exit $rc) [$out]" quiet_success "$rc" "$out"
exposure=$(systemd-analyze security --offline=yes --root="$ROOT" cachepin-nri.service 2>/dev/null |
  sed -n 's/.*Overall exposure level for cachepin-nri.service: \([0-9.]*\).*/\1/p')
echo "note: systemd-analyze security: exposure ${exposure:-?} (10 is none of the sandboxing)"

# A fake runtime: accepts one connection on SOCK (or takes the socketpair end it is handed),
# reads the first frame, prints what it says, then closes.
cat >"$DIR/runtime.py" <<'EOF'
import socket, struct, sys

def frame(conn):
    head = b""
    while len(head) < 8:
        b = conn.recv(8 - len(head))
        if not b:
            return None
        head += b
    cid, n = struct.unpack(">II", head)
    body = b""
    while len(body) < n:
        b = conn.recv(n - len(body))
        if not b:
            break
        body += b
    return cid, body

def say(conn):
    conn.settimeout(20)
    f = frame(conn)
    if f is None:
        print("no frame")
        return
    cid, body = f
    # ttrpc: a 10-byte header, then Request{service, method, payload{plugin_name, plugin_idx}}
    words = [w.decode() for w in (b"RegisterPlugin", b"cachepin", b"50") if w in body]
    print(f"conn {cid}: {' '.join(words)}")
    conn.close()

if sys.argv[1] == "listen":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sys.argv[2])
    s.listen(1)
    print("listening", flush=True)
    s.settimeout(20)
    say(s.accept()[0])
else:
    say(socket.socket(fileno=int(sys.argv[2])))
EOF
# The service manager's side of sd_notify: a datagram socket, what arrives on it printed
# with the moment it came relative to the registration (before / after).
cat >"$DIR/notify.py" <<'EOF'
import os, socket, sys, time
sys.path.insert(0, sys.argv[1])
sys.dont_write_bytecode = True
try:
    from nri_emu import Emu, load_protos
    load_protos()
except Exception as e:  # no grpc_tools or protobuf: said, and the checks below fail
    print(f"the NRI emulator cannot run ({e})")
    sys.exit(0)
d, argv = sys.argv[2], sys.argv[3:]
path = os.path.join(d, "notify.sock")
n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
n.bind(path)
n.settimeout(0.1)
def drain(seconds, tag):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            for line in n.recv(4096).decode().splitlines():
                print(f"{tag} {line}", flush=True)
        except socket.timeout:
            pass
with Emu(workdir=d) as emu:
    emu.listen("/var/run/nri/nri.sock")
    emu.start_plugin(["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--", *argv],
                     env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "3000000"},
                     log=os.path.join(d, "notify-plugin.log"))
    drain(1.0, "before")
    emu.connect()
    drain(2.5, "after")
    print(f"exit {emu.terminate()}")
EOF
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v setpriv >/dev/null; then
  echo "note: not root, or no unshare/setpriv: the unit's and the script's runs are skipped"
  finish
  exit
fi
# In a mount namespace: the staged prefix over the real one, an empty /run (the NRI
# socket's directory, the state directory as RuntimeDirectory= makes it), and an empty
# /etc/cachepin if the host has one (the defaults; none is made on the host).
mkdir -p "$DIR/etc"
cat >"$DIR/ns.sh" <<EOF
set -e
mount --make-rprivate /
mount --bind "$ROOT$PREFIX" "$PREFIX"
mount -t tmpfs tmpfs /run
mkdir -p /run/nri
mkdir -m 0700 /run/cachepin
if [ -d /etc/cachepin ]; then mount --bind "$DIR/etc" /etc/cachepin; fi
EOF
# The unit's ExecStart, with the capability set and NoNewPrivileges the unit gives it.
cat >>"$DIR/ns.sh" <<EOF
python3 "$DIR/runtime.py" listen /var/run/nri/nri.sock >"$DIR/unit-runtime.out" &
for _ in \$(seq 100); do [ -S /var/run/nri/nri.sock ] && break; sleep 0.1; done
setpriv --bounding-set=-all --inh-caps=-all --no-new-privs -- $exec_start >"$DIR/unit.out" 2>&1 &
plugin=\$!
# The runtime gone, the dialled plugin dials again (it does not exit): SIGTERM ends it.
for _ in \$(seq 100); do grep -q 'dialling .* again' "$DIR/unit.out" && break; sleep 0.1; done
kill -TERM \$plugin
wait \$plugin
echo "exit \$?" >>"$DIR/unit.out"
wait
# The unit's ExecStart again, told to notify: READY=1 only once the emulator registered it.
/usr/bin/python3 "$DIR/notify.py" "$HERE/../nri" "$DIR" $exec_start >"$DIR/notify.out" 2>&1 || true
# The script as containerd starts it (nri pkg/adaptation/plugin.go: cmd.Env holds only
# these, ExtraFiles puts the socket on fd 3, stdout and stderr are /dev/null).
python3 - "$DIR" "$PLUGIN_REL" <<'PY'
import os, socket, subprocess, sys
d, script = sys.argv[1], sys.argv[2]
os.open("/dev/null", os.O_RDONLY)  # fd 3 taken, so that the pair is above it
ours, theirs = socket.socketpair()
env = {"NRI_PLUGIN_NAME": "cachepin", "NRI_PLUGIN_IDX": "50", "NRI_PLUGIN_SOCKET": "3"}
os.dup2(theirs.fileno(), 3)
theirs.close()
p = subprocess.Popen([script], env=env, pass_fds=(3,), stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.close(3)
out = subprocess.run([sys.executable, os.path.join(d, "runtime.py"), "fd", str(ours.fileno())],
                     pass_fds=(ours.fileno(),), capture_output=True, text=True).stdout
ours.close()
with open(os.path.join(d, "script.out"), "w") as f:
    f.write(out + f"exit {p.wait(timeout=20)}\n")
PY
EOF
unshare -m sh "$DIR/ns.sh" >"$DIR/ns.log" 2>&1 || { cat "$DIR/ns.log"; fail "the mount namespace's setup"; }
check "unit: ExecStart, with no capability and no new privileges, registered on the default socket as 50-cachepin [$(tail -1 "$DIR/unit-runtime.out" 2>/dev/null)]" \
  grep -qx 'conn 2: RegisterPlugin cachepin 50' "$DIR/unit-runtime.out"
check "unit: it said it connected to /var/run/nri/nri.sock" grep -q 'nri: connected to /var/run/nri/nri.sock' "$DIR/unit.out"
check "unit: the runtime gone, it dials the socket again (it does not exit)" \
  grep -q 'nri: the connection to the runtime ended .* dialling /var/run/nri/nri.sock again' "$DIR/unit.out"
check "unit: SIGTERM ends it, exit 0 [$(tail -1 "$DIR/unit.out")]" \
  [ "$(tail -1 "$DIR/unit.out")" = "exit 0" ]
check "notify: nothing before the registration [$(grep -c '^before' "$DIR/notify.out") lines: $(head -1 "$DIR/notify.out")]" \
  bash -c "! grep -q '^before' '$DIR/notify.out' && grep -q '^after' '$DIR/notify.out'"
check "notify: READY=1 once registered" grep -qx 'after READY=1' "$DIR/notify.out"
check "notify: WATCHDOG=1 while waiting for calls (WatchdogSec 3 s: every second)" \
  grep -qx 'after WATCHDOG=1' "$DIR/notify.out"
check "notify: SIGTERM ends it, exit 0 [$(tail -1 "$DIR/notify.out")]" [ "$(tail -1 "$DIR/notify.out")" = "exit 0" ]
check "script: started as containerd starts it, registered on fd 3 as 50-cachepin [$(head -1 "$DIR/script.out" 2>/dev/null)]" \
  grep -qx 'conn 2: RegisterPlugin cachepin 50' "$DIR/script.out"
check "script: the runtime gone, it exits 0 [$(tail -1 "$DIR/script.out" 2>/dev/null)]" \
  [ "$(tail -1 "$DIR/script.out" 2>/dev/null)" = "exit 0" ]
finish
