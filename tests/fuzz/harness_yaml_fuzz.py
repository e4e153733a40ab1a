#!/usr/bin/env python3
"""Deterministic mutation fuzzer for ompc-bench's experiment-file reader.

    harness_yaml_fuzz.py [--inputs N] [--seed S] [--keep DIR]

The seed corpus is every experiment file in the repository that ompc-bench
accepts (taskbench-port/bench/*.yaml, tests/taskbench-bench/*.yaml); each
must still give exit 0, so a harness that refused everything would fail
here.  N inputs (default 400) are made from them with a fixed seed: byte and
bit flips, truncation, repeated, dropped and swapped lines, lines from
another file, huge and non-finite numbers, hostile values (expressions,
format-spec placeholders, tags, aliases), deep nesting, non-UTF-8 bytes and
control characters.

Each input runs through ompc-bench's own main(FILE --dry-run), imported
once; forked children run the inputs, BATCH (50) each in turn, so a run
costs milliseconds, neither a Python start nor a fork.  An input fails the
fuzzer if its run
  - takes longer than PER_INPUT seconds (it is killed: a hang),
  - prints a traceback or exits other than 0 (accepted) or 2 (refused),
  - exits 2 with anything but one line "ompc-bench: ..." on stderr.
Failing inputs are written to --keep DIR (default: a temporary directory
that is kept only when something failed) to reproduce them by hand.
"""

import argparse
import gc
import glob
import importlib.machinery
import importlib.util
import os
import random
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback


def _use_system_python():
    """As ompc-bench does: the python3 first on PATH may lack PyYAML, which
    Debian's /usr/bin/python3 has."""
    system = "/usr/bin/python3"
    if (importlib.util.find_spec("yaml") is None and not os.environ.get("OMPC_FUZZ_REEXEC")
            and os.path.realpath(sys.executable) != os.path.realpath(system)
            and os.access(system, os.X_OK)):
        os.environ["OMPC_FUZZ_REEXEC"] = "1"
        os.execv(system, [system, os.path.realpath(__file__)] + sys.argv[1:])


_use_system_python()

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
BENCH = os.path.join(ROOT, "taskbench-port", "bench", "ompc-bench")
SEED_GLOBS = ["taskbench-port/bench/*.yaml", "tests/taskbench-bench/*.yaml"]
PER_INPUT = 10.0        # seconds; the slowest accepted input takes about 3
BATCH = 50              # inputs run one after another by one forked child
BAD_INPUT = 2           # ompc-bench's exit status for a bad experiment file

HUGE_NUMBERS = [
    b"1000000000000", b"2147483648", b"9" * 40, b"9" * 5000, b"0x" + b"f" * 200,
    b"-1", b"0", b"-0", b"1.5", b"1e999", b"1.0e+400", b".nan", b".inf", b"-.inf",
    b"'2**100000000'", b"'9**9**9'", b"'10**18'", b"'2**62'", b"100000", b"99999",
]
HOSTILE_VALUES = [
    b"[]", b"{}", b"null", b"~", b"''", b"' '", b"yes", b"on", b"[[]]", b"[{}]",
    b"!!binary AAAA", b"!!python/object/apply:os.system ['true']", b"!!set {a}",
    b"!!int abc", b"!!float x", b"!!timestamp 2024-13-45", b"2024-13-45",
    b"*nowhere", b"&a [*a]", b"&b {x: *b}", b"'{bindir:>100000000}'", b"'{'", b"'}'",
    b"'{{x}}'", b"'{0}'", b"'{ranks!r}'", b"'{}'", b'"\\0"', b"\"'\"", b"'\"'",
    b"'min()'", b"'max(1)'", b"'abs(1, 2)'", b"'(-8) ** 0.5'", b"'1/0'", b"'0 ** -1'",
    b"'ranks ** ranks ** ranks'", b"'2.0 ** 5000'", b"'1e999'", b"'__import__(\"os\")'",
    b"'ranks.__class__'", b"'[1, 2]'", b"'lambda: 1'", b"'1 if 1 else 2'",
    b"'" + b"1+" * 150 + b"1'", b"'" + b"(" * 300 + b"1" + b")" * 300 + b"'",
    b"'-' ", b"'\\x00'", b"'a\\nb'", b"{cmd: '{bindir}/x', ranks: [1]}",
]


def seeds():
    out = []
    for pattern in SEED_GLOBS:
        out += sorted(glob.glob(os.path.join(ROOT, pattern)))
    return out


# ---------------------------------------------------------------- mutators
# Each takes (rng, data bytes, corpus) and returns new bytes.

def byte_flip(rng, data, corpus):
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if b:
            b[rng.randrange(len(b))] ^= rng.randint(1, 255)
    return bytes(b)


def bit_flip(rng, data, corpus):
    b = bytearray(data)
    if b:
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def truncate(rng, data, corpus):
    return data[:rng.randrange(len(data) + 1)]


def _lines(data):
    return data.splitlines(keepends=True)


def dup_line(rng, data, corpus):
    lines = _lines(data)
    if not lines:
        return data
    i = rng.randrange(len(lines))
    j = rng.randrange(len(lines) + 1)
    return b"".join(lines[:j] + [lines[i]] * rng.choice([1, 1, 2, 50]) + lines[j:])


def drop_line(rng, data, corpus):
    lines = _lines(data)
    if lines:
        del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def swap_lines(rng, data, corpus):
    lines = _lines(data)
    if len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def splice_line(rng, data, corpus):
    other = _lines(rng.choice(corpus))
    lines = _lines(data)
    if other:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(other))
    return b"".join(lines)


def _digit_runs(data):
    runs, i = [], 0
    while i < len(data):
        if 48 <= data[i] <= 57:
            j = i
            while j < len(data) and 48 <= data[j] <= 57:
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


def huge_number(rng, data, corpus):
    runs = _digit_runs(data)
    if not runs:
        return data
    i, j = rng.choice(runs)
    return data[:i] + rng.choice(HUGE_NUMBERS) + data[j:]


def _value_spots(data):
    """(start, end) of the text after 'key: ' or '- ' on each line."""
    spots, pos = [], 0
    for line in _lines(data):
        body = line.rstrip(b"\r\n")
        for sep in (b": ", b"- "):
            k = body.find(sep)
            if k >= 0:
                spots.append((pos + k + len(sep), pos + len(body)))
                break
        pos += len(line)
    return spots


def hostile_value(rng, data, corpus):
    spots = _value_spots(data)
    if not spots:
        return data
    i, j = rng.choice(spots)
    return data[:i] + rng.choice(HOSTILE_VALUES + HUGE_NUMBERS) + data[j:]


def deep_nesting(rng, data, corpus):
    n = rng.choice([5, 31, 32, 33, 100, 5000, 100000])
    spots = _value_spots(data)
    if rng.random() < 0.5 and spots:
        i, j = rng.choice(spots)
        opener, closer = rng.choice([(b"[", b"]"), (b"{a: ", b"}")])
        return data[:i] + opener * n + data[i:j] + closer * n + data[j:]
    n = min(n, 600)     # block nesting: the indentation grows as n squared
    nest = b"description:\n" + b"".join(b" " * k + b"k%d:\n" % k for k in range(1, n + 1))
    return data + nest


def non_utf8(rng, data, corpus):
    k = rng.randrange(len(data) + 1)
    junk = bytes(rng.choice([0x80, 0xc0, 0xc3, 0xe9, 0xed, 0xf8, 0xfe, 0xff])
                 for _ in range(rng.randint(1, 3)))
    return data[:k] + junk + data[k:]


def control_char(rng, data, corpus):
    k = rng.randrange(len(data) + 1)
    return data[:k] + rng.choice([b"\x00", b"\x01", b"\x1b", b"\t", b"\r", b"\x7f",
                                  b"\xef\xbb\xbf", b"\xc2\x85"]) + data[k:]


def alias_bomb(rng, data, corpus):
    bomb = b"description:\n  - &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
    for i in range(1, rng.randint(2, 8)):
        bomb += b"  - &a%d [%s]\n" % (i, b", ".join([b"*a%d" % (i - 1)] * 9))
    return data + bomb


def placeholder(rng, data, corpus):
    k = data.find(b"{bindir}")
    name = rng.choice([b"bindir", b"ranks", b"nope", b"", b"0", b"bindir.x", b"rep"])
    spec = rng.choice([b"", b":>100000000", b":d", b"!r", b":{width}", b"}", b"{"])
    token = b"{" + name + spec + b"}"
    if k < 0:
        return data + b"extra_args: '" + token + b"'\n"
    return data[:k] + token + data[k + len(b"{bindir}"):]


MUTATORS = [byte_flip, bit_flip, truncate, dup_line, drop_line, swap_lines, splice_line,
            huge_number, hostile_value, hostile_value, deep_nesting, non_utf8,
            control_char, alias_bomb, placeholder, placeholder]


# ------------------------------------------------------------------ running

def load_bench():
    # Never let the imported harness re-run itself under another Python: it
    # would exec ompc-bench in place of this script.
    os.environ["OMPC_BENCH_REEXEC"] = "1"
    loader = importlib.machinery.SourceFileLoader("ompc_bench", BENCH)
    spec = importlib.util.spec_from_loader("ompc_bench", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    # The harness imports PyYAML when it first reads a file; a child forked
    # before that import would repeat it for every input, and the import
    # costs more than reading the input.  Importing it here, and freezing
    # what is loaded so no child's garbage collector touches (and copies)
    # the parent's objects, leaves each child the reading alone.
    try:
        import yaml  # noqa: F401
    except ImportError:
        pass        # the seeds then fail, each with the harness's own message
    gc.collect()
    gc.freeze()
    return mod


def _run_main(bench, path, workdir, out_path, err_path):
    """In a child: bench.main([path, --dry-run]) with stdout and stderr sent
    to the two files; returns its exit status."""
    sys.stdout.flush()
    sys.stderr.flush()
    fo = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    fe = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fo, 1)
    os.dup2(fe, 2)
    os.close(fo)
    os.close(fe)
    try:
        code = bench.main([path, "--dry-run", "--out", os.path.join(workdir, "res")])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 70
    sys.stdout.flush()
    sys.stderr.flush()
    return code if isinstance(code, int) and 0 <= code < 256 else 70


def _serve(bench, paths, workdir, report):
    """The child: runs paths in order, writing "INDEX STATUS" to the report
    pipe after each."""
    code = 70
    try:
        for k, path in enumerate(paths):
            status = _run_main(bench, path, workdir, os.path.join(workdir, "stdout%d" % k),
                               os.path.join(workdir, "stderr%d" % k))
            os.write(report, b"%d %d\n" % (k, status))
        code = 0
    finally:
        os._exit(code)


def run_many(bench, paths, workdir):
    """Runs bench.main([path, --dry-run]) for each path in forked children,
    BATCH paths per child; returns one (status, stdout text, stderr text,
    seconds) per path, status None for a hang.

    A fork per input costs several times what reading the input does (a
    Python process's fork and exit), which made the run CPU-bound on fork;
    dry runs keep no state between calls.  A child that hangs is killed
    after PER_INPUT seconds, one that dies takes its exit status as the
    input's; either way the next input starts in a new child."""
    def read(p):
        try:
            with open(p, "rb") as f:
                return f.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            return ""

    results = []
    while len(results) < len(paths):
        first = len(results)
        batch = paths[first:first + BATCH]
        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _serve(bench, batch, workdir, w)
        os.close(w)
        pending = b""
        t0 = time.monotonic()
        ended = None            # the child's exit status once reaped
        while len(results) < first + len(batch):
            k = len(results) - first
            ready, _, _ = select.select([r], [], [], max(0.0, t0 + PER_INPUT - time.monotonic()))
            if not ready:       # a hang: the input k never finished
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                ended = -signal.SIGKILL
                results.append((None, read(os.path.join(workdir, "stdout%d" % k)),
                                read(os.path.join(workdir, "stderr%d" % k)),
                                time.monotonic() - t0))
                break
            chunk = os.read(r, 4096)
            if not chunk:       # the child died inside input k
                _, st = os.waitpid(pid, 0)
                ended = os.waitstatus_to_exitcode(st)
                results.append((ended, read(os.path.join(workdir, "stdout%d" % k)),
                                read(os.path.join(workdir, "stderr%d" % k)),
                                time.monotonic() - t0))
                break
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                j, status = (int(x) for x in line.split())
                now = time.monotonic()
                results.append((status, read(os.path.join(workdir, "stdout%d" % j)),
                                read(os.path.join(workdir, "stderr%d" % j)), now - t0))
                t0 = now
        os.close(r)
        if ended is None:
            os.waitpid(pid, 0)
    return results


def verdict(status, out, err):
    """Why the result is wrong, or None."""
    if status is None:
        return "no exit within %gs (a hang)" % PER_INPUT
    if "Traceback" in err or "Traceback" in out:
        return "a traceback: " + err.strip().splitlines()[-1][:300]
    if status not in (0, BAD_INPUT):
        return "exit status %d: %s" % (status, err.strip()[:300])
    lines = err.splitlines()
    if status == BAD_INPUT:
        if len(lines) != 1 or not lines[0].startswith("ompc-bench: "):
            return "refused with %d stderr lines, want one 'ompc-bench: ...': %r" % (
                len(lines), err[:300])
    elif not lines or "run(s); results would go to" not in lines[-1]:
        return "exit 0 without the --dry-run count line: %r" % err[:300]
    return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--inputs", type=int, default=400)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--keep", help="directory for failing inputs")
    args = ap.parse_args(argv)

    bench = load_bench()
    corpus_files = seeds()
    if not corpus_files:
        print("harness_yaml_fuzz: FAIL: no seed files under %s" % ROOT)
        return 1
    work = tempfile.mkdtemp(prefix="harness-yaml-fuzz-")
    keep = args.keep or os.path.join(work, "failures")
    failures = []
    counts = {0: 0, BAD_INPUT: 0}
    t_start = time.monotonic()
    slowest = (0.0, "")
    try:
        corpus = []
        seed_copies = []
        for path in corpus_files:
            with open(path, "rb") as f:
                corpus.append(f.read())
            # Seeds keep their directory so relative bindir: still resolves.
            seed_copies.append(os.path.join(work, os.path.basename(path)))
            shutil.copyfile(path, seed_copies[-1])
        for path, data, (status, out, err, took) in zip(
                corpus_files, corpus, run_many(bench, seed_copies, work)):
            if status != 0:
                failures.append(("seed %s" % os.path.relpath(path, ROOT),
                                 "a seed must be accepted: exit %s: %s"
                                 % (status, err.strip()[:300]), data))
        rng = random.Random(args.seed)
        for first in range(0, args.inputs, BATCH):
            made = []
            for i in range(first, min(first + BATCH, args.inputs)):
                data = rng.choice(corpus)
                applied = []
                for _ in range(rng.choice([1, 1, 2, 3])):
                    m = rng.choice(MUTATORS)
                    data = m(rng, data, corpus)
                    applied.append(m.__name__)
                path = os.path.join(work, "input%d.yaml" % (i - first))
                with open(path, "wb") as f:
                    f.write(data)
                made.append((i, applied, data, path))
            for (i, applied, data, _), (status, out, err, took) in zip(
                    made, run_many(bench, [m[3] for m in made], work)):
                if took > slowest[0]:
                    slowest = (took, "input %d (%s)" % (i, "+".join(applied)))
                why = verdict(status, out, err)
                if why:
                    failures.append(("input %d (%s)" % (i, "+".join(applied)), why, data))
                else:
                    counts[status] += 1
    finally:
        total = time.monotonic() - t_start
        for name, why, data in failures:
            os.makedirs(keep, exist_ok=True)
            fname = os.path.join(keep, name.split(" (")[0].replace(" ", "_").replace("/", "_")
                                 + ".yaml")
            with open(fname, "wb") as f:
                f.write(data)
            print("FAIL: %s: %s\n      reproduce: %s %s --dry-run" % (name, why, BENCH, fname))
        shutil.rmtree(os.path.join(work, "res"), ignore_errors=True)
        for f in os.listdir(work):
            p = os.path.join(work, f)
            if os.path.isfile(p):
                os.unlink(p)
        if not failures or args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("harness_yaml_fuzz: %d seeds, %d inputs (seed %d): %d accepted, %d refused with "
          "one line, %d failed; %.1fs, slowest %.2fs: %s"
          % (len(corpus_files), args.inputs, args.seed, counts[0], counts[BAD_INPUT],
             len(failures), total, slowest[0], slowest[1]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
