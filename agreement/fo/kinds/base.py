"""The FiftyOne label types the bridge reads and writes, each declared once, and the registry of them.

A :class:`LabelType` declares a FiftyOne label class (``Detections``,
``Polylines``, ``Keypoints``, ``TemporalDetections``, ``Classification``,
``Classifications``, ``Segmentation``): where its labels are (the list
attribute, or the field itself for a single label), which attribute holds the
geometry and which the class, and how the geometry read becomes corpus columns
(boxes, and the columns declared in :mod:`agreement.core.kinds`).

A :class:`GeometryVariant` declares geometry that a label type's labels carry
in further attributes: instance masks, 3D cuboids and points, point-cloud
segments, 3D polylines, semantic masks, or a kind declared by a user (see
``tests/test_declared_kind.py``): the attributes read, when they apply to a
field, how they become corpus columns, whether the rows then have a 2D box,
the checks made once the rows are final, and how a consensus label document
gets the geometry back (:attr:`GeometryVariant.document`).

:data:`LABEL_TYPES` and :data:`LIST_ATTRS` are live views of the registry
(label class -> list attribute), so a type registered later is seen by every
reader of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

import fiftyone.core.labels as fol

__all__ = ["LabelType", "GeometryVariant", "ReadOptions", "FinishContext", "register_label_type",
           "register_variant", "unregister_variant", "label_type", "label_types", "variants_of", "LABEL_TYPES",
           "LIST_ATTRS", "imported_kinds", "declared_path", "label_documents", "label_boxes", "instance_lists",
           "item_type", "declared_type"]


@dataclass(frozen=True)
class ReadOptions:
    """What a read asks for beyond the labels' own geometry.

    Attributes:
        masks: read the instance masks of ``Detections``.
        cuboids: read ``Detections`` as 3D cuboids or points (``location``, ``dimensions``, ``rotation``);
            ``None``: when every field declares ``location``.
    """

    masks: bool = False
    cuboids: bool | None = None


@dataclass(frozen=True)
class FinishContext:
    """The rows of a corpus once validated and filtered, for :attr:`GeometryVariant.finish`.

    Attributes:
        boxes: ``(N, 4)`` the rows' relative boxes.
        sample_index: ``(N,)`` the sample of each row.
        image_sizes: ``(S, 2)`` ``(width, height)`` in pixels (``None``: not read).
        where: ``where[i]`` names row ``i`` (sample, field, rater) in messages.
        repairs: the read's :class:`~agreement.core.validation.RepairReport`.
    """

    boxes: np.ndarray
    sample_index: np.ndarray
    image_sizes: np.ndarray | None
    where: Any
    repairs: Any


def _no_columns(flat_geo: list, where: Any) -> tuple[np.ndarray, dict]:
    return np.full((len(flat_geo), 4), np.nan), {}


@dataclass(frozen=True)
class LabelType:
    """One FiftyOne label class the plugin reads, declared once.

    Attributes:
        doc_type: the label class (``fiftyone.core.labels.Detections``, ...).
        list_attr: the attribute holding its labels (``"detections"``); ``None`` for a field of one label.
        geometry_attr: the label attribute read as its geometry (``"bounding_box"``, ``"points"``,
            ``"support"``; for labels without geometry, the one read in its place).
        label_attr: the label attribute read as its class.
        image_level: its labels have no geometry (their rows have NaN boxes).
        temporal: its geometry is a segment of a video's frames (:mod:`agreement.fo.storage.temporal`).
        fixed_label: the class of every label (a semantic mask's classes are its pixel values).
        read_geometry: ``(geometry per label, where) -> (boxes, columns)``: the ``(N, 4)`` relative boxes and
            the geometry columns (:mod:`agreement.core.kinds`) of the labels read.
        document: ``(columns, row) -> dict``: the geometry attributes of a label written back from row ``row``
            of the columns (e.g. a polyline's ``points``); ``None``: its 2D box (``bounding_box``) only.
        column: the column :attr:`document` writes from (``"polygons"``); ``None``: none.
        import_suffix: what the multi-rater importers append to a rater's field for labels of this type
            (``""``: the bare field; ``"_polygons"``); ``None``: the importers do not write it as an
            instance kind (:func:`imported_kinds`).
        box_attr: the label attribute a label written back gets its 2D box in (``"bounding_box"``); ``None``:
            its labels have no box attribute (a polyline's or keypoint's box is that of its points).
        per_point: a label's ``confidence`` is a list, one value per point (FiftyOne's ``Keypoint``).
    """

    doc_type: type
    list_attr: str | None
    geometry_attr: str
    label_attr: str = "label"
    image_level: bool = False
    temporal: bool = False
    fixed_label: str | None = None
    read_geometry: Callable[[list, Any], tuple[np.ndarray, dict]] = _no_columns
    document: Callable[[dict, int], dict] | None = None
    column: str | None = None
    import_suffix: str | None = None
    box_attr: str | None = "bounding_box"
    per_point: bool = False

    @property
    def name(self) -> str:
        """The class name (``"Detections"``)."""
        return self.doc_type.__name__


@dataclass(frozen=True)
class GeometryVariant:
    """Geometry carried by further attributes of a label type's labels, declared once.

    Attributes:
        name: the variant's name (e.g. ``"cuboids"``; a corpus column of that name, when it has one).
        doc_type: the label class whose labels carry it.
        attrs: the label attributes read for it, in order.
        applies: ``(samples, fields, options) -> bool``: whether a read of ``fields`` reads ``attrs``.
        read: ``(extra, where, n) -> columns``: the corpus columns from the attributes read (``extra``: attribute
            -> one value per label); ``{}`` when no label carries the geometry.
        boxes: ``(columns, n) -> (n, 4)``: the rows' 2D boxes when the variant replaces the label type's own
            geometry (e.g. a 3D polyline's, NaN); ``None``: the label type reads them.
        no_2d: ``(columns, boxes) -> bool``: the rows have no 2D box (3D labels), so no box is checked.
        finish: ``(columns, context) -> columns``: conversions and checks once the rows are final
            (:class:`FinishContext`), e.g. instance masks against their boxes.
        document: ``(columns, row) -> dict``: the label attributes of a label written back from row ``row``
            of the geometry columns (a consensus label of this geometry); ``None``: the label type's own.
    """

    name: str
    doc_type: type
    attrs: tuple[str, ...]
    applies: Callable[[Any, Sequence[str], ReadOptions], bool]
    read: Callable[[dict, Any, int], dict]
    boxes: Callable[[dict, int], np.ndarray] | None = None
    no_2d: Callable[[dict, np.ndarray], bool] = lambda columns, boxes: False
    finish: Callable[[dict, FinishContext], dict] | None = None
    document: Callable[[dict, int], dict] | None = None


_TYPES: dict[type, LabelType] = {}
_VARIANTS: dict[str, GeometryVariant] = {}


def register_label_type(spec: LabelType) -> LabelType:
    """Declares the FiftyOne label class ``spec.doc_type`` (once).

    Raises:
        ValueError: the class is declared already.
    """
    if spec.doc_type in _TYPES:
        raise ValueError(f"label type {spec.name} is declared already")
    _TYPES[spec.doc_type] = spec
    return spec


def register_variant(variant: GeometryVariant) -> GeometryVariant:
    """Declares the geometry variant ``variant`` of a declared label type (once per name).

    Raises:
        ValueError: the name is taken, or the label type is not declared.
    """
    if variant.name in _VARIANTS:
        raise ValueError(f"geometry variant {variant.name!r} is declared already")
    label_type(variant.doc_type)
    _VARIANTS[variant.name] = variant
    return variant


def unregister_variant(name: str) -> None:
    """Removes the geometry variant ``name`` (a kind declared for a while, e.g. by a test).

    Raises:
        KeyError: no variant of that name.
    """
    del _VARIANTS[name]


def label_type(doc_type: type) -> LabelType:
    """The declaration of the label class ``doc_type``.

    Raises:
        ValueError: the class is not declared (naming those that are).
    """
    try:
        return _TYPES[doc_type]
    except KeyError:
        raise ValueError(f"unsupported label type {getattr(doc_type, '__name__', doc_type)!r}; supported: "
                         f"{', '.join(t.name for t in _TYPES.values())}") from None


def imported_kinds() -> dict[str, LabelType]:
    """The instance label types the multi-rater importers write, by their list attribute, in declaration
    order (those with an :attr:`LabelType.import_suffix`).

    Returns:
        ``{list_attr: LabelType}`` (``"detections"`` first).
    """
    return {spec.list_attr: spec for spec in _TYPES.values()
            if spec.import_suffix is not None and spec.list_attr is not None}


def label_types(instance: bool | None = None) -> tuple[type, ...]:
    """The declared label classes: the instance ones (``instance=True``: with geometry), the image-level ones
    (``instance=False``), or all (``None``: the instance ones first), each in declaration order."""
    if instance is None:
        return label_types(True) + label_types(False)
    return tuple(t for t, spec in _TYPES.items() if spec.image_level is not instance)


def variants_of(doc_type: type) -> tuple[GeometryVariant, ...]:
    """The geometry variants declared for ``doc_type``, in declaration order."""
    return tuple(v for v in _VARIANTS.values() if v.doc_type is doc_type)


def instance_lists() -> dict[type, str]:
    """The instance label list classes of images and frames (not temporal segments), in declaration order, and
    the attribute holding their labels: ``{Detections: "detections", Polylines: "polylines", ...}``."""
    return {t: s.list_attr for t, s in _TYPES.items()
            if not s.image_level and not s.temporal and s.list_attr is not None}


def item_type(doc_type: type) -> type:
    """The class of one label of the label list class ``doc_type`` (``Detections`` -> ``Detection``).

    Raises:
        ValueError: ``doc_type`` is not a declared label list class.
    """
    attr = label_type(doc_type).list_attr
    if attr is None:
        raise ValueError(f"{doc_type.__name__} holds one label, not a list")
    fields_of: Any = doc_type._fields  # type: ignore[attr-defined]  # mongoengine metadata, not in its stubs
    item: type = fields_of[attr].field.document_type
    return item


def declared_path(samples: Any, path: str) -> bool:
    """Whether ``path`` (e.g. ``"gt.detections.location"``) is declared on ``samples``."""
    try:
        return samples.get_field(path) is not None
    except Exception:  # noqa: BLE001 - an undeclared path
        return False


def declared_type(name: str) -> type:
    """The declared label class named ``name`` (``"Detections"``), as run layouts record it.

    Raises:
        ValueError: no declared label class has that name (naming those that are).
    """
    for doc_type, spec in _TYPES.items():
        if spec.name == name:
            return doc_type
    raise ValueError(f"unsupported label type {name!r}; supported: {', '.join(t.name for t in _TYPES.values())}")


def label_boxes(doc_type: type, boxes: np.ndarray, columns: Mapping[str, Any]) -> np.ndarray:
    """The 2D boxes of geometry written back as labels of ``doc_type``: those of a geometry variant of
    ``doc_type`` present in ``columns`` whose boxes come from its geometry (:attr:`GeometryVariant.boxes`, e.g.
    a declared kind's), else ``boxes``.

    Args:
        doc_type: the label list class written.
        boxes: ``(N, 4)`` relative boxes (e.g. a consensus' fused boxes).
        columns: the geometry columns, by name, ``N`` entries each.

    Returns:
        ``(N, 4)`` relative boxes (NaN where a row has none).
    """
    for variant in variants_of(doc_type):
        if variant.boxes is not None and variant.name in columns:
            boxes = np.asarray(variant.boxes(dict(columns), len(boxes)), dtype=np.float64)
    return boxes


def label_documents(doc_type: type[fol.Label], boxes: np.ndarray, labels: Sequence, columns: Mapping[str, Any],
                    rows: Sequence[int] | None = None) -> list[dict]:
    """The label documents (attribute -> value) of rows ``rows`` (default: all) of geometry written back as
    labels of ``doc_type``: class, 2D box where finite (in :attr:`LabelType.box_attr`, for a label type that has
    one), the label type's own geometry (:attr:`LabelType.document`, when ``columns`` hold its column) and the
    attributes each geometry variant of ``doc_type`` present in ``columns`` (a variant's name is its column's)
    writes (:attr:`GeometryVariant.document`).

    Args:
        doc_type: the label list class written (e.g. ``Detections``).
        boxes: ``(N, 4)`` relative boxes (NaN where a row has none; :func:`label_boxes`).
        labels: ``(N,)`` class names.
        columns: the geometry columns, by name.
        rows: the rows to write.

    Returns:
        One ``dict`` per row, to build the list's labels from.
    """
    spec = label_type(doc_type)
    writers = [spec.document] if spec.document is not None and spec.column in columns else []
    writers += [v.document for v in variants_of(doc_type) if v.document is not None and v.name in columns]
    rows = range(len(boxes)) if rows is None else rows
    box_attr, finite = spec.box_attr, np.isfinite(boxes).all(axis=1)
    geometry = dict(columns)
    out = []
    for i in rows:
        doc: dict = {"label": labels[i]}
        if box_attr is not None and finite[i]:
            doc[box_attr] = [float(x) for x in boxes[i]]
        for document in writers:
            doc.update(document(geometry, i))
        out.append(doc)
    return out


class _ListAttrs(Mapping):
    """A live view of the registry: label class -> list attribute, of the declared list types that pass
    ``keep``."""

    def __init__(self, keep: Callable[[LabelType], bool]) -> None:
        self._keep = keep

    def _specs(self) -> dict[type, str]:
        return {t: s.list_attr for t, s in _TYPES.items() if s.list_attr is not None and self._keep(s)}

    def __getitem__(self, doc_type: type) -> str:
        return self._specs()[doc_type]

    def __iter__(self) -> Iterator[type]:
        return iter(self._specs())

    def __len__(self) -> int:
        return len(self._specs())

    def __repr__(self) -> str:
        return repr(self._specs())


#: The instance label list types the plugin reads and the attribute that holds their labels (a live view).
LABEL_TYPES: Mapping[type, str] = _ListAttrs(lambda s: not s.image_level)
#: Every label list type the plugin reads (instances and ``Classifications``) and its list (a live view).
LIST_ATTRS: Mapping[type, str] = _ListAttrs(lambda s: True)
