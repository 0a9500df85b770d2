r"""αOT: chance-corrected OT agreement over a corpus.

.. math:: \alpha_{OT} = 1 - D_o / D_e

* ``D_o`` (observed disagreement): the mean OT cost (:mod:`agreement.ot`) over
  every (sample, pair of raters both assigned to it);
* ``D_e`` (expected, chance disagreement): the mean OT cost between rater
  ``a``'s set on sample ``i`` and rater ``b``'s set on a different sample
  ``j != i``, over every such *cross pair*: every unordered rater pair
  ``{a, b}`` (``a != b``, as in ``D_o``) and every ordered sample pair
  ``(i, j)``, ``i != j``, with ``a`` assigned to ``i`` and ``b`` to ``j``
  (for two raters on ``S`` samples: ``S (S - 1)`` cross pairs).

Range: at most 1; 1 perfect agreement, 0 agreement at chance level (same-sample
sets agree no better than sets of different images), below 0 worse than
chance. Undefined (NaN, with a reason) when no sample has two raters
(no ``D_o``), when there is no cross pair (e.g. a single sample), or when
``D_e = 0`` (every cross pair agrees perfectly, e.g. all sets empty).

Chance baseline. When the number of cross pairs is at most ``max_pairs`` they
are all evaluated (exact). Otherwise ``D_e`` is a stratified Monte-Carlo
estimate: each rater pair ``{a, b}`` is a stratum with ``N_ab`` cross pairs and
gets ``n_ab = max(2, ceil(max_pairs N_ab / N))`` draws (exact when ``n_ab >= N_ab``);
draws are uniform with replacement, ``D_e = sum_ab (N_ab / N) mean_ab`` and
``SE(D_e)^2 = sum_ab (N_ab / N)^2 s_ab^2 / n_ab``; the standard error of αOT is
the delta-method ``D_o / D_e^2 SE(D_e)`` (``D_o`` is exact).

Determinism. Samples are put in a canonical order (sorted by ``str`` of the
sample id) and rater pairs in name order; a stratum's draws come from
``numpy.random.default_rng(SeedSequence([seed, crc32(a), crc32(b)]))`` and are
positions in the canonically ordered product ``S_a x S_b`` (draws with
``i == j`` are rejected and redrawn). The numbers therefore do not depend on
the order of samples, raters or labels (up to float rounding in the order
of a set's boxes), and a rater pair's random stream does not depend on the
other raters (its number of draws does, through ``N``).

Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
Detection with Optimal Transport" (αOT); the chance correction follows
Krippendorff's ``1 - D_o / D_e`` (Krippendorff 2011).

This module does not import FiftyOne.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

from agreement.ot import _CorpusCosts, check_ot_params

__all__ = ["AlphaOTResult", "RaterPairAlphaOT", "alpha_ot", "canonical_sample_order"]


@dataclass(frozen=True)
class RaterPairAlphaOT:
    """αOT of one rater pair ``{rater_a, rater_b}`` (``rater_a < rater_b``).

    Attributes:
        rater_a, rater_b: rater names.
        alpha: ``1 - observed / expected``; NaN with ``reason`` when undefined.
        observed: ``D_o``, mean same-sample OT cost over shared samples.
        expected: ``D_e``, mean cross-sample OT cost (exact or estimated).
        expected_se: standard error of ``expected`` (0 when exact).
        alpha_se: delta-method standard error of ``alpha`` (0 when exact).
        exact: whether every cross pair was evaluated.
        n_observed: number of shared samples.
        n_expected: number of cross pairs evaluated (draws when estimated).
        n_cross_pairs: number of cross pairs in the population.
        reason: ``""`` or why ``alpha`` is NaN.
    """

    rater_a: str
    rater_b: str
    alpha: float
    observed: float
    expected: float
    expected_se: float
    alpha_se: float
    exact: bool
    n_observed: int
    n_expected: int
    n_cross_pairs: int
    reason: str = ""


@dataclass(frozen=True)
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
        per_pair: one :class:`RaterPairAlphaOT` per rater pair, in name order.
        raters: the rater names (index order of :meth:`pair_matrix`).
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
    per_pair: tuple[RaterPairAlphaOT, ...]
    raters: tuple[str, ...]
    lam: float
    beta: float
    normalization: str
    max_pairs: int
    seed: int

    def pair_matrix(self, what: str = "alpha") -> np.ndarray:
        """``(R, R)`` symmetric matrix of a per-pair field (``"alpha"``,
        ``"observed"``, ``"expected"``, ...); NaN on the diagonal."""
        R = len(self.raters)
        out = np.full((R, R), np.nan)
        index = {r: i for i, r in enumerate(self.raters)}
        for p in self.per_pair:
            i, j = index[p.rater_a], index[p.rater_b]
            out[i, j] = out[j, i] = getattr(p, what)
        return out


def canonical_sample_order(sample_ids: np.ndarray) -> np.ndarray:
    """Sample indices sorted by ``str(sample_id)`` (stable): the order in which
    αOT enumerates and draws cross pairs, independent of the corpus order."""
    keys = [str(x) for x in np.asarray(sample_ids, dtype=object).reshape(-1)]
    return np.asarray(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.intp)


def _seed_for(seed: int, a: str, b: str) -> np.random.Generator:
    ss = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, zlib.crc32(str(a).encode()), zlib.crc32(str(b).encode())])
    return np.random.default_rng(ss)


def _draw(rng: np.random.Generator, Sa: np.ndarray, Sb: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` uniform draws (with replacement) of ``(i, j)`` in ``Sa x Sb``, ``i != j``."""
    got_i, got_j, have = [], [], 0
    size = len(Sa) * len(Sb)
    while have < n:
        u = rng.integers(0, size, size=max(n - have, 16) + 16)
        i, j = Sa[u // len(Sb)], Sb[u % len(Sb)]
        keep = i != j
        got_i.append(i[keep]); got_j.append(j[keep]); have += int(keep.sum())
    return np.concatenate(got_i)[:n], np.concatenate(got_j)[:n]


def _ratio(d_o: float, d_e: float, se_e: float) -> tuple[float, float]:
    alpha = 1.0 - d_o / d_e
    se = d_o / (d_e * d_e) * se_e if np.isfinite(se_e) else float("nan")
    return alpha, se


def alpha_ot(
    data,
    lam: float = 0.5,
    beta: float = 0.5,
    normalization: str = "paper",
    max_pairs: int = 100_000,
    seed: int = 0,
    max_block: int = 4_000_000,
) -> AlphaOTResult:
    """Chance-corrected OT agreement ``alpha_OT = 1 - D_o / D_e`` of a corpus.

    ``D_o`` is the mean OT cost over every (sample, rater pair both assigned);
    ``D_e`` the mean OT cost between rater ``a``'s set on sample ``i`` and rater
    ``b``'s set on sample ``j != i`` (``a != b``), exact when the number of
    such cross pairs is at most ``max_pairs``, else a stratified fixed-seed
    Monte-Carlo estimate with ``max_pairs`` draws and a standard error (module
    docstring). Range: at most 1 (1 perfect, 0 chance, < 0 below chance).

    Args:
        data: a :class:`agreement.data.MultiRaterAnnotations`.
        lam: localisation weight in ``[0, 1]``.
        beta: dummy cost in ``(0, 1]``.
        normalization: ``"paper"`` or ``"oc_cost"``.
        max_pairs: the chance budget: largest number of cross pairs evaluated
            exactly, and the number of Monte-Carlo draws beyond it.
        seed: seed of the Monte-Carlo draws.
        max_block: memory cap (entries) of one pair-cost block.

    Returns:
        :class:`AlphaOTResult`, with αOT per rater pair; NaN with a reason
        where undefined (no sample with two raters, no cross pair, ``D_e = 0``).

    Reference: Prokhorov & Kalinin, "Quantifying Annotation Agreement in Object
    Detection with Optimal Transport".
    """
    check_ot_params(lam, beta, normalization)
    if int(max_pairs) < 1:
        raise ValueError(f"max_pairs must be >= 1, got {max_pairs!r}")
    max_pairs = int(max_pairs)
    engine = _CorpusCosts(data, lam, beta, normalization, max_block)
    S, R = data.num_samples, data.num_raters
    order = canonical_sample_order(data.sample_ids)
    names = list(data.raters)
    rater_order = sorted(range(R), key=lambda r: names[r])
    A = data.assigned[order]  # canonical sample order

    pairs = [(rater_order[x], rater_order[y]) for x in range(R) for y in range(x + 1, R)]
    # Population sizes per stratum.
    N_ab = []
    for a, b in pairs:
        na, nb, nab = int(A[:, a].sum()), int(A[:, b].sum()), int((A[:, a] & A[:, b]).sum())
        N_ab.append(na * nb - nab)
    N_tot = int(sum(N_ab))
    exact_all = N_tot <= max_pairs

    per_pair: list[RaterPairAlphaOT] = []
    obs_costs: list[np.ndarray] = []
    strata: list[tuple[int, float, float, int, bool]] = []  # (N_ab, mean, se, n_eval, exact)
    for (a, b), Nab in zip(pairs, N_ab):
        ra, rb = names[a], names[b]
        Sa = order[A[:, a]]
        Sb = order[A[:, b]]
        shared = order[A[:, a] & A[:, b]]
        c_obs = engine.costs(a, b, shared, shared)[0]
        obs_costs.append(c_obs)
        d_o = float(c_obs.mean()) if c_obs.size else float("nan")
        # Chance stratum.
        if Nab == 0:
            d_e, se_e, n_eval, exact = float("nan"), float("nan"), 0, True
        else:
            n_alloc = Nab if exact_all else max(2, math.ceil(max_pairs * Nab / N_tot))
            if n_alloc >= Nab:
                ii = np.repeat(Sa, len(Sb))
                jj = np.tile(Sb, len(Sa))
                keep = ii != jj
                ii, jj = ii[keep], jj[keep]
                c = engine.costs(a, b, ii, jj)[0]
                d_e, se_e, n_eval, exact = float(c.mean()), 0.0, len(c), True
            else:
                ii, jj = _draw(_seed_for(seed, ra, rb), Sa, Sb, n_alloc)
                key = ii.astype(np.int64) * S + jj
                uniq, inv = np.unique(key, return_inverse=True)
                cu = engine.costs(a, b, uniq // S, uniq % S)[0]
                c = cu[inv]
                d_e = float(c.mean())
                se_e = float(c.std(ddof=1) / np.sqrt(len(c))) if len(c) > 1 else float("nan")
                n_eval, exact = len(c), False
            strata.append((Nab, d_e, se_e, n_eval, exact))
        alpha, a_se, reason = _finish(d_o, d_e, se_e, len(shared), Nab, pair=(ra, rb))
        per_pair.append(RaterPairAlphaOT(
            rater_a=ra, rater_b=rb, alpha=alpha, observed=d_o, expected=d_e, expected_se=se_e,
            alpha_se=a_se, exact=exact, n_observed=len(shared), n_expected=n_eval,
            n_cross_pairs=Nab, reason=reason,
        ))

    all_obs = np.concatenate(obs_costs) if obs_costs else np.zeros(0)
    D_o = float(all_obs.mean()) if all_obs.size else float("nan")
    if N_tot > 0:
        w = np.array([s[0] for s in strata], dtype=np.float64) / N_tot
        D_e = float(np.dot(w, [s[1] for s in strata]))
        se2 = np.array([s[2] for s in strata]) ** 2
        SE_e = float(np.sqrt(np.dot(w * w, se2)))
        n_eval_tot = int(sum(s[3] for s in strata))
        exact_tot = all(s[4] for s in strata)
    else:
        D_e, SE_e, n_eval_tot, exact_tot = float("nan"), float("nan"), 0, True
    if R < 2:
        alpha, a_se, reason = float("nan"), float("nan"), f"fewer than two raters ({R}): nothing to compare"
    else:
        alpha, a_se, reason = _finish(D_o, D_e, SE_e, all_obs.size, N_tot, pair=None)
    return AlphaOTResult(
        alpha=alpha, observed=D_o, expected=D_e, expected_se=SE_e, alpha_se=a_se, exact=exact_tot,
        n_observed=int(all_obs.size), n_expected=n_eval_tot, n_cross_pairs=N_tot, reason=reason,
        per_pair=tuple(per_pair), raters=tuple(names), lam=float(lam), beta=float(beta),
        normalization=normalization, max_pairs=max_pairs, seed=int(seed),
    )


def _finish(d_o: float, d_e: float, se_e: float, n_obs: int, n_cross: int, pair) -> tuple[float, float, str]:
    who = f"raters {pair[0]!r} and {pair[1]!r}" if pair else "the corpus"
    if n_obs == 0:
        return float("nan"), float("nan"), (
            f"D_o undefined for {who}: no sample has two raters assigned"
            if pair is None else f"D_o undefined: {who} share no sample")
    if n_cross == 0:
        return float("nan"), float("nan"), (
            f"D_e undefined for {who}: no cross-sample pair (a single sample, or raters never "
            "assigned to different samples)")
    if not d_e > 1e-15:
        return float("nan"), float("nan"), (
            f"D_e = 0 for {who}: every cross-sample pair agrees perfectly (e.g. all sets empty); "
            "there is no variation to correct for chance")
    alpha, se = _ratio(d_o, d_e, se_e)
    return alpha, se, ""
