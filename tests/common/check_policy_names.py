#!/usr/bin/env python3
"""check_policy_names.py SRCDIR: no code outside scheduler/ knows the
scheduling policies by name.

The runtime picks its policy from the scheduler's table and asks it what it
needs (sched_policy_t.needs); a branch on which policy it is would have to
change with every new one.  So in the C sources of the runtime's other
layers (common/, event-system/, data-manager/, libomptarget-mpi/), outside
comments:
  - no string literal is a policy's name (any case), except as the default
    value of OMPC_SCHEDULER in common/ompc_config.c's table;
  - no enumerator or macro (an identifier in capitals), and no identifier
    about scheduling (with a word sched or policy), has a policy's name as
    one of its words (OMPC_SCHED_HEFT, POLICY_LOCALITY, sched_is_random).
    Other identifiers may use the words in their ordinary sense.
The names are read from the policy tables in scheduler/*.c (`.name =
"..."`), so a new policy is covered without editing this script.  Exit 1
with each finding as FILE:LINE: message.
"""
import os
import re
import sys

LAYERS = ("common", "event-system", "data-manager", "libomptarget-mpi")
TOKEN = re.compile(r'''
    (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<char>'(?:[^'\\\n]|\\.)*')
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
''', re.S | re.X)


def policy_names(srcdir):
    names = set()
    sched = os.path.join(srcdir, "scheduler")
    for name in sorted(os.listdir(sched)):
        if name.endswith(".c"):
            with open(os.path.join(sched, name)) as fh:
                names.update(re.findall(r'\.name\s*=\s*"([^"]+)"', fh.read()))
    return names


def check_file(path, rel, names):
    with open(path, errors="replace") as fh:
        text = fh.read()
    found = []
    prev = []  # the last two tokens that are not comments
    for m in TOKEN.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        kind = m.lastgroup
        if kind == "comment":
            continue
        tok = m.group()
        if kind == "string" and tok[1:-1].lower() in names:
            default = (rel == os.path.join("common", "ompc_config.c") and
                       prev[-2:] == ["ROW", '"OMPC_SCHEDULER"'])
            if not default:
                found.append(f"{rel}:{line}: policy name {tok} in code: ask the "
                             "policy what it needs (sched_policy_t.needs) instead")
        elif kind == "ident":
            words = {w.lower() for w in tok.split("_") if w}
            hit = sorted(words & names)
            about = tok.isupper() or any(w.startswith(("sched", "polic"))
                                         for w in words)
            if hit and about:
                found.append(f"{rel}:{line}: identifier {tok} names the policy "
                             f"{hit[0]}: keep policies in scheduler/'s table")
        prev = (prev + [tok])[-2:]
    return found


def main(argv):
    if len(argv) != 1:
        sys.exit(__doc__)
    srcdir = argv[0]
    names = policy_names(srcdir)
    if not names:
        sys.exit("check_policy_names: no policy table found in scheduler/*.c")
    found = []
    nfiles = 0
    for layer in LAYERS:
        top = os.path.join(srcdir, layer)
        for root, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files):
                if name.endswith((".c", ".h", ".cpp")):
                    path = os.path.join(root, name)
                    found += check_file(path, os.path.relpath(path, srcdir), names)
                    nfiles += 1
    for f in found:
        print(f)
    if found:
        return 1
    print(f"no policy named outside scheduler/ ({', '.join(sorted(names))}; "
          f"{nfiles} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
