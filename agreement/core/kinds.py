"""The label kinds' geometry columns, each declared once: how a corpus stores, checks, converts and compares it.

A :class:`~agreement.core.data.MultiRaterAnnotations` holds its boxes, class
labels and ids, and, in one mapping ``geometry``, the optional columns a label
kind adds: polygons, instance (or semantic) masks, keypoints, 3D cuboids, 3D
points, 3D polylines, point-cloud segments and the per-sample point-cloud
sizes. Each column is a :class:`ColumnKind` registered here once
(:func:`register_column`), with

* its storage: one entry per annotation (``per="row"``) or per sample
  (``per="sample"``), held as a list (``container="list"``) or an array;
* its check (:attr:`ColumnKind.normalise`: shape, dtype, length), its
  reordering and subsetting (:meth:`ColumnKind.take`), its joining across
  annotation sets or corpus parts (:meth:`ColumnKind.join`);
* its conversion from pixels (:attr:`ColumnKind.to_relative`) where it has
  image coordinates;
* the similarities it offers: names of
  :func:`agreement.geometry.similarity.similarity_matrix` (built in), or
  callables ``(data, rows_a, rows_b) -> (n, m)`` in ``[0, 1]`` for a kind
  declared elsewhere;
* how a consensus fuses it (:attr:`ColumnKind.fusion`): the name of the
  built-in fusion of :mod:`agreement.methods.consensus.fusion`, or a callable.

The corpus, its validation and the methods ask the declaration; nothing tests
a column by its name. A new kind is one :func:`register_column` call (see
``tests/test_declared_kind.py``); :func:`unregister_column` undoes it.

This module does not import FiftyOne (nor any other module of the library).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__all__ = ["ColumnKind", "ConsensusSpec", "BOX_CONSENSUS", "consensus_spec", "register_column", "unregister_column", "column_kind", "column_kinds", "is_column",
           "keypoint_array", "SimilarityHook", "FusionHook"]

#: ``(data, rows_a, rows_b) -> (n, m)`` similarities in ``[0, 1]`` between two sets of rows of a corpus.
SimilarityHook = Callable[[Any, np.ndarray, np.ndarray], np.ndarray]
#: ``(column_rows, units, weights) -> fused`` one fused value per unit (a consensus of the kind's geometry).
FusionHook = Callable[[Any, Any, np.ndarray], Any]


@dataclass(frozen=True)
class ConsensusSpec:
    """What a consensus does with a column's labels, beyond the fusion itself (:attr:`ColumnKind.fusion`).

    Attributes:
        similarity: the default similarity of the correspondence that builds the units, a name of
            :func:`agreement.geometry.similarity.similarity_matrix` (``"iou"``: of the boxes).
        keys: the column, not the boxes, keys the units' tie-breaks, the canonical row order and the
            chance-coincidence estimate (3D cuboids, which have no 2D box).
        coincidence_rows: at most this many rows drawn per side by the chance-coincidence estimate
            (``None``: the caller's ``n``).
        carries: ``(column) -> (N,) bool``: the rows that carry an entry, for a column that
            ``geometry="auto"`` picks only when *every* annotation carries one (masks, polygons; raters who
            mix it with plain boxes are refused); ``None``: picked whenever the corpus holds the column.
        boxes: ``geometry="boxes"`` (fuse only the boxes) applies to the column's labels.
        in_boxes: a pixel fusion (``fusion="pixels"``) places each entry as a mask spanning its row's box, in
            pixels of its image, and gives each unit the fused mask cropped to its box (instance masks); else
            it rasterises the entry's rings (relative coordinates) and gives each unit rings again (polygons).
    """

    similarity: str = "iou"
    keys: bool = False
    coincidence_rows: int | None = None
    carries: Callable[[Any], np.ndarray] | None = None
    boxes: bool = True
    in_boxes: bool = False


#: The consensus of plain boxes (a corpus without a fused geometry column).
BOX_CONSENSUS = ConsensusSpec()


@dataclass(frozen=True)
class ColumnKind:
    """One optional geometry column of a corpus, declared once.

    Attributes:
        name: the column's name: the corpus' (and an annotation set's) attribute and keyword.
        per: ``"row"`` (one entry per annotation) or ``"sample"`` (one per sample).
        container: ``"list"`` (entries of any shape, ``None`` where absent) or ``"array"`` (a numpy array
            whose first axis is the rows or samples).
        normalise: ``(value, n) -> value`` checks and converts a value of ``n`` entries (dtype, shape),
            raising ``ValueError`` with a message naming the column; default: a length check of a list, or
            ``float64`` with ``trailing`` shape for an array.
        trailing: the shape of one entry of an ``"array"`` column checked by the default ``normalise``
            (e.g. ``(9,)`` for cuboids).
        missing: ``(n, present) -> value``: the entries of ``n`` annotations of a set that lacks the column
            while other sets have it (``present``: their values); default ``[None] * n``.
        pad: ``(values) -> values``: parts made alike before they are joined (e.g. skeletons of different
            lengths padded with unlabelled points); default: as they are.
        strict_join: ``(values) -> None``: raises ``ValueError`` when annotation sets cannot be joined into
            one column (e.g. skeletons of different lengths); default: no check.
        empty: ``(present) -> value``: the column of zero annotations; default ``[]`` or an empty array.
        to_relative: ``(value, wh) -> value``: pixel coordinates divided by the ``(N, 2)`` image size
            ``(W, H)`` of each row; ``None``: the column has no image coordinates.
        has_geometry: ``(value) -> (N,) bool``: the rows that carry image geometry (they need an image size
            when converted from pixels); ``None``: none do.
        similarities: similarity name -> hook: ``None`` for a built-in similarity of
            :func:`agreement.geometry.similarity.similarity_matrix`, or a :data:`SimilarityHook`.
        fusion: ``None`` (no consensus), the name of a built-in fusion of
            :func:`agreement.methods.consensus.fusion.fuse_geometry` (``"keypoints"``, ``"cuboids"``, or
            ``"pixels"``: boxes fused by their parametrisation, pixels by STAPLE), or a :data:`FusionHook`.
        consensus: what a consensus does with the labels besides fusing them (:class:`ConsensusSpec`).
        content_key: the column is part of a row's content key (the tie-breaks of a matching,
            :mod:`agreement.methods.geometry_agreement.ties`); masks are not (their pixels change with the
            image resolution: a mask is keyed by its relative box).
        label: how messages name the column's labels (``"3D points"``); default: its name.
        description: one line for the documentation.
    """

    name: str
    per: str = "row"
    container: str = "list"
    normalise: Callable[[Any, int], Any] | None = None
    trailing: tuple[int, ...] | None = None
    missing: Callable[[int, list], Any] | None = None
    pad: Callable[[list], list] | None = None
    strict_join: Callable[[list], None] | None = None
    empty: Callable[[list], Any] | None = None
    to_relative: Callable[[Any, np.ndarray], Any] | None = None
    has_geometry: Callable[[Any], np.ndarray] | None = None
    similarities: Mapping[str, SimilarityHook | None] = field(default_factory=dict)
    fusion: str | FusionHook | None = None
    consensus: ConsensusSpec = BOX_CONSENSUS
    content_key: bool = True
    label: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        if self.per not in ("row", "sample"):
            raise ValueError(f"column {self.name!r}: per must be 'row' or 'sample', got {self.per!r}")
        if self.container not in ("list", "array"):
            raise ValueError(f"column {self.name!r}: container must be 'list' or 'array', got {self.container!r}")

    # ------------------------------------------------------------------ storage
    def check(self, value: Any, n: int, what: str) -> Any:
        """``value`` checked as the column of ``n`` entries (rows or samples) and converted.

        Args:
            value: the column as given.
            n: the number of rows (or samples).
            what: ``"corpus"`` or ``"set"``, for the wording of a length error.

        Returns:
            The column (an array converted by :attr:`normalise`; a list as it is given).

        Raises:
            ValueError: naming the column, for a wrong length or shape.
        """
        if self.normalise is not None:
            return self.normalise(value, n)
        if self.container == "array":
            arr = np.asarray(value, dtype=np.float64)
            shape = (n, *(self.trailing or arr.shape[1:]))
            if arr.shape != shape:
                raise ValueError(f"{self.name} must have shape {shape}; got {arr.shape}")
            return arr
        if len(value) != n:
            raise ValueError(f"{self.name} has {len(value)} entries for {n} boxes" if what == "set" else
                             f"{self.name} must have one entry per annotation")
        return value

    def take(self, value: Any, index: np.ndarray | slice) -> Any:
        """The entries ``index`` (indices in order, or a slice) of ``value``: fancy indexing of an array,
        a new list of a list."""
        if isinstance(index, slice) or self.container == "array" and isinstance(value, np.ndarray):
            return value[index]
        return [value[i] for i in index]

    def join(self, values: Sequence[Any]) -> Any:
        """The parts ``values`` (of corpora, in order) as one column (:attr:`pad` first)."""
        values = list(self.pad(list(values)) if self.pad is not None else values)
        if self.container == "array" and isinstance(values[0], np.ndarray):
            return np.concatenate(values)
        return [x for v in values for x in v]

    def join_sets(self, pieces: Sequence[tuple[int, Any]]) -> Any:
        """The column of annotation sets ``pieces`` (``(n, value or None)`` in row order, sets with
        ``n > 0``): a set without the column gets :attr:`missing` entries.

        Raises:
            ValueError: the sets' values cannot be joined (:attr:`strict_join`).
        """
        present = [v for _, v in pieces if v is not None]
        if self.strict_join is not None:
            self.strict_join(present)
        parts = [v if v is not None else (self.missing(n, present) if self.missing is not None else [None] * n)
                 for n, v in pieces]
        if not parts:
            return self.empty(present) if self.empty is not None else []
        if self.container == "array":
            return np.concatenate([np.asarray(p) for p in parts])
        return [x for p in parts for x in p]


_KINDS: dict[str, ColumnKind] = {}


def register_column(kind: ColumnKind) -> ColumnKind:
    """Declares the geometry column ``kind`` (once per name).

    Args:
        kind: the declaration.

    Returns:
        ``kind``.

    Raises:
        ValueError: a column of that name is declared already, or the name is one of the corpus' own
            attributes.
    """
    if kind.name in _KINDS:
        raise ValueError(f"geometry column {kind.name!r} is declared already")
    if kind.name in _RESERVED:
        raise ValueError(f"{kind.name!r} is an attribute of every corpus, not a geometry column")
    _KINDS[kind.name] = kind
    return kind


def unregister_column(name: str) -> None:
    """Removes the declaration of column ``name`` (a kind declared for a while, e.g. by a test).

    Raises:
        KeyError: no column of that name is declared.
    """
    del _KINDS[name]


def column_kind(name: str) -> ColumnKind:
    """The declaration of column ``name``.

    Raises:
        ValueError: no column of that name is declared (naming those that are).
    """
    try:
        return _KINDS[name]
    except KeyError:
        raise ValueError(f"unknown geometry column {name!r}; declared: {sorted(_KINDS)} "
                         "(declare one with agreement.core.kinds.register_column)") from None


def consensus_spec(name: str) -> ConsensusSpec:
    """What a consensus does with the labels of geometry ``name`` (:class:`ConsensusSpec`):
    :data:`BOX_CONSENSUS` for ``"boxes"`` or a column not declared.

    Args:
        name: ``"boxes"`` or a declared geometry column.

    Returns:
        The column's :attr:`ColumnKind.consensus`.
    """
    kind = _KINDS.get(name)
    return BOX_CONSENSUS if kind is None else kind.consensus


def is_column(name: str) -> bool:
    """Whether ``name`` is a declared geometry column."""
    return name in _KINDS


def column_kinds() -> tuple[ColumnKind, ...]:
    """Every declared column, in declaration order (the order of the corpus' checks)."""
    return tuple(_KINDS.values())


_RESERVED = frozenset({"sample_ids", "raters", "assigned", "boxes", "labels", "label_ids", "ids", "sample_index",
                       "rater_index", "image_sizes", "sample_names", "classes", "geometry", "offsets", "repairs"})


# ---------------------------------------------------------------------------- the built-in columns
def keypoint_array(values: Any, n: int) -> np.ndarray:
    """``values`` as an ``(n, K, 2)`` float64 array (``K = 0`` allowed when ``n = 0``).

    Raises:
        ValueError: another shape.
    """
    kps = np.asarray(values, dtype=np.float64)
    if n == 0 and kps.size == 0:
        return kps.reshape(0, kps.shape[1] if kps.ndim == 3 else 0, 2)
    if kps.ndim != 3 or kps.shape[0] != n or kps.shape[2] != 2:
        raise ValueError(f"keypoints must have shape ({n}, K, 2); got {kps.shape}")
    return kps


def _skeleton_length(present: list) -> int:
    sizes = {v.shape[1] for v in present if len(v)}
    return sizes.pop() if sizes else 0


def _same_skeleton(present: list) -> None:
    sizes = {v.shape[1] for v in present if len(v)}
    if len(sizes) > 1:
        raise ValueError(f"keypoint annotations have different numbers of points: {sorted(sizes)}")


def _pad_skeletons(values: list) -> list:
    K = max(v.shape[1] for v in values)
    return [np.pad(v, ((0, 0), (0, K - v.shape[1]), (0, 0)), constant_values=np.nan) for v in values]


def _polygons_to_relative(polygons: list, wh: np.ndarray) -> list:
    return [None if p is None else [np.asarray(ring, dtype=np.float64).reshape(-1, 2) / wh[i] for ring in p]
            for i, p in enumerate(polygons)]


def _has_polygon(polygons: list) -> np.ndarray:
    return np.fromiter((p is not None for p in polygons), dtype=bool, count=len(polygons))


def _has_rings(polygons: list) -> np.ndarray:
    return np.fromiter((p is not None and len(p) > 0 for p in polygons), dtype=bool, count=len(polygons))


def _has_mask(masks: list) -> np.ndarray:
    return np.fromiter((m is not None for m in masks), dtype=bool, count=len(masks))


def _has_keypoint(keypoints: np.ndarray) -> np.ndarray:
    if not keypoints.size:
        return np.zeros(len(keypoints), dtype=bool)
    labelled: np.ndarray = ~np.isnan(keypoints).all(axis=(1, 2))
    return labelled


def _point_counts(values: Any, n: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(n)


for _kind in (
    ColumnKind("polygons", to_relative=_polygons_to_relative, has_geometry=_has_polygon,
               similarities={"polygon_iou": None, "polygon_giou": None, "mask_iou": None}, fusion="pixels",
               consensus=ConsensusSpec(carries=_has_rings),
               description="a list of rings, each a (k, 2) array of relative (x, y) points, per annotation"),
    ColumnKind("masks", similarities={"mask_iou": None}, fusion="pixels", content_key=False,
               consensus=ConsensusSpec(carries=_has_mask, in_boxes=True),
               description="a 2-D boolean instance mask spanning the annotation's box (or a semantic mask)"),
    ColumnKind("keypoints", container="array", normalise=keypoint_array,
               missing=lambda n, present: np.full((n, _skeleton_length(present), 2), np.nan),
               empty=lambda present: np.zeros((0, _skeleton_length(present), 2)),
               strict_join=_same_skeleton, pad=_pad_skeletons,
               to_relative=lambda kps, wh: kps / wh[:, None, :], has_geometry=_has_keypoint,
               similarities={"oks": None}, fusion="keypoints",
               description="(N, K, 2) relative (x, y) points, NaN where a point is not labelled"),
    ColumnKind("cuboids", container="array", trailing=(9,), similarities={"cuboid_iou": None}, fusion="cuboids",
               consensus=ConsensusSpec(similarity="cuboid_iou", keys=True, coincidence_rows=300, boxes=False),
               label="3D cuboids",
               description="(N, 9) [x, y, z, dx, dy, dz, rx, ry, rz]: location, dimensions, XYZ Euler rotation"),
    ColumnKind("points3d", container="array", trailing=(3,), similarities={"point3d": None}, label="3D points",
               description="(N, 3) 3D points, scene units"),
    ColumnKind("polylines3d", similarities={"polyline3d_f1": None}, label="3D polylines",
               description="a list of (k, 3) 3D polylines per annotation"),
    ColumnKind("segments", similarities={"segment_jaccard": None}, label="point-cloud segments",
               description="an int array of the point-cloud indices an annotation covers"),
    ColumnKind("num_points", per="sample", container="array", normalise=_point_counts,
               description="(S,) the size of each sample's point cloud (for point-cloud segments)"),
):
    register_column(_kind)
del _kind
