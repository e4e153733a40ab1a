#!/usr/bin/env python3
"""Writes libomptarget-mpi/tgt_mpi_wrap.inc: one line per MPI entry point
that takes a communicator by value, read from MPICH's mpi_proto.h and
mpio.h.  tgt_mpi_apps.c expands each line twice (the MPI_ and the PMPI_
name) into a definition that maps MPI_COMM_WORLD to the application's
world and calls the next definition of the same name.

    scripts/gen_mpi_comm_wrappers.py [MPICH include dir] > libomptarget-mpi/tgt_mpi_wrap.inc

A test (mpi_wrap_table) runs it against the installed headers and
compares: a newer MPICH with more such calls fails it until the file is
made again.  Calls written by hand in tgt_mpi_apps.c are left out."""
import re
import sys

HAND_WRITTEN = {"MPI_Abort", "MPI_Init", "MPI_Init_thread", "MPI_Finalize"}


def prototypes(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    for decl in text.split(";"):
        decl = " ".join(decl.split())
        m = re.match(r"^.*?\bint (MPIX?_\w+)\((.*?)\)(?: [A-Z_]+(?:\([\d, ]*\))?)*$", decl)
        if m:
            yield m.group(1), m.group(2)


def split_params(params):
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([" 
        depth -= ch in ")]"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def param_name(p):
    m = re.search(r"(\w+)\s*(\[[^\]]*\])*$", p)
    return m.group(1)


def main():
    inc = sys.argv[1] if len(sys.argv) > 1 else "/usr/include/x86_64-linux-gnu/mpich"
    seen = {}
    for f in ("mpi_proto.h", "mpio.h"):
        with open(f"{inc}/{f}") as fh:
            for name, params in prototypes(fh.read()):
                if name in HAND_WRITTEN or name in seen:
                    continue
                ps = [] if params.strip() == "void" else split_params(params)
                comms = [param_name(p) for p in ps if re.match(r"^MPI_Comm \w+$", p)]
                if comms:
                    seen[name] = (ps, comms)
    print("/* Made by scripts/gen_mpi_comm_wrappers.py from MPICH's mpi_proto.h and")
    print(" * mpio.h: do not edit.  OMPC_WRAP(name, (parameters), (arguments)); the")
    print(" * arguments name every communicator passed by value through APPW(). */")
    for name in sorted(seen):
        ps, comms = seen[name]
        args = ", ".join(f"APPW({param_name(p)})" if param_name(p) in comms else param_name(p)
                         for p in ps)
        print(f"OMPC_WRAP({name}, ({', '.join(ps)}), ({args}))")


main()
