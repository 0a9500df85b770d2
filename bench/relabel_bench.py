"""Relabel benchmark: what users wait for with the issue-52 operators (plan_raters, suggest_relabel), end to end.

Each step is one Python call ``foo.get_operator("@iaa/agreement/<name>")(dataset, ...)`` (read, compute,
write-back, run registration), timed with ``time.perf_counter`` and printed as a ratio to a plain
``dataset.values(...)`` read of the rater fields the run needs, on:

(a) the AdultContent3 crowd (496 samples x 338 raters, imported with ``import_judgements``): compute_consensus
    (default method) and compute_class_agreement, plan_raters (default repeats) on each, suggest_relabel
    (budget 50) on the consensus run;
(b) a simulated class crowd (``--samples`` samples, default 100,000, x 3 raters in fields r0..r2, ~10 % of labels
    missing, bulk inserted): compute_consensus, plan_raters, suggest_relabel (budget 1,000).

``--profile STEP`` runs cProfile around that step and prints the top 15 functions by cumulative time.
Run with ``scripts/with-temp-fiftyone.sh .venv/bin/python bench/relabel_bench.py``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from typing import Any, Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DATA = os.path.join(ROOT, "..", "shared", "data")
ROWS: list[tuple[str, float, float]] = []


def timed(step: str, fn: Callable[[], Any], read: float, profile: set[str]) -> Any:
    """Runs ``fn`` once, records ``(step, seconds, ratio to read)``, printing it; profiles it if asked."""
    prof = cProfile.Profile() if step in profile else None
    t = time.perf_counter()
    if prof:
        prof.enable()
    out = fn()
    if prof:
        prof.disable()
    dt = time.perf_counter() - t
    ROWS.append((step, dt, dt / read if read else float("nan")))
    print(f"  {step:<40} {dt:8.2f} s  {dt / read if read else float('nan'):8.1f}x   load {os.getloadavg()}",
          flush=True)
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(15)
    return out


def read_time(ds, paths: list[str]) -> float:
    """Seconds of a plain ``values()`` read of ``paths`` (the best of 3)."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        ds.values(paths)
        best = min(best, time.perf_counter() - t)
    return best


def crowd(op, profile: set[str]) -> None:
    """(a) AdultContent3: import, consensus and class agreement, plan_raters on each, suggest_relabel."""
    import fiftyone as fo

    t = time.perf_counter()
    res = op("import_judgements")(path=os.path.join(DATA, "adultcontent3_hcomp2010_labels.tsv"),
                                 dataset_name="iaa-bench-relabel-ac3", overwrite=True, persistent=False,
                                 categories=os.path.join(DATA, "adultcontent3_hcomp2010_categories.txt"))
    ds = fo.load_dataset("iaa-bench-relabel-ac3")
    print(f"(a) AdultContent3: {len(ds)} samples, imported in {time.perf_counter() - t:.2f} s "
          f"({res.get('judgements')} judgements)", flush=True)
    read = read_time(ds, ["judgements.classifications.label", "judgements.classifications.annotator"])
    ROWS.append(("(a) read values(judgements)", read, 1.0))
    print(f"  read {read:.3f} s", flush=True)
    lay = dict(field="judgements", rater_attr="annotator", assume_crossed=True)
    timed("(a) compute_consensus", lambda: op("compute_consensus")(ds, key="cons", **lay), read, profile)
    timed("(a) compute_class_agreement", lambda: op("compute_class_agreement")(ds, key="agr", **lay), read, profile)
    timed("(a) plan_raters cons", lambda: op("plan_raters")(ds, key="cons"), read, profile)
    timed("(a) plan_raters agr", lambda: op("plan_raters")(ds, key="agr"), read, profile)
    timed("(a) suggest_relabel cons b=50", lambda: op("suggest_relabel")(ds, key="cons", budget=50), read, profile)


def simulated(op, n: int, profile: set[str]) -> None:
    """(b) n samples x 3 raters in fields r0..r2, ~10 % missing, bulk inserted."""
    import fiftyone as fo

    from agreement.fo.storage.bulk_insert import insert_sample_docs, label_doc_builder

    t = time.perf_counter()
    name = "iaa-bench-relabel-sim"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    for r in range(3):
        ds.add_sample_field(f"r{r}", fo.EmbeddedDocumentField, embedded_doc_type=fo.Classification)
    make = label_doc_builder(fo.Classification)
    rng = np.random.default_rng(0)
    classes = np.array(["a", "b", "c", "d"])
    truth = rng.integers(0, 4, n)
    for start in range(0, n, 20000):
        docs = []
        for s in range(start, min(n, start + 20000)):
            doc: dict = {"filepath": f"/bench/relabel/{s:07d}.jpg"}
            for r in range(3):
                if rng.random() < 0.1:
                    continue
                c = truth[s] if rng.random() < 0.75 else rng.integers(0, 4)
                doc[f"r{r}"] = make(label=str(classes[c]))
            docs.append(doc)
        insert_sample_docs(ds, docs, media_type="image")
    print(f"(b) simulated: {len(ds)} samples x 3 raters, built in {time.perf_counter() - t:.2f} s", flush=True)
    read = read_time(ds, ["r0.label", "r1.label", "r2.label"])
    ROWS.append(("(b) read values(r0..r2)", read, 1.0))
    print(f"  read {read:.3f} s", flush=True)
    lay = dict(fields=["r0", "r1", "r2"], assume_crossed=True)
    timed("(b) compute_consensus", lambda: op("compute_consensus")(ds, key="cons", **lay), read, profile)
    timed("(b) plan_raters cons", lambda: op("plan_raters")(ds, key="cons"), read, profile)
    timed("(b) suggest_relabel cons b=1000", lambda: op("suggest_relabel")(ds, key="cons", budget=1000), read,
          profile)


def main(argv: list[str] | None = None) -> None:
    """Builds both corpora, times each step and prints the table."""
    import fiftyone.operators as foo

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=100_000, help="samples of the simulated crowd")
    p.add_argument("--parts", nargs="+", choices=["a", "b"], default=["a", "b"])
    p.add_argument("--profile", nargs="*", default=[], help="steps to profile, e.g. '(b) plan_raters cons'")
    args = p.parse_args(argv)
    profile = set(args.profile)

    def op(name: str):
        return foo.get_operator(f"@iaa/agreement/{name}")

    print(f"load average at start {os.getloadavg()}, {os.cpu_count()} CPUs", flush=True)
    if "a" in args.parts:
        crowd(op, profile)
    if "b" in args.parts:
        simulated(op, args.samples, profile)
    print(f"\n{'step':<40} {'seconds':>8} {'x read':>8}")
    for step, sec, ratio in ROWS:
        print(f"{step:<40} {sec:8.2f} {ratio:8.1f}")
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
