"""Scale benchmark: every compute operator end to end on a large dataset, against its floor.

A generated dataset in the fields layout (``--samples``, default 100,000; 3
raters; about 7 boxes each; 10 classes) is loaded once into the benchmark's
private database. Then, per operator, each in its own process (so that its
peak memory is its own), one after the other:

* its **bare read**: a ``values()`` read of what the operator needs, with the
  ids its write-back goes by (OT, KαLOS, geometry and consensus: the sample
  ids and, per rater, the boxes, labels and label ids; :data:`READS`);
* the **operator** through ``execute_operator`` (read, compute, chance
  baseline, per-sample and per-label write-back, run registration):
  ``compute_ot_agreement``, ``compute_kalos``, ``compute_geometry_agreement``
  and ``compute_consensus``;
* its **bare write**: the run's own per-sample fields and per-label
  attributes, read back from the database beforehand (not timed) and written
  again to fresh names (``bw_<name>``) by a plain ``bulk_write`` of one
  ``UpdateOne`` per sample document (``$set``, label attributes by their
  position in the list), 500 updates per call (as the run sends them), no computation, no schema
  declaration; then removed (not timed).

The **floor** is the bare read plus the bare write (the issue's "read what it
needs and write what it produces"); each row gives the operator's time against
it (``× floor``) and against the read alone (``× read``). Printed as well: the
seconds of the run's own per-sample and per-label write-back (every shard's:
declaring, building and sending the updates, whichever thread sends them), the
seconds the run waited for it (a serial streamed run sends shard k while it
reads and computes shard k + 1), and the peak RSS of the process. Targets
(issue 51): every operator within 2× the bare read (1.5× for OT and KαLOS);
peak RSS under 3 GiB.

The streamed operators run again on a local Dask cluster, one row per worker
count (``--dask-workers 1 2``, the default; on the same cores), with what each
shard cost on its worker (:data:`agreement.fo.runs.distributed.SHARD_TIMINGS`:
seconds, pickled bytes of the job sent and of the statistics sent back), the
merge (the method's ``finish`` on the driver), and the driver's peak RSS: the
per-shard seconds are the work that more machines would share, the merge and
the bytes what they would not.

With ``--writes-alone`` each operator runs a second time with its write-back
not overlapped: each shard's (or part's) updates are sent in the run's own
thread before the next shard is read, so the write-back seconds are the
writes' own.

Each operator runs with ``FIFTYONE_OPERATOR_TIMEOUT`` raised to a day (unless
set): FiftyOne stops waiting for an immediately executed operator after 600 s
(by default) and raises ``TimeoutError`` (see docs/scale.md, "Runs longer
than ten minutes"), and a 1,000,000-sample run takes longer.

``--quick`` (2,000 samples, no Dask rows unless ``--dask-workers`` is given)
checks that it works; its table never replaces the recorded one
(``write_page.record(quick=True)``).

Run with ``make bench`` (100,000 samples; ``make bench SCALE_SAMPLES=1000000`` for a million) or
``scripts/with-temp-fiftyone.sh .venv/bin/python bench/scale_bench.py --samples 100000``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from write_page import appended, record  # noqa: E402  (bench/ is this script's folder)

BENCH = os.path.dirname(os.path.abspath(__file__))
RATERS = ("r1", "r2", "r3")
OPERATORS = ("compute_ot_agreement", "compute_kalos", "compute_geometry_agreement", "compute_consensus")
STREAMED = ("compute_ot_agreement", "compute_kalos", "compute_geometry_agreement")
#: What each operator reads, with the ids its write-back goes by: the fields of its bare read.
BOXES_WITH_IDS = ["id"] + [f"{r}.detections.{a}" for r in RATERS for a in ("bounding_box", "label", "id")]
READS = {op: BOXES_WITH_IDS for op in OPERATORS}
#: Issue 51's targets, against the bare read (OT and KαLOS: 1.5×; the others 2×); peak RSS in GiB.
TARGET_X_READ = {"compute_ot_agreement": 1.5, "compute_kalos": 1.5}
TARGET_RSS_GIB = 3.0
#: Updates per ``bulk_write`` call of the bare write (as the run's write-back: agreement.fo.storage.writing.BATCH).
WRITE_BATCH = 500


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


def _timed(module, name: str, into: list) -> None:
    """Adds the time of every call of ``module.name`` to ``into[0]``."""
    real = getattr(module, name)

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            into[0] += time.perf_counter() - t0
    setattr(module, name, wrapper)


def _peak_rss_gib() -> float:
    """This process's peak resident memory (``VmHWM``): ``ru_maxrss`` is not used, because Linux keeps it across
    fork and exec, so a child would report the benchmark driver's own peak (the dataset it built) when larger."""
    import resource

    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_key(op: str, extra: dict) -> str:
    """The run key of an operator's row (one per backend and worker count)."""
    tail = f"_dask{extra['workers']}" if extra.get("backend") == "dask" else ""
    return "b_" + op.split("_", 1)[1][:8] + tail


def bare_write(ds, key: str) -> dict:
    """The run's per-sample fields and per-label attributes written again, to fresh names, by a plain bulk update.

    The values are the run's own, read from the database in batches of
    :data:`WRITE_BATCH` documents (not timed); each batch is written by one
    ``UpdateOne`` per document (``$set`` of ``bw_<field>`` and of
    ``<list>.<position>.bw_<attr>``) in one unordered ``bulk_write`` (timed).
    A video run's frame-level fields and frame label attributes are written the
    same way to the frames collection, one update per frame document. The fresh
    names are removed afterwards (not timed).
    """
    from agreement.fo.runs.store import get_agreement_run_info

    info = get_agreement_run_info(ds, key)
    lists: dict[bool, dict[str, list[str]]] = {False: {}, True: {}}  # on frames? -> label list path -> attributes
    for field, attr in info["label_attrs"]:
        doc_type = ds.get_field(field).document_type
        frame = field.startswith("frames.")
        path = f"{field[len('frames.'):] if frame else field}.{doc_type._LABEL_LIST_FIELD}"
        lists[frame].setdefault(path, []).append(attr)
    total = {"seconds": 0.0, "updates": 0, "values": 0}
    for coll, fields, on in ((ds._sample_collection, list(info["sample_fields"]), lists[False]),
                             (getattr(ds, "_frame_collection", None), list(info.get("frame_fields") or []),
                              lists[True])):
        if coll is not None and (fields or on):
            for k, v in _rewrite(coll, fields, on).items():
                total[k] += v
    return total


def _rewrite(coll, fields: list[str], lists: dict[str, list[str]]) -> dict:
    """:func:`bare_write` on one collection: ``fields`` of its documents and the attributes ``lists[path]`` of
    the labels of each list ``path``."""
    from pymongo import UpdateOne

    projection = {f: 1 for f in fields} | {f"{path}.{a}": 1 for path, attrs in lists.items() for a in attrs}
    seconds, updates, values = 0.0, 0, 0
    batch: list = []

    def send(docs: list) -> None:
        nonlocal seconds, updates, values
        t = time.perf_counter()
        ops = []
        for doc in docs:
            sets = {f"bw_{f}": doc[f] for f in fields if f in doc}
            for path, attrs in lists.items():
                head, name = path.split(".")
                for i, label in enumerate((doc.get(head) or {}).get(name) or []):
                    sets.update({f"{path}.{i}.bw_{a}": label[a] for a in attrs if a in label})
            if sets:
                values += len(sets)
                ops.append(UpdateOne({"_id": doc["_id"]}, {"$set": sets}))
        if ops:
            coll.bulk_write(ops, ordered=False)
        updates += len(ops)
        seconds += time.perf_counter() - t

    for doc in coll.find({}, projection).batch_size(WRITE_BATCH):
        batch.append(doc)
        if len(batch) == WRITE_BATCH:
            send(batch)
            batch = []
    send(batch)
    unset = {f"bw_{f}": "" for f in fields} | {f"{path}.$[].bw_{a}": "" for path, attrs in lists.items() for a in attrs}
    if unset:
        for path in lists:  # samples with no labels in a list have no array to unset in
            coll.update_many({path: {"$type": "array"}}, {"$unset": {k: v for k, v in unset.items()
                                                                     if k.startswith(path + ".$[]")}})
        if fields:
            coll.update_many({}, {"$unset": {f"bw_{f}": "" for f in fields}})
    return {"seconds": seconds, "updates": updates, "values": values}


def child(spec: dict) -> dict:
    """One measurement in this process (see :func:`measure`): the bare read, an operator, or its bare write."""
    import fiftyone as fo
    import fiftyone.operators as foo

    import agreement.fo.runs.distributed as distributed
    import agreement.fo.runs.engine as engine
    import agreement.fo.runs.store as runs
    import agreement.fo.storage.writing as writing

    written, blocked, merged = [0.0], [0.0], [0.0]
    # the write-back's work: declaring and building (caller's thread) plus sending (the writer thread, in a
    # streamed serial run, while the next shard is read and computed); and the time the run spent on it:
    # declaring, waiting for the write before, and waiting for the last one after the finish
    _timed(runs, "stage_run_columns", written)
    _timed(writing, "write_columns", written)
    _timed(engine, "_write", blocked)
    _timed(engine.ShardWriter, "__exit__", blocked)  # the wait for the last shard's write, after the finish
    declared = engine._declared

    def timed_declared(fn, spec_, what):  # the merge: the method's finish on the merged statistics
        got = declared(fn, spec_, what)
        if what != "finish":
            return got

        def finish(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return got(*args, **kwargs)
            finally:
                merged[0] += time.perf_counter() - t0
        return finish
    engine._declared = timed_declared
    extra = dict(spec.get("extra") or {})
    if extra.pop("writes_alone", False):
        # the write-back measured on its own: each shard's (or part's) updates sent in the calling thread,
        # nothing computed meanwhile (a serial run overlaps them with the next shard, sharing the two cores)
        def submit_now(self, send, **kw):
            self.wait()
            send()
        engine.ShardWriter.submit = submit_now
    ds = fo.load_dataset(spec["name"])
    op, out = spec["op"], {}
    t = time.perf_counter()
    if op == "bare_read":
        ds.values(list(spec["paths"]))
    elif op == "bare_write":
        out = bare_write(ds, spec["key"])
    else:
        foo.execute_operator("@iaa/agreement/" + op, ctx=dict(view=ds.view(), params=dict(
            fields=list(RATERS), key=spec["key"], overwrite=True, **extra)))
        out["shards"] = [dataclasses.asdict(s) for s in distributed.SHARD_TIMINGS]
    elapsed = time.perf_counter() - t
    return {"seconds": out.pop("seconds", elapsed), "write_seconds": written[0], "blocked_seconds": blocked[0],
            "merge_seconds": merged[0], "rss_gib": _peak_rss_gib(), **out}


def measure(name: str, op: str, extra: dict | None = None, **spec) -> dict:
    """One measurement in a process of its own (its peak RSS is its own): ``op`` is an operator, ``"bare_read"``
    (``paths=``) or ``"bare_write"`` (``key=``, the run whose values to write again)."""
    payload = json.dumps({"name": name, "op": op, "extra": dict(extra or {}), **spec})
    code = (f"import json, sys; sys.path.insert(0, {REPO!r}); sys.path.insert(0, {BENCH!r}); import scale_bench; "
            f"print(json.dumps(scale_bench.child(json.loads({payload!r}))))")
    # FiftyOne raises TimeoutError for an immediately executed operator that runs longer than
    # fo.config.operator_timeout (600 s by default), read when fiftyone.operators is imported
    env = {**os.environ, "FIFTYONE_OPERATOR_TIMEOUT": os.environ.get("FIFTYONE_OPERATOR_TIMEOUT", "86400")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {"error": ((out.stderr or out.stdout).strip().splitlines() or ["no output"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _misses(op: str, x_read: float, rss: float) -> str:
    """Issue 51's targets this row misses (against the bare read; peak RSS)."""
    limit = TARGET_X_READ.get(op, 2.0)
    return ", ".join(w for w, bad in ((f"{limit:g}× read", x_read > limit), ("3 GiB", rss > TARGET_RSS_GIB)) if bad)


SERIAL_COLUMNS = ["operator", "seconds", "bare read (s)", "bare write (s)", "× floor (read + write)", "× read",
                  "write-back (s)", "waited (s)", "peak RSS (GiB)", "targets missed"]


def serial_rows(name: str, ops: list[str], extra: dict, label: str = "") -> tuple[list, dict]:
    """Per operator: its bare read, the operator, its bare write (in that order, each in its own process)."""
    table, floors = [], {}
    print(f"{'operator':<40} {'seconds':>8} {'read s':>7} {'write s':>8} {'x floor':>8} {'x read':>7} "
          f"{'write-back s':>13} {'waited s':>9} {'peak GiB':>9}", flush=True)
    for op in ops:
        read = measure(name, "bare_read", paths=READS[op])
        m = measure(name, op, extra, key=run_key(op, extra))
        row = f"`{op}`{label}"
        if "error" in read or "error" in m:
            err = m.get("error") or read.get("error")
            print(f"{op + label:<40} failed: {err}", flush=True)
            table.append([row, f"failed: {err[:120]}"] + [""] * (len(SERIAL_COLUMNS) - 2))
            continue
        write = measure(name, "bare_write", key=run_key(op, extra))
        w = write.get("seconds", float("nan"))
        floor = read["seconds"] + w
        floors[op] = (read["seconds"], w)
        x_floor, x_read = m["seconds"] / floor, m["seconds"] / read["seconds"]
        misses = "" if label else _misses(op, x_read, m["rss_gib"])
        print(f"{op + label:<40} {m['seconds']:>8.1f} {read['seconds']:>7.1f} {w:>8.1f} {x_floor:>8.2f} "
              f"{x_read:>7.2f} {m['write_seconds']:>13.1f} {m['blocked_seconds']:>9.1f} {m['rss_gib']:>9.2f}"
              + (f"   (missed: {misses})" if misses else ""), flush=True)
        table.append([row, f"{m['seconds']:.1f}", f"{read['seconds']:.1f}", f"{w:.1f}", f"{x_floor:.2f}",
                      f"{x_read:.2f}", f"{m['write_seconds']:.1f}", f"{m['blocked_seconds']:.1f}",
                      f"{m['rss_gib']:.2f} (read {read['rss_gib']:.2f})", misses])
    return table, floors


DASK_COLUMNS = ["operator", "workers", "seconds", "× floor", "× read", "shards", "per shard (s): median, max",
                "shards' sum (s)", "merge (s)", "sent / back per shard (KiB)", "driver peak RSS (GiB)"]


def dask_rows(name: str, ops: list[str], counts: list[int], floors: dict, shard_size: int | None) -> list:
    """The streamed operators on a local Dask cluster, a row per worker count, against the serial rows' floor."""
    table = []
    for workers in counts:
        for op in ops:
            extra = {"backend": "dask", "workers": workers, **({"shard_size": shard_size} if shard_size else {})}
            m = measure(name, op, extra, key=run_key(op, extra))
            if "error" in m:
                print(f"{op} (dask, {workers} workers) failed: {m['error']}", flush=True)
                table.append([f"`{op}`", str(workers), f"failed: {m['error'][:120]}"] + [""] * (len(DASK_COLUMNS) - 3))
                continue
            read, write = floors.get(op, (float("nan"), float("nan")))
            shards = m.get("shards") or []
            secs = np.array([s["seconds"] for s in shards]) if shards else np.array([np.nan])
            sent = np.mean([s["sent_bytes"] for s in shards]) / 1024 if shards else float("nan")
            back = np.mean([s["returned_bytes"] for s in shards]) / 1024 if shards else float("nan")
            print(f"{op} (dask, {workers} workers): {m['seconds']:.1f} s, {m['seconds'] / (read + write):.2f}x floor, "
                  f"{len(shards)} shards of median {np.median(secs):.1f} s (max {secs.max():.1f}), merge "
                  f"{m['merge_seconds']:.2f} s, {sent:.0f} KiB sent / {back:.0f} KiB back per shard", flush=True)
            table.append([f"`{op}`", str(workers), f"{m['seconds']:.1f}", f"{m['seconds'] / (read + write):.2f}",
                          f"{m['seconds'] / read:.2f}", str(len(shards)),
                          f"{np.median(secs):.1f}, {secs.max():.1f}", f"{np.nansum(secs):.1f}",
                          f"{m['merge_seconds']:.2f}", f"{sent:.0f} / {back:.0f}", f"{m['rss_gib']:.2f}"])
    return table


def delete_rows(name: str, base_read: float) -> list:
    """What deleting (or overwriting) each run costs at this size, against the bare read."""
    import fiftyone as fo

    from agreement.fo.runs import delete_agreement_run, list_agreement_runs

    ds = fo.load_dataset(name)
    ds.reload()  # the runs were registered by the child processes
    rows = []
    for key in list_agreement_runs(ds):
        t = time.perf_counter()
        delete_agreement_run(ds, key)
        took = time.perf_counter() - t
        print(f"{'delete_agreement_run ' + key:<40} {took:>8.1f} {took / base_read:>7.2f}x read", flush=True)
        rows.append([f"`delete_agreement_run` ({key})", f"{took:.1f}", f"{took / base_read:.2f}"])
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=100_000)
    p.add_argument("--operators", nargs="*", default=list(OPERATORS))
    p.add_argument("--shard-size", type=int, default=None, help="samples per shard (default: the engine's)")
    p.add_argument("--dask-workers", type=int, nargs="*", default=None,
                   help="a row of the streamed operators on a local Dask cluster per worker count (default: 1 2; "
                        "0 or none: no Dask rows)")
    p.add_argument("--writes-alone", action="store_true",
                   help="also run each operator with its write-back not overlapped with its compute "
                        "(each shard's updates sent before the next shard is read): the write-back's own time")
    p.add_argument("--no-serial", action="store_true",
                   help="only the Dask rows (their floor is then measured with one serial OT run)")
    p.add_argument("--keep", action="store_true",
                   help="keep the dataset afterwards, and reuse one of this size left by an earlier --keep run")
    p.add_argument("--append", action="store_true",
                   help="keep the recorded rows of the operators not measured now (each row against the floor "
                        "measured with it; the page says which run each came from)")
    p.add_argument("--quick", action="store_true",
                   help="2,000 samples, no Dask rows unless --dask-workers is given: to check that it works "
                        "(its table does not replace the recorded one)")
    args = p.parse_args(argv)
    if args.quick:
        args.samples = 2_000
    counts = [w for w in (args.dask_workers if args.dask_workers is not None else ([] if args.quick else [1, 2]))
              if w > 0]
    name = f"iaa-bench-scale-{args.samples}"
    import fiftyone as fo

    t = time.perf_counter()
    if args.keep and fo.dataset_exists(name) and len(fo.load_dataset(name)) == args.samples:
        print(f"reusing {name}", flush=True)
    else:
        build(name, args.samples)
        print(f"built {args.samples} samples x {len(RATERS)} raters in {time.perf_counter() - t:.0f} s", flush=True)
    shard = {"shard_size": args.shard_size} if args.shard_size else {}
    dask_ops = [op for op in args.operators if op in STREAMED]
    table, floors = serial_rows(name, [] if args.no_serial else args.operators, shard)
    if args.no_serial and counts:  # the Dask rows still need their floor
        floors = serial_rows(name, dask_ops, shard)[1]
    if args.writes_alone:
        table += serial_rows(name, args.operators, {"writes_alone": True, **shard}, " (writes alone)")[0]
    dask_table = dask_rows(name, dask_ops, counts, floors, args.shard_size) if counts else []
    reads = [r for r, _ in floors.values()]
    deletes = delete_rows(name, float(np.median(reads))) if reads else []
    if not args.keep:
        fo.delete_dataset(name)
    _record(args, table, dask_table, deletes, counts)


def _record(args, table: list, dask_table: list, deletes: list, counts: list[int]) -> None:
    """The benchmark's fragment of the page: the serial table, the Dask rows and the deletes."""
    tables = []
    if dask_table:
        tables.append({"title": f"On a local Dask cluster of {' and '.join(map(str, counts))} workers, on the "
                                f"same {os.cpu_count()} cores", "columns": DASK_COLUMNS, "rows": dask_table})
    if deletes:
        tables.append({"title": "Deleting a run (rewrites each sample document once)",
                       "columns": ["what", "seconds", "× read"], "rows": deletes})
    # a million-sample run is its own table on the page, beside the 100,000-sample one
    fragment = "scale" if args.samples < 1_000_000 else "scale_1m"
    options = " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])
    if args.append and not args.quick:
        table, options = appended(fragment, SERIAL_COLUMNS, table, options)
    record(fragment, SERIAL_COLUMNS, table, options=options,
           about=f"Every compute operator end to end through `execute_operator`, each in its own process, on "
                 f"{args.samples:,} generated samples × {len(RATERS)} raters × about 7 boxes, beside its floor "
                 f"measured in the same run: its **bare read** (a `values()` read of what it needs, with ids: the "
                 f"sample ids and, per rater, the boxes, labels and label ids) just before it, and its **bare "
                 f"write** just after it (the run's own per-sample fields and per-label attributes, read back "
                 f"untimed, written again to fresh names by one plain `UpdateOne` per sample document, "
                 f"`$set` by position, 500 per unordered `bulk_write`, no computation). *× floor* is the "
                 f"operator's time over read + write, *× read* over the read alone. *Write-back*: the run's own "
                 f"per-sample and per-label write (declaring, building and sending the updates, in whichever "
                 f"thread sends them); *waited*: what of it the run spent waiting (a serial streamed run sends "
                 f"shard k while it reads and computes shard k + 1); peak RSS is the process's own (`VmHWM`). "
                 f"Dask rows: per-shard seconds are each task's time on its worker (read, compute, write), "
                 f"*merge* the method's finish on the driver, *sent / back* the pickled job and statistics of a "
                 f"shard (the method's shared state is sent once per run); their peak RSS is the driver's. Point "
                 f"a run at an existing scheduler with `backend=\"dask\", dask_address=\"tcp://host:8786\"` "
                 f"([scale and Dask](scale.md#past-one-machine-dask)).",
           notes="Targets (issue 51): every operator within 2× its bare read, 1.5× for OT and KαLOS; peak RSS "
                 "under 3 GiB; at 1,000,000 samples (`make bench SCALE_SAMPLES=1000000`) the same.",
           quick=args.quick, tables=tables)


if __name__ == "__main__":
    main()
