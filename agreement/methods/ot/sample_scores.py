"""The per-sample OT result of :func:`agreement.methods.ot.sample_ot_scores` (:class:`OTSampleScores`), the
(sample, rater pair) cells it is computed on, and its per-box outputs: partner and paid cost of every
box of every rater pair, and why each box was or was not matched (:data:`ROW_REASONS`).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from agreement.core.arrays import mean_of_defined
from agreement.core.rater_pairs import RaterPairTable, shared_sample_pairs
from agreement.methods.ot.pair_costs import PairCosts, SolvedSetPairs

if TYPE_CHECKING:
    from agreement.core.data import MultiRaterAnnotations

# ---------------------------------------------------------------------------
# Per-sample scores over every pair of assigned raters, and per-label reasons
# ---------------------------------------------------------------------------

REASON_MATCHED = "matched"
REASON_NO_COUNTERPART = "no counterpart"
REASON_LABEL_DIFFERS = "label differs"
REASON_TOO_FAR = "too far"
REASON_COUNTERPART_TAKEN = "counterpart taken"
#: Why a box was (not) matched, per box (:attr:`OTSampleScores.row_reason`).
ROW_REASONS = (REASON_MATCHED, REASON_NO_COUNTERPART, REASON_LABEL_DIFFERS, REASON_TOO_FAR,
               REASON_COUNTERPART_TAKEN)


@dataclass(frozen=True, eq=False)
class OTSampleScores:
    """OT agreement of every sample over every pair of its assigned raters.

    Per sample (length ``S``, in the corpus order):

    Attributes:
        sample_ids: ``(S,)`` sample identifiers.
        mean: mean OT score over the sample's rater pairs (NaN if fewer than two
            raters are assigned).
        min: the lowest rater-pair score (NaN likewise).
        n_pairs: number of rater pairs scored.
        lower, upper: mean over the sample's rater pairs of each pair's
            feasible score range (:func:`agreement.methods.ot.bounds.score_bounds`,
            labels free to differ).
        position: where ``mean`` sits in ``[lower, upper]`` (0 worst, 1 best;
            NaN when the range is a single point).
        reasons: ``""`` or why the sample is not scored.

    Per rater pair on a sample (length ``P``, sorted by sample, then ``(a, b)``):

    Attributes:
        pair_sample: sample index.
        pair_rater_a, pair_rater_b: rater indices, ``a < b``.
        pair_cost, pair_score: OT cost and ``1 - cost``.
        pair_n_a, pair_n_b, pair_n_matched: set sizes and matched pairs.
        pair_lower, pair_upper, pair_position: feasible score range and position.
        pair_table_row: the row of ``(a, b)`` in :attr:`rater_pairs`.

    Per box of a rater pair (length ``E``: each pair contributes ``n + m`` rows):

    Attributes:
        edge_pair: index into the pair arrays.
        edge_row: the box (row of the corpus arrays).
        edge_partner_row: the row of the box it matched, ``-1`` for the dummy.
        edge_paid: the cost it paid (``c_ij`` or ``beta``).

    Per box of the corpus (length ``N``), over the rater pairs it took part in:

    Attributes:
        row_paid: mean cost the box paid (NaN if none: its sample has a
            single rater).
        row_matched_row: the row of its cheapest match (for two raters: the
            box it matched), ``-1`` if it never matched.
        row_matched_rater: the rater index of that match, ``-1`` if none.
        row_n_matched: in how many rater pairs it was matched.
        row_nearest_row: its nearest counterpart: the box of another assigned
            rater on the same sample with the lowest pair cost ``c_ij`` (ties:
            the box it was matched to, then the lowest row); ``-1`` if no
            other assigned rater drew anything there.
        row_nearest_rater: the rater index of that box, ``-1`` if none.
        row_nearest_cost: ``c_ij`` to it (NaN if none).
        row_reason: why the box was or was not matched (:data:`ROW_REASONS`),
            with ``thr = beta`` (``"paper"``) or ``2 beta`` (``"oc_cost"``), the
            threshold below which a pair can be matched:
            ``"matched"`` (in at least one rater pair);
            ``"no counterpart"`` (no other assigned rater drew anything on the
            sample, including a sample with a single assigned rater);
            ``"counterpart taken"`` (the nearest counterpart was eligible,
            ``c_ij < thr``, but the optimal matching gave it to another box:
            an unmatched box with an unmatched eligible partner is never
            optimal);
            ``"label differs"`` (``c_ij >= thr`` only because of the label
            term: the nearest counterpart has another class and
            ``lam (1 - GIoU) / 2 < thr``, so with equal labels it could match);
            ``"too far"`` (``lam (1 - GIoU) / 2 >= thr``: geometry alone
            rules the pair out).

    Corpus:

    Attributes:
        raters: rater names.
        rater_pairs: :class:`agreement.core.rater_pairs.RaterPairTable` of the rater
            pairs that share at least one sample, with value ``"mean_ot"``
            (mean score over their shared samples). A pair that shares no
            sample is absent (no data).
        lam, beta, normalization: the parameters.
    """

    sample_ids: np.ndarray
    mean: np.ndarray
    min: np.ndarray
    n_pairs: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    position: np.ndarray
    reasons: tuple[str, ...]
    pair_sample: np.ndarray
    pair_rater_a: np.ndarray
    pair_rater_b: np.ndarray
    pair_cost: np.ndarray
    pair_score: np.ndarray
    pair_n_a: np.ndarray
    pair_n_b: np.ndarray
    pair_n_matched: np.ndarray
    pair_lower: np.ndarray
    pair_upper: np.ndarray
    pair_position: np.ndarray
    pair_table_row: np.ndarray
    edge_pair: np.ndarray
    edge_row: np.ndarray
    edge_partner_row: np.ndarray
    edge_paid: np.ndarray
    row_paid: np.ndarray
    row_matched_row: np.ndarray
    row_matched_rater: np.ndarray
    row_n_matched: np.ndarray
    row_nearest_row: np.ndarray
    row_nearest_rater: np.ndarray
    row_nearest_cost: np.ndarray
    row_reason: np.ndarray
    raters: tuple[str, ...]
    rater_pairs: RaterPairTable
    lam: float
    beta: float
    normalization: str

    @property
    def n_scored(self) -> int:
        """Number of samples with at least one scored rater pair."""
        return int(np.sum(self.n_pairs > 0))

    @property
    def mean_score(self) -> float:
        """Mean over scored samples of the per-sample mean score (NaN if none)."""
        return mean_of_defined(self.mean)


def assigned_pair_cells(data: MultiRaterAnnotations) -> tuple[np.ndarray, ...]:
    """The (sample, rater a, rater b) triples with both raters assigned (``a < b``),
    their table rows, and the row ranges of the two sets.

    Returns ``(sample, a, b, pair_id, a0, na, b0, nb)``; work is proportional to
    the number of triples (:func:`agreement.core.rater_pairs.shared_sample_pairs`).
    """
    s, a, b, pid = shared_sample_pairs(data.assigned)
    return (s, a, b, pid, *pair_set_rows(data, s, a, b))


def pair_set_rows(data: MultiRaterAnnotations, sample: np.ndarray, a: np.ndarray,
                  b: np.ndarray) -> tuple[np.ndarray, ...]:
    """The row ranges of rater ``a[k]``'s and rater ``b[k]``'s sets on sample ``sample[k]``:
    ``(a0, na, b0, nb)``, the rows ``a0[k] + [0, na[k])`` and ``b0[k] + [0, nb[k])``."""
    R, off = data.num_raters, data.offsets
    ca, cb = sample * R + a, sample * R + b
    return off[ca], off[ca + 1] - off[ca], off[cb], off[cb + 1] - off[cb]


def sample_skip_reasons(data: MultiRaterAnnotations) -> list[str]:
    """Why each sample is not scored: ``""`` for a sample with two or more assigned raters, else the
    reason (no rater, or only one rater, assigned)."""
    k = data.assigned.sum(axis=1)
    out = [""] * data.num_samples
    for s in np.flatnonzero(k < 2).tolist():
        out[s] = ("no rater assigned" if k[s] == 0 else
                  f"only one rater assigned ({data.raters[int(np.argmax(data.assigned[s]))]!r}): no pair to compare")
    return out


def _matches(solved: SolvedSetPairs) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(m_problem, m_row_a, m_row_b, m_cost)`` of set pairs solved in detail mode (with ``n_rows``)."""
    if solved.m_problem is None or solved.m_row_a is None or solved.m_row_b is None or solved.m_cost is None:
        raise ValueError("the set pairs were solved without their matchings (solve_set_pairs needs n_rows)")
    return solved.m_problem, solved.m_row_a, solved.m_row_b, solved.m_cost


def box_edges(solved: SolvedSetPairs, a0: np.ndarray, na: np.ndarray, b0: np.ndarray, nb: np.ndarray,
              beta: float) -> dict[str, np.ndarray]:
    """Per box of every rater pair (the pair's A boxes, then its B boxes): partner and paid cost.

    Args:
        solved: the set pairs solved in detail mode.
        a0: first row of each pair's A set.
        na: size of each pair's A set.
        b0: first row of each pair's B set.
        nb: size of each pair's B set.
        beta: dummy cost, what an unmatched box pays.

    Returns:
        ``edge_pair``, ``edge_row``, ``edge_partner_row`` (-1 if unmatched) and ``edge_paid`` per box edge.
    """
    m_problem, m_row_a, m_row_b, m_cost = _matches(solved)
    L = na + nb
    eo = np.cumsum(L) - L
    edge_pair = np.repeat(np.arange(len(L)), L)
    # Segments: the A rows of pair 0, its B rows, the A rows of pair 1, ...
    seg_len = np.stack([na, nb], axis=1).reshape(-1)
    seg_start = np.stack([a0, b0], axis=1).reshape(-1)
    seg_pos = np.stack([eo, eo + na], axis=1).reshape(-1)
    edge_row = np.arange(int(L.sum())) + np.repeat(seg_start - seg_pos, seg_len)
    partner = np.full(len(edge_row), -1, np.intp)
    paid = np.full(len(edge_row), beta)
    t = m_problem
    pos_a = eo[t] + (m_row_a - a0[t])
    pos_b = eo[t] + na[t] + (m_row_b - b0[t])
    partner[pos_a], partner[pos_b] = m_row_b, m_row_a
    paid[pos_a], paid[pos_b] = m_cost, m_cost
    return dict(edge_pair=edge_pair, edge_row=edge_row.astype(np.intp), edge_partner_row=partner, edge_paid=paid)


def row_results(data: MultiRaterAnnotations, pc: PairCosts, solved: SolvedSetPairs, beta: float,
                normalization: str) -> dict[str, np.ndarray]:
    """Per box: mean paid, cheapest match, nearest counterpart and the reason (see :class:`OTSampleScores`).

    Args:
        data: the corpus whose set pairs were solved.
        pc: the pair costs of its boxes.
        solved: the set pairs solved in detail mode (with ``n_rows``).
        beta: dummy cost.
        normalization: ``"paper"`` or ``"oc_cost"`` (sets the threshold ``beta`` or ``2 beta``).

    Returns:
        The ``row_*`` fields of :class:`OTSampleScores`.
    """
    m_problem, m_row_a, m_row_b, m_cost = _matches(solved)
    if solved.nearest_row is None or solved.nearest_cost is None:
        raise ValueError("the set pairs were solved without their nearest rows (solve_set_pairs needs n_rows)")
    near, near_cost = solved.nearest_row, solved.nearest_cost
    N = len(data)
    k = data.assigned.sum(axis=1)
    cnt = (k[data.sample_index] - 1).astype(np.float64)  # rater pairs each box takes part in
    rows = np.concatenate([m_row_a, m_row_b])
    partner = np.concatenate([m_row_b, m_row_a])
    paid = np.concatenate([m_cost, m_cost])
    pair = np.concatenate([m_problem, m_problem])
    row_n_matched = np.bincount(rows, minlength=N).astype(np.intp)
    with np.errstate(invalid="ignore", divide="ignore"):
        row_paid = (np.bincount(rows, paid, minlength=N) + beta * (cnt - row_n_matched)) / cnt
    row_paid[cnt == 0] = np.nan
    # Cheapest match; ties: the first rater pair.
    best = np.full(N, np.inf)
    np.minimum.at(best, rows, paid)
    top = np.flatnonzero(paid == best[rows])
    first = np.full(N, np.iinfo(np.intp).max, np.intp)
    np.minimum.at(first, rows[top], pair[top])
    chosen = top[pair[top] == first[rows[top]]]
    row_matched = np.full(N, -1, np.intp)
    row_matched[rows[chosen]] = partner[chosen]

    near_rater = np.where(near >= 0, data.rater_index[np.maximum(near, 0)], -1).astype(np.intp)
    thr = beta if normalization == "paper" else 2.0 * beta
    reason = np.full(N, REASON_NO_COUNTERPART, dtype=object)
    reason[row_n_matched > 0] = REASON_MATCHED
    unmatched = np.flatnonzero((near >= 0) & (row_n_matched == 0))
    cost_u = near_cost[unmatched]
    reason[unmatched[cost_u < thr]] = REASON_COUNTERPART_TAKEN
    far = unmatched[cost_u >= thr]
    geo = pc.geometric(far, near[far])
    differs = pc.codes[far] != pc.codes[near[far]]
    reason[far] = np.where(differs & (geo < thr), REASON_LABEL_DIFFERS, REASON_TOO_FAR)
    return dict(
        row_paid=row_paid, row_matched_row=row_matched,
        row_matched_rater=np.where(row_matched >= 0, data.rater_index[np.maximum(row_matched, 0)], -1).astype(np.intp),
        row_n_matched=row_n_matched, row_nearest_row=near, row_nearest_rater=near_rater,
        row_nearest_cost=near_cost, row_reason=reason,
    )
