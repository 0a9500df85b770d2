"""Inter-annotator agreement for computer vision.

A pure library over numpy arrays (it does not import FiftyOne): the multi-rater
data model (:mod:`agreement.core.data`), geometry (:mod:`agreement.geometry`),
validation (:mod:`agreement.core.validation`) and the agreement methods. The
FiftyOne bridge lives in :mod:`agreement.fo` and is the only subpackage that
imports FiftyOne.
"""

from agreement.core.data import AnnotationSet, MultiRaterAnnotations
from agreement.core.validation import AnnotationError, RepairReport

__version__ = "0.1.0"

__all__ = ["AnnotationSet", "MultiRaterAnnotations", "AnnotationError", "RepairReport", "__version__"]
