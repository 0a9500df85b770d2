"""The statistics of the 'images' part of the validation matrix, computed through the pure library.

:data:`STATS` declares each statistic once (the page's method name, the label types its method accepts, its
perfect and chance values, the noise stages it is documented to respond to or to be blind to, after
``RESPONSE_NOTES`` in ``experiments/common.py``); :func:`evaluate` runs every engine once on a corpus and
returns a :class:`Measure` per statistic: the value and, where it is undefined or refused, the library's
reason.

Engines and their settings (the library's defaults unless said):

* OT (:func:`agreement.methods.ot.sample_ot_scores`, :func:`agreement.methods.ot.alpha_ot.alpha_ot`): λ = β =
  0.5, paper normalisation, chance budget 200,000 cross pairs (exact on every corpus here). OT is defined
  on 2D boxes (``Detections``): instance masks are scored by their boxes.
* KαLOS (:func:`agreement.methods.kalos.kalos_alpha`): the kind's similarity, τ = 0.5, greedy, ψ_soft.
* Geometry agreement (:func:`agreement.methods.geometry_agreement.geometry_agreement`): the kind's distance,
  threshold 0.5 on boxes, 0 on the others (:data:`THRESHOLD`), no bootstrap, default pair budget.
* Consensus (:func:`agreement.methods.consensus.consensus`): EM, τ auto; the headline ``agreement`` (share of
  labels agreeing with the consensus) with ``mean_confidence`` shown beside it.
* Calibration (:func:`agreement.methods.kalos.calibration.calibrate`): the kind's distance (boxes: IoU,
  GIoU, centroid); the best distance's one-sided KS D⁺ (the separation τ* is read from), τ* shown beside.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from agreement.core.data import MultiRaterAnnotations

ALL_KINDS = ("boxes", "polygons", "instance masks", "keypoints", "3D cuboids", "3D polylines", "3D points")
#: The similarity (KαLOS, calibration) and distance (geometry agreement) of each label type.
SIMILARITY = {"boxes": "iou", "polygons": "polygon_iou", "instance masks": "mask_iou", "keypoints": "oks",
              "3D cuboids": "cuboid_iou", "3D polylines": "polyline3d_f1", "3D points": "point3d"}
DISTANCE = dict(SIMILARITY, boxes="giou")
#: Geometry agreement's matching threshold: the default 0.5 on boxes (GIoU ≥ 0); 0 on the others, as the
#: method's docstring advises for OKS: at 0.5, IoU-type similarities of unrelated objects almost never
#: match, so the chance distribution is empty (σ, distance α, KS undefined even for identical raters).
THRESHOLD = {k: (0.5 if k == "boxes" else 0.0) for k in SIMILARITY}
CALIBRATION = {k: (v,) for k, v in SIMILARITY.items()} | {"boxes": ("iou", "giou", "centroid")}
NOISE = ("shift", "drop", "swap")


@dataclass(frozen=True)
class Stat:
    """One statistic of the matrix.

    Attributes:
        method: the page's method name.
        kinds: the label types its method accepts.
        perfect: its value for identical raters.
        chance: ``"zero"`` (chance-corrected, 0 at chance), ``"not_above"`` (never above 0 at chance:
            :data:`validation_matrix.UNITS_CHANCE_NOTE`), ``"sigma"`` (σ: the chance percentile 0.05),
            ``"ks"`` (a KS statistic: 0 at chance up to its sampling bias, judged against the Kolmogorov
            null), or the reason it has no chance value.
        responds: noise stages it must fall under (``RESPONSE_NOTES``).
        blind: noise stages it is documented blind to (must stay constant).
        floor: the value that means "no agreement" (chance, or the score's minimum): a careful rater on a
            single class must score above it.
        documented: ``{design: (value, where it is documented)}``: the documented value of a degenerate design.
    """

    method: str
    kinds: tuple[str, ...]
    perfect: float
    chance: str
    responds: frozenset = frozenset()
    blind: frozenset = frozenset()
    floor: float = 0.0
    documented: dict = field(default_factory=dict)


def _s(method, kinds, perfect, chance, responds=(), blind=(), floor=0.0, documented=None) -> Stat:
    return Stat(method, tuple(kinds), perfect, chance, frozenset(responds), frozenset(blind), floor,
                documented or {})


_2D_DET = ("boxes", "instance masks")
_CONSENSUS = ("boxes", "polygons", "instance masks", "keypoints", "3D cuboids")
STATS: dict[str, Stat] = {
    "alpha_ot": _s("OT: αOT", _2D_DET, 1.0, "zero", NOISE,
                   documented={"empty_rater": (0.0, "exactly chance, D_o = D_e (docs/method-ot.md)")}),
    "mean_ot": _s("OT: mean OT score", _2D_DET, 1.0,
                  "the mean OT score is not chance-corrected (range [1 − β, 1], chance is not a fixed value)",
                  NOISE, floor=0.5,
                  documented={"all_empty": (1.0, "two empty sets cost 0: explicit absence agreed "
                                                 "(agreement.methods.ot, docs/method-ot.md)")}),
    "kalos": _s("KαLOS: α (global)", ALL_KINDS, 1.0, "not_above", NOISE),
    "sigma": _s("Geometry: σ", ALL_KINDS, 1.0, "sigma", ("shift",), ("drop", "swap"), floor=0.05),
    "distance_alpha": _s("Geometry: distance α", ALL_KINDS, 1.0, "zero", ("shift",), ("drop", "swap")),
    "ks": _s("Geometry: KS", ALL_KINDS, 1.0, "ks", ("shift",), ("drop", "swap")),
    "detection_alpha": _s("Geometry: detection α", ALL_KINDS, 1.0, "zero", ("drop",), ("swap",),
                          documented={"empty_rater": (0.0, "exactly chance (docs/method-geometry.md)")}),
    "classification_alpha": _s("Geometry: classification α", ALL_KINDS, 1.0, "zero", ("swap",), ("drop",)),
    "consensus": _s("Consensus: agreement (mean confidence)", _CONSENSUS, 1.0,
                    "the consensus agreement (share of labels that agree with the consensus) is not "
                    "chance-corrected", floor=0.0),
    "calibration": _s("Calibration: KS D⁺ (τ*)", ALL_KINDS, 1.0, "ks", ("shift", "drop"), ("swap",)),
}


@dataclass(frozen=True)
class Measure:
    """One statistic on one corpus: ``value`` (NaN where undefined or refused), the library's ``reason``,
    ``refused`` (the library refused with a ``ValueError``, ``reason`` is its message), ``crashed`` (any other
    exception), ``extra`` (shown beside the value) and
    ``null`` (for KS statistics: the 99.9 % quantile of the Kolmogorov null for these sample sizes)."""

    value: float
    reason: str = ""
    refused: bool = False
    extra: str = ""
    null: float = float("nan")
    warned: tuple[str, ...] = field(default=())
    crashed: bool = False


def _ks_null(m: int, n: int, two_sided: bool) -> float:
    """The 99.9 % quantile of the (asymptotic) Kolmogorov null of a KS statistic on samples of ``m`` and ``n``."""
    if m < 1 or n < 1:
        return float("nan")
    c = math.sqrt(-math.log(0.0005 if two_sided else 0.001) / 2.0)
    return c * math.sqrt((m + n) / (m * n))


def _guard(fn: Callable[[], dict[str, Measure]], keys: tuple[str, ...]) -> dict[str, Measure]:
    """``fn()``, or every key refused with the library's message when it raises ``ValueError``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn()
        except ValueError as e:  # the library's refusals (its own errors derive from ValueError)
            return {k: Measure(float("nan"), f"refused: {e}", refused=True) for k in keys}
        except Exception as e:  # noqa: BLE001 - a crash is a result here: the cell shows and fails it
            return {k: Measure(float("nan"), f"crashed: {type(e).__name__}: {e}", crashed=True) for k in keys}
    said = tuple(dict.fromkeys(str(w.message) for w in caught if not issubclass(w.category, RuntimeWarning)))
    return {k: Measure(m.value, m.reason, m.refused, m.extra, m.null, said, m.crashed) for k, m in out.items()}


def _ot(data: MultiRaterAnnotations) -> dict[str, Measure]:
    from agreement.methods.ot import sample_ot_scores
    from agreement.methods.ot.alpha_ot import alpha_ot

    r = sample_ot_scores(data)
    a = alpha_ot(data, max_pairs=200_000, observed_costs=r.pair_cost)
    reasons = [x for x in r.reasons if x]
    mean = float(r.mean_score)
    return {"alpha_ot": Measure(float(a.alpha), a.reason),
            "mean_ot": Measure(mean, reasons[0] if math.isnan(mean) and reasons else "")}


def _kalos(data: MultiRaterAnnotations, kind: str) -> dict[str, Measure]:
    from agreement.methods.kalos import kalos_alpha

    r = kalos_alpha(data, similarity=SIMILARITY[kind])
    return {"kalos": Measure(float(r.global_alpha), r.global_reason)}


def _geometry(data: MultiRaterAnnotations, kind: str) -> dict[str, Measure]:
    from agreement.methods.geometry_agreement import geometry_agreement

    g = geometry_agreement(data, distance=DISTANCE[kind], threshold=THRESHOLD[kind], bootstrap=None)
    out = {k: Measure(float(getattr(g, k).value), getattr(g, k).reason)
           for k in ("sigma", "distance_alpha", "detection_alpha", "classification_alpha")}
    out["ks"] = Measure(float(g.ks.value), g.ks.reason, null=_ks_null(int(g.n_within), int(g.n_between), True))
    return out


def _consensus(data: MultiRaterAnnotations) -> dict[str, Measure]:
    from agreement.methods.consensus import consensus

    r = consensus(data)
    conf = f"conf. {r.mean_confidence:.3f}" if np.isfinite(r.mean_confidence) else \
        f"conf. undefined: {r.mean_confidence_reason}"
    return {"consensus": Measure(r.agreement, r.agreement_reason, extra=conf)}


def _calibration(data: MultiRaterAnnotations, kind: str) -> dict[str, Measure]:
    from agreement.methods.kalos.calibration import calibrate

    c = calibrate(data, distances=CALIBRATION[kind])
    best = c.per_distance.get(c.best_distance) if c.best_distance else None
    null = _ks_null(len(best.d_observed), len(best.d_expected), False) if best is not None else float("nan")
    tau = f"τ* {c.tau:.3f}" if math.isfinite(c.tau) else "τ* undefined"
    return {"calibration": Measure(float(c.best_ks), c.reason, extra=tau, null=null)}


def evaluate(kind: str, data: MultiRaterAnnotations, only: tuple[str, ...] | None = None) -> dict[str, Measure]:
    """Every statistic of :data:`STATS` whose method accepts ``kind`` (or those of ``only``), on ``data``."""
    want = {k for k, st in STATS.items() if kind in st.kinds and (only is None or k in only)}
    engines: list[tuple[tuple[str, ...], Callable[[], dict[str, Measure]]]] = [
        (("alpha_ot", "mean_ot"), lambda: _ot(data)),
        (("kalos",), lambda: _kalos(data, kind)),
        (("sigma", "distance_alpha", "ks", "detection_alpha", "classification_alpha"), lambda: _geometry(data, kind)),
        (("consensus",), lambda: _consensus(data)),
        (("calibration",), lambda: _calibration(data, kind)),
    ]
    out: dict[str, Measure] = {}
    for keys, fn in engines:
        if want.intersection(keys):
            out.update({k: v for k, v in _guard(fn, keys).items() if k in want})
    return out
