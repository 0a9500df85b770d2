r"""Consensus labels from several raters: one label set, a review list and a rater report.

After agreement is measured, users need a single label set to train on, a
short list of places where a person must look, and a per-annotator report
for their labelling vendor. :func:`consensus` gives all three from a
:class:`~agreement.core.data.MultiRaterAnnotations` corpus:

1. **Units.** A correspondence solver (KαLOS greedy by default,
   :mod:`agreement.geometry.correspondence`) groups each sample's annotations into
   candidate objects, at most one annotation per rater (:mod:`.units`), at a
   similarity threshold chosen from the data by default (:mod:`.threshold`).
2. **Decision.** ``method="em"`` (default) fits one model of every rater's
   sensitivity, false-positive rate, class confusion (Dawid-Skene with a
   smoothing prior) and localisation noise relative to object size, and
   gives per unit the posterior that the object exists, the posterior over
   its class and a fused geometry (:mod:`.em`, :mod:`.fusion`,
   :mod:`.pixels`). ``method="majority"`` is a quorum vote (CVAT-like,
   :mod:`.majority`); ``method="wbf"`` Weighted Boxes Fusion (:mod:`.wbf`).
3. **Output** (:class:`ConsensusResult`): units whose confidence reaches
   ``min_confidence`` become consensus labels; review flags per unit and
   counts per sample; per annotation its unit and whether it agrees; the
   per-rater report (:class:`RaterReport`).

A rater not assigned to a sample says nothing about it (implicit absence);
an assigned rater who drew nothing there is evidence that there is no
object (explicit absence).

Geometry: boxes by a precision-weighted mean of centres and log-sizes;
polygons and masks by a corpus-level STAPLE pixel vote; keypoints by a
precision-weighted mean per labelled point; 3D cuboids by weighted
location, log-dimensions and a Karcher mean of rotations.

Example::

    from agreement.methods.consensus import consensus
    res = consensus(data)                       # method="em", tau="auto", min_confidence=0.5
    res.to_annotations()                        # the consensus labels as a one-rater corpus
    res.confidence, res.label, res.review       # per unit
    res.sample_n_review                         # per sample
    res.report.as_dict()                        # per rater

References:
A. P. Dawid and A. M. Skene, J. R. Stat. Soc. C 28(1), 1979 (class EM).
S. Branson, G. Van Horn and P. Perona, "Lean Crowdsourcing", CVPR 2017.
D. Tschirschwitz et al., "Drawing the same bounding box twice?", GCPR 2023.
S. K. Warfield, K. H. Zou and W. M. Wells, IEEE TMI 23(7), 2004 (STAPLE).
R. Solovyev, W. Wang and T. Gabruseva, Image Vis. Comput. 107, 2021 (WBF).
CVAT consensus merging (quorum vote), https://docs.cvat.ai.

This package does not import FiftyOne.
"""

from agreement.methods.consensus.api import consensus
from agreement.methods.consensus.em import ConsensusModel, DawidSkeneResult, dawid_skene
from agreement.methods.consensus.result import ConsensusResult, RaterReport
from agreement.methods.consensus.units import GEOMETRIES, METHODS
from agreement.methods.consensus.wbf import WBFResult, weighted_boxes_fusion

__all__ = [
    "consensus",
    "ConsensusResult",
    "RaterReport",
    "ConsensusModel",
    "dawid_skene",
    "DawidSkeneResult",
    "weighted_boxes_fusion",
    "WBFResult",
    "METHODS",
    "GEOMETRIES",
]
