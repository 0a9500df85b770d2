r"""αOT: chance-corrected OT agreement over a corpus.

.. math:: \alpha_{OT} = 1 - D_o / D_e

* ``D_o`` (observed disagreement): the mean OT cost (:mod:`agreement.methods.ot`) over
  every (sample, pair of raters both assigned to it);
* ``D_e`` (expected, chance disagreement): the mean OT cost between rater
  ``a``'s set on sample ``i`` and rater ``b``'s set on a different sample
  ``j != i``, over every such *cross pair*: every rater pair ``{a, b}`` that
  shares at least one sample (the pairs behind ``D_o``) and every ordered
  sample pair ``(i, j)``, ``i != j``, with ``a`` assigned to ``i`` and ``b``
  to ``j``: ``N_ab = n_a n_b - n_ab`` cross pairs for raters assigned to
  ``n_a`` and ``n_b`` samples, ``n_ab`` of them shared (for two raters on
  ``S`` samples: ``S (S - 1)``). Two raters who never share a sample are
  never compared, so they add nothing to ``D_o`` and nothing to ``D_e``.

Range: at most 1; 1 perfect agreement, 0 agreement at chance level (same-sample
sets agree no better than sets of different images), below 0 worse than
chance. Undefined (NaN, with a reason) when no sample has two raters
(no ``D_o``), when there is no cross pair (e.g. a single sample), or when
``D_e = 0`` (every cross pair agrees perfectly, e.g. all sets empty).

Per rater pair (:attr:`AlphaOTResult.pairs`, one row per pair that shares a
sample): ``alpha_ab = 1 - D_o,ab / D_e,ab`` over its shared samples and its
``N_ab`` cross pairs. Its chance baseline is defined whenever ``N_ab >= 1``
(even for a pair sharing a single sample); a pair with ``N_ab = 0`` (both
raters assigned to the same single sample and nothing else) has αOT NaN
with that reason.

Chance baseline. When the number of cross pairs ``N = sum_ab N_ab`` is at
most ``max_pairs`` they are all evaluated (exact). Otherwise ``D_e`` is a
stratified Monte-Carlo estimate: each rater pair is a stratum and gets
``n_ab = max(2, ceil(max_pairs N_ab / N))`` draws (exact when
``n_ab >= N_ab``); draws are uniform with replacement,
``D_e = sum_ab (N_ab / N) mean_ab`` and
``SE(D_e)^2 = sum_ab (N_ab / N)^2 s_ab^2 / n_ab``; the standard error of αOT is
the delta-method ``D_o / D_e^2 SE(D_e)`` (``D_o`` is exact). The work is
``O(max_pairs + P)`` OT evaluations for ``P`` rater pairs that share samples
(at most the number of (sample, rater pair) triples), never ``O(R^2)``.

Strata. With ``strata`` (one integer per sample: images of comparable size,
the default of :func:`alpha_ot` on a corpus with image sizes, or clips of
comparable length; :mod:`agreement.core.strata`), a cross pair joins samples
of the *same* stratum. Each rater pair's population is cut into one
block per stratum ``k`` (``N_ab,k`` cross pairs), the blocks are the drawing
strata above (budget, exactness and standard errors per block), and
``D_e,ab = sum_k w_k mean_ab,k`` with ``w_k`` the pair's share of shared
samples in ``k`` (among the blocks with cross pairs; by their sizes if it
shares none there): the proportions in which ``D_o,ab`` comes from the
strata, so that strata of different sizes and chance levels mix without
bias; ``SE(D_e,ab)^2 = sum_k w_k^2 SE_k^2``. A single stratum is exactly the
computation without strata.

Determinism. Samples are put in a canonical order (sorted by ``str`` of the
sample id) and each rater pair in name order. Draw ``k`` of the stratum
``{a, b}`` is ``splitmix64(key_ab + (k + 1) * 0x9E3779B97F4A7C15)`` (Steele,
Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014)
with ``key_ab = splitmix64(splitmix64(seed) xor (crc32(a) << 32 | crc32(b)))``,
mapped to a position in the canonically ordered product ``S_a x S_b``
(draws with ``i == j`` are rejected and the stream continues): a
counter-based generator, so every stratum is drawn at once, vectorised. The
numbers therefore do not depend on the order of samples, raters or labels (up
to float rounding in the order of a set's boxes), and a rater pair's random
stream does not depend on the other raters (its number of draws does,
through ``N``).

Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
Detection with Optimal Transport" (αOT); the chance correction follows
Krippendorff's ``1 - D_o / D_e`` (Krippendorff 2011).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from numpy.typing import ArrayLike

from agreement.core.arrays import unique_sorted
from agreement.core.rater_pairs import RaterPairTable, shared_pairs_of_cells
from agreement.core.strata import IMAGE_SIZE, chance_strata_of, stratum_ranks
from agreement.methods.ot import SetPairs, assigned_pair_cells, check_ot_params, solve_set_pairs
from agreement.methods.ot.pair_costs import PairCosts
from agreement.methods.ot.strata import (  # noqa: F401 - canonical_sample_order re-exported
    PairStrata,
    block_keys,
    build_pair_strata,
    canonical_sample_order,
    cross_pairs,
    pair_of_blocks,
    stratum_keys,
)

if TYPE_CHECKING:
    from agreement.core.data import MultiRaterAnnotations

__all__ = ["AlphaOTResult", "alpha_ot", "canonical_sample_order", "ChancePlan", "plan_chance", "CellSets",
           "finish_alpha_ot", "stratum_ranks"]  # stratum_ranks: from agreement.core.strata


@dataclass(frozen=True, eq=False)
class AlphaOTResult:
    """Corpus αOT, its parts, and αOT per rater pair.

    Attributes:
        alpha: ``1 - observed / expected``; NaN with ``reason`` when undefined.
        observed: ``D_o``, mean OT cost over every (sample, rater pair).
        expected: ``D_e``, mean OT cost over cross pairs (exact or estimated).
        expected_se: standard error of ``expected`` (0 when exact).
        alpha_se: delta-method standard error of ``alpha`` (0 when exact).
        exact: whether every cross pair was evaluated.
        n_observed: number of (sample, rater pair) units behind ``observed``.
        n_expected: number of cross pairs evaluated (draws when estimated).
        n_cross_pairs: number of cross pairs in the population.
        reason: ``""`` or why ``alpha`` is NaN.
        pairs: :class:`agreement.core.rater_pairs.RaterPairTable` of the rater
            pairs that share at least one sample (absent pair: no data), with
            values ``alpha_ot``, ``alpha_ot_se``, ``observed_cost``,
            ``expected_cost``, ``expected_cost_se``, ``exact`` (1.0 / 0.0),
            ``n_cross_pairs`` and ``n_expected``, and ``reasons["alpha_ot"]``
            for a NaN ``alpha_ot``.
        raters: the rater names.
        lam, beta, normalization, max_pairs, seed: the parameters.
    """

    alpha: float
    observed: float
    expected: float
    expected_se: float
    alpha_se: float
    exact: bool
    n_observed: int
    n_expected: int
    n_cross_pairs: int
    reason: str
    pairs: RaterPairTable
    raters: tuple[str, ...]
    lam: float
    beta: float
    normalization: str
    max_pairs: int
    seed: int

    def __eq__(self, other: object) -> bool:
        """Equal numbers, parameters and per-pair values (NaN equal to NaN)."""
        if not isinstance(other, AlphaOTResult):
            return NotImplemented
        scalars = ("alpha", "observed", "expected", "expected_se", "alpha_se", "exact", "n_observed",
                   "n_expected", "n_cross_pairs", "reason", "raters", "lam", "beta", "normalization",
                   "max_pairs", "seed")
        same = all(_same(getattr(self, k), getattr(other, k)) for k in scalars)
        return same and self.pairs.to_records() == other.pairs.to_records()


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return x == y or bool(np.isnan(x) and np.isnan(y))
    return bool(x == y)


# ---------------------------------------------------------------------------
# αOT
# ---------------------------------------------------------------------------


def alpha_ot(
    data: MultiRaterAnnotations,
    *,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
    max_pairs: int = 100_000,
    seed: int = 0,
    max_block: int = 1 << 17,
    observed_costs: np.ndarray | None = None,
    strata: ArrayLike | str | None = IMAGE_SIZE,
) -> AlphaOTResult:
    """Chance-corrected OT agreement ``alpha_OT = 1 - D_o / D_e`` of a corpus.

    ``D_o`` is the mean OT cost over every (sample, rater pair both assigned);
    ``D_e`` the mean OT cost between rater ``a``'s set on sample ``i`` and rater
    ``b``'s set on sample ``j != i``, for the rater pairs that share a sample,
    exact when the number of such cross pairs is at most ``max_pairs``, else a
    stratified fixed-seed Monte-Carlo estimate with about ``max_pairs`` draws
    and a standard error (module docstring). Range: at most 1 (1 perfect, 0
    chance, < 0 below chance). Work: ``O(max_pairs + T)`` set pairs for ``T``
    (sample, assigned rater pair) triples, never ``O(R^2)``.

    Args:
        data: a :class:`agreement.core.data.MultiRaterAnnotations`.
        lam: localisation weight in ``[0, 1]``.
        beta: dummy cost in ``(0, 1]``.
        normalization: ``"paper"`` or ``"oc_cost"``.
        max_pairs: the chance budget: largest number of cross pairs evaluated
            exactly, and the number of Monte-Carlo draws beyond it.
        seed: seed of the Monte-Carlo draws.
        max_block: box pairs per vectorised block.
        observed_costs: the OT cost of every (sample, assigned rater pair), in
            the order of :func:`agreement.methods.ot.assigned_pair_cells`, when
            already computed with the same ``lam``, ``beta`` and
            ``normalization`` (``sample_ot_scores(...).pair_cost``); computed
            here when None.
        strata: which samples a cross pair may join (module docstring):
            ``"image_size"`` (default): images of comparable size
            (:func:`agreement.core.strata.chance_strata_of`: one stratum, the
            numbers without strata, when every image is within a factor 1.25
            of the others or the sizes are unknown); ``(S,)`` integers: samples
            of the same stratum, e.g. clips of comparable length
            (:func:`agreement.geometry.temporal.length_strata`); ``None``:
            every pair of different samples.

    Returns:
        :class:`AlphaOTResult`, with αOT per rater pair in a sparse table; NaN
        with a reason where undefined (no sample with two raters, no cross
        pair, ``D_e = 0``).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport".
    """
    check_ot_params(lam, beta, normalization=normalization)
    R = data.num_raters
    cs, cr = np.nonzero(data.assigned)
    plan = plan_chance(data.sample_ids, cs, cr, data.raters, max_pairs=max_pairs, seed=seed,
                       strata=chance_strata_of(data, strata=strata))
    s, a, b, pid, a0, na, b0, nb = assigned_pair_cells(data)
    if observed_costs is None:
        pc = PairCosts(data.boxes, data.labels, lam)
        c_obs = solve_set_pairs(pc, SetPairs(a0, na, b0, nb), beta=float(beta), normalization=normalization,
                                 max_block=max_block).cost
    else:
        c_obs = np.asarray(observed_costs, dtype=np.float64).reshape(-1)
        if len(c_obs) != len(s):
            raise ValueError(f"observed_costs has {len(c_obs)} values for {len(s)} (sample, assigned rater pair) cells")
    sets = CellSets.of(data, plan.cell_key)
    return finish_alpha_ot(plan, sets, observed_costs=c_obs, observed_pair=a.astype(np.int64) * R + b, lam=lam,
                           beta=beta, normalization=normalization, max_block=max_block)


@dataclass(frozen=True, eq=False)
class ChancePlan:
    """The chance sample of αOT, drawn from the assignment alone (module docstring): which cross pairs
    are evaluated, and the (sample, rater) cells whose sets they need.

    Attributes:
        raters: the rater names; sample indices refer to the ``sample_ids`` planned.
        table: the rater pairs that share a sample (``a``, ``b``, ``n_shared``; no values).
        strata: per rater pair, its samples and cross-pair population, cut into blocks by length stratum.
        stratum: block of every cross pair evaluated (draws included).
        pair_inv: distinct cell pair of every cross pair evaluated.
        first_key, second_key: per distinct cell pair, the key ``sample * R + rater`` of each side.
        cell_key: the distinct cells needed, sorted (``sample * R + rater``).
        exact_strata: the blocks whose every cross pair is evaluated.
        max_pairs, seed: the budget and the seed.
    """

    raters: tuple
    table: RaterPairTable
    strata: PairStrata
    stratum: np.ndarray
    pair_inv: np.ndarray
    first_key: np.ndarray
    second_key: np.ndarray
    cell_key: np.ndarray
    exact_strata: np.ndarray
    max_pairs: int
    seed: int

    def cells_of_samples(self, lo: int, hi: int) -> np.ndarray:
        """The needed cell keys of samples ``lo .. hi - 1`` (a shard of consecutive samples)."""
        R = len(self.raters)
        return self.cell_key[np.searchsorted(self.cell_key, lo * R): np.searchsorted(self.cell_key, hi * R)]


def plan_chance(sample_ids: Sequence[Any] | np.ndarray, cell_sample: np.ndarray, cell_rater: np.ndarray,
                raters: Sequence[str], *, max_pairs: int = 100_000, seed: int = 0,
                groups: np.ndarray | None = None, strata: np.ndarray | None = None) -> ChancePlan:
    """The cross pairs αOT evaluates for a corpus with this assignment (module docstring).

    ``(cell_sample[k], cell_rater[k])`` are the assigned (sample, rater)
    cells, sorted by sample then rater. The draws depend on the sample ids,
    the rater names, the assignment, ``max_pairs`` and ``seed`` only: not on
    any annotation, the order of the samples or how they are sharded, so a
    streamed run can collect the sets it needs while it reads its shards.

    ``groups`` (one integer per sample, optional): a cross pair joins samples
    of *different* groups, e.g. frames of different videos (frames of one
    video are not independent items); ``None``: every sample is its own group.

    ``strata`` (one integer per sample, optional): a cross pair joins samples
    of the *same* stratum, e.g. images of comparable size or clips of
    comparable length (:func:`agreement.core.strata.corpus_strata`); ``None``:
    one stratum.
    Each rater pair's cross pairs are then cut into blocks, one per stratum,
    drawn apart (the budget shared in proportion to their sizes), and its
    ``D_e,ab`` is the mean of the blocks' mean costs weighted by the pair's
    shared samples in each (module docstring).
    """
    if isinstance(max_pairs, bool) or int(max_pairs) < 1:
        raise ValueError(f"max_pairs must be >= 1, got {max_pairs!r}")
    max_pairs = int(max_pairs)
    ids = np.asarray(sample_ids, dtype=object)
    raters = tuple(raters)
    S, R = len(ids), len(raters)
    cs, cr = np.asarray(cell_sample, dtype=np.intp), np.asarray(cell_rater, dtype=np.intp)
    sh, a, b, pid = shared_pairs_of_cells(cs, cr, S, R)
    table = RaterPairTable.from_shared_pairs(raters, a, b, pid)
    st = build_pair_strata(ids, cs, cr=cr, raters=raters, table=table, shared=(sh, pid), groups=groups, strata=strata)
    N_tot = int(st.size.sum())
    blocks = np.flatnonzero(st.blk_size > 0)
    if N_tot <= max_pairs:
        n_alloc = st.blk_size.copy()
    else:
        n_alloc = np.maximum(2, np.ceil(max_pairs * st.blk_size.astype(np.float64) / N_tot)).astype(np.int64)
    exact = n_alloc[blocks] >= st.blk_size[blocks]
    keys = block_keys(stratum_keys(seed, raters, st.first, st.second), st)
    sp, ci, cj = cross_pairs(st, blocks, n_alloc[blocks], exact, keys)
    C = len(st.cell_sample)
    uniq, inv = np.unique(ci.astype(np.int64) * C + cj, return_inverse=True)
    first_key = st.cell_sample[uniq // C].astype(np.int64) * R + st.cell_rater[uniq // C]
    second_key = st.cell_sample[uniq % C].astype(np.int64) * R + st.cell_rater[uniq % C]
    cell_key = unique_sorted(np.concatenate([first_key, second_key]))
    return ChancePlan(raters=raters, table=table, strata=st, stratum=sp, pair_inv=inv.reshape(-1), first_key=first_key,
                      second_key=second_key, cell_key=cell_key, exact_strata=blocks[exact], max_pairs=max_pairs,
                      seed=int(seed))


@dataclass(frozen=True, eq=False)
class CellSets:
    """The annotations of some (sample, rater) cells: the sets a chance sample needs.

    Attributes:
        key: ``(K,)`` cell keys ``sample * R + rater``, sorted.
        offsets: ``(K + 1,)``: the rows of cell ``k`` are ``offsets[k]:offsets[k + 1]``.
        boxes: ``(N, 4)`` relative ``[x, y, w, h]``.
        labels: ``(N,)`` class labels.
    """

    key: np.ndarray
    offsets: np.ndarray
    boxes: np.ndarray
    labels: np.ndarray

    @classmethod
    def of(cls, data: MultiRaterAnnotations, keys: np.ndarray, sample_offset: int = 0) -> "CellSets":
        """The cells ``keys`` of ``data``, whose sample ``s`` is sample ``sample_offset + s`` of the corpus."""
        R = data.num_raters
        keys = np.asarray(keys, dtype=np.int64)
        local = keys - sample_offset * R
        lo, hi = data.offsets[local], data.offsets[local + 1]
        n = hi - lo
        rows = np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
        return cls(keys, np.r_[0, np.cumsum(n)].astype(np.intp), data.boxes[rows], data.labels[rows])

    @classmethod
    def concat(cls, parts: Sequence[CellSets]) -> "CellSets":
        """The cells of several parts (disjoint keys), sorted by key."""
        parts = [p for p in parts if len(p.key)]
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros(1, np.intp), np.zeros((0, 4)), np.zeros(0, dtype=object))
        key = np.concatenate([p.key for p in parts])
        n = np.concatenate([np.diff(p.offsets) for p in parts])
        start = np.concatenate([p.offsets[:-1] + base for p, base in
                                zip(parts, np.cumsum([0] + [len(p.boxes) for p in parts[:-1]]), strict=True)])
        boxes = np.concatenate([p.boxes for p in parts])
        labels = np.concatenate([p.labels for p in parts])
        o = np.argsort(key, kind="stable")
        key, n, start = key[o], n[o], start[o]
        rows = np.repeat(start - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
        return cls(key, np.r_[0, np.cumsum(n)].astype(np.intp), boxes[rows], labels[rows])


def finish_alpha_ot(plan: ChancePlan, sets: CellSets, observed_costs: np.ndarray, observed_pair: np.ndarray,
                    *,
                    lam: float = 0.5, beta: float = 0.5, normalization: str = "paper",
                    max_block: int = 1 << 17) -> AlphaOTResult:
    """αOT from the planned chance sample, the sets of its cells and the observed costs.

    Args:
        plan: from :func:`plan_chance`.
        sets: the :class:`CellSets` of ``plan.cell_key`` (from one corpus or merged from shards).
        observed_costs: the OT cost of every (sample, assigned rater pair), in corpus sample order.
        observed_pair: the rater pair of each, as ``a * R + b`` (``a < b``).
        lam: localisation weight in ``[0, 1]``, as in :func:`alpha_ot`.
        beta: dummy cost in ``(0, 1]``, as in :func:`alpha_ot`.
        normalization: ``"paper"`` or ``"oc_cost"``, as in :func:`alpha_ot`.
        max_block: box pairs per vectorised block, as in :func:`alpha_ot`.

    Returns:
        The :class:`AlphaOTResult` of the corpus.
    """
    check_ot_params(lam, beta, normalization=normalization)
    if not np.array_equal(sets.key, plan.cell_key):
        raise ValueError("the cell sets do not hold the cells the chance plan needs")
    R = len(plan.raters)
    table = RaterPairTable(plan.table.raters, plan.table.a, plan.table.b, plan.table.n_shared)
    c_obs = np.asarray(observed_costs, dtype=np.float64).reshape(-1)
    pid = np.searchsorted(table.a.astype(np.int64) * R + table.b, np.asarray(observed_pair, dtype=np.int64))
    P = len(table)
    obs = np.bincount(pid, c_obs, P) / np.maximum(table.n_shared, 1)
    st = plan.strata
    mean_e, se_e, n_eval, is_exact = _chance(plan, sets, float(lam), float(beta), normalization, max_block)

    pair_alpha, pair_se, pair_reason = _pair_alphas(plan.raters, st, obs, mean_e, se_e)
    table.values.update({
        "alpha_ot": pair_alpha, "alpha_ot_se": pair_se, "observed_cost": obs, "expected_cost": mean_e,
        "expected_cost_se": se_e, "exact": is_exact.astype(np.float64),
        "n_cross_pairs": st.size.astype(np.float64), "n_expected": n_eval.astype(np.float64),
    })
    table.reasons["alpha_ot"] = pair_reason

    D_o = float(c_obs.mean()) if c_obs.size else float("nan")
    N_tot = int(st.size.sum())
    strata = np.flatnonzero(st.size > 0)
    if N_tot > 0:
        w = st.size[strata].astype(np.float64) / N_tot
        D_e = float(np.dot(w, mean_e[strata]))
        SE_e = float(np.sqrt(np.dot(w * w, se_e[strata] ** 2)))
    else:
        D_e, SE_e = float("nan"), float("nan")
    if R < 2:
        alpha, a_se, reason = float("nan"), float("nan"), f"fewer than two raters ({R}): nothing to compare"
    else:
        alpha, a_se, reason = _finish(D_o, D_e, SE_e, int(c_obs.size), N_tot)
    return AlphaOTResult(
        alpha=alpha, observed=D_o, expected=D_e, expected_se=SE_e, alpha_se=a_se, exact=bool(is_exact.all()),
        n_observed=int(c_obs.size), n_expected=int(n_eval.sum()), n_cross_pairs=N_tot, reason=reason,
        pairs=table, raters=plan.raters, lam=float(lam), beta=float(beta),
        normalization=normalization, max_pairs=plan.max_pairs, seed=plan.seed,
    )


def _chance(plan: ChancePlan, sets: CellSets, lam: float, beta: float, normalization: str,
            max_block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per rater pair: mean chance cost, its standard error (0 when exact), the number of
    cross pairs evaluated, and whether they are all of them (module docstring)."""
    st = plan.strata
    B = len(st.blk_size)
    pc = PairCosts(sets.boxes, sets.labels, lam)
    off = sets.offsets
    ca = np.searchsorted(sets.key, plan.first_key)
    cb = np.searchsorted(sets.key, plan.second_key)
    cu = solve_set_pairs(pc, SetPairs.of_cells(off, ca, cb), beta=beta, normalization=normalization,
                          max_block=max_block).cost
    sp = plan.stratum
    c = cu[plan.pair_inv]
    n_eval = np.bincount(sp, minlength=B).astype(np.int64)
    mean_e = np.full(B, np.nan)
    se_e = np.full(B, np.nan)
    has = n_eval > 0
    mean_e[has] = np.bincount(sp, c, B)[has] / n_eval[has]
    dev2 = np.bincount(sp, (c - mean_e[sp]) ** 2, B)
    is_exact = np.zeros(B, bool)
    is_exact[plan.exact_strata] = True
    is_exact[st.blk_size == 0] = True
    se_e[is_exact & has] = 0.0
    mc = ~is_exact & (n_eval > 1)  # every drawn block has at least two draws
    se_e[mc] = np.sqrt(dev2[mc] / (n_eval[mc] - 1)) / np.sqrt(n_eval[mc])
    return pair_of_blocks(st, mean_e, se_e, n_eval, is_exact)


def _pair_alphas(raters: Sequence[str], st: PairStrata, obs: np.ndarray, exp: np.ndarray,
                 se_e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per rater pair ``1 - D_o / D_e`` and its delta-method SE; NaN with a reason where undefined."""
    P = len(obs)
    alpha = np.full(P, np.nan)
    se = np.full(P, np.nan)
    reason = np.full(P, "", dtype=object)
    ok = (st.size > 0) & (exp > 1e-15)
    alpha[ok] = 1.0 - obs[ok] / exp[ok]
    se[ok] = obs[ok] / (exp[ok] * exp[ok]) * se_e[ok]
    for p in np.flatnonzero(~ok).tolist():
        who = f"raters {raters[st.first[p]]!r} and {raters[st.second[p]]!r}"
        reason[p] = (
            f"D_e undefined for {who}: no cross-sample pair (both were assigned only the samples they share, "
            "and only one)" if st.size[p] == 0 else
            f"D_e = 0 for {who}: every cross-sample pair agrees perfectly (e.g. all sets empty); "
            "there is no variation to correct for chance")
    return alpha, se, reason


def _finish(d_o: float, d_e: float, se_e: float, n_obs: int, n_cross: int) -> tuple[float, float, str]:
    if n_obs == 0:
        return float("nan"), float("nan"), "D_o undefined for the corpus: no sample has two raters assigned"
    if n_cross == 0:
        return float("nan"), float("nan"), (
            "D_e undefined for the corpus: no cross-sample pair (a single sample, or raters never "
            "assigned to different samples)")
    if not d_e > 1e-15:
        return float("nan"), float("nan"), (
            "D_e = 0 for the corpus: every cross-sample pair agrees perfectly (e.g. all sets empty); "
            "there is no variation to correct for chance")
    alpha = 1.0 - d_o / d_e
    se = d_o / (d_e * d_e) * se_e if np.isfinite(se_e) else float("nan")
    return alpha, se, ""
