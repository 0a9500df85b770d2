"""The chance population of αOT, cut into strata and blocks, and its counter-based draws.

Helpers of :mod:`agreement.methods.ot.alpha_ot` (whose docstring states the design):

* :func:`canonical_sample_order`: the order in which cross pairs are enumerated and drawn;
* splitmix64 streams (Steele, Lea & Flood 2014), one per rater pair and per block;
* :func:`build_pair_strata`: per rater pair ``{a, b}`` (the drawing stratum) its cross pairs
  ``N_ab = |S_a| |S_b| - |same-group pairs|``, cut into one *block* per chance stratum ``k``
  (samples of comparable scale: :mod:`agreement.core.strata`) where both raters have cells,
  each block weighed ``w_k`` by the pair's share of shared samples in ``k``;
* :func:`cross_pairs`: the cross pairs evaluated, every one of an exact block and
  ``n_alloc`` uniform draws with replacement of the others;
* :func:`pair_of_blocks`: ``D_e,ab = sum_k w_k mean_k``, ``SE^2 = sum_k w_k^2 SE_k^2``.

This module does not import FiftyOne.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from agreement.core.rater_pairs import RaterPairTable
from agreement.core.strata import stratum_ranks

__all__ = ["canonical_sample_order"]


def canonical_sample_order(sample_ids: np.ndarray) -> np.ndarray:
    """Sample indices sorted by ``str(sample_id)`` (stable): the order in which
    αOT enumerates and draws cross pairs, independent of the corpus order."""
    keys = [str(x) for x in np.asarray(sample_ids, dtype=object).reshape(-1)]
    return np.asarray(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.intp)


# ---------------------------------------------------------------------------
# Counter-based random draws (splitmix64), vectorised over strata
# ---------------------------------------------------------------------------

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def mix64(z: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser of a uint64 array (wrapping arithmetic)."""
    z = np.asarray(z, dtype=np.uint64)
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    out: np.ndarray = z ^ (z >> np.uint64(31))
    return out


def stratum_keys(seed: int, raters: Sequence[Any], first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``key_ab`` of each stratum ``(first[p], second[p])`` (rater indices; module docstring)."""
    base = mix64(np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64) + GOLDEN)
    crc = np.array([zlib.crc32(str(r).encode()) for r in raters], dtype=np.uint64)
    return mix64((base ^ ((crc[first] << np.uint64(32)) | crc[second])) + GOLDEN)


def uniform_draws(keys: np.ndarray, counter: np.ndarray) -> np.ndarray:
    """Uniform ``[0, 1)`` numbers: draw ``counter`` of the stream ``keys`` (53 bits)."""
    z = mix64(keys + (counter.astype(np.uint64) + np.uint64(1)) * GOLDEN)
    out: np.ndarray = (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    return out


@dataclass(frozen=True, eq=False)
class PairStrata:
    """The chance strata: one per rater pair of the table (who, how many cross pairs), each cut into
    *blocks*, one per length stratum where both raters have cells (where the draws happen)."""

    first: np.ndarray  # rater index of the name-first rater of each pair
    second: np.ndarray
    size: np.ndarray  # N_ab: cross pairs of the pair (every block)
    blk_pair: np.ndarray  # per block: its rater pair (blocks sorted by pair, then stratum)
    blk_stratum: np.ndarray  # its length stratum, 0 .. K - 1
    blk_start_first: np.ndarray  # position of its cells in ``cell_sample``
    blk_start_second: np.ndarray
    blk_n_first: np.ndarray  # number of the pair's samples in the stratum, per side
    blk_n_second: np.ndarray
    blk_size: np.ndarray  # cross pairs of the block
    blk_weight: np.ndarray  # share of the pair's D_e: its share of the pair's shared samples
    cell_sample: np.ndarray  # the assigned cells, by rater, stratum, then canonical sample order: sample
    cell_rater: np.ndarray  # and rater
    cell_group: np.ndarray  # and the group of the sample (a cross pair joins cells of different groups)


def build_pair_strata(sample_ids: np.ndarray, cs: np.ndarray, cr: np.ndarray, raters: tuple, table: RaterPairTable,
            shared: tuple[np.ndarray, np.ndarray], groups: np.ndarray | None = None,
            strata: np.ndarray | None = None) -> PairStrata:
    """The strata and blocks; ``shared``: the (sample, pair id) of every shared sample of a pair."""
    S, R = len(sample_ids), len(raters)
    srank = np.empty(S, np.intp)
    srank[canonical_sample_order(sample_ids)] = np.arange(S)
    k_of = stratum_ranks(strata, S)
    K = int(k_of.max(initial=0)) + 1
    order = np.lexsort((srank[cs], k_of[cs], cr))
    cs, cr = cs[order], cr[order]
    start = np.searchsorted(cr.astype(np.int64) * K + k_of[cs], np.arange(R * K + 1)).astype(np.intp)
    count = np.diff(start).reshape(R, K)
    cg = cs if groups is None else np.asarray(groups, dtype=np.int64)[cs]
    names = list(raters)
    nrank = np.empty(R, np.intp)
    nrank[sorted(range(R), key=names.__getitem__)] = np.arange(R)
    swap = nrank[table.a] > nrank[table.b]
    first = np.where(swap, table.b, table.a)
    second = np.where(swap, table.a, table.b)
    P = len(first)
    prod = count[first].astype(np.int64) * count[second]  # (P, K)
    bp, bk = np.nonzero(prod)
    s_sh, p_sh = shared
    n_sh = np.bincount(p_sh.astype(np.int64) * K + k_of[s_sh], minlength=P * K).reshape(P, K)
    if groups is None:
        same = n_sh  # a cell pair of one group is a shared sample
    else:
        same = _same_group_pairs(cg, cr, ck=k_of[cs], R=R, K=K, first=first, second=second)
    blk_size = prod[bp, bk] - same[bp, bk]
    size = np.bincount(bp, blk_size, P).astype(np.int64) if P else np.zeros(0, np.int64)
    weight = np.where(blk_size > 0, n_sh[bp, bk], 0).astype(np.float64)
    tot = np.bincount(bp, weight, P)
    none = tot[bp] == 0  # shared samples only in strata without cross pairs: weigh blocks by their sizes
    weight[none] = blk_size[none]
    tot = np.bincount(bp, weight, P)
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = np.where(weight > 0, weight / tot[bp], 0.0)
    bf, bs = first[bp], second[bp]
    return PairStrata(first=first, second=second, size=size, blk_pair=bp.astype(np.intp), blk_stratum=bk.astype(np.intp),
                   blk_start_first=start[bf * K + bk], blk_start_second=start[bs * K + bk], blk_n_first=count[bf, bk],
                   blk_n_second=count[bs, bk], blk_size=blk_size.astype(np.int64), blk_weight=weight, cell_sample=cs,
                   cell_rater=cr, cell_group=cg)


def _same_group_pairs(cg: np.ndarray, cr: np.ndarray, ck: np.ndarray, R: int, K: int, first: np.ndarray,
                      second: np.ndarray) -> np.ndarray:
    """Per rater pair and length stratum, the pairs of their cells in the same group:
    ``sum_g n_first(k, g) n_second(k, g)``, ``(P, K)``."""
    from scipy import sparse

    if not len(first) or not len(cr):
        return np.zeros((len(first), K), np.int64)
    col, g = np.unique(np.stack([ck.astype(np.int64), cg.astype(np.int64)], axis=1), axis=0, return_inverse=True)
    g = g.reshape(-1)
    counts = sparse.csr_matrix((np.ones(len(cr), np.int64), (cr, g)), shape=(R, len(col)))
    to_k = sparse.csr_matrix((np.ones(len(col), np.int64), (np.arange(len(col)), col[:, 0])), shape=(len(col), K))
    return np.asarray((counts[first].multiply(counts[second]) @ to_k).todense(), dtype=np.int64).reshape(-1, K)


def cross_pairs(st: PairStrata, blocks: np.ndarray, n_alloc: np.ndarray, exact: np.ndarray,
                 keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cross pairs evaluated, as ``(block, cell of the first rater, cell of the second)``
    (cells: positions in ``st.cell_sample``): every one of an exact block, and
    ``n_alloc`` draws (uniform with replacement, different groups) of each other block."""
    ex = blocks[exact]
    prod = st.blk_n_first[ex].astype(np.int64) * st.blk_n_second[ex]
    p = np.repeat(ex, prod)
    u = np.arange(int(prod.sum())) - np.repeat(np.cumsum(prod) - prod, prod)
    ci, cj = _cells(st, p, u)
    ok = st.cell_group[ci] != st.cell_group[cj]
    parts = [(p[ok], ci[ok], cj[ok])]
    mc = blocks[~exact]
    drawn = np.zeros(len(mc), np.int64)  # counter of each block's stream
    need = n_alloc[~exact].astype(np.int64)
    while need.sum():
        local = np.repeat(np.arange(len(mc)), need)
        p = mc[local]
        k = drawn[local] + (np.arange(len(p)) - np.repeat(np.cumsum(need) - need, need))
        prod = st.blk_n_first[p].astype(np.float64) * st.blk_n_second[p]
        u = np.minimum(np.floor(uniform_draws(keys[p], k) * prod), prod - 1).astype(np.int64)
        ci, cj = _cells(st, p, u)
        drawn += need
        ok = st.cell_group[ci] != st.cell_group[cj]
        parts.append((p[ok], ci[ok], cj[ok]))
        need = np.bincount(local[~ok], minlength=len(mc)).astype(np.int64)
    p_all, ci_all, cj_all = (np.concatenate([x[q] for x in parts]) for q in range(3))
    return p_all, ci_all, cj_all


def _cells(st: PairStrata, p: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position ``u`` of the product ``S_first(k) x S_second(k)`` of block ``p`` (row-major, both
    sides in canonical sample order) as the two cells."""
    ns = st.blk_n_second[p]
    return st.blk_start_first[p] + u // ns, st.blk_start_second[p] + u % ns


def block_keys(pair_keys: np.ndarray, st: PairStrata) -> np.ndarray:
    """The stream key of every block: its rater pair's ``key_ab`` in the first length stratum (so that a
    corpus of one stratum draws exactly as without strata), ``splitmix64(key_ab xor splitmix64(k))`` in
    stratum ``k > 0``."""
    key = pair_keys[st.blk_pair]
    k = st.blk_stratum.astype(np.uint64)
    return np.where(k == 0, key, mix64(key ^ mix64(k * GOLDEN + GOLDEN)))


def pair_of_blocks(st: PairStrata, mean_e: np.ndarray, se_e: np.ndarray, n_eval: np.ndarray,
                    is_exact: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per rater pair from its blocks: ``D_e,ab = sum_k w_k mean_k`` and ``SE^2 = sum_k w_k^2 SE_k^2``
    (``w_k`` the block weights); a pair of one block takes its block's numbers as they are."""
    P = len(st.size)
    bp = st.blk_pair
    n_blocks = np.bincount(bp, minlength=P)
    one = n_blocks[bp] == 1
    mean_p, se_p = np.full(P, np.nan), np.full(P, np.nan)
    mean_p[bp[one]], se_p[bp[one]] = mean_e[one], se_e[one]
    many = ~one & (st.blk_weight > 0)
    w = st.blk_weight[many]
    multi = np.flatnonzero(n_blocks > 1)
    with np.errstate(invalid="ignore"):
        mean_p[multi] = np.bincount(bp[many], w * mean_e[many], P)[multi]
        se_p[multi] = np.sqrt(np.bincount(bp[many], (w * se_e[many]) ** 2, P))[multi]
    n_p = np.bincount(bp, n_eval, P).astype(np.int64)
    exact_p = np.bincount(bp, ~is_exact, P) == 0
    return mean_p, se_p, n_p, exact_p
