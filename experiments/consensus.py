"""Consensus labels against the truth: the EM against the best-tuned majority vote and WBF (issue 12).

Two corpora with a known truth, each with five simulated raters in five
mixes, at magnitudes ``λ`` in :data:`MAGNITUDES`:

* **demo**: the 300 synthetic scenes of the demo (``generate_scenes``,
  ``ground_truth``), raters from :class:`agreement.simulate.synthetic.RaterProfile`
  (misses, Gaussian box jitter relative to the box, false positives per
  image, class swaps), plus the demo's own five raters;
* **LVIS**: the shared LVIS subset, ``r1`` as the truth, raters from the
  empirical noise generator (:func:`agreement.simulate.noise.simulate`, the shipped
  ``lvis`` profile: misses and false positives at 19.6 % per box, heavy-
  tailed box residuals, rare class mistakes) at magnitude ``λ``.

Mixes (``decent`` is the corpus's standard rater at ``λ``):

* ``equal``: five decent raters;
* ``careful_noisy``: two careful raters (precise boxes, rare false
  positives, some misses) and three noisy ones (loose boxes, most objects
  missed at large λ, many false positives);
* ``spammer``: four decent raters and one who draws random boxes only;
* ``swapper``: four decent raters and one who swaps two classes (circle and
  ellipse; LVIS: its two most frequent classes);
* ``misses_small``: four decent raters and one who misses 85 % of the small
  objects (demo: ``sqrt(w h) < 0.06``; LVIS: under 32 × 32 pixels).

For each, against the truth (F1 at IoU 0.5 class-agnostic and class-aware,
mean IoU of the matched pairs, class accuracy of the matched pairs):

* the EM with default settings (``consensus(data)``);
* the quorum vote at its best quorum and correspondence threshold τ (by F1
  against the truth);
* WBF at its best IoU threshold and confidence threshold (by F1);
* the best single rater (by F1) and a random single rater (the mean over raters);
* the EM's calibration: every unit's ``confidence`` against whether its
  fused box matches a true object (greedy by confidence, IoU 0.5, as COCO
  matches detections), binned in tenths; expected calibration error
  ``ECE = sum_b n_b / n |conf_b - precision_b|``;
* the EM's estimated sensitivities against the simulated ones (the share of
  true objects a rater's boxes match at IoU τ, the EM's correspondence
  threshold: what the EM counts as drawing an object), and its confusion matrix
  of the swapping rater against the simulated swaps.

Writes ``experiments/results/consensus.md``, ``consensus_f1.png``,
``consensus_reliability.png`` and ``consensus_sensitivity.png``. Run from
the repository root: ``.venv/bin/python experiments/consensus.py``
(``--quick``: one magnitude). No FiftyOne.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import time

import common as C
import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.boxes import pairwise_iou
from agreement.methods.consensus import consensus
from agreement.methods.ot.baselines import threshold_match
from agreement.simulate.noise import School, load_profile, simulate
from agreement.simulate.synthetic import (
    DEMO_PROFILES,
    SIMILAR_CLASSES,
    RaterProfile,
    generate_scenes,
    ground_truth,
    simulate_demo_raters,
)

MAGNITUDES = (0.5, 1.0, 2.0)
MIXES = ("equal", "careful_noisy", "spammer", "swapper", "misses_small")
QUORUMS = (0.2, 0.4, 0.6, 0.8, 1.0)
MAJORITY_TAUS = (0.3, 0.4, 0.5)  # the vote tuned over its units' τ too: the EM's τ is chosen from the data
WBF_IOU = (0.3, 0.4, 0.5, 0.55, 0.6, 0.7)
WBF_CONF = (0.2, 0.4, 0.6, 0.8, 1.0)
BINS = 10
SEED = 0
SECTION = "## Consensus labels: the EM against majority vote and WBF"


# --------------------------------------------------------------------------
# Corpora and mixes
# --------------------------------------------------------------------------


def merge_raters(parts: list[MultiRaterAnnotations]) -> MultiRaterAnnotations:
    """The raters of several corpora of the same samples in one corpus."""
    off = np.cumsum([0] + [p.num_raters for p in parts])[:-1]
    cat = lambda f: np.concatenate([getattr(p, f) for p in parts])  # noqa: E731
    first = parts[0]
    return MultiRaterAnnotations(
        sample_ids=first.sample_ids, raters=tuple(r for p in parts for r in p.raters),
        assigned=np.concatenate([p.assigned for p in parts], axis=1), boxes=cat("boxes"), labels=cat("labels"),
        label_ids=cat("label_ids"), sample_index=cat("sample_index"),
        rater_index=np.concatenate([p.rater_index + o for p, o in zip(parts, off)]),
        image_sizes=first.image_sizes, sample_names=first.sample_names,
    )


def _keep_rows(data: MultiRaterAnnotations, keep: np.ndarray) -> MultiRaterAnnotations:
    return MultiRaterAnnotations(
        sample_ids=data.sample_ids, raters=data.raters, assigned=data.assigned, boxes=data.boxes[keep],
        labels=data.labels[keep], label_ids=data.label_ids[keep], sample_index=data.sample_index[keep],
        rater_index=data.rater_index[keep], image_sizes=data.image_sizes, sample_names=data.sample_names,
    )


def demo_mix(scenes, mix: str, lam: float) -> MultiRaterAnnotations:
    """Five demo raters of ``mix`` at magnitude ``lam`` (module docstring)."""
    P = RaterProfile
    decent = dict(miss_rate=min(1.0, 0.05 * lam), position_jitter=0.05 * lam, size_jitter=0.05 * lam,
                  false_positive_rate=0.1 * lam)
    four = [P(f"decent_{i}", **decent) for i in range(1, 5)]
    if mix == "equal":
        profiles = four + [P("decent_5", **decent)]
    elif mix == "careful_noisy":
        careful = dict(miss_rate=min(1.0, 0.1 * lam), position_jitter=0.01 * lam, size_jitter=0.01 * lam,
                       false_positive_rate=0.02 * lam)
        noisy = dict(miss_rate=min(1.0, 0.4 * lam), position_jitter=0.15 * lam, size_jitter=0.15 * lam,
                     false_positive_rate=1.0 * lam)
        profiles = [P(f"careful_{i}", **careful) for i in (1, 2)] + [P(f"noisy_{i}", **noisy) for i in (1, 2, 3)]
    elif mix == "spammer":
        profiles = four + [P("spammer", miss_rate=1.0, false_positive_rate=6.0)]
    elif mix == "swapper":
        profiles = four + [P("swapper", **decent, confusions=(SIMILAR_CLASSES,), confusion_rate=1.0)]
    elif mix == "misses_small":
        profiles = four + [P("misses_small", **decent, small_miss_rate=0.85, small_threshold=0.06)]
    elif mix == "demo_raters":
        profiles = list(DEMO_PROFILES)
    else:
        raise ValueError(mix)
    return simulate_demo_raters(scenes, profiles=profiles, seed=SEED + 1)


def _lvis_sim(truth, names, lam, profile, school=None):
    return simulate(truth, profile=profile, magnitude=lam, num_raters=len(names), seed=SEED, rater="r1", names=names,
                    school=school)


def lvis_mix(truth: MultiRaterAnnotations, mix: str, lam: float) -> MultiRaterAnnotations:
    """Five raters simulated from LVIS ``r1`` (the truth) for ``mix`` at magnitude ``lam``."""
    prof = load_profile("lvis")
    four = _lvis_sim(truth, [f"decent_{i}" for i in range(1, 5)], lam, prof).annotations
    if mix == "equal":
        return merge_raters([four, _lvis_sim(truth, ["decent_5"], lam, prof).annotations])
    if mix == "careful_noisy":
        careful = dataclasses.replace(prof, false_negative_rate=0.4, false_positive_rate=0.04, name="careful")
        noisy = dataclasses.replace(prof, false_negative_rate=0.2, false_positive_rate=0.5, name="noisy")
        return merge_raters([_lvis_sim(truth, ["careful_1", "careful_2"], 0.25 * lam, careful).annotations,
                             _lvis_sim(truth, ["noisy_1", "noisy_2", "noisy_3"], 2.0 * lam, noisy).annotations])
    if mix == "spammer":
        spam = dataclasses.replace(prof, false_negative_rate=1.0, false_positive_rate=1.0, name="spammer")
        return merge_raters([four, _lvis_sim(truth, ["spammer"], 1.0, spam).annotations])
    if mix == "swapper":
        a, b = swapped_classes(truth)
        school = School("swapper", 1, class_map={a: b, b: a})
        return merge_raters([four, _lvis_sim(truth, ["swapper"], lam, prof, school).annotations])
    if mix == "misses_small":
        sim = _lvis_sim(truth, ["misses_small"], lam, prof)
        src = sim.report.source
        box = truth.boxes[np.maximum(src, 0)]
        px = truth.image_sizes[truth.sample_index[np.maximum(src, 0)]]
        small = np.sqrt(box[:, 2] * px[:, 0] * box[:, 3] * px[:, 1]) < 32.0
        rng = np.random.default_rng(SEED)
        drop = (src >= 0) & small & (rng.random(len(src)) < 0.85)
        return merge_raters([four, _keep_rows(sim.annotations, ~drop)])
    raise ValueError(mix)


def swapped_classes(truth: MultiRaterAnnotations) -> tuple[str, str]:
    """The two most frequent classes of the truth (ties by name)."""
    cls, cnt = np.unique(truth.labels.astype(str), return_counts=True)
    order = np.lexsort((cls, -cnt))
    return str(cls[order[0]]), str(cls[order[1]])


# --------------------------------------------------------------------------
# Scoring against the truth
# --------------------------------------------------------------------------


def _by_sample(sample: np.ndarray, S: int) -> np.ndarray:
    return np.searchsorted(sample, np.arange(S + 1))


def score(boxes, labels, sample, truth: MultiRaterAnnotations) -> dict:
    """F1 at IoU 0.5 (class-agnostic and class-aware), mean IoU and class accuracy of the matches."""
    S = truth.num_samples
    order = np.argsort(sample, kind="stable")
    boxes, labels, sample = boxes[order], labels[order], sample[order]
    st = _by_sample(sample, S)
    tp = tpc = same = n_p = n_t = 0
    ious = []
    for s in range(S):
        b, lab = boxes[st[s]:st[s + 1]], labels[st[s]:st[s + 1]]
        t = truth.rows(s, 0)
        tb, tl = truth.boxes[t], truth.labels[t]
        m = threshold_match(b, tb, iou_threshold=0.5)
        mc = threshold_match(b, tb, iou_threshold=0.5, labels_a=list(lab), labels_b=list(tl))
        tp, tpc, n_p, n_t = tp + m.n_matched, tpc + mc.n_matched, n_p + len(b), n_t + len(tb)
        same += int(np.sum(lab[m.rows] == tl[m.cols]))
        ious.extend(m.iou.tolist())
    n = max(n_p + n_t, 1)
    return {"f1": 2 * tp / n, "f1_class": 2 * tpc / n, "miou": float(np.mean(ious)) if ious else np.nan,
            "accuracy": same / tp if tp else np.nan, "precision": tp / max(n_p, 1), "recall": tp / max(n_t, 1)}


def score_result(res, truth) -> dict:
    k = res.is_consensus
    return score(res.boxes[k], res.label[k], res.unit_sample[k], truth)


def score_rater(data, r, truth) -> dict:
    rows = data.rater_index == r
    return score(data.boxes[rows], data.labels[rows], data.sample_index[rows], truth)


def unit_hits(res, truth) -> np.ndarray:
    """Whether each unit's fused box matches a true object: greedy by confidence, IoU >= 0.5 (COCO-style)."""
    hit = np.zeros(res.n_units, bool)
    st = _by_sample(res.unit_sample, truth.num_samples)
    for s in range(truth.num_samples):
        us = np.arange(st[s], st[s + 1])
        t = truth.rows(s, 0)
        if not len(us) or t.stop == t.start:
            continue
        iou = pairwise_iou(res.boxes[us], truth.boxes[t])
        used = np.zeros(iou.shape[1], bool)
        for k in np.argsort(-res.confidence[us], kind="stable"):
            cand = np.where(used, -1.0, iou[k])
            j = int(np.argmax(cand))
            if cand[j] >= 0.5:
                used[j] = hit[us[k]] = True
    return hit


def reliability(conf: np.ndarray, hit: np.ndarray, bins: int = BINS) -> dict:
    """Per bin of confidence (tenths): count, mean confidence, observed precision; and the ECE."""
    b = np.clip((conf * bins).astype(int), 0, bins - 1)
    n = np.bincount(b, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mc = np.bincount(b, conf, bins) / n
        pr = np.bincount(b, hit.astype(float), bins) / n
    ece = float(np.nansum(n / max(len(conf), 1) * np.abs(mc - pr)))
    return {"n": n, "confidence": mc, "precision": pr, "ece": ece}


def simulated_sensitivity(data, truth, iou: float = 0.5) -> np.ndarray:
    """Per rater: the share of true objects (on its samples) its boxes match at IoU ``iou``, one to one.

    Compared with the EM's estimates at the EM's correspondence threshold τ: the EM counts an object
    as drawn by a rater when the rater's box is in its unit, i.e. overlaps the others' at τ; a loose
    box at IoU 0.4 is a drawing at τ = 0.3 and a miss at 0.5."""
    out = np.zeros(data.num_raters)
    for r in range(data.num_raters):
        hit = total = 0
        for s in np.flatnonzero(data.assigned[:, r]):
            t = truth.rows(s, 0)
            m = threshold_match(data.boxes[data.rows(s, r)], truth.boxes[t], iou_threshold=iou)
            hit, total = hit + m.n_matched, total + (t.stop - t.start)
        out[r] = hit / max(total, 1)
    return out


def swap_confusion(data, truth, rater: str, classes: tuple[str, str]) -> np.ndarray:
    """``P(rater says c | true y)`` for ``y, c`` in the two swapped classes, from the matched boxes."""
    r = data.raters.index(rater)
    counts = np.zeros((2, 2))
    for s in range(truth.num_samples):
        a, t = data.rows(s, r), truth.rows(s, 0)
        m = threshold_match(data.boxes[a], truth.boxes[t], iou_threshold=0.5)
        for i, j in zip(m.rows, m.cols):
            y, c = str(truth.labels[t][j]), str(data.labels[a][i])
            if y in classes and c in classes:
                counts[classes.index(y), classes.index(c)] += 1
    with np.errstate(invalid="ignore"):
        return counts / counts.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------
# One cell: every method on one corpus
# --------------------------------------------------------------------------


def _best(runs: list[tuple[dict, dict]]) -> tuple[dict, dict]:
    """The run of highest F1 (then mean IoU)."""
    return max(runs, key=lambda r: (round(r[0]["f1"], 12), r[0]["miou"]))


def run_cell(data, truth, swap: tuple[str, str] | None = None) -> dict:
    """EM (defaults), best majority, best WBF, single raters, calibration and rater estimates of one corpus."""
    t0 = time.perf_counter()
    em = consensus(data)
    t_em = time.perf_counter() - t0
    out = {"em": score_result(em, truth), "em_time": t_em, "em_iter": em.n_iter, "em_tau": em.params["tau"],
           "em_tau05": score_result(consensus(data, tau=0.5), truth)}
    maj = [(score_result(consensus(data, method="majority", quorum=q, tau=t), truth), {"quorum": q, "tau": t})
           for t in MAJORITY_TAUS for q in QUORUMS]
    wbf = [(score_result(consensus(data, method="wbf", tau=t, min_confidence=c), truth), {"iou_thr": t, "conf": c})
           for t in WBF_IOU for c in WBF_CONF]
    out["majority"], out["majority_at"] = _best(maj)
    out["wbf"], out["wbf_at"] = _best(wbf)
    singles = [score_rater(data, r, truth) for r in range(data.num_raters)]
    out["best_single"] = max(singles, key=lambda s: s["f1"])
    out["mean_single"] = {k: float(np.nanmean([s[k] for s in singles])) for k in singles[0]}
    hit = unit_hits(em, truth)
    out["conf"], out["hit"] = em.confidence, hit
    out["reliability"] = reliability(em.confidence, hit)
    out["raters"] = data.raters
    out["se_est"] = em.report.sensitivity
    out["se_sim"] = simulated_sensitivity(data, truth, em.params["tau"])
    if swap is not None and "swapper" in data.raters:
        r = data.raters.index("swapper")
        idx = [em.classes.index(c) for c in swap]
        out["swap_est"] = em.report.confusion[r][np.ix_(idx, idx)]
        out["swap_sim"] = swap_confusion(data, truth, "swapper", swap)
    return out


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


#: Margins smaller than this are ties at the tables' precision (three decimals), not misses.
TIE = 5e-4


def targets(cells: dict) -> dict:
    """The issue's targets, per cell: margins of the EM over the best baselines, ECE, sensitivity error."""
    rows = {}
    for key, c in cells.items():
        base_f1 = max(c["majority"]["f1"], c["wbf"]["f1"])
        base_iou = max(c["majority"]["miou"], c["wbf"]["miou"])
        rows[key] = {
            "f1_margin": c["em"]["f1"] - base_f1, "miou_margin": c["em"]["miou"] - base_iou,
            "ece": c["reliability"]["ece"],
            "se_error": float(np.nanmax(np.abs(c["se_est"] - c["se_sim"]))),
        }
    return rows


def _f(x, d=3):
    return C.fmt(x, d)


def results_table(cells: dict, dataset: str) -> str:
    head = ["mix", "λ", "EM F1 / IoU / acc", "majority* F1 / IoU / acc (q, τ)", "WBF* F1 / IoU / acc (thr, conf)",
            "best rater F1", "random rater F1", "EM − best baseline F1", "ECE", "largest sensitivity error"]
    rows = []
    tg = targets(cells)
    for (ds, mix, lam), c in cells.items():
        if ds != dataset:
            continue
        e, m, w = c["em"], c["majority"], c["wbf"]
        t = tg[(ds, mix, lam)]
        rows.append([
            mix, f"{lam:g}" if lam else "—", f"{_f(e['f1'])} / {_f(e['miou'])} / {_f(e['accuracy'])}",
            f"{_f(m['f1'])} / {_f(m['miou'])} / {_f(m['accuracy'])} ({c['majority_at']['quorum']:g}, "
            f"{c['majority_at']['tau']:g})",
            f"{_f(w['f1'])} / {_f(w['miou'])} / {_f(w['accuracy'])} ({c['wbf_at']['iou_thr']:g}, "
            f"{c['wbf_at']['conf']:g})",
            _f(c["best_single"]["f1"]), _f(c["mean_single"]["f1"]), f"{t['f1_margin']:+.3f}",
            _f(t["ece"]), _f(t["se_error"]),
        ])
    return C.markdown_table(head, rows, align="ll" + "r" * 8)


def sensitivity_table(cells: dict, dataset: str, lam: float) -> str:
    rows = []
    for (ds, mix, l_), c in cells.items():
        if ds != dataset or l_ != lam:
            continue
        cell = ", ".join(f"{name} {_f(e, 2)}/{_f(s, 2)}" for name, e, s in zip(c["raters"], c["se_est"], c["se_sim"]))
        rows.append([mix, cell])
    return C.markdown_table(["mix", "rater: estimated / simulated sensitivity"], rows, align="ll")


def class_table(cells: dict) -> str:
    rows = []
    for (ds, _mix, lam), c in cells.items():
        if "swap_est" not in c:
            continue
        est, sim = c["swap_est"], c["swap_sim"]
        rows.append([ds, f"{lam:g}", f"[[{_f(est[0, 0], 2)}, {_f(est[0, 1], 2)}], [{_f(est[1, 0], 2)}, "
                     f"{_f(est[1, 1], 2)}]]", f"[[{_f(sim[0, 0], 2)}, {_f(sim[0, 1], 2)}], [{_f(sim[1, 0], 2)}, "
                     f"{_f(sim[1, 1], 2)}]]", _f(c["em"]["accuracy"]), _f(c["majority"]["accuracy"]),
                     _f(c["wbf"]["accuracy"])])
    return C.markdown_table(["data", "λ", "swapper's π (estimated)", "simulated", "EM class acc.",
                             "majority* acc.", "WBF* acc."], rows, align="ll" + "r" * 5)


def plot_f1(cells: dict, path) -> None:
    plt = C.pyplot()
    datasets = sorted({k[0] for k in cells})
    fig, axes = plt.subplots(len(datasets), len(MIXES), figsize=(3.0 * len(MIXES), 2.6 * len(datasets)),
                             squeeze=False, sharey="row")
    series = (("em", "EM (default)", "C0"), ("majority", "majority*", "C1"), ("wbf", "WBF*", "C2"),
              ("best_single", "best rater", "C7"), ("mean_single", "random rater", "C8"))
    for i, ds in enumerate(datasets):
        for j, mix in enumerate(MIXES):
            ax = axes[i, j]
            lams = sorted(l_ for (d, m, l_) in cells if d == ds and m == mix)
            for key, label, colour in series:
                ax.plot(lams, [cells[(ds, mix, l_)][key]["f1"] for l_ in lams], "o-", color=colour, label=label,
                        ms=3)
            ax.set_title(f"{ds}: {mix}", fontsize=9)
            ax.set_xlabel("magnitude λ", fontsize=8)
            if j == 0:
                ax.set_ylabel("F1 at IoU 0.5", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0, -1].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    C.savefig(fig, path)


def plot_reliability(cells: dict, path) -> dict:
    plt = C.pyplot()
    datasets = sorted({k[0] for k in cells})
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.8), squeeze=False)
    pooled = {}
    for ax, ds in zip(axes[0], datasets):
        conf = np.concatenate([c["conf"] for k, c in cells.items() if k[0] == ds])
        hit = np.concatenate([c["hit"] for k, c in cells.items() if k[0] == ds])
        rel = pooled[ds] = reliability(conf, hit)
        ok = rel["n"] > 0
        centres = (np.arange(BINS) + 0.5) / BINS
        ax.bar(centres[ok], rel["precision"][ok], width=1.0 / BINS, alpha=0.5, edgecolor="k", label="observed precision")
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
        ax.plot(rel["confidence"][ok], rel["precision"][ok], "o", color="C3", ms=4, label="mean confidence")
        for x, n in zip(centres[ok], rel["n"][ok]):
            ax.text(x, 0.02, str(n), ha="center", fontsize=6, rotation=90)
        ax.set_title(f"{ds}: ECE {rel['ece']:.3f} ({len(conf)} units)", fontsize=9)
        ax.set_xlabel("EM confidence (existence posterior)", fontsize=8)
        ax.set_ylabel("share of units matching a true object", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    C.savefig(fig, path)
    return pooled


def plot_sensitivity(cells: dict, path) -> None:
    plt = C.pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 4.0))
    for ds, marker in (("demo", "o"), ("LVIS", "s")):
        est = np.concatenate([c["se_est"] for k, c in cells.items() if k[0] == ds] or [np.zeros(0)])
        sim = np.concatenate([c["se_sim"] for k, c in cells.items() if k[0] == ds] or [np.zeros(0)])
        ax.plot(sim, est, marker, ms=3, alpha=0.7, label=ds)
    ax.plot([0, 1], [0, 1], "k--", lw=1)
    ax.fill_between([0, 1], [-0.05, 0.95], [0.05, 1.05], color="k", alpha=0.08, label="±0.05")
    ax.set_xlabel("simulated sensitivity (matches truth at IoU 0.5)", fontsize=8)
    ax.set_ylabel("EM estimate", fontsize=8)
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    fig.tight_layout()
    C.savefig(fig, path)


def _cells(quick: bool) -> dict:
    mags = (1.0,) if quick else MAGNITUDES
    cells = {}
    scenes = generate_scenes(num_images=300, seed=SEED)
    truth = ground_truth(scenes)
    for lam in mags:
        for mix in MIXES:
            cells[("demo", mix, lam)] = run_cell(demo_mix(scenes, mix, lam), truth, SIMILAR_CLASSES)
            print(f"   demo {mix} λ={lam:g}: EM F1 {cells[('demo', mix, lam)]['em']['f1']:.3f}", flush=True)
    cells[("demo", "demo_raters", 0.0)] = run_cell(demo_mix(scenes, "demo_raters", 1.0), truth, SIMILAR_CLASSES)
    lvis = C.select_raters(C.load_lvis(), [C.REFERENCE])
    swap = swapped_classes(lvis)
    for lam in mags:
        for mix in MIXES:
            cells[("LVIS", mix, lam)] = run_cell(lvis_mix(lvis, mix, lam), lvis, swap)
            print(f"   LVIS {mix} λ={lam:g}: EM F1 {cells[('LVIS', mix, lam)]['em']['f1']:.3f}", flush=True)
    return cells


def summarise(cells: dict, pooled: dict, seconds: float) -> dict:
    """What the README needs: the targets per cell and overall."""
    tg = targets(cells)
    cn = {k: v["f1_margin"] for k, v in tg.items() if k[1] == "careful_noisy"}
    return {
        "targets": tg, "careful_noisy": cn, "pooled_ece": {ds: r["ece"] for ds, r in pooled.items()},
        "n_units": {ds: int(r["n"].sum()) for ds, r in pooled.items()},
        "f1_misses": {k: v["f1_margin"] for k, v in tg.items() if v["f1_margin"] < -TIE},
        "miou_misses": {k: v["miou_margin"] for k, v in tg.items() if v["miou_margin"] < -TIE},
        "max_ece": max(v["ece"] for v in tg.values()), "max_se_error": max(v["se_error"] for v in tg.values()),
        "tau05": {k: c["em_tau05"]["f1"] - max(c["majority"]["f1"], c["wbf"]["f1"]) for k, c in cells.items()},
        "tau_auto": {k: c["em_tau"] for k, c in cells.items()},
        "middle": {ds: _middle(r) for ds, r in pooled.items()},
        "worst_se": max(((k, r, abs(e - s)) for k, c in cells.items()
                         for r, e, s in zip(c["raters"], c["se_est"], c["se_sim"])), key=lambda x: x[2]),
        "em_time": max(c["em_time"] for c in cells.values()), "seconds": seconds,
        "cells": {k: {m: cells[k][m] for m in ("em", "majority", "wbf", "best_single", "mean_single")}
                  for k in cells},
    }


def _middle(rel: dict) -> dict:
    """Units with confidence in [0.2, 0.8): count, mean confidence, observed precision."""
    sel = slice(2, 8)
    n = rel["n"][sel]
    w = n / max(n.sum(), 1)
    return {"n": int(n.sum()), "confidence": float(np.nansum(w * rel["confidence"][sel])),
            "precision": float(np.nansum(w * rel["precision"][sel]))}


def _calibration_word(m: dict) -> str:
    gap = m["precision"] - m["confidence"]
    return "about right" if abs(gap) <= 0.1 else ("too low" if gap > 0 else "too high")


def _key(k) -> str:
    ds, mix, lam = k
    return f"{ds} {mix}" + (f" λ={lam:g}" if lam else "")


def write_markdown(cells: dict, summary: dict, path) -> None:
    intro = __doc__.split("\n\n", 1)[1].split("Writes ``")[0].strip().replace("``", "`")
    intro = re.sub(r":(data|class|func):`([^`]+)`", r"`\2`", intro).replace(
        "`MAGNITUDES`", "{" + ", ".join(f"{m:g}" for m in MAGNITUDES) + "}")
    L = ["# Consensus labels against the truth (issue 12)\n", intro + "\n",
         "Starred baselines are tuned on the truth (best F1 over the quorum for the vote on the EM's units, "
         "over IoU threshold × confidence threshold for WBF); the EM runs with its defaults (τ chosen from the "
         "data, `min_confidence` = 0.5). "
         "Cells: F1 at IoU 0.5 (class-agnostic) / mean IoU of the matches / class accuracy of the matches.\n"]
    for ds in ("demo", "LVIS"):
        L.append(f"## {ds}\n")
        L.append(results_table(cells, ds))
        L.append("")
    L.append("## Sensitivities at λ = 1 (estimated / simulated)\n")
    for ds in ("demo", "LVIS"):
        L.append(f"**{ds}**\n")
        L.append(sensitivity_table(cells, ds, 1.0))
        L.append("")
    L.append("## The class-swapping rater\n")
    L.append("Estimated confusion rows of the two swapped classes (true class × given class) against the "
             "simulated swaps, and the class accuracy of each consensus.\n")
    L.append(class_table(cells))
    L.append("\n## The EM's τ: chosen from the data, against the fixed τ = 0.5\n")
    L.append("The τ the EM chose (`tau=\"auto\"`, the default: `agreement.methods.consensus.threshold.select_tau`), and "
             "F1 minus the best tuned baseline with it and with the fixed τ = 0.5 (the default before):\n")
    L.append(C.markdown_table(["cell", "τ chosen", "EM(τ auto) − best", "EM(τ=0.5) − best"],
                              [[_key(k), f"{summary['tau_auto'][k]:.2f}", f"{summary['targets'][k]['f1_margin']:+.3f}",
                                f"{v:+.3f}"] for k, v in summary["tau05"].items()], align="lrrr"))
    L.append(f"\nCalibration pooled over every cell: ECE {', '.join(f'{ds} {e:.3f}' for ds, e in summary['pooled_ece'].items())}"
             f" ({', '.join(f'{n} units' for n in summary['n_units'].values())}); "
             "[reliability diagram](consensus_reliability.png), [F1 by mix and λ](consensus_f1.png), "
             "[sensitivities](consensus_sensitivity.png).\n")
    L.append(f"Slowest EM run {summary['em_time']:.1f} s; whole experiment {summary['seconds']:.0f} s.\n")
    C.write_text(path, "\n".join(L))


def readme_section(s: dict) -> str:
    """The README's section on the consensus experiment, from :func:`summarise`'s output."""
    cn = s["careful_noisy"]
    f1m, ioum = s["f1_misses"], s["miou_misses"]
    L = [SECTION + "\n"]
    L.append(
        "`consensus.py` (issue 12): five simulated raters in five mixes (equal; two careful and three noisy; "
        "a spammer; a class swapper; one who misses small objects) on the demo scenes and on LVIS `r1`, at "
        "magnitudes λ ∈ {" + ", ".join(f"{m:g}" for m in MAGNITUDES) + "}, against the truth. The EM runs with "
        "its defaults; the quorum vote and WBF at their best settings *chosen on the truth*. "
        f"[Tables]({'results/consensus.md'}), [F1 by mix](results/consensus_f1.png), "
        "[reliability diagram](results/consensus_reliability.png), "
        "[sensitivities](results/consensus_sensitivity.png).\n")
    rows = []
    for k, c in s["cells"].items():
        if k[2] not in (0.0, 1.0):
            continue
        rows.append([_key(k), C.fmt(c["em"]["f1"]), C.fmt(c["majority"]["f1"]), C.fmt(c["wbf"]["f1"]),
                     C.fmt(c["best_single"]["f1"]), C.fmt(c["em"]["miou"]), C.fmt(c["majority"]["miou"]),
                     C.fmt(c["wbf"]["miou"])])
    L.append(C.markdown_table(["cell (λ = 1)", "EM F1", "majority* F1", "WBF* F1", "best rater F1", "EM IoU",
                               "majority* IoU", "WBF* IoU"], rows))
    L.append("\nTargets:\n")
    n = len(s["targets"])
    L.append(f"* **EM at least as good as the tuned baselines** (F1 at IoU 0.5 and mean IoU; ties within {TIE} "
             "count as equal) in "
             f"{n - len(set(f1m) | set(ioum))} of {n} cells. "
             + ("Missed: " + "; ".join(f"{_key(k)} F1 by {-v:.3f}" for k, v in f1m.items())
                + ("; " if f1m and ioum else "")
                + "; ".join(f"{_key(k)} mean IoU by {-v:.3f}" for k, v in ioum.items()) + "."
                if f1m or ioum else "Never missed."))
    if f1m or ioum:
        worst = min(list(f1m.values()) + list(ioum.values()))
        t05 = min(s["tau05"].values())
        L.append(f"  Every miss is at most {-worst:.3f} and comes from the correspondence, not the decision: "
                 "on LVIS at λ = 2 the loose boxes of one object and the tight neighbours of crowded scenes "
                 "overlap alike, so any τ either splits objects or merges neighbours; WBF, tuned on the "
                 "truth, finds the best compromise per cell. The EM's τ is chosen from the data (the "
                 "threshold of fewest expected splits and merges, estimated from cross-rater and "
                 "same-rater overlaps); with the fixed τ = 0.5 of before it trailed by up to "
                 f"{-min(t05, 0):.3f} F1 (table in `consensus.md`).")
    L.append("* **At least 0.05 F1 better on two careful, three noisy**: "
             + ", ".join(f"{_key(k)} {v:+.3f}" for k, v in cn.items()) + ". Met only where the noisy "
             "raters miss most objects (λ = 2: 80 %): there the quorum vote cannot keep an object only one "
             "careful rater drew without also keeping the noisy raters' false boxes, while the EM accepts it "
             "because careful raters rarely draw false boxes. At λ ≤ 1 almost every object is drawn by at "
             "least two raters, a quorum of 2 of 5 is all it takes, and no method can gain 0.05.")
    mid = s["middle"]
    L.append("* **ECE of `confidence` ≤ 0.05**: pooled "
             + ", ".join(f"{ds} {e:.3f}" for ds, e in s["pooled_ece"].items())
             + f"; worst cell {s['max_ece']:.3f}. The ECE is carried by the many units near 0 and 1; in "
             "[0.2, 0.8) there are few units, and their confidence is "
             + "; ".join(f"{_calibration_word(m)} on {ds} ({m['n']} units: mean confidence {m['confidence']:.2f}, "
                         f"precision {m['precision']:.2f})" for ds, m in mid.items()) + ". The demo's middle "
             "units were, at the fixed τ = 0.5 of before (366 of them), objects only one careful rater drew in "
             "the two-careful mix: the noisy raters' loose boxes of the same object fell into units of their "
             "own, so the noisy raters looked absent and the posterior stayed low; the τ chosen from the data "
             "joins more of those boxes to their object.")
    k, r, e = s["worst_se"]
    L.append(f"* **Sensitivities within 0.05 of the simulated ones**: largest error {e:.3f} ({r}, {_key(k)}).")
    L.append("")
    return "\n".join(L)


def update_readme(section: str, path=None) -> None:
    """Puts ``section`` into ``experiments/README.md`` in place of an earlier one, or before "## Not covered".

    ``run_all.py`` writes the whole README with the same section; this is for
    a run of this experiment alone.
    """
    path = path or C.REPO / "experiments" / "README.md"
    text = path.read_text(encoding="utf-8")
    if SECTION in text:
        head, rest = text.split(SECTION, 1)
        tail = rest[rest.find("\n## "):] if "\n## " in rest else "\n"
        text = head + section.rstrip() + "\n" + tail
    elif "## Not covered" in text:
        head, tail = text.split("## Not covered", 1)
        text = head + section.rstrip() + "\n\n## Not covered" + tail
    else:
        text = text.rstrip() + "\n\n" + section
    C.write_text(path, text)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="λ = 1 only (smoke run)")
    ap.add_argument("--readme", action="store_true", help="also update this section of experiments/README.md")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    cells = _cells(args.quick)
    pooled = plot_reliability(cells, C.RESULTS / "consensus_reliability.png")
    plot_f1(cells, C.RESULTS / "consensus_f1.png")
    plot_sensitivity(cells, C.RESULTS / "consensus_sensitivity.png")
    summary = summarise(cells, pooled, time.perf_counter() - t0)
    write_markdown(cells, summary, C.RESULTS / "consensus.md")
    print(readme_section(summary))
    if args.readme:
        update_readme(readme_section(summary))
    print(f"wrote {C.rel(C.RESULTS / 'consensus.md')} in {summary['seconds']:.0f} s")
    return summary


if __name__ == "__main__":
    main()
