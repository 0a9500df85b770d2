"""The OT paper's controlled-noise experiment on the shared LVIS r1 set.

Prokhorov & Kalinin validate agreement scores by degrading a reference
annotation set (shifting, dropping, label swapping at a noise level γ) and
measuring, per sample, Kendall's τb between the noise level and the score,
and how often a score keeps the order of two adjacent noise levels.

Here: the reference is LVIS rater ``r1`` (200 images, 1,751 boxes); for each
kind and each γ in ``LEVELS`` the corpus is ``r1`` against a perturbed copy
(coupled across γ: the boxes dropped at γ are dropped at every larger γ,
shift directions are fixed, swapped pairs are nested), for ``SEEDS``
independent perturbation streams. Every shipped score is computed
(:data:`common.METRICS`): OT (β = 0.2, 0.5, 0.8), αOT, KαLOS α, σ, distance
α, KS, detection α, classification α, F1@0.5, mean IoU and threshold α.

Statistics:

* **per-sample τb**: for each (sample, seed) series of a per-sample score,
  τb between γ and *minus* the score (+1: falls strictly with each rise;
  levels where the score is undefined are left out; a score constant over
  the levels has no τb). Reported as the mean over series where it is
  defined, with how many are, and as the mean with constant series counted
  as 0 (no response);
* **adjacent order**: pooled over series, the share of consecutive levels
  (γ_k, γ_{k+1}) where the score falls (kept), stays equal (tie) or rises
  (reversed);
* **corpus level**: the same two statistics on the corpus value (αOT, KS
  and classification α exist only there), per seed.

Writes ``experiments/results/ot_paper_noise.md`` and
``ot_paper_noise_{shift,drop,swap}.png``. Run from the repository root:
``.venv/bin/python experiments/ot_paper_noise.py`` (``--quick``: 2 seeds,
6 levels).
"""

from __future__ import annotations

import argparse
import time

import common as C
import numpy as np

LEVELS = tuple(round(0.05 * k, 2) for k in range(11))  # 0, 0.05, ..., 0.5
SEEDS = (0, 1, 2)
PAPER = {"ot": 0.998, "mean_iou": 0.993, "f1": 0.790, "threshold_alpha": 0.790}


def realised_noise(pair, kind: str, gamma: float) -> np.ndarray:
    """The noise a sample actually received: boxes dropped, boxes relabelled, or γ (shift)."""
    S = pair.num_samples
    ref, noisy = pair.raters.index(C.REFERENCE), pair.raters.index("noisy")
    if kind == "shift":
        return np.full(S, float(gamma))
    counts = pair.counts()
    if kind == "drop":
        return (counts[:, ref] - counts[:, noisy]).astype(np.float64)
    ref_rows = pair.rater_index == ref
    label_of = dict(zip(pair.label_ids[ref_rows], pair.labels[ref_rows]))
    rows = np.flatnonzero(pair.rater_index == noisy)
    changed = np.array([pair.labels[i] != label_of[pair.label_ids[i]] for i in rows], dtype=np.float64)
    return np.bincount(pair.sample_index[rows], changed, minlength=S)


def run_series(data, kind: str, levels, seeds) -> dict:
    """Scores of every metric at every level and seed.

    Returns ``{"per_sample": {key: (seeds, levels, S)}, "corpus": {key: (seeds, levels)},
    "sample_mean": {key: (seeds, levels)}, "realised": (seeds, levels, S)}``.
    """
    S = data.num_samples
    realised = np.zeros((len(seeds), len(levels), S))
    per = {m.key: np.full((len(seeds), len(levels), S), np.nan) for m in C.METRICS if m.per_sample}
    cor = {m.key: np.full((len(seeds), len(levels)), np.nan) for m in C.METRICS}
    smean = {k: np.full((len(seeds), len(levels)), np.nan) for k in per}
    for i, seed in enumerate(seeds):
        for j, g in enumerate(levels):
            pair = C.noisy_pair(data, kind, g, seed=seed)
            realised[i, j] = realised_noise(pair, kind, g)
            sc = C.evaluate(pair)
            for k, v in sc.per_sample.items():
                per[k][i, j] = v
                smean[k][i, j] = sc.sample_mean[k]
            for k, v in sc.corpus.items():
                cor[k][i, j] = v
    return {"per_sample": per, "corpus": cor, "sample_mean": smean, "realised": realised}


def statistics(series: dict, levels) -> dict:
    """τb and adjacent-order statistics of every metric for one noise kind."""
    out = {}
    for m in C.METRICS:
        row: dict = {}
        if m.per_sample:
            arr = series["per_sample"][m.key]  # (seeds, levels, S)
            taus = np.concatenate([C.per_sample_tau(levels, arr[i]) for i in range(arr.shape[0])])
            # A series with at least two defined levels but a constant score: no response.
            y = arr.transpose(0, 2, 1).reshape(-1, arr.shape[1])
            has2 = (~np.isnan(y)).sum(axis=1) >= 2
            defined = ~np.isnan(taus)
            row["taus"], row["has2"] = taus, has2
            # τb against the noise each sample actually received (ties in γ that left the
            # sample unchanged are ties here too).
            real = series["realised"]
            rtaus = np.array([
                _tau_xy(real[i, :, s], arr[i, :, s]) for i in range(arr.shape[0]) for s in range(arr.shape[2])
            ])
            row["tau_realised"] = float(np.nanmean(rtaus)) if (~np.isnan(rtaus)).any() else float("nan")
            row["tau_mean"] = float(np.nanmean(taus)) if defined.any() else float("nan")
            row["n_defined"] = int(defined.sum())
            row["n_series"] = int(has2.sum())
            z = np.where(defined, taus, 0.0)[has2]
            row["tau_zero"] = float(z.mean()) if z.size else float("nan")
            kept = tie = rev = 0
            for i in range(arr.shape[0]):
                k, t, r = C.per_sample_adjacent(arr[i])
                kept, tie, rev = kept + k, tie + t, rev + r
            tot = kept + tie + rev
            row["adj"] = (kept / tot, tie / tot, rev / tot) if tot else (np.nan,) * 3
        cor = series["corpus"][m.key]  # (seeds, levels)
        ctau = [C.kendall_tau_b(levels, cor[i]) for i in range(cor.shape[0])]
        row["corpus_tau"] = float(np.nanmean(ctau)) if not np.all(np.isnan(ctau)) else float("nan")
        kept = tie = rev = 0
        for i in range(cor.shape[0]):
            k, t, r = C.adjacent_order(cor[i])
            kept, tie, rev = kept + k, tie + t, rev + r
        row["corpus_adj"] = (kept, tie, rev)
        row["corpus_curve"] = np.nanmean(cor, axis=0)
        if m.per_sample:
            row["sample_mean_curve"] = np.nanmean(series["sample_mean"][m.key], axis=0)
        out[m.key] = row
    return out


def _tau_xy(x, y) -> float:
    """τb between realised noise ``x`` and minus the score ``y`` (NaN when either is constant)."""
    ok = ~np.isnan(y)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0.0:
        return float("nan")
    return C.kendall_tau_b(x[ok], y[ok])


def pooled_tau(stats_by_kind: dict, kinds) -> dict:
    """Per-sample τb pooled over several noise kinds: ``{key: (mean over defined, mean with constant = 0)}``."""
    out = {}
    for m in C.METRICS:
        if not m.per_sample:
            continue
        taus, zs = [], []
        for kind in kinds:
            t, has2 = stats_by_kind[kind][m.key]["taus"], stats_by_kind[kind][m.key]["has2"]
            taus.append(t[~np.isnan(t)])
            zs.append(np.where(np.isnan(t), 0.0, t)[has2])
        t = np.concatenate(taus) if taus else np.zeros(0)
        z = np.concatenate(zs) if zs else np.zeros(0)
        out[m.key] = (float(t.mean()) if t.size else float("nan"), float(z.mean()) if z.size else float("nan"))
    return out


def plot(kind: str, stats: dict, levels, path):
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
            m = C.METRIC[k]
            y = stats[k]["corpus_curve"]
            style = "-" if kind in m.responds else ":"
            ax.plot(levels, y, style, marker=markers[i % len(markers)], ms=4, label=m.label)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(f"noise level γ ({kind})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    axes[0].set_ylabel("corpus score (mean over seeds)")
    fig.suptitle(f"LVIS r1 vs perturbed copy: {kind} (dotted: not expected to respond)", fontsize=11)
    return C.savefig(fig, path)


def _adj(a) -> str:
    return "—" if a is None or np.isnan(a[0]) else f"{a[0]:.2f} / {a[1]:.2f} / {a[2]:.2f}"


def report(stats_by_kind, pooled_all, pooled_resp, levels, seeds, data, pngs) -> str:
    n_boxes = int((data.rater_index == data.raters.index(C.REFERENCE)).sum())
    L = []
    L.append("# The OT paper's controlled-noise experiment on LVIS r1\n")
    L.append(
        f"Generated by `experiments/ot_paper_noise.py`. Reference: LVIS rater `r1` "
        f"({data.num_samples} images, {n_boxes} boxes; the shared subset). Each corpus is `r1` against a "
        f"perturbed copy of itself; γ ∈ {{{', '.join(f'{g:g}' for g in levels)}}}; perturbation seeds "
        f"{list(seeds)} (coupled across γ within a seed). OT: λ = {C.LAM}, paper normalisation; αOT β = 0.5, "
        "exact chance baseline; KαLOS: box IoU, τ = 0.5, greedy, ψ_soft; geometry: GIoU distance, "
        "threshold 0.5, exact chance baseline, no bootstrap; baselines at IoU 0.5 (F1 and mean IoU "
        "class-aware, threshold α class-agnostic).\n"
    )
    L.append(
        "**Reading the numbers.** τb is Kendall's τb between γ and *minus* the score, so +1 means the "
        "score falls strictly at every step (the paper's convention of a positive τb for a good "
        "score). *τb (defined)* averages the (sample, seed) series where τb exists; a series whose "
        "score does not change over γ has no τb and is counted in *n*; *τb (constant = 0)* counts "
        "those as 0. *Adjacent* is the share of consecutive levels whose order the score keeps / "
        "ties / reverses, pooled over series. *Corpus* columns use the corpus value (one per seed): "
        "τb over the levels and adjacent steps kept / tied / reversed. *τb vs realised noise* "
        "replaces γ by what the sample actually received (boxes dropped, labels changed), so that "
        "levels which left a sample unchanged are ties on both sides. ✔ marks a kind the score is "
        "meant to respond to (see the notes at the end).\n"
    )
    # Key table.
    L.append("## Key numbers: per-sample τb\n")
    hdr = ["metric"] + [f"{k}" for k in C.NOISE_KINDS] + ["all kinds (defined)", "all kinds (constant = 0)",
                                                           "responsive kinds (constant = 0)"]
    rows = []
    for m in C.METRICS:
        if not m.per_sample:
            cells = [m.label] + [
                f"corpus {C.fmt(stats_by_kind[k][m.key]['corpus_tau'])}{' ✔' if k in m.responds else ''}"
                for k in C.NOISE_KINDS] + ["—", "—", "—"]
        else:
            cells = [m.label] + [
                f"{C.fmt(stats_by_kind[k][m.key]['tau_mean'])}{' ✔' if k in m.responds else ''}"
                for k in C.NOISE_KINDS
            ] + [C.fmt(pooled_all[m.key][0]), C.fmt(pooled_all[m.key][1]), C.fmt(pooled_resp[m.key][1])]
        rows.append(cells)
    L.append(C.markdown_table(hdr, rows))
    L.append(
        "\nCorpus-only scores (αOT, KS, classification α) show their corpus-level τb over the "
        f"{len(levels)} levels (mean over seeds).\n"
    )
    # Per-kind detail.
    for kind in C.NOISE_KINDS:
        st = stats_by_kind[kind]
        L.append(f"## {kind}\n")
        hdr = ["metric", "meant to respond", "τb (defined)", "n defined / series", "τb (constant = 0)",
               "τb vs realised noise", "adjacent kept / tie / reversed", "corpus τb", "corpus steps kept / tie / rev",
               f"corpus score γ={levels[0]:g}", f"γ={levels[len(levels) // 2]:g}", f"γ={levels[-1]:g}"]
        rows = []
        for m in C.METRICS:
            r = st[m.key]
            curve = r["corpus_curve"]
            ck, ct, cr = r["corpus_adj"]
            rows.append([
                m.label, "✔" if kind in m.responds else "no",
                C.fmt(r.get("tau_mean")), f"{r['n_defined']} / {r['n_series']}" if m.per_sample else "—",
                C.fmt(r.get("tau_zero")), C.fmt(r.get("tau_realised")) if kind != "shift" else "(= γ)",
                _adj(r.get("adj")), C.fmt(r["corpus_tau"]), f"{ck} / {ct} / {cr}",
                C.fmt(curve[0]), C.fmt(curve[len(levels) // 2]), C.fmt(curve[-1]),
            ])
        L.append(C.markdown_table(hdr, rows, align="ll" + "r" * 10))
        L.append(f"\n![{kind}]({pngs[kind].name})\n")
    L.append(_comparison(stats_by_kind, pooled_all, pooled_resp, data, levels))
    L.append("## What each score is meant to respond to\n")
    L.append(C.markdown_table(["metric", "responds to", "why"],
                              [[m.label, ", ".join(k for k in C.NOISE_KINDS if k in m.responds),
                                C.RESPONSE_NOTES[m.key]] for m in C.METRICS], align="lll"))
    return "\n".join(L)


def _comparison(st, pooled_all, pooled_resp, data, levels) -> str:
    """The honest comparison with the paper's numbers (every figure in the text is computed)."""
    def t(kind, key, field="tau_mean"):
        return st[kind][key][field]

    counts = data.counts()[:, data.raters.index(C.REFERENCE)]
    few = int(((counts >= 1) & (counts <= 3)).sum())
    ot = [t(k, "ot_0.5") for k in C.NOISE_KINDS]
    f1 = [t(k, "f1") for k in C.NOISE_KINDS]
    ta = [t(k, "threshold_alpha") for k in C.NOISE_KINDS]
    ot_adj = {k: st[k]["ot_0.5"]["adj"] for k in C.NOISE_KINDS}
    miou = st["shift"]["mean_iou"]["corpus_curve"]
    sig = st["shift"]["sigma"]["corpus_curve"]
    first_sig = next((g for g, v in zip(levels, sig) if v < 1.0 - 1e-9), None)
    det_adj = st["drop"]["detection_alpha"]["adj"]
    ranked = sorted(
        ((pooled_all[k][0], C.METRIC[k].label) for k in ("ot_0.5", "kalos", "f1", "threshold_alpha")),
        reverse=True,
    )
    L = ["## Against the paper\n"]
    L.append(C.markdown_table(
        ["metric", "paper (its data)", "here: all kinds, τb (defined)", "here: all kinds (constant = 0)",
         "here: shift / drop / swap", "here: drop / swap vs realised noise"],
        [
            [C.METRIC[k].label, PAPER["ot" if k == "ot_0.5" else k], C.fmt(pooled_all[k][0]),
             C.fmt(pooled_all[k][1]), " / ".join(C.fmt(t(kind, k)) for kind in C.NOISE_KINDS),
             " / ".join(C.fmt(t(kind, k, "tau_realised")) for kind in ("drop", "swap"))]
            for k in ("ot_0.5", "mean_iou", "f1", "threshold_alpha")
        ], align="lrrrrr"))
    L.append("")
    L.append(
        "The paper's figures are single numbers on its own data; we do not have its per-kind "
        "breakdown, its noise grid or how it pooled kinds and samples, so the comparison is of "
        "orders of magnitude and rankings, not of digits. What we see and why:\n"
    )
    L.append(
        f"* **OT**: τb {C.fmt(ot[0])} under shift, {C.fmt(ot[1])} under drop and {C.fmt(ot[2])} "
        "under swap. OT never reverses the order of two levels (reversed share "
        f"{ot_adj['shift'][2]:.2f} / {ot_adj['drop'][2]:.2f} / {ot_adj['swap'][2]:.2f}); what keeps "
        "τb below the paper's 0.998 under drop and swap is **ties**: dropping removes "
        "`floor(γ n + u)` boxes and swapping exchanges `floor(γ n / 2 + u)` label pairs, so on an "
        "image with few boxes consecutive γ often change nothing and the score ties "
        f"({ot_adj['drop'][1]:.0%} of adjacent steps under drop, {ot_adj['swap'][1]:.0%} under swap). "
        f"{few} of the {data.num_samples} LVIS images hold 1–3 boxes (median {np.median(counts):g}); "
        "swapping two boxes of the same class changes nothing, which adds ties on single-class "
        "images. Against the noise a sample actually received, OT's τb is "
        f"{C.fmt(t('drop', 'ot_0.5', 'tau_realised'))} (drop) and "
        f"{C.fmt(t('swap', 'ot_0.5', 'tau_realised'))} (swap). The three β give the same τb: for "
        "a given sample, each β is a monotone function of the same number of dropped or relabelled "
        "boxes, so only the range of the score changes with β (see the plots)."
    )
    L.append(
        f"* **Mean IoU** (the mean IoU of *matched* pairs, as shipped) does not respond to drop or "
        "swap (class-aware matching): the surviving pairs stay exact, the score stays 1, τb is "
        "undefined on almost every series (see *n defined*). Under shift it falls while pairs still "
        "clear IoU 0.5, then **rises** as the worst-shifted pairs drop below the threshold and "
        f"leave the average (corpus mean IoU {C.fmt(miou[0])} → {C.fmt(np.nanmin(miou))} at "
        f"γ = {levels[int(np.nanargmin(miou))]:g} → {C.fmt(miou[-1])} at γ = {levels[-1]:g}): "
        f"per-sample τb {C.fmt(t('shift', 'mean_iou'))}, corpus τb {C.fmt(t('shift', 'mean_iou', 'corpus_tau'))}. "
        "A pooled τb near the paper's 0.993 can only come from averaging the series where it is "
        "defined and varies; with constant series counted as no response it is "
        f"{C.fmt(pooled_all['mean_iou'][1])}. We cannot tell from the published figure whether "
        "the paper's mean IoU counts unmatched boxes (as 0) or only shift; ours is the shipped one."
    )
    L.append(
        f"* **F1@0.5 and threshold α** are threshold scores: under shift every box of an image "
        "moves by the same γ box sizes, so an image's score falls in one or two steps as its "
        f"boxes cross IoU 0.5 and ties elsewhere (τb {C.fmt(f1[0])} and {C.fmt(ta[0])}); under drop "
        "and swap their tie structure is OT's. Pooled over kinds (defined series) the order is "
        + ", ".join(f"{lab} {C.fmt(v)}" for v, lab in ranked)
        + ": OT above F1 and threshold α as in the paper, but the gap is smaller than 0.998 vs "
        "0.790 because ties from the perturbation hit OT as much as the threshold scores. The gap "
        "is clearest under shift (OT "
        f"{C.fmt(ot[0])} against {C.fmt(f1[0])} / {C.fmt(ta[0])})."
    )
    L.append(
        "* **Per-sample KαLOS α and threshold α** are undefined at γ = 0 on single-class images "
        "(no variation, D_e = 0) and become defined once noise adds `no_object` values; τb uses the "
        "defined levels only."
    )
    L.append(
        "* **Localisation-only scores** (σ, distance α, KS, mean IoU) do not respond to drop or swap, "
        "and detection α does not respond to shift up to half a box (its matching accepts "
        "GIoU ≥ 0), by design; classification α responds to swap only. σ saturates: it stays 1 "
        "until matched distances cross the 5th percentile of the chance distribution "
        f"(first below 1 at γ = {first_sig if first_sig is not None else '—'}), then falls steeply."
    )
    L.append(
        "* **Per-sample σ, distance α and detection α** (per-sample forms derived here from the "
        "shipped per-sample matched distances and unmatched counts) are measured against the "
        "*corpus* chance baseline (`q_p(B)`, `mean(B)`, `U_e`), which itself moves with the noise. "
        "Under drop the chance share of unmatched annotations `U_e` rises a little with every level "
        "(the perturbed sets get smaller), so a sample whose own unmatched share ties between two "
        "levels sees its α rise slightly: per-sample detection α keeps / "
        f"ties / reverses {det_adj[0]:.2f} / {det_adj[1]:.2f} / {det_adj[2]:.2f} of adjacent steps, "
        "while the corpus detection α falls at every step.\n"
    )
    return "\n".join(L)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 seeds, 6 levels")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    levels = LEVELS[::2] if args.quick else LEVELS
    seeds = SEEDS[:2] if args.quick else SEEDS
    data = C.load_lvis()
    series = {kind: run_series(data, kind, levels, seeds) for kind in C.NOISE_KINDS}
    stats = {kind: statistics(series[kind], levels) for kind in C.NOISE_KINDS}
    pooled_all = pooled_tau(stats, C.NOISE_KINDS)
    pooled_resp = {}
    for m in C.METRICS:
        if m.per_sample:
            kinds = [k for k in C.NOISE_KINDS if k in m.responds]
            pooled_resp[m.key] = pooled_tau(stats, kinds)[m.key]
    pngs = {kind: plot(kind, stats[kind], levels, C.RESULTS / f"ot_paper_noise_{kind}.png")
            for kind in C.NOISE_KINDS}
    elapsed = time.perf_counter() - t0
    md = report(stats, pooled_all, pooled_resp, levels, seeds, data, pngs)
    path = C.write_text(C.RESULTS / "ot_paper_noise.md", md)
    print(f"wrote {C.rel(path)} and {len(pngs)} PNGs ({elapsed:.1f} s)")
    return {"stats": stats, "pooled_all": pooled_all, "pooled_resp": pooled_resp, "levels": levels,
            "seeds": seeds, "path": path}


if __name__ == "__main__":
    main()
