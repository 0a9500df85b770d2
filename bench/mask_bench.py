"""Semantic mask benchmark: compute_mask_agreement and compute_mask_consensus on Segmentation rater fields.

Part 1 (speed): ``--samples`` samples (default 1,000) with three raters'
512 x 512 masks stored in the database (``Segmentation.mask``, classes
0-3 from ``mask_targets``; each rater's shapes moved by a few pixels), both
operators end to end through ``execute_operator`` against a bare
``values()`` read of the three mask fields measured in the same run
(target: within 3x).

Part 2 (memory): ``--memory-samples`` samples (default 10,000) with the
masks on disk (``mask_path``, PNG), each operator run in a fresh process
that prints its peak resident memory (``ru_maxrss``; target: under 3 GiB).
``--memory-samples 0`` skips it.

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
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        ds = build(n, folder)
        ds.persistent = True
        print(f"\nbuilt {n:,} samples x 3 masks on disk (PNG) in {time.perf_counter() - t:.0f} s")
        base = bare_read(ds, on_disk=True)
        print(f"bare read (values() + decoding every mask): {base:.1f} s")
        rows.append([f"{n:,} samples × 3 masks on disk (PNG): `values()` + decoding every mask", f"{base:.1f}",
                     "1.00", ""])
        print(f"{'operator':<28} {'seconds':>8} {'x read':>7} {'peak GiB':>9}")
        for name in OPERATORS:
            out = subprocess.run([sys.executable, __file__, "--child", ds.name, name], capture_output=True,
                                 text=True, env={**os.environ, "FIFTYONE_PLUGINS_DIR": ROOT}, check=True)
            seconds, peak = map(float, out.stdout.split()[-2:])
            print(f"{name:<28} {seconds:8.1f} {seconds / base:7.2f} {peak:9.2f}", flush=True)
            rows.append([f"`{name}`, each in a fresh process", f"{seconds:.1f}", f"{seconds / base:.2f}", f"{peak:.2f}"])
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
                     "1.00", ""])
        print(f"{'operator':<28} {'seconds':>8} {'x read':>7}")
        for k, name in enumerate(OPERATORS):
            med = statistics.median(run(ds, name, f"b{k}{j}") for j in range(args.repeat))
            print(f"{name:<28} {med:8.2f} {med / base:7.2f}", flush=True)
            rows.append([f"`{name}`", f"{med:.2f}", f"{med / base:.2f}", ""])
        ds.delete()
    if args.memory_samples:
        memory_part(args.memory_samples, rows)
    record("mask", ["what", "seconds", "× bare read", "peak RSS (GiB)"], rows,
           about="The semantic mask operators end to end through `execute_operator` with their defaults, "
                 "against a bare read of the rater fields in the same run: masks stored in the samples "
                 "(medians of {r}), then masks on disk with each operator in a fresh process, so that its peak "
                 "memory is its own.".format(r=args.repeat),
           quick=args.quick)


if __name__ == "__main__":
    main()
