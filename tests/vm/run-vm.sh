#!/usr/bin/env bash
# Boot a real Linux kernel under QEMU with a chosen CPU/cache/NUMA topology and
# cgroup layout, run a payload test script in it with real runc and crun, and
# turn the guest's result lines into an exit code.
#
#   tests/vm/run-vm.sh [options]
#
# Options (see tests/vm/README.md for more):
#   --topology NAME     a preset: sets --smp and --numa (see `--list-topologies`)
#   --smp SPEC          QEMU -smp value (default 16,sockets=2,dies=2,cores=2,threads=2)
#   --numa SPEC         one QEMU -numa value, repeatable, passed on verbatim
#                       (e.g. node,nodeid=0,cpus=0-7). If no node names memdev= or
#                       mem=, each node gets an equal memory-backend-ram share of --mem.
#   --mem MIB           guest RAM in MiB (default 2048)
#   --cgroup v2|v1      cgroup layout the guest init mounts (default v2)
#   --kernel-dir DIR    an unpacked kernel (DIR/boot/vmlinuz-* or DIR/vmlinuz-*)
#   --kernel-pkg PKG    Debian package to fetch when no --kernel-dir is given
#                       (default: linux-image-6.12-amd64 for v2, linux-image-amd64 for v1)
#   --kernel-suite S    fetch --kernel-pkg from Debian suite S (e.g. trixie-backports),
#                       which the host's apt need not list (tests/vm/fetch-kernel.sh)
#   --payload DIR       copied into the guest as /payload; runs /payload/run-tests.sh
#   --tests FILE        installed as /payload/run-tests.sh (overrides the payload's)
#   --bin FILE          copied into /payload/bin (with its libraries), repeatable
#   --env KEY=VALUE     exported to the test script, repeatable
#   --host-tool NAME    another host program (with its libraries) for the guest, repeatable;
#                       an absolute path copies any file (a plugin, say) to the same path
#   --append ARGS       extra kernel command line
#   --qemu-arg ARG      extra QEMU argument, repeatable
#   --timeout SECONDS   limit for the whole boot (default 300); on expiry QEMU is killed
#   --name NAME         run name: logs are tests/vm/work/NAME.log and NAME.results
#   --verbose           stream the serial console while the guest runs
#   --keep              keep the initramfs staging tree
#   --fetch-kernel      only fetch (or find) the kernel for --cgroup/--kernel-pkg, print its directory
#   --rootfs DIR        boot a Debian root file system with systemd as PID 1 instead of
#                       the busybox init (DIR from tests/vm/systemd-rootfs.sh: its
#                       rootfs.cpio.zst, with the payload appended as a second archive);
#                       the payload runs as a systemd service; cgroup v2 only
#
# Exit status: 0 all results PASS (or SKIP) and CPVM-DONE 0 seen; 1 a FAIL or a
# non-zero CPVM-DONE; 2 usage or setup error; 3 kernel panic; 4 timeout (stall);
# 5 QEMU ended without CPVM-DONE.

set -euo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${CPVM_WORK:-$VM_DIR/work}
# Kernels live outside the clone, keyed by image package (its version is in the
# name), so that a fresh clone (CI's) reuses them and a fresh machine fetches them.
KCACHE=${CPVM_KERNEL_CACHE:-/var/cache/cachepin/vm/kernels}

SMP=""
NUMA=()
MEM=2048
CGROUP=v2
KERNEL_DIR=""
KERNEL_PKG=""
KERNEL_SUITE=""
PAYLOAD=""
TESTS=""
BINS=()
ENVS=()
HOST_TOOLS=()
APPEND=""
QEMU_EXTRA=()
TIMEOUT=300
NAME=""
VERBOSE=0
KEEP=0
TOPOLOGY=""
FETCH_ONLY=0
ROOTFS=""

die() { echo "run-vm: $*" >&2; exit 2; }
note() { echo "run-vm: $*" >&2; }

# Named topologies. Each prints "SMP" on its first line and one -numa value per
# following line. CPU numbering: QEMU enumerates sockets, dies, cores, threads in
# that order, so SMT siblings are adjacent (0,1), and L3 is shared per die.
topology_preset() {
  case $1 in
    2s2d)   # 2 sockets x 2 dies (4 L3s of 4 CPUs), 2 cores x 2 threads per die, node per socket
      echo "16,sockets=2,dies=2,cores=2,threads=2"
      echo "node,nodeid=0,cpus=0-7"
      echo "node,nodeid=1,cpus=8-15" ;;
    odd18)  # 1 socket x 3 dies (3 L3s of 6 CPUs), 3 cores x 2 threads per die, node per die
      echo "18,sockets=1,dies=3,cores=3,threads=2"
      echo "node,nodeid=0,cpus=0-5"
      echo "node,nodeid=1,cpus=6-11"
      echo "node,nodeid=2,cpus=12-17" ;;
    nosmt4) # 2 sockets x 2 dies, 2 cores, no SMT, node per die (4 nodes, 4 L3s)
      echo "8,sockets=2,dies=2,cores=2,threads=1"
      echo "node,nodeid=0,cpus=0-1"
      echo "node,nodeid=1,cpus=2-3"
      echo "node,nodeid=2,cpus=4-5"
      echo "node,nodeid=3,cpus=6-7" ;;
    snc2)   # 1 socket, 1 die (one L3 of 16 CPUs) split into 2 nodes, like sub-NUMA clustering
      echo "16,sockets=1,dies=1,cores=8,threads=2"
      echo "node,nodeid=0,cpus=0-7"
      echo "node,nodeid=1,cpus=8-15" ;;
    *) return 1 ;;
  esac
}

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case $1 in
    --topology) TOPOLOGY=$2; shift 2 ;;
    --smp) SMP=$2; shift 2 ;;
    --numa) NUMA+=("$2"); shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --cgroup) CGROUP=$2; shift 2 ;;
    --kernel-dir) KERNEL_DIR=$2; shift 2 ;;
    --kernel-pkg) KERNEL_PKG=$2; shift 2 ;;
    --kernel-suite) KERNEL_SUITE=$2; shift 2 ;;
    --payload) PAYLOAD=$2; shift 2 ;;
    --tests) TESTS=$2; shift 2 ;;
    --bin) BINS+=("$2"); shift 2 ;;
    --env) ENVS+=("$2"); shift 2 ;;
    --host-tool) HOST_TOOLS+=("$2"); shift 2 ;;
    --append) APPEND=$2; shift 2 ;;
    --qemu-arg) QEMU_EXTRA+=("$2"); shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    --verbose) VERBOSE=1; shift ;;
    --keep) KEEP=1; shift ;;
    --fetch-kernel) FETCH_ONLY=1; shift ;;
    --rootfs) ROOTFS=$2; shift 2 ;;
    --list-topologies)
      for t in 2s2d odd18 nosmt4 snc2; do
        printf '%-7s -smp %s' "$t" "$(topology_preset $t | head -1)"
        topology_preset $t | tail -n +2 | while read -r n; do printf ' -numa %s' "$n"; done
        echo
      done
      exit 0 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
  esac
done

if [ -n "$TOPOLOGY" ]; then
  preset=$(topology_preset "$TOPOLOGY") || die "unknown topology '$TOPOLOGY' (try --list-topologies)"
  [ -n "$SMP" ] || SMP=$(head -1 <<<"$preset")
  if [ ${#NUMA[@]} -eq 0 ]; then mapfile -t NUMA < <(tail -n +2 <<<"$preset"); fi
fi
[ -n "$SMP" ] || SMP="16,sockets=2,dies=2,cores=2,threads=2"
case $CGROUP in v1|v2) ;; *) die "--cgroup must be v1 or v2" ;; esac
[ -z "$KERNEL_SUITE" ] || [ -n "$KERNEL_PKG" ] || die "--kernel-suite needs --kernel-pkg"
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout must be a number of seconds"
[[ $MEM =~ ^[0-9]+$ ]] || die "--mem must be MiB"
if [ -n "$ROOTFS" ]; then
  [ -s "$ROOTFS/rootfs.cpio.zst" ] && [ -d "$ROOTFS/tree" ] ||
    die "--rootfs $ROOTFS: no rootfs.cpio.zst and tree/ (build it with tests/vm/systemd-rootfs.sh)"
  [ "$CGROUP" = v2 ] || die "--rootfs boots systemd on cgroup v2 only"
fi
if [ $FETCH_ONLY = 0 ]; then
  [ -z "$PAYLOAD" ] || [ -d "$PAYLOAD" ] || die "payload '$PAYLOAD' is not a directory"
  [ -z "$TESTS" ] || [ -f "$TESTS" ] || die "tests '$TESTS' is not a file"
  [ -n "$PAYLOAD" ] || [ -n "$TESTS" ] || die "give --payload DIR (with run-tests.sh) and/or --tests FILE"
  if [ -z "$TESTS" ] && [ ! -f "$PAYLOAD/run-tests.sh" ]; then die "$PAYLOAD/run-tests.sh is missing"; fi
  for b in "${BINS[@]}"; do [ -f "$b" ] || die "--bin '$b' is not a file"; done
fi
[ -n "$NAME" ] || NAME="vm-$CGROUP-${TOPOLOGY:-custom}-$$"
[[ $NAME =~ ^[A-Za-z0-9._-]+$ ]] || die "--name may hold only letters, digits, . _ -"

for tool in qemu-system-x86_64 gzip ldd; do
  command -v "$tool" >/dev/null || die "'$tool' not found (see tests/vm/README.md for the packages)"
done
BUSYBOX=${CPVM_BUSYBOX:-/bin/busybox}
[ -x "$BUSYBOX" ] || die "$BUSYBOX missing: install busybox-static"
if ldd "$BUSYBOX" >/dev/null 2>&1; then die "$BUSYBOX is dynamically linked: install busybox-static"; fi

mkdir -p "$WORK"

# ---------------------------------------------------------------- kernel

# kernel_fetch PKG: print a directory holding boot/vmlinuz-* for Debian package
# PKG (a meta package such as linux-image-6.12-amd64 is resolved to the image it
# depends on). Downloads with apt-get download and unpacks ./boot only, cached in
# $KCACHE/<image-package>/. Offline, the last image cached for PKG is used.
kernel_fetch() {
  local pkg=$1 image dir tmp deb
  # A meta package depends on the image; an image depends on no other image.
  image=$(apt-cache depends "$pkg" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }') || true
  if [ -z "$image" ] && apt-cache show "$pkg" >/dev/null 2>&1; then image=$pkg; fi
  if [ -z "$image" ]; then
    if [ -e "$KCACHE/$pkg.latest" ]; then
      note "cannot resolve $pkg with apt-cache (run apt-get update?); using the cached $(readlink "$KCACHE/$pkg.latest")"
      echo "$KCACHE/$(readlink "$KCACHE/$pkg.latest")"
      return 0
    fi
    die "cannot resolve kernel package $pkg (run apt-get update, or pass --kernel-dir)"
  fi
  dir=$KCACHE/$image
  if ! compgen -G "$dir/boot/vmlinuz-*" >/dev/null; then
    note "fetching $image (for $pkg)"
    tmp=$(mktemp -d "$KCACHE/.fetch.XXXXXX")
    (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download "$image" >download.log 2>&1) ||
      { cat "$tmp/download.log" >&2; rm -rf "$tmp"; die "apt-get download $image failed"; }
    deb=$(echo "$tmp"/*.deb)
    mkdir -p "$tmp/k"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/k" ./boot ||
      { rm -rf "$tmp"; die "cannot unpack $deb"; }
    mv -T "$tmp/k" "$dir" 2>/dev/null || true   # a parallel run may have won the race
    rm -rf "$tmp"
  fi
  [ "$pkg" = "$image" ] || ln -sfn "$image" "$KCACHE/$pkg.latest"
  echo "$dir"
}

if [ -z "$KERNEL_DIR" ]; then
  if [ -z "$KERNEL_PKG" ]; then
    # Debian's 6.12 builds leave out the v1 cpuset and memory controllers
    # (CONFIG_CPUSETS_V1 and CONFIG_MEMCG_V1 are off), so v1 runs on 6.1.
    if [ "$CGROUP" = v1 ]; then KERNEL_PKG=linux-image-amd64; else KERNEL_PKG=linux-image-6.12-amd64; fi
  fi
  mkdir -p "$KCACHE"
  if [ -n "$KERNEL_SUITE" ]; then
    KERNEL_DIR=$(CPVM_KERNEL_CACHE=$KCACHE "$VM_DIR/fetch-kernel.sh" --suite "$KERNEL_SUITE" --pkg "$KERNEL_PKG") ||
      die "cannot fetch $KERNEL_PKG from $KERNEL_SUITE"
  else
    KERNEL_DIR=$(kernel_fetch "$KERNEL_PKG")
  fi
fi
VMLINUZ=$(compgen -G "$KERNEL_DIR/boot/vmlinuz-*" | head -1 || true)
[ -n "$VMLINUZ" ] || VMLINUZ=$(compgen -G "$KERNEL_DIR/vmlinuz-*" | head -1 || true)
[ -n "$VMLINUZ" ] || die "no vmlinuz-* in $KERNEL_DIR or $KERNEL_DIR/boot"
KVER=${VMLINUZ##*/vmlinuz-}
KCONFIG=$(dirname "$VMLINUZ")/config-$KVER
if [ "$CGROUP" = v1 ] && [ -f "$KCONFIG" ]; then
  if grep -q '^# CONFIG_CPUSETS_V1 is not set' "$KCONFIG"; then
    die "kernel $KVER has no cgroup v1 cpuset controller (CONFIG_CPUSETS_V1 off); use a 6.1 kernel for --cgroup v1"
  fi
fi

if [ $FETCH_ONLY = 1 ]; then echo "$KERNEL_DIR"; exit 0; fi

# ---------------------------------------------------------------- initramfs

STAGE=$WORK/$NAME.stage
ROOT=$STAGE/root
INITRD=$STAGE/initrd.gz
rm -rf "$STAGE"
mkdir -p "$ROOT"

# copy_file SRC DEST: copy SRC (following symlinks) to DEST inside the guest root.
copy_file() {
  mkdir -p "$ROOT$(dirname "$2")"
  rm -f "$ROOT$2"    # never write through a symlink into the host's own files
  cp -L --preserve=mode "$1" "$ROOT$2"
}

# copy_libs FILE: copy the shared libraries that ldd lists for FILE, each to the
# same absolute path in the guest (static binaries and non-ELF files need none).
# With --rootfs only the ones the guest's own tree lacks, into its
# /usr/lib/<triplet> under their soname (the guest's libraries are newer: a
# host build runs on them; /lib is a symlink there and must stay one).
copy_libs() {
  local out lib dest
  out=$(ldd "$1" 2>&1) || return 0    # "not a dynamic executable"
  if grep -q 'not found' <<<"$out"; then die "$1: libraries not found on this host:"$'\n'"$out"; fi
  while read -r lib; do
    dest=$lib
    if [ -n "$ROOTFS" ]; then
      dest=/usr/lib/$(basename "$(dirname "$lib")")/$(basename "$lib")
      [ "$(dirname "$lib")" != /lib64 ] || dest=/usr/lib64/$(basename "$lib")
      [ ! -e "$ROOTFS/tree$dest" ] || continue
    fi
    [ -e "$ROOT$dest" ] || copy_file "$lib" "$dest"
  done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out")
}

# copy_tool NAME|PATH: a host program found in PATH (or any file by its absolute
# path, a plugin say) and its libraries, at the same path in the guest.
copy_tool() {
  local path found link
  case $1 in
    /*) [ -e "$1" ] || die "'$1' does not exist"; found=$1 ;;
    *) found=$(command -v "$1") || die "'$1' not found on this host (see tests/vm/README.md)" ;;
  esac
  path=$(readlink -f "$found")
  copy_file "$path" "$path"
  copy_libs "$path"
  if [ "${1:0:1}" = / ]; then
    # A file by path: also where it was asked for, when that was a symlink.
    if [ "$found" != "$path" ]; then mkdir -p "$ROOT$(dirname "$found")"; ln -sfn "$path" "$ROOT$found"; fi
    return 0
  fi
  # A program is also reachable where PATH found it, and as /usr/bin/NAME.
  for link in "$found" "/usr/bin/${1##*/}"; do
    [ -e "$ROOT$link" ] || [ -L "$ROOT$link" ] || { mkdir -p "$ROOT$(dirname "$link")"; ln -s "$path" "$ROOT$link"; }
  done
}

is_elf() { [ "$(od -An -tx1 -N4 "$1" 2>/dev/null | tr -d ' \n')" = 7f454c46 ]; }

if [ -n "$ROOTFS" ]; then
  # Only what the guest's tree lacks, as a second archive laid over it: never an
  # entry where the tree has a symlink (/bin, /lib: the kernel would replace it).
  mkdir -p "$ROOT"/{cpvm,payload,etc/systemd/system/multi-user.target.wants}
  for tool in "${HOST_TOOLS[@]}"; do copy_tool "$tool"; done
  cp "$VM_DIR/systemd-payload.service" "$ROOT/etc/systemd/system/cpvm-payload.service"
  ln -s ../cpvm-payload.service "$ROOT/etc/systemd/system/multi-user.target.wants/cpvm-payload.service"
  # Started at boot and of no use to a guest without network: 30 s of TCG CPU.
  ln -s /dev/null "$ROOT/etc/systemd/system/netavark-dhcp-proxy.service"
  ln -s /dev/null "$ROOT/etc/systemd/system/netavark-dhcp-proxy.socket"
  install -m 0755 "$VM_DIR/systemd-payload.sh" "$ROOT/cpvm/payload.sh"
else
  mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,proc,sys,dev,run,tmp,etc,root,cpvm,payload}
  cp "$BUSYBOX" "$ROOT/bin/busybox"
  # Applets at their usual places (busybox --list-full gives paths without a leading /).
  while read -r applet; do
    case $applet in bin/busybox|'') continue ;; esac
    [ -e "$ROOT/$applet" ] || ln -s /bin/busybox "$ROOT/$applet"
  done < <("$BUSYBOX" --list-full)
  for tool in runc crun bash jq "${HOST_TOOLS[@]}"; do copy_tool "$tool"; done
  [ -e "$ROOT/bin/bash" ] || ln -s "$(readlink -f "$(command -v bash)")" "$ROOT/bin/bash"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$ROOT/etc/passwd"
  printf 'root:x:0:\n' >"$ROOT/etc/group"
fi

# The container image: a read-only rootfs with the static busybox, shared by all
# bundles, and the `runc spec` default config as the template guest-lib.sh adapts.
RFS=$ROOT/cpvm/rootfs
mkdir -p "$RFS"/{bin,proc,sys,dev,tmp,etc,root}
cp "$BUSYBOX" "$RFS/bin/busybox"
while read -r applet; do
  [ "$applet" = busybox ] || ln -s busybox "$RFS/bin/$applet"
done < <("$BUSYBOX" --list)
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$RFS/etc/passwd"
(cd "$STAGE" && runc spec && mv config.json "$ROOT/cpvm/spec-template.json")

if [ -n "$ROOTFS" ]; then cp "$VM_DIR/systemd-init.sh" "$ROOT/init"; else cp "$VM_DIR/guest-init.sh" "$ROOT/init"; fi
cp "$VM_DIR/guest-lib.sh" "$ROOT/cpvm/guest-lib.sh"
chmod 0755 "$ROOT/init"

if [ -n "$PAYLOAD" ]; then cp -a "$PAYLOAD/." "$ROOT/payload/"; fi
if [ -n "$TESTS" ]; then cp "$TESTS" "$ROOT/payload/run-tests.sh"; fi
for b in "${BINS[@]}"; do mkdir -p "$ROOT/payload/bin"; cp -L "$b" "$ROOT/payload/bin/"; done
chmod 0755 "$ROOT/payload/run-tests.sh"
# Every ELF file of the payload (cachepin in payload/bin, say) gets its libraries.
while IFS= read -r -d '' f; do
  if is_elf "$f"; then copy_libs "$f"; fi
done < <(find "$ROOT/payload" -type f -print0)

# What the test script is told about the machine it runs on.
{
  printf 'export CPVM_NAME=%q\n' "$NAME"
  printf 'export CPVM_CGROUP=%q\n' "$CGROUP"
  printf 'export CPVM_SMP=%q\n' "$SMP"
  printf 'export CPVM_TOPOLOGY=%q\n' "$TOPOLOGY"
  printf 'export CPVM_NUMA_NODES=%q\n' "$(printf '%s\n' "${NUMA[@]}" | grep -c '^node' || true)"
  printf 'export CPVM_KERNEL=%q\n' "$KVER"
  for kv in "${ENVS[@]}"; do
    [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env wants KEY=VALUE, not '$kv'"
    printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"
  done
} >"$ROOT/cpvm/env"

if [ -n "$ROOTFS" ]; then
  # The kernel unpacks concatenated archives in order, each compressed on its own.
  cp "$ROOTFS/rootfs.cpio.zst" "$INITRD"
  (cd "$ROOT" && find . -mindepth 1 -print | "$BUSYBOX" cpio -o -H newc -R 0:0 2>/dev/null) | gzip -1 >>"$INITRD"
else
  (cd "$ROOT" && find . -print | "$BUSYBOX" cpio -o -H newc -R 0:0 2>/dev/null) | gzip -1 >"$INITRD"
fi

# ---------------------------------------------------------------- QEMU

QEMU_NUMA=()
if [ ${#NUMA[@]} -gt 0 ]; then
  nodes=0 explicit=0
  for n in "${NUMA[@]}"; do
    case $n in node*) nodes=$((nodes + 1)) ;; esac
    case $n in *memdev=*|*mem=*) explicit=1 ;; esac
  done
  i=0
  for n in "${NUMA[@]}"; do
    case $n in
      node*)
        if [ $explicit = 0 ]; then
          share=$((MEM / nodes))
          [ $i -lt $((nodes - 1)) ] || share=$((MEM - share * (nodes - 1)))
          QEMU_NUMA+=(-object "memory-backend-ram,id=cpvm-mem$i,size=${share}M")
          n="$n,memdev=cpvm-mem$i"
        fi
        i=$((i + 1)) ;;
    esac
    QEMU_NUMA+=(-numa "$n")
  done
fi

LOG=$WORK/$NAME.log
RESULTS=$WORK/$NAME.results
QERR=$WORK/$NAME.qemu.err
: >"$LOG"; : >"$RESULTS"; : >"$QERR"

# ttyS0 is the console (kernel and test output); ttyS1 carries only the result
# protocol, so kernel messages can never split a result line.
CMDLINE="console=ttyS0 panic=-1 loglevel=4 cpvm.cgroup=$CGROUP"
# systemd: no colours or status lines to slow the serial console down.
[ -z "$ROOTFS" ] || CMDLINE="$CMDLINE systemd.show_status=error systemd.log_color=0"
[ "$CGROUP" = v2 ] && CMDLINE="$CMDLINE cgroup_no_v1=all"
[ -z "$APPEND" ] || CMDLINE="$CMDLINE $APPEND"

# -enable-kvm hangs on this kind of host and multi-threaded TCG panicked the
# guest in about one boot of three: single-threaded TCG only.
# shellcheck disable=SC2054 # the commas are inside QEMU option values
QEMU=(qemu-system-x86_64 -accel tcg,thread=single -cpu Skylake-Server
      -m "${MEM}M" -smp "$SMP" "${QEMU_NUMA[@]}"
      -kernel "$VMLINUZ" -initrd "$INITRD" -append "$CMDLINE"
      -nodefaults -display none -monitor none -net none
      -serial "file:$LOG" -serial "file:$RESULTS"
      -no-reboot "${QEMU_EXTRA[@]}")

note "run $NAME: kernel $KVER${ROOTFS:+, systemd rootfs $(basename "$ROOTFS")}, cgroup $CGROUP, -smp $SMP${NUMA:+, ${#NUMA[@]} -numa}, ${MEM} MiB, timeout ${TIMEOUT}s"
printf '%q ' "${QEMU[@]}" >"$WORK/$NAME.cmd"; echo >>"$WORK/$NAME.cmd"

start=$(date +%s.%N)
"${QEMU[@]}" </dev/null >>"$QERR" 2>&1 &
qpid=$!
tailpid=""
if [ $VERBOSE = 1 ]; then tail -n +1 -f --pid=$qpid "$LOG" & tailpid=$!; fi

stalled=0 done_at=""
while kill -0 $qpid 2>/dev/null; do
  now=$(date +%s)
  if [ $((now - ${start%.*})) -ge "$TIMEOUT" ]; then
    stalled=1; kill $qpid 2>/dev/null || true; break
  fi
  if [ -z "$done_at" ] && grep -q '^CPVM-DONE' "$RESULTS"; then done_at=$now; fi
  # The guest powers off right after CPVM-DONE; give it 30 s to do so.
  if [ -n "$done_at" ] && [ $((now - done_at)) -ge 30 ]; then kill $qpid 2>/dev/null || true; break; fi
  sleep 0.5
done
qrc=0; wait $qpid || qrc=$?
[ -z "$tailpid" ] || wait "$tailpid" 2>/dev/null || true
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ $KEEP = 1 ] || rm -rf "$STAGE"

# ---------------------------------------------------------------- verdict

tr -d '\r' <"$RESULTS" >"$RESULTS.tmp" && mv "$RESULTS.tmp" "$RESULTS"
pass=$(grep -c '^CPVM-RESULT [^ ]* PASS' "$RESULTS" || true)
fail=$(grep -c '^CPVM-RESULT [^ ]* FAIL' "$RESULTS" || true)
skip=$(grep -c '^CPVM-RESULT [^ ]* SKIP' "$RESULTS" || true)
done_rc=$(sed -n 's/^CPVM-DONE \([0-9]*\).*/\1/p' "$RESULTS" | tail -1)

echo "== vm $NAME: kernel $KVER, cgroup $CGROUP, -smp $SMP: ${elapsed}s"
sed -n 's/^CPVM-INFO /  info  /p; s/^CPVM-RESULT \([^ ]*\) \(PASS\|FAIL\|SKIP\) \{0,1\}/  \2  \1  /p' "$RESULTS" |
  sed 's/^  PASS/  pass/; s/^  SKIP/  skip/'

rc=0 why=""
if grep -q 'Kernel panic' "$LOG"; then
  rc=3 why="kernel panic: $(grep -m1 'Kernel panic' "$LOG" | tr -d '\r')"
elif [ $stalled = 1 ]; then
  rc=4 why="timeout after ${TIMEOUT}s (stall); QEMU killed"
elif [ -z "$done_rc" ]; then
  rc=5 why="QEMU exited ($qrc) without CPVM-DONE"
elif [ "$fail" -gt 0 ] || [ "$done_rc" != 0 ]; then
  rc=1 why="$fail failed, CPVM-DONE $done_rc"
fi
if [ $rc != 0 ]; then
  echo "== vm $NAME: FAILED: $why"
  echo "   console log: $LOG (last lines below)"
  tail -n 25 "$LOG" | tr -d '\r' | sed 's/^/   | /'
  if grep -qv "TCG doesn't support" "$QERR"; then grep -v "TCG doesn't support" "$QERR" | tail -5 | sed 's/^/   qemu: /'; fi
fi
echo "vm: $pass passed, $fail failed, $skip skipped"
exit $rc
