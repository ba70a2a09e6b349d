#!/usr/bin/python3
"""`cachepin nri --kubelet-plugin --dra-node`: the agent as the kubelet's DRA plugin, end to end:
a real API server (tests/dra/kubelet.sh brings it up: tests/dra/lib.sh), the Go kubelet stand-in
(tests/dra/kubelet, standin-lib.sh) registering the agent and calling it, and the NRI runtime
emulator (tests/nri/nri_emu.py) creating the claim's container.

    /usr/bin/python3 tests/dra/kubelet.py PATH-TO-cachepin PATH-TO-kubelet-standin

The promises (docs/dra.md "The kubelet's route"): a ResourceClaim allocated as the scheduler's
structured allocator would (first fit: the published slice's first device with the capacity,
consumedCapacity cpus: N) is prepared on NodePrepareResources: the answer names pool = the node,
the device and the CDI device cachepin.io/claim=<uid>-0; the ledger holds the claim's dra:claim
entries, N CPUs inside that device (its CPUs computed from the pinned topology's L3s, never
hard-coded); the CDI spec is in cdi_dir; CreateContainer of a container given that device (the
spec's mount) is answered with those CPUs, one that sets CACHEPIN_DRA_CLAIM=<uid> itself is not;
prepare again: the same; the agent killed and started again: prepare again the same; unprepare:
the entries and the spec gone; the metrics count the kubelet's calls by outcome. A claim whose uid is not the kubelet's: an error naming both, nothing recorded. The
API server stopped: prepare answered with the fetch's error within the bound, and the NRI path
answers the claim's container as fast as ever.

Exit: 0 passed, 1 failed, 77 skipped (what tests/nri/emu_tests.py skips for).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "nri"))
import emu_tests  # noqa: E402
import http_tests  # noqa: E402
import agent  # noqa: E402  (agent.py's API helpers)
from agent import D, G, NODE, URL, api, listed, wait  # noqa: E402
from emu_tests import adjusted_cpus, cgroup, cpulist  # noqa: E402
from nri_emu import Emu, container, pod  # noqa: E402

STANDIN = None
N = 1  # the claim's CPUs


def standin(root, op, *args):
    r = subprocess.run([STANDIN, op, "-ctl", os.path.join(root, "standin.sock"), *args], capture_output=True,
                       text=True, timeout=120)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ok": False, "error": f"no JSON (exit {r.returncode}): {r.stdout} {r.stderr}"}


def device_cpus(host):
    """{device: its CPUs (a set)}: device l3-N is the topology's L3 of logical index N (hwloc's
    XML: the L3Cache objects in order, their cpusets)."""
    with open(host.topology) as f:
        xml = f.read()
    out = {}
    for i, m in enumerate(re.finditer(r'<object type="L3Cache"[^>]*?cpuset="([0-9a-fx,]+)"', xml)):
        mask = int(m.group(1).replace("0x", "").replace(",", ""), 16)
        out[f"l3-{i}"] = {b for b in range(mask.bit_length()) if mask >> b & 1}
    return out


def claim_entries(host, uid):
    return {e["id"]: cpulist(e["cpus"]) for e in host.status()["ledger"]["entries"]
            if e["id"].startswith(f"dra:claim:{uid}:")}


def make_claim(name):
    """claim NAME created and allocated first-fit (N CPUs): (uid, device)."""
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "cpus", "exactly": {
                "deviceClassName": "cachepin.io-l3-cpus", "capacity": {"requests": {"cpus": str(N)}}}}]}}}
    code, got = api("POST", f"{G}/namespaces/default/resourceclaims", body=body)
    if code != 201:
        raise RuntimeError(f"create claim {name}: HTTP {code}: {got}")
    # first fit as the structured allocator: the slices' devices in order, the first with N left
    first = next((d["name"] for s in listed() for d in s["spec"]["devices"]
                  if int(d["capacity"]["cpus"]["value"]) >= N), None)
    got["status"] = {"allocation": {
        "devices": {"results": [{"request": "cpus", "driver": "cachepin.io", "pool": NODE, "device": first,
                                 "consumedCapacity": {"cpus": str(N)}}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}}}
    code, put = api("PUT", f"{G}/namespaces/default/resourceclaims/{name}/status", body=got)
    if code != 200:
        raise RuntimeError(f"allocate claim {name}: HTTP {code}: {put}")
    return got["metadata"]["uid"], first


def given(c, answer, cdi, uid):
    """Container C given the CDI devices of ANSWER (a device of claim UID's answer) as the
    runtime does it (containerd applies the spec's edits before NRI's CreateContainer):
    their environment and mounts, read from the claim's spec in CDI."""
    spec = json.load(open(os.path.join(cdi, f"cachepin.io-claim_{uid}.json")))
    for ident in answer.get("cdiDeviceIDs") or []:
        name = ident.split("=", 1)[1]
        (dev,) = [d for d in spec["devices"] if d["name"] == name]
        c.env.extend(dev["containerEdits"].get("env", []))
        for m in dev["containerEdits"].get("mounts", []):
            c.mounts.add(source=m["hostPath"], destination=m["containerPath"], type="bind",
                         options=m.get("options", []))
    return c


def start_agent(emu, host, root, metrics=False):
    """The agent started and connected; with METRICS, its listener's port."""
    args = ["--kubelet-plugin", "--kubelet-root", root, "--dra-node", NODE, "--kube-api", URL, "--kube-ca",
            os.path.join(D, "ca.crt"), "--kube-token-file", os.path.join(D, "token")]
    port = None
    if metrics:
        port = http_tests.start(emu, host, *args)
    else:
        path = emu.listen(os.path.join(host.dir, "nri.sock"))
        emu.start_plugin([emu_tests.BIN, "nri", "--socket", path, "--config", host.config, *args],
                         log=os.path.join(host.dir, "plugin.log"))
    emu.connect()
    return port


def run(t, host):
    root = os.path.join(host.dir, "kubelet")
    os.mkdir(root)
    cdi = os.path.join(host.dir, "cdi")
    cfg = json.load(open(host.config))
    cfg["cdi_dir"] = cdi
    with open(host.config, "w") as f:
        json.dump(cfg, f)
    cpus_of = device_cpus(host)
    # The kubelet's retries, shortened: a failed prepare is retried for 10 s, not 2 minutes.
    sp = subprocess.Popen([STANDIN, "serve", "-root", root, "-ctl", os.path.join(root, "standin.sock"),
                           "-backoff", "1s", "-give-up", "10s"],
                          stdout=open(os.path.join(host.dir, "standin.log"), "w"), stderr=subprocess.STDOUT)
    try:
        wait(lambda: os.path.exists(os.path.join(root, "standin.sock")), 10)
        with Emu(style="v0.8", workdir=host.dir) as emu:
            start_agent(emu, host, root)
            t.check("the slices published", wait(listed, 15))
            w = standin(root, "wait", "-driver", "cachepin.io", "-timeout", "20s")
            t.check("the stand-in registered the agent", w.get("ok"), w)
            uid, dev = make_claim("claim-k")
            print(f"     (claim-k {uid}: first fit {dev}, {N} CPU; its CPUs {cpus_of.get(dev)})")
            t0 = time.monotonic()
            r = standin(root, "prepare", "-claim", f"{uid}/default/claim-k", "-driver", "cachepin.io")
            took = time.monotonic() - t0
            devs = r.get("devices") or [{}]
            t.check(f"prepare answered in {took:.2f} s: pool {NODE}, device {dev}, request cpus, "
                    f"cachepin.io/claim={uid}-0",
                    r.get("ok") and len(devs) == 1 and devs[0].get("poolName") == NODE
                    and devs[0].get("deviceName") == dev and devs[0].get("requestNames") == ["cpus"]
                    and devs[0].get("cdiDeviceIDs") == [f"cachepin.io/claim={uid}-0"], r)
            held = claim_entries(host, uid)
            allcpus = set().union(*held.values()) if held else set()
            t.check(f"the ledger: dra:claim entries of {N} CPU inside {dev} ({held})",
                    len(allcpus) == N and bool(cpus_of.get(dev)) and allcpus <= cpus_of[dev], (held, cpus_of))
            spec = os.path.join(cdi, f"cachepin.io-claim_{uid}.json")
            t.check("the CDI spec in cdi_dir, with the tag",
                    os.path.exists(spec) and f"CACHEPIN_DRA_CLAIM={uid}" in open(spec).read())
            p = pod("pod-k")
            c = given(container("ctr-k", p, cgroups_path=cgroup("ctr-k")), devs[0], cdi, uid)
            cr = emu.create(p, c)
            t.equal("CreateContainer of the container given the claim's device: the claim's CPUs", adjusted_cpus(cr),
                    allcpus)
            f = container("ctr-forged", p, cgroups_path=cgroup("ctr-forged"))
            f.env.append(f"CACHEPIN_DRA_CLAIM={uid}")
            t.check("a container that sets the environment's tag itself: not the claim's CPUs",
                    adjusted_cpus(emu.create(p, f)) != allcpus)
            r2 = standin(root, "prepare", "-claim", f"{uid}/default/claim-k", "-driver", "cachepin.io")
            t.check("prepare again: the same", r2.get("ok") and r2.get("devices") == r.get("devices")
                    and claim_entries(host, uid) == held, r2)
            emu.proc.send_signal(signal.SIGKILL)
            emu.proc.wait(timeout=10)
        with Emu(style="v0.8", workdir=host.dir) as emu:
            port = start_agent(emu, host, root, metrics=True)
            t.check("the stand-in registered the agent again",
                    standin(root, "wait", "-driver", "cachepin.io", "-timeout", "20s").get("ok"))
            r3 = standin(root, "prepare", "-claim", f"{uid}/default/claim-k", "-driver", "cachepin.io")
            t.check("the agent killed and started again: prepare the same",
                    r3.get("ok") and r3.get("devices") == r.get("devices") and claim_entries(host, uid) == held, r3)
            bad = "00000000-0000-0000-0000-000000000000"
            r4 = standin(root, "prepare", "-claim", f"{bad}/default/claim-k", "-driver", "cachepin.io")
            err = r4.get("error", "") + " ".join(r4.get("errors") or [])
            t.check("a uid that is not the API server's: an error naming both, nothing recorded",
                    not r4.get("ok") and uid in err and bad in err and not claim_entries(host, bad)
                    and not os.path.exists(os.path.join(cdi, f"cachepin.io-claim_{bad}.json")), r4)
            argv = agent.api_stop()
            t0 = time.monotonic()
            r5 = standin(root, "prepare", "-claim", f"{uid}/default/claim-k", "-driver", "cachepin.io")
            took = time.monotonic() - t0
            err = r5.get("error", "") + " ".join(r5.get("errors") or [])
            t.check(f"the API server stopped: prepare an error naming the fetch, within the bound ({took:.1f} s)",
                    not r5.get("ok") and "GET resourceclaim default/claim-k" in err and took < 30, r5)
            p2 = pod("pod-k2")
            c2 = given(container("ctr-k2", p2, cgroups_path=cgroup("ctr-k2")), devs[0], cdi, uid)
            t0 = time.monotonic()
            cr2 = emu.create(p2, c2)
            took = time.monotonic() - t0
            t.check(f"and the NRI path answers meanwhile ({took * 1000:.0f} ms): the claim's CPUs",
                    adjusted_cpus(cr2) == allcpus and took < 0.5, cr2)
            t.check("the API server started again", agent.api_start(argv))
            u = standin(root, "unprepare", "-claim", f"{uid}/default/claim-k", "-driver", "cachepin.io")
            t.check("unprepare: the entries and the spec gone",
                    u.get("ok") and not claim_entries(host, uid) and not os.path.exists(spec), u)
            m = {k: agent.metric(port, f"cachepin_dra_{k}") for k in ("kubelet_registered", "prepares_waiting")}
            for k in ("prepares_total", "unprepares_total"):
                for o in ("ok", "failed"):
                    m[f"{k}:{o}"] = agent.metric(port, f"cachepin_dra_{k}", f'{{outcome="{o}"}}')
            # The failed ones: the two above, each retried by the stand-in as the kubelet does.
            failed = m.pop("prepares_total:failed", None) or 0
            t.check(f"the metrics: registered, each claim of the kubelet's calls by outcome ({failed:.0f} failed), "
                    "none waiting",
                    failed >= 2 and m == {"kubelet_registered": 1, "prepares_waiting": 0, "prepares_total:ok": 1,
                              "unprepares_total:ok": 1, "unprepares_total:failed": 0}, m)
            t.equal("SIGTERM: exit 0", emu.terminate(), 0)
    finally:
        sp.terminate()
        sp.wait(timeout=10)


def main(argv):
    global STANDIN
    emu_tests.BIN = os.path.realpath(argv[1])
    STANDIN = argv[2]
    return agent.emu_main("dra-kubelet", run, logs=("plugin.log", "standin.log"))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
