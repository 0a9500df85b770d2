"""Full-range use and sensitivity at low noise, under the KαLOS empirical noise generator.

For each magnitude λ in ``MAGNITUDES`` (0 to 5) and each seed, the corpus is
LVIS ``r1`` against one rater simulated from it with the LVIS profile
(:func:`agreement.simulate.noise.simulate`, ``λ`` scaling every error rate and every
localisation residual; ``λ = 1`` reproduces the profile fitted from the real
``r1``/``r2`` pairs, so ``r1`` vs a simulated rater at ``λ = 1`` should look
like the real ``r1`` vs ``r2``). Every shipped score is computed at corpus
level (:data:`common.METRICS`).

Per metric:

* the corpus score at each λ (mean over seeds), and the real LVIS ``r1`` vs
  ``r2`` score for orientation, with the λ at which the simulation matches it
  (linear interpolation on the mean curve, where the curve is monotone);
* **range used**: ``(s(0) - s(5)) / (1 - floor)``, the share of the score's
  useful range ``[floor, 1]`` (floor: chance for chance-corrected scores, the
  theoretical minimum otherwise; :attr:`common.Metric.floor`) that λ from 0
  to 5 covers;
* **slope near 0**: ``(s(0.25) - s(0)) / 0.25`` in score units per unit λ, and
  the same divided by ``1 - floor`` (share of the range per unit λ): how much a
  small amount of noise moves the score where agreement is high;
* the adjacent λ steps the score keeps / ties / reverses (pooled over seeds).

Writes ``experiments/results/full_range.md`` and ``full_range.png``. Run from
the repository root: ``.venv/bin/python experiments/full_range.py``.
"""

from __future__ import annotations

import argparse
import time

import common as C
import numpy as np

from agreement.simulate.noise import simulate

MAGNITUDES = (0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0)
SEEDS = (0, 1, 2)


def simulated_pair(data, magnitude: float, seed: int):
    """``r1`` and one rater ``"sim"`` simulated from it at magnitude ``λ``."""
    sim = simulate(data, profile="lvis", magnitude=magnitude, num_raters=1, seed=seed, rater=C.REFERENCE,
                   names=["sim"], include_reference=True)
    return sim.annotations, sim.report


def _interp_lambda(mags, curve, value) -> float:
    """The λ where a (falling) mean curve crosses ``value`` (NaN when it does not)."""
    for k in range(len(mags) - 1):
        a, b = curve[k], curve[k + 1]
        if np.isnan(a) or np.isnan(b):
            continue
        if (a - value) * (b - value) <= 0 and a != b:
            return float(mags[k] + (mags[k + 1] - mags[k]) * (a - value) / (a - b))
    return float("nan")


def strict_and_loose(pair) -> tuple[float, float]:
    """Share of boxes matched at IoU ≥ 0.5 (class-agnostic F1) and at GIoU ≥ 0 (geometry matching)."""
    from agreement.methods.ot.baselines import threshold_baselines

    strict = threshold_baselines(pair, iou_threshold=0.5, class_aware=False).f1_micro
    loose = 1.0 - C._geometry(pair).unmatched_within
    return float(strict), float(loose)


def run(data, mags, seeds) -> dict:
    cor = {m.key: np.full((len(seeds), len(mags)), np.nan) for m in C.METRICS}
    cannibal = np.zeros((len(seeds), len(mags)))
    for i, seed in enumerate(seeds):
        for j, lam in enumerate(mags):
            pair, rep = simulated_pair(data, lam, seed)
            cannibal[i, j] = rep.total_cannibalised
            sc = C.evaluate(pair)
            for k, v in sc.corpus.items():
                cor[k][i, j] = v
    real_pair = C.select_raters(data, [C.REFERENCE, "r2"])
    real = C.evaluate(real_pair).corpus
    # Matched share at a strict (IoU 0.5) and a loose (GIoU 0) threshold: real vs λ = 1.
    match = {"real": strict_and_loose(real_pair)}
    if 1.0 in mags:
        sl = np.array([strict_and_loose(simulated_pair(data, 1.0, seed)[0]) for seed in seeds])
        match["sim"] = tuple(sl.mean(axis=0))
    return {"corpus": cor, "real": real, "cannibalised": cannibal, "match": match}


def summarise(res: dict, mags) -> dict:
    mags = np.asarray(mags, np.float64)
    j0, j25, j5 = 0, int(np.flatnonzero(mags == 0.25)[0]), len(mags) - 1
    out = {}
    for m in C.METRICS:
        cur = res["corpus"][m.key]
        mean = np.nanmean(cur, axis=0)
        sd = np.nanstd(cur, axis=0)
        span = 1.0 - m.floor
        kept = tie = rev = 0
        for i in range(cur.shape[0]):
            k, t, r = C.adjacent_order(cur[i], tol=1e-9)
            kept, tie, rev = kept + k, tie + t, rev + r
        slope = (mean[j25] - mean[j0]) / (mags[j25] - mags[j0])
        real = res["real"].get(m.key, float("nan"))
        out[m.key] = {
            "mean": mean, "sd": sd,
            "range_used": (mean[j0] - mean[j5]) / span,
            "min_over_lambda": float(np.nanmin(mean)),
            "slope": slope, "slope_norm": slope / span,
            "adj": (kept, tie, rev),
            "real": real,
            "lambda_real": _interp_lambda(mags, mean, real),
        }
    return out


def plot(summary: dict, mags, path):
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    groups = (
        ("scores in [0, 1]", ("ot_0.2", "ot_0.5", "ot_0.8", "ot_oc_0.5", "f1", "mean_iou", "sigma")),
        ("chance-corrected (0 = chance)", ("alpha_ot", "kalos", "threshold_alpha", "distance_alpha",
                                           "ks", "detection_alpha", "classification_alpha")),
    )
    markers = "osD^v<>phx*"
    for ax, (title, keys) in zip(axes, groups):
        for i, k in enumerate(keys):
            s = summary[k]
            line, = ax.plot(mags, s["mean"], "-", marker=markers[i % len(markers)], ms=4, label=C.METRIC[k].label)
            ax.fill_between(mags, s["mean"] - s["sd"], s["mean"] + s["sd"], color=line.get_color(), alpha=0.15)
        ax.axvline(1.0, color="0.5", lw=0.8, ls="--")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("magnitude λ (dashed: λ = 1, the fitted profile)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    axes[0].set_ylabel("corpus score (mean ± sd over seeds)")
    fig.suptitle("Full range: LVIS r1 against a rater simulated with the LVIS profile, λ from 0 to 5", fontsize=11)
    return C.savefig(fig, path)


def report(summary, res, mags, seeds, png) -> str:
    L = ["# Full-range use and sensitivity at low noise\n"]
    L.append(
        f"Generated by `experiments/full_range.py`. Corpus: LVIS `r1` (200 images) "
        "against one rater simulated from it by the KαLOS empirical generator with the shipped LVIS "
        f"profile at magnitude λ ∈ {{{', '.join(f'{x:g}' for x in mags)}}}, seeds {list(seeds)}; "
        "scores as in `ot_paper_noise.md` (corpus values, mean over seeds). *Real r1–r2* is the "
        "score of the two real LVIS raters; *λ matching real* is where the simulated curve crosses "
        "it (the profile was fitted on those pairs, so a value near 1 means the generator "
        "reproduces the real disagreement for that score). *Range used* is `(s(0) − s(5)) / (1 − floor)`; "
        "*slope near 0* is `(s(0.25) − s(0)) / 0.25`, raw and as a share of the range `1 − floor`.\n"
    )
    hdr = ["metric", "floor"] + [f"λ={x:g}" for x in mags] + [
        "real r1–r2", "λ matching real", "range used", "slope near 0", "slope / range", "steps kept / tie / rev"]
    rows = []
    for m in C.METRICS:
        s = summary[m.key]
        rows.append([m.label, f"{m.floor:g}"] + [C.fmt(v) for v in s["mean"]] + [
            C.fmt(s["real"]), C.fmt(s["lambda_real"], 2), f"{s['range_used']:.0%}", C.fmt(s["slope"]),
            C.fmt(s["slope_norm"]), "{} / {} / {}".format(*s["adj"])])
    L.append(C.markdown_table(hdr, rows))
    cann = res["cannibalised"].mean(axis=0)
    L.append(
        "\nCannibalised errors (sampled errors that found no clean box left; mean over seeds): "
        + ", ".join(f"λ={x:g}: {c:.0f}" for x, c in zip(mags, cann)) + ".\n"
    )
    L.append(f"![full range]({png.name})\n")
    L.append(_findings(summary, mags, res["match"]))
    return "\n".join(L)


def _findings(summary, mags, match) -> str:
    keys = [m.key for m in C.METRICS]
    by_range = sorted(keys, key=lambda k: -summary[k]["range_used"])
    by_slope = sorted(keys, key=lambda k: summary[k]["slope_norm"])
    nonmono = [C.METRIC[k].label for k in keys if summary[k]["adj"][2] > 0]
    near1 = [f"{C.METRIC[k].label} ({C.fmt(summary[k]['lambda_real'], 2)})" for k in keys
             if not np.isnan(summary[k]["lambda_real"])]
    flat = [C.METRIC[k].label for k in keys if abs(summary[k]["slope_norm"]) < 0.05]
    L = ["## Findings\n"]
    L.append("* **Widest range used** (λ 0 → 5): " + ", ".join(
        f"{C.METRIC[k].label} {summary[k]['range_used']:.0%}" for k in by_range[:5])
        + "; narrowest: " + ", ".join(
        f"{C.METRIC[k].label} {summary[k]['range_used']:.0%}" for k in by_range[-4:]) + ".")
    L.append("* **Most sensitive near λ = 0** (share of range lost per unit λ): " + ", ".join(
        f"{C.METRIC[k].label} {-summary[k]['slope_norm']:.2f}" for k in by_slope[:5])
        + "; least: " + ", ".join(
        f"{C.METRIC[k].label} {-summary[k]['slope_norm']:.2f}" for k in by_slope[-4:]) + ".")
    L.append("* **Flat near λ = 0** (less than 5 % of the range per unit λ: the score cannot tell "
             "small amounts of noise apart): " + (", ".join(flat) if flat else "none") + ".")
    L.append("* **Not monotone in λ** (some λ step raises the corpus score in some seed): "
             + (", ".join(nonmono) if nonmono else "none") + ".")
    L.append("* **λ at which the simulation matches the real r1–r2 score**: " + (", ".join(near1) or "none")
             + ". A value near 1 means the generator, fitted on the real pairs matched at IoU 0.5, "
             "reproduces that score's view of the real disagreement.")
    if "sim" in match:
        (rs, rl), (ss, sl) = match["real"], match["sim"]
        loose = [summary[k]["lambda_real"] for k in ("ot_0.2", "ot_0.5", "ot_0.8", "ot_oc_0.5", "alpha_ot",
                                                     "detection_alpha")]
        L.append(
            f"* **Why OT and detection α match at λ ≈ {np.nanmin(loose):.2f}–{np.nanmax(loose):.2f}, not 1.** "
            "Share of boxes matched "
            f"(class-agnostic) at IoU ≥ 0.5 / at GIoU ≥ 0: real r1–r2 {rs:.3f} / {rl:.3f}, simulated "
            f"at λ = 1 {ss:.3f} / {sl:.3f}. The generator reproduces the strict matching it was fitted "
            f"at, but in the real data a further {rl - rs:.3f} of all boxes miss IoU 0.5 yet still "
            f"overlap a counterpart (a loose, GIoU ≥ 0 match), against {sl - ss:.3f} in the simulation, where most "
            "unmatched boxes are removed boxes or false positives placed uniformly in the image. Scores "
            "that give partial credit to loose overlaps (OT's GIoU cost, detection α's GIoU ≥ 0 "
            "matching) therefore see the simulation at λ = 1 as worse than the real raters; scores "
            "that match at IoU 0.5 (F1, KαLOS α, threshold α) see it as equal. σ and KS, which "
            "compare distributions of matched distances, match at λ > 1. This is a limit of the "
            "noise profile (no \"near miss\" error type), not of the scores."
        )
    over = [C.METRIC[k].label for k in keys if summary[k]["range_used"] > 1.0]
    L.append("* **Range used over 100 %** means the score goes below its floor (below chance) by "
             "λ = 5: " + (", ".join(over) if over else "none") + ".\n")
    return "\n".join(L)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one seed")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    seeds = SEEDS[:1] if args.quick else SEEDS
    data = C.load_lvis()
    res = run(data, MAGNITUDES, seeds)
    summary = summarise(res, MAGNITUDES)
    png = plot(summary, MAGNITUDES, C.RESULTS / "full_range.png")
    elapsed = time.perf_counter() - t0
    path = C.write_text(C.RESULTS / "full_range.md", report(summary, res, MAGNITUDES, seeds, png))
    print(f"wrote {C.rel(path)} and {C.rel(png)} ({elapsed:.1f} s)")
    return {"summary": summary, "path": path, "mags": MAGNITUDES, "match": res["match"]}


if __name__ == "__main__":
    main()
