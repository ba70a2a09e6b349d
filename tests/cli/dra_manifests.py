#!/usr/bin/python3
"""deploy/kubernetes/dra against what `cachepin dra slice` publishes (docs/dra.md).

    /usr/bin/python3 tests/cli/dra_manifests.py SOURCE_DIR SLICE.json [KUBECTL]

SLICE.json: the binary's `dra slice --json` output (one slice a line).  Checked: every
object of deploy/kubernetes/dra (the DeviceClasses) and of its examples/ has a kind and
apiVersion of resource.k8s.io/v1 (v1 for pods) and a name the API takes (a DNS
subdomain, a pod's a DNS label); each class's CEL selector names only the driver and
attributes the slice publishes, and selects the devices it promises (evaluated here on
the slice's devices: the selectors use `==` and `&&` alone, which this reads); each
claim template names a class defined here and capacities the devices have, in whole
quantities; each pod's claims name a template defined here, each container's claims one
of the pod's, and a container of an N-CPU claim asks N CPUs.  With KUBECTL (Debian sid's),
`kubectl kustomize deploy/kubernetes/dra` renders the classes.  Exit 1 on a failure.
"""

import json
import os
import re
import subprocess
import sys

import yaml

DRIVER = "cachepin.io"
LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
failures = 0


def check(what, cond, detail=""):
    global failures
    if cond:
        print(f"ok   {what}")
    else:
        failures += 1
        print(f"FAIL {what}{': ' + detail if detail else ''}")


def subdomain(s):
    return isinstance(s, str) and len(s) <= 253 and re.fullmatch(rf"{LABEL}(\.{LABEL})*", s) is not None


def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def cel_eval(expr, device):
    """The selector on one device of the slice: `==`, `&&`, string and int literals,
    device.driver and device.attributes["DOMAIN"].NAME; anything else fails the check."""
    attrs = {k: next(iter(v.values())) for k, v in device["attributes"].items()}
    names = []

    def attr(m):
        if m.group(1) != DRIVER:
            raise ValueError(f"attribute domain {m.group(1)}")
        names.append(m.group(2))
        if m.group(2) not in attrs:
            raise KeyError(m.group(2))
        return repr(attrs[m.group(2)])

    py = re.sub(r'device\.attributes\["([^"]+)"\]\.([A-Za-z_][A-Za-z0-9_]*)', attr, expr)
    py = py.replace("device.driver", repr(DRIVER)).replace("&&", " and ")
    if re.search(r"[|!<>]|device\.", py):
        raise ValueError(f"outside the subset this check reads: {expr}")
    return bool(eval(py, {"__builtins__": {}}, {})), names


def main(argv):
    src, slice_path = argv[1], argv[2]
    kubectl = argv[3] if len(argv) > 3 and argv[3] else None
    with open(slice_path) as f:
        slices = [json.loads(line) for line in f if line.strip()]
    devices = [d for s in slices for d in s["spec"]["devices"]]
    check("the slice has devices to check the classes on", len(devices) > 0)
    capacities = {c for d in devices for c in d["capacity"]}
    dra = os.path.join(src, "deploy/kubernetes/dra")

    classes = {}
    for doc in load_docs(os.path.join(dra, "deviceclasses.yaml")):
        name = doc["metadata"]["name"]
        check(f"DeviceClass {name}: resource.k8s.io/v1, a DNS subdomain",
              doc.get("apiVersion") == "resource.k8s.io/v1" and doc.get("kind") == "DeviceClass" and subdomain(name))
        exprs = [s["cel"]["expression"] for s in doc["spec"]["selectors"]]
        selected = []
        for d in devices:
            try:
                results = [cel_eval(e, d) for e in exprs]
            except (KeyError, ValueError) as e:
                check(f"DeviceClass {name}: its selector reads the published attributes", False, repr(e))
                break
            if all(r for r, _ in results):
                selected.append(d)
        classes[name] = selected
        check(f"DeviceClass {name}: its selector names the driver {DRIVER}",
              all(f'device.driver == "{DRIVER}"' in e for e in exprs))
    whole = classes.get("whole-l3.cachepin.io", [])
    some = classes.get("cpus-in-one-l3.cachepin.io", [])
    held = [d for d in devices if d["attributes"]["heldOutside"]["int"] > 0]
    check("cpus-in-one-l3 selects every L3 device", len(some) == len(devices) and len(devices) > 0)
    check("whole-l3 selects the L3 devices none of whose CPUs is held outside DRA, and only those",
          {d["name"] for d in whole} == {d["name"] for d in devices} - {d["name"] for d in held},
          f"selected {[d['name'] for d in whole]}, held {[d['name'] for d in held]}")

    templates = {}
    examples = os.path.join(dra, "examples")
    for fname in sorted(os.listdir(examples)):
        for doc in load_docs(os.path.join(examples, fname)):
            kind, name = doc.get("kind"), doc["metadata"]["name"]
            if kind == "ResourceClaimTemplate":
                check(f"{fname}: ResourceClaimTemplate {name}: resource.k8s.io/v1, a DNS subdomain",
                      doc.get("apiVersion") == "resource.k8s.io/v1" and subdomain(name))
                asked = None
                for req in doc["spec"]["spec"]["devices"]["requests"]:
                    ex = req["exactly"]
                    check(f"{fname}: {name}: request {req['name']} names a class defined here",
                          ex["deviceClassName"] in classes, ex["deviceClassName"])
                    for cap, q in ex.get("capacity", {}).get("requests", {}).items():
                        check(f"{fname}: {name}: capacity {cap} is one the devices have", cap in capacities)
                        check(f"{fname}: {name}: {cap} is a whole quantity", re.fullmatch(r"[1-9][0-9]*", str(q)) is not None,
                              str(q))
                        asked = int(q)
                templates[name] = asked
            elif kind == "Pod":
                check(f"{fname}: Pod {name}: v1, a DNS label",
                      doc.get("apiVersion") == "v1" and re.fullmatch(LABEL, name) is not None and len(name) <= 63)
                claims = {c["name"]: c.get("resourceClaimTemplateName") for c in doc["spec"].get("resourceClaims", [])}
                for c, t in claims.items():
                    check(f"{fname}: {name}: claim {c} names a template defined here", t in templates, str(t))
                for ctr in doc["spec"]["containers"]:
                    res = ctr.get("resources", {})
                    for c in res.get("claims", []):
                        check(f"{fname}: {name}/{ctr['name']}: uses claim {c['name']} of the pod", c["name"] in claims)
                        asked = templates.get(claims.get(c["name"]))
                        if asked is not None:
                            check(f"{fname}: {name}/{ctr['name']}: asks the node the {asked} CPUs its claim asks",
                                  str(res.get("requests", {}).get("cpu")) == str(asked)
                                  and str(res.get("limits", {}).get("cpu")) == str(asked))
            else:
                check(f"{fname}: {kind} {name}: a kind the examples are expected to hold", False)
    check("the examples hold a claim template of each class", set(
        d["exactly"]["deviceClassName"] for f in sorted(os.listdir(examples)) for doc in load_docs(os.path.join(examples, f))
        if doc.get("kind") == "ResourceClaimTemplate" for d in doc["spec"]["spec"]["devices"]["requests"]) == set(classes))

    if kubectl:
        r = subprocess.run([kubectl, "kustomize", dra], capture_output=True, text=True)
        rendered = [d for d in yaml.safe_load_all(r.stdout) if d] if r.returncode == 0 else []
        check("kubectl kustomize deploy/kubernetes/dra renders both classes",
              sorted(d["metadata"]["name"] for d in rendered) == sorted(classes), r.stderr.strip())
    print(f"{'FAILED' if failures else 'passed'}: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
