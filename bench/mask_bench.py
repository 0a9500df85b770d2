"""Semantic mask benchmark: compute_mask_agreement and compute_mask_consensus on Segmentation rater fields.

Part 1 (speed): ``--samples`` samples (default 1,000) with three raters'
512 x 512 masks stored in the database (``Segmentation.mask``, classes
0-3 from ``mask_targets``; each rater's shapes moved by a few pixels), both
operators end to end through ``execute_operator`` against a bare
``values()`` read of the three mask fields measured in the same run
(target: within 3x).

Part 2 (on disk): ``--memory-samples`` samples (default 10,000) with the
masks on disk (``mask_path``, PNG), each operator run in a fresh process
that prints its seconds and its peak resident memory (``ru_maxrss``; target:
under 3 GiB), against the floor measured in the same run before and after
them (the mean of the two): ``values()`` of the three ``mask_path`` fields
and ``cv2.imread`` of every file, in one thread and in a pool of one thread
per core (OpenCV's decoder releases the GIL); target: each operator within
2x the floor. ``--memory-samples 0`` skips it.

Run with ``scripts/with-temp-fiftyone.sh .venv/bin/python bench/mask_bench.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from write_page import record  # noqa: E402  (bench/ is this script's folder)

RATERS = ("m1", "m2", "m3")
SIZE = 512
OPERATORS = ("compute_mask_agreement", "compute_mask_consensus")


def masks_of(i: int, seed: int = 0) -> list[np.ndarray]:
    """Three raters' masks of sample ``i``: three filled shapes of classes 1-3, each rater's moved by up to 4 pixels."""
    import cv2

    rng = np.random.default_rng([seed, i])
    shapes = [(int(rng.integers(40, 470)), int(rng.integers(40, 470)), int(rng.integers(20, 90))) for _ in range(3)]
    out = []
    for _ in RATERS:
        m = np.zeros((SIZE, SIZE), np.uint8)
        for k, (x, y, r) in enumerate(shapes):
            dx, dy = rng.integers(-4, 5, 2)
            cv2.circle(m, (x + int(dx), y + int(dy)), r, k + 1, -1)
        out.append(m)
    return out


def build(n: int, folder: str | None, chunk: int = 500):
    """The dataset: masks stored (``folder`` None) or written as PNGs into ``folder`` (``mask_path``)."""
    import cv2

    import fiftyone as fo

    ds = fo.Dataset()
    ds.mask_targets = {r: {0: "background", 1: "a", 2: "b", 3: "c"} for r in RATERS}
    ds.save()
    for lo in range(0, n, chunk):
        samples = []
        for i in range(lo, min(n, lo + chunk)):
            fields = {}
            for r, m in zip(RATERS, masks_of(i)):
                if folder is None:
                    fields[r] = fo.Segmentation(mask=m)
                else:
                    path = os.path.join(folder, f"{r}_{i:06d}.png")
                    cv2.imwrite(path, m)
                    fields[r] = fo.Segmentation(mask_path=path)
            samples.append(fo.Sample(filepath=f"/nonexistent/img{i:06d}", **fields))
        ds.add_samples(samples, progress=False)
    return ds


def bare_read(ds, on_disk: bool) -> float:
    t = time.perf_counter()
    values = ds.values(list(RATERS))
    if on_disk:
        for col in values:
            for seg in col:
                seg.get_mask()
    return time.perf_counter() - t


def read_decode(ds, threads: int) -> float:
    """The floor of the on-disk runs: ``values()`` of the mask paths and ``cv2.imread`` of every file, in
    ``threads`` threads (1: this thread), in seconds."""
    from concurrent.futures import ThreadPoolExecutor

    import cv2

    t = time.perf_counter()
    paths = [p for col in ds.values([f"{r}.mask_path" for r in RATERS]) for p in col if p]
    if threads == 1:
        for p in paths:
            cv2.imread(p, cv2.IMREAD_UNCHANGED)
    else:
        with ThreadPoolExecutor(threads) as pool:  # each mask dropped once decoded, as in the loop above
            list(pool.map(lambda p: cv2.imread(p, cv2.IMREAD_UNCHANGED) is None, paths))
    return time.perf_counter() - t


def run(ds, name: str, key: str) -> float:
    import fiftyone.operators as foo

    t = time.perf_counter()
    foo.execute_operator(f"@iaa/agreement/{name}", ctx=dict(view=ds.view(), params=dict(fields=list(RATERS), key=key)))
    elapsed = time.perf_counter() - t
    ds.delete_run(key)
    return elapsed


def child(dataset: str, name: str) -> None:
    """Runs operator ``name`` on ``dataset`` and prints its seconds and this process's peak memory in GiB."""
    import fiftyone as fo

    ds = fo.load_dataset(dataset)
    elapsed = run(ds, name, "mem")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    print(f"{elapsed:.2f} {peak:.2f}")


def memory_part(n: int, rows: list[list[str]]) -> None:
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        ds = build(n, folder)
        ds.persistent = True
        print(f"\nbuilt {n:,} samples x 3 masks on disk (PNG) in {time.perf_counter() - t:.0f} s")
        floors: dict[int, list[float]] = {1: [], threads: []}

        def measure_floor() -> None:
            for k in floors:
                floors[k].append(read_decode(ds, k))

        measure_floor()
        results = []
        for name in OPERATORS:
            out = subprocess.run([sys.executable, __file__, "--child", ds.name, name], capture_output=True,
                                 text=True, env={**os.environ, "FIFTYONE_PLUGINS_DIR": ROOT}, check=True)
            results.append((name, *map(float, out.stdout.split()[-2:])))
        measure_floor()
        one, many = statistics.mean(floors[1]), statistics.mean(floors[threads])
        print(f"floor: values() of the mask paths + cv2.imread of every file: {one:.1f} s in 1 thread "
              f"({floors[1]}), {many:.1f} s in {threads} ({floors[threads]})")
        rows.append([f"{n:,} samples × 3 masks on disk (PNG): `values()` of the mask paths + `cv2.imread` of "
                     "every file, 1 thread", f"{one:.1f}", "1.00", f"{one / many:.2f}", ""])
        rows.append([f"the same, {threads} threads", f"{many:.1f}", f"{many / one:.2f}", "1.00", ""])
        print(f"{'operator':<28} {'seconds':>8} {'x 1 thr':>8} {'x ' + str(threads) + ' thr':>8} {'peak GiB':>9}")
        for name, seconds, peak in results:
            print(f"{name:<28} {seconds:8.1f} {seconds / one:8.2f} {seconds / many:8.2f} {peak:9.2f}", flush=True)
            rows.append([f"`{name}`, each in a fresh process", f"{seconds:.1f}", f"{seconds / one:.2f}",
                         f"{seconds / many:.2f}", f"{peak:.2f}"])
        ds.delete()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000)
    parser.add_argument("--memory-samples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="50 samples in each part: to check that it works")
    args = parser.parse_args(argv)
    os.environ.setdefault("FIFTYONE_PLUGINS_DIR", ROOT)
    if args.child:
        return child(*args.child)
    if args.quick:
        args.samples, args.memory_samples = 50, 50
    rows: list[list[str]] = []
    if args.samples:
        t = time.perf_counter()
        ds = build(args.samples, None)
        print(f"built {args.samples:,} samples x 3 stored masks in {time.perf_counter() - t:.0f} s")
        base = statistics.median(bare_read(ds, on_disk=False) for _ in range(3))
        print(f"bare values() read of the 3 mask fields: {base:.2f} s (median of 3)")
        rows.append([f"{args.samples:,} samples × 3 stored 512 × 512 masks: bare `values()` read", f"{base:.2f}",
                     "1.00", "", ""])
        print(f"{'operator':<28} {'seconds':>8} {'x read':>7}")
        for k, name in enumerate(OPERATORS):
            med = statistics.median(run(ds, name, f"b{k}{j}") for j in range(args.repeat))
            print(f"{name:<28} {med:8.2f} {med / base:7.2f}", flush=True)
            rows.append([f"`{name}`", f"{med:.2f}", f"{med / base:.2f}", "", ""])
        ds.delete()
    if args.memory_samples:
        memory_part(args.memory_samples, rows)
    record("mask", ["what", "seconds", "× read (+ decode, 1 thread)", "× read + decode (threads)", "peak RSS (GiB)"],
           rows,
           about="The semantic mask operators end to end through `execute_operator` with their defaults, "
                 "against a bare read of the rater fields in the same run: masks stored in the samples "
                 "(medians of {r}), then masks on disk with each operator in a fresh process, so that its peak "
                 "memory is its own, against `values()` of the mask paths and `cv2.imread` of every file "
                 "(in one thread, and in a pool of one thread per core; the mean of a measure before and one "
                 "after the operators). The operators decode every file once, in such a pool."
                 .format(r=args.repeat),
           quick=args.quick)


if __name__ == "__main__":
    main()
