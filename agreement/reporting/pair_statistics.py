"""Rater-pair statistics that read right beside a pairwise KαLOS α (pure: numpy only, no FiftyOne).

Why a pair's α reads worse than the pooled α
--------------------------------------------
KαLOS computes a rater pair's α (:func:`agreement.methods.kalos.diagnostics.pair_reliability`)
on the two raters' own values in the units (objects) *either of them drew*
on the samples both were given. A unit neither of them drew is left out, so
the category ``no_object`` only ever occurs in that matrix against an object
(one drew it, the other did not) and never agrees with itself (except for one
unanimous unit per shared sample where neither drew anything). The chance
level of that two-rater matrix is the pair's own: with a single class, ``u``
objects both drew, ``m`` objects only one drew and ``e`` empty shared
samples, nominal α is (:func:`one_class_pair_alpha`)

    α = 1 − (n − 1) m / ((2u + m)(m + 2e)),   n = 2(u + m + e),

which for ``e = 0`` is ``(1 − m) / (2u + m)``: **zero after one miss and
negative after two, however many objects the pair agreed on**. The pooled α
of the run counts, in every unit, the other raters' ``no_object`` too (seven
of nine workers agreeing that a false positive is not an object), so it is
on another scale. With ~9 workers per image a pair also shares only one or
two samples (a handful of objects), so its α swings widely.

The statistic shown beside it
-----------------------------
The pair's **observed agreement**: the share of the units either of them
drew in which both drew the object with the same class,
``p = n_agree / n_units`` (an empty shared sample counts as one agreed
unit, as in the pair's α), with a 95% **Wilson score interval**
(:func:`wilson_interval`) that says how much ``n_units`` supports it. It is
not chance-corrected; for objects localised first (a unit needs similarity
≥ τ) agreement by chance on *where* an object is is negligible, and the
chance correction of the pair's α is exactly what misleads here. The
justification and the measured numbers are in ``docs/pairwise-agreement.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from agreement.core.rater_pairs import shared_pairs_of_cells

__all__ = [
    "Z95",
    "contrast_note",
    "observed_agreement",
    "one_class_pair_alpha",
    "pair_unit_agreement",
    "pairwise_contrast",
    "wilson_interval",
]

#: The standard normal quantile of a two-sided 95% interval.
Z95 = 1.959963984540054


def wilson_interval(k: float, n: float, *, z: float = Z95) -> tuple[float, float]:
    r"""The Wilson score interval of a proportion ``k / n``.

    .. math:: \frac{\hat p + \frac{z^2}{2n} \pm z\sqrt{\frac{\hat p(1-\hat p)}{n} + \frac{z^2}{4n^2}}}
              {1 + \frac{z^2}{n}}, \qquad \hat p = k / n

    Range: ``0 <= lo <= k/n <= hi <= 1``; ``(0, 1)`` for ``n = 0`` (no
    information). Unlike the Wald interval it never leaves ``[0, 1]`` and
    does not collapse to a point at ``k = 0`` or ``k = n``, which matters for
    the few units a rater pair shares.

    Args:
        k: successes, ``0 <= k <= n``.
        n: trials, ``>= 0``.
        z: the normal quantile (default: 95% two-sided).

    Returns:
        ``(lo, hi)``.

    Raises:
        ValueError: for ``n < 0``, ``k`` outside ``[0, n]`` or ``z <= 0``.

    Reference:
        E. B. Wilson, "Probable inference, the law of succession, and
        statistical inference", JASA 22 (1927) 209–212; A. Agresti and
        B. A. Coull, "Approximate is better than 'exact' for interval
        estimation of binomial proportions", The American Statistician 52
        (1998) 119–126.
    """
    if not (n >= 0 and 0 <= k <= n) or not z > 0:
        raise ValueError(f"need 0 <= k <= n and z > 0, got k={k!r}, n={n!r}, z={z!r}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(max(p * (1 - p) / n + z2 / (4 * n * n), 0.0))
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    return min(lo, p), max(hi, p)  # float rounding never puts p outside


def observed_agreement(n_agree: int, n_units: int, *, z: float = Z95) -> dict:
    """A rater pair's observed agreement with its Wilson interval.

    ``value = n_agree / n_units`` (the share of the units either rater drew in
    which both drew the object with the same class), in ``[0, 1]``; ``None``
    without units. ``lo``, ``hi``: :func:`wilson_interval`; ``n``: the
    support (units).

    Args:
        n_agree: the units both raters drew with the same class, ``0 <= n_agree <= n_units``.
        n_units: the units either rater drew.
        z: the normal quantile of the interval (default: 95% two-sided).

    Returns:
        ``{"value", "lo", "hi", "n"}`` (all ``None`` but ``n = 0`` without units).

    Raises:
        ValueError: ``n_agree`` outside ``[0, n_units]`` or ``z <= 0`` (:func:`wilson_interval`).
    """
    n_agree, n_units = int(n_agree), int(n_units)
    if n_units <= 0:
        return {"value": None, "lo": None, "hi": None, "n": 0}
    lo, hi = wilson_interval(n_agree, n_units, z=z)
    return {"value": n_agree / n_units, "lo": lo, "hi": hi, "n": n_units}


def one_class_pair_alpha(u: int, m: int, *, e: int = 0) -> float:
    r"""Nominal α of a two-rater KαLOS pair matrix with one class (see the module docstring).

    ``u`` units where both drew the object, ``m`` where only one did, ``e``
    unanimous ``no_object`` units (empty shared samples). With ``n = 2(u + m + e)``
    pairable values, ``D_o = 2m / n`` and
    ``D_e = 2(2u + m)(m + 2e) / (n(n − 1))``, so

    .. math:: \alpha = 1 - \frac{(n - 1)\, m}{(2u + m)(m + 2e)}

    (``(1 − m) / (2u + m)`` for ``e = 0``). Range: at most 1; NaN when
    undefined (no variation: ``m = 0`` and ``u = 0`` or ``e = 0``).

    Args:
        u: units both raters drew.
        m: units only one of them drew.
        e: empty shared samples (one unanimous ``no_object`` unit each).

    Returns:
        α, or NaN when undefined.

    Raises:
        ValueError: a negative count.

    Reference:
        K. Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011
        (nominal α from the coincidence matrix).
    """
    if min(u, m, e) < 0:
        raise ValueError(f"counts must be >= 0, got u={u}, m={m}, e={e}")
    den = (2 * u + m) * (m + 2 * e)
    if den == 0:
        return float("nan")
    n = 2 * (u + m + e)
    return 1.0 - (n - 1) * m / den


def pair_unit_agreement(assigned_sample: np.ndarray, assigned_rater: np.ndarray, label_sample: np.ndarray,
                        label_rater: np.ndarray, label_unit: np.ndarray, label_code: np.ndarray,
                        n_samples: int, n_raters: int) -> dict[str, np.ndarray]:
    """Per rater pair sharing a sample: shared samples, units either drew and units they agree on.

    The units of KαLOS's pair matrix (:func:`agreement.methods.kalos.diagnostics.pair_reliability`):
    on each sample both raters were assigned, the units in which at least one
    of them drew an object, and one unanimous unit for a shared sample where
    neither drew anything. A unit is agreed when both drew it with the same
    class (code). Work grows with the (sample, assigned pair) and (unit,
    member pair) counts, never with raters².

    Args:
        assigned_sample: the sample of each assigned (sample, rater) cell.
        assigned_rater: the rater of each assigned cell (aligned with ``assigned_sample``).
        label_sample: per label, its sample.
        label_rater: per label, its rater.
        label_unit: per label, its unit (any integer id unique within the sample; ``< 0``: in no unit,
            left out).
        label_code: per label, its class code.
        n_samples: the range of the sample indices.
        n_raters: the range of the rater indices.

    Returns:
        ``{"a", "b", "n_shared", "n_units", "n_agree"}`` arrays over the pairs
        (``a < b`` rater indices, sorted).
    """
    S, R = int(n_samples), int(n_raters)
    cell = np.unique(np.asarray(assigned_sample, np.int64) * R + np.asarray(assigned_rater, np.int64))
    sample, a, b, pair_id = shared_pairs_of_cells(cell // R, cell % R, S, R)
    n_pairs = int(pair_id.max()) + 1 if len(pair_id) else 0
    keep = np.asarray(label_unit) >= 0
    ls, lr = np.asarray(label_sample, np.int64)[keep], np.asarray(label_rater, np.int64)[keep]
    lu, lc = np.asarray(label_unit, np.int64)[keep], np.asarray(label_code, np.int64)[keep]
    # units drawn per (sample, rater)
    drawn_key, drawn = np.unique(ls * R + lr, return_counts=True)
    triple = (sample.astype(np.int64) * R + a) * R + b

    def drawn_of(r):
        if not len(drawn_key):
            return np.zeros(len(triple))
        q = sample.astype(np.int64) * R + r
        pos = np.clip(np.searchsorted(drawn_key, q), 0, len(drawn_key) - 1)
        return np.where(drawn_key[pos] == q, drawn[pos], 0).astype(float)

    both: np.ndarray = np.zeros(len(triple))
    same: np.ndarray = np.zeros(len(triple))
    if len(ls):  # member pairs of each unit: the units as "samples", their members as "raters"
        _, unit_of = np.unique(ls * (int(lu.max()) + 1) + lu, return_inverse=True)
        order = np.lexsort((lr, unit_of))
        uo, ur, us, uc = unit_of[order], lr[order], ls[order], lc[order]
        member = uo * R + ur  # sorted: a unit's members by rater
        unit_sample = us[np.searchsorted(uo, np.arange(uo.max() + 1))]
        u, ma, mb, _ = shared_pairs_of_cells(uo, ur, int(uo.max()) + 1, R)
        if len(u):
            q = (unit_sample[u] * R + ma) * R + mb
            pos = np.clip(np.searchsorted(triple, q), 0, max(len(triple) - 1, 0))
            hit = (len(triple) > 0) & (triple[pos] == q)
            agree = (uc[np.searchsorted(member, u * R + ma)] == uc[np.searchsorted(member, u * R + mb)]).astype(float)
            both = np.bincount(pos[hit], minlength=len(triple)).astype(float)
            same = np.bincount(pos[hit], weights=agree[hit], minlength=len(triple))
    units = drawn_of(a) + drawn_of(b) - both
    agreed = same.copy()
    empty = units == 0
    units[empty], agreed[empty] = 1, 1
    ta, tb = np.zeros(n_pairs, np.int64), np.zeros(n_pairs, np.int64)
    ta[pair_id], tb[pair_id] = a, b
    return {"a": ta, "b": tb, "n_shared": np.bincount(pair_id, minlength=n_pairs).astype(np.int64),
            "n_units": np.bincount(pair_id, weights=units, minlength=n_pairs).astype(np.int64),
            "n_agree": np.bincount(pair_id, weights=agreed, minlength=n_pairs).astype(np.int64)}


def pairwise_contrast(pair_values: Sequence, pooled, *, n_shared: Sequence[int | None] | None = None,
                      margin: float = 0.1) -> dict:
    """How a run's pairwise statistic compares with its pooled one (the headline).

    Args:
        pair_values: the statistic of each rater pair (``None`` or NaN: undefined, left out).
        pooled: the run's pooled statistic (``None`` or NaN: undefined).
        n_shared: optional, the samples each pair shares (``None`` entries count as NaN).
        margin: how far below the pooled value the pairwise median may lie before it contradicts it.

    Returns:
        ``{"n_pairs", "n_defined", "share_negative", "median", "pooled",
        "median_shared", "contradicts"}``: ``contradicts`` when the median
        pairwise value lies more than ``margin`` below a positive pooled value,
        or more than a quarter of the defined pairwise values are negative
        while the pooled one is positive (a reader would take the chart for
        "everyone disagrees").
    """
    vals = np.array([float(v) for v in pair_values if v is not None and math.isfinite(float(v))])
    shared = np.asarray(list(n_shared) if n_shared is not None else [], dtype=float)
    pooled_ok = pooled is not None and math.isfinite(float(pooled))
    out: dict[str, Any] = {"n_pairs": len(list(pair_values)), "n_defined": len(vals),
           "share_negative": float(np.mean(vals < 0)) if len(vals) else None,
           "median": float(np.median(vals)) if len(vals) else None,
           "pooled": float(pooled) if pooled_ok else None,
           "median_shared": float(np.median(shared)) if len(shared) else None, "contradicts": False}
    if len(vals) and pooled_ok and float(pooled) > 0:
        out["contradicts"] = bool(out["median"] < float(pooled) - margin or out["share_negative"] > 0.25)
    return out


def contrast_note(contrast: dict, value_name: str, *, observed_median: float | None = None,
                  observed_pooled: float | None = None, kalos: bool = True) -> str:
    """The note the heatmap needs when its pairwise values contradict the headline (empty otherwise).

    Whole sentences, each ending with a full stop, whichever parts apply: the
    contradiction itself, the pairs' small support (``median_shared``), KαLOS's
    *no object* (``kalos``) and the observed agreement to read instead
    (``observed_*``: the pairs' median and pooled observed agreement,
    :func:`observed_agreement`). Statistics to three significant figures.
    """
    if not contrast.get("contradicts"):
        return ""
    from agreement.reporting.figures.base import median_count, sig3

    n, neg = f"{contrast['n_defined']:,}", round(100 * contrast["share_negative"])
    median, pooled = sig3(contrast["median"]), sig3(contrast["pooled"])
    head = "**Why the cells look worse than the headline:** "
    if contrast["share_negative"] > 0.25:
        head += (f"{neg}% of the {n} defined pairwise {value_name} are negative (median {median}) while the "
                 f"pooled {value_name} is {pooled}.")
    else:  # contradicts by its median alone
        head += (f"the median of the {n} defined pairwise {value_name} is {median}, well below the pooled "
                 f"{value_name} of {pooled} ({neg}% of them negative).")
    sentences = [head]
    if contrast.get("median_shared") is not None:
        sentences.append(f"A pair shares few samples (a median of {median_count(contrast['median_shared'])}), so "
                         "each cell rests on a few objects.")
    if kalos:
        sentences.append(("Also, a" if len(sentences) > 1 else "A")
                         + " pair's α is computed on the objects either of the two drew, where *no object* never "
                         "agrees with itself: on its own chance level, one miss puts it at 0 and two below 0 however "
                         "many objects they agreed on. The pooled α also counts the other raters agreeing that there "
                         "is no object.")
    if observed_median is not None:
        all_pairs = f" ({round(100 * observed_pooled)}% pooled over all pairs)" if observed_pooled is not None else ""
        sentences.append("Read the **observed agreement** instead (hover, or colour the cells by it): a median pair "
                         f"agrees on {round(100 * observed_median)}% of the objects either drew{all_pairs}.")
    return " ".join(sentences)
