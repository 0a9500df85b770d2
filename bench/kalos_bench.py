"""KαLOS benchmark: this implementation against the reference ``kalos`` package.

Prints, in one run:

1. **Shared LVIS data** (200 images, 2 raters; ``../shared/data``): greedy
   correspondence, ψ_soft cost, box IoU, τ = 0.5 (the reference's
   ``greedy`` / ``category_lenient`` / ``bbox_iou_similarity``). Time per
   sample of :func:`agreement.methods.kalos.kalos_alpha` and of the reference's
   ``calculate_iaa``, their ratio (target: at least 5x), and a check that
   the units of every sample, every defined per-sample α and the global α
   are the same (to 1e-9), and that every sample where the reference
   reports its 1.0 convention is NaN here.
2. **A generated corpus** of 20,000 samples and 5 raters (deterministic:
   true objects jittered, dropped, relabelled and joined by false positives
   per rater; 2 % of (sample, rater) cells unassigned), same configuration
   and same checks. The reference runs on all 20,000 samples (about 15 s;
   ``--ref-samples N`` restricts it to the first N, then only the units and
   per-sample α are compared); times are compared per sample.
3. **Solver stability**: for each solver, the adjusted Rand index of the
   units before and after randomly renaming the raters and shuffling the
   annotations of every (sample, rater) cell, averaged over a few
   permutations (1.0: the units do not depend on the input order).

Run from the repository root: ``.venv/bin/python bench/kalos_bench.py``
(``--quick`` for a smaller generated corpus).
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import logging
import sys
import time
from contextlib import redirect_stderr
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from write_page import record  # noqa: E402  (bench/ is this script's folder)

from agreement.core.data import MultiRaterAnnotations  # noqa: E402
from agreement.geometry.correspondence import SOLVERS  # noqa: E402
from agreement.io.coco import parse_multi_rater_coco  # noqa: E402
from agreement.methods.kalos import kalos_alpha  # noqa: E402

LVIS = REPO.parent / "shared" / "data" / "lvis_v1.0_val_doubly_annos_subset200.json"
W, H = 640, 480


# --------------------------------------------------------------------------
# Generated corpus
# --------------------------------------------------------------------------


def generate_coco(num_samples: int, num_raters: int = 5, num_classes: int = 10, seed: int = 0) -> dict:
    """A deterministic multi-rater COCO dict in the KαLOS layout.

    Per sample 0-8 true boxes (uniform); each rater independently drops a
    true box with probability 0.1, jitters the kept ones (Gaussian, 6 % of
    the box size), changes the class with probability 0.1, and adds a false
    positive with probability 0.3; 2 % of (sample, rater) cells are not
    assigned (implicit absence).
    """
    rng = np.random.default_rng(seed)
    raters = [f"rater{k}" for k in range(num_raters)]
    images, anns = [], []
    n_true = rng.integers(0, 9, num_samples)
    aid = 1
    for s in range(num_samples):
        k = int(n_true[s])
        wh = np.exp(rng.uniform(np.log(0.05), np.log(0.4), (k, 2)))
        xy = rng.uniform(0, 1, (k, 2)) * (1 - wh)
        cls = rng.integers(1, num_classes + 1, k)
        assigned = [r for r in raters if rng.random() >= 0.02]
        images.append({"id": s + 1, "file_name": f"img{s:06d}.jpg", "width": W, "height": H, "rater_list": assigned})
        for r in assigned:
            keep = rng.random(k) >= 0.1
            b_wh = wh[keep] * np.exp(rng.normal(0, 0.06, (keep.sum(), 2)))
            b_xy = xy[keep] + rng.normal(0, 0.06, (keep.sum(), 2)) * wh[keep]
            c = cls[keep].copy()
            flip = rng.random(len(c)) < 0.1
            c[flip] = rng.integers(1, num_classes + 1, flip.sum())
            if rng.random() < 0.3:
                fwh = np.exp(rng.uniform(np.log(0.05), np.log(0.4), (1, 2)))
                b_wh = np.vstack([b_wh, fwh])
                b_xy = np.vstack([b_xy, rng.uniform(0, 1, (1, 2)) * (1 - fwh)])
                c = np.r_[c, rng.integers(1, num_classes + 1)]
            x0 = np.clip(b_xy, 0, 1)
            x1 = np.clip(b_xy + b_wh, 0, 1)
            px = np.round(np.c_[x0[:, 0] * W, x0[:, 1] * H, (x1 - x0)[:, 0] * W, (x1 - x0)[:, 1] * H], 2)
            for box, cc in zip(px.tolist(), c.tolist()):
                anns.append({"id": aid, "image_id": s + 1, "category_id": int(cc), "rater_id": r, "bbox": box})
                aid += 1
    cats = [{"id": c, "name": f"class{c:02d}"} for c in range(1, num_classes + 1)]
    return {"images": images, "annotations": anns, "categories": cats}


# --------------------------------------------------------------------------
# The reference
# --------------------------------------------------------------------------


def reference(coco: dict, tau: float = 0.5, threshold_func: str = "bbox_iou_similarity"):
    """Runs the kalos package's pipeline (``calculate_iaa``) on a COCO dict.

    The matching function is wrapped to record every image's clusters (the
    wrapper's bookkeeping is negligible next to the matching). Returns
    (seconds, per-image alpha, global alpha, clusters by image id).
    """
    from kalos.correspondence import correspondence_algorithms as ca
    from kalos.iaa.core import calculate_iaa
    from kalos.utils.data_loading import preprocess_data

    logging.getLogger("kalos").setLevel(logging.WARNING)
    data = json.loads(json.dumps(coco))  # the reference modifies boxes in place
    processed = preprocess_data(data)
    categories = {c["id"]: c["name"] for c in data["categories"]}
    all_raters = sorted({r for img in processed.values() for r in img["rater_list"]})
    by_identity = {id(img): img_id for img_id, img in processed.items()}
    clusters = {}

    def recording(image_data, pairwise_scores, cost_func, similarity_threshold):
        out = ca.match_greedy(image_data, pairwise_scores, cost_func, similarity_threshold)
        clusters[by_identity[id(image_data)]] = out
        return out

    ca.MATCHING_FUNCTIONS["greedy_recording"] = recording
    try:
        with redirect_stderr(io.StringIO()):  # tqdm
            t = time.perf_counter()
            out = calculate_iaa(processed, categories, "greedy_recording", threshold_func, "category_lenient", tau,
                                False, False, False, all_raters)
            seconds = time.perf_counter() - t
    finally:
        del ca.MATCHING_FUNCTIONS["greedy_recording"]
    return seconds, out[6], out[1], clusters


def best_time(fn, repeat: int = 3):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def compare(data: MultiRaterAnnotations, ours, ref_alpha: dict, ref_global: float | None, ref_clusters: dict) -> dict:
    """Counts of differences between our result and the reference on the samples the reference ran."""
    pos = {sid: s for s, sid in enumerate(data.sample_ids.tolist())}
    unit_diff = alpha_diff = conv_bad = conv = 0
    max_err = 0.0
    for sid, clusters in ref_clusters.items():
        s = pos[sid]
        R = data.num_raters
        rows = np.arange(data.offsets[s * R], data.offsets[(s + 1) * R])
        mine: dict[int, list] = {}
        for i in rows.tolist():
            mine.setdefault(int(ours.unit[i]), []).append(data.label_ids[i])
        if sorted(tuple(sorted(v)) for v in mine.values()) != sorted(tuple(sorted(c)) for c in clusters):
            unit_diff += 1
        a, ra = ours.alpha[s], ref_alpha[sid]
        if np.isnan(a):
            conv += 1
            conv_bad += ra != 1.0
        else:
            err = abs(a - ra)
            max_err = max(max_err, err)
            alpha_diff += err > 1e-9
    g = None if ref_global is None else abs(ours.global_alpha - ref_global)
    return dict(unit_diff=unit_diff, alpha_diff=alpha_diff, max_err=max_err, undefined=conv, undefined_not_1=conv_bad,
                global_err=g)


def report(name: str, n_ours: int, t_ours: float, n_ref: int, t_ref: float, cmp: dict) -> list[str]:
    """Print one corpus's comparison; return its row of the benchmarks page's table."""
    per_ours, per_ref = t_ours / n_ours, t_ref / n_ref
    print(f"\n== {name}")
    print(f"  ours:      {n_ours:6d} samples in {t_ours * 1e3:9.1f} ms = {per_ours * 1e6:8.1f} us/sample")
    print(f"  reference: {n_ref:6d} samples in {t_ref * 1e3:9.1f} ms = {per_ref * 1e6:8.1f} us/sample")
    ratio = per_ref / per_ours
    print(f"  speed-up per sample: {ratio:.1f}x (target >= 5x: {'met' if ratio >= 5 else 'NOT met'})")
    same = cmp["unit_diff"] == 0 and cmp["alpha_diff"] == 0 and cmp["undefined_not_1"] == 0 and (
        cmp["global_err"] is None or cmp["global_err"] <= 1e-9)
    g = "n/a (subset)" if cmp["global_err"] is None else f"{cmp['global_err']:.1e}"
    print(f"  same numbers: {'yes' if same else 'NO'} (samples with different units: {cmp['unit_diff']}, "
          f"defined alpha differing > 1e-9: {cmp['alpha_diff']} (max |diff| {cmp['max_err']:.1e}), "
          f"global |diff|: {g}; NaN here: {cmp['undefined']}, of which the reference does not report 1.0: "
          f"{cmp['undefined_not_1']})")
    return [name, f"{per_ours * 1e6:.1f}", f"{per_ref * 1e6:.1f}", f"{ratio:.1f}", "yes" if same else "**no**"]


# --------------------------------------------------------------------------
# Stability
# --------------------------------------------------------------------------


def adjusted_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Adjusted Rand index of two labelings (Hubert & Arabie 1985)."""
    from scipy.special import comb

    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1))
    np.add.at(table, (ai, bi), 1)
    sum_comb = comb(table, 2).sum()
    sa = comb(table.sum(1), 2).sum()
    sb = comb(table.sum(0), 2).sum()
    expected = sa * sb / comb(len(a), 2)
    top = 0.5 * (sa + sb)
    return 1.0 if top == expected else float((sum_comb - expected) / (top - expected))


def permuted(data: MultiRaterAnnotations, rng: np.random.Generator) -> tuple[MultiRaterAnnotations, np.ndarray]:
    """Raters renamed in a random order and every cell's annotations shuffled.

    Returns the new corpus and, for each of its rows, the original row.
    """
    R = data.num_raters
    perm = rng.permutation(R)
    names = [f"p{int(perm[r]):03d}" for r in range(R)]  # new name of old rater r; sorted order changes
    key = data.sample_index * R + perm[data.rater_index]
    order = np.lexsort((rng.random(len(data)), key))
    new = MultiRaterAnnotations(
        sample_ids=data.sample_ids,
        raters=tuple(sorted(names)),
        assigned=data.assigned[:, np.argsort(perm)],
        boxes=data.boxes[order],
        labels=data.labels[order],
        label_ids=data.label_ids[order],
        sample_index=data.sample_index[order],
        rater_index=perm[data.rater_index[order]],
        image_sizes=data.image_sizes,
    )
    return new, order


def stability(data: MultiRaterAnnotations, permutations: int, seed: int = 1) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    out = {}
    for solver in SOLVERS:
        try:
            base = kalos_alpha(data, solver=solver)
        except ImportError as e:
            out[solver] = f"skipped ({e})"
            continue
        base_label = base.unit_column
        aris, alphas = [], []
        for _ in range(permutations):
            new, order = permuted(data, rng)
            res = kalos_alpha(new, solver=solver)
            lab = np.empty(len(data), dtype=np.int64)
            lab[order] = res.unit_column
            aris.append(adjusted_rand_index(base_label, lab))
            alphas.append(abs(res.global_alpha - base.global_alpha))
        out[solver] = (float(np.mean(aris)), float(np.min(aris)), float(np.max(alphas)), base.global_alpha)
    return out


# --------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--raters", type=int, default=5)
    ap.add_argument("--ref-samples", type=int, default=0,
                    help="run the reference on the first N generated samples only (default 0: all)")
    ap.add_argument("--permutations", type=int, default=3)
    ap.add_argument("--stability-samples", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="2,000 generated samples, stability on 500")
    args = ap.parse_args()
    if args.quick:
        args.samples, args.stability_samples = 2000, 500

    print("KαLOS benchmark: greedy correspondence, psi_soft cost, box IoU, tau = 0.5")
    rows: list[list[str]] = []
    # 1. LVIS
    if LVIS.exists():
        with open(LVIS) as f:
            coco = json.load(f)
        data = parse_multi_rater_coco(copy.deepcopy(coco)).annotations
        kalos_alpha(data)  # warm-up (imports)
        t_ours, ours = best_time(lambda: kalos_alpha(data), 5)
        ref_runs = [reference(coco) for _ in range(3)]
        t_ref = min(r[0] for r in ref_runs)
        _, ref_alpha, ref_global, ref_clusters = ref_runs[0]
        rows.append(report(f"shared LVIS data ({data.num_samples} samples, {data.num_raters} raters, {len(data)} boxes)",
               data.num_samples, t_ours, len(ref_alpha), t_ref, compare(data, ours, ref_alpha, ref_global, ref_clusters)))
        print(f"  global alpha {ours.global_alpha:.6f} (reference {ref_global:.6f}); mean over {ours.n_defined} "
              f"defined samples {ours.mean_alpha:.6f}, {ours.n_undefined} undefined (NaN); the reference's mean "
              f"with its 1.0s: {np.mean(list(ref_alpha.values())):.6f}")
    else:
        print(f"\n(shared LVIS data not found at {LVIS}; skipped)")

    # 2. Generated corpus
    t = time.perf_counter()
    coco = generate_coco(args.samples, args.raters)
    data = parse_multi_rater_coco(copy.deepcopy(coco)).annotations
    print(f"\n(generated {data.num_samples} samples, {data.num_raters} raters, {len(data)} boxes in "
          f"{time.perf_counter() - t:.1f} s)")
    t_ours, ours = best_time(lambda: kalos_alpha(data), 3)
    n_ref = args.samples if args.ref_samples <= 0 else min(args.ref_samples, args.samples)
    sub = dict(coco, images=coco["images"][:n_ref])
    keep_ids = {img["id"] for img in sub["images"]}
    sub["annotations"] = [a for a in coco["annotations"] if a["image_id"] in keep_ids]
    t_ref, ref_alpha, ref_global, ref_clusters = reference(sub)
    if n_ref < args.samples:
        print(f"  (reference timed on the first {n_ref} samples; their units and per-sample alpha are compared, "
              "the global alpha only when it ran on all)")
        ref_global = None
    rows.append(report(f"generated corpus ({data.num_samples} samples, {data.num_raters} raters, {len(data)} boxes)",
           data.num_samples, t_ours, n_ref, t_ref, compare(data, ours, ref_alpha, ref_global, ref_clusters)))
    print(f"  global alpha {ours.global_alpha:.6f}; mean over {ours.n_defined} defined samples {ours.mean_alpha:.6f}, "
          f"{ours.n_undefined} undefined")

    # 3. Stability
    n_st = min(args.stability_samples, data.num_samples)
    st_data = data.select_samples(np.arange(n_st))
    print(f"\n== solver stability on {n_st} generated samples: adjusted Rand index of the units over "
          f"{args.permutations} random rater renamings + annotation shuffles (1.0 = order-invariant)")
    ari = []
    for solver, v in stability(st_data, args.permutations).items():
        if isinstance(v, str):
            print(f"  {solver:14s} {v}")
            ari.append(f"{solver} {v}")
        else:
            print(f"  {solver:14s} mean ARI {v[0]:.4f}  min ARI {v[1]:.4f}  max |global alpha change| {v[2]:.1e}  "
                  f"(global alpha {v[3]:.4f})")
            ari.append(f"{solver} {v[0]:.4f}")
    record("kalos", ["corpus", "ours (µs/sample)", "reference (µs/sample)", "speed-up", "same numbers"], rows,
           about="KαLOS α (greedy correspondence, ψ_soft cost, box IoU, τ = 0.5) against the `kalos` reference "
                 "package, per sample, on the shared LVIS subset and on a generated corpus; *same numbers*: the "
                 "same units in every sample, per-sample α equal to 1e-9 where defined, global α equal to 1e-9.",
           notes=f"Target: at least 5× faster per sample. Solver stability (mean adjusted Rand index of the units "
                 f"over {args.permutations} random renamings of the raters and shuffles of the annotations, "
                 f"{n_st:,} samples; 1.0 = order-invariant): " + ", ".join(ari) + ".",
           quick=args.quick)


if __name__ == "__main__":
    main()
