"""Consensus input: parameter checks, the label type of a corpus, and its units.

A **unit** is one candidate object of one sample: the annotations of
different raters that a correspondence solver (:mod:`agreement.geometry.correspondence`,
KαLOS greedy by default) judged to be the same object, at most one per rater.
Every consensus method except WBF starts from the units; WBF clusters boxes
its own way (:mod:`agreement.methods.consensus.wbf`).

:class:`UnitTable` holds the units of a whole corpus in flat arrays so that
every later step is a few vectorised passes: the unit of each annotation row,
the sample of each unit, and the rows of each unit contiguous in ``order``.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from agreement.core.data import MultiRaterAnnotations, encode_classes
from agreement.core.kinds import ColumnKind, FusionHook, column_kind, column_kinds, consensus_spec, is_column
from agreement.geometry.correspondence import check_cost, check_solver, check_tau, solve_units
from agreement.methods.kalos import candidate_pairs

__all__ = [
    "METHODS",
    "GEOMETRIES",
    "UnitTable",
    "check_probability",
    "check_review_band",
    "label_type",
    "fused_columns",
    "consensus_columns",
    "geometry_fusion",
    "fusion_hook",
    "unit_keys",
    "encode_classes",
    "build_units",
    "units_from_labels",
    "estimate_coincidence",
]

#: Consensus methods, the default first.
METHODS: tuple[str, ...] = ("em", "majority", "wbf")
#: Geometries the consensus fuses (``"auto"`` picks the one the labels carry).
GEOMETRIES: tuple[str, ...] = ("boxes", *(k.name for k in column_kinds() if k.per == "row" and isinstance(k.fusion, str)))
def _unsupported() -> dict[str, str]:
    """The per-annotation geometry columns a consensus cannot fuse (their declarations give no fusion:
    :attr:`agreement.core.kinds.ColumnKind.fusion`), with how messages name them."""
    return {k.name: k.label or k.name for k in column_kinds() if k.per == "row" and k.fusion is None}


def check_probability(value: float, name: str) -> float:
    """``value`` as a float in ``(0, 1]``; ``ValueError`` naming ``name`` otherwise (NaN, bool, str too)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    v = float(value)
    if not 0.0 < v <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return v


def check_review_band(band: Any) -> tuple[float, float]:
    """``(lo, hi)`` with ``0 <= lo <= hi <= 1``; ``ValueError`` otherwise."""
    try:
        lo, hi = (float(v) for v in band)
    except (TypeError, ValueError):
        raise ValueError(f"review_band must be two numbers (lo, hi) in [0, 1], got {band!r}") from None
    if not (0.0 <= lo <= hi <= 1.0):
        raise ValueError(f"review_band must satisfy 0 <= lo <= hi <= 1, got {band!r}")
    return lo, hi


def fused_columns() -> tuple[ColumnKind, ...]:
    """The declared geometry columns a consensus fuses by a built-in fusion (their
    :attr:`~agreement.core.kinds.ColumnKind.fusion` is a name), in declaration order."""
    return tuple(k for k in column_kinds() if k.per == "row" and isinstance(k.fusion, str))


def consensus_columns() -> tuple[ColumnKind, ...]:
    """The declared geometry columns a consensus fuses, in declaration order: those of a built-in fusion
    (:func:`fused_columns`) and those declared with a fusion hook (:func:`fusion_hook`)."""
    return tuple(k for k in column_kinds() if k.per == "row" and k.fusion is not None)


def geometry_fusion(kind: str) -> str:
    """The built-in fusion of the geometry ``kind`` (:func:`label_type`): its declaration's
    :attr:`~agreement.core.kinds.ColumnKind.fusion` (``"keypoints"``, ``"cuboids"``, ``"pixels"``), or
    ``"boxes"`` for plain boxes and for a column fused by its own hook (:func:`fusion_hook`: the units'
    boxes are fused as plain boxes, the column by the hook)."""
    fusion = column_kind(kind).fusion if is_column(kind) else None
    return fusion if isinstance(fusion, str) else "boxes"


def fusion_hook(kind: str) -> FusionHook | None:
    """The fusion hook of the geometry ``kind``: its declaration's
    :attr:`~agreement.core.kinds.ColumnKind.fusion` when it is a callable
    (:data:`~agreement.core.kinds.FusionHook`, ``(column, units, weights) -> one value per unit``); ``None``
    for plain boxes and the built-in fusions."""
    fusion = column_kind(kind).fusion if is_column(kind) else None
    return fusion if callable(fusion) else None


def _geometries() -> tuple[str, ...]:
    return ("boxes", *(k.name for k in consensus_columns()))


def _row_kinds(data: MultiRaterAnnotations) -> np.ndarray:
    """Per row: the last declared column that every annotation must carry (masks, polygons: their
    :attr:`~agreement.core.kinds.ConsensusSpec.carries`) which the row carries, or ``"boxes"``."""
    kind = np.full(len(data), "boxes", dtype=object)
    for col in consensus_columns():
        column = data.geometry.get(col.name)
        if col.consensus.carries is not None and column is not None:
            kind[col.consensus.carries(column)] = col.name
    return kind


def _whole_corpus_kind(data: MultiRaterAnnotations, geometry: str) -> str | None:
    """The geometry of a corpus holding a column picked whenever present (3D cuboids, keypoints; the
    later declared first), ``None`` for none; ``ValueError`` for a ``geometry`` that does not apply."""
    for col in reversed([k for k in consensus_columns() if k.consensus.carries is None]):
        what = col.label or col.name
        if data.geometry.get(col.name) is not None:
            if geometry in ("auto", col.name):
                return col.name
            if geometry == "boxes" and col.consensus.boxes:
                return "boxes"
            raise ValueError(f"the labels are {what}; geometry={geometry!r} does not apply to them")
        if geometry == col.name:
            raise ValueError(f"geometry={geometry!r} needs {what}, and the labels have none")
    return None


def label_type(data: MultiRaterAnnotations, *, geometry: str = "auto") -> str:
    """The geometry a consensus of ``data`` fuses: one of :data:`GEOMETRIES` (or a declared column).

    ``"auto"``: cuboids if the corpus holds 3D cuboids, keypoints if it holds
    keypoints, masks or polygons if *every* annotation carries one, a column declared with a fusion hook
    (:func:`fusion_hook`) when the corpus holds it, boxes
    otherwise (each column's :class:`~agreement.core.kinds.ConsensusSpec`). A named geometry must be present
    on every annotation (``"boxes"`` always is, for 2D labels: masks, polygons and keypoints have
    boxes).

    Args:
        data: the corpus.
        geometry: ``"auto"``, ``"boxes"`` or a fused column's name.

    Returns:
        The geometry's name.

    Raises:
        ValueError: For an unknown ``geometry``; for 3D points, 3D polylines or point-cloud
            segments (no consensus for them); for **mixed label types across
            raters** (some raters drew masks or polygons, others plain boxes),
            naming the raters of each type; for a geometry the labels lack.
    """
    names = _geometries()
    if geometry != "auto" and geometry not in names:
        raise ValueError(f"unsupported geometry {geometry!r}; choose 'auto' or one of {', '.join(names)}")
    for attr, what in _unsupported().items():
        if data.geometry.get(attr) is not None:
            raise ValueError(
                f"consensus supports boxes, polygons, masks, keypoints and 3D cuboids; these labels are "
                f"{what}, an unsupported label type"
            )
    whole = _whole_corpus_kind(data, geometry)
    if whole is not None:
        return whole
    if geometry == "boxes":
        return "boxes"
    kind = _row_kinds(data)
    present = sorted(set(kind.tolist()))
    if len(present) > 1:
        by_kind = {k: sorted({data.raters[r] for r in np.unique(data.rater_index[kind == k])}) for k in present}
        detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in by_kind.items())
        raise ValueError(
            f"mixed label types across raters ({detail}): consensus fuses one geometry; give every rater "
            "the same label type, or pass geometry='boxes' to fuse the boxes only"
        )
    found = present[0] if present else "boxes"
    if geometry not in ("auto", found):
        raise ValueError(f"geometry={geometry!r} but the labels carry {found}")
    return found


@dataclass(frozen=True)
class UnitTable:
    """The units of a corpus, flat.

    Attributes:
        row_unit (ndarray (N,) of int):
            Global unit of every annotation row, ``0 .. U - 1`` (``-1``: in no
            unit, e.g. a zero-area box that WBF skips).
        unit_sample (ndarray (U,) of int):
            Sample of each unit; units are numbered sample by sample.
        order (ndarray (M,) of int):
            The rows that are in a unit, sorted by unit (stable: by rater within
            a unit).
        starts (ndarray (U + 1,) of int):
            Unit ``u`` holds rows ``order[starts[u]:starts[u + 1]]``.
        member_unit (ndarray (M,) of int):
            ``row_unit[order]``.
    """

    row_unit: np.ndarray
    unit_sample: np.ndarray
    order: np.ndarray
    starts: np.ndarray
    member_unit: np.ndarray

    @property
    def n_units(self) -> int:
        """``U``: the number of units."""
        return len(self.unit_sample)

    @property
    def size(self) -> np.ndarray:
        """``(U,)`` members per unit."""
        return np.diff(self.starts)

    def first(self) -> np.ndarray:
        """``(U,)`` the first member row of each unit (the reference of the fusion)."""
        first: np.ndarray = self.order[self.starts[:-1]]
        return first


def units_from_labels(row_unit: np.ndarray, sample_index: np.ndarray, *, n_units: int | None = None) -> UnitTable:
    """A :class:`UnitTable` from a global unit per row (``-1`` for none) and each row's sample."""
    row_unit = np.asarray(row_unit, dtype=np.int64)
    U = int(row_unit.max()) + 1 if n_units is None and len(row_unit) and row_unit.max() >= 0 else int(n_units or 0)
    inside = np.flatnonzero(row_unit >= 0)
    order = inside[np.argsort(row_unit[inside], kind="stable")]
    member_unit = row_unit[order]
    starts = np.searchsorted(member_unit, np.arange(U + 1)).astype(np.int64)
    unit_sample = np.zeros(U, dtype=np.int64)
    if U:
        unit_sample = np.asarray(sample_index, dtype=np.int64)[order[starts[:-1]]]
    return UnitTable(row_unit, unit_sample, order, starts, member_unit)


def build_units(
    data: MultiRaterAnnotations,
    codes: np.ndarray,
    similarity: str | Callable,
    tau: float,
    *,
    solver: str = "greedy",
    cost: str = "soft",
    keys: np.ndarray | None = None,
) -> UnitTable:
    """Units of every sample by the KαLOS correspondence (:func:`agreement.geometry.correspondence.solve_units`).

    Candidate pairs are annotations of different raters on one sample with
    similarity ``>= tau`` (:func:`agreement.methods.kalos.candidate_pairs`); the
    solver clusters them, at most one annotation per rater per unit, under
    the class-aware cost ψ_soft (``cost="soft"``) or ``-s``.
    """
    tau = check_tau(tau)
    check_solver(solver)
    check_cost(cost)
    i, j, s = candidate_pairs(data, similarity, tau)
    local = solve_units(data.rater_index, codes, i, j, s, tau=tau, solver=solver, cost=cost,
                        group=data.sample_index, keys=data.boxes if keys is None else keys)
    S = data.num_samples
    n_local = np.zeros(S, dtype=np.int64)
    if len(local):
        np.maximum.at(n_local, data.sample_index, local + 1)
    offset = np.cumsum(n_local) - n_local
    row_unit = offset[data.sample_index] + local if len(local) else np.zeros(0, np.int64)
    return units_from_labels(row_unit, data.sample_index, n_units=int(n_local.sum()))


def unit_keys(data: MultiRaterAnnotations, kind: str) -> np.ndarray:
    """The ``(N, k)`` rows that key the units of geometry ``kind``: its column where its
    :attr:`~agreement.core.kinds.ConsensusSpec.keys` says so (3D cuboids), the boxes otherwise."""
    keys: np.ndarray = np.asarray(data.geometry[kind]) if consensus_spec(kind).keys else data.boxes
    return keys


def _pairwise(similarity: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The all-pairs similarity ``similarity`` (``"iou"`` or ``"cuboid_iou"``) of two arrays of unit keys."""
    if similarity == "cuboid_iou":
        from agreement.geometry.cuboids import pairwise_cuboid_iou

        return pairwise_cuboid_iou
    from agreement.geometry.boxes import pairwise_iou

    return pairwise_iou


def _canonical_rows(data: MultiRaterAnnotations, kind: str) -> np.ndarray:
    """The annotation rows sorted by sample id, rater name and geometry: an order that does not depend on
    how the corpus happens to be ordered (a shuffled copy of a corpus gets the same subsample)."""
    s_rank = np.unique(np.asarray(data.sample_ids).astype(str), return_inverse=True)[1].ravel()
    r_rank = np.unique(np.asarray(data.raters).astype(str), return_inverse=True)[1].ravel()
    geo = unit_keys(data, kind)
    keys = [geo[:, k] for k in reversed(range(geo.shape[1]))]
    return np.lexsort(keys + [r_rank[data.rater_index], s_rank[data.sample_index]])


def _canonical_rows_at(data: MultiRaterAnnotations, kind: str, positions: np.ndarray) -> np.ndarray:
    """``_canonical_rows(data, kind)[positions]`` without sorting every row: the canonical order sorts by sample
    id first, so a position falls in the block of one sample's rows, and only the blocks of ``positions`` are
    sorted (by rater name and geometry, ties in row order, as the stable full sort leaves them)."""
    s_rank = np.unique(np.asarray(data.sample_ids).astype(str), return_inverse=True)[1].ravel()
    r_rank = np.unique(np.asarray(data.raters).astype(str), return_inverse=True)[1].ravel()
    row_rank = s_rank[data.sample_index]
    by_rank = np.argsort(row_rank, kind="stable")  # the rows of each sample rank together, in row order
    ends = np.cumsum(np.bincount(row_rank, minlength=len(s_rank)))
    geo = unit_keys(data, kind)
    out = np.empty(len(positions), dtype=np.intp)
    block = np.searchsorted(ends, positions, side="right")
    for k in np.unique(block).tolist():
        lo = int(ends[k - 1]) if k else 0
        rows = by_rank[lo:int(ends[k])]
        keys = [geo[rows, c] for c in reversed(range(geo.shape[1]))]
        ordered = rows[np.lexsort(keys + [r_rank[data.rater_index[rows]]])]
        here = block == k
        out[here] = ordered[positions[here] - lo]
    return out


def estimate_coincidence(data: MultiRaterAnnotations, kind: str, tau: float, *, n: int = 1000, seed: int = 0) -> float:
    """``ρ``: the chance that two unrelated labels match, i.e. reach similarity ``tau``.

    Estimated from up to ``n × n`` pairs of annotations of *different*
    samples drawn with a fixed seed from the rows in a canonical order (by
    sample id, rater and geometry: the estimate does not depend on the
    order of the corpus): box IoU for 2D labels, the similarity of the unit keys for a column that keys
    its units (:attr:`~agreement.core.kinds.ConsensusSpec.keys`: cuboid IoU in 3D, ``n`` capped at
    :attr:`~agreement.core.kinds.ConsensusSpec.coincidence_rows`, 300). Where no pair matches, half of one pair
    in the number compared (a conservative floor); at most 0.5.
    """
    rng = np.random.default_rng(seed)
    N = len(data)
    if N < 2:
        return 0.5
    spec = consensus_spec(kind)
    if spec.coincidence_rows is not None:
        n = min(n, spec.coincidence_rows)
    pa = np.sort(rng.choice(N, size=min(n, N), replace=False))
    pb = np.sort(rng.choice(N, size=min(n, N), replace=False))
    if N > n:  # the rows at those positions of the canonical order (every row: any order gives the same count)
        a, b = np.split(_canonical_rows_at(data, kind, np.concatenate([pa, pb])), [len(pa)])
    else:
        a, b = pa, pb
    keys = unit_keys(data, kind)
    sim = _pairwise(spec.similarity if spec.keys else "iou")(keys[a], keys[b])
    other = data.sample_index[a][:, None] != data.sample_index[b][None, :]
    pairs = int(other.sum())
    if pairs == 0:
        return 0.5
    hits = int((sim[other] >= tau).sum())
    return float(min(0.5, max(hits, 0.5) / pairs))
