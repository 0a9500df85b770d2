"""Class benchmark: every compute operator on image-level classes, against a bare read of the same fields.

A generated dataset of ``--samples`` samples (default 100,000) with
``--raters`` raters' ``Classification`` fields (default 5; each rater right
with probability 0.75 over 4 classes, 10 % of the cells not assigned), and
every operator that reads classes run end to end through
``execute_operator`` (read, compute, bootstrap, write-back, run
registration) with its defaults: ``compute_class_agreement`` and
``compute_consensus`` with ``em`` (Dawid-Skene), ``mace`` and ``majority``.

Printed per operator: seconds and the ratio to a bare ``values()`` read of
the rater fields measured in the same run (target: within 3x). ``--repeat N``
prints the median of N runs.

Run with ``scripts/with-temp-fiftyone.sh .venv/bin/python bench/class_bench.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from write_page import record  # noqa: E402  (bench/ is this script's folder)

OPERATORS = [
    ("compute_class_agreement", {}),
    ("compute_consensus", {"method": "em"}),
    ("compute_consensus", {"method": "mace"}),
    ("compute_consensus", {"method": "majority"}),
]
CLASSES = ("cat", "dog", "bird", "fish")


def build(n: int, raters: int, seed: int = 0):
    """The dataset: ``n`` samples, one ``Classification`` field per rater (``None`` where not assigned)."""
    import fiftyone as fo

    rng = np.random.default_rng(seed)
    truth = rng.integers(0, len(CLASSES), n)
    ds = fo.Dataset()
    ds.add_samples([fo.Sample(filepath=f"/nonexistent/item{i:07d}") for i in range(n)], progress=False)
    names = [f"r{r + 1}" for r in range(raters)]
    for name in names:
        said = np.where(rng.random(n) < 0.75, truth, rng.integers(0, len(CLASSES), n))
        missing = rng.random(n) < 0.1
        ds.set_values(name, [None if m else fo.Classification(label=CLASSES[c]) for c, m in zip(said, missing)],
                      progress=False)
    return ds, names


def bare_read(ds, names) -> float:
    t = time.perf_counter()
    ds.values(names)
    return time.perf_counter() - t


def run(ds, name: str, params: dict, names: list[str], k: int) -> float:
    import fiftyone.operators as foo

    t = time.perf_counter()
    foo.execute_operator(f"@iaa/agreement/{name}",
                         ctx=dict(view=ds.view(), params=dict(fields=names, key=f"b{k}", **params)))
    elapsed = time.perf_counter() - t
    ds.delete_run(f"b{k}")
    return elapsed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--raters", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--operators", nargs="*", help="time only these operators (default: all)")
    parser.add_argument("--quick", action="store_true", help="500 samples: to check that it works")
    args = parser.parse_args(argv)
    if args.quick:
        args.samples = 500
    os.environ.setdefault("FIFTYONE_PLUGINS_DIR", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    t = time.perf_counter()
    ds, names = build(args.samples, args.raters)
    print(f"built {args.samples:,} samples x {args.raters} Classification fields in {time.perf_counter() - t:.1f} s")
    base = statistics.median(bare_read(ds, names) for _ in range(3))
    print(f"bare values() read of {len(names)} fields: {base:.2f} s (median of 3)")
    print(f"{'operator':<44} {'seconds':>8} {'x read':>7}")
    rows = [[f"bare `values()` read of the {len(names)} fields (median of 3)", f"{base:.2f}", "1.00"]]
    k = 0
    for name, params in OPERATORS:
        if args.operators and name not in args.operators:
            continue
        times = []
        for _ in range(args.repeat):
            times.append(run(ds, name, params, names, k))
            k += 1
        med = statistics.median(times)
        label = name + "".join(f" {v}" for v in params.values())
        print(f"{label:<44} {med:8.2f} {med / base:7.2f}", flush=True)
        rows.append([f"`{label}`", f"{med:.2f}", f"{med / base:.2f}"])
    record("class", ["operator", "seconds", "× bare read"], rows,
           about=f"Each class operator end to end through `execute_operator` with its defaults, on "
                 f"{args.samples:,} samples × {args.raters} `Classification` rater fields, against a bare "
                 f"`values()` read of the rater fields in the same run (medians of {args.repeat}). FiftyOne's "
                 f"`values()` of `Classification` fields builds a label object per value; the operators read "
                 f"the same fields by projection, which is why they can take a fraction of it.",
           quick=args.quick)


if __name__ == "__main__":
    main()
