#!/usr/bin/env python3
"""The command blocks of README.md and docs/*.md, for tests/docs/run-blocks.sh.

A fenced block is a *command block* when its info string is sh, bash, shell or console,
or when it is a plain fence whose first line starts with "$ ". Every command block carries
a marker, an HTML comment on the line just before its fence (invisible once rendered):

  <!-- test: run [needs=A,B] [files=NAME,...] -->
      run it as a script, in order with the file's other runnable blocks, in one shell
      (so a variable set in one block is seen by the next, as in a terminal); a command
      that exits non-zero fails the test
  <!-- test: output [exit=N] [needs=A,B] [files=NAME,...] -->
      lines starting with "$ " are commands (a line ending in "\\" continues one), the
      lines after one up to the next are what it prints (stdout and stderr); a line
      "..." stands for any number of lines; the command must exit N (default 0)
  <!-- test: cleanup [needs=A,B] -->
      run as the file's last step whether or not its blocks failed (an EXIT trap,
      without -e): what undoes a walkthrough (a process started, a cgroup made)
  <!-- test: no: WHY -->
      not run here, and why (a registry, Kubernetes, a system-wide install...)

needs: root, podman, cpuset (a cpuset hierarchy), runc. files: captured topologies,
copied from $CACHEPIN_TOPOLOGIES into the working directory before the file's blocks.
A command block without a marker fails the test: a new example has to say whether it runs.
Needs and files are each block's own: a block this host cannot run is skipped, named, and
the file's other blocks still run (a block that uses what a skipped one made needs what
that one needs).

Subcommands:
  blocks.py list FILE...           one line per command block: FILE:LINE KIND ARGS
  blocks.py script OUTDIR FILE SELECT HAVE [TOPOLOGIES]
                                   OUTDIR/script.sh: FILE's runnable blocks as one driver.
                                   SELECT: `plain`, the blocks with no needs and no files
                                   (they run anywhere), or `host`, the others. HAVE: the
                                   needs this host meets, comma-separated. TOPOLOGIES:
                                   where files are looked for. Prints `copy PATH` for each
                                   file its blocks use and `skip FILE:LINE: no WHAT` for
                                   each selected block it left out.
  blocks.py match EXPECTED ACTUAL  exit 0 when ACTUAL matches EXPECTED ("..." lines)
"""
import os
import re
import shlex
import sys

COMMAND_INFOS = {"sh", "bash", "shell", "console"}
NEEDS = {"root", "podman", "runc", "cpuset"}  # run-blocks.sh's have() knows each
MARKER = re.compile(r"^\s*<!--\s*test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*$")


class Block:
    def __init__(self, path, line, info, marker, lines):
        self.path, self.line, self.info, self.marker, self.lines = path, line, info, marker, lines
        self.kind, self.args, self.why = None, {}, ""
        if marker is not None:
            self._parse_marker(marker)

    def _parse_marker(self, text):
        if text.startswith("no:") or text == "no":
            self.kind, self.why = "no", text[3:].strip()
            return
        words = text.split()
        self.kind = words[0] if words else ""
        for w in words[1:]:
            k, _, v = w.partition("=")
            self.args[k] = v

    @property
    def where(self):
        return f"{self.path}:{self.line}"

    def is_command(self):
        if self.info in COMMAND_INFOS:
            return True
        return self.info == "" and bool(self.lines) and self.lines[0].startswith("$ ")

    def check(self):
        """An error line, or None."""
        if self.marker is None:
            return (f"{self.where}: a command block without a marker: put "
                    "<!-- test: run --> (or output, or no: WHY) on the line before its fence")
        if self.kind not in ("run", "output", "cleanup", "no"):
            return f"{self.where}: unknown marker `{self.marker}` (run, output, cleanup or no: WHY)"
        if self.kind == "no" and not self.why:
            return f"{self.where}: `no` needs a reason: <!-- test: no: WHY -->"
        bad = set(self.args) - {"needs", "files", "exit"}
        if bad:
            return f"{self.where}: unknown marker argument(s) {sorted(bad)}"
        bad = {n for n in self.args.get("needs", "").split(",") if n} - NEEDS
        if bad:
            return f"{self.where}: unknown need(s) {sorted(bad)} ({', '.join(sorted(NEEDS))})"
        if "exit" in self.args and (self.kind != "output" or not self.args["exit"].isdigit()):
            return f"{self.where}: exit=N is for output blocks, N a number"
        if self.kind == "output" and not (self.lines and self.lines[0].startswith("$ ")):
            return f"{self.where}: an output block starts with a `$ ` command line"
        return None


def parse(path):
    blocks, marker, fence, buf, start, info = [], None, None, [], 0, ""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        if fence is None:
            m = FENCE.match(line)
            if m:
                fence, info, start, buf = m.group(2), m.group(3), n, []
                continue
            mm = MARKER.match(line)
            marker = mm.group(1) if mm else None
        else:
            if line.strip() == fence:
                blocks.append(Block(path, start, info, marker, buf))
                fence, marker = None, None
            else:
                buf.append(line)
    if fence is not None:
        sys.exit(f"{path}:{start}: a fence that is never closed")
    return blocks


def output_cases(block):
    """[(command, expected lines)] of an output block."""
    cases, cmd, exp, cont = [], None, [], False
    for line in block.lines:
        if cont:
            cmd.append(line)
            cont = line.endswith("\\")
        elif line.startswith("$ "):
            if cmd is not None:
                cases.append(("\n".join(cmd), exp))
            cmd, exp = [line[2:]], []
            cont = line.endswith("\\")
        else:
            exp.append(line)
    if cmd is not None:
        cases.append(("\n".join(cmd), exp))
    return cases


def match(expected, actual):
    """ACTUAL's lines match EXPECTED's, a line "..." matching any number of lines."""
    pattern = "".join("(?:.*\n)*?" if line.strip() == "..." else re.escape(line + "\n")
                      for line in expected)
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual)) is not None


def cmd_list(paths):
    errors = 0
    for path in paths:
        for b in parse(path):
            if not (b.is_command() or b.marker is not None):
                continue
            err = b.check()
            if err:
                print(err, file=sys.stderr)
                errors += 1
                continue
            extra = b.why if b.kind == "no" else " ".join(f"{k}={v}" for k, v in b.args.items())
            print(f"{b.where} {b.kind} {extra}".rstrip())
    return 1 if errors else 0


def find_file(topologies, name):
    """NAME under the folder TOPOLOGIES (recursively), or None."""
    if not topologies or not os.path.isdir(topologies):
        return None
    for root, _, names in os.walk(topologies):
        if name in names:
            return os.path.join(root, name)
    return None


def missing(block, have, topologies, copies):
    """What BLOCK needs that this host lacks, as words; its files' paths go to COPIES."""
    lack = [n for n in block.args.get("needs", "").split(",") if n and n not in have]
    for name in (x for x in block.args.get("files", "").split(",") if x):
        found = find_file(topologies, name)
        if found:
            copies.add(found)
        else:
            lack.append(f"{name} (CACHEPIN_TOPOLOGIES)")
    return lack


def cmd_script(outdir, path, select, have, topologies):
    """The driver: each selected block in order, the ERR trap naming the block and the command."""
    out = ["# made by tests/docs/blocks.py from " + path,
           "set -eE -o pipefail",
           "trap 'rc=$?; echo \"docs.blocks: FAIL $__blk: \\`$BASH_COMMAND\\` exited $rc\" >&2; exit 1' ERR"]
    copies, skips, n, cleanup = set(), [], 0, []
    for b in parse(path):
        if b.check() or b.kind not in ("run", "output", "cleanup"):
            continue
        if bool(b.args.get("needs") or b.args.get("files")) != (select == "host"):
            continue
        block_copies = set()
        lack = missing(b, have, topologies, block_copies)
        if lack:
            skips.append(f"skip {b.where}: no {' '.join(lack)}")
            continue
        copies |= block_copies
        if b.kind == "cleanup":
            cleanup += [f"echo \"== {b.where} (cleanup)\""] + b.lines
            continue
        if b.kind == "run":
            out.append(f"__blk={shlex.quote(b.where)}; echo \"== $__blk (run)\"")
            out.extend(b.lines)
            continue
        for cmd, exp in output_cases(b):
            n += 1
            with open(os.path.join(outdir, f"{n}.cmd"), "w") as f:
                f.write(cmd + "\n")
            with open(os.path.join(outdir, f"{n}.exp"), "w") as f:
                f.write("\n".join(exp) + ("\n" if exp else ""))
            out.append(f"__blk={shlex.quote(b.where)}; echo \"== $__blk (output): {n}.cmd\"")
            out.append(f"__expect {shlex.quote(outdir)}/{n} {b.args.get('exit', '0')}")
    if cleanup:
        # Without -e and the ERR trap: each line is tried, the exit status is the blocks'.
        out[3:3] = ["__cleanup () {", "local rc=$?", "trap - ERR; set +eE"] + cleanup + [
            "return $rc", "}", "trap __cleanup EXIT"]
    out.append("__blk=end; echo \"== $__blk\"")
    with open(os.path.join(outdir, "script.sh"), "w") as f:
        f.write("\n".join(out) + "\n")
    for c in sorted(copies):
        print("copy " + c)
    for x in skips:
        print(x)
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "list":
        return cmd_list(argv[2:])
    if len(argv) in (6, 7) and argv[1] == "script" and argv[4] in ("plain", "host"):
        have = {x for x in argv[5].split(",") if x}
        return cmd_script(argv[2], argv[3], argv[4], have, argv[6] if len(argv) == 7 else "")
    if len(argv) == 4 and argv[1] == "match":
        with open(argv[2]) as e, open(argv[3]) as a:
            exp, act = e.read().split("\n"), a.read().split("\n")
        exp = exp[:-1] if exp and exp[-1] == "" else exp
        act = act[:-1] if act and act[-1] == "" else act
        return 0 if match(exp, act) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
