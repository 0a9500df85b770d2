"""Within-item set pairs (same sample, two raters assigned): their list and costs, the pair budget
that skips a sample whole, their threshold matching, the per-sample and per-row outputs, and the
sums the statistics need of them (per rater pair, per matched pair, label counts per sample).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy import sparse

from agreement.core.data import MultiRaterAnnotations, class_codes
from agreement.core.rater_pairs import shared_sample_pairs
from agreement.methods.geometry_agreement.matching import SimilarityBlock, eligible_entries, match_entries
from agreement.methods.geometry_agreement.ties import row_content_keys
from agreement.methods.ot.alpha_ot import canonical_sample_order

_MAX_BLOCK = 4_000_000  # entries of one similarity block of a large sample


# --------------------------------------------------------------------------
# The corpus computation, in stages
# --------------------------------------------------------------------------
#
# Every stage works on the (sample, assigned rater pair) triples, on the rater
# pairs that share a measured sample, or on the drawn chance sample: never on
# all R (R - 1) / 2 rater pairs, so that a crowd of R = 500 raters with 10
# assigned per sample costs what 10 raters on every sample cost.


@dataclass(frozen=True)
class _SetPairs:
    """Within-item set pairs: one entry per (sample ``s``, rater ``a`` < rater
    ``b``) with both assigned, sorted by ``(s, a, b)``, with the set sizes
    ``n = |A|``, ``m = |B|`` and the cost ``max(1, n m)`` in comparisons."""

    s: np.ndarray
    a: np.ndarray
    b: np.ndarray
    n: np.ndarray
    m: np.ndarray
    cost: np.ndarray

    def __len__(self) -> int:
        return len(self.s)

    def select(self, sel: np.ndarray) -> "_SetPairs":
        return _SetPairs(self.s[sel], self.a[sel], self.b[sel], self.n[sel], self.m[sel], self.cost[sel])

    def index(self, s: np.ndarray, a: np.ndarray, b: np.ndarray, R: int) -> np.ndarray:
        """Position of each ``(s, a, b)`` (``a < b``, present) in this list."""
        key = (self.s.astype(np.int64) * R + self.a) * R + self.b
        found: np.ndarray = np.searchsorted(key, (s.astype(np.int64) * R + a) * R + b)
        return found


def within_set_pairs(data: MultiRaterAnnotations, counts: np.ndarray) -> _SetPairs:
    """Every (sample, rater a < rater b) with both assigned, via
    :func:`agreement.core.rater_pairs.shared_sample_pairs` (work grows with the
    triples, not with ``R^2``)."""
    s, a, b, _ = shared_sample_pairs(data.assigned)
    n, m = counts[s, a].astype(np.int64), counts[s, b].astype(np.int64)
    return _SetPairs(s, a, b, n, m, np.maximum(1, n * m))


@dataclass(frozen=True)
class PairSums:
    """The within-item set pairs summed per rater pair, which is all the chance strata and the
    totals need of them: ``code = a * R + b`` (rater indices, ``a < b``, sorted), the number of
    set pairs of each (``count``) and their comparisons (``cost``), both exact integers."""

    code: np.ndarray
    count: np.ndarray
    cost: np.ndarray

    @classmethod
    def of(cls, pairs: _SetPairs, R: int) -> "PairSums":
        """The sums of the set pairs ``pairs`` of a corpus of ``R`` raters."""
        return cls._summed(pairs.a.astype(np.int64) * R + pairs.b, np.ones(len(pairs), np.int64), pairs.cost)

    @classmethod
    def merge(cls, parts: Sequence["PairSums"]) -> "PairSums":
        """The sums of several shards (integer sums: exact in any order)."""
        cat = np.concatenate
        return cls._summed(cat([p.code for p in parts]), cat([p.count for p in parts]),
                           cat([p.cost for p in parts]))

    @classmethod
    def _summed(cls, code: np.ndarray, count: np.ndarray, cost: np.ndarray) -> "PairSums":
        uniq, inv = np.unique(code, return_inverse=True)
        inv = inv.reshape(-1)
        tot_count, tot_cost = np.zeros(len(uniq), np.int64), np.zeros(len(uniq), np.int64)
        np.add.at(tot_count, inv, count)
        np.add.at(tot_cost, inv, cost)
        return cls(uniq.astype(np.int64), tot_count, tot_cost)

    @property
    def n_set_pairs(self) -> int:
        """Number of within-item set pairs."""
        return int(self.count.sum())

    @property
    def n_comparisons(self) -> int:
        """Number of comparisons of the within-item set pairs."""
        return int(self.cost.sum())


@dataclass(frozen=True)
class _Budget:
    """Which samples are measured (``keep``) and which are skipped
    (``skipped``: a sample whose within-item measurement alone needs more than
    ``max_pairs`` comparisons), what each sample's within-item measurement
    costs (``cost_s``), and the budget of the chance sample."""

    keep: np.ndarray
    skipped: np.ndarray
    cost_s: np.ndarray
    chance_budget: int


def plan_budget(data: MultiRaterAnnotations, pairs: _SetPairs, max_pairs: int) -> _Budget:
    """The pair budget: a sample is skipped whole when its own within-item
    cost ``sum max(1, n m)`` over its set pairs exceeds ``max_pairs``; every
    other sample is measured; the chance sample gets all of ``max_pairs``.

    A property of each sample alone, so the measured samples depend neither
    on the seed nor on the order or number of the other samples."""
    cost_s = np.bincount(pairs.s, weights=pairs.cost, minlength=data.num_samples).astype(np.int64)
    skipped = cost_s > max_pairs
    return _Budget(~skipped, skipped, cost_s, max_pairs)


def skipped_records(data: MultiRaterAnnotations, budget: _Budget, counts: np.ndarray) -> tuple[dict[str, Any], ...]:
    """One record per skipped sample, in canonical sample order: ``sample_id``,
    ``comparisons`` (what its within-item measurement needs), ``raters``
    (assigned) and ``annotations``."""
    idx = np.flatnonzero(budget.skipped)
    if not len(idx):
        return ()
    idx = idx[canonical_sample_order(data.sample_ids[idx])]
    raters = data.assigned[idx].sum(axis=1)
    anns = counts[idx].sum(axis=1)
    return tuple({"sample_id": data.sample_ids[s], "comparisons": int(budget.cost_s[s]), "raters": int(k),
                  "annotations": int(n)} for s, k, n in zip(idx.tolist(), raters.tolist(), anns.tolist(), strict=True))


@dataclass(frozen=True)
class _WithinMatch:
    """The threshold matching of every within-item set pair: matched rows,
    their set pair, distance and sample, and the unmatched count ``u`` per
    set pair."""

    rows: np.ndarray
    pid: np.ndarray
    distance: np.ndarray
    sample: np.ndarray
    unmatched: np.ndarray


@dataclass(frozen=True)
class WithinSums:
    """What the statistics need of a shard's within-item matching per matched pair: its distance and
    its sample (``int32``, shard order), and the matched rows (``(0, 2)`` once the per-row outputs are
    written: :meth:`GeometryShard.without_rows`). The per-sample sums (unmatched annotations, all
    annotations) are the shard's outputs ``sample_n_unmatched`` and ``sample_n_annotations``."""

    distance: np.ndarray
    sample: np.ndarray
    rows: np.ndarray


def match_within(data: MultiRaterAnnotations, pairs: _SetPairs, sim_fn: SimilarityBlock,
                 stack_fn: SimilarityBlock | None, t: float) -> _WithinMatch:
    """Matches every within-item set pair: one similarity block per sample
    (all its rows against all its rows; one block per rater against the later
    raters for a large sample), entries of a rater with itself dropped."""
    R, N = data.num_raters, len(data)
    offsets, rater_of_row = data.offsets, data.rater_index
    tasks_a: list[np.ndarray] = []
    tasks_b: list[np.ndarray] = []
    for s in np.unique(pairs.s).tolist():
        lo, hi = int(offsets[s * R]), int(offsets[(s + 1) * R])
        if hi - lo < 2 or rater_of_row[lo] == rater_of_row[hi - 1]:
            continue  # fewer than two raters with annotations: nothing to match
        if (hi - lo) ** 2 <= _MAX_BLOCK:
            rows = np.arange(lo, hi)
            tasks_a.append(rows)
            tasks_b.append(rows)
        else:  # a large sample: one block per rater against the later raters
            rr = rater_of_row[lo:hi]
            for r in np.unique(rr)[:-1].tolist():
                tasks_a.append(np.flatnonzero(rr == r) + lo)
                tasks_b.append(np.flatnonzero(rr > r) + lo)
    _, gi, gj, sim = eligible_entries(sim_fn, stack_fn, t, tasks_a, tasks_b)
    keep_e = rater_of_row[gi] < rater_of_row[gj]  # each unordered pair once, never a rater with itself
    gi, gj, sim = gi[keep_e], gj[keep_e], sim[keep_e]
    ent_p = pairs.index(data.sample_index[gi], rater_of_row[gi], rater_of_row[gj], R).astype(np.int64)
    mk = match_entries(ent_p, gi, gj, sim, N, tie_keys=lambda rows: row_content_keys(data, rows=rows))
    rows = np.stack([gi[mk], gj[mk]], axis=1) if mk.any() else np.zeros((0, 2), np.intp)
    pid, distance = ent_p[mk], np.clip(1.0 - sim[mk], 0.0, 1.0)
    o = np.lexsort((rows[:, 1], rows[:, 0])) if len(rows) else np.zeros(0, np.intp)
    rows, pid, distance = rows[o], pid[o], distance[o]
    sample = pairs.s[pid] if len(pid) else np.zeros(0, np.intp)
    matched = np.bincount(pid, minlength=len(pairs)).astype(np.int64)
    return _WithinMatch(rows, pid, distance, sample, pairs.n + pairs.m - 2 * matched)


def per_sample_outputs(data: MultiRaterAnnotations, pairs: _SetPairs, match: _WithinMatch, budget: _Budget,
                       max_pairs: int, t: float) -> dict[str, Any]:
    """Per-sample and per-row results of the within-item matching, with a
    reason for every sample whose distance is NaN."""
    S, N = data.num_samples, len(data)
    s_dsum = np.bincount(match.sample, weights=match.distance, minlength=S)
    s_nm = np.bincount(match.sample, minlength=S).astype(np.int64)
    s_ann = np.bincount(pairs.s, weights=pairs.n + pairs.m, minlength=S).astype(np.int64)
    s_un = np.bincount(pairs.s, weights=match.unmatched, minlength=S).astype(np.int64)
    has_pairs = np.bincount(pairs.s, minlength=S) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        sample_distance = np.where(s_nm > 0, s_dsum / np.maximum(s_nm, 1), np.nan)
        sample_matched = np.where(has_pairs & (s_ann > 0), 1.0 - s_un / np.maximum(s_ann, 1), np.nan)
    n_assigned = data.assigned.sum(axis=1)
    reasons = []
    for s in range(S):
        if s_nm[s] > 0:
            reasons.append("")
        elif n_assigned[s] < 2:
            reasons.append(f"fewer than two raters assigned ({int(n_assigned[s])}): nothing to compare")
        elif budget.skipped[s]:
            reasons.append(
                f"skipped whole: its within-item measurement alone needs {int(budget.cost_s[s])} comparisons "
                f"({int(n_assigned[s])} raters), more than the pair budget (max_pairs = {max_pairs})")
        elif s_ann[s] == 0:
            reasons.append("every assigned rater drew nothing (explicit absence): no annotation to match")
        else:
            reasons.append(f"no two raters' annotations match at similarity >= {t:g}")
    rd = np.zeros(N)
    rn = np.zeros(N, dtype=np.int64)
    if len(match.rows):
        np.add.at(rd, match.rows[:, 0], match.distance)
        np.add.at(rd, match.rows[:, 1], match.distance)
        rn = np.bincount(match.rows.ravel(), minlength=N).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        row_distance = np.where(rn > 0, rd / np.maximum(rn, 1), np.nan)
    return dict(sample_distance=sample_distance, sample_n_matched=s_nm, sample_n_annotations=s_ann,
                sample_n_unmatched=s_un, sample_matched_fraction=sample_matched,
                sample_measured=has_pairs & budget.keep, sample_reasons=tuple(reasons),
                row_distance=row_distance, row_n_matched=rn)


@dataclass(frozen=True)
class LabelCounts:
    """What classification α needs of the within-item matched pairs, per sample (corpus order):
    matched pairs, pairs whose labels differ, and ``classes``, the ``(S, C)`` sparse counts of
    the classes of their labels (exact integers, so shards stack in any grouping)."""

    pairs: np.ndarray
    differ: np.ndarray
    classes: sparse.csr_matrix
    n_classes: int

    @classmethod
    def of(cls, data: MultiRaterAnnotations, within: _WithinMatch) -> "LabelCounts":
        """The label counts of the within-item matching ``within`` of ``data``."""
        codes, cats = class_codes(data)
        S, C = data.num_samples, len(cats)
        if not len(within.rows):
            return cls(np.zeros(S), np.zeros(S), sparse.csr_matrix((S, C)), C)
        la, lb = codes[within.rows[:, 0]], codes[within.rows[:, 1]]
        ps = within.sample
        classes = sparse.csr_matrix((np.ones(2 * len(ps)), (np.r_[ps, ps], np.r_[la, lb])), shape=(S, C))
        classes.sum_duplicates()
        return cls(np.bincount(ps, minlength=S).astype(np.float64),
                   np.bincount(ps, weights=(la != lb).astype(np.float64), minlength=S), classes, C)

    @classmethod
    def stack(cls, parts: Sequence["LabelCounts"]) -> "LabelCounts":
        """The counts of consecutive shards, as one corpus."""
        cat = np.concatenate
        return cls(cat([p.pairs for p in parts]), cat([p.differ for p in parts]),
                   sparse.vstack([p.classes for p in parts], format="csr"), parts[0].n_classes)
