"""Agreement of semantic segmentation masks (FiftyOne ``Segmentation``: a class value per pixel).

* :mod:`.pixels`: input checks and per-sample statistics (pixel alpha, Dice, IoU, boundary F1);
* :mod:`.stats`: their mergeable corpus sums and how they finish;
* :mod:`.staple`: multi-label STAPLE consensus and per-rater confusion matrices.

This package does not import FiftyOne.
"""

from agreement.methods.semantic.pixels import SampleMaskStats, check_masks, sample_statistics
from agreement.methods.semantic.staple import MultiLabelStapleResult, multilabel_staple
from agreement.methods.semantic.stats import (
    OverlapResult,
    OverlapStats,
    PixelAlphaResult,
    PixelAlphaStats,
    SemanticResult,
    SemanticStats,
)

__all__ = [
    "check_masks",
    "sample_statistics",
    "SampleMaskStats",
    "SemanticStats",
    "SemanticResult",
    "PixelAlphaStats",
    "PixelAlphaResult",
    "OverlapStats",
    "OverlapResult",
    "multilabel_staple",
    "MultiLabelStapleResult",
]
