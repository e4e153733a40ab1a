#!/usr/bin/env python3
"""check_trace.py TRACE NWORKERS: the Chrome trace of a run is valid JSON and
shows what a user looks for in it: a track per rank, kernels on every
worker, transfers and scheduling on the head, start-up and shutdown, and
worker events in a causal order with the head's."""
import json
import sys


def causality(spans):
    """Worker events are placed on the head's clock: a kernel cannot start
    before the head began to launch it, nor end after shutdown began.  At
    every kernel start, the kernels started so far must not outnumber the
    launches begun so far (one launch per kernel sent ahead)."""
    out = []
    kernels = sorted(e["ts"] for e in spans if e["pid"] > 0 and e.get("cat") == "kernel")
    launches = sorted(e["ts"] for e in spans
                      if e["pid"] == 0 and e.get("cat") == "transfer"
                      and e["name"].startswith("launch "))
    if len(launches) >= len(kernels):
        for i, ts in enumerate(kernels):
            if launches[i] > ts:
                out.append("kernel %d of %d starts at %.1f us, %.1f us before the "
                           "head began its launch (worker clocks misplaced)"
                           % (i + 1, len(kernels), ts, launches[i] - ts))
                break
    else:
        out.append("%d kernels but %d launches on the head" % (len(kernels), len(launches)))
    shutdown = [e["ts"] for e in spans if e["pid"] == 0 and e["name"] == "shutdown"]
    ends = [e["ts"] + e["dur"] for e in spans if e["pid"] > 0 and e.get("cat") == "kernel"]
    if shutdown and ends and max(ends) > shutdown[0]:
        out.append("a kernel ends %.1f us after the head began shutdown"
                   % (max(ends) - shutdown[0]))
    return out


def args_kept(spans):
    """The head's scheduling passes and data movement carry their arguments
    with these keys and JSON types (bool is not taken for an int)."""
    want = {"sched": {"tasks": int, "held": int, "policy": str},
            "transfer": {"task": int, "executor": int, "bytes": int},
            "data": {"task": int, "executor": int, "bytes": int}}
    out = []
    for e in spans:
        keys = want.get(e.get("cat")) if e["pid"] == 0 else None
        if keys is None:
            continue
        args = e.get("args", {})
        if sorted(args) != sorted(keys) or any(
                type(args[k]) is not t for k, t in keys.items()):
            out.append("%s span %r has args %r" % (e["cat"], e["name"], args))
            break
    return out


def main():
    path, nworkers = sys.argv[1], int(sys.argv[2])
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    problems = []
    if names.get(0) != "rank 0 (head)":
        problems.append("no head track: %r" % names.get(0))
    for r in range(1, nworkers + 1):
        if names.get(r) != "rank %d (worker)" % r:
            problems.append("no track for worker rank %d" % r)
        if not any(e["pid"] == r and e.get("cat") == "kernel" for e in spans):
            problems.append("no kernel ran on worker rank %d" % r)
    for cat, what in (("sched", "schedule"), ("runtime", "start-up"),
                      ("runtime", "shutdown")):
        if not any(e["pid"] == 0 and e.get("cat") == cat and
                   e["name"].startswith(what) for e in spans):
            problems.append("no %s span on the head" % what)
    if not any(e.get("cat") == "transfer" for e in spans):
        problems.append("no data transfer spans")
    if any(e["dur"] < 0 or e["ts"] < 0 for e in spans):
        problems.append("negative times")
    problems += causality(spans)
    problems += args_kept(spans)
    kernels = sum(1 for e in spans if e.get("cat") == "kernel")
    if problems:
        print("check_trace: FAIL: " + "; ".join(problems))
        return 1
    print("check_trace: ok: %d spans, %d kernels on %d workers"
          % (len(spans), kernels, nworkers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
