"""What docs/kubernetes.md says each route's pod holds, against the rendered DaemonSets
(tests/cri/manifests.py renders them and calls check_docs): the host directories the page
names are the DaemonSet's hostPath volumes, no more and no fewer; where it says read-only, or
a hostPath type, the manifest says so; the NRI route's resources are the ones the page gives;
its ConfigMap is mounted where the page says."""

import re

PAGE = "docs/kubernetes.md"


def section(text, start, end):
    i = text.find(start)
    j = text.find(end, i + 1) if i >= 0 else -1
    return text[i:j] if i >= 0 and j > i else ""


def paths(text):
    return {p for p in re.findall(r"`(/[^`\s]*)`", text)}


def host_paths(pod):
    return {v["hostPath"]["path"]: v["hostPath"].get("type", "") for v in pod.get("volumes", []) if "hostPath" in v}


def mounts_of(pod, volume):
    return [m for c in pod.get("initContainers", []) + pod["containers"] for m in c.get("volumeMounts", [])
            if m["name"] == volume]


def check_nri(check, page, pod):
    holds = section(page, "What its pod holds, and why", "Not mounted:")
    bullet = section(holds, "- **host paths**", "\n- **")
    named = paths(bullet.split("The ConfigMap is mounted")[0])
    hp = host_paths(pod)
    check(f"{PAGE}, NRI route: the host paths it names ({sorted(named)}) are the DaemonSet's ({sorted(hp)})",
          bool(named) and named == set(hp))
    for path, kind in hp.items():
        said = re.search(r"`" + re.escape(path) + r"` \([^)]*`type: (\w+)`", bullet)
        if said:
            check(f"{PAGE}, NRI route: {path} is `type: {said.group(1)}` as the page says ({kind})", said.group(1) == kind)
        vols = [v["name"] for v in pod["volumes"] if v.get("hostPath", {}).get("path") == path]
        ro = all(m.get("readOnly") for v in vols for m in mounts_of(pod, v))
        says_ro = re.search(r"`" + re.escape(path) + r"` read-only", bullet) is not None
        check(f"{PAGE}, NRI route: {path} is {'read-only' if says_ro else 'writable'} as the page says",
              says_ro == ro)
    cm = re.search(r"The ConfigMap is mounted at `([^`]+)`", bullet)
    cm_mounts = {m["mountPath"] for v in pod["volumes"] if "configMap" in v for m in mounts_of(pod, v["name"])}
    check(f"{PAGE}, NRI route: the ConfigMap is mounted at {cm.group(1) if cm else '?'} ({sorted(cm_mounts)})",
          cm is not None and cm_mounts == {cm.group(1)})
    res = section(holds, "- **resources**", "\n- **")
    want = re.search(r"requests (\w+) CPU and (\w+), a (\w+) memory limit, no CPU limit", res)
    plugin = [c for c in pod["containers"] if "nri" in c.get("command", [])]
    got = plugin[0].get("resources", {}) if plugin else {}
    check(f"{PAGE}, NRI route: resources as the page says ({want.groups() if want else '?'}: {got})",
          want is not None and got.get("requests", {}).get("cpu") == want.group(1)
          and got.get("requests", {}).get("memory") == want.group(2)
          and got.get("limits", {}).get("memory") == want.group(3) and "cpu" not in got.get("limits", {}))


def check_hook(check, page, pod):
    holds = section(page, "What its pod holds: ", "nothing else of the node")
    named = paths(holds)
    hp = host_paths(pod)
    check(f"{PAGE}, hook route: the host directories it names ({sorted(named)}) are the DaemonSet's ({sorted(hp)})",
          bool(named) and named == set(hp))


def check_docs(check, src, rendered):
    with open(f"{src}/{PAGE}", encoding="utf-8") as f:
        page = f.read()
    for overlay, fn in (("nri", check_nri), ("hook", check_hook)):
        k = rendered.get(overlay)
        if k:
            fn(check, page, k["DaemonSet"][0]["spec"]["template"]["spec"])
