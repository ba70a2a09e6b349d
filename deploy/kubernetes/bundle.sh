#!/bin/sh
# The installer image's binary, made to run on any Linux node of its architecture whatever
# libraries the node has (Flatcar, Talos, Bottlerocket, Fedora CoreOS...: none of Debian's
# sonames, perhaps a different glibc or none at all):
#   - BIN is copied to DEST/bin/cachepin, and every shared library it needs, glibc and its
#     loader included, to DEST/lib;
#   - so are libsystemd.so.0 and the libraries it needs: cachepin dlopen()s it when it tells
#     systemd about a placement (hook/host/systemd.h), and a node's own libsystemd would be loaded
#     into a process running this glibc;
#   - and libmicrohttpd.so.12 with its libraries (GnuTLS...): dlopen()ed likewise by
#     `cachepin nri --metrics-listen`, the NRI overlay's listener (hook/agent/nri_http.h);
#   - and libcurl.so.4 with its libraries (OpenSSL, nghttp2...): dlopen()ed by the Kubernetes
#     API client (hook/kube/kube_http.c: `cachepin dra publish`, `cachepin nri --dra-node`);
#   - the copy runs with them: its ELF interpreter is NODE_PREFIX/lib/<the loader> (an
#     interpreter path is absolute: the node's install prefix), its DT_RPATH NODE_PREFIX/lib.
#     DT_RPATH, not DT_RUNPATH: the loader searches an executable's DT_RPATH for the
#     libraries of its libraries and for what it dlopen()s too, so none comes from the node.
#     Not $ORIGIN/../lib: the interpreter already ties the binary to NODE_PREFIX, and glibc
#     expands $ORIGIN through /proc/self/exe, which a chroot or an early boot may not have.
#   sh deploy/kubernetes/bundle.sh BIN DEST NODE_PREFIX       (Containerfile; needs patchelf)
set -eu
bin=$1 dest=$2 prefix=$3
sd=$(ldconfig -p | awk '$1 == "libsystemd.so.0" { print $NF; exit }')
[ -n "$sd" ] || { echo "bundle.sh: no libsystemd.so.0 (install libsystemd0)" >&2; exit 1; }
mhd=$(ldconfig -p | awk '$1 == "libmicrohttpd.so.12" { print $NF; exit }')
[ -n "$mhd" ] || { echo "bundle.sh: no libmicrohttpd.so.12 (install libmicrohttpd12)" >&2; exit 1; }
curl=$(ldconfig -p | awk '$1 == "libcurl.so.4" { print $NF; exit }')
[ -n "$curl" ] || { echo "bundle.sh: no libcurl.so.4 (install libcurl4)" >&2; exit 1; }
interp=$(patchelf --print-interpreter "$bin")
mkdir -p "$dest/bin" "$dest/lib"
# ldd's lines: "libx.so.1 => /lib/.../libx.so.1 (0x...)", the loader as "/lib64/ld-....so.2 (0x...)".
{ ldd "$bin"; ldd "$sd"; echo "$sd ()"; ldd "$mhd"; echo "$mhd ()"; ldd "$curl"; echo "$curl ()"; } |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && NF == 2 { print $1 }' | sort -u |
  while read -r lib; do cp -L "$lib" "$dest/lib/${lib##*/}"; done
cp -L "$interp" "$dest/lib/${interp##*/}"
cp "$bin" "$dest/bin/cachepin"
patchelf --set-interpreter "$prefix/lib/${interp##*/}" --force-rpath --set-rpath "$prefix/lib" \
  "$dest/bin/cachepin"
echo "bundle.sh: $dest/bin/cachepin with $(ls "$dest/lib" | tr '\n' ' ')"
