#!/usr/bin/python3
"""docs/kubernetes.md and docs/crio.md against the files they describe:
  - the page opens with the route-choice picture, docs/kubernetes-routes.svg, which is
    docs/kubernetes-routes.dot drawn by graphviz's dot (drawn again and compared; exit 77
    without dot, which scripts/deps.sh installs);
  - every path under deploy/, packaging/ or tests/ that README.md or a page of docs/ names
    exists (a manifest moved or removed leaves no stale name behind);
  - every `Key=Value` the page writes of a directive of the shipped systemd unit
    (deploy/systemd/cachepin-nri.service.in) is the unit's own value, and the unit's
    capability bounding set and cgroup protection are stated;
  - crio.md's [crio.nri] tables name the keys CRI-O reads (the validator's that matter), each once.
What the manifests hold is tests/cri/manifests.py's (it renders them).

    /usr/bin/python3 tests/docs/kubernetes.py SOURCE_DIR
"""
import glob
import os
import re
import shutil
import subprocess
import sys

failures = 0


def check(what, ok, detail=""):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {what}{'' if ok or not detail else ': ' + detail}")
    failures += 0 if ok else 1


def read(src, path):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        return f.read()


def svg_body(text):
    """An SVG without graphviz's comments (its version line) and blank lines."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return [l.rstrip() for l in text.splitlines() if l.strip()]


def check_picture(src):
    page = read(src, "docs/kubernetes.md")
    first = re.search(r"!\[[^\]]*\]\(([^)]+)\)", page)
    head = page[:first.start()] if first else page
    check("kubernetes.md: its first picture is kubernetes-routes.svg, before any section",
          first is not None and first.group(1) == "kubernetes-routes.svg" and "\n## " not in head,
          first.group(1) if first else "no picture")
    check("kubernetes.md: links the picture's source", "(kubernetes-routes.dot)" in page)
    r = subprocess.run(["dot", "-Tsvg", os.path.join(src, "docs/kubernetes-routes.dot")],
                       capture_output=True, text=True)
    check("kubernetes-routes.dot: dot draws it", r.returncode == 0, r.stderr.strip())
    want = svg_body(r.stdout)
    have = svg_body(read(src, "docs/kubernetes-routes.svg"))
    diff = next((f"{a!r} vs {b!r}" for a, b in zip(have, want) if a != b), f"{len(have)} vs {len(want)} lines")
    check("kubernetes-routes.svg is kubernetes-routes.dot drawn (dot -Tsvg)", have == want, diff)
    dot = read(src, "docs/kubernetes-routes.dot")
    for label in ("containerd 2.x", "containerd 1.7", "containerd 1.6", "CRI-O 1.30+", "CRI-O 1.26 to 1.29",
                  "CRI-O before 1.26", "overlays/nri", "overlays/hook", "/etc/nri/nri.conf", "enable_nri = true"):
        check(f"kubernetes-routes.dot: says {label!r}", label in dot)
    for overlay in ("nri", "hook"):
        check(f"the picture's overlays/{overlay} exists",
              os.path.isfile(os.path.join(src, f"deploy/kubernetes/overlays/{overlay}/kustomization.yaml")))


# Paths a page names that are not this tree's: hwloc's test captures (its sources), and the
# flat manifests that deploy/kubernetes/ replaced, named where the page says how to upgrade
# from them (they must stay gone).
EXTERNAL = ("tests/hwloc/",)
FORMER = {"deploy/kubernetes/nri-plugin.yaml", "deploy/kubernetes/installer.yaml", "deploy/kubernetes/runtimeclass.yaml"}


def check_paths(src):
    pages = ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs/*.md")))
    missing = []
    for page in pages:
        text = read(src, page)
        for m in re.finditer(r"(?<![\w/.-])((?:deploy|packaging|tests)/[\w.+/-]*[\w+])", text):
            path, after = m.group(1), text[m.end():m.end() + 1]
            # A name written with a placeholder or a glob (tests/unit/test_<module>.c) is not one path.
            if after in "*_<{" or path.startswith(EXTERNAL) or path in FORMER:
                continue
            if not os.path.exists(os.path.join(src, path)):
                missing.append(f"{page}: {path}")
    check("every deploy/, packaging/ and tests/ path README.md and docs/ name exists", not missing,
          "; ".join(sorted(set(missing))))
    back = [p for p in FORMER if os.path.exists(os.path.join(src, p))]
    check("the flat manifests the upgrade section names are gone", not back, str(back))


def check_unit(src):
    unit = read(src, "deploy/systemd/cachepin-nri.service.in")
    directives = {}
    for line in unit.splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", line)
        if m:
            directives.setdefault(m.group(1), []).append(m.group(2).strip())
    page = read(src, "docs/kubernetes.md")
    # What the page suggests for a drop-in of one's own is not the unit's.
    said = [(m.group(1), m.group(2)) for m in re.finditer(r"`([A-Z][A-Za-z]+)=([^`]*)`", page)
            if "drop-in" not in page[max(0, m.start() - 200):m.start()]]
    wrong = [f"{k}={v} (the unit: {directives[k]})" for k, v in said if k in directives and v not in directives[k]]
    check("kubernetes.md: each `Key=Value` of the unit's directives is the unit's", not wrong, "; ".join(wrong))
    for key in ("CapabilityBoundingSet", "ProtectControlGroups", "ProtectSystem", "StartLimitIntervalSec"):
        value = directives.get(key, ["?"])[-1]
        check(f"kubernetes.md states the unit's `{key}={value}`", f"`{key}={value}`" in page)


CRIO_NRI_KEYS = ["enable_nri", "nri_listen", "nri_plugin_dir", "nri_plugin_config_dir",
                 "nri_plugin_registration_timeout", "nri_plugin_request_timeout", "nri_disable_connections",
                 # [crio.nri.default_validator] (CRI-O 1.34+, internal/config/nri's DefaultValidatorConfig)
                 "nri_enable_default_validator", "nri_validator_required_plugins",
                 "nri_validator_tolerate_missing_plugins_annotation"]


def check_crio(src):
    page = read(src, "docs/crio.md")
    section = page[page.index("\n## NRI\n"):] if "\n## NRI\n" in page else ""
    section = section[:section.find("\n## ", 5)] if section else ""
    rows = re.findall(r"^\| `(\w+)` \|", section, flags=re.M)
    check("crio.md: an NRI section whose table names CRI-O's [crio.nri] keys, each once",
          sorted(rows) == sorted(CRIO_NRI_KEYS), str(rows))
    for text in ("[crio.nri]", "/etc/nri/nri.conf", "1.30"):
        check(f"crio.md's NRI section says {text}", text in section)


def main(argv):
    src = argv[1]
    if not shutil.which("dot"):
        print("SKIP: needs graphviz's dot (scripts/deps.sh installs it)")
        return 77
    check_picture(src)
    check_paths(src)
    check_unit(src)
    check_crio(src)
    print(f"{'FAILED' if failures else 'passed'}: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
