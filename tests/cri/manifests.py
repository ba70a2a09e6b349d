#!/usr/bin/python3
"""The Kubernetes and containerd files under deploy/ agree with each other and with the
install layout they put on a node (docs/kubernetes.md): prefix /opt/cachepin, the binary at
<prefix>/bin/cachepin, the hooks.d files at <prefix>/share/containers/oci/hooks.d/, the
containerd snippets and base spec at <prefix>/share/containerd/, the host config at
/etc/cachepin/config.json; one installer image name, tagged with the project's version; the
runtime handler, RuntimeClass and node label the same everywhere; the installer holds only
the host paths and privileges it needs; the example pod's annotations are values the real
binary accepts; the base spec has no rlimits; nri-plugin.yaml runs `cachepin nri` as the
binary accepts it, with the node's paths, pids and priority the plugin needs; install.sh, run for real, adds the handler to a
containerd config in that config's version (keeping its settings, runc included), writes the
base spec before the config and uninstalls in the reverse order, and refuses a version-1
config in one line, writing nothing.

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


def check_installer(src, version):
    k = docs_by_kind(src, "deploy/kubernetes/installer.yaml")
    check("installer.yaml: a Namespace, a ConfigMap and a DaemonSet",
          all(len(k.get(x, [])) == 1 for x in ("Namespace", "ConfigMap", "DaemonSet")), str(sorted(k)))
    ns = k["Namespace"][0]["metadata"]["name"]
    cm, ds = k["ConfigMap"][0], k["DaemonSet"][0]
    check("installer.yaml: everything in its namespace",
          cm["metadata"].get("namespace") == ns and ds["metadata"].get("namespace") == ns)
    try:
        json.loads(cm["data"]["config.json"])
        check("ConfigMap: config.json is JSON", True)
    except (KeyError, ValueError) as e:
        check("ConfigMap: config.json is JSON", False, str(e))

    pod = ds["spec"]["template"]["spec"]
    check("DaemonSet: selector matches its pods' labels",
          ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items())
    check(f"DaemonSet: runs on nodes labelled {NODE_LABEL[0]}={NODE_LABEL[1]}",
          pod.get("nodeSelector") == dict([NODE_LABEL]), str(pod.get("nodeSelector")))
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        check(f"DaemonSet: no {host}", not pod.get(host))
    check("DaemonSet: no service account token", pod.get("automountServiceAccountToken") is False)

    vols = {v["name"]: v for v in pod["volumes"]}
    host_paths = {v["hostPath"]["path"] for v in vols.values() if "hostPath" in v}
    check(f"DaemonSet: host paths {PREFIX}, {ETC} and {CONTAINERD_ETC}, nothing else",
          host_paths == {PREFIX, ETC, CONTAINERD_ETC}, str(host_paths))
    cms = [v["configMap"]["name"] for v in vols.values() if "configMap" in v]
    check("DaemonSet: mounts the ConfigMap it ships", cms == [cm["metadata"]["name"]], str(cms))

    containers = pod.get("initContainers", []) + pod["containers"]
    images = {c["image"] for c in containers}
    want = f"/{IMAGE_NAME}:{version}"
    check(f"DaemonSet: one image, .../{IMAGE_NAME}:{version}",
          len(images) == 1 and next(iter(images)).endswith(want), str(images))
    check("DaemonSet: the image's registry is the reserved placeholder registry.example",
          all(i.startswith("registry.example/") for i in images), str(images))
    for c in containers:
        sc = c.get("securityContext", {})
        name = c["name"]
        check(f"{name}: not privileged, no privilege escalation, read-only root",
              sc.get("privileged") is False and sc.get("allowPrivilegeEscalation") is False
              and sc.get("readOnlyRootFilesystem") is True)
        caps = sc.get("capabilities", {})
        check(f"{name}: drops every capability, adds none", caps.get("drop") == ["ALL"] and not caps.get("add"))
        check(f"{name}: limits set", "limits" in c.get("resources", {}))
        for m in c.get("volumeMounts", []):
            v = vols[m["name"]]
            if "hostPath" in v:
                check(f"{name}: host {v['hostPath']['path']} mounted at /host{v['hostPath']['path']} (install.sh's)",
                      m["mountPath"] == "/host" + v["hostPath"]["path"], m["mountPath"])
            if "configMap" in v:
                check(f"{name}: the ConfigMap at /config, read-only", m["mountPath"] == "/config" and m.get("readOnly"))
    init = pod.get("initContainers", [])
    check("DaemonSet: the init container installs (the image's entrypoint, no command)",
          len(init) == 1 and "command" not in init[0])
    env = {e["name"]: e.get("value") for e in (init[0].get("env", []) if init else [])}
    want = f"/host{CONTAINERD_ETC}/config.toml"
    check(f"DaemonSet: the installer writes the handler into {want} (CACHEPIN_CONTAINERD_CONFIG)",
          env.get("CACHEPIN_CONTAINERD_CONFIG") == want, str(env))
    idle = [c for c in pod["containers"] if not c.get("volumeMounts")]
    check("DaemonSet: the long-running container mounts nothing and is not root",
          len(idle) == len(pod["containers"]) and all(c["securityContext"].get("runAsNonRoot") for c in idle))


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


def check_nri_plugin(src, binary):
    """nri-plugin.yaml: `cachepin nri` on every node, with the host paths, namespaces and
    priority it needs, a command the binary accepts, the installer's image."""
    k = docs_by_kind(src, "deploy/kubernetes/nri-plugin.yaml")
    check("nri-plugin.yaml: one DaemonSet, nothing else", list(k) == ["DaemonSet"] and len(k["DaemonSet"]) == 1,
          str(sorted(k)))
    ds = k["DaemonSet"][0]
    pod = ds["spec"]["template"]["spec"]
    check("nri-plugin: in kube-system", ds["metadata"].get("namespace") == "kube-system")
    check("nri-plugin: selector matches its pods' labels",
          ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items())
    check("nri-plugin: priorityClassName system-node-critical", pod.get("priorityClassName") == "system-node-critical")
    check("nri-plugin: tolerates every taint (every node)", {"operator": "Exists"} in pod.get("tolerations", []))
    check("nri-plugin: no nodeSelector (every node)", "nodeSelector" not in pod)
    # The ledger's hook entries are freed when their pid is gone: the node's pids, not a namespace's.
    check("nri-plugin: hostPID", pod.get("hostPID") is True)
    for host in ("hostNetwork", "hostIPC"):
        check(f"nri-plugin: no {host}", not pod.get(host))
    check("nri-plugin: no service account token", pod.get("automountServiceAccountToken") is False)

    state = default_state_dir(binary)
    check(f"the binary's default state directory is /run/cachepin ({state})", state == "/run/cachepin")
    vols = {v["name"]: v for v in pod["volumes"]}
    host_paths = {v["hostPath"]["path"] for v in vols.values() if "hostPath" in v}
    want_paths = {"/var/run/nri", state, "/sys", ETC}
    check(f"nri-plugin: host paths {sorted(want_paths)}, nothing else", host_paths == want_paths, str(host_paths))
    check("nri-plugin: no other volume", len(vols) == len(host_paths), str(sorted(vols)))
    (c,) = pod["containers"]
    mounts = {vols[m["name"]]["hostPath"]["path"]: m for m in c.get("volumeMounts", [])}
    check("nri-plugin: the plugin mounts each host path at the same path (the config's paths are the node's)",
          sorted(mounts) == sorted(want_paths) and all(m["mountPath"] == p for p, m in mounts.items()),
          str({p: m["mountPath"] for p, m in mounts.items()}))
    check("nri-plugin: /sys and /etc/cachepin read-only, the socket and the state directory writable",
          all(mounts.get(p, {}).get("readOnly") is True for p in ("/sys", ETC))
          and all(not mounts.get(p, {}).get("readOnly") for p in ("/var/run/nri", state)))
    check("nri-plugin: /var/run/nri must exist (the runtime makes it when NRI is on)",
          vols["nri"]["hostPath"].get("type") == "Directory")
    sc = c.get("securityContext", {})
    # On cgroup v2 only a privileged container stays in the host's cgroup namespace.
    check("nri-plugin: privileged, root", sc.get("privileged") is True and sc.get("runAsUser") == 0)
    res = c.get("resources", {})
    check("nri-plugin: requests cpu and memory, limits memory and not cpu",
          {"cpu", "memory"} <= set(res.get("requests", {})) and "memory" in res.get("limits", {})
          and "cpu" not in res.get("limits", {}), str(res))
    check("nri-plugin: no liveness probe (it exits when its connection closes)", "livenessProbe" not in c)

    installer = docs_by_kind(src, "deploy/kubernetes/installer.yaml")["DaemonSet"][0]["spec"]["template"]["spec"]
    images = {x["image"] for x in pod["containers"] + pod.get("initContainers", [])}
    want = {x["image"] for x in installer["containers"]}
    check(f"nri-plugin: the installer's image ({sorted(want)})", images == want, str(images))
    cmd = c.get("command", []) + c.get("args", [])
    check(f"nri-plugin: runs {BIN} nri (the image's copy, Containerfile's /opt/cachepin)",
          cmd[:2] == [BIN, "nri"], str(cmd))
    cf = read(src, "deploy/kubernetes/Containerfile")
    check(f"Containerfile: {PREFIX} is the image's /cachepin (the bundled binary runs there)",
          f"ln -s /cachepin {PREFIX}" in cf)
    # The options, as the binary parses them: an option it refuses fails before --help.
    r = subprocess.run([binary] + cmd[1:] + ["--help"], capture_output=True, text=True)
    check(f"nri-plugin: `cachepin {' '.join(cmd[1:])}` is accepted (--help after it exits 0)",
          r.returncode == 0 and r.stdout.startswith("Usage: cachepin nri"), r.stderr.strip())
    args = dict(zip(cmd[2::2], cmd[3::2]))
    check("nri-plugin: the default socket", args.get("--socket", "/var/run/nri/nri.sock") == "/var/run/nri/nri.sock")
    # The state directory the kubelet may make (0755) is made 0700 before the plugin
    # starts, and only when empty.
    init = pod.get("initContainers", [])
    script = " ".join(init[0].get("command", [])) if init else ""
    check(f"nri-plugin: an init container makes an empty {state} 0700 and mounts nothing else",
          len(init) == 1 and f"chmod 0700 {state}" in script and f"ls -A {state}" in script
          and [vols[m["name"]]["hostPath"]["path"] for m in init[0].get("volumeMounts", [])] == [state], script)
    isc = init[0].get("securityContext", {}) if init else {}
    check("nri-plugin: the init container drops every capability, no privilege escalation",
          isc.get("capabilities", {}).get("drop") == ["ALL"] and isc.get("allowPrivilegeEscalation") is False)
    check_state_dir_script(script, state)


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


def check_runtimeclass_and_pod(src, binary):
    rc = docs_by_kind(src, "deploy/kubernetes/runtimeclass.yaml")["RuntimeClass"][0]
    check(f"RuntimeClass: handler {HANDLER} (the containerd snippets')", rc["handler"] == HANDLER)
    check(f"RuntimeClass: schedules onto {NODE_LABEL[0]}={NODE_LABEL[1]} nodes, as the DaemonSet runs",
          rc.get("scheduling", {}).get("nodeSelector") == dict([NODE_LABEL]))
    pod = docs_by_kind(src, "deploy/kubernetes/example-pod.yaml")["Pod"][0]
    check("example pod: uses the RuntimeClass", pod["spec"].get("runtimeClassName") == rc["metadata"]["name"])
    ann = pod["metadata"].get("annotations", {})
    ours = {k[len("cachepin.io/"):]: v for k, v in ann.items() if k.startswith("cachepin.io/")}
    check("example pod: asks with cachepin.io/ annotations", bool(ours))
    limits = [c.get("resources", {}).get("limits", {}).get("cpu") for c in pod["spec"]["containers"]]
    check("example pod: its CPU limit is the CPUs it asks for", all(l == ours.get("cpus") for l in limits),
          f"{limits} vs {ours.get('cpus')}")
    # The values, as the hook parses them: cachepin plan takes the same spellings.
    args = [binary, "plan", "--topology", "pack:1 l3:2 core:4 pu:2"]
    for k, v in ours.items():
        if k == "strict":
            args += ["--strict"] if v == "true" else []
            check("example pod: strict is true or false", v in ("true", "false"), v)
        elif k == "mems":
            check("example pod: mems is local or keep", v in ("local", "keep"), v)
        else:
            args += [f"--{k}", v]
    r = subprocess.run(args, capture_output=True, text=True)
    check("example pod: cachepin plan accepts its annotations' values", r.returncode == 0, r.stderr.strip())


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
    pod = docs_by_kind(src, "deploy/kubernetes/example-strict-pod.yaml")["Pod"][0]
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
        self.cm = docs_by_kind(src, "deploy/kubernetes/installer.yaml")["ConfigMap"][0]["data"]["config.json"]
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


def check_install_run(src, binary):
    """install.sh run for real; the hook paths in what lands there name the binary that
    landed there."""
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
    check_snippets(src)
    check_base_spec(src)
    check_image_build(src, version)
    check_installer(src, version)
    check_runtimeclass_and_pod(src, binary)
    check_nri_plugin(src, binary)
    check_required_plugins(src, binary)
    check_install_run(src, binary)
    print(f"{'FAILED' if failures else 'passed'}: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
