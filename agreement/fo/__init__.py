"""The FiftyOne bridge: the only subpackage of :mod:`agreement` that imports FiftyOne.

It turns datasets and views into the plain arrays of :mod:`agreement.core.data`
(:mod:`agreement.fo.storage.reading`), writes per-sample and per-label results back in
bulk and manages named runs (:mod:`agreement.fo.runs.store`), and imports/exports the
multi-rater COCO layout (:mod:`agreement.fo.importers.coco`).
"""
