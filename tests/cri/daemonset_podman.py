#!/usr/bin/python3
"""A rendered DaemonSet's pod as podman runs it: cri.nri.image runs the NRI route's DaemonSet
(deploy/kubernetes/overlays/nri, rendered by kubectl) from the image built here, with exactly
the privileges, mounts and limits the manifest gives it, so that a manifest that asks too
little for the plugin to register and place fails a test.

    daemonset_podman.py RENDERED.yaml CONTAINER IMAGE NAME CONFIG_DIR HOSTPATH=LOCAL...
    daemonset_podman.py --probes RENDERED.yaml CONTAINER

The second form prints the container's HTTP probes, one a line: KIND PORT PATH (readinessProbe
9464 /readyz), a named port resolved through the container's ports, as the kubelet does; the
test sends them into the container's network namespace as the kubelet does to the pod's IP.

Prints the arguments of `podman run` for the pod template's container (or init container)
CONTAINER, NUL-separated: the test's IMAGE for the manifest's, NAME as the container's name,
each hostPath volume at the LOCAL directory given for it (a host path without one is an
error: the test must say where each of the node's paths is), each ConfigMap volume written
into CONFIG_DIR/<volume> from the rendered ConfigMap. A field of the container or the pod
that it does not know how to give podman is an error on stderr (exit 1), never dropped: the
test then says what it could not try, rather than trying less than the manifest says.
"""

import os
import sys

import yaml

# Fields that change nothing of what podman must do to run the container as a kubelet
# would on one node: scheduling, names, the probes (the test runs those itself), the image
# pull policy (the image is local).
IGNORED_CONTAINER = {"name", "image", "imagePullPolicy", "readinessProbe", "livenessProbe", "startupProbe",
                     "terminationMessagePolicy", "terminationMessagePath", "ports"}
IGNORED_POD = {"containers", "initContainers", "volumes", "priorityClassName", "tolerations",
               "terminationGracePeriodSeconds", "enableServiceLinks", "automountServiceAccountToken",
               "serviceAccountName", "nodeSelector", "affinity", "hostPID", "hostNetwork", "dnsPolicy"}


def fail(msg):
    sys.stderr.write(f"daemonset_podman: {msg}\n")
    sys.exit(1)


def mebibytes(quantity):
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    for suffix, scale in units.items():
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * scale)
    fail(f"resources.limits.memory {quantity!r}: only Ki, Mi and Gi are known here")


def security_args(sc):
    out = []
    for key, value in sc.items():
        if key == "privileged":
            out += ["--privileged"] if value else []
        elif key == "readOnlyRootFilesystem":
            out += ["--read-only"] if value else []
        elif key == "runAsUser":
            out += ["--user", str(value) + (":" + str(sc["runAsGroup"]) if "runAsGroup" in sc else "")]
        elif key == "runAsGroup":
            continue  # with runAsUser
        elif key == "allowPrivilegeEscalation":
            out += [] if value else ["--security-opt", "no-new-privileges"]
        elif key == "capabilities":
            for cap in value.get("drop", []):
                out += ["--cap-drop", cap]
            for cap in value.get("add", []):
                out += ["--cap-add", cap]
        elif key == "seccompProfile":
            if value.get("type") != "RuntimeDefault":
                fail(f"securityContext.seccompProfile {value!r}: only RuntimeDefault is known here")
            # podman's default profile is the runtime's default.
        else:
            fail(f"securityContext.{key}: not known here")
    return out


def resource_args(res):
    out = []
    for key, value in res.get("limits", {}).items():
        if key == "memory":
            out += ["--memory", f"{mebibytes(value)}m"]
        elif key == "cpu":
            out += ["--cpus", str(int(value[:-1]) / 1000 if value.endswith("m") else value)]
        else:
            fail(f"resources.limits.{key}: not known here")
    return out  # requests place a pod on a node; on the node they only weigh CPU shares


def volume_args(mounts, volumes, configmaps, host_paths, config_dir):
    out = []
    for m in mounts:
        vol = volumes.get(m["name"])
        if vol is None:
            fail(f"volumeMounts {m['name']}: no such volume")
        opts = "ro" if m.get("readOnly") else "rw"
        if "hostPath" in vol:
            path = vol["hostPath"]["path"]
            if path not in host_paths:
                fail(f"volume {m['name']}: hostPath {path} has no local directory given")
            out += ["-v", f"{host_paths[path]}:{m['mountPath']}:{opts}"]
        elif "configMap" in vol:
            cm = configmaps.get(vol["configMap"]["name"])
            if cm is None:
                fail(f"volume {m['name']}: ConfigMap {vol['configMap']['name']} is not rendered")
            d = os.path.join(config_dir, m["name"])
            os.makedirs(d, exist_ok=True)
            for fname, text in cm.get("data", {}).items():
                with open(os.path.join(d, fname), "w") as f:
                    f.write(text)
            out += ["-v", f"{d}:{m['mountPath']}:ro"]
        else:
            fail(f"volume {m['name']}: only hostPath and configMap are known here")
    return out


def probes(rendered, cname):
    with open(rendered) as f:
        ds = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "DaemonSet"]
    pod = ds[0]["spec"]["template"]["spec"]
    c = {c["name"]: c for c in pod["containers"]}.get(cname) or fail(f"no container {cname}")
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", []) if "name" in p}
    for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
        probe = c.get(kind)
        if probe is None:
            continue
        get = probe.get("httpGet") or fail(f"container {cname}: {kind} is not httpGet")
        port = get["port"]
        port = ports.get(port) or fail(f"{kind}: no port named {port}") if isinstance(port, str) else port
        print(kind, port, get.get("path", "/"))
    return 0


def main(argv):
    if argv[:1] == ["--probes"] and len(argv) == 3:
        return probes(argv[1], argv[2])
    if len(argv) < 5:
        fail("usage: RENDERED.yaml CONTAINER IMAGE NAME CONFIG_DIR HOSTPATH=LOCAL...")
    rendered, cname, image, name, config_dir = argv[:5]
    host_paths = dict(a.split("=", 1) for a in argv[5:])
    with open(rendered) as f:
        objects = [d for d in yaml.safe_load_all(f) if d]
    ds = [d for d in objects if d["kind"] == "DaemonSet"]
    if len(ds) != 1:
        fail(f"{len(ds)} DaemonSets rendered, one expected")
    configmaps = {d["metadata"]["name"]: d for d in objects if d["kind"] == "ConfigMap"}
    pod = ds[0]["spec"]["template"]["spec"]
    for key in pod:
        if key not in IGNORED_POD:
            fail(f"the pod's {key}: not known here")
    containers = {c["name"]: c for c in pod.get("initContainers", []) + pod["containers"]}
    c = containers.get(cname) or fail(f"no container {cname}")
    for key in c:
        if key not in IGNORED_CONTAINER | {"command", "args", "securityContext", "resources", "volumeMounts", "env"}:
            fail(f"container {cname}: {key} not known here")
    args = ["--name", name, "--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
    args += ["--pid", "host"] if pod.get("hostPID") else []
    args += ["--network", "host" if pod.get("hostNetwork") else "none"]
    args += security_args(c.get("securityContext", {}))
    args += resource_args(c.get("resources", {}))
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    args += volume_args(c.get("volumeMounts", []), volumes, configmaps, host_paths, config_dir)
    for e in c.get("env", []):
        if "value" not in e:
            fail(f"container {cname}: env {e['name']} is not a plain value")
        args += ["--env", f"{e['name']}={e['value']}"]
    command = c.get("command") or fail(f"container {cname}: no command (the image's entrypoint is the installer's)")
    args += ["--entrypoint", command[0], image] + command[1:] + c.get("args", [])
    sys.stdout.write("\0".join(args) + "\0")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
