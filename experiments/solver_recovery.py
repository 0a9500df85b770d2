"""How well the correspondence solvers recover the true objects under noise.

From LVIS ``r1``, ``NUM_RATERS`` raters are simulated with the LVIS profile at
each magnitude λ in ``MAGNITUDES`` (seeds ``SEEDS``). The simulation report
gives, for every simulated box, the reference box it derives from
(``report.source``; ``-1`` for a false positive, which is an object of its
own). That is the truth: two boxes of *different raters* on the same image
belong together when they derive from the same reference box.

KαLOS clusters each image's boxes into units (box IoU, τ = 0.5, ψ_soft) with
the greedy, sequential Hungarian and agglomerative solvers
(:mod:`agreement.geometry.correspondence`). Over every pair of boxes of different
raters on the same image (the pairs a solver can merge: a unit holds at most
one box per rater), with *merged* = same unit and *true* = same source:

* precision of merges ``TP / (TP + FP)``: merged pairs that are truly the same object;
* recall of merges ``TP / (TP + FN)``: true pairs that were merged;
* Rand index ``(TP + TN) / all pairs``;
* adjusted Rand index, the pair-counting form of Hubert & Arabie's ARI,
  ``2 (TP·TN − FN·FP) / ((TP + FN)(FN + TN) + (TP + FP)(FP + TN))``, over the
  pooled cross-rater pairs of all images (pairs across images, always apart in
  both, are left out: they would push every index to 1).

Recall cannot reach 1 at λ > 0: a fragmented box gives one rater several
boxes of one source, of which a unit can hold only one; a combined box
(several objects merged by one rater) has the source of its seed box only.

Writes ``experiments/results/solver_recovery.md`` and
``solver_recovery.png``. Run from the repository root:
``.venv/bin/python experiments/solver_recovery.py``.
"""

from __future__ import annotations

import argparse
import time

import common as C
import numpy as np

from agreement.geometry.boxes import pairwise_iou
from agreement.methods.kalos import kalos_alpha
from agreement.simulate.noise import simulate

SOLVERS = ("greedy", "hungarian", "agglomerative")
MAGNITUDES = (0.5, 1.0, 2.0, 3.0, 4.0)
NUM_RATERS = 5
SEEDS = (0, 1, 2)


def _pairs_same(sample: np.ndarray, rater: np.ndarray, key: np.ndarray) -> int:
    """Number of pairs of rows with equal (sample, key) and different raters."""
    if not len(key):
        return 0
    _, cnt = np.unique(np.stack([sample, key]), axis=1, return_counts=True)
    same_key = int((cnt * (cnt - 1) // 2).sum())
    _, cnt_r = np.unique(np.stack([sample, key, rater]), axis=1, return_counts=True)
    same_rater = int((cnt_r * (cnt_r - 1) // 2).sum())
    return same_key - same_rater


def pair_counts(sample: np.ndarray, rater: np.ndarray, pred: np.ndarray, true: np.ndarray) -> dict:
    """TP / FP / FN / TN over pairs of rows of different raters on the same sample.

    ``pred`` and ``true`` are cluster ids within a sample (``true`` must give a
    false positive an id of its own).
    """
    sample, rater = np.asarray(sample, np.int64), np.asarray(rater, np.int64)
    pred, true = np.asarray(pred, np.int64), np.asarray(true, np.int64)
    _, n_s = np.unique(sample, return_counts=True)
    _, n_sr = np.unique(np.stack([sample, rater]), axis=1, return_counts=True)
    total = int((n_s * (n_s - 1) // 2).sum() - (n_sr * (n_sr - 1) // 2).sum())
    merged = _pairs_same(sample, rater, pred)
    true_pairs = _pairs_same(sample, rater, true)
    # Joint key: same unit and same source.
    joint = pred * (int(true.max(initial=0)) + 1) + true
    tp = _pairs_same(sample, rater, joint)
    fp, fn = merged - tp, true_pairs - tp
    tn = total - tp - fp - fn
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "total": total}


def indices(c: dict) -> dict:
    tp, fp, fn, tn, tot = c["tp"], c["fp"], c["fn"], c["tn"], c["total"]
    den = (tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)
    return {
        "precision": tp / (tp + fp) if tp + fp else float("nan"),
        "recall": tp / (tp + fn) if tp + fn else float("nan"),
        "rand": (tp + tn) / tot if tot else float("nan"),
        "ari": 2.0 * (tp * tn - fn * fp) / den if den else float("nan"),
    }


def candidate_share(ann, src: np.ndarray, tau: float = 0.5) -> float:
    """Share of true pairs (different raters, same source) whose IoU is at least ``tau``.

    A unit of the agglomerative solver needs every two of its boxes to be a
    candidate pair, so this bounds its recall; greedy union-find and the
    sequential Hungarian can merge a non-candidate pair through a chain.
    """
    keep = np.flatnonzero(src >= 0)
    order = keep[np.lexsort((src[keep], ann.sample_index[keep]))]
    key = src[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(order)]
    n_true = n_cand = 0
    for a, b in zip(starts, ends):
        if b - a < 2:
            continue
        rows = order[a:b]
        iou = pairwise_iou(ann.boxes[rows], ann.boxes[rows])
        r = ann.rater_index[rows]
        iu = np.triu_indices(len(rows), 1)
        diff = r[iu[0]] != r[iu[1]]
        n_true += int(diff.sum())
        n_cand += int((diff & (iou[iu] >= tau)).sum())
    return n_cand / n_true if n_true else float("nan")


def run(data, mags, seeds, num_raters) -> dict:
    out = {(s, m): [] for s in SOLVERS for m in mags}
    alphas = {(s, m): [] for s in SOLVERS for m in mags}
    seconds = {s: 0.0 for s in SOLVERS}
    cand = {m: [] for m in mags}
    for seed in seeds:
        for lam in mags:
            sim = simulate(data, profile="lvis", magnitude=lam, num_raters=num_raters, seed=seed, rater=C.REFERENCE)
            ann, src = sim.annotations, sim.report.source
            # Truth: the source reference row; a false positive (-1) is its own object.
            true = np.where(src >= 0, src, -(np.arange(len(src)) + 2))
            true = np.unique(true, return_inverse=True)[1]
            cand[lam].append(candidate_share(ann, src))
            for solver in SOLVERS:
                t = time.perf_counter()
                r = kalos_alpha(ann, similarity="iou", tau=0.5, solver=solver, cost="soft")
                seconds[solver] += time.perf_counter() - t
                c = pair_counts(ann.sample_index, ann.rater_index, r.unit, true)
                out[(solver, lam)].append(c)
                alphas[(solver, lam)].append(r.global_alpha)
    return {"counts": out, "alpha": alphas, "seconds": seconds, "candidate_share": cand}


def summarise(res, mags) -> dict:
    summ = {}
    for s in SOLVERS:
        for m in mags:
            runs = [indices(c) for c in res["counts"][(s, m)]]
            summ[(s, m)] = {k: (float(np.mean([r[k] for r in runs])), float(np.std([r[k] for r in runs])))
                            for k in ("precision", "recall", "rand", "ari")}
            summ[(s, m)]["alpha"] = (float(np.mean(res["alpha"][(s, m)])), float(np.std(res["alpha"][(s, m)])))
            summ[(s, m)]["pairs"] = int(np.mean([c["total"] for c in res["counts"][(s, m)]]))
            summ[(s, m)]["true_pairs"] = int(np.mean([c["tp"] + c["fn"] for c in res["counts"][(s, m)]]))
    return summ


def plot(summ, mags, path):
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.4), sharex=True)
    for ax, key, title in zip(axes, ("ari", "rand", "precision", "recall"),
                              ("adjusted Rand index", "Rand index", "precision of merges", "recall of merges")):
        for s, mk in zip(SOLVERS, "osD"):
            y = [summ[(s, m)][key][0] for m in mags]
            e = [summ[(s, m)][key][1] for m in mags]
            ax.errorbar(mags, y, yerr=e, marker=mk, ms=4, capsize=2, label=s)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("magnitude λ")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Recovery of the true objects by the KαLOS solvers ({NUM_RATERS} simulated raters, LVIS r1)",
                 fontsize=11, y=1.04)
    return C.savefig(fig, path)


def report(summ, res, mags, seeds, png) -> str:
    L = ["# Correspondence solvers: recovery of the true clusters under noise\n"]
    L.append(
        f"Generated by `experiments/solver_recovery.py`. {NUM_RATERS} raters simulated "
        f"from LVIS `r1` (200 images) with the LVIS profile at λ ∈ {{{', '.join(f'{m:g}' for m in mags)}}}, "
        f"seeds {list(seeds)} (mean ± sd over seeds). KαLOS units with box IoU, τ = 0.5, ψ_soft. Truth: "
        "two boxes of different raters on one image are the same object when the simulation derived "
        "them from the same reference box (a false positive is an object of its own). Indices over "
        "every pair of boxes of different raters on the same image; precision and recall are those "
        "of the merges (pairs put in one unit).\n"
    )
    hdr = ["λ", "solver", "ARI", "Rand index", "precision", "recall", "true pairs with IoU ≥ τ",
           "KαLOS global α", "pairs / true pairs"]
    body = []
    for m in mags:
        cs = np.mean(res["candidate_share"][m])
        for s in SOLVERS:
            r = summ[(s, m)]
            body.append([f"{m:g}", s] + [f"{r[k][0]:.3f} ± {r[k][1]:.3f}" for k in ("ari", "rand", "precision", "recall")]
                        + [f"{cs:.3f}", f"{r['alpha'][0]:.3f} ± {r['alpha'][1]:.3f}", f"{r['pairs']} / {r['true_pairs']}"])
    L.append(C.markdown_table(hdr, body, align="rl" + "r" * 7))
    tn_share = min(c["tn"] / c["total"] for runs in res["counts"].values() for c in runs)
    L.append(
        "\nThe Rand index counts every pair of boxes of different raters on an image; at least "
        f"{tn_share:.0%} of them are apart in both the truth and the units (true negatives) in every "
        "run, so it stays near 1 and says little. The ARI "
        "corrects for that and is the index to read. The *true pairs with IoU ≥ τ* column is the "
        "share of truly corresponding pairs that are candidates at all; it bounds the "
        "agglomerative solver's recall (complete linkage needs every two members of a unit to be "
        "candidates), whereas greedy union-find and the sequential Hungarian can join a "
        "non-candidate pair through a chain of candidates."
    )
    L.append("")
    L.append(f"![solver recovery]({png.name})\n")
    # Findings, computed.
    best = {m: max(SOLVERS, key=lambda s: summ[(s, m)]["ari"][0]) for m in mags}
    L.append("## Findings\n")
    L.append("* Best ARI per λ: " + ", ".join(f"λ={m:g}: {best[m]} ({summ[(best[m], m)]['ari'][0]:.3f})"
                                              for m in mags) + ".")
    hi = mags[-1]
    cs_hi = float(np.mean(res["candidate_share"][hi]))
    L.append(
        "* Precision / recall at λ = {:g}: ".format(hi) + "; ".join(
            f"{s} {summ[(s, hi)]['precision'][0]:.3f} / {summ[(s, hi)]['recall'][0]:.3f}" for s in SOLVERS)
        + f". Recall is what noise destroys: only {cs_hi:.0%} of the truly corresponding pairs still "
        "have IoU ≥ τ at that magnitude, so most of them cannot be merged directly; the solvers "
        "err on the side of not merging, and precision stays high."
    )
    tol = 0.002  # recall differences below this are within seed noise
    bad = [m for m in mags
           if not (summ[("greedy", m)]["recall"][0] >= summ[("hungarian", m)]["recall"][0] - tol
                   >= summ[("agglomerative", m)]["recall"][0] - 2 * tol)]
    if not bad:
        L.append(
            f"* Recall orders greedy ≥ Hungarian ≥ agglomerative at every λ (within {tol}), as expected "
            "from how each builds a unit: union-find chains candidates, the sequential Hungarian "
            "matches each new rater against whole units, and complete linkage demands that every "
            "two members be candidates."
        )
    else:
        L.append("* Recall does not order greedy ≥ Hungarian ≥ agglomerative at λ = "
                 + ", ".join(f"{m:g}" for m in bad) + " (see the table).")
    lo = mags[0]
    spread = max(summ[(s, lo)]["ari"][0] for s in SOLVERS) - min(summ[(s, lo)]["ari"][0] for s in SOLVERS)
    L.append(f"* At λ = {lo:g} the solvers differ by {spread:.3f} in ARI: with little noise the "
             "candidate graph is nearly a set of disjoint cliques and every solver finds them.\n")
    return "\n".join(L)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one seed")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    seeds = SEEDS[:1] if args.quick else SEEDS
    data = C.load_lvis()
    res = run(data, MAGNITUDES, seeds, NUM_RATERS)
    summ = summarise(res, MAGNITUDES)
    png = plot(summ, MAGNITUDES, C.RESULTS / "solver_recovery.png")
    elapsed = time.perf_counter() - t0
    path = C.write_text(C.RESULTS / "solver_recovery.md", report(summ, res, MAGNITUDES, seeds, png))
    print(f"wrote {C.rel(path)} and {C.rel(png)} ({elapsed:.1f} s; solver time "
          + ", ".join(f"{s} {t:.1f} s" for s, t in res["seconds"].items()) + ")")
    return {"summary": summ, "mags": MAGNITUDES, "path": path}


if __name__ == "__main__":
    main()
