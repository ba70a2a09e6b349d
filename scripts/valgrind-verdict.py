#!/usr/bin/env python3
"""The verdict on one test run under valgrind (scripts/valgrind.sh).

Reads PREFIX.<pid>.log, one per process of the run (valgrind --log-file=...%p).
The test's own process is the one whose parent ran none of the others.  It must
have no error at all, leaks included; a forked child must have no error but
leaks (its inherited copy of the parent's heap is "lost" when it exits, see
valgrind.sh).  Prints a summary line, or the errors; exits 1 when there are any."""
import glob
import re
import sys

NOT_ERRORS = re.compile(r"^(Memcheck, |Copyright |Using Valgrind|Command: |Parent PID: |HEAP SUMMARY:|LEAK SUMMARY:"
                        r"|All heap blocks were freed|For lists of detected|For counts of detected|ERROR SUMMARY:"
                        r"|Reachable blocks|To see them|Warning: |in use at exit:|total heap usage:)")
LEAK = re.compile(r"bytes in [\d,]+ blocks are (definitely|indirectly) lost")


def parse(path):
    pid = ppid = None
    summary = None
    blocks, block = [], []
    with open(path, errors="replace") as f:
        for raw in f:
            m = re.match(r"^==(\d+)== ?(.*)$", raw.rstrip("\n"))
            if not m:
                continue  # --PID-- notes (unhandled syscalls), program output
            pid, line = m.group(1), m.group(2)
            if line.startswith("Parent PID: "):
                ppid = line.split()[-1]
            s = re.match(r"ERROR SUMMARY: ([\d,]+) errors", line)
            if s:
                summary = int(s.group(1).replace(",", ""))
            if line.strip() == "":
                if block:
                    blocks.append(block)
                block = []
            else:
                block.append(line)
    if block:
        blocks.append(block)
    errors = [b for b in blocks if not NOT_ERRORS.match(b[0].strip())]
    return pid, ppid, summary, errors


def main(prefix):
    procs = [parse(p) for p in sorted(glob.glob(prefix + ".*.log"))]
    procs = [p for p in procs if p[0] is not None]
    # A child SIGKILLed (the crash tests) while valgrind was still starting leaves
    # a log of the banner alone, without its "Parent PID:" line: not the test's
    # process, and nothing in it to judge.
    cut = [p for p in procs if p[1] is None and not p[3]]
    procs = [p for p in procs if p not in cut]
    pids = {p[0] for p in procs}
    mains = [p for p in procs if p[1] not in pids]
    if len(mains) != 1:
        print("valgrind-verdict: expected one test process among %d logs, found %d" % (len(procs), len(mains)))
        return 1
    main_pid = mains[0][0]
    bad, child_leaks = [], 0
    for pid, _, summary, errors in procs:
        for b in errors:
            if pid != main_pid and LEAK.search(b[0]):
                child_leaks += 1
                continue
            who = "test process" if pid == main_pid else "forked child %s" % pid
            bad.append("  %s: %s" % (who, "\n      ".join(b[:12])))
        if summary and not errors:
            bad.append("  process %s: ERROR SUMMARY says %d errors, none parsed" % (pid, summary))
    if bad:
        print("\n".join(bad))
        return 1
    print("%d process%s, no errors%s%s" % (len(procs), "es" if len(procs) != 1 else "",
                                            "; %d inherited-heap leak reports in forked children ignored" % child_leaks
                                            if child_leaks else "",
                                            "; %d killed while valgrind was starting" % len(cut) if cut else ""))
    return 0


sys.exit(main(sys.argv[1]))
