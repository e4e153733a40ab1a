#!/usr/bin/env python3
"""Hostile but fair experiment files for ompc-bench (issue 19, item 7).

    hostile.py CASE     run one case (CTest: tbbench_hostile_CASE)
    hostile.py all      run every case
    hostile.py list     print the case names

Each case writes one experiment file, runs `ompc-bench FILE --dry-run`
(plus the case's options) and requires: exit status 2 within TIME_LIMIT
seconds, nothing on stdout, no traceback, and exactly one line on stderr
matching the case's pattern, which names the file, the line and the key.
"""

import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
BENCH = os.path.join(ROOT, "taskbench-port", "bench", "ompc-bench")
TIME_LIMIT = 20.0

# A valid experiment; a case's text comes first (its lines are 1, 2, ...),
# then the lines of this one whose key the case does not give.
BASE = [b"name: hostile\n",
        b"patterns: [stencil_1d]\n",
        b"iterations: [64, 8]\n",
        b"backends: {a: {cmd: '{bindir}/tb', ranks: [1, 2]}}\n"]


def experiment(text):
    given = set(re.findall(rb"^([A-Za-z_]+):", text, re.M))
    return text + b"".join(l for l in BASE if l.split(b":")[0] not in given)


def alias_bomb():
    """Ten lists of ten, each made of the one before: 10**6 values once
    expanded, in a dozen lines."""
    out = b"d0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
    for i in range(1, 7):
        out += b"d%d: &a%d [%s]\n" % (i, i, b", ".join([b"*a%d" % (i - 1)] * 10))
    return out


def block_nest(levels):
    return b"env:\n" + b"".join(b" " * i + b"k%d:\n" % i for i in range(1, levels + 1))


# name -> (text after BASE, extra options, pattern of the error after "ompc-bench: ";
#          {f} stands for the file's name)
CASES = {
    # Hung: a power computed digit by digit, a sweep built run by run, a
    # 100 MB padded placeholder formatted per run.
    "width_pow_tower": (b'width: "9**9**9"\n', [],
                        r"{f}:1: width: '9\*\*9\*\*9': 9 \*\* 387420489 reaches 2\*\*63"),
    "repetitions_huge": (b"repetitions: 1000000000000\n", [],
                         r"{f}:1: repetitions: must be a whole number from 1 to 2147483647, "
                         r"got 1000000000000"),
    "sweep_too_big": (b"repetitions: 1000\niterations: [%s]\n"
                      % b", ".join(b"%d" % i for i in range(200)), [],
                      r"{f}: sweep: 400000 runs \(2 back-end/ranks/width combinations x 1 "
                      r"patterns x 200 -iter values x 1000 repetitions\), more than the "
                      r"limit of 100000 runs"),
    "placeholder_format_spec": (b"launcher: none\n"
                                b"backends: {b: {cmd: '{bindir:>100000000}/tb'}}\n", [],
                                r"{f}:2: backends\.b\.cmd: bad placeholder at character 1 "
                                r"of '\{bindir:>100000000\}/tb': only \{name\} is allowed"),
    # Tracebacks: PyYAML's recursive composer, a strict UTF-8 decode, an
    # integer Python refuses to print.
    "deep_nesting_flow": (b"extra_args: " + b"[" * 100000 + b"]" * 100000 + b"\n", [],
                          r"{f}:1: not valid YAML: nested deeper than 32 levels"),
    "deep_nesting_block": (block_nest(600), [],
                           r"{f}:32: not valid YAML: nested deeper than 32 levels"),
    "non_utf8": (b"description: caf\xe9\n", [],
                 r"{f}:1: not UTF-8: byte 0xe9 at byte offset 16"),
    "width_pow_huge": (b'width: "2**100000000"\n', [],
                       r"{f}:1: width: '2\*\*100000000': 2 \*\* 100000000 reaches 2\*\*63"),
    "int_literal_huge": (b"steps: 1" + b"0" * 5000 + b"\n", [],
                         r"{f}:1: steps: an integer of 5001 characters; at most 32"),
    # Silently accepted.
    "duplicate_key": (b"width: 2\nsteps: 10\nwidth: 3\n", [],
                      r"{f}:3: width: duplicate key \(first at line 1\)"),
    "duplicate_key_nested": (b"env:\n  A: 1\n  B: 2\n  A: 3\n", [],
                             r"{f}:4: env\.A: duplicate key \(first at line 2\)"),
    "iterations_empty": (b"iterations: []\n", [],
                         r"{f}:1: iterations: an empty list; give at least one -iter value"),
    "timeout_nan": (b"timeout: .nan\n", [],
                    r"{f}:1: timeout: must be a number of seconds above 0 and at most "
                    r"604800, got nan"),
    "timeout_inf": (b"timeout: .inf\n", [], r"{f}:1: timeout: .* got inf"),
    "efficiency_ref_nan": (b"efficiency_ref: .nan\n", [],
                           r"{f}:1: efficiency_ref: a peak must be a finite number above 0, "
                           r"got nan"),
    "ranks_negative": (b"backends: {a: {cmd: tb, ranks: [2, -1]}}\n", [],
                       r"{f}:1: backends\.a\.ranks\[1\]: must be a whole number from 1"),
    # More of the same kind.
    "alias_bomb": (alias_bomb(), [],
                   r"{f}:\d+: d\d(\[\d\])*: more than 20000 values in the file, aliases "
                   r"expanded \(the limit\)"),
    "alias_cycle": (b"description: &x [1, *x]\n", [],
                    r"{f}:1: description\[1\]: an alias inside the value it names"),
    "unbalanced_quote": (b"extra_args: \"-output '16\"\n", [],
                         r"{f}:1: extra_args: cannot split into arguments: No closing "
                         r"quotation"),
    "timeout_option_nan": (b"", ["--timeout", "nan"],
                           r"--timeout: must be a number of seconds above 0 and at most "
                           r"604800, got nan"),
    "repetitions_option_huge": (b"", ["-r", "1000000000000"],
                                r"--repetitions: must be a whole number from 1 to "
                                r"2147483647"),
}


def run_case(name, tmp):
    text, opts, want = CASES[name]
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "wb") as f:
        f.write(experiment(text))
    t0 = time.monotonic()
    try:
        p = subprocess.run([BENCH, path, "--dry-run"] + opts, capture_output=True,
                           timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        return ["%s: no answer within %gs (a hang)" % (name, TIME_LIMIT)]
    took = time.monotonic() - t0
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    problems = []
    if "Traceback" in out + err:
        problems.append("a traceback:\n" + err)
    if p.returncode != 2:
        problems.append("exit status %d, want 2" % p.returncode)
    if out:
        problems.append("stdout not empty: %r" % out[:200])
    lines = err.splitlines()
    if len(lines) != 1:
        problems.append("%d lines on stderr, want 1: %r" % (len(lines), err[:500]))
    pattern = "^ompc-bench: " + want.replace("{f}", re.escape(path))
    if not lines or not re.match(pattern, lines[0]):
        problems.append("stderr %r does not match %r" % (err[:500], pattern))
    if not problems:
        print("%s: ok in %.2fs: %s" % (name, took, lines[0]))
    return ["%s: %s" % (name, p) for p in problems]


def main(argv):
    if len(argv) != 1 or (argv[0] not in CASES and argv[0] not in ("all", "list")):
        print(__doc__)
        return 2
    if argv[0] == "list":
        print("\n".join(CASES))
        return 0
    names = list(CASES) if argv[0] == "all" else [argv[0]]
    tmp = tempfile.mkdtemp(prefix="tbbench-hostile-")
    failed = []
    try:
        for name in names:
            failed += run_case(name, tmp)
    finally:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    for f in failed:
        print("FAIL: " + f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
