#!/usr/bin/env python3
"""Tests of ompc-bench (taskbench-port/bench) on the fake back end.

    check.py run OUT        run small.yaml into OUT (the fixture the others read)
    check.py csv OUT        runs.csv / summary.csv rows and values
    check.py metg OUT       METG against the fake's cost model
    check.py failed OUT     failed runs recorded, with their output tail
    check.py plots OUT      PNGs written and non-empty
    check.py table OUT      --table markdown, ratios against the baseline
    check.py analyze OUT    --analyze from a copied runs.csv gives the same metg.csv
    check.py dry_run        --dry-run lists the runs, runs nothing
    check.py timeout        a run past its timeout is killed and recorded
    check.py bad_config     a broken experiment file is refused with a reason

Each prints what it checked and exits 0, or prints FAIL lines and exits 1.
"""

import csv
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
BENCH = os.path.join(ROOT, "taskbench-port", "bench", "ompc-bench")
SMALL = os.path.join(HERE, "small.yaml")

# What small.yaml asks for, and the fake's model (fake-taskbench).
NS_PER_ITER = 10.0
ITERS = [65536, 8192, 4096, 2048, 1024, 512, 64]
PATTERNS = ["stencil_1d", "fft"]
REPS = 2
STEPS = 10
# (backend, ranks) -> (overhead us, cores, launched processes x workers, failing iters)
CONFIGS = {
    ("fast", 1): (10.0, 1, 1, ()),
    ("fast", 2): (10.0, 2, 2, ()),
    ("slow", 2): (40.0, 2, 2, ()),
    ("omp", 1): (20.0, 2, 2, ()),
    ("broken", 1): (10.0, 1, 1, (1024, 64)),
}

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)
    return cond


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def bench(*args, **kw):
    return subprocess.run([BENCH] + list(args), capture_output=True,
                          text=True, **kw)


def model_point(overhead_us, iters):
    """Per-task time (s) and the FLOP rate up to a constant factor."""
    g = iters * NS_PER_ITER * 1e-9 + overhead_us * 1e-6
    return g, iters / g


def expected_metg(overhead_us, iters, threshold=0.5):
    """Task Bench's METG on the model, written independently of the harness:
    walk the sweep from coarse to fine, and interpolate linearly at the first
    step from >= threshold to < threshold.  Returns (metg s, g_hi, g_lo)."""
    pts = sorted((model_point(overhead_us, i) for i in iters), reverse=True)
    peak = max(r for _, r in pts)
    effs = [(g, r / peak) for g, r in pts]
    for (g_hi, e_hi), (g_lo, e_lo) in zip(effs, effs[1:]):
        if e_hi >= threshold > e_lo:
            return g_lo + (threshold - e_lo) / (e_hi - e_lo) * (g_hi - g_lo), g_hi, g_lo
    raise AssertionError("model sweep never crosses the threshold")


def analytic_metg(overhead_us, iters, threshold=0.5):
    """The continuous METG: efficiency(g) = (1 - o/g) / k with
    k = I c / (I c + o) for the largest sweep point I; solve for threshold."""
    o = overhead_us * 1e-6
    big = max(iters) * NS_PER_ITER * 1e-9
    k = big / (big + o)
    return o / (1 - threshold * k)


# ----------------------------------------------------------------- checks

def t_run(out):
    if os.path.isdir(out):
        shutil.rmtree(out)
    t0 = time.monotonic()
    p = bench(SMALL, "--out", out, "--table")
    print("ompc-bench exit %d in %.1fs" % (p.returncode, time.monotonic() - t0))
    check(p.returncode == 0, "ompc-bench exited %d; stderr:\n%s" % (p.returncode,
                                                                    p.stderr[-3000:]))
    err = p.stderr
    total = sum(len(PATTERNS) * len(ITERS) * REPS for _ in CONFIGS)
    check(("[1/%d]" % total) in err and ("[%d/%d]" % (total, total)) in err,
          "progress lines [n/%d] missing on stderr" % total)
    check("ETA" in err, "no ETA in the progress lines")
    check("failed" in err and "failures.log" in err,
          "the failed runs are not announced on stderr")
    with open(os.path.join(out, "table-run.md"), "w") as f:
        f.write(p.stdout)
    check(p.stdout.startswith("| pattern |"), "--table after a run printed no table")


def t_csv(out):
    runs = read(os.path.join(out, "runs.csv"))
    total = len(PATTERNS) * len(ITERS) * REPS * len(CONFIGS)
    check(len(runs) == total, "runs.csv has %d rows, want %d" % (len(runs), total))
    want_cols = {"backend", "pattern", "ranks", "cores", "width", "iterations", "rep",
                 "status", "elapsed_s", "tasks", "flops", "flops_per_s", "granularity_us",
                 "error", "command"}
    check(want_cols <= set(runs[0]), "runs.csv lacks columns %s" % (want_cols - set(runs[0])))
    seen = set()
    for r in runs:
        key = (r["backend"], int(r["ranks"]))
        o, cores, procs, bad = CONFIGS[key]
        it = int(r["iterations"])
        seen.add((key, r["pattern"], it, r["rep"]))
        check(int(r["cores"]) == cores, "%s: cores %s, want %d" % (key, r["cores"], cores))
        check(int(r["width"]) == 2 * cores, "%s: width %s, want 2*cores" % (key, r["width"]))
        check(("-n %d" % int(r["ranks"])) in r["command"] and "mpiexec.mpich" in r["command"],
              "command %r is not launched with mpiexec.mpich -n" % r["command"])
        if it in bad:
            continue
        if not check(r["status"] == "ok", "%s iter %d: status %s (%s)"
                     % (key, it, r["status"], r["error"])):
            continue
        tasks = STEPS * 2 * cores
        g, _ = model_point(o, it)
        check(int(r["tasks"]) == tasks, "%s: tasks %s, want %d" % (key, r["tasks"], tasks))
        check(close(float(r["elapsed_s"]), tasks * g / procs),
              "%s iter %d: elapsed %s, want %g" % (key, it, r["elapsed_s"], tasks * g / procs))
        check(close(float(r["granularity_us"]), g * 1e6),
              "%s iter %d: granularity %s us, want %g" % (key, it, r["granularity_us"], g * 1e6))
        check(close(float(r["flops_per_s"]), tasks * it * 64 / (tasks * g / procs)),
              "%s iter %d: FLOP/s %s" % (key, it, r["flops_per_s"]))
        # The runtime's OMPC_STATS CPU lines (fake-taskbench's model), which
        # the harness asks for and parses.
        ranks = int(r["ranks"])
        e = tasks * g / procs
        check(close(float(r["head_cpu_s"]), tasks * 3e-6) and r["head_csw_vol"] == "10"
              and r["head_csw_invol"] == "3",
              "%s iter %d: head cpu %s s, context switches %s/%s" % (
                  key, it, r["head_cpu_s"], r["head_csw_vol"], r["head_csw_invol"]))
        check(close(float(r["workers_cpu_s"]), (ranks - 1) * e, 1e-5)
              and close(float(r["workers_kernel_s"]), (ranks - 1) * e / 2, 1e-5)
              and int(r["workers_csw_vol"]) == 7 * (ranks - 1)
              and int(r["workers_csw_invol"]) == ranks - 1,
              "%s iter %d: workers cpu %s s, kernels %s s, context switches %s/%s" % (
                  key, it, r["workers_cpu_s"], r["workers_kernel_s"], r["workers_csw_vol"],
                  r["workers_csw_invol"]))
        check(len(r["rank_cpu_s"].split(";")) == ranks,
              "%s: rank_cpu_s %r, want %d ranks" % (key, r["rank_cpu_s"], ranks))
    check(len(seen) == total, "runs.csv repeats or misses combinations")

    summary = read(os.path.join(out, "summary.csv"))
    want = len(PATTERNS) * len(ITERS) * len(CONFIGS)
    check(len(summary) == want, "summary.csv has %d rows, want %d" % (len(summary), want))
    for s in summary:
        key = (s["backend"], int(s["ranks"]))
        o, cores, procs, bad = CONFIGS[key]
        it = int(s["iterations"])
        if it in bad:
            check(s["n"] == "0" and s["n_failed"] == str(REPS) and s["elapsed_mean_s"] == "",
                  "%s iter %d: a failed point should have n=0, n_failed=%d: %s"
                  % (key, it, REPS, s))
            continue
        g, _ = model_point(o, it)
        check(s["n"] == str(REPS) and s["n_failed"] == "0",
              "%s iter %d: n=%s n_failed=%s" % (key, it, s["n"], s["n_failed"]))
        check(close(float(s["elapsed_mean_s"]), STEPS * 2 * cores * g / procs),
              "%s iter %d: elapsed mean %s" % (key, it, s["elapsed_mean_s"]))
        check(float(s["elapsed_std_s"]) < 1e-12 and float(s["flops_per_s_std"]) < 1e-3,
              "%s iter %d: std should be 0 on a deterministic model" % (key, it))
        check(close(float(s["granularity_us"]), g * 1e6, 1e-5),
              "%s iter %d: granularity %s" % (key, it, s["granularity_us"]))
        check(0 < float(s["efficiency"]) <= 1.0, "%s: efficiency %s" % (key, s["efficiency"]))
        if it == max(ITERS):
            check(close(float(s["efficiency"]), 1.0), "the coarsest point is the peak")
    print("runs.csv: %d rows, summary.csv: %d rows" % (len(runs), len(summary)))


def t_metg(out):
    rows = read(os.path.join(out, "metg.csv"))
    check(len(rows) == len(PATTERNS) * len(CONFIGS),
          "metg.csv has %d rows, want %d" % (len(rows), len(PATTERNS) * len(CONFIGS)))
    for r in rows:
        key = (r["backend"], int(r["ranks"]))
        o, cores, procs, bad = CONFIGS[key]
        iters = [i for i in ITERS if i not in bad]
        want, g_hi, g_lo = expected_metg(o, iters)
        exact = analytic_metg(o, iters)
        got = float(r["metg_us"]) * 1e-6
        check(r["status"] == "interpolated", "%s %s: status %s" % (key, r["pattern"],
                                                                   r["status"]))
        check(close(got, want, 1e-5), "%s %s: METG %.6g us, Task Bench's rule gives %.6g us"
              % (key, r["pattern"], got * 1e6, want * 1e6))
        # The chord lies under the concave efficiency curve, so linear
        # interpolation errs on the coarse side, and stays in the bracket.
        check(g_lo <= exact <= got * (1 + 1e-9) <= g_hi * (1 + 1e-9),
              "%s %s: want %.4g <= analytic %.4g <= METG %.4g <= %.4g us"
              % (key, r["pattern"], g_lo * 1e6, exact * 1e6, got * 1e6, g_hi * 1e6))
        if not bad:
            check(abs(got - exact) / exact < 0.02,
                  "%s %s: METG %.4g us is not within 2%% of the analytic %.4g us"
                  % (key, r["pattern"], got * 1e6, exact * 1e6))
        check(int(r["points"]) == len(iters), "%s: points %s, want %d"
              % (key, r["points"], len(iters)))
        check(int(r["failed_runs"]) == len(bad) * REPS, "%s: failed_runs %s"
              % (key, r["failed_runs"]))
        print("%-6s n=%d %-10s METG %8.3f us (rule %8.3f, analytic %8.3f, bracket %s)"
              % (key[0], key[1], r["pattern"], got * 1e6, want * 1e6, exact * 1e6,
                 r["bracket_iterations"]))


def t_failed(out):
    runs = read(os.path.join(out, "runs.csv"))
    broken = [r for r in runs if r["backend"] == "broken"]
    for r in broken:
        it = int(r["iterations"])
        if it == 1024:
            check(r["status"] == "failed" and r["error"] == "exit status 3",
                  "iter 1024 should fail with exit status 3: %s / %s"
                  % (r["status"], r["error"]))
        elif it == 64:
            check(r["status"] == "failed" and "Elapsed Time" in r["error"],
                  "iter 64 should fail for the missing Elapsed Time line: %s / %s"
                  % (r["status"], r["error"]))
        else:
            check(r["status"] == "ok", "broken iter %d should be ok: %s" % (it, r["error"]))
    nfail = sum(r["status"] != "ok" for r in runs)
    check(nfail == 2 * len(PATTERNS) * REPS, "%d failed runs, want %d"
          % (nfail, 2 * len(PATTERNS) * REPS))
    with open(os.path.join(out, "failures.log")) as f:
        log = f.read()
    check(log.count("=== run ") == nfail, "failures.log has %d entries, want %d"
          % (log.count("=== run "), nfail))
    check("fake-taskbench: injected failure at -iter 1024" in log,
          "failures.log lacks the failing run's stderr tail")
    check("missing summary line(s): Elapsed Time" in log,
          "failures.log lacks the missing-line failure")
    for r in runs:
        if r["status"] != "ok":
            check(r["log"] and os.path.exists(os.path.join(out, r["log"])),
                  "failed run has no log file: %r" % r["log"])
    print("%d failed runs recorded (runs.csv, failures.log, logs/)" % nfail)


def t_plots(out):
    for pat in PATTERNS:
        for name in ("efficiency_%s.png" % pat, "time_vs_ranks_%s.png" % pat):
            path = os.path.join(out, name)
            if not check(os.path.exists(path), "%s missing" % name):
                continue
            with open(path, "rb") as f:
                data = f.read()
            check(data[:8] == b"\x89PNG\r\n\x1a\n", "%s is not a PNG" % name)
            check(len(data) > 5000, "%s is only %d bytes" % (name, len(data)))
            print("%s: %d bytes" % (name, len(data)))


def t_table(out):
    p = bench("--table", "--out", out, "--baseline", "slow")
    check(p.returncode == 0, "--table exited %d: %s" % (p.returncode, p.stderr))
    lines = p.stdout.splitlines()
    print(p.stdout)
    check(lines and lines[0].startswith("| pattern |"), "no markdown header")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    check("fast n=1 w=2 METG(50%) (us)" in header and "fast n=2 w=4 / slow" in header
          and "slow METG(50%) (us)" in header and "omp / slow" in header,
          "unexpected columns: %s" % header)
    check(set(lines[1].replace("|", "").replace("-", "").replace(":", "")) <= {""},
          "second line is not a markdown separator")
    metg = {(r["pattern"], r["backend"], r["ranks"]): float(r["metg_us"])
            for r in read(os.path.join(out, "metg.csv"))}
    for pat in PATTERNS:
        row = [l for l in lines if l.startswith("| %s |" % pat)]
        if not check(len(row) == 1, "no table row for %s" % pat):
            continue
        cells = dict(zip(header, [c.strip() for c in row[0].strip("|").split("|")]))
        want = "%.2fx" % (metg[(pat, "omp", "1")] / metg[(pat, "slow", "2")])
        check(cells["omp / slow"] == want, "%s: omp / slow is %r, want %r"
              % (pat, cells["omp / slow"], want))
        check(abs(float(cells["slow METG(50%) (us)"]) - metg[(pat, "slow", "2")]) < 0.51,
              "%s: slow METG cell %r" % (pat, cells["slow METG(50%) (us)"]))
    # No baseline: no ratio columns.  The run's own --table used small.yaml's baseline.
    p = bench("--table", "--out", out)
    check(p.returncode == 0 and " / slow" in p.stdout,
          "--table without --baseline should use the experiment's baseline: slow")
    p = bench("--table", "--out", out, "--baseline", "nosuch")
    check(p.returncode == 2 and "nosuch" in p.stderr, "--baseline nosuch should be refused")


def t_analyze(out):
    tmp = tempfile.mkdtemp(prefix="tbbench-analyze-")
    try:
        shutil.copy(os.path.join(out, "runs.csv"), tmp)
        shutil.copy(os.path.join(out, "meta.json"), tmp)
        p = bench("--analyze", "--out", tmp, "--no-plots")
        check(p.returncode == 0, "--analyze exited %d: %s" % (p.returncode, p.stderr))
        for name in ("summary.csv", "metg.csv"):
            with open(os.path.join(out, name)) as a, open(os.path.join(tmp, name)) as b:
                check(a.read() == b.read(), "--analyze gives a different %s" % name)
        # A fixed peak per core: efficiency = FLOP/s / (peak x cores).
        peak = 64 / (NS_PER_ITER * 1e-9)  # the model's asymptotic FLOP/s per process
        p = bench("--analyze", "--out", tmp, "--no-plots", "--efficiency-ref", "%r" % peak)
        check(p.returncode == 0, "--analyze --efficiency-ref exited %d" % p.returncode)
        for r in read(os.path.join(tmp, "metg.csv")):
            if r["backend"] != "fast" or r["ranks"] != "1":
                continue
            # efficiency = 1 - o/g exactly: METG between the points around 2 o.
            check(r["status"] == "interpolated" and 20 <= float(r["metg_us"]) < 21,
                  "fixed peak: fast METG %s us (%s), want 20..21" % (r["metg_us"],
                                                                     r["status"]))
        print("--analyze reproduces summary.csv and metg.csv")
    finally:
        shutil.rmtree(tmp)


def t_outputs(out):
    """summary.csv and metg.csv are written by --analyze without following a
    symlink planted under the old temporary name (PATH.tmp), through a
    symlink at the path (the link stays), and into a FIFO only when it has
    a reader (refused by name otherwise, without hanging)."""
    tmp = tempfile.mkdtemp(prefix="tbbench-outputs-")
    try:
        shutil.copy(os.path.join(out, "runs.csv"), tmp)
        shutil.copy(os.path.join(out, "meta.json"), tmp)
        victim = os.path.join(tmp, "victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.symlink(victim, os.path.join(tmp, "summary.csv.tmp"))
        os.mkdir(os.path.join(tmp, "real"))
        os.symlink(os.path.join("real", "metg.csv"), os.path.join(tmp, "metg.csv"))
        with open(os.path.join(tmp, "real", "metg.csv"), "w") as f:
            f.write("old\n")
        p = bench("--analyze", "--out", tmp, "--no-plots", timeout=120)
        check(p.returncode == 0, "--analyze exited %d: %s" % (p.returncode, p.stderr))
        with open(victim) as f:
            check(f.read() == "precious\n", "a symlink at summary.csv.tmp was followed")
        check(os.path.islink(os.path.join(tmp, "metg.csv")), "the symlink metg.csv was replaced")
        with open(os.path.join(out, "metg.csv")) as a, \
                open(os.path.join(tmp, "real", "metg.csv")) as b:
            check(a.read() == b.read(), "the symlink's target does not hold metg.csv")
        os.unlink(os.path.join(tmp, "summary.csv"))
        os.mkfifo(os.path.join(tmp, "summary.csv"))
        try:
            p = bench("--analyze", "--out", tmp, "--no-plots", timeout=60)
            check(p.returncode == 2 and "summary.csv is a FIFO with no reader" in p.stderr,
                  "a FIFO without a reader: exit %d, %r" % (p.returncode, p.stderr[-300:]))
        except subprocess.TimeoutExpired:
            check(False, "a FIFO without a reader at summary.csv hung --analyze")
        check(stat_is_fifo(os.path.join(tmp, "summary.csv")), "the FIFO summary.csv was replaced")
        left = [n for n in os.listdir(tmp) if ".tmp." in n]
        check(not left, "temporaries left: %s" % left)
        print("--analyze outputs: planted temporary, symlink and FIFO handled")
    finally:
        shutil.rmtree(tmp)


def stat_is_fifo(path):
    return stat.S_ISFIFO(os.lstat(path).st_mode)


def t_dry_run(_out=None):
    tmp = tempfile.mkdtemp(prefix="tbbench-dry-")
    try:
        out = os.path.join(tmp, "res")
        p = bench(SMALL, "--dry-run", "--out", out)
        check(p.returncode == 0, "--dry-run exited %d: %s" % (p.returncode, p.stderr))
        lines = p.stdout.splitlines()
        total = len(PATTERNS) * len(ITERS) * REPS * len(CONFIGS)
        check(len(lines) == total, "--dry-run listed %d runs, want %d" % (len(lines), total))
        # A run without -worker: look at whole words, since the checkout's
        # path (in the binary's name) may hold "-worker" too.
        check(any("mpiexec.mpich -n 2 " in l and "-worker" not in l.split() for l in lines),
              "no 'mpiexec.mpich -n 2' run without -worker listed")
        check(any("FAKE_FAIL_ITER=1024" in l for l in lines), "env not shown in --dry-run")
        check(any("-worker 2 -overhead 20" in l for l in lines),
              "{cores} not substituted in args")
        check(not os.path.exists(out), "--dry-run created the results directory")
        p = bench(SMALL, "--dry-run", "--backends", "slow", "--patterns", "fft", "-r", "1")
        check(p.returncode == 0 and len(p.stdout.splitlines()) == len(ITERS),
              "--backends/--patterns/-r filter: %d lines" % len(p.stdout.splitlines()))
        p = bench(SMALL, "--dry-run", "--backends", "fast", "--cores-per-rank", "2")
        check(p.returncode == 0 and any("n=2\tcores=4\tw=8\t" in l
                                        for l in p.stdout.splitlines()),
              "--cores-per-rank 2: want cores=4 and width 2*cores=8 for 2 ranks")
        srun = os.path.join(tmp, "srun.yaml")
        with open(srun, "w") as f:
            f.write("launcher: srun\npatterns: [fft]\niterations: [8]\nwidth: ranks\n"
                    "backends: {b: {cmd: /bin/tb, ranks: [4], launcher_args: '--exclusive'}}\n")
        p = bench(srun, "--dry-run")
        check(p.returncode == 0 and "srun -n 4 --exclusive /bin/tb -steps 100 -width 4 "
              "-type fft" in p.stdout, "launcher srun: %s" % p.stdout.strip())
        print("--dry-run: %d runs listed" % len(lines))
    finally:
        shutil.rmtree(tmp)


def t_timeout(_out=None):
    tmp = tempfile.mkdtemp(prefix="tbbench-timeout-")
    try:
        t0 = time.monotonic()
        p = bench(os.path.join(HERE, "timeout.yaml"), "--out", tmp, "--no-plots",
                  timeout=120)
        took = time.monotonic() - t0
        check(p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr))
        check(took < 30, "the timed-out run was not killed promptly (%.1fs)" % took)
        runs = read(os.path.join(tmp, "runs.csv"))
        st = {r["backend"]: r for r in runs}
        check(st["sleepy"]["status"] == "timeout", "sleepy: status %s" % st["sleepy"]["status"])
        check(st["fine"]["status"] == "ok", "the run after the timeout did not run: %s"
              % st["fine"]["status"])
        print("timeout recorded, next run ok, %.1fs" % took)
    finally:
        shutil.rmtree(tmp)


def t_bad_config(_out=None):
    tmp = tempfile.mkdtemp(prefix="tbbench-bad-")
    try:
        cases = [
            ("patterns: [trivial]\niterations: [1]\nbackends: {a: {cmd: x}}\nwidht: 3\n",
             "bad.yaml:4: widht: unknown key"),
            ("patterns: [trivial]\niterations: [1]\nbackends: {a: {ranks: [1]}}\n",
             "cmd is required"),
            ("patterns: [trivial]\niterations: [1]\nwidth: 'ranks +'\n"
             "backends: {a: {cmd: x}}\n", "cannot parse expression"),
            ("patterns: [trivial]\niterations: [1]\nwidth: 'nodes * 2'\n"
             "backends: {a: {cmd: x}}\n", "unknown name 'nodes'"),
            ("patterns: [trivial]\niterations: [1]\nbackends: {a: {cmd: '{bindr}/x'}}\n",
             "unknown placeholder {bindr}"),
            ("patterns: [trivial]\niterations: [1]\nlauncher: qsub\nbackends: {a: {cmd: x}}\n",
             "bad.yaml:3: launcher: must be one of"),
            ("patterns: [trivial\n", "not valid YAML"),
        ]
        for text, want in cases:
            path = os.path.join(tmp, "bad.yaml")
            with open(path, "w") as f:
                f.write(text)
            p = bench(path, "--dry-run")
            check(p.returncode == 2 and want in p.stderr,
                  "%r: want exit 2 and %r, got %d: %s" % (text, want, p.returncode,
                                                         p.stderr.strip()))
        # A missing program fails its runs (recorded) without launching.
        path = os.path.join(tmp, "missing.yaml")
        with open(path, "w") as f:
            f.write("patterns: [trivial]\niterations: [1, 2]\nmpiexec: mpiexec.mpich\n"
                    "backends: {a: {cmd: '{bindir}/no-such-taskbench'}}\n")
        p = bench(path, "--out", os.path.join(tmp, "res"), "--no-plots")
        rows = read(os.path.join(tmp, "res", "runs.csv")) if p.returncode == 0 else []
        check(p.returncode == 0 and len(rows) == 2 and
              all(r["status"] == "failed" and "not found" in r["error"] for r in rows),
              "a missing program should fail its runs: %d %s" % (p.returncode, p.stderr))
        p = bench(path, "--out", os.path.join(tmp, "res"), "--no-plots", "--strict")
        check(p.returncode == 1, "--strict with failed runs should exit 1, not %d"
              % p.returncode)
        p = bench("--table", "--out", os.path.join(tmp, "res"))
        check(p.returncode == 0 and "n/a" in p.stdout, "--table on no data should say n/a")
        print("%d broken experiment files refused" % len(cases))
    finally:
        shutil.rmtree(tmp)


TESTS = {
    "run": t_run, "csv": t_csv, "metg": t_metg, "failed": t_failed, "plots": t_plots,
    "table": t_table, "analyze": t_analyze, "outputs": t_outputs, "dry_run": t_dry_run, "timeout": t_timeout,
    "bad_config": t_bad_config,
}


def main(argv):
    if not argv or argv[0] not in TESTS:
        print(__doc__)
        return 2
    TESTS[argv[0]](argv[1] if len(argv) > 1 else None)
    if failures:
        print("%s: %d check(s) failed" % (argv[0], len(failures)))
        return 1
    print("%s: ok" % argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
