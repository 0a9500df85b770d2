"""Which images need another rater's boxes? Replaying the relabel rules on a generated crowd with known truth (issue 52).

**Crowd.** Per seed, 300 images with 0 to 6 true objects each (sides log-uniform in ``[0.03, 0.3]`` of the
image, 3 classes: the truth of :func:`agreement.simulate.synthetic.crowd.crowd_corpus`), and a pool of 20
raters who could each label every image, with their own noise profile (:data:`PROFILES`: the miss rate, the
false positives per image, the Gaussian jitter of a box's centre and sides relative to its size, the chance of
naming a random class): 6 careful, 8 average, 4 sloppy raters and 2 spammers. A rater's labels of an image are
drawn once per seed (:func:`pool`), so every rule reveals the same labels for the same (image, rater).

**Replay** (per seed): each image starts with 2 raters of the pool drawn at random, a fifth of them with 1
(the start: ~540 rater-images). Budgets of extra rater-images: 5, 10, 25 and 50 % of the start, spent in
rounds of :data:`ROUND` % (one more rater per chosen image per round, the image's next unused pool rater in one
random order per image, the same for every rule: a rule only chooses *which image* gets its next rater);
between rounds the EM consensus (:func:`agreement.methods.consensus.consensus`, defaults) is refitted and the
rule re-ranks. Rules: ``expected_error_reduction``
(:func:`agreement.methods.planning.relabel_boxes.consensus_box_relabel`, look-ahead 3 and one step), lowest
agreement first (share of an image's labels that agree with the consensus; images with one rater first),
fewest raters first and random. Score: F1 of the consensus labels against the truth, a match being one
true object of the same class at IoU ≥ 0.5 (one-to-one, Hungarian on IoU); mean ± sd over 10 seeds.

Writes ``experiments/results/relabel_replay_boxes.md``. Run from the repository root:
``.venv/bin/python experiments/relabel_replay_boxes.py`` (``--quick``: 3 seeds, budgets 5 and 10 %). No FiftyOne.
"""

from __future__ import annotations

import argparse
import time

import common as C
import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.boxes import pairwise_iou
from agreement.methods.consensus import consensus
from agreement.methods.planning.relabel_boxes import consensus_box_relabel
from agreement.simulate.synthetic.crowd import crowd_corpus

N_IMAGES, N_POOL, START, ONE_RATER = 300, 20, 2, 0.2
BUDGETS = (5, 10, 25, 50)  # % of the start's rater-images
ROUND = 5  # % of the start spent per round
SEEDS = tuple(range(10))
#: (how many raters, miss rate, false positives per image, jitter, class swap)
PROFILES = ((6, 0.05, 0.05, 0.03, 0.02), (8, 0.15, 0.15, 0.06, 0.05), (4, 0.35, 0.4, 0.12, 0.15),
            (2, 0.6, 1.0, 0.2, 0.5))
RULES = {  # row name -> (rule, keyword arguments)
    "expected error reduction (look-ahead 3)": ("expected_error_reduction", {}),
    "expected error reduction, one step": ("expected_error_reduction", {"lookahead": 1}),
    "lowest agreement first": ("lowest_agreement", {}),
    "fewest raters first": ("fewest_raters", {}),
    "random": ("random", {}),
}


def _rater_profiles() -> np.ndarray:
    """``(R, 4)`` miss, false positives, jitter and class swap of every pool rater."""
    return np.array([p[1:] for p in PROFILES for _ in range(p[0])], dtype=np.float64)


def pool(seed: int) -> tuple[MultiRaterAnnotations, MultiRaterAnnotations]:
    """``(every pool rater's labels of every image, the truth)`` for ``seed`` (module docstring)."""
    _, truth = crowd_corpus(N_IMAGES, 2, raters_per_sample=2, min_objects=0, max_objects=6, num_classes=3, seed=seed)
    rng = np.random.default_rng(10_000 + seed)
    prof = _rater_profiles()
    R, S = len(prof), N_IMAGES
    tb, tc, ts = truth.boxes, np.array([int(str(c)[1:]) for c in truth.labels]), truth.sample_index
    boxes, cls, s_idx, r_idx = [], [], [], []
    for r, (miss, fp, jitter, swap) in enumerate(prof):
        keep = rng.random(len(tb)) >= miss
        b, c = tb[keep], tc[keep]
        wh = b[:, 2:]
        centre = b[:, :2] + wh / 2 + rng.normal(0, jitter, wh.shape) * wh
        size = np.clip(wh * (1 + rng.normal(0, jitter, wh.shape)), 1e-3, 1)
        xy = np.clip(centre - size / 2, 0, 1 - size)
        c = np.where(rng.random(len(c)) < swap, rng.integers(0, 3, len(c)), c)
        n_fp = rng.poisson(fp, S)
        fs = np.repeat(np.arange(S), n_fp)
        side = np.exp(rng.uniform(np.log(0.03), np.log(0.3), (len(fs), 2)))
        fb = np.concatenate([rng.uniform(0, 1, (len(fs), 2)) * (1 - side), side], axis=1)
        boxes += [np.concatenate([xy, size], axis=1), fb]
        cls += [c, rng.integers(0, 3, len(fs))]
        s_idx += [ts[keep], fs]
        r_idx += [np.full(int(keep.sum()) + len(fs), r)]
    names = np.array(["c0", "c1", "c2"], dtype=object)
    b = np.concatenate(boxes)
    full = MultiRaterAnnotations(
        sample_ids=truth.sample_ids, raters=tuple(f"p{r:02d}" for r in range(R)), assigned=np.ones((S, R), bool),
        boxes=b, labels=names[np.concatenate(cls)], label_ids=np.array([f"a{i}" for i in range(len(b))], dtype=object),
        sample_index=np.concatenate(s_idx), rater_index=np.concatenate(r_idx), image_sizes=truth.image_sizes)
    return full, truth


def revealed(full: MultiRaterAnnotations, assigned: np.ndarray) -> MultiRaterAnnotations:
    """The corpus of the (image, rater) cells ``assigned`` of the pool ``full``."""
    rows = assigned[full.sample_index, full.rater_index]
    return MultiRaterAnnotations(
        sample_ids=full.sample_ids, raters=full.raters, assigned=assigned, boxes=full.boxes[rows],
        labels=full.labels[rows], label_ids=full.label_ids[rows], sample_index=full.sample_index[rows],
        rater_index=full.rater_index[rows], image_sizes=full.image_sizes)


def scores(res, truth: MultiRaterAnnotations) -> tuple[float, int]:
    """``(F1, errors)`` of the consensus labels against the truth. F1: a match is one true object of the same class
    at IoU >= 0.5, one-to-one (Hungarian on IoU). Errors, as the rule counts them: spurious consensus labels and
    missed true objects (class-agnostic matching at IoU >= 0.5) plus matched labels of the wrong class."""
    kept = np.flatnonzero(res.is_consensus)
    cs, cb, cl = res.unit_sample[kept], res.boxes[kept], np.asarray(res.label)[kept]
    tp = tp_any = wrong = 0
    for s in np.unique(np.concatenate([cs, truth.sample_index])).tolist():
        a, b = np.flatnonzero(cs == s), np.flatnonzero(truth.sample_index == s)
        if not len(a) or not len(b):
            continue
        iou = pairwise_iou(cb[a], truth.boxes[b])
        same = cl[a][:, None] == truth.labels[b][None, :]
        i, j = linear_sum_assignment(-(iou * same))
        tp += int(((iou * same)[i, j] >= 0.5).sum())
        i, j = linear_sum_assignment(-iou)
        hit = iou[i, j] >= 0.5
        tp_any += int(hit.sum())
        wrong += int((~same[i, j] & hit).sum())
    f1 = 2 * tp / max(len(kept) + len(truth), 1)
    return f1, (len(kept) - tp_any) + (len(truth) - tp_any) + wrong


def replay(seed: int, budgets: tuple[int, ...]) -> dict[str, dict[int, float]]:
    """F1 per rule and budget for one seed (budget 0: the start)."""
    full, truth = pool(seed)
    rng = np.random.default_rng(seed)
    S, R = full.assigned.shape
    queue = np.argsort(rng.random((S, R)), axis=1)  # each image's pool raters in one random order
    start_n = np.where(rng.random(S) < ONE_RATER, 1, START)
    n_start = int(start_n.sum())
    per_round = max(1, round(n_start * ROUND / 100))
    ends = {b: round(n_start * b / 100) for b in budgets}
    out: dict[str, dict[int, float]] = {}
    for name, (rule, kwargs) in RULES.items():
        n = start_n.copy()
        spent = 0
        out_f1: dict[int, float] = {}
        expected: dict[int, float] = {}
        counted: dict[int, float] = {}
        while True:
            assigned = np.zeros((S, R), bool)
            np.put_along_axis(assigned, queue, np.arange(R)[None, :] < n[:, None], axis=1)
            data = revealed(full, assigned)
            res = consensus(data)
            pr = consensus_box_relabel(res, data, rule=rule, seed=seed * 1000 + spent, **kwargs)
            if spent == 0 or spent in ends.values():
                f1, errors = scores(res, truth)
                for b in [0] * (spent == 0) + [b for b, e in ends.items() if e == spent]:
                    out_f1[b], expected[b], counted[b] = f1, float(pr.error_now.sum()), errors
            if spent >= max(ends.values()):
                break
            take = min(per_round, max(ends.values()) - spent, *(e - spent for e in ends.values() if e > spent))
            order = pr.order[n[pr.order] < R]
            n[order[:take]] += 1
            spent += take
        out[name] = out_f1
        out[f"{name}/expected"], out[f"{name}/counted"] = expected, counted
    return out


def _ms(x: list[float]) -> str:
    return f"{np.mean(x):.3f} ± {np.std(x, ddof=1) if len(x) > 1 else 0.0:.3f}"


def table(runs: list[dict], budgets: tuple[int, ...]) -> str:
    """The markdown table: F1 per rule (rows) and budget (columns), mean ± sd over the seeds."""
    head = "| rule | start | " + " | ".join(f"+{b} %" for b in budgets) + " |"
    lines = [head, "|" + "---|" * (len(budgets) + 2)]
    for name in RULES:
        cells = [_ms([r[name][0] for r in runs])] + [_ms([r[name][b] for r in runs]) for b in budgets]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def calibration_table(runs: list[dict], budgets: tuple[int, ...]) -> str:
    """The rule's expected consensus errors (the sum of ``error_now``) beside the errors counted against the truth,
    per rule and budget, mean ± sd over the seeds."""
    head = "| rule | errors | start | " + " | ".join(f"+{b} %" for b in budgets) + " |"
    lines = [head, "|" + "---|" * (len(budgets) + 3)]
    for name in ("expected error reduction (look-ahead 3)", "random"):
        for what in ("expected", "counted"):
            vals = [r[f"{name}/{what}"] for r in runs]
            cells = [f"{np.mean([v[b] for v in vals]):.0f} ± {np.std([v[b] for v in vals], ddof=1):.0f}"
                     for b in (0, *budgets)]
            lines.append(f"| {name} | {what} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds, budgets 5 and 10 %")
    args = ap.parse_args(argv)
    seeds, budgets = (SEEDS[:3], BUDGETS[:2]) if args.quick else (SEEDS, BUDGETS)
    t0 = time.time()
    runs = [replay(s, budgets) for s in seeds]
    tab = table(runs, budgets)
    wins = {b: [r["expected error reduction (look-ahead 3)"][b] - max(
        r[k][b] for k in ("lowest agreement first", "fewest raters first", "random")) for r in runs]
        for b in budgets}
    text = "\n".join([
        "# Relabel replay on a generated box crowd (issue 52)", "",
        f"Generated by `experiments/relabel_replay_boxes.py` ({len(seeds)} seeds, {time.time() - t0:.0f} s). "
        f"{N_IMAGES} images, a pool of {N_POOL} raters (6 careful, 8 average, 4 sloppy, 2 spammers), 2 raters "
        f"per image at the start ({int(ONE_RATER * 100)} % with 1); extra rater-images in rounds of {ROUND} % of "
        "the start, the EM consensus refitted between rounds. F1 of the consensus against the known truth "
        "(same class, IoU ≥ 0.5), mean ± sd over the seeds.", "",
        tab, "",
        "F1 gain of the rule (look-ahead 3) over the best simple rule of the same seed, mean ± sd over the "
        "seeds: " + ", ".join(f"+{b} %: {np.mean(wins[b]):+.4f} ± {np.std(wins[b], ddof=1):.4f}" for b in budgets)
        + f" (positive on every seed at {sum(min(w) > 0 for w in wins.values())} of the {len(budgets)} budgets).", "",
        "How well the rule's model counts the errors: the expected number of consensus errors (the sum of the "
        "samples' `error_now`: spurious and missed objects and wrong classes) beside the errors counted against "
        "the truth (spurious labels and missed objects by class-agnostic matching at IoU ≥ 0.5, plus matched "
        "labels of the wrong class); boxes matched at IoU < 0.5 count as one spurious and one missed object, "
        "which the model (existence and class only) does not predict.", "",
        calibration_table(runs, budgets), ""])
    (C.RESULTS / "relabel_replay_boxes.md").write_text(text, encoding="utf-8")
    print(text)
    return {"runs": runs, "wins": wins}


if __name__ == "__main__":
    main()
