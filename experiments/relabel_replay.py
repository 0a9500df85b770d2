"""Which sites need another judgement? Replaying the relabel rules on the real AdultContent3 crowd (issue 52).

The shared AdultContent3 crowd (``../shared/data/adultcontent3_hcomp2010_labels.tsv``: 496 web sites, 338
workers) is read as the project's importer reads it: :func:`agreement.io.judgements.read_judgements` with the
categories ``G, P, R, X``, the 737 ``B`` judgements dropped (``unknown_labels="drop"``: a label the task's
description does not name) and repeated (worker, site) judgements reduced to the worker's most frequent label
(``repeated="mode"``, the importer's default): 34,768 judgements, 16 to 78 per site.

**Reference.** The consensus of the full crowd by MACE (:func:`class_consensus`, the project's default method).
With a median 71 judgements per site the reference rests on ~20 times more labels than any replayed consensus
(3 to 4.5 per site), so the replay measures how close a cheap consensus gets to the expensive one. Its own
uncertainty: its mean posterior of the chosen class, its agreement with Dawid–Skene and majority vote on the
full crowd, and split-half agreement (each site's workers split at random in two halves, MACE on each).

**Replay** (per seed): 3 judgements per site drawn at random (the start, ``3 × 496 = 1,488`` labels); each
site's unused judgements in one random order (the same for every rule: a rule only chooses *which site* gets
its next judgement). Budgets of extra labels: 5, 10, 25 and 50 % of the start's labels. Labels are spent in
rounds of :data:`ROUND` % of the start (one label per chosen site per round, sites with no unused judgement
skipped); between rounds MACE is refitted and the rule re-ranks. Rules: ``expected_error_reduction``
(:func:`agreement.methods.planning.relabel.class_relabel_priority`, typical rater = the label-weighted mean
MACE confusion), its plain one-step form (``lookahead=1``), lowest agreement first (pairwise percent agreement),
fewest raters first, random. The main rule also takes the consensus label MACE wrote (``labels=``: the error
now is that of the decision made) and fits the class prior of its shrunk posterior to the ratings
(``fit_prior=True``; MACE's own prior is uniform). Accuracy of the final MACE consensus against the reference;
mean ± sd over seeds.

Writes ``experiments/results/relabel_replay.md``. Run from the repository root:
``.venv/bin/python experiments/relabel_replay.py`` (``--quick``: 3 seeds, budgets 5 and 10 %). No FiftyOne.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor

import common as C
import numpy as np

from agreement.io.judgements import read_judgements
from agreement.methods.consensus.class_labels import ClassConsensus, class_consensus
from agreement.methods.planning.relabel import class_relabel_priority

ADULT = C.REPO.parent / "shared" / "data" / "adultcontent3_hcomp2010_labels.tsv"
CLASSES = ("G", "P", "R", "X")
START = 3
BUDGETS = (5, 10, 25, 50)  # % of the start's labels
ROUND = 5  # % of the start's labels spent per round
SEEDS = tuple(range(10))
METHOD = "mace"
WORKERS = 2  # processes (seeds run in parallel)
MAIN = "expected error reduction (look-ahead 3, raters shrunk, MACE label, fitted prior)"
SHRUNK = "expected error reduction (look-ahead 3, raters shrunk)"
PLAIN = "expected error reduction (one step, MACE posterior)"
SIMPLE = ("lowest agreement first", "fewest raters first", "random")
RULES = {  # row name -> (rule, keyword arguments; "codes": the current ratings are passed)
    MAIN: ("expected_error_reduction", {"codes": True, "labels": True, "fit_prior": True}),
    PLAIN: ("expected_error_reduction", {"lookahead": 1}),
    "lowest agreement first": ("lowest_agreement", {}),
    "fewest raters first": ("fewest_raters", {}),
    "random": ("random", {}),
}
#: What else was tried: each change of the plain rule alone, and each change of the main rule left out.
VARIANTS = {
    SHRUNK: ("expected_error_reduction", {"codes": True}),
    "expected error reduction (look-ahead 3, raters shrunk, MACE label)": ("expected_error_reduction",
                                                                          {"codes": True, "labels": True}),
    "expected error reduction (look-ahead 3, raters shrunk, fitted prior)": ("expected_error_reduction",
                                                                            {"codes": True, "fit_prior": True}),
    "expected error reduction (one step, raters shrunk)": ("expected_error_reduction", {"codes": True, "lookahead": 1}),
    "expected error reduction (look-ahead 3, MACE posterior)": ("expected_error_reduction", {}),
}
REFS = ("all", "sure")  # every site; the sites where the full crowd's MACE, Dawid–Skene and majority vote agree


def load() -> tuple[np.ndarray, str]:
    """The reliability matrix ``(sites, workers)`` of class codes (-1 missing) and the importer's summary."""
    ratings, report = read_judgements(ADULT, categories=CLASSES, repeated="mode", unknown_labels="drop")
    return np.asarray(ratings.codes, dtype=np.int64), report.summary()


def pair_agreement(codes: np.ndarray) -> np.ndarray:
    """Per site, the share of ordered pairs of its ratings that agree (NaN below two ratings)."""
    K = len(CLASSES)
    votes = np.stack([(codes == k).sum(axis=1) for k in range(K)], axis=1).astype(np.float64)
    n = votes.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= 2, (votes * (votes - 1)).sum(axis=1) / (n * (n - 1)), np.nan)


def priority_order(cons: ClassConsensus, codes: np.ndarray, rule: str, kwargs: dict, seed: int) -> np.ndarray:
    """The sites in the rule's order, from the current consensus (and ratings)."""
    weights = (codes >= 0).sum(axis=0).astype(np.float64)
    kw = {**kwargs, "codes": codes} if kwargs.get("codes") else dict(kwargs)
    if kw.get("labels"):
        kw["labels"] = cons.labels
    res = class_relabel_priority(cons.posterior, cons.rater_confusion, (codes >= 0).sum(axis=1),
                                 class_prior=cons.class_prior, rater_weights=weights, rule=rule,
                                 agreement=pair_agreement(codes), seed=seed, **kw)
    return res.order


def schedule(n_start: int, budgets: tuple[int, ...]) -> tuple[list[int], dict[int, int]]:
    """Cumulative extra labels after each round, and the budget (%) each checkpoint closes."""
    marks = {int(round(b / 100 * n_start)): b for b in budgets}
    step = int(round(ROUND / 100 * n_start))
    cum = sorted(set(range(step, max(marks) + 1, step)) | set(marks))
    return cum, marks


def replay(codes: np.ndarray, ref: np.ndarray, sure: np.ndarray, seed: int, budgets: tuple[int, ...],
           rules: dict) -> dict[str, dict[int, tuple[float, float]]]:
    """One seed: per rule and budget, the accuracy against ``ref`` on every site and on the ``sure`` ones."""
    rng = np.random.default_rng(seed)
    S = codes.shape[0]
    start = np.full_like(codes, -1)
    queue = []
    for s in range(S):
        workers = rng.permutation(np.flatnonzero(codes[s] >= 0))
        start[s, workers[:START]] = codes[s, workers[:START]]
        queue.append(workers[START:])
    left = np.array([len(q) for q in queue])
    cum, marks = schedule(int((start >= 0).sum()), budgets)
    first = class_consensus(start, len(CLASSES), method=METHOD, seed=seed)
    out: dict[str, dict[int, tuple[float, float]]] = {}
    for name, (rule, kwargs) in rules.items():
        cur, used, spent, acc, cons = start.copy(), np.zeros(S, np.int64), 0, {}, first
        for target in cum:
            order = priority_order(cons, cur, rule, kwargs, seed + 1000 * spent)
            for s in order[used[order] < left[order]][:target - spent]:
                w = queue[s][used[s]]
                cur[s, w] = codes[s, w]
                used[s] += 1
            spent = target
            cons = class_consensus(cur, len(CLASSES), method=METHOD, seed=seed)
            if target in marks:
                hit = cons.labels == ref
                acc[marks[target]] = (float(hit.mean()), float(hit[sure].mean()))
        out[name] = acc
    return out


def _replay_job(job: tuple) -> dict[str, dict[int, tuple[float, float]]]:
    return replay(*job)


def reference_uncertainty(codes: np.ndarray, ref: ClassConsensus, seed: int = 0) -> dict:
    """How sure the reference is: its posterior, other methods on the full crowd, split halves."""
    K = len(CLASSES)
    ds = class_consensus(codes, K, method="dawid_skene").labels
    mv = class_consensus(codes, K, method="majority").labels
    rng = np.random.default_rng(seed)
    half = np.full_like(codes, -1), np.full_like(codes, -1)
    for s in range(codes.shape[0]):
        w = rng.permutation(np.flatnonzero(codes[s] >= 0))
        half[0][s, w[::2]] = codes[s, w[::2]]
        half[1][s, w[1::2]] = codes[s, w[1::2]]
    a, b = (class_consensus(h, K, method=METHOD, seed=seed).labels for h in half)
    sure = (ds == ref.labels) & (mv == ref.labels)
    return {"confidence": float(np.nanmean(ref.confidence)), "ds": float((ds == ref.labels).mean()),
            "mv": float((mv == ref.labels).mean()), "sure": sure, "halves": float((a == b).mean()),
            "half_vs_full": float(((a == ref.labels).mean() + (b == ref.labels).mean()) / 2),
            "halves_sure": float((a == b)[sure].mean()),
            "median_n": float(np.median((codes >= 0).sum(axis=1))),
            "half_n": float(np.median((half[0] >= 0).sum(axis=1)))}


def summarise(runs: list[dict], budgets: tuple[int, ...], rules: dict) -> dict:
    """Per reference set: accuracy (seeds) per rule and budget, and the target's verdict against the better
    simple rule: ``at_least`` (mean ≥), ``paired`` (mean paired difference > its sd over seeds), ``apart``
    (mean − sd of the rule above mean + sd of the simple rule)."""
    res: dict = {}
    for j, ref in enumerate(REFS):
        acc = {n: {b: np.array([r[n][b][j] for r in runs]) for b in budgets} for n in rules}
        verdict = {}
        for b in budgets:
            best = SIMPLE[int(np.argmax([acc[n][b].mean() for n in SIMPLE]))]
            m, o = acc[MAIN][b], acc[best][b]
            d = m - o
            sd = float(d.std(ddof=1)) if d.size > 1 else float("nan")
            verdict[b] = {"best": best, "diff": float(d.mean()), "diff_sd": sd, "wins": int((d > 0).sum()),
                          "losses": int((d < 0).sum()), "at_least": bool(m.mean() >= o.mean()),
                          "paired": bool(d.mean() > sd), "apart": bool(m.mean() - m.std(ddof=1)
                                                                        > o.mean() + o.std(ddof=1))}
        res[ref] = {"acc": acc, "verdict": verdict}
    return res


def _ms(x: np.ndarray) -> str:
    return f"{x.mean():.4f} ± {x.std(ddof=1):.4f}" if x.size > 1 else f"{x.mean():.4f}"


def table(res: dict, budgets: tuple[int, ...], n_start: int) -> str:
    """Accuracy per rule (rows) and budget (columns), the best in bold; the main rule's paired verdict below."""
    head = ["rule"] + [f"+{b} % ({int(round(b / 100 * n_start))} labels)" for b in budgets]
    rows = []
    for name, by in res["acc"].items():
        cells = []
        for b in budgets:
            c = _ms(by[b])
            cells.append(f"**{c}**" if by[b].mean() == max(x[b].mean() for x in res["acc"].values()) else c)
        rows.append([name] + cells)
    v = res["verdict"]
    rows.append(["main rule − better simple rule, paired (wins/losses of 10 seeds)"]
                + [f"{v[b]['diff']:+.4f} ± {v[b]['diff_sd']:.4f} ({v[b]['wins']}/{v[b]['losses']})" for b in budgets])
    return C.markdown_table(head, rows)


def verdict_text(res: dict, budgets: tuple[int, ...]) -> str:
    """The target, budget by budget, in words."""
    out = []
    for b in budgets:
        v = res["verdict"][b]
        out.append(f"+{b} %: {'≥' if v['at_least'] else '**<**'} {v['best']}; difference "
                   f"{'beyond' if v['paired'] else '**within**'} its seed spread; mean ± sd intervals "
                   f"{'apart' if v['apart'] else 'overlap'}")
    return "; ".join(out) + "."


def write_markdown(res: dict, unc: dict, summary: str, budgets: tuple[int, ...], n_seeds: int, n_start: int,
                   timing: str, path) -> None:
    S = int(unc["sure"].size)
    L = ["# Which sites need another judgement? Relabel rules replayed on AdultContent3\n",
         f"`experiments/relabel_replay.py` (issue 52): {n_seeds} seeds (cells: mean ± sd over seeds), "
         f"{timing}. Data as `read_judgements` reads it: {summary}\n",
         f"**Start** {START} judgements per site drawn at random ({n_start:,} labels). **Budgets**: extra labels "
         f"as a share of the start's labels, each the next of the site's unused real judgements in an order "
         f"drawn once per seed (the same for every rule). Spent in rounds of {ROUND} % of the start "
         f"({int(round(ROUND / 100 * n_start))} labels, at most one per site per round); MACE refitted after "
         "every round. **Accuracy**: the final MACE consensus against the reference.\n",
         f"**Reference**: MACE on the full crowd (median {unc['median_n']:.0f} judgements per site, about 20 times "
         "what any replayed consensus sees, so it is the best answer the crowd can give; no gold exists). Its own "
         f"uncertainty: mean posterior {unc['confidence']:.4f} (over-confident, like every fit here); Dawid–Skene "
         f"agrees on {unc['ds']:.1%} and majority vote on {unc['mv']:.1%} of the sites; two disjoint halves of each "
         f"site's workers (median {unc['half_n']:.0f} each) agree with each other on {unc['halves']:.1%} and with "
         f"the full crowd on {unc['half_vs_full']:.1%}. So about 5 % of the sites have no stable answer even with "
         f"~70 judgements; the second table keeps the {int(unc['sure'].sum())} of {S} sites where MACE, "
         f"Dawid–Skene and majority vote of the full crowd agree (halves agree on {unc['halves_sure']:.1%} of "
         "them).\n",
         "## Accuracy against the full crowd, every site\n", table(res["all"], budgets, n_start), "",
         verdict_text(res["all"], budgets) + "\n",
         "## Accuracy on the sites the full crowd is sure of\n", table(res["sure"], budgets, n_start), "",
         verdict_text(res["sure"], budgets) + "\n",
         "Rules: *expected error reduction* is "
         "`agreement.methods.planning.relabel.class_relabel_priority` (docs/relabel.md); *raters shrunk*: the "
         "posterior recomputed from the ratings with each worker's MACE confusion shrunk toward the crowd's by "
         "16 pseudo-labels (`codes=`), *MACE posterior*: MACE's own posterior; *MACE label*: the error now is "
         "1 − p(MACE's label), the decision made (`labels=`); *fitted prior*: the class prior of the shrunk "
         "posterior fitted to the ratings by EM (`fit_prior=True`; MACE's is uniform); *look-ahead 3*: best error "
         "reduction per label over 1-3 more labels, *one step*: the plain rule. *Lowest agreement*: the share of "
         "agreeing pairs of the site's judgements. Ties: fewer judgements, then site order.\n"]
    C.write_text(path, "\n".join(L))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds, budgets 5 and 10 % (smoke run)")
    args = ap.parse_args(argv)
    if not ADULT.exists():
        print(f"skipped: shared data absent ({C.rel(ADULT)}; see ../shared/data/README.md)")
        return {}
    seeds, budgets = (SEEDS[:3], BUDGETS[:2]) if args.quick else (SEEDS, BUDGETS)
    rules = {**RULES, **VARIANTS}
    t0 = time.perf_counter()
    codes, summary = load()
    ref = class_consensus(codes, len(CLASSES), method=METHOD, seed=0)
    unc = reference_uncertainty(codes, ref)
    jobs = [(codes, ref.labels, unc["sure"], s, budgets, rules) for s in seeds]
    with ProcessPoolExecutor(max_workers=min(WORKERS, len(seeds))) as pool:
        runs = list(pool.map(_replay_job, jobs))
    res = summarise(runs, budgets, rules)
    seconds = time.perf_counter() - t0
    cpu = sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for f in ("ru_utime", "ru_stime"))
    timing = f"{seconds:.0f} s wall, {cpu:.0f} s CPU in {WORKERS} processes (load average {os.getloadavg()[0]:.1f})"
    n_start = START * codes.shape[0]
    path = C.RESULTS / "relabel_replay.md"
    if not args.quick:
        write_markdown(res, unc, summary, budgets, len(seeds), n_start, timing, path)
    for ref_name in REFS:
        print(table(res[ref_name], budgets, n_start))
        print(verdict_text(res[ref_name], budgets))
    print(timing + ("" if args.quick else f"; wrote {C.rel(path)}"))
    return {"result": res, "uncertainty": unc, "seconds": seconds}


if __name__ == "__main__":
    main()
