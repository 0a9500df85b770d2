"""The distances :func:`agreement.methods.geometry_agreement.geometry_agreement` offers, its parameters
(:class:`GeometryParams`, validated by :meth:`GeometryParams.checked`) and the check of the box geometry.

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from agreement.core.validation import AnnotationError
from agreement.geometry.similarity import SIMILARITIES, SimilarityOptions, check_similarity

if TYPE_CHECKING:
    from agreement.core.data import MultiRaterAnnotations

#: Distances offered: ``d = 1 - s`` for the similarity ``s`` of that name in
#: :func:`agreement.geometry.similarity.similarity_matrix`. Each is listed only once a
#: test shows the ordering property on it (noisier annotations score lower).
DISTANCES: tuple[str, ...] = tuple(
    d for d in ("giou", "iou", "centroid", "polygon_iou", "polygon_giou", "mask_iou", "oks", "cuboid_iou",
                "point3d", "polyline3d_f1", "segment_jaccard")
    if d in SIMILARITIES
)


@dataclass(frozen=True)
class GeometryParams:
    """The parameters of :func:`agreement.methods.geometry_agreement.geometry_agreement`, as one object from
    the declaration to the kernel (:func:`~agreement.methods.geometry_agreement.geometry_shard`,
    :func:`~agreement.methods.geometry_agreement.merge_geometry_shards`).

    Attributes:
        distance: one of :data:`DISTANCES`.
        threshold: the matching threshold on the similarity, in ``[0, 1]``.
        bootstrap: number of resamples (``>= 2``), or ``None`` for no intervals.
        max_pairs: the pair budget, a positive number of comparisons.
        seed: seed of the chance draws and the resamples.
        confidence: level of the percentile intervals, in ``(0, 1)``.
        sigma_p: the chance percentile of σ, in ``(0, 1)``.
        sigmas: per-keypoint σ for ``"oks"`` (``None``: COCO's).
        stack: compute many small box-similarity blocks in one call (same numbers, faster).
        similarity_options: the 3D similarities' parameters
            (:class:`agreement.geometry.similarity.SimilarityOptions`; ``None``: the defaults).
    """

    distance: str = "giou"
    threshold: float = 0.5
    bootstrap: int | None = 1000
    max_pairs: int = 200_000
    seed: int = 0
    confidence: float = 0.95
    sigma_p: float = 0.05
    sigmas: np.ndarray | None = None
    stack: bool = True
    similarity_options: SimilarityOptions | None = None

    @classmethod
    def of(cls, params: GeometryParams | None, options: Mapping[str, Any]) -> GeometryParams:
        """``params``, or the parameters given as keywords (``options``: field names), validated
        (:meth:`checked`).

        Raises:
            TypeError: both given, or ``params`` not a :class:`GeometryParams`.
            ValueError: a value out of its range.
        """
        if params is not None and not isinstance(params, GeometryParams):
            raise TypeError(f"params must be a GeometryParams (or give the parameters as keywords), got {params!r}")
        if params is not None and options:
            raise TypeError(f"give the parameters as a GeometryParams or as keywords, not both: {sorted(options)}")
        return (params if params is not None else cls(**options)).checked()

    def checked(self) -> GeometryParams:
        """The parameters validated and normalised (``threshold``, ``confidence``, ``sigma_p`` as floats,
        ``bootstrap``, ``max_pairs``, ``seed`` as ints).

        Raises:
            ValueError: naming the parameter, the value and the range allowed.
        """
        distance, threshold, bootstrap, max_pairs = self.distance, self.threshold, self.bootstrap, self.max_pairs
        if distance not in DISTANCES:
            raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")
        t = float(threshold)
        if not (np.isfinite(t) and 0.0 <= t <= 1.0):
            raise ValueError(f"threshold (the matching threshold on similarity) must be in [0, 1], got {threshold!r}")
        if bootstrap is not None:
            if isinstance(bootstrap, bool) or int(bootstrap) != bootstrap or int(bootstrap) < 2:
                raise ValueError(
                    f"bootstrap must be a number of resamples >= 2 (or None for no intervals), got {bootstrap!r}"
                )
            bootstrap = int(bootstrap)
        if isinstance(max_pairs, bool) or int(max_pairs) != max_pairs or int(max_pairs) < 1:
            raise ValueError(f"max_pairs (the pair budget) must be a positive number of comparisons, got {max_pairs!r}")
        c = float(self.confidence)
        if not (0.0 < c < 1.0):
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}")
        p = float(self.sigma_p)
        if not (0.0 < p < 1.0):
            raise ValueError(f"sigma_p (the chance percentile of σ) must be in (0, 1), got {self.sigma_p!r}")
        return GeometryParams(distance=distance, threshold=t, bootstrap=bootstrap, max_pairs=int(max_pairs),
                              seed=int(self.seed), confidence=c, sigma_p=p, sigmas=self.sigmas, stack=self.stack,
                              similarity_options=self.similarity_options)


# --------------------------------------------------------------------------
# Validation of the data
# --------------------------------------------------------------------------


def check_data(data: MultiRaterAnnotations, distance: str) -> None:
    """Check the boxes of ``data`` for a box distance (``"iou"``, ``"giou"``, ``"centroid"``; other distances
    are checked by :func:`agreement.geometry.similarity.check_similarity`).

    Args:
        data: the corpus.
        distance: the distance :func:`agreement.methods.geometry_agreement.geometry_agreement` will use.

    Raises:
        AnnotationError: naming the first box with a NaN or infinite coordinate or a negative width or height.
    """
    if distance not in ("iou", "giou", "centroid"):
        return  # the geometry is checked by agreement.geometry.similarity.check_similarity
    boxes = data.boxes
    if data.cuboids is not None and len(boxes) and not np.isfinite(boxes).all():
        check_similarity(distance, data)  # 3D labels have no 2D box: the message says to use 'cuboid_iou'
    bad = ~np.isfinite(boxes).all(axis=1) | (boxes[:, 2] < 0) | (boxes[:, 3] < 0) if len(boxes) else np.zeros(0, bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        s, r = int(data.sample_index[i]), int(data.rater_index[i])
        k = i - data.rows(s, r).start
        name = data.sample_names[s] if data.sample_names is not None else data.sample_ids[s]
        raise AnnotationError(
            f"sample {name!r}, rater {data.raters[r]!r}, annotation {k}: box "
            f"{boxes[i].tolist()} has NaN or infinite coordinates or a negative width or height"
        )
