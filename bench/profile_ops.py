"""Profiles of the compute operators: where each one spends its time, by cProfile, at a given size.

The scale benchmark's dataset (``bench/scale_bench.py``: ``--samples``
generated samples × 3 raters × about 7 boxes, fields layout) is built once in
the benchmark's private database; then each operator runs in a process of its
own through ``execute_operator``, as a user runs it, with cProfile on every
thread the run starts (FiftyOne's executor thread, which runs the operator,
and the run's writer thread, which sends a shard's updates while the next one
is computed; the main thread only waits for them). Each thread's profile is
merged into one per operator.

Printed, and recorded as the ``profiles`` fragment of the benchmarks page
(``bench/write_page.py``): per operator, the top entries by cumulative time
and by own time (``--top``, default 10). ``--out PATH`` also writes them as a
Markdown file; ``--pstats DIR`` keeps each operator's raw profile
(``<operator>.pstats``: ``python -m pstats``, ``snakeviz``). cProfile's
overhead slows Python-heavy code (per-sample loops) more than numpy and the
database, so read the entries against each other, not against the scale
benchmark's seconds.

Run with ``make bench`` (100,000 samples; ``PROFILE_SAMPLES=...``) or
``scripts/with-temp-fiftyone.sh .venv/bin/python bench/profile_ops.py --samples 100000``;
``--quick`` (2,000 samples) checks that it works and does not replace the recorded fragment.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, REPO)

from scale_bench import OPERATORS, RATERS, build, run_key  # noqa: E402  (bench/ is this script's folder)
from write_page import record  # noqa: E402

COLUMNS = ["#", "function", "cumulative (s)", "own (s)", "calls"]


def _where(func: tuple) -> str:
    """``file:line(name)`` of a pstats key, the file relative to the repository or to site-packages."""
    path, line, name = func
    if path == "~":  # a builtin
        return name
    for root in ("site-packages" + os.sep, REPO + os.sep, "lib" + os.sep + "python"):
        if root in path:
            path = path.split(root, 1)[1]
            break
    return f"{path}:{line}({name})"


#: Frames left out of the cumulative list: the threads and FiftyOne's and the plugin's calls down to the run's
#: engine, each of which holds the whole run (they would fill the list with the same number).
PLUMBING = ("concurrent/futures/", "threading.py", "asyncio/", "fiftyone/operators/", "operators/",
            "(run_declared)", "(run_method)", "(_run_streamed)", "(_run_whole)", "(_run_windowed)", "(run)")
#: Waits left out of the own-time list: a thread waiting for another, whose work is in that thread's entries.
#: The database's time, as the client sees it, stays (``select.poll``: waiting for MongoDB's replies).
WAITS = ("acquire' of '_thread.lock", "get' of '_queue.SimpleQueue", "(wait)", "(_wait_for_tstate_lock)")


def _shown(func: tuple, by: str) -> bool:
    where = _where(func) if func[0] != "~" else func[2]
    return not any(p in where for p in (PLUMBING if by == "cumulative" else WAITS))


def top_entries(stats, by: str, n: int, everything: bool = False) -> list[list[str]]:
    """The top ``n`` functions of a ``pstats.Stats`` by ``"cumulative"`` or ``"tottime"`` (own) time, without
    the :data:`PLUMBING` (cumulative) or the :data:`WAITS` (own) unless ``everything``."""
    col = 3 if by == "cumulative" else 2
    items = [kv for kv in stats.stats.items() if everything or _shown(kv[0], by)]
    entries = sorted(items, key=lambda kv: kv[1][col], reverse=True)[:n]
    return [[str(i + 1), f"`{_where(func)}`", f"{ct:.2f}", f"{tt:.2f}", str(nc)]
            for i, (func, (_cc, nc, tt, ct, _callers)) in enumerate(entries)]


def child(spec: dict) -> dict:
    """One operator under cProfile in this process: every thread the run starts is profiled, then merged."""
    import cProfile
    import pstats
    import threading

    import fiftyone as fo
    import fiftyone.operators as foo

    ds = fo.load_dataset(spec["name"])
    profilers: list = []
    lock = threading.Lock()

    def start(frame, event, arg):  # the first event of a new thread: a profiler of its own takes over
        profiler = cProfile.Profile()
        with lock:
            profilers.append(profiler)
        profiler.enable()

    threading.setprofile(start)
    t = time.perf_counter()
    try:
        foo.execute_operator("@iaa/agreement/" + spec["op"], ctx=dict(view=ds.view(), params=dict(
            fields=list(RATERS), key=spec["key"], overwrite=True)))
    finally:
        threading.setprofile(None)
    seconds = time.perf_counter() - t
    with lock:
        for p in profilers:
            p.disable()  # a thread still alive (a pool's idle worker) stops adding to it
        stats = [p for p in profilers if p.getstats()]
    merged = pstats.Stats(stats[0])
    for p in stats[1:]:
        merged.add(p)
    if spec.get("pstats"):
        os.makedirs(spec["pstats"], exist_ok=True)
        merged.dump_stats(os.path.join(spec["pstats"], f"{spec['op']}.pstats"))
    n = spec["top"]
    every = bool(spec.get("everything"))
    ours = [kv for kv in merged.stats.items() if _where(kv[0]).startswith("agreement/")]
    own_ours = max(ours, key=lambda kv: kv[1][2]) if ours else None
    return {"seconds": seconds, "threads": len(stats), "cumulative": top_entries(merged, "cumulative", n, every),
            "own": top_entries(merged, "tottime", n, every),
            "plugin": f"`{_where(own_ours[0])}` ({own_ours[1][2]:.2f} s)" if own_ours else ""}


def profile(name: str, op: str, top: int, pstats_dir: str | None, everything: bool = False) -> dict:
    """:func:`child` in a process of its own (FiftyOne's operator timeout raised, as in the scale benchmark)."""
    payload = json.dumps({"name": name, "op": op, "key": run_key(op, {}), "top": top, "pstats": pstats_dir,
                          "everything": everything})
    code = (f"import json, sys; sys.path.insert(0, {REPO!r}); sys.path.insert(0, {BENCH!r}); import profile_ops; "
            f"print(json.dumps(profile_ops.child(json.loads({payload!r}))))")
    env = {**os.environ, "FIFTYONE_OPERATOR_TIMEOUT": os.environ.get("FIFTYONE_OPERATOR_TIMEOUT", "86400")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {"error": ((out.stderr or out.stdout).strip().splitlines() or ["no output"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def markdown(samples: int, results: dict) -> str:
    """The profiles as a Markdown file (``--out``): per operator, the top entries by cumulative and own time."""
    def table(rows: list) -> str:
        return "\n".join(["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
                         + ["| " + " | ".join(r) + " |" for r in rows])
    parts = [f"# Profiles of the compute operators at {samples:,} samples (cProfile, bench/profile_ops.py)\n"]
    for op, r in results.items():
        if "error" in r:
            parts.append(f"## {op}\n\nfailed: {r['error']}\n")
            continue
        parts.append(f"## {op} ({r['seconds']:.1f} s under cProfile, {r['threads']} threads)\n\n"
                     f"By cumulative time:\n\n{table(r['cumulative'])}\n\nBy own time:\n\n{table(r['own'])}\n")
    return "\n".join(parts)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=100_000)
    p.add_argument("--operators", nargs="*", default=list(OPERATORS))
    p.add_argument("--top", type=int, default=10, help="entries per list (default 10)")
    p.add_argument("--out", default=None, help="also write the profiles as Markdown to this file")
    p.add_argument("--pstats", default=None, help="keep each operator's raw profile in this folder")
    p.add_argument("--everything", action="store_true",
                   help="keep the threads' and operator's plumbing and the waits between threads in the lists")
    p.add_argument("--keep", action="store_true",
                   help="keep the dataset afterwards, and reuse one of this size left by an earlier --keep run "
                        "(the scale benchmark's: the same name)")
    p.add_argument("--quick", action="store_true", help="2,000 samples: to check that it works (nothing recorded "
                                                         "over the page's fragment)")
    args = p.parse_args(argv)
    if args.quick:
        args.samples = 2_000
    import fiftyone as fo

    name = f"iaa-bench-scale-{args.samples}"
    if args.keep and fo.dataset_exists(name) and len(fo.load_dataset(name)) == args.samples:
        print(f"reusing {name}", flush=True)
    else:
        build(name, args.samples)
    results = {}
    for op in args.operators:
        results[op] = r = profile(name, op, args.top, args.pstats, args.everything)
        if "error" in r:
            print(f"{op}: failed: {r['error']}", flush=True)
            continue
        print(f"\n{op}: {r['seconds']:.1f} s under cProfile ({r['threads']} threads)", flush=True)
        for title, rows in (("cumulative", r["cumulative"]), ("own", r["own"])):
            print(f"  by {title} time:")
            for row in rows:
                print(f"    {row[0]:>2}. {row[2]:>8} s cum {row[3]:>8} s own {row[4]:>9} calls  {row[1].strip('`')}")
    if not args.keep:
        fo.delete_dataset(name)
    if args.out:
        with open(args.out, "w") as f:
            f.write(markdown(args.samples, results))
        print(f"wrote {args.out}")
    ok = {op: r for op, r in results.items() if "error" not in r}
    summary = [[f"`{op}`", f"{r['seconds']:.1f}", r["own"][0][1] if r["own"] else "", r.get("plugin", "")]
               if "error" not in r else [f"`{op}`", f"failed: {r['error'][:120]}", "", ""]
               for op, r in results.items()]
    tables = [{"title": f"`{op}`, by {title} time", "columns": COLUMNS, "rows": r[key]}
              for op, r in ok.items() for title, key in (("cumulative", "cumulative"), ("own", "own"))]
    record("profiles", ["operator", "seconds under cProfile", "most own time", "most own time in the plugin"], summary, tables=tables,
           about=f"Where each compute operator spends its time: cProfile on every thread of an "
                 f"`execute_operator` run (FiftyOne's executor thread, which runs the operator, and the run's "
                 f"writer thread, merged) on {args.samples:,} generated samples × {len(RATERS)} raters × about 7 "
                 f"boxes (the scale benchmark's dataset); the top {args.top} functions by cumulative time (without "
                 f"the threads' and the operator's calls down to the engine, which each hold the whole run) and by "
                 f"own time (without one thread's waits for another, whose work is in that thread's entries; "
                 f"`select.poll` is the client waiting for MongoDB's replies). cProfile slows Python-level loops more than numpy and the database: compare the entries "
                 f"with each other, not with the scale table's seconds.",
           quick=args.quick)


if __name__ == "__main__":
    main()
