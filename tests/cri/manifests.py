#!/usr/bin/python3
"""The Kubernetes and containerd files under deploy/ agree with each other and with the
install layout they put on a node (docs/kubernetes.md): prefix /opt/cachepin, the binary at
<prefix>/bin/cachepin, the hooks.d files at <prefix>/share/containers/oci/hooks.d/, the
containerd snippets and base spec at <prefix>/share/containerd/, the host config at
/etc/cachepin/config.json; one image name, tagged with the project's version; the runtime
handler, RuntimeClass and node label the same everywhere; the base spec has no rlimits.

deploy/kubernetes/overlays/* rendered by Debian sid's kubectl (`kubectl kustomize`; the
.deb fetched by fetch-debs.sh into /var/cache/cachepin, never installed; exit 77 when it
cannot be had), every rendered object checked: the objects of each overlay, one image, each
container's privileges (only the NRI plugin privileged, each privilege and host mount with
a comment saying what it is for), host paths and mounts, the ConfigMap's config accepted by
cachepin's own checker, `cachepin nri` as the binary accepts it; the example pods'
annotations are values the real binary accepts, each on its route; what docs/kubernetes.md
says each route's pod holds is what it holds (manifests_docs.py). install.sh, run for real,
adds the handler to a containerd config in that config's version (keeping its settings, runc
included), writes the base spec before the config and uninstalls in the reverse order, with
the uninstall overlay's own arguments, leaving the node's files as they were; refuses a
version-1 config in one line, writing nothing; and its clean-state (the NRI route's
uninstall) empties a state directory only when its ledger holds no entry.

    /usr/bin/python3 tests/cri/manifests.py SOURCE_DIR PATH-TO-cachepin
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

import yaml

import manifests_docs

PREFIX = "/opt/cachepin"
ETC = "/etc/cachepin"
CONTAINERD_ETC = "/etc/containerd"
BIN = PREFIX + "/bin/cachepin"
BASE_SPEC = PREFIX + "/share/containerd/cachepin-base-spec.json"
HANDLER = "cachepin"
NODE_LABEL = ("cachepin.io/node", "true")
IMAGE_NAME = "cachepin-installer"

failures = 0


def check(what, ok, detail=""):
    global failures
    if ok:
        print(f"ok   {what}")
    else:
        failures += 1
        print(f"FAIL {what}{': ' + detail if detail else ''}")


def read(src, path):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        return f.read()


def docs_by_kind(src, path):
    out = {}
    for d in yaml.safe_load_all(read(src, path)):
        if d:
            out.setdefault(d["kind"], []).append(d)
    return out


def project_version(src):
    m = re.search(r"project\(cachepin VERSION ([0-9.]+)", read(src, "CMakeLists.txt"))
    return m.group(1)


def check_snippets(src):
    """Both containerd snippets: the same handler, spec and annotation patterns."""
    tables = {
        "config-v3.toml": ("plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", HANDLER),
        "config-v2.toml": ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", HANDLER),
    }
    for name, keys in tables.items():
        conf = tomllib.loads(read(src, f"deploy/containerd/{name}"))
        check(f"{name}: version {3 if 'v3' in name else 2}", conf.get("version") == (3 if "v3" in name else 2))
        t = conf
        for k in keys:
            t = t.get(k, {})
        check(f"{name}: runtime handler '{HANDLER}'", bool(t), f"no table {'.'.join(keys)}")
        check(f"{name}: runc v2 shim", t.get("runtime_type") == "io.containerd.runc.v2")
        check(f"{name}: base_runtime_spec is {BASE_SPEC}", t.get("base_runtime_spec") == BASE_SPEC,
              str(t.get("base_runtime_spec")))
        for key in ("pod_annotations", "container_annotations"):
            check(f"{name}: {key} passes cachepin.io/*", "cachepin.io/*" in t.get(key, []), str(t.get(key)))


def check_base_spec(src):
    spec = json.loads(read(src, "deploy/containerd/cachepin-base-spec.json"))
    hooks = spec.get("hooks", {})
    check("base spec: createRuntime and poststop hooks only", sorted(hooks) == ["createRuntime", "poststop"],
          str(sorted(hooks)))
    for stage, entries in hooks.items():
        ok = len(entries) == 1 and entries[0]["path"] == BIN and entries[0]["args"] == ["cachepin", "hook", stage]
        check(f"base spec: {stage} runs {BIN} hook {stage}", ok, json.dumps(entries))
    check("base spec: no cgroupsPath of its own (containerd sets each container's)",
          "cgroupsPath" not in spec.get("linux", {}))
    # containerd strips its default spec's rlimits only when no base spec is given: one kept
    # here would cap every container of the handler (RLIMIT_NOFILE 1024 in `ctr oci spec`).
    check("base spec: no process.rlimits (containers keep the runtime's limits)",
          "rlimits" not in spec.get("process", {}), json.dumps(spec.get("process", {}).get("rlimits")))


VIRTUAL_DEV = {"libcurl-dev": "libcurl4-openssl-dev"}


def check_image_build(src, version):
    cf = read(src, "deploy/kubernetes/Containerfile")
    inst = read(src, "deploy/kubernetes/install.sh")
    check(f"Containerfile: the project's install with prefix {PREFIX} (hooks.d files naming {BIN})",
          f"cmake --install /build --prefix {PREFIX}" in cf
          and f"/stage{PREFIX}/share/containers/oci/hooks.d/cachepin-create.json" in cf)
    check("Containerfile: the containerd snippets and base spec go to share/containerd",
          all(f"/src/deploy/containerd/{f}" in cf for f in ("config-v2.toml", "config-v3.toml", "cachepin-base-spec.json"))
          and "/out/share/containerd/" in cf)
    check("Containerfile: the binary goes to bin/cachepin with the libraries it runs with (bundle.sh)",
          f"bundle.sh /stage{BIN} /out {PREFIX}" in cf)
    # What CMakeLists.txt requires with pkg_check_modules, the build stage installs: "hwloc>=2.0"
    # is libhwloc-dev, "libsystemd" libsystemd-dev (the image's build runs in tests/install/image.sh).
    have = set(re.findall(r"\blib[\w.+-]+-dev\b", cf))
    modules = re.findall(r"pkg_check_modules\(\w+ REQUIRED (?:IMPORTED_TARGET )?([\w.+-]+)", read(src, "CMakeLists.txt"))
    want = {("" if mod.startswith("lib") else "lib") + re.split(r"[<>=]", mod)[0] + "-dev" for mod in modules}
    # libcurl-dev is a virtual package in Debian: the build installs the flavour that provides it.
    want = {VIRTUAL_DEV.get(p, p) for p in want}
    check("Containerfile: its build stage installs every -dev package CMakeLists.txt requires",
          bool(modules) and want <= have, f"missing {sorted(want - have)}")
    check("Containerfile: installs install.sh as its entrypoint",
          "COPY deploy/kubernetes/install.sh /usr/local/bin/cachepin-install" in cf
          and 'ENTRYPOINT ["/usr/local/bin/cachepin-install"]' in cf)
    tags = set(re.findall(r"(\S*" + IMAGE_NAME + r"):(\S+)", cf))
    check(f"Containerfile: documents the image as .../{IMAGE_NAME}:{version}",
          bool(tags) and all(t == version for _, t in tags), str(tags))
    for var, default in (("PREFIX", "/host" + PREFIX), ("ETC", "/host" + ETC), ("CONFIG", "/config/config.json")):
        check(f"install.sh: {var} defaults to {default}", f"{var}=${{CACHEPIN_" in inst and f":-{default}}}" in inst)


KUBECTL_DEB = "kubectl=1.36.4+ds-1"
OVERLAYS = ("nri", "hook", "nri-uninstall", "hook-uninstall", "nri-dra")
K8S = "deploy/kubernetes"
SYNTHETIC = "pack:1 l3:2 core:4 pu:2"


def sid_kubectl(src):
    """Debian sid's kubectl, unpacked by fetch-debs.sh (never installed), or None."""
    r = subprocess.run(["bash", os.path.join(src, "tests/cri/fetch-debs.sh"), "--suite", "sid", KUBECTL_DEB],
                       capture_output=True, text=True)
    sys.stderr.write(r.stderr)
    path = os.path.join(r.stdout.strip(), "usr/bin/kubectl") if r.returncode == 0 else ""
    return path if os.access(path, os.X_OK) else None


def render(kubectl, src, overlay):
    """`kubectl kustomize` of one overlay, by kind (every kind a list); None when it fails."""
    r = subprocess.run([kubectl, "kustomize", os.path.join(src, K8S, "overlays", overlay)],
                       capture_output=True, text=True)
    check(f"{overlay}: kubectl kustomize renders it", r.returncode == 0, r.stderr.strip())
    if r.returncode != 0:
        return None
    out = {}
    for d in yaml.safe_load_all(r.stdout):
        if d:
            out.setdefault(d["kind"], []).append(d)
    return out


def all_containers(pod):
    return pod.get("initContainers", []) + pod["containers"]


def config_checked(binary, text, what):
    """TEXT as cachepin's own checker takes a host config: `cachepin plan --config` on a
    synthetic topology exits 0, and 2 on a config it refuses."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(text)
        f.flush()
        r = subprocess.run([binary, "plan", "--config", f.name, "--empty", "--topology", SYNTHETIC, "--cpus", "1"],
                           capture_output=True, text=True)
    check(f"{what}: cachepin accepts it as a host config", r.returncode == 0, r.stderr.strip())


def commented(src, path, regex):
    """Every line of PATH matching REGEX has a comment line right above it (what it is for)."""
    lines = read(src, path).splitlines()
    bare = [l.strip() for i, l in enumerate(lines)
            if re.search(regex, l) and (i == 0 or not lines[i - 1].lstrip().startswith("#"))]
    check(f"{path}: each `{regex}` says what it is for (a comment right above)", not bare, str(bare))


def mount_lines(pod):
    """The host-path mounts of POD as (container, volume name)."""
    vols = {v["name"]: v for v in pod["volumes"]}
    return [(c["name"], m["name"]) for c in all_containers(pod) for m in c.get("volumeMounts", [])
            if "hostPath" in vols[m["name"]]]


def check_common(overlay, k, version, binary):
    """What every overlay shares (base/): its objects, where they run, how they update, the
    ConfigMap's config, one image, every container bounded."""
    want = ["ConfigMap", "DaemonSet", "Namespace", "PriorityClass"] + (["RuntimeClass"] if "hook" in overlay else [])
    if overlay == "nri-dra":  # its credentials and their bounds (check_nri_dra_overlay)
        want = sorted(want + ["ClusterRole", "ClusterRoleBinding", "ServiceAccount", "ValidatingAdmissionPolicy",
                              "ValidatingAdmissionPolicyBinding"])
    check(f"{overlay}: {', '.join(want)}, one of each, nothing else",
          sorted(k) == want and all(len(v) == 1 for v in k.values()), str({x: len(v) for x, v in k.items()}))
    ns, cm, ds, pc = (k[x][0] for x in ("Namespace", "ConfigMap", "DaemonSet", "PriorityClass"))
    name = ns["metadata"]["name"]
    check(f"{overlay}: the ConfigMap and the DaemonSet in namespace {name}",
          cm["metadata"].get("namespace") == name and ds["metadata"].get("namespace") == name)
    check(f"{overlay}: the namespace admits privileged pods (Pod Security), what its pods need",
          ns["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce") == "privileged")
    pod = ds["spec"]["template"]["spec"]
    check(f"{overlay}: DaemonSet cachepin (every overlay's: applying another one replaces it in place)",
          ds["metadata"]["name"] == "cachepin")
    check(f"{overlay}: selector matches its pods' labels",
          ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items())
    check(f"{overlay}: selector app.kubernetes.io/name=cachepin, the same in every overlay",
          ds["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "cachepin"},
          str(ds["spec"]["selector"]))
    check(f"{overlay}: the priority class it ships ({pc['metadata']['name']}, value {pc.get('value')}), "
          "at most a user class's 1000000000",
          pod.get("priorityClassName") == pc["metadata"]["name"] and 0 < pc.get("value", 0) <= 1000000000
          and not pc.get("globalDefault"))
    check(f"{overlay}: tolerates every taint", pod.get("tolerations") == [{"operator": "Exists"}])
    us = ds["spec"].get("updateStrategy", {})
    check(f"{overlay}: a rolling update, one node at a time",
          us.get("type") == "RollingUpdate" and us.get("rollingUpdate", {}).get("maxUnavailable") == 1, str(us))
    if overlay == "nri-dra":
        check(f"{overlay}: the service account's token (the API client's one credential), no service links",
              pod.get("automountServiceAccountToken") is True and pod.get("enableServiceLinks") is False)
    else:
        check(f"{overlay}: no service account token, no service links",
              pod.get("automountServiceAccountToken") is False and pod.get("enableServiceLinks") is False)
    for host in ("hostNetwork", "hostIPC"):
        check(f"{overlay}: no {host}", not pod.get(host))
    check(f"{overlay}: hostPID only on the NRI route", bool(pod.get("hostPID")) == (overlay in ("nri", "nri-dra")))
    vols = {v["name"]: v for v in pod["volumes"]}
    cms = [v["configMap"]["name"] for v in vols.values() if "configMap" in v]
    check(f"{overlay}: mounts the ConfigMap it ships ({cm['metadata']['name']})", cms == [cm["metadata"]["name"]],
          str(cms))
    try:
        json.loads(cm["data"]["config.json"])
        config_checked(binary, cm["data"]["config.json"], f"{overlay}: the ConfigMap's config.json")
    except (KeyError, ValueError) as e:
        check(f"{overlay}: the ConfigMap's config.json is JSON", False, str(e))
    mounted = {m["name"] for c in all_containers(pod) for m in c.get("volumeMounts", [])}
    check(f"{overlay}: every volume is mounted by a container", set(vols) <= mounted, str(set(vols) - mounted))
    images = {c["image"] for c in all_containers(pod)}
    check(f"{overlay}: one image, registry.example/{IMAGE_NAME}:{version} (the reserved placeholder)",
          images == {f"registry.example/{IMAGE_NAME}:{version}"}, str(images))
    for c in all_containers(pod):
        sc, what = c.get("securityContext", {}), f"{overlay}/{c['name']}"
        check(f"{what}: a memory limit", "memory" in c.get("resources", {}).get("limits", {}))
        check(f"{what}: a read-only image", sc.get("readOnlyRootFilesystem") is True)
        if sc.get("privileged"):
            continue
        caps = sc.get("capabilities", {})
        check(f"{what}: not privileged, no privilege escalation, every capability dropped, none added",
              sc.get("privileged") is False and sc.get("allowPrivilegeEscalation") is False
              and caps.get("drop") == ["ALL"] and not caps.get("add"), str(sc))
        check(f"{what}: the runtime's default seccomp profile",
              sc.get("seccompProfile", {}).get("type") == "RuntimeDefault")
    if overlay not in ("nri", "nri-dra"):
        for c in all_containers(pod):
            check(f"{overlay}/{c['name']}: no probe (no listener on this route: nothing runs but sleep)",
                  not any(p in c for p in ("livenessProbe", "readinessProbe", "startupProbe")))
    return ds, pod, vols


def idle_container(overlay, pod):
    (c,) = pod["containers"]
    sc = c.get("securityContext", {})
    check(f"{overlay}: the long-running container waits, mounts nothing, is not root",
          c.get("command") == ["sleep", "infinity"] and not c.get("volumeMounts")
          and sc.get("runAsNonRoot") is True and sc.get("runAsUser", 0) != 0, str(c))


def check_hook_overlay(src, overlay, k, pod, vols):
    """The hook route's installer (and its uninstall): the three host directories at
    install.sh's paths, the ConfigMap at /config, the handler's config file named."""
    check(f"{overlay}: runs on nodes labelled {NODE_LABEL[0]}={NODE_LABEL[1]}",
          pod.get("nodeSelector") == dict([NODE_LABEL]), str(pod.get("nodeSelector")))
    host_paths = {v["hostPath"]["path"] for v in vols.values() if "hostPath" in v}
    check(f"{overlay}: host paths {PREFIX}, {ETC} and {CONTAINERD_ETC}, nothing else",
          host_paths == {PREFIX, ETC, CONTAINERD_ETC}, str(host_paths))
    init = pod.get("initContainers", [])
    check(f"{overlay}: one init container, the image's entrypoint (install.sh, no command)",
          len(init) == 1 and "command" not in init[0], str(init))
    for c in init:
        sc = c.get("securityContext", {})
        check(f"{overlay}/{c['name']}: root (the host directories are root's)", sc.get("runAsUser") == 0)
        for m in c.get("volumeMounts", []):
            v = vols[m["name"]]
            if "hostPath" in v:
                check(f"{overlay}/{c['name']}: host {v['hostPath']['path']} at /host{v['hostPath']['path']} (install.sh's)",
                      m["mountPath"] == "/host" + v["hostPath"]["path"], m["mountPath"])
            if "configMap" in v:
                check(f"{overlay}/{c['name']}: the ConfigMap at /config, read-only",
                      m["mountPath"] == "/config" and m.get("readOnly"))
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        want = f"/host{CONTAINERD_ETC}/config.toml"
        check(f"{overlay}/{c['name']}: the handler's file is {want} (CACHEPIN_CONTAINERD_CONFIG)",
              env.get("CACHEPIN_CONTAINERD_CONFIG") == want, str(env))
    idle_container(overlay, pod)
    rc = k["RuntimeClass"][0]
    check(f"{overlay}: RuntimeClass handler {HANDLER} (the containerd snippets')", rc.get("handler") == HANDLER)
    check(f"{overlay}: the RuntimeClass schedules onto {NODE_LABEL[0]}={NODE_LABEL[1]} nodes, where the installer runs",
          rc.get("scheduling", {}).get("nodeSelector") == dict([NODE_LABEL]))
    want_args = ["uninstall"] if overlay == "hook-uninstall" else None
    check(f"{overlay}: the init container runs install.sh {(want_args or ['install'])[0]}",
          init and init[0].get("args") == want_args, str(init[0].get("args") if init else None))
    return init[0].get("args", []) if init else []


def check_nri_overlay(src, binary, pod, vols, overlay):
    """The plugin: `cachepin nri` as the binary accepts it, the host paths, namespaces and
    privileges it needs (nri-dra: the kubelet plugin's too), the ConfigMap where it reads
    its config."""
    check("nri: no nodeSelector (every node)", "nodeSelector" not in pod)
    state = default_state_dir(binary)
    check(f"the binary's default state directory is /run/cachepin ({state})", state == "/run/cachepin")
    host_paths = {v["hostPath"]["path"] for v in vols.values() if "hostPath" in v}
    want_paths = {"/var/run/nri", state, "/sys"} | (set(KUBELET_VOLUMES.values()) if overlay == "nri-dra" else set())
    check(f"nri: host paths {sorted(want_paths)}, nothing else", host_paths == want_paths, str(host_paths))
    (c,) = pod["containers"]
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    by_path = {vols[n]["hostPath"]["path"]: m for n, m in mounts.items() if "hostPath" in vols[n]}
    check("nri: the plugin mounts each host path at the same path (the config's paths are the node's)",
          sorted(by_path) == sorted(want_paths) and all(m["mountPath"] == p for p, m in by_path.items()),
          str({p: m["mountPath"] for p, m in by_path.items()}))
    check("nri: /sys read-only, the socket and the state directory writable",
          by_path.get("/sys", {}).get("readOnly") is True
          and all(not by_path.get(p, {}).get("readOnly") for p in ("/var/run/nri", state)))
    check("nri: /var/run/nri must exist (the runtime makes it when NRI is on)",
          vols["nri"]["hostPath"].get("type") == "Directory")
    r = subprocess.run([binary, "nri", "--help"], capture_output=True, text=True)
    m = re.search(r"--config PATH.*\(default (\S+)\)", r.stdout)
    conf = m.group(1) if m else "?"
    cm_mount = [m for n, m in mounts.items() if "configMap" in vols[n]]
    check(f"nri: the ConfigMap at {os.path.dirname(conf)}, read-only, where the plugin reads {conf}",
          len(cm_mount) == 1 and cm_mount[0]["mountPath"] == os.path.dirname(conf) and cm_mount[0].get("readOnly")
          and os.path.basename(conf) == "config.json", str(cm_mount))
    sc = c.get("securityContext", {})
    check("nri: privileged, root (the host's cgroup namespace; the helpers' capabilities)",
          sc.get("privileged") is True and sc.get("runAsUser") == 0)
    res = c.get("resources", {})
    check("nri: requests cpu and memory, limits memory and not cpu",
          {"cpu", "memory"} <= set(res.get("requests", {})) and "memory" in res.get("limits", {})
          and "cpu" not in res.get("limits", {}), str(res))
    cmd = c.get("command", []) + c.get("args", [])
    check(f"nri: runs {BIN} nri (the image's copy, Containerfile's /opt/cachepin)", cmd[:2] == [BIN, "nri"], str(cmd))
    cf = read(src, f"{K8S}/Containerfile")
    check(f"Containerfile: {PREFIX} is the image's /cachepin (the bundled binary runs there)",
          f"ln -s /cachepin {PREFIX}" in cf)
    r = subprocess.run([binary] + cmd[1:] + ["--help"], capture_output=True, text=True)
    check(f"nri: `cachepin {' '.join(cmd[1:])}` is accepted (--help after it exits 0)",
          r.returncode == 0 and r.stdout.startswith("Usage: cachepin nri"), r.stderr.strip())
    args = dict(zip(cmd[2::2], cmd[3::2]))
    check("nri: the default socket", args.get("--socket", "/var/run/nri/nri.sock") == "/var/run/nri/nri.sock")
    check_nri_probes(binary, c, pod, args)
    init = pod.get("initContainers", [])
    script = " ".join(init[0].get("command", [])) if init else ""
    check(f"nri: an init container makes an empty {state} 0700 and mounts nothing else",
          len(init) == 1 and f"chmod 0700 {state}" in script and f"ls -A {state}" in script
          and [vols[m["name"]]["hostPath"]["path"] for m in init[0].get("volumeMounts", [])] == [state], script)
    check_state_dir_script(script, state)


KUBELET_ROOT = "/var/lib/kubelet"
# The kubelet plugin's host directories (volume name: host path): the registration socket's,
# its own (the DRA socket), the CDI specs'.
KUBELET_VOLUMES = {"kubelet-registry": f"{KUBELET_ROOT}/plugins_registry",
                   "kubelet-plugin": f"{KUBELET_ROOT}/plugins/cachepin.io",
                   "cdi": "/var/run/cdi"}


def check_kubelet_mounts(binary, k, pod, c):
    """The kubelet plugin's directories, each a host path mounted at that same path and
    writable (the kubelet dials the socket paths the plugin names, the runtime reads the CDI
    specs at the paths the plugin writes them), the CDI one the ConfigMap's cdi_dir."""
    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    for name, path in KUBELET_VOLUMES.items():
        v, m = vols.get(name, {}), mounts.get(name, {})
        check(f"nri-dra: {path} mounted at its host path, writable",
              v.get("hostPath", {}).get("path") == path and m.get("mountPath") == path and not m.get("readOnly"),
              f"{v} {m}")
    check("nri-dra: the registration directory must exist (the kubelet's), the others are made",
          vols.get("kubelet-registry", {}).get("hostPath", {}).get("type") == "Directory"
          and all(vols.get(n, {}).get("hostPath", {}).get("type") == "DirectoryOrCreate"
                  for n in ("kubelet-plugin", "cdi")))
    config = json.loads(k["ConfigMap"][0]["data"]["config.json"])
    check("nri-dra: the ConfigMap's cdi_dir is the mounted one (unset: /var/run/cdi)",
          config.get("cdi_dir", "/var/run/cdi") == KUBELET_VOLUMES["cdi"], str(config.get("cdi_dir")))
    h = subprocess.run([binary, "nri", "--help"], capture_output=True, text=True).stdout
    check(f"nri-dra: the plugin's default kubelet root is {KUBELET_ROOT} (`cachepin nri --help`)",
          f"(default {KUBELET_ROOT})" in h)


def check_nri_dra_overlay(binary, k, ds, nri):
    """DRA publishing on the NRI route (docs/dra.md, "Publishing"): the NRI overlay's pod with
    --dra-node $(NODE_NAME) from the downward API and the service account's token, the
    in-cluster API server (no --kube-* option); RBAC of slices and claims only; the admission
    policy that keeps a node's token to its own node's slices."""
    pod = ds["spec"]["template"]["spec"]
    ns = ds["metadata"]["namespace"]
    (sa,) = k["ServiceAccount"]
    check(f"nri-dra: the pod runs as ServiceAccount {sa['metadata']['name']} of its namespace",
          pod.get("serviceAccountName") == sa["metadata"]["name"] and sa["metadata"].get("namespace") == ns)
    (c,) = pod["containers"]
    env = {e["name"]: e for e in c.get("env", [])}
    check("nri-dra: NODE_NAME from the downward API (spec.nodeName)",
          env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
          str(env))
    args = c.get("args", [])
    check("nri-dra: --dra-node $(NODE_NAME), in-cluster (no --kube-* option)",
          "--dra-node" in args and args[args.index("--dra-node") + 1:][:1] == ["$(NODE_NAME)"]
          and not any(a.startswith("--kube-") for a in args), str(args))
    r = subprocess.run([binary, "nri", "--help"], capture_output=True, text=True)
    check("nri-dra: --dra-node is the plugin's option (`cachepin nri --help` names it)", "--dra-node" in r.stdout)
    check("nri-dra: --kubelet-plugin, at the kubelet's default root (no --kubelet-root: the mounts below are "
          f"{KUBELET_ROOT}'s)", "--kubelet-plugin" in args and "--kubelet-root" not in args, str(args))
    check("nri-dra: --kubelet-plugin is the plugin's option", "--kubelet-plugin" in r.stdout)
    check_kubelet_mounts(binary, k, pod, c)
    if nri:
        plain = json.loads(json.dumps(nri["DaemonSet"][0]["spec"]["template"]["spec"]))
        mine = json.loads(json.dumps(pod))
        for p in (plain, mine):
            for key in ("serviceAccountName", "automountServiceAccountToken"):
                p.pop(key, None)
            p["containers"][0].pop("env", None)
            p["containers"][0]["args"] = [a for a in p["containers"][0].get("args", [])
                                          if a not in ("--dra-node", "$(NODE_NAME)", "--kubelet-plugin")]
            p["containers"][0]["volumeMounts"] = [m for m in p["containers"][0].get("volumeMounts", [])
                                                  if m["name"] not in KUBELET_VOLUMES]
            p["volumes"] = [v for v in p["volumes"] if v["name"] not in KUBELET_VOLUMES]
        check("nri-dra: otherwise the NRI overlay's pod, to the letter", plain == mine)
    (role,) = k["ClusterRole"]
    rules = {(g, res): sorted(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"]
             for res in rule["resources"]}
    want = {("resource.k8s.io", "resourceslices"): sorted(["list", "watch", "create", "update", "delete"]),
            ("resource.k8s.io", "resourceclaims"): ["get"]}
    check("nri-dra: RBAC: slices (list, watch, create, update, delete) and claims (get), nothing else",
          rules == want, str(rules))
    (rb,) = k["ClusterRoleBinding"]
    check("nri-dra: the role bound to the plugin's service account alone",
          rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": role["metadata"]["name"]}
          and rb["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": ns}],
          str(rb))
    (vap,) = k["ValidatingAdmissionPolicy"]
    spec = vap["spec"]
    rr = spec["matchConstraints"]["resourceRules"]
    check("nri-dra: the admission policy sees every write of a ResourceSlice",
          len(rr) == 1 and rr[0]["resources"] == ["resourceslices"]
          and sorted(rr[0]["operations"]) == ["CREATE", "DELETE", "UPDATE"] and spec.get("failurePolicy") == "Fail",
          str(rr))
    user = f"system:serviceaccount:{ns}:{sa['metadata']['name']}"
    check(f"nri-dra: ... of the plugin's service account ({user})",
          any(user in m["expression"] for m in spec.get("matchConditions", [])))
    exprs = " ".join(v["expression"] for v in spec["validations"]) + " ".join(
        v["expression"] for v in spec.get("variables", []))
    check("nri-dra: it compares the slice's spec.nodeName, new and old, with the token's node-name claim",
          "object.spec.nodeName" in exprs and "oldObject.spec.nodeName" in exprs
          and "authentication.kubernetes.io/node-name" in exprs)
    (vb,) = k["ValidatingAdmissionPolicyBinding"]
    check("nri-dra: the policy bound, denying",
          vb["spec"]["policyName"] == vap["metadata"]["name"] and vb["spec"]["validationActions"] == ["Deny"])


def check_nri_probes(binary, c, pod, args):
    """The plugin's listener and the probes on it: --metrics-listen on every address of
    the pod's own network namespace (the kubelet and Prometheus come in at the pod IP), its
    port the container's named port, /readyz and /livez (the plugin's paths, as its --help
    says) on that port; the metrics path the binary's default."""
    listen = args.get("--metrics-listen", "")
    addr, _, port = listen.rpartition(":")
    check(f"nri: --metrics-listen on the pod's own addresses ({listen}), no hostNetwork",
          addr == "0.0.0.0" and port.isdigit() and not pod.get("hostNetwork"), listen)
    ports = {p.get("name"): p for p in c.get("ports", [])}
    check(f"nri: containerPort `metrics` is --metrics-listen's port ({ports.get('metrics', {}).get('containerPort')})",
          str(ports.get("metrics", {}).get("containerPort")) == port
          and ports["metrics"].get("protocol", "TCP") == "TCP", str(ports))
    r = subprocess.run([binary, "nri", "--help"], capture_output=True, text=True)
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        p = c.get(probe, {})
        get = p.get("httpGet", {})
        check(f"nri: {probe}: GET {path} on port `metrics` ({get})",
              get.get("path") == path and get.get("port") in ("metrics", int(port or 0)), str(p))
        check(f"nri: {probe}: {path} is one of the plugin's paths (`cachepin nri --help` names it)",
              path in r.stdout)
        check(f"nri: {probe}: a timeout, a period, a failure threshold",
              all(isinstance(p.get(k), int) and p[k] > 0 for k in ("timeoutSeconds", "periodSeconds",
                                                                     "failureThreshold")), str(p))
    live = c.get("livenessProbe", {})
    check("nri: liveness fails only after 30 s or more (the plugin's own threshold: its loop turned within 30 s)",
          live.get("periodSeconds", 0) * live.get("failureThreshold", 0) >= 30, str(live))
    check("nri: no startup probe (live from its start: the loop turns before it registers)",
          "startupProbe" not in c)


def check_nri_uninstall(src, binary, pod, vols):
    """The NRI route's uninstall: install.sh clean-state on the plugin's state directory, read
    with the plugin's config; then run for real (check_clean_state)."""
    state = default_state_dir(binary)
    host_paths = {v["hostPath"]["path"] for v in vols.values() if "hostPath" in v}
    check(f"nri-uninstall: host path {state}, nothing else", host_paths == {state}, str(host_paths))
    init = pod.get("initContainers", [])
    check("nri-uninstall: one init container, install.sh clean-state (the entrypoint, no command)",
          len(init) == 1 and "command" not in init[0] and init[0].get("args") == ["clean-state"], str(init))
    if init:
        mounts = {m["mountPath"]: m for m in init[0].get("volumeMounts", [])}
        check(f"nri-uninstall: the state directory at {state}, the ConfigMap at {ETC} read-only (the plugin's)",
              sorted(mounts) == sorted([state, ETC]) and mounts[ETC].get("readOnly")
              and "configMap" in vols[mounts[ETC]["name"]], str(sorted(mounts)))
        check("nri-uninstall: root (the state directory is root's 0700)",
              init[0].get("securityContext", {}).get("runAsUser") == 0)
    idle_container("nri-uninstall", pod)
    check_clean_state(src, binary)


def check_clean_state(src, binary):
    """install.sh clean-state, run for real as the clean-up's pod runs it: an empty ledger's
    directory emptied; one with an entry, or unreadable, left as it is and said in one line."""
    entry = ('{"version": 1, "entries": [{"id": "a", "cgroup_mount": "/sys/fs/cgroup", "cgroup": "/a", "pid": 0, '
             '"start_time": 0, "mode": "exclusive", "cpus": "1", "held": "1", "mems": "0", "placed_at": 1700000000}]}\n')
    with tempfile.TemporaryDirectory(prefix="cachepin-clean-") as d:
        state = os.path.join(d, "state")
        conf = os.path.join(d, "config.json")
        topo = os.path.join(d, "topo.xml")
        subprocess.run(["lstopo-no-graphics", "--input", SYNTHETIC, "--of", "xml", topo], capture_output=True)
        with open(conf, "w") as f:
            json.dump({"state_dir": state, "topology": topo if os.path.exists(topo) else "host"}, f)
        env = dict(os.environ, CACHEPIN_STATE=state, CACHEPIN_BIN=binary, CACHEPIN_STATUS_CONFIG=conf)

        def run(ledger):
            shutil.rmtree(state, ignore_errors=True)
            os.mkdir(state, 0o700)
            for name in ("lock", "topology.cache"):
                open(os.path.join(state, name), "w").close()
            if ledger is not None:
                with open(os.path.join(state, "ledger.json"), "w") as f:
                    f.write(ledger)
                os.chmod(os.path.join(state, "ledger.json"), 0o600)
            return subprocess.run(["sh", os.path.join(src, K8S, "install.sh"), "clean-state"], env=env,
                                  capture_output=True, text=True)

        r = run(None)
        check("clean-state: a state directory without entries is emptied, the directory kept",
              r.returncode == 0 and os.path.isdir(state) and not os.listdir(state), r.stdout + r.stderr)
        r = run('{"version": 1, "entries": []}\n')
        check("clean-state: an empty ledger's directory is emptied",
              r.returncode == 0 and not os.listdir(state), r.stdout + r.stderr)
        r = run(entry)
        lines = r.stdout.strip().splitlines()
        check("clean-state: a ledger holding an entry is left as it is, said in one line",
              r.returncode == 0 and sorted(os.listdir(state)) == ["ledger.json", "lock", "topology.cache"]
              and len(lines) == 1 and "holds 1 entries" in lines[0], r.stdout + r.stderr)
        r = run("not json\n")
        err = r.stderr.strip().splitlines()
        check("clean-state: an unreadable ledger is left as it is, the pod failing with one line",
              r.returncode != 0 and len(os.listdir(state)) == 3 and len(err) == 1, r.stdout + r.stderr)
        with open(conf, "w") as f:
            json.dump({"state_dir": os.path.join(d, "elsewhere")}, f)
        r = run(None)
        check("clean-state: a config naming another state directory is refused, nothing removed",
              r.returncode != 0 and len(os.listdir(state)) == 2 and "mount its state_dir" in r.stderr, r.stderr)


def check_comments(src):
    """Each privilege and host mount of a shipped DaemonSet says what it is for."""
    for overlay in OVERLAYS:
        path = f"{K8S}/overlays/{overlay}/daemonset.yaml"
        if not os.path.exists(os.path.join(src, path)):
            continue
        commented(src, path, r"^\s*hostPID: true")
        commented(src, path, r"^\s*privileged: true")
        text = read(src, path).splitlines()
        # A mount: a "- name:" line followed by its mountPath; a host path volume: by hostPath.
        for what, key in (("mount", "mountPath:"), ("host path volume", "hostPath:")):
            bare = [text[i].strip() for i in range(1, len(text) - 1)
                    if re.match(r"^\s*- name: ", text[i]) and key in text[i + 1]
                    and not text[i - 1].lstrip().startswith("#")]
            check(f"{path}: each {what} says what it is for (a comment right above)", not bare, str(bare))


def check_example_pod(binary, path, pod):
    ann = pod["metadata"].get("annotations", {})
    ours = {k[len("cachepin.io/"):]: v for k, v in ann.items() if k.startswith("cachepin.io/")}
    check(f"{path}: asks with cachepin.io/ annotations", bool(ours))
    limits = [c.get("resources", {}).get("limits", {}).get("cpu") for c in pod["spec"]["containers"]]
    check(f"{path}: its CPU limit is the CPUs it asks for", all(l == ours.get("cpus") for l in limits),
          f"{limits} vs {ours.get('cpus')}")
    # The values, as the hook parses them: cachepin plan takes the same spellings.
    args = [binary, "plan", "--topology", SYNTHETIC]
    for k, v in ours.items():
        if k == "strict":
            args += ["--strict"] if v == "true" else []
            check(f"{path}: strict is true or false", v in ("true", "false"), v)
        elif k == "mems":
            check(f"{path}: mems is local or keep", v in ("local", "keep"), v)
        else:
            args += [f"--{k}", v]
    r = subprocess.run(args, capture_output=True, text=True)
    check(f"{path}: cachepin plan accepts its annotations' values", r.returncode == 0, r.stderr.strip())


def check_examples(src, binary, hook):
    """One example pod per route: the hook's on the hook overlay's RuntimeClass, the NRI
    route's on none (that class exists only where the hook overlay is applied)."""
    rc = hook["RuntimeClass"][0]["metadata"]["name"] if hook else None
    for path, runtime_class in ((f"{K8S}/examples/hook-pod.yaml", rc), (f"{K8S}/examples/nri-pod.yaml", None)):
        pod = docs_by_kind(src, path)["Pod"][0]
        check(f"{path}: runtimeClassName {runtime_class}", pod["spec"].get("runtimeClassName") == runtime_class)
        check_example_pod(binary, path, pod)


def default_state_dir(binary):
    """The state directory the binary uses without a config naming one."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write("{}")
        f.flush()
        r = subprocess.run([binary, "status", "--json", "--config", f.name], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["config"]["state_dir"]
    except (ValueError, KeyError):
        return None


def check_state_dir_script(script, state):
    """The init container's script, run for real on a directory as the kubelet makes it."""
    cmd = script.split(" ", 2)[2] if script.startswith("/bin/sh -c ") else ""
    with tempfile.TemporaryDirectory(prefix="cachepin-state-") as d:
        made = os.path.join(d, "made")
        os.mkdir(made, 0o755)
        os.chmod(made, 0o755)
        held = os.path.join(d, "held")
        os.mkdir(held, 0o755)
        os.chmod(held, 0o755)
        open(os.path.join(held, "ledger.json"), "w").close()
        for path in (made, held):
            subprocess.run(["sh", "-c", cmd.replace(state, path)], capture_output=True)
        check("nri-plugin: the init container makes an empty directory 0700",
              oct(os.stat(made).st_mode & 0o7777) == oct(0o700), oct(os.stat(made).st_mode & 0o7777))
        check("nri-plugin: the init container leaves a directory with a ledger as it is",
              oct(os.stat(held).st_mode & 0o7777) == oct(0o755), oct(os.stat(held).st_mode & 0o7777))


def check_required_plugins(src, binary):
    """The required-plugins snippet and the strict example pod, as docs/kubernetes.md says
    ("Required plugins"): the validator table NRI v0.10+ reads, naming the plugin as it
    registers; a strict pod naming it in required-plugins.noderesource.dev (a JSON list)."""
    conf = tomllib.loads(read(src, "deploy/containerd/nri-required.toml"))
    v = conf.get("plugins", {}).get("io.containerd.nri.v1.nri", {}).get("default_validator", {})
    check("nri-required.toml: the default validator enabled", v.get("enable") is True, v)
    check("nri-required.toml: cachepin required (the name the plugin registers under)",
          v.get("required_plugins") == ["cachepin"], v)
    check("nri-required.toml: an annotation tolerates its absence (the plugin's own pod, static pods)",
          bool(v.get("tolerate_missing_plugins_annotation")), v)
    pod = docs_by_kind(src, f"{K8S}/examples/nri-strict-pod.yaml")["Pod"][0]
    ann = pod["metadata"].get("annotations", {})
    check("example strict pod: strict", ann.get("cachepin.io/strict") == "true", ann)
    check("example strict pod: requires the plugin (a JSON list naming cachepin)",
          json.loads(ann.get("required-plugins.noderesource.dev", "[]")) == ["cachepin"], ann)
    check("example strict pod: on no runtime class (the NRI route)", "runtimeClassName" not in pod["spec"])
    limits = [c.get("resources", {}).get("limits", {}).get("cpu") for c in pod["spec"]["containers"]]
    check("example strict pod: its CPU limit is the CPUs it asks for",
          all(l == ann.get("cachepin.io/cpus") for l in limits), limits)
    r = subprocess.run([binary, "nri", "--help"], capture_output=True, text=True)
    check("the plugin's default name is cachepin", "or cachepin)" in r.stdout, r.stdout[-300:])


MAIN_V2 = """version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.example/pause:custom"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
"""
MAIN_V3 = """version = 3
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = 'registry.example/pause:custom'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true
"""
HANDLER_TABLE = {2: ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes"),
                 3: ("plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes")}


def lookup(conf, keys):
    for k in keys:
        conf = conf.get(k, {})
    return conf


class Node:
    """The image's tree as the Containerfile lays it out, a fake node's /opt/cachepin,
    /etc/cachepin and /etc/containerd, and install.sh run against them."""

    def __init__(self, src, binary, d):
        self.src, self.d = src, d
        img, self.host = os.path.join(d, "cachepin"), os.path.join(d, "host")
        hooks = os.path.join(img, "share/containers/oci/hooks.d")
        ctrd = os.path.join(img, "share/containerd")
        for p in (os.path.join(img, "bin"), hooks, ctrd, os.path.join(d, "config"), self.host + CONTAINERD_ETC):
            os.makedirs(p)
        shutil.copy(binary, os.path.join(img, "bin/cachepin"))
        # What `cmake --install --prefix /opt/cachepin` makes of them (packaging/install.cmake;
        # not run here: it writes into the build directory, which other tests use).
        for name in ("cachepin-create.json", "cachepin-poststop.json"):
            with open(os.path.join(hooks, name), "w") as f:
                f.write(read(src, f"deploy/hooks.d/{name}.in").replace("@CACHEPIN_INSTALLED_BIN@", BIN))
        for name in ("config-v2.toml", "config-v3.toml", "cachepin-base-spec.json"):
            shutil.copy(os.path.join(src, "deploy/containerd", name), ctrd)
        self.cm = read(src, f"{K8S}/base/config.json")
        with open(os.path.join(d, "config/config.json"), "w") as f:
            f.write(self.cm)
        self.ctrd_config = self.host + CONTAINERD_ETC + "/config.toml"
        self.env = dict(os.environ, CACHEPIN_SRC=img, CACHEPIN_HOST_PREFIX=self.host + PREFIX,
                        CACHEPIN_HOST_ETC=self.host + ETC, CACHEPIN_CONFIG=os.path.join(d, "config/config.json"),
                        CACHEPIN_CONTAINERD_CONFIG=self.ctrd_config)

    def run(self, *args):
        return subprocess.run(["sh", os.path.join(self.src, "deploy/kubernetes/install.sh"), *args], env=self.env,
                              capture_output=True, text=True)

    def files(self):
        return sorted(os.path.relpath(os.path.join(r, f), self.host) for r, _, fs in os.walk(self.host) for f in fs)

    def containerd_config(self, text=None):
        if text is not None:
            with open(self.ctrd_config, "w") as f:
                f.write(text)
        with open(self.ctrd_config) as f:
            return f.read()


def written_before(out, first, then):
    """Both named in install.sh's output, FIRST on an earlier line than THEN."""
    lines = out.splitlines()
    at = [next((i for i, l in enumerate(lines) if w in l), None) for w in (first, then)]
    return None not in at and at[0] < at[1]


def check_install_run(src, binary, uninstall_args):
    """install.sh run for real; the hook paths in what lands there name the binary that
    landed there; run again with the uninstall overlay's arguments, nothing of it left but
    the two directories the kubelet made (the pod's mount points), empty."""
    with tempfile.TemporaryDirectory(prefix="cachepin-install-") as d:
        node = Node(src, binary, d)
        host = node.host
        node.containerd_config(MAIN_V2)
        r = node.run()
        check("install.sh: runs", r.returncode == 0, r.stderr.strip())
        landed = host + BIN
        check(f"install.sh: {BIN}, executable", os.access(landed, os.X_OK))
        spec = json.loads(open(host + BASE_SPEC).read()) if os.path.exists(host + BASE_SPEC) else {}
        paths = {e["path"] for es in spec.get("hooks", {}).values() for e in es}
        check(f"install.sh: {BASE_SPEC}, its hooks naming {BIN}", paths == {BIN}, str(paths))
        for name in ("cachepin-create.json", "cachepin-poststop.json"):
            f = host + PREFIX + "/share/containers/oci/hooks.d/" + name
            ok = os.path.exists(f) and json.loads(open(f).read())["hook"]["path"] == BIN
            check(f"install.sh: hooks.d/{name}, naming {BIN}", ok)
        cfg = host + ETC + "/config.json"
        check(f"install.sh: {ETC}/config.json is the ConfigMap's",
              os.path.exists(cfg) and open(cfg).read() == node.cm)
        left = [f for _, _, fs in os.walk(host) for f in fs if ".tmp." in f]
        check("install.sh: no temporary file left", not left, str(left))
        check_containerd_install(node, r)
        node.containerd_config(MAIN_V3)
        node.run()
        r = node.run(*uninstall_args)
        dirs = sorted(os.path.relpath(os.path.join(w, x), host) for w, ds, _ in os.walk(host) for x in ds)
        want = sorted(["etc", "etc/cachepin", "etc/containerd", "opt", "opt/cachepin"])
        check(f"install.sh {' '.join(uninstall_args)}: the node's files as they were, {PREFIX} and {ETC} left empty",
              r.returncode == 0 and dirs == want and node.files() == [CONTAINERD_ETC[1:] + "/config.toml"]
              and node.containerd_config() == MAIN_V3, f"{dirs} {node.files()} {r.stderr}")


def check_containerd_install(node, r):
    """The handler in the node's containerd config, in that config's version; the base spec
    written before it and removed after it; a config of version 1 refused, nothing written.
    What containerd itself makes of the result is tests/cri/containerd.sh's (config dump)."""
    check("install.sh: the base spec is written before the containerd config that names it",
          written_before(r.stdout, BASE_SPEC, node.ctrd_config), r.stdout)
    for version, main in ((2, MAIN_V2), (3, MAIN_V3)):
        node.containerd_config(main)
        node.run()
        r = node.run()  # twice: one handler, the first one replaced
        text = node.containerd_config()
        try:
            conf = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            conf = {}
            check(f"containerd config {version}: still TOML after the install", False, str(e))
        runtimes = lookup(conf, HANDLER_TABLE[version])
        check(f"containerd config {version}: keeps version {version}", conf.get("version") == version)
        check(f"containerd config {version}: the cachepin handler naming {BASE_SPEC}",
              runtimes.get(HANDLER, {}).get("base_runtime_spec") == BASE_SPEC, str(runtimes.get(HANDLER)))
        check(f"containerd config {version}: runc keeps SystemdCgroup = true, and cachepin follows it",
              runtimes.get("runc", {}).get("options", {}).get("SystemdCgroup") is True
              and runtimes.get(HANDLER, {}).get("options", {}).get("SystemdCgroup") is True, str(runtimes))
        check(f"containerd config {version}: installed twice, one handler", text.count("# BEGIN cachepin") == 1)
        r = node.run("uninstall")
        check(f"containerd config {version}: uninstall gives the file back as it was",
              node.containerd_config() == main, node.containerd_config())
        check(f"containerd config {version}: uninstall takes the handler out before removing the base spec",
              written_before(r.stdout, node.ctrd_config, BASE_SPEC), r.stdout)
        check(f"containerd config {version}: uninstall leaves only the containerd config",
              node.files() == [CONTAINERD_ETC[1:] + "/config.toml"], str(node.files()))
    # A version-2 config without a handler of its own (Debian's): containerd 1.x would lose
    # its default runc handler to ours, so the block defines it too.
    bare = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\n  conf_dir = "/etc/cni/net.d"\n'
    node.containerd_config(bare)
    node.run()
    runtimes = lookup(tomllib.loads(node.containerd_config()), HANDLER_TABLE[2])
    check("containerd config 2 without handlers: the block adds runc (1.x's default) with cachepin",
          sorted(runtimes) == ["cachepin", "runc"] and runtimes["runc"].get("runtime_type") == "io.containerd.runc.v2",
          str(runtimes))
    node.run("uninstall")
    check("containerd config 2 without handlers: uninstall gives it back", node.containerd_config() == bare)
    v1 = '[plugins.cri]\n  sandbox_image = "registry.example/pause:custom"\n'
    node.containerd_config(v1)
    r = node.run()
    err = r.stderr.strip().splitlines()
    check("containerd config 1: refused in one line naming `containerd config migrate`",
          r.returncode != 0 and len(err) == 1 and "containerd config migrate" in err[0], r.stderr)
    check("containerd config 1: nothing written", node.containerd_config() == v1
          and node.files() == [CONTAINERD_ETC[1:] + "/config.toml"], str(node.files()))


def main(argv):
    src, binary = argv[1], os.path.realpath(argv[2])
    version = project_version(src)
    kubectl = sid_kubectl(src)
    if not kubectl:
        print(f"SKIP: Debian sid's {KUBECTL_DEB} cannot be had (the archive is unreachable and nothing is cached)")
        return 77
    check_snippets(src)
    check_base_spec(src)
    check_image_build(src, version)
    check_comments(src)
    rendered = {o: render(kubectl, src, o) for o in OVERLAYS}
    uninstall_args = ["uninstall"]
    for overlay, k in rendered.items():
        if not k:
            continue
        ds, pod, vols = check_common(overlay, k, version, binary)
        if overlay.startswith("hook"):
            args = check_hook_overlay(src, overlay, k, pod, vols)
            if overlay == "hook-uninstall":
                uninstall_args = args
        elif overlay in ("nri", "nri-dra"):
            check_nri_overlay(src, binary, pod, vols, overlay)
            if overlay == "nri-dra":
                check_nri_dra_overlay(binary, k, ds, rendered.get("nri"))
        else:
            check_nri_uninstall(src, binary, pod, vols)
    check_examples(src, binary, rendered.get("hook"))
    manifests_docs.check_docs(check, src, rendered)
    check_required_plugins(src, binary)
    check_install_run(src, binary, uninstall_args)
    print(f"{'FAILED' if failures else 'passed'}: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
