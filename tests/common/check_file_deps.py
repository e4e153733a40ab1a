#!/usr/bin/env python3
"""check_file_deps.py SRCDIR ACYCLIC OBJ...: file-level dependencies of one
library.

A source file depends on another when its object uses a global symbol the
other's object defines (read with nm), and a header on another when it
#includes it.  Fails (exit 1) when SRCDIR's headers include each other in
a cycle, or when the files named in ACYCLIC (comma-separated .c names, or
`all` for every object given) call each other in a cycle; prints each such
cycle.  Cycles among the other files are printed too, as two-file pairs
with the symbols each side uses, but do not fail.  -v first prints every
file's dependencies.
"""
import os
import re
import subprocess
import sys


def components(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def symbols(objs):
    """{file: set of used symbols}, {symbol: defining file}."""
    uses, defs = {}, {}
    for obj in objs:
        name = os.path.basename(obj)
        name = name[:-2] if name.endswith(".o") else name
        out = subprocess.run(["nm", obj], check=True, capture_output=True,
                             text=True).stdout
        uses[name] = set()
        for line in out.splitlines():
            f = line.split()
            if len(f) == 2 and f[0] == "U":
                uses[name].add(f[1])
            elif len(f) == 3 and f[1] in "TDBRC":
                defs.setdefault(f[2], name)
    return uses, defs


def main(argv):
    verbose = "-v" in argv
    argv = [a for a in argv if a != "-v"]
    if len(argv) < 3:
        sys.exit(__doc__)
    srcdir, objs = argv[0], argv[2:]
    uses, defs = symbols(objs)
    acyclic = set(uses) if argv[1] == "all" else set(argv[1].split(","))
    missing = acyclic - set(uses)
    if missing:
        sys.exit(f"no object for {', '.join(sorted(missing))}")
    calls = {f: {defs[s] for s in u if s in defs and defs[s] != f}
             for f, u in uses.items()}
    includes = {}
    for name in sorted(os.listdir(srcdir)):
        if name.endswith((".c", ".h")):
            with open(os.path.join(srcdir, name)) as fh:
                text = fh.read()
            includes[name] = set(re.findall(r'^\s*#\s*include\s+"([^"]+)"',
                                            text, re.M))
    if verbose:
        for f in sorted(calls):
            print(f"{f} calls {' '.join(sorted(calls[f])) or '-'}")
    bad = 0
    for comp in components(includes):
        print(f"include cycle: {' '.join(comp)}")
        bad = 1
    among = {f: calls[f] & acyclic for f in acyclic}
    for comp in components(among):
        print(f"call cycle among {argv[1]}: {' '.join(comp)}")
        bad = 1
    for f in sorted(calls):
        for g in sorted(calls[f]):
            if f < g and f in calls.get(g, ()):
                fs = sorted(s for s in uses[f] if defs.get(s) == g)
                gs = sorted(s for s in uses[g] if defs.get(s) == f)
                print(f"(two-file cycle) {f} uses {' '.join(fs)}; "
                      f"{g} uses {' '.join(gs)}")
    if not bad:
        print(f"no include cycle; no call cycle among {argv[1]}")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
