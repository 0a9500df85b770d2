"""Benchmark of chance-corrected geometry agreement (agreement.methods.geometry_agreement).

Prints run times (and ratios measured in this run, never timed assertions):

1. the shared LVIS data (200 images, 2 raters) for GIoU and IoU, with and
   without the bootstrap, against a naive baseline (one
   ``agreement.methods.ot.baselines.threshold_match`` call per set pair, the same set
   pairs);
2. a generated 20,000-sample, 5-rater corpus of deterministic jittered boxes
   (3 objects per image), at the default pair budget (which bounds the chance
   sample only: every sample is measured) and with an exact chance baseline
   budget, without and with 1000 resamples;
3. how the time grows with boxes per sample (10, 50, 200; 100 samples,
   5 raters, every sample measured), and what the default budget does (a
   sample whose own within-item comparisons exceed it is skipped);
4. cost per (sample, assigned rater pair): a crowd corpus of 2,000 samples,
   10 raters assigned per sample out of 500, about 5 boxes each, against the
   same with 10 raters in all (both 90,000 triples), without and with the
   default 1000 resamples; the ratio should stay near 1 (target: within 1.5x).

Run from the repository root::

    .venv/bin/python bench/geometry_bench.py [--quick]

``--quick`` shrinks every corpus (2,000 generated samples, 10 and 50 boxes per
sample, a crowd of 500 samples). Every timed line is also a row of the table
it records for the benchmarks page (``bench/write_page.py``).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from write_page import record  # noqa: E402  (bench/ is this script's folder)

from agreement.core.data import MultiRaterAnnotations  # noqa: E402
from agreement.methods.geometry_agreement import geometry_agreement  # noqa: E402
from agreement.methods.ot.baselines import threshold_match  # noqa: E402
from agreement.simulate.synthetic.crowd import crowd_corpus  # noqa: E402

LVIS = REPO.parent / "shared" / "data" / "lvis_v1.0_val_doubly_annos_subset200.json"


def jittered_corpus(n_samples: int, n_raters: int, boxes_per_sample: int, noise: float = 0.05,
                    seed: int = 0, n_classes: int = 5) -> MultiRaterAnnotations:
    """Deterministic corpus: ``boxes_per_sample`` true boxes per image (relative
    size 0.03-0.25), each rater jitters every box (centre by ``N(0, noise)``
    box sizes, sides by ``exp(N(0, noise))``); labels are the true classes."""
    rng = np.random.default_rng(seed)
    S, R, k = n_samples, n_raters, boxes_per_sample
    wh = rng.uniform(0.03, 0.25, size=(S, k, 2))
    c = rng.uniform(0.15, 0.85, size=(S, k, 2))
    lab = rng.integers(0, n_classes, size=(S, k))
    cj = c[:, None] + rng.normal(0, noise, size=(S, R, k, 2)) * wh[:, None]
    whj = wh[:, None] * np.exp(rng.normal(0, noise, size=(S, R, k, 2)))
    x0 = np.clip(cj - whj / 2, 0, 1)
    x1 = np.clip(cj + whj / 2, 0, 1)
    boxes = np.concatenate([x0, np.maximum(x1 - x0, 1e-4)], axis=-1).reshape(-1, 4)
    names = np.asarray([f"class{i}" for i in range(n_classes)], dtype=object)
    labels = names[np.broadcast_to(lab[:, None], (S, R, k)).ravel()]
    return MultiRaterAnnotations(
        sample_ids=np.asarray([f"img{i:06d}" for i in range(S)], dtype=object),
        raters=tuple(f"rater{i}" for i in range(R)),
        assigned=np.ones((S, R), bool), boxes=boxes, labels=labels,
        label_ids=np.full(len(boxes), None, dtype=object),
        sample_index=np.repeat(np.arange(S), R * k), rater_index=np.tile(np.repeat(np.arange(R), k), S),
    )


def timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


#: The rows of the benchmarks page's table: every timed line, under the corpus set in ``CORPUS[0]``.
ROWS: list[list[str]] = []
CORPUS = [""]


def line(label: str, r, seconds: float) -> str:
    ROWS.append([CORPUS[0], label, f"{seconds:.2f}", f"{r.sigma.value:.3f}", f"{r.distance_alpha.value:.3f}",
                 f"{r.detection_alpha.value:.3f}", f"{r.n_samples_measured:,} of {r.n_samples:,}"])
    return (f"  {label:44s} {seconds:7.2f} s   sigma {r.sigma.value:.3f}  dist-alpha {r.distance_alpha.value:.3f}  "
            f"det-alpha {r.detection_alpha.value:.3f}  measured {r.n_samples_measured}/{r.n_samples}"
            f"{' (truncated)' if r.truncated else ''}  comparisons {r.n_comparisons:,} + {r.n_between_comparisons:,}")


def naive_seconds(data, r) -> float:
    """One threshold_match call (IoU) per within-item set pair and per
    between-item set pair of the same count, as a per-pair loop would do."""
    t = time.perf_counter()
    R = data.num_raters
    for s in range(data.num_samples):
        for a in range(R):
            for b in range(a + 1, R):
                if data.assigned[s, a] and data.assigned[s, b]:
                    threshold_match(data.boxes[data.rows(s, a)], data.boxes[data.rows(s, b)], iou_threshold=0.5)
    rng = np.random.default_rng(0)
    done = 0
    while done < r.n_between_set_pairs:
        s, u = rng.integers(data.num_samples, size=2)
        if s != u:
            threshold_match(data.boxes[data.rows(int(s), 0)], data.boxes[data.rows(int(u), 1)], iou_threshold=0.5)
            done += 1
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small corpora, to check that the benchmark works")
    args = ap.parse_args(argv)
    n_big, ks, n_crowd = (2_000, (10, 50), 500) if args.quick else (20_000, (10, 50, 200), 2_000)
    print("Geometry agreement benchmark (sigma, distance alpha, KS, detection and classification alpha)\n")

    # 1. LVIS ------------------------------------------------------------------
    if LVIS.exists():
        from agreement.io.coco import read_multi_rater_coco

        data = read_multi_rater_coco(LVIS).annotations
        CORPUS[0] = f"LVIS ({data.num_samples} images, {data.num_raters} raters)"
        print(f"1. LVIS (shared data): {data.num_samples} images, {data.num_raters} raters, {len(data):,} boxes")
        for distance in ("giou", "iou"):
            r0, t0 = timed(geometry_agreement, data, distance=distance, bootstrap=None)
            print(line(f"{distance}, no bootstrap", r0, t0))
            r1, t1 = timed(geometry_agreement, data, distance=distance, bootstrap=1000)
            print(line(f"{distance}, 1000 resamples", r1, t1))
        naive = naive_seconds(data, r0)
        print(f"  naive per-set-pair threshold_match loop (same set pairs): {naive:.2f} s "
              f"= {naive / t0:.1f}x the vectorised run without bootstrap")
        print(f"  bootstrap: 1000 resamples add {t1 - t0:.2f} s; recomputing the matchings per resample "
              f"would cost about {1000 * t0:.0f} s ({1000 * t0 / max(t1 - t0, 1e-9):.0f}x)")
        rx, tx = timed(geometry_agreement, data, distance="iou", bootstrap=1000, max_pairs=7_000_000)
        print(line("iou, exact chance baseline (max_pairs 7M)", rx, tx))
    else:
        print(f"1. LVIS: skipped ({LVIS} not found)")

    # 2. 20,000 x 5 -------------------------------------------------------------
    big, tg = timed(jittered_corpus, n_big, 5, 3)
    CORPUS[0] = f"generated, {n_big:,} samples × 5 raters × 3 boxes"
    print(f"\n2. Generated corpus: {n_big:,} samples x 5 raters x 3 boxes = {len(big):,} boxes (generated in {tg:.2f} s)")
    r, t_full = timed(geometry_agreement, big, bootstrap=None)
    print(line("default budget (200,000), no bootstrap", r, t_full))
    r, t_boot = timed(geometry_agreement, big, bootstrap=1000)
    print(line("default budget (200,000), 1000 resamples", r, t_boot))
    print(f"  1000 resamples add {t_boot - t_full:.1f} s ({(t_boot - t_full) / t_full:.1f}x a run without bootstrap)")
    r, t = timed(geometry_agreement, big, bootstrap=None, max_pairs=4_000_000)
    print(line("chance budget 4M, no bootstrap", r, t))

    # 3. boxes per sample --------------------------------------------------------
    print("\n3. Growth with boxes per sample (100 samples x 5 raters, GIoU, no bootstrap)")
    base = None
    for k in ks:
        CORPUS[0] = f"100 samples × 5 raters × {k} boxes"
        d = jittered_corpus(100, 5, k, seed=1)
        need = 100 * 10 * k * k  # every within-item comparison; the chance sample gets as many
        r, t = timed(geometry_agreement, d, bootstrap=None, max_pairs=need)
        per = t / max(r.n_comparisons + r.n_between_comparisons, 1) * 1e9
        base = base or t
        print(line(f"{k:3d} boxes/sample, every sample", r, t) + f"   {per:.0f} ns/comparison, {t / base:.1f}x k=10")
        r, t = timed(geometry_agreement, d, bootstrap=None)
        print(line(f"{k:3d} boxes/sample, default budget", r, t))

    # 4. per (sample, rater pair) -------------------------------------------------
    print(f"\n4. Cost per (sample, assigned rater pair): {n_crowd:,} samples, 10 raters per sample, ~5 boxes each")
    per = {}
    for R in (500, 10):
        CORPUS[0] = f"{n_crowd:,} samples, 10 raters each of {R}"
        d, tg = timed(lambda R=R: crowd_corpus(n_crowd, R, raters_per_sample=10, min_objects=3, max_objects=9, seed=0)[0])
        triples = int((lambda k: (k * (k - 1) // 2).sum())(d.assigned.sum(axis=1)))
        print(f"  R = {R}: {len(d):,} boxes, {triples:,} (sample, rater pair) triples (generated in {tg:.2f} s)")
        for boot in (None, 1000):
            r, t = timed(geometry_agreement, d, bootstrap=boot)
            per[R, boot] = t / triples
            print(line(f"R = {R}, {'no bootstrap' if boot is None else '1000 resamples'}", r, t)
                  + f"   {t / triples * 1e6:.1f} us/triple")
    for boot in (None, 1000):
        print(f"  per triple, R = 500 / R = 10, {'no bootstrap' if boot is None else '1000 resamples'}: "
              f"{per[500, boot] / per[10, boot]:.2f}x (target: within 1.5x)")

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nPeak resident memory: {peak:.0f} MB")
    ratios = ", ".join(f"{per[500, b] / per[10, b]:.2f}× {'without bootstrap' if b is None else 'with 1,000 resamples'}"
                       for b in (None, 1000))
    record("geometry", ["corpus", "run", "seconds", "σ", "distance α", "detection α", "samples measured"], ROWS,
           about="Chance-corrected geometry agreement (`agreement.methods.geometry_agreement`, GIoU unless "
                 "named) in the pure library: on the shared LVIS subset, on a generated corpus at the default "
                 "pair budget (which bounds the chance sample only) and beyond it, with boxes per sample growing, "
                 "and on a crowd (10 raters per sample drawn from 500) against 10 raters in all.",
           notes=f"Per (sample, assigned rater pair), the crowd against 10 raters in all: {ratios} (target: "
                 f"within 1.5×). Peak resident memory of the whole benchmark: {peak:.0f} MB.",
           quick=args.quick)


if __name__ == "__main__":
    main()
