"""The chance baseline of :mod:`agreement.methods.geometry_agreement`: between-item set pairs (rater ``a``'s
set on sample ``i`` against rater ``b``'s on sample ``j != i``), stratified by rater pair, measured
whole when they fit the pair budget and drawn uniformly with replacement otherwise, and their
threshold matching.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from agreement.core.strata import stratum_ranks
from agreement.methods.geometry_agreement.matching import eligible_entries, match_entries
from agreement.methods.geometry_agreement.ties import row_content_keys
from agreement.methods.geometry_agreement.within import PairSums

if TYPE_CHECKING:
    from agreement.core.data import MultiRaterAnnotations
    from agreement.methods.geometry_agreement.matching import SimilarityBlock

_TAG_BETWEEN = 0x6E0B
_DRAW_CHUNK = 65_536


@dataclass(frozen=True)
class PairStrata:
    """The chance population, one stratum per rater pair that shares a
    measured sample and length stratum ``k`` where both have measured samples
    (one length stratum without ``strata``), ordered by rater names then
    ``k``: ``first`` (rater a, the first set) and ``second`` (rater b).
    Stratum ``x`` holds every ``(i, j)`` with ``i`` in ``first``'s measured
    samples of length stratum ``stratum[x]`` and ``j`` in ``second``'s,
    canonical sample order (``size`` of them, ``pop`` with ``i != j``, costing
    ``cost`` comparisons). ``rater_samples[rater_ptr[r K + k]:rater_ptr[r K + k + 1]]``
    lists rater ``r``'s measured samples of length stratum ``k`` in canonical order."""

    first: np.ndarray
    second: np.ndarray
    size: np.ndarray
    pop: np.ndarray
    cost: np.ndarray
    rater_ptr: np.ndarray
    rater_samples: np.ndarray
    stratum: np.ndarray
    K: int = 1

    def locate(self, x: np.ndarray, loc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Samples ``(i, j)`` of position ``loc`` (``i``-major) of stratum ``x``."""
        fa = self.first[x] * self.K + self.stratum[x]
        fb = self.second[x] * self.K + self.stratum[x]
        nb = self.rater_ptr[fb + 1] - self.rater_ptr[fb]
        i = self.rater_samples[self.rater_ptr[fa] + loc // nb]
        j = self.rater_samples[self.rater_ptr[fb] + loc % nb]
        return i, j


class Cells:
    """The assigned (sample, rater) cells of a corpus and their set sizes, sparse: ``counts[s, r]`` of
    :meth:`agreement.core.data.MultiRaterAnnotations.counts` for arrays ``s``, ``r`` (0 where not assigned),
    in memory of the assigned cells rather than samples × raters."""

    def __init__(self, s: np.ndarray, r: np.ndarray, n: np.ndarray, n_raters: int):
        self.R = int(n_raters)
        key = s.astype(np.int64) * self.R + r
        o = np.argsort(key, kind="stable")
        self.key, self.s, self.r, self.n = key[o], s[o].astype(np.intp), r[o].astype(np.intp), n[o].astype(np.int64)

    @classmethod
    def of(cls, data: MultiRaterAnnotations) -> "Cells":
        """The assigned cells of ``data`` with their annotation counts."""
        s, r = np.nonzero(data.assigned)
        return cls(s, r, data.counts()[s, r], data.num_raters)

    def __getitem__(self, where: tuple[Any, Any]) -> np.ndarray:
        s, r = where
        key = np.asarray(s, dtype=np.int64) * self.R + np.asarray(r, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.key, key), max(len(self.key) - 1, 0))
        found = self.key[pos] == key if len(self.key) else np.zeros(np.shape(key), dtype=bool)
        return np.where(found, self.n[pos] if len(self.n) else 0, 0)


def chance_pair_strata(raters: tuple, cells: Cells, pair_sums: PairSums, canon_kept: np.ndarray, S: int,
                       strata: np.ndarray | None = None) -> PairStrata:
    """Sizes and costs of the strata, from per-rater sums and the per-rater-pair sums of the triples.

    For stratum ``(a, b)`` with measured sample lists ``S_a``, ``S_b`` and
    their shared samples ``C``: ``size = |S_a| |S_b|``, ``pop = size - |C|``
    and ``cost = sum_{i in S_a, j in S_b, i != j} max(1, n_ia n_jb)``
    ``= (sum n_a)(sum n_b) + #{n_ia n_jb = 0} - sum_{C} max(1, n_ia n_ib)``;
    with length ``strata``, the same within each length stratum ``k``
    (``S_a(k)``, ``S_b(k)``, ``C(k)``).
    """
    R = len(raters)
    names = list(raters)
    nrank = np.empty(R, dtype=np.int64)
    nrank[sorted(range(R), key=names.__getitem__)] = np.arange(R)
    k_of = stratum_ranks(strata, S)
    K = int(k_of.max(initial=0)) + 1
    # Each rater's measured samples, by length stratum then canonical order (CSR by rater * K + stratum).
    cpos = np.full(S, -1, dtype=np.int64)
    cpos[canon_kept] = np.arange(len(canon_kept))
    keep = cpos[cells.s] >= 0
    pos, rr = cpos[cells.s[keep]], cells.r[keep]
    kk = k_of[cells.s[keep]]
    o = np.lexsort((pos, kk, rr))
    rsamp, rk = canon_kept[pos[o]].astype(np.intp), (rr[o] * K + kk[o]).astype(np.int64)
    ptr = np.searchsorted(rk, np.arange(R * K + 1)).astype(np.intp)
    nS = np.diff(ptr).astype(np.int64).reshape(R, K)
    n_cell = cells.n[keep][o]
    tot = np.bincount(rk, weights=n_cell, minlength=R * K).astype(np.int64).reshape(R, K)
    nz = np.bincount(rk, weights=n_cell > 0, minlength=R * K).astype(np.int64).reshape(R, K)
    # Rater pairs: the distinct rater pairs of the measured triples, by names.
    pa, pb = pair_sums.code // R, pair_sums.code % R
    swap = nrank[pa] > nrank[pb]
    fa, fb = np.where(swap, pb, pa), np.where(swap, pa, pb)
    code, inv = np.unique(nrank[fa] * R + nrank[fb], return_inverse=True)
    inv = inv.reshape(-1)
    P = len(code)
    first = np.zeros(P, np.intp)
    second = np.zeros(P, np.intp)
    first[inv], second[inv] = fa, fb
    if K == 1:
        common, diag = np.zeros((P, 1), np.int64), np.zeros((P, 1), np.int64)
        np.add.at(common[:, 0], inv, pair_sums.count)
        np.add.at(diag[:, 0], inv, pair_sums.cost)
    else:
        common, diag = _shared_by_stratum(cells, keep, k_of, nrank, code, K)
    # Strata: (rater pair, length stratum) where both have measured samples.
    size_pk = nS[first] * nS[second]
    xp, xk = np.nonzero(size_pk)
    a, b = first[xp], second[xp]
    size = size_pk[xp, xk]
    cost = tot[a, xk] * tot[b, xk] + (size - nz[a, xk] * nz[b, xk]) - diag[xp, xk]
    return PairStrata(first=a, second=b, size=size, pop=size - common[xp, xk], cost=cost, rater_ptr=ptr,
                   rater_samples=rsamp, stratum=xk.astype(np.intp), K=K)


def _shared_by_stratum(cells: Cells, keep: np.ndarray, k_of: np.ndarray, nrank: np.ndarray, code: np.ndarray,
                       K: int) -> tuple[np.ndarray, np.ndarray]:
    """Per rater pair (``code``: name ranks ``rank_a R + rank_b``) and length stratum: its shared measured
    samples and their comparisons ``sum max(1, n_ia n_ib)``, ``(P, K)`` each."""
    R = len(nrank)
    s, r, n = cells.s[keep], cells.r[keep], cells.n[keep]
    order = np.lexsort((nrank[r], s))  # by sample, then rater name
    s, r, n = s[order], r[order], n[order]
    k = np.bincount(s, minlength=int(s.max(initial=-1)) + 1)
    start = np.cumsum(k) - k
    parts = []
    for m in np.unique(k[k >= 2]):  # samples with the same number of raters share one triangle
        samp = np.flatnonzero(k == m)
        iu, ju = np.triu_indices(int(m), 1)
        ia, ib = (start[samp][:, None] + iu).reshape(-1), (start[samp][:, None] + ju).reshape(-1)
        parts.append((np.repeat(samp, len(iu)), ia, ib))
    common, diag = np.zeros((len(code), K), np.int64), np.zeros((len(code), K), np.int64)
    if parts:
        samp, ia, ib = (np.concatenate(x) for x in zip(*parts, strict=True))
        p = np.searchsorted(code, nrank[r[ia]] * R + nrank[r[ib]])
        np.add.at(common, (p, k_of[samp]), 1)
        np.add.at(diag, (p, k_of[samp]), np.maximum(1, n[ia] * n[ib]))
    return common, diag


@dataclass(frozen=True)
class ChanceSample:
    """Distinct between-item set pairs ``(i, first[x])`` vs ``(j, second[x])``
    of stratum ``x``, with their multiplicity, sorted by ``(x, i, j)``."""

    i: np.ndarray
    j: np.ndarray
    a: np.ndarray
    b: np.ndarray
    mult: np.ndarray
    draws: int
    exact: bool
    n_population: int


def chance_set_pairs(strata: PairStrata, counts: Cells | np.ndarray, budget: int, seed: int,
                      groups: np.ndarray | None = None) -> ChanceSample:
    """Every between-item set pair when their cost fits in ``budget``;
    otherwise uniform draws with replacement over the strata (a draw with
    ``i == j``, or with ``groups[i] == groups[j]`` when groups are given, is
    rejected) until the next one would exceed it (or nothing but rejections
    comes: no pair of different groups)."""
    def apart(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        differ: np.ndarray = i != j if groups is None else groups[i] != groups[j]
        return differ

    n_pop, pop_cost = int(strata.pop.sum()), int(strata.cost.sum())
    exact = pop_cost <= budget
    cum_end = np.cumsum(strata.size)
    cum_start = cum_end - strata.size
    bi, bj, bx, draws = [], [], [], 0
    if n_pop and exact:
        x = np.repeat(np.arange(len(strata.size)), strata.size)
        i, j = strata.locate(x, np.arange(int(cum_end[-1]), dtype=np.int64) - cum_start[x])
        ok = apart(i, j)
        n_pop = n_pop if groups is None else int(ok.sum())
        bi, bj, bx, draws = [i[ok]], [j[ok]], [x[ok]], n_pop
    elif n_pop:
        rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, _TAG_BETWEEN]))
        remaining, fruitless = budget, 0
        while remaining > 0 and fruitless < 20:
            u = rng.integers(0, int(cum_end[-1]), size=_DRAW_CHUNK, dtype=np.int64)
            x = np.searchsorted(cum_end, u, side="right")
            i, j = strata.locate(x, u - cum_start[x])
            ok = apart(i, j)
            fruitless = 0 if ok.any() else fruitless + 1
            i, j, x = i[ok], j[ok], x[ok]
            cc = np.cumsum(np.maximum(1, counts[i, strata.first[x]] * counts[j, strata.second[x]]))
            take = int(np.searchsorted(cc, remaining, side="right"))
            bi.append(i[:take]); bj.append(j[:take]); bx.append(x[:take])
            draws += take
            if take < len(cc):
                break
            remaining -= int(cc[-1]) if len(cc) else 0
    i, j, x = (np.concatenate(v).astype(np.intp) if v else np.zeros(0, np.intp) for v in (bi, bj, bx))
    mult = np.zeros(0, np.int64)
    if len(i):  # distinct set pairs, sorted by (x, i, j), with multiplicities
        o = np.lexsort((j, i, x))
        i, j, x = i[o], j[o], x[o]
        new = np.r_[True, (x[1:] != x[:-1]) | (i[1:] != i[:-1]) | (j[1:] != j[:-1])]
        start = np.flatnonzero(new)
        mult = np.diff(np.r_[start, len(i)]).astype(np.int64)
        i, j, x = i[start], j[start], x[start]
    return ChanceSample(i=i, j=j, a=strata.first[x], b=strata.second[x], mult=mult, draws=int(draws),
                         exact=bool(exact), n_population=n_pop)


@dataclass(frozen=True)
class BetweenMatch:
    """The threshold matching of the chance sample: per matched pair its set
    pair (``pid``) and distance; per set pair its sizes and unmatched count;
    and the comparisons spent."""

    pid: np.ndarray
    distance: np.ndarray
    n: np.ndarray
    m: np.ndarray
    unmatched: np.ndarray
    comparisons: int


def match_between(data: MultiRaterAnnotations, counts: Cells | np.ndarray, chance: ChanceSample,
                  sim_fn: SimilarityBlock, stack_fn: SimilarityBlock | None, t: float) -> BetweenMatch:
    """Matches every drawn set pair: one similarity block per (sample ``i``,
    rater ``a``) against the sets of all its partners."""
    R, N = data.num_raters, len(data)
    bi, bj, ba, bb = chance.i, chance.j, chance.a, chance.b
    K = len(bi)
    bn = counts[bi, ba].astype(np.int64) if K else np.zeros(0, np.int64)
    bm = counts[bj, bb].astype(np.int64) if K else np.zeros(0, np.int64)
    tasks_a, tasks_b, task_pairs = [], [], []
    if K:
        go = np.lexsort((bj, ba, bi))
        gkey = bi[go].astype(np.int64) * R + ba[go]
        starts = np.flatnonzero(np.r_[True, gkey[1:] != gkey[:-1]])
        ends = np.r_[starts[1:], len(go)]
        for lo_g, hi_g in zip(starts.tolist(), ends.tolist(), strict=True):
            ks = go[lo_g:hi_g]
            i0, a0 = int(bi[ks[0]]), int(ba[ks[0]])
            if counts[i0, a0] == 0:
                continue
            ks = ks[bm[ks] > 0]
            if not len(ks):
                continue
            cstart = data.offsets[bj[ks] * R + bb[ks]]
            clen = bm[ks]
            cend = np.cumsum(clen)
            tasks_b.append(np.repeat(cstart - (cend - clen), clen) + np.arange(int(cend[-1])))
            ra = data.rows(i0, a0)
            tasks_a.append(np.arange(ra.start, ra.stop))
            task_pairs.append(np.repeat(ks, clen))  # set pair of every column
    colpos, ei, ej, es = eligible_entries(sim_fn, stack_fn, t, tasks_a, tasks_b)
    ep = np.concatenate(task_pairs)[colpos].astype(np.int64) if len(colpos) else np.zeros(0, np.int64)
    mk = match_entries(ep, ei, ej, es, N, tie_keys=lambda rows: row_content_keys(data, rows=rows))
    pid = ep[mk]
    matched = np.bincount(pid, minlength=K).astype(np.int64)
    return BetweenMatch(pid, np.clip(1.0 - es[mk], 0.0, 1.0), bn, bm, bn + bm - 2 * matched,
                         int(np.maximum(1, bn * bm).sum()) if K else 0)
