"""How many raters per site does the AdultContent3 task need? ``plan_raters``' pure core on a real crowd.

The shared AdultContent3 crowd (``../shared/data/adultcontent3_hcomp2010_labels.tsv``: 496 web sites, 338
Mechanical Turk workers, categories G, P, R, X; no gold) is read as ``import_judgements`` reads it by
:func:`agreement.io.judgements.read_judgements`: categories ``("G", "P", "R", "X")``, the 737 ``B``
judgements dropped (``unknown_labels="drop"``: the worker stays assigned, a missing value), repeated
(worker, site) judgements resolved to the worker's mode (``repeated="mode"``, the default). That leaves
16 to 78 workers per site (median 71).

Measured with :func:`agreement.methods.planning.raters.rater_curve` (seeded, rater subsampling within sites):

(a) **Nominal α** against ``k`` raters per site, ``k = 2 .. 12`` and ``16`` (every site keeps ``k``
    raters) and ``k = 20, 30, 40`` (only the sites with that many), with two 90 % intervals: over which raters label
    each site (``resample_items=False``, what ``plan_raters`` shows) and, in addition, over the sample of
    sites (``resample_items=True``, a bootstrap). The ``k`` where the interval's half-width first drops to
    0.02 or below, and the Spearman–Brown consensus reliability with the ``k`` for 0.8 and 0.9.
(b) **Consensus accuracy** against ``k``: the share of sites whose ``k``-rater consensus (majority vote, ties
    counted ``1/t``, ``k = 1 .. 16`` and ``20 .. 60``; MACE at a few ``k``) equals the reference, the MACE consensus
    of the full crowd (the project's default class consensus); the smallest ``k`` whose 90 % lower bound
    reaches 95 %. The reference's own uncertainty: the agreement of the full crowd's MACE with its majority
    vote and Dawid–Skene, its mean posterior confidence, and split halves (each site's raters split in two
    at random, 3 seeds: how often the two halves' MACE consensus agree, and each with the full crowd).

Writes ``experiments/results/plan_raters.md``. Run from the repository root:
``.venv/bin/python experiments/plan_raters.py`` (``--quick``: fewer draws). About 2 minutes on 2 cores.
No FiftyOne. Skipped with a message when the shared data is absent.
"""

from __future__ import annotations

import argparse
import time

import common as C
import numpy as np

from agreement.io.judgements import read_judgements
from agreement.methods.consensus.class_labels import class_consensus
from agreement.methods.planning.consensus_accuracy import FittedModel, consensus_accuracy_statistic
from agreement.methods.planning.raters import (
    RaterCurve,
    alpha_statistic,
    consensus_reliability,
    rater_curve,
    raters_needed,
)

K = 4
ADULT = C.REPO.parent / "shared" / "data" / "adultcontent3_hcomp2010_labels.tsv"
ALPHA_KS = tuple(range(2, 13)) + (16, 20, 30, 40)
VOTE_KS = tuple(range(1, 17)) + (20, 25, 30, 40, 50, 60)
MACE_KS = (1, 3, 9, 25, 40)
CONFIDENCE = 0.9
HALF_WIDTH = 0.02
ACCURACY = 0.95


def load() -> tuple[np.ndarray, str]:
    """The crowd as ``(sites, workers)`` float codes (NaN missing) and the reader's report."""
    ratings, report = read_judgements(ADULT, categories=("G", "P", "R", "X"), unknown_labels="drop")
    return np.where(ratings.codes >= 0, ratings.codes, np.nan).astype(np.float64), report.summary()


def first_k(curve: RaterCurve, ok) -> int | None:
    """The first measured ``k`` where ``ok(i)`` holds (``None``: none)."""
    return next((k for i, k in enumerate(curve.ks) if ok(i)), None)


def alpha_part(values: np.ndarray, repeats: int) -> dict:
    stat = alpha_statistic(level="nominal")
    raters = rater_curve(values, statistic=stat, ks=ALPHA_KS, repeats=repeats, confidence=CONFIDENCE)
    both = rater_curve(values, statistic=stat, ks=ALPHA_KS, repeats=repeats, confidence=CONFIDENCE,
                       resample_items=True)
    half = {name: first_k(c, lambda i, c=c: (c.high[i] - c.low[i]) / 2 <= HALF_WIDTH)
            for name, c in (("raters", raters), ("raters_and_sites", both))}
    return {"raters": raters, "both": both, "half": half, "alpha_all": stat(values),
            "needed": {t: raters_needed(raters, target=t) for t in (0.8, 0.9)},
            "needed_both": {t: raters_needed(both, target=t) for t in (0.8, 0.9)}}


def reference_part(values: np.ndarray, seeds) -> dict:
    """The full crowd's MACE consensus and its uncertainty (module docstring)."""
    codes = np.where(np.isnan(values), -1, values).astype(np.int64)
    full = class_consensus(codes, K, method="mace", orientation="units_by_raters")
    other = {m: class_consensus(codes, K, method=m, orientation="units_by_raters").labels
             for m in ("majority", "dawid_skene")}
    halves, with_full = [], []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        keys = np.where(codes >= 0, rng.random(codes.shape), np.inf)
        rank = np.argsort(np.argsort(keys, axis=1), axis=1)
        n = (codes >= 0).sum(axis=1, keepdims=True)
        a = np.where(rank < n // 2, codes, -1)
        b = np.where((rank >= n // 2) & (codes >= 0), codes, -1)
        la = class_consensus(a, K, method="mace", seed=seed, orientation="units_by_raters").labels
        lb = class_consensus(b, K, method="mace", seed=seed, orientation="units_by_raters").labels
        halves.append(float((la == lb).mean()))
        with_full.append(float(((la == full.labels).mean() + (lb == full.labels).mean()) / 2))
    return {"labels": full.labels.astype(np.float64), "confidence": float(np.mean(full.confidence)),
            "model": FittedModel(full.class_prior, full.rater_confusion),
            "low_confidence": int((full.confidence < 0.9).sum()),
            "agree": {m: float((lab == full.labels).mean()) for m, lab in other.items()},
            "halves": np.array(halves), "half_vs_full": np.array(with_full),
            "prior": np.bincount(full.labels, minlength=K) / len(full.labels)}


def accuracy_part(values: np.ndarray, reference: np.ndarray, model: FittedModel, repeats: int,
                  mace_repeats: int) -> dict:
    vote = rater_curve(values, statistic=consensus_accuracy_statistic(reference, n_classes=K), ks=VOTE_KS,
                       repeats=repeats, confidence=CONFIDENCE)
    mace = rater_curve(values, statistic=consensus_accuracy_statistic(reference, method="mace", n_classes=K),
                       ks=MACE_KS, repeats=mace_repeats, confidence=CONFIDENCE)
    fitted = rater_curve(values, statistic=consensus_accuracy_statistic(reference, method="fitted", n_classes=K,
                                                                        model=model),
                         ks=VOTE_KS, repeats=repeats, confidence=CONFIDENCE)
    curves = (("vote", vote), ("mace", mace), ("fitted", fitted))
    return {"vote": vote, "mace": mace, "fitted": fitted,
            "needed": {name: raters_needed(c, target=ACCURACY, projection="none") for name, c in curves},
            "targets": {(name, t): (raters_needed(c, target=t, projection="none").k,
                                    first_k(c, lambda i, c=c, t=t: c.mean[i] >= t))
                        for name, c in curves for t in (0.85, 0.9, ACCURACY)}}


def _k_text(needed) -> str:
    if needed.k is None:
        return f"none ({needed.reason})"
    return f"**{needed.k}** ({'measured' if needed.measured else 'projected'}; {needed.labels:,} labels)"


def alpha_lines(a: dict) -> list[str]:
    r, b = a["raters"], a["both"]
    cons = r.consensus()
    rows = []
    for i, k in enumerate(r.ks):
        rows.append([k, r.n_items[i], C.fmt(r.mean[i]), f"[{C.fmt(r.low[i])}, {C.fmt(r.high[i])}]",
                     C.fmt((r.high[i] - r.low[i]) / 2), f"[{C.fmt(b.low[i])}, {C.fmt(b.high[i])}]",
                     C.fmt((b.high[i] - b.low[i]) / 2), C.fmt(cons["low"][i])])
    head = ["k", "sites", "α (mean)", "90 % over raters", "half-width", "90 % over raters and sites",
            "half-width", "consensus reliability (SB of the lower bound)"]
    L = ["## (a) Nominal α against raters per site\n",
         f"α of the whole crowd: {C.fmt(a['alpha_all'])}. {r.repeats} draws per k, seed {r.seed}. Above k = 16 "
         "only the sites with at least k workers are kept (the column 'sites').\n",
         C.markdown_table(head, rows), ""]
    h = a["half"]
    L.append(f"- α's 90 % interval half-width is ≤ {HALF_WIDTH} first at **k = {h['raters']}** when the interval "
             "covers which workers label each site (what `plan_raters` shows), and from "
             f"**k = {h['raters_and_sites']}** when it also resamples the 496 sites"
             + (" (never, within the measured k: the sample of sites alone keeps it wider)"
                if h["raters_and_sites"] is None else "") + ".")
    for t in (0.8, 0.9):
        L.append(f"- Consensus reliability ≥ {t} (Spearman–Brown from α's lower bound): k = "
                 f"{_k_text(a['needed'][t])} over raters; {_k_text(a['needed_both'][t])} over raters and sites.")
    L.append("- α itself does not grow with k (it is one rater's reliability; more raters only estimate it more "
             "precisely): what grows is the reliability of the k-rater consensus. Spearman–Brown assumes "
             "exchangeable raters of equal reliability; this crowd mixes good workers and spammers, so the "
             "projection is an approximation for a majority of k random workers, optimistic for weak ones.")
    L.append(f"- Projected consensus reliability at k = 3, 5, 9 from α = {C.fmt(a['alpha_all'])}: "
             + ", ".join(C.fmt(consensus_reliability(a["alpha_all"], k)) for k in (3, 5, 9)) + ".\n")
    return L


def accuracy_lines(acc: dict, ref: dict) -> list[str]:
    v, m, f = acc["vote"], acc["mace"], acc["fitted"]
    rows = [[k, v.n_items[i], C.fmt(v.mean[i]), f"[{C.fmt(v.low[i])}, {C.fmt(v.high[i])}]",
             f"{C.fmt(f.mean[i])} [{C.fmt(f.low[i])}, {C.fmt(f.high[i])}]",
             (lambda j: f"{C.fmt(m.mean[j])} [{C.fmt(m.low[j])}, {C.fmt(m.high[j])}]")(m.ks.index(k))
             if k in m.ks else ""] for i, k in enumerate(v.ks)]
    head = ["k", "sites", "majority vote: accuracy", "90 % interval",
            "full crowd's MACE model on k ratings: accuracy [90 %]", "MACE of k: accuracy [90 %]"]
    L = ["## (b) Consensus accuracy against raters per site\n",
         "Reference: the MACE consensus of the full crowd (every worker of the site). "
         f"Majority vote: {v.repeats} draws per k; the full crowd's MACE model on k ratings (Bayes' rule with the "
         "workers' fitted confusions: what `plan_raters` shows on a MACE consensus run, no refit per draw; optimistic: the model knows every worker from all their labels and the reference is its own consensus): "
         f"{f.repeats} draws per k; MACE refitted on each draw: {m.repeats} draws per k.\n",
         C.markdown_table(head, rows), "",
         f"- k for {ACCURACY:.0%} accuracy (90 % lower bound, measured k only; an accuracy has no documented "
         f"projection): majority vote {_k_text(acc['needed']['vote'])}; the full crowd's MACE model on k ratings "
         f"{_k_text(acc['needed']['fitted'])}; MACE of k {_k_text(acc['needed']['mace'])}.",
         "",
         C.markdown_table(["target accuracy", "majority vote: k (lower bound)", "majority vote: k (mean)",
                           "MACE model: k (lower bound)", "MACE model: k (mean)",
                           "MACE of k: k (lower bound)", "MACE of k: k (mean)"],
                          [[f"{t:.0%}"] + [C.fmt(x) if x is not None else f"> {c.max_k}"
                                           for name, c in (("vote", v), ("fitted", f), ("mace", m))
                                           for x in acc["targets"][(name, t)]] for t in (0.85, 0.9, ACCURACY)]),
         "",
         "(MACE is measured at k = " + ", ".join(str(k) for k in m.ks) + " only: its k is the first of those.) "
         "A majority of 2 is no better than 1 rater: with ties counted 1/2 (a coin between the two), its expected "
         "accuracy is that of one rater. The intervals cover which workers label each site, not the sample "
         "of sites.",
         "",
         "### Why the full crowd's consensus is a fair reference, and its own uncertainty\n",
         "There is no gold. Each site has 16 to 78 workers (median 71), so the full crowd's consensus pools "
         "several times more judgements than any k studied here; its errors are far rarer than a k-rater "
         "consensus', so it ranks the k fairly. Two biases remain and are stated: the k workers are part of the "
         "crowd they are compared with (their errors are in the reference too: optimistic, more so as k nears "
         "a site's count), and a k-rater majority is compared with a MACE reference (the rule differs: "
         "pessimistic for the vote, since MACE discounts the spammers the vote counts).",
         "",
         f"- The full crowd's MACE agrees with its majority vote on {ref['agree']['majority']:.1%} of the sites "
         f"and with its Dawid–Skene on {ref['agree']['dawid_skene']:.1%}.",
         f"- Its mean posterior confidence is {ref['confidence']:.3f}; {ref['low_confidence']} of 496 sites are "
         "below 0.9.",
         f"- Split halves (each site's workers split at random in two, MACE on each, {len(ref['halves'])} seeds): "
         f"the two halves agree on {np.mean(ref['halves']):.1%} ± {np.std(ref['halves']):.1%} of the sites, "
         f"and a half agrees with the full crowd on {np.mean(ref['half_vs_full']):.1%}. Two independent "
         "consensuses of about 35 workers that each err on a share e of the sites disagree on about 2e, so "
         f"a 35-worker consensus errs on about {(1 - np.mean(ref['halves'])) / 2:.1%} of the sites; the full "
         "crowd's (twice the workers) errs on fewer, but not on none. An accuracy of 95 % against it is close "
         "to what this reference can certify: part of the remaining 5 % is the reference's error, not the "
         "k raters'.",
         "- At k = 40 to 60 the k workers are most of a site's (median 71) and so most of the reference's "
         "crowd: those accuracies are optimistic, and the k for 95 % is read with that in mind.",
         "- Class shares of the reference (G, P, R, X): " + ", ".join(f"{p:.3f}" for p in ref["prior"]) + ".",
         ""]
    return L


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not ADULT.exists():
        print(f"skipped: shared data absent ({C.rel(ADULT)}; see ../shared/data/README.md)")
        return
    start = time.time()
    values, report = load()
    n = (~np.isnan(values)).sum(axis=1)
    repeats, mace_repeats, seeds = (20, 2, (0, 1)) if args.quick else (100, 4, (0, 1, 2))
    a = alpha_part(values, repeats)
    print("alpha done", round(time.time() - start), "s", a["half"], flush=True)
    ref = reference_part(values, seeds)
    acc = accuracy_part(values, ref["labels"], ref["model"], repeats, mace_repeats)
    print("accuracy done", round(time.time() - start), "s", flush=True)
    seconds = time.time() - start
    L = ["# How many raters per site? `plan_raters` on AdultContent3\n",
         f"`experiments/plan_raters.py`; {seconds:.0f} s on 2 shared cores. The pure core of `plan_raters` "
         "(`agreement.methods.planning`): rater subsampling within sites, 90 % percentile intervals, seed 0.\n",
         f"Data: {values.shape[0]} sites × {values.shape[1]} workers, read as `import_judgements` reads it "
         "(`read_judgements(categories=('G', 'P', 'R', 'X'), unknown_labels='drop', repeated='mode')`): "
         f"{report} Workers per site after the repairs: {n.min()} to {n.max()} (median {int(np.median(n))}).\n"]
    L += alpha_lines(a) + accuracy_lines(acc, ref)
    C.write_text(C.RESULTS / "plan_raters.md", "\n".join(L))
    print("wrote", C.rel(C.RESULTS / "plan_raters.md"), f"{seconds:.0f} s")


if __name__ == "__main__":
    main()
