"""Scale benchmark: every compute operator end to end on a large dataset, against a bare ``values()`` read.

A generated dataset in the fields layout (``--samples``, default 100,000; 3
raters; about 7 boxes each; 10 classes) is loaded once into the benchmark's
private database. Then, each in its own process (so that its peak memory is
its own):

* the **baseline**: a bare ``values()`` read of the fields every method reads
  (id, filepath, and per rater the boxes, labels and label ids);
* every compute operator through ``execute_operator`` (read, compute, chance
  baseline, per-sample and per-label write-back, run registration):
  ``compute_ot_agreement``, ``compute_kalos``, ``compute_geometry_agreement``
  and ``compute_consensus``.

Printed: seconds, the ratio to the bare read, the seconds of the per-sample
and per-label write-back (every shard's: declaring, building and sending the
updates, whichever thread sends them) and their ratio to the bare read, the
seconds the run waited for its write-back (a serial streamed run sends shard
k while it reads and computes shard k + 1, and the last one while it merges),
and peak RSS of the process; the streamed operators again on a local Dask
cluster (``--dask-workers``, default 2). Targets (issue 11): within 3x the bare read;
write-back no slower than the bare read; peak RSS at 1,000,000 samples under
3 GiB (``--samples 1000000``).

With ``--writes-alone`` each operator runs a second time with its write-back
not overlapped: each shard's (or part's) updates are sent in the run's own
thread before the next shard is read, so the write-back seconds are the
writes' own. In the ordinary run the writer thread sends shard k while shard
k + 1 is read and computed, so its wall time may include the compute's share
of the two cores, and what it hides is seen in the total (100,000 samples,
after the overwrite fix: OT's write-back 27.9 s overlapped, 20.1 s alone,
the run 35.7 s against 61.8 s; consensus 26.3 s against 18.3 s, the run
59.9 s against 75.7 s; bare read 23.9 s). With the flag, the write-back
target is checked on the writes-alone rows.

Each operator runs with ``FIFTYONE_OPERATOR_TIMEOUT`` raised to a day (unless
set): FiftyOne reports an immediately executed operator that runs longer than
600 s (by default) as a ``TimeoutError``, and a 1,000,000-sample run on a Dask
cluster of this machine takes longer.

Run with ``make bench`` (100,000 samples; ``make bench SCALE_SAMPLES=1000000`` for a million) or
``scripts/with-temp-fiftyone.sh .venv/bin/python bench/scale_bench.py --samples 100000``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from write_page import record  # noqa: E402  (bench/ is this script's folder)

RATERS = ("r1", "r2", "r3")
OPERATORS = ("compute_ot_agreement", "compute_kalos", "compute_geometry_agreement", "compute_consensus")
STREAMED = ("compute_ot_agreement", "compute_kalos", "compute_geometry_agreement")


def build(name: str, n: int, seed: int = 0, chunk: int = 20_000) -> None:
    """The benchmark dataset: n samples, 3 raters, ~7 boxes each (jittered copies of the same objects).

    Written as raw sample documents in FiftyOne's layout (``insert_many``; the
    fields declared first): building a million ``fo.Sample`` objects would
    take far longer than the runs it is there to time.
    """
    from datetime import datetime, timezone

    from bson import ObjectId

    import fiftyone as fo

    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name, persistent=True)
    for r in RATERS:
        ds.add_sample_field(r, fo.EmbeddedDocumentField, embedded_doc_type=fo.Detections)
    coll, dataset_id = ds._sample_collection, ds._doc.id
    rng = np.random.default_rng(seed)
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    for start in range(0, n, chunk):
        docs = []
        for s in range(start, min(n, start + chunk)):
            k = int(rng.integers(4, 11))
            wh = rng.uniform(0.03, 0.3, size=(k, 2))
            xy = rng.uniform(0, 1, size=(k, 2)) * (1 - wh)
            cls = rng.integers(0, 10, size=k)
            doc = {"_id": ObjectId(), "filepath": f"/bench/scale/{s:07d}.jpg", "tags": [], "metadata": None,
                   "created_at": now, "last_modified_at": now, "_media_type": "image",
                   "_rand": float(rng.random()), "_dataset_id": dataset_id}
            for r in RATERS:
                keep = rng.random(k) > 0.1
                b = np.concatenate([xy, wh], axis=1)[keep]
                b[:, :2] = np.clip(b[:, :2] + rng.normal(0, 0.005, size=(len(b), 2)), 0, 1 - b[:, 2:])
                doc[r] = {"_cls": "Detections", "detections": [
                    {"_id": ObjectId(), "_cls": "Detection", "attributes": {}, "tags": [], "label": f"c{c}",
                     "bounding_box": bb.tolist()} for c, bb in zip(cls[keep].tolist(), b)]}
            docs.append(doc)
        coll.insert_many(docs, ordered=False)
    ds.reload()


CHILD = """
import json, resource, sys, time
sys.path.insert(0, {repo!r})
import fiftyone as fo, fiftyone.operators as foo
import agreement.fo.runs.engine as engine
import agreement.fo.runs.store as runs
import agreement.fo.storage.writing as writing
written, blocked = [0.0], [0.0]
def timed(module, name, into):
    real = getattr(module, name)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            into[0] += time.perf_counter() - t0
    setattr(module, name, wrapper)
# the write-back's work: declaring and building (caller's thread) plus sending (the writer thread, in a
# streamed serial run, while the next shard is read and computed); and the time the run spent on it:
# declaring, waiting for the write before, and waiting for the last one after the finish
timed(runs, "stage_run_columns", written)
timed(writing, "write_columns", written)
timed(engine, "_write", blocked)
timed(engine.ShardWriter, "__exit__", blocked)  # the wait for the last shard's write, after the finish
extra = {extra!r}
if extra.pop("writes_alone", False):
    # the write-back measured on its own: each shard's (or part's) updates sent in the calling thread,
    # nothing computed meanwhile (a serial run overlaps them with the next shard, sharing the two cores)
    def submit_now(self, send, **kw):
        self.wait()
        send()
    engine.ShardWriter.submit = submit_now
ds = fo.load_dataset({name!r})
op = {op!r}
t = time.perf_counter()
if op == "bare_read":
    paths = ["id", "filepath"] + [f"{{r}}.detections.{{a}}" for r in {raters!r}
                                  for a in ("bounding_box", "label", "id")]
    ds.values(paths)
else:
    key = "b_" + op.split("_", 1)[1][:8] + ("_" + extra["backend"] if "backend" in extra else "")
    foo.execute_operator("@iaa/agreement/" + op, ctx=dict(view=ds.view(), params=dict(
        fields=list({raters!r}), key=key, overwrite=True, **extra)))
elapsed = time.perf_counter() - t
def peak_rss_gib():
    # VmHWM: this address space's peak. ru_maxrss is not used: Linux keeps it across fork and exec,
    # so a child would report the benchmark driver's own peak (the dataset it built) when that is larger.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print(json.dumps({{"seconds": elapsed, "write_seconds": written[0], "blocked_seconds": blocked[0],
                  "rss_gib": peak_rss_gib()}}))
"""


def measure(name: str, op: str, extra: dict | None = None) -> dict:
    """One operator (or the bare read) in a process of its own: seconds, write-back seconds, peak RSS."""
    code = CHILD.format(repo=REPO, name=name, op=op, raters=RATERS, extra=dict(extra or {}))
    # FiftyOne reports TimeoutError for an immediately executed operator that runs longer than
    # fo.config.operator_timeout (600 s by default): the benchmark times runs that may take longer
    # (1,000,000 samples on a Dask cluster of this machine).
    env = {**os.environ, "FIFTYONE_OPERATOR_TIMEOUT": os.environ.get("FIFTYONE_OPERATOR_TIMEOUT", "86400")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=100_000)
    p.add_argument("--operators", nargs="*", default=list(OPERATORS))
    p.add_argument("--shard-size", type=int, default=None, help="samples per shard (default: the engine's)")
    p.add_argument("--dask-workers", type=int, default=2,
                   help="also run the streamed operators on a local Dask cluster of this many workers (0: not)")
    p.add_argument("--writes-alone", action="store_true",
                   help="also run each operator with its write-back not overlapped with its compute "
                        "(each shard's updates sent before the next shard is read): the write-back's own time")
    p.add_argument("--no-serial", action="store_true",
                   help="only the Dask rows (with --keep, to add them to an earlier run's serial rows)")
    p.add_argument("--keep", action="store_true",
                   help="keep the dataset afterwards, and reuse one of this size left by an earlier --keep run")
    p.add_argument("--quick", action="store_true", help="2,000 samples, no Dask rows: to check that it works")
    args = p.parse_args(argv)
    if args.quick:
        args.samples, args.dask_workers = 2_000, 0
    name = f"iaa-bench-scale-{args.samples}"
    import fiftyone as fo

    t = time.perf_counter()
    if args.keep and fo.dataset_exists(name) and len(fo.load_dataset(name)) == args.samples:
        print(f"reusing {name}", flush=True)
    else:
        build(name, args.samples)
        print(f"built {args.samples} samples x {len(RATERS)} raters in {time.perf_counter() - t:.0f} s", flush=True)
    base = measure(name, "bare_read")
    print(f"{'what':<36} {'seconds':>8} {'x bare read':>12} {'write-back s':>13} {'write x read':>13} "
          f"{'waited s':>9} {'peak RSS GiB':>13}")
    print(f"{'bare values() read':<36} {base['seconds']:>8.1f} {1.0:>12.2f} {'':>13} {'':>13} {'':>9} "
          f"{base['rss_gib']:>13.2f}", flush=True)
    table = [["bare `values()` read", f"{base['seconds']:.1f}", "1.00", "", "", "", f"{base['rss_gib']:.2f}", ""]]
    rows = [] if args.no_serial else [(op, {}) for op in args.operators]
    if args.writes_alone:
        rows += [(op, {"writes_alone": True}) for op in args.operators]
    if args.dask_workers:
        rows += [(op, {"backend": "dask", "workers": args.dask_workers}) for op in args.operators if op in STREAMED]
    for op, extra in rows:
        alone, dask = extra.get("writes_alone", False), extra.get("backend") == "dask"
        label = op + (f" (dask, {args.dask_workers} workers)" if dask else " (writes alone)" if alone else "")
        m = measure(name, op, {**extra, **({"shard_size": args.shard_size} if args.shard_size else {})})
        if "error" in m:
            print(f"{label:<36} failed: {m['error']}", flush=True)
            table.append([f"`{label}`", f"failed: {m['error'][:120]}", "", "", "", "", "", ""])
            continue
        ratio, wratio = m["seconds"] / base["seconds"], m["write_seconds"] / base["seconds"]
        # the 3x target is for the run as users get it (not the writes-alone rows); the write-back one for
        # the writes alone where they were measured (overlapped, their wall time includes the compute's
        # share of the two cores)
        checks = ([("write-back > read", wratio > 1)] if alone or not args.writes_alone else []) + \
            ([] if alone else [("3x", ratio > 3)])
        misses = [w for w, bad in checks if bad]
        # on Dask the shards are written by the workers: the driver cannot time their write-back
        # write-back s: its work (declaring, building, sending: the writer thread of a serial streamed run
        # sends while the next shard is read); waited s: what of it the run spent waiting
        written = (f"{'on workers':>13} {'':>13} {'':>9}" if dask else
                   f"{m['write_seconds']:>13.1f} {wratio:>13.2f} {m['blocked_seconds']:>9.1f}")
        print(f"{label:<36} {m['seconds']:>8.1f} {ratio:>12.2f} {written} "
              f"{m['rss_gib']:>13.2f}{'   (missed: ' + ', '.join(misses) + ')' if misses else ''}", flush=True)
        table.append([f"`{label}`", f"{m['seconds']:.1f}", f"{ratio:.2f}"]
                     + (["on the workers", "", ""] if dask else
                        [f"{m['write_seconds']:.1f}", f"{wratio:.2f}", f"{m['blocked_seconds']:.1f}"])
                     + [f"{m['rss_gib']:.2f}" + (" (driver)" if dask else ""), ", ".join(misses)])
    from agreement.fo.runs import delete_agreement_run, list_agreement_runs

    ds = fo.load_dataset(name)
    ds.reload()  # the runs were registered by the child processes
    for key in list_agreement_runs(ds):  # what deleting (or overwriting) a run costs at this size
        t = time.perf_counter()
        delete_agreement_run(ds, key)
        took = time.perf_counter() - t
        print(f"{'delete_agreement_run ' + key:<36} {took:>8.1f} {took / base['seconds']:>12.2f}", flush=True)
        table.append([f"`delete_agreement_run` ({key})", f"{took:.1f}", f"{took / base['seconds']:.2f}", "", "", "", "",
                      ""])
    if not args.keep:
        fo.delete_dataset(name)
    record("scale", ["what", "seconds", "× bare read", "write-back (s)", "write-back × read", "waited (s)",
                     "peak RSS (GiB)", "targets missed"], table,
           about=f"Every compute operator end to end through `execute_operator`, each in its own process, on "
                 f"{args.samples:,} generated samples × {len(RATERS)} raters × about 7 boxes, against a bare "
                 f"`values()` read of the same fields. *Write-back*: every shard's per-sample and per-label "
                 f"write (declaring, building and sending the updates, in whichever thread sends them); "
                 f"*waited*: what of it the run spent waiting (a serial streamed run sends shard k while it reads "
                 f"and computes shard k + 1); peak RSS is the process's own (`VmHWM`). Dask rows run on a local "
                 f"cluster of {args.dask_workers} workers on the same machine.",
           notes="Targets: every run within 3× the bare read; write-back work no slower than the bare read; "
                 "peak RSS under 3 GiB at 1,000,000 samples (`make bench SCALE_SAMPLES=1000000`).",
           quick=args.quick)


if __name__ == "__main__":
    main()
