"""The empirical noise generator of KαLOS: simulated raters with real raters' errors.

Starting from a reference annotation set (one rater), each simulated rater is
produced per sample by four stages in strict priority. Every reference box is
*clean* until a stage consumes it; each stage draws its errors only among the
boxes still clean, so an earlier error type takes precedence over a later one.

With ``n`` the number of reference boxes of the sample and ``λ >= 0`` the
*magnitude*, every rate is scaled as ``p = min(1, p_base · λ)`` and a stage
asks for ``Binomial(n, p)`` errors (so at ``λ = 1`` the expected count is the
fitted rate times ``n``):

1. **Unmatched instances.** False negatives: ``Binomial(n, p_FN)`` clean boxes
   are removed. False positives: ``Binomial(n, p_FP)`` new boxes are injected
   (size ``exp(N(μ_s, σ_s))`` as relative ``sqrt(w h)``, aspect
   ``exp(N(μ_a, σ_a))`` as ``w / h``, placed uniformly inside the image, with
   the class of a random reference box of the sample); they skip the later
   stages.
2. **Fragmentation and combination.** Fragmentation: ``Binomial(n, p_frag)``
   clean boxes are each split along their longer side into
   ``k = 2 + Poisson(μ_frag)`` pieces (piece lengths ``Dirichlet(2, ..., 2)``),
   keeping the class. Combination: ``Binomial(n, p_comb)`` groups, each a
   random clean box merged with its ``g - 1`` nearest clean boxes of the same
   class (``g = 2 + Poisson(μ_comb)``, fewer if fewer are left) into their
   enclosing box.
3. **Category mistakes.** ``Binomial(n, p_cat)`` clean boxes get another class,
   drawn from the row of the fitted confusion table for their class (counts
   ``C[c][c']``, ``P(c' | c) ∝ C[c][c']``); a class absent from the table
   falls back to the reference's class frequencies (without ``c``). A
   misclassified box is then moved with the *misclassified* localisation
   profile.
4. **Localisation shift** of every box still clean, with residuals
   ``Δcx / w``, ``Δcy / h``, ``log(w' / w)``, ``log(h' / h)`` drawn
   independently from the fitted Student's t distributions (``loc + scale ·
   T_df``) and multiplied by ``λ``. The draws are restricted, by rejection, to
   the region the fit could observe (IoU with the source box ``>= t_fit``,
   the profile's IoU threshold, before scaling by ``λ``), so that a profile
   fitted at IoU 0.5 reproduces at ``λ = 1`` the residuals it was fitted on;
   at ``λ > 1`` shifted boxes can leave that region and stop matching.

At ``λ = 0`` every simulated rater is an exact copy of the reference. The
generator acts on boxes and labels only (polygons, masks and keypoints of the
reference are not carried over); a derived box keeps the ``label_id`` of its
source reference box (``None`` for a false positive).

**Cannibalisation.** A stage whose sampled errors exceed the clean boxes it
can use (no clean box left to fragment, no clean box with a clean same-class
neighbour to combine, no clean box with another class available) counts the
surplus as *cannibalised*; the report gives the count per stage. It rises with
``λ``, as earlier stages consume more of the reference.

**Schools of thought.** A :class:`School` is a group of simulated raters that
share a systematic bias on top of their independent noise: a fixed residual
offset added to every shifted box (not scaled by ``λ``) and a fixed class
relabelling (a class map, drawn once per school from the confusion table, or
given) applied to the clean boxes of the mapped classes before stage 3.

Randomness: each (rater, sample) cell draws from a generator seeded by
``(seed, crc32(rater name), crc32(str(sample_id)))``, a school's shared draws
by ``(seed, crc32("school:" + name), ...)``, so results do not depend on the
order of samples and adding a rater leaves the others unchanged.

References: T. Tschirschwitz and V. Rodehorst, "KαLOS" (the empirical noise
generator and its fitted profiles; localisation first, classification
second); A. Prokhorov and D. Kalinin, "Quantifying Annotation Agreement in
Object Detection with Optimal Transport" (validation by controlled noise).

This module does not import FiftyOne.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from agreement.data import MultiRaterAnnotations
from agreement.noise.perturbations import (
    _assemble,
    _check_level,
    _check_seed,
    _clip_to_image,
    _crc,
    _reference_rater,
    _rng,
)

__all__ = [
    "STAGES",
    "ProfileError",
    "StudentT",
    "LocalisationProfile",
    "FalsePositiveShape",
    "NoiseProfile",
    "School",
    "SimulationReport",
    "Simulation",
    "builtin_profiles",
    "load_profile",
    "simulate",
]

PROFILE_FORMAT = "iaa-noise-profile"
PROFILE_VERSION = 1
PROFILES_DIR = Path(__file__).resolve().parent / "profiles"

STAGES = ("false_negative", "false_positive", "fragmentation", "combination", "category", "localisation")
"""Error types of the generator, in priority order (false positives skip the rest)."""

_REJECTION_ROUNDS = 100


class ProfileError(ValueError):
    """A noise profile that does not validate; the message names the key."""


# --------------------------------------------------------------------------
# Profile
# --------------------------------------------------------------------------


def _fail(source: str, key: str, message: str) -> ProfileError:
    return ProfileError(f"noise profile {source}: key {key!r} {message}")


def _get(d: Mapping, key: str, path: str, source: str) -> Any:
    if not isinstance(d, Mapping):
        raise _fail(source, path or "<root>", f"must be a JSON object, got {type(d).__name__}")
    full = f"{path}.{key}" if path else key
    if key not in d:
        raise _fail(source, full, "is missing")
    return d[key]


def _number(value: Any, key: str, source: str, lo: float = -math.inf, hi: float = math.inf,
            lo_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(source, key, f"must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise _fail(source, key, f"must be finite, got {value!r}")
    if v < lo or v > hi or (lo_open and v == lo):
        left = "(" if lo_open else "["
        raise _fail(source, key, f"must be in {left}{lo:g}, {hi:g}], got {value!r}")
    return v


def _no_extra(d: Mapping, allowed: Sequence[str], path: str, source: str) -> None:
    extra = sorted(set(d) - set(allowed))
    if extra:
        key = f"{path}.{extra[0]}" if path else extra[0]
        raise _fail(source, key, f"is not a known key (expected {sorted(allowed)})")


@dataclass(frozen=True)
class StudentT:
    """A location-scale Student's t: ``X = loc + scale · T_df``.

    Attributes:
        df: degrees of freedom ``ν > 0`` (large ``ν``: nearly Gaussian).
        loc: location (median).
        scale: scale ``> 0``.
    """

    df: float
    loc: float
    scale: float

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` draws of ``loc + scale · T_df``."""
        return self.loc + self.scale * rng.standard_t(self.df, size=size)

    def to_dict(self) -> dict:
        return {"df": self.df, "loc": self.loc, "scale": self.scale}

    @classmethod
    def from_dict(cls, d: Any, path: str, source: str) -> "StudentT":
        if not isinstance(d, Mapping):
            raise _fail(source, path, f"must be a JSON object with df, loc, scale; got {d!r}")
        _no_extra(d, ("df", "loc", "scale"), path, source)
        return cls(
            df=_number(_get(d, "df", path, source), f"{path}.df", source, 0.0, lo_open=True),
            loc=_number(_get(d, "loc", path, source), f"{path}.loc", source),
            scale=_number(_get(d, "scale", path, source), f"{path}.scale", source, 0.0, lo_open=True),
        )


_RESIDUALS = ("dx", "dy", "dw", "dh")


@dataclass(frozen=True)
class LocalisationProfile:
    """Localisation residuals of matched boxes, relative to the object's size.

    For a reference box ``(cx, cy, w, h)`` and its counterpart
    ``(cx', cy', w', h')``: ``dx = (cx' - cx) / w``, ``dy = (cy' - cy) / h``,
    ``dw = log(w' / w)``, ``dh = log(h' / h)``, each modelled by an
    independent :class:`StudentT`.

    Attributes:
        dx, dy, dw, dh: the four residual distributions.
        n_pairs: number of matched pairs the fit used (0 if set by hand).
    """

    dx: StudentT
    dy: StudentT
    dw: StudentT
    dh: StudentT
    n_pairs: int = 0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``(size, 4)`` residuals ``(dx, dy, dw, dh)``."""
        return np.stack([getattr(self, k).sample(rng, size) for k in _RESIDUALS], axis=1) if size else np.zeros((0, 4))

    def to_dict(self) -> dict:
        out = {k: getattr(self, k).to_dict() for k in _RESIDUALS}
        out["n_pairs"] = int(self.n_pairs)
        return out

    @classmethod
    def from_dict(cls, d: Any, path: str, source: str) -> "LocalisationProfile":
        if not isinstance(d, Mapping):
            raise _fail(source, path, f"must be a JSON object, got {type(d).__name__}")
        _no_extra(d, _RESIDUALS + ("n_pairs",), path, source)
        parts = {k: StudentT.from_dict(_get(d, k, path, source), f"{path}.{k}", source) for k in _RESIDUALS}
        n = _number(d.get("n_pairs", 0), f"{path}.n_pairs", source, 0.0)
        if n != int(n):
            raise _fail(source, f"{path}.n_pairs", f"must be an integer, got {d.get('n_pairs')!r}")
        return cls(n_pairs=int(n), **parts)


@dataclass(frozen=True)
class FalsePositiveShape:
    """Shape of injected false positives (relative units).

    Size ``sqrt(w h) = exp(N(log_size_mean, log_size_std))``, aspect
    ``w / h = exp(N(log_aspect_mean, log_aspect_std))``.
    """

    log_size_mean: float = math.log(0.1)
    log_size_std: float = 0.8
    log_aspect_mean: float = 0.0
    log_aspect_std: float = 0.6

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("log_size_mean", "log_size_std", "log_aspect_mean", "log_aspect_std")}

    @classmethod
    def from_dict(cls, d: Any, path: str, source: str) -> "FalsePositiveShape":
        keys = ("log_size_mean", "log_size_std", "log_aspect_mean", "log_aspect_std")
        if not isinstance(d, Mapping):
            raise _fail(source, path, f"must be a JSON object, got {type(d).__name__}")
        _no_extra(d, keys, path, source)
        vals = {}
        for k in keys:
            lo = 0.0 if k.endswith("_std") else -math.inf
            vals[k] = _number(_get(d, k, path, source), f"{path}.{k}", source, lo)
        if vals["log_size_mean"] > 0:
            raise _fail(source, f"{path}.log_size_mean", f"must be <= 0 (relative size <= 1), got {vals['log_size_mean']}")
        return cls(**vals)


_RATES = ("false_negative", "false_positive", "fragmentation", "combination", "category")


@dataclass(frozen=True)
class NoiseProfile:
    """Parameters of the empirical noise generator (one rater against a reference).

    Rates are per reference box: the expected number of errors of a type on a
    sample of ``n`` reference boxes is ``rate · n`` (at magnitude 1).

    Attributes:
        false_negative_rate: ``p_FN``, share of reference boxes missed.
        false_positive_rate: ``p_FP``, spurious boxes per reference box.
        fragmentation_rate: ``p_frag``, share of reference boxes split.
        fragment_extra_mean: ``μ_frag``, pieces per split minus 2 (Poisson mean).
        combination_rate: ``p_comb``, merged groups per reference box.
        combination_extra_mean: ``μ_comb``, boxes per group minus 2.
        category_rate: ``p_cat``, share of reference boxes misclassified.
        confusion: ``{true class: {given class: count}}`` (off-diagonal).
        localisation: residuals of correctly classified matches.
        misclassified_localisation: residuals of misclassified matches.
        false_positive_shape: size and aspect of injected boxes.
        iou_threshold: the matching threshold the profile was fitted at; the
            residuals are drawn within it (module docstring, stage 4).
        name: a short name.
        metadata: free-form provenance (data, counts, fitting notes).

    Reference: Tschirschwitz & Rodehorst, KαLOS (empirical noise profiles).
    """

    false_negative_rate: float
    false_positive_rate: float
    fragmentation_rate: float
    fragment_extra_mean: float
    combination_rate: float
    combination_extra_mean: float
    category_rate: float
    confusion: dict
    localisation: LocalisationProfile
    misclassified_localisation: LocalisationProfile
    false_positive_shape: FalsePositiveShape = field(default_factory=FalsePositiveShape)
    iou_threshold: float = 0.5
    name: str = ""
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Validate through the dict form, so that hand-made profiles get the same checks.
        NoiseProfile.from_dict(self.to_dict(), source=repr(self.name or "<in memory>"))

    def rates(self) -> dict[str, float]:
        """``{stage: base rate}`` for the five rate-driven stages."""
        return {k: getattr(self, f"{k}_rate") for k in _RATES}

    # ------------------------------------------------------------ JSON form
    def to_dict(self) -> dict:
        """The JSON form (see :meth:`from_dict`)."""
        return {
            "format": PROFILE_FORMAT,
            "version": PROFILE_VERSION,
            "name": self.name,
            "iou_threshold": self.iou_threshold,
            "rates": self.rates(),
            "fragment_extra_mean": self.fragment_extra_mean,
            "combination_extra_mean": self.combination_extra_mean,
            "false_positive_shape": self.false_positive_shape.to_dict(),
            "localisation": self.localisation.to_dict(),
            "misclassified_localisation": self.misclassified_localisation.to_dict(),
            "confusion": {str(c): {str(k): v for k, v in sorted(row.items())} for c, row in sorted(self.confusion.items())},
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, d: Any, source: str = "<dict>") -> "NoiseProfile":
        """Validates and parses the JSON form; :class:`ProfileError` names the bad key.

        Keys: ``format`` (``"iaa-noise-profile"``), ``version`` (1), ``name``,
        ``iou_threshold`` in ``(0, 1]``, ``rates`` (``false_negative``,
        ``false_positive``, ``fragmentation``, ``combination``, ``category``,
        each in ``[0, 1]``), ``fragment_extra_mean`` and
        ``combination_extra_mean`` (``>= 0``), ``false_positive_shape``,
        ``localisation`` and ``misclassified_localisation`` (``dx``, ``dy``,
        ``dw``, ``dh`` as ``{df > 0, loc, scale > 0}``, ``n_pairs``),
        ``confusion`` (``{class: {class: count >= 0}}``), ``metadata``
        (object). Unknown keys are errors (they are usually typos).
        """
        if not isinstance(d, Mapping):
            raise ProfileError(f"noise profile {source}: must be a JSON object, got {type(d).__name__}")
        allowed = ("format", "version", "name", "iou_threshold", "rates", "fragment_extra_mean",
                   "combination_extra_mean", "false_positive_shape", "localisation",
                   "misclassified_localisation", "confusion", "metadata")
        _no_extra(d, allowed, "", source)
        fmt = _get(d, "format", "", source)
        if fmt != PROFILE_FORMAT:
            raise _fail(source, "format", f"must be {PROFILE_FORMAT!r}, got {fmt!r}")
        version = _get(d, "version", "", source)
        if version != PROFILE_VERSION:
            raise _fail(source, "version", f"must be {PROFILE_VERSION}, got {version!r}")
        name = d.get("name", "")
        if not isinstance(name, str):
            raise _fail(source, "name", f"must be a string, got {name!r}")
        rates = _get(d, "rates", "", source)
        if not isinstance(rates, Mapping):
            raise _fail(source, "rates", f"must be a JSON object, got {type(rates).__name__}")
        _no_extra(rates, _RATES, "rates", source)
        r = {k: _number(_get(rates, k, "rates", source), f"rates.{k}", source, 0.0, 1.0) for k in _RATES}
        confusion = _get(d, "confusion", "", source)
        if not isinstance(confusion, Mapping):
            raise _fail(source, "confusion", f"must be a JSON object, got {type(confusion).__name__}")
        conf: dict[str, dict[str, float]] = {}
        for c, row in confusion.items():
            if not isinstance(row, Mapping):
                raise _fail(source, f"confusion.{c}", f"must be a JSON object of counts, got {row!r}")
            conf[str(c)] = {}
            for k, v in row.items():
                val = _number(v, f"confusion.{c}.{k}", source, 0.0)
                if str(k) == str(c):
                    raise _fail(source, f"confusion.{c}.{k}", "is on the diagonal: list only other classes")
                conf[str(c)][str(k)] = val
        metadata = d.get("metadata", {})
        if not isinstance(metadata, Mapping):
            raise _fail(source, "metadata", f"must be a JSON object, got {type(metadata).__name__}")
        obj = object.__new__(cls)
        values = dict(
            false_negative_rate=r["false_negative"],
            false_positive_rate=r["false_positive"],
            fragmentation_rate=r["fragmentation"],
            fragment_extra_mean=_number(_get(d, "fragment_extra_mean", "", source), "fragment_extra_mean", source, 0.0),
            combination_rate=r["combination"],
            combination_extra_mean=_number(
                _get(d, "combination_extra_mean", "", source), "combination_extra_mean", source, 0.0
            ),
            category_rate=r["category"],
            confusion=conf,
            localisation=LocalisationProfile.from_dict(_get(d, "localisation", "", source), "localisation", source),
            misclassified_localisation=LocalisationProfile.from_dict(
                _get(d, "misclassified_localisation", "", source), "misclassified_localisation", source
            ),
            false_positive_shape=FalsePositiveShape.from_dict(
                _get(d, "false_positive_shape", "", source), "false_positive_shape", source
            ),
            iou_threshold=_number(_get(d, "iou_threshold", "", source), "iou_threshold", source, 0.0, 1.0,
                                  lo_open=True),
            name=name,
            metadata=dict(metadata),
        )
        for k, v in values.items():
            object.__setattr__(obj, k, v)
        return obj

    def save(self, path: str | os.PathLike) -> None:
        """Writes the profile as JSON (UTF-8, indented, keys in a stable order)."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike) -> "NoiseProfile":
        """Reads and validates a JSON profile; :class:`ProfileError` on any problem."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ProfileError(f"noise profile {str(path)!r}: cannot be read ({e.strerror or e})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ProfileError(f"noise profile {str(path)!r}: not valid JSON ({e})") from None
        return cls.from_dict(data, source=repr(str(path)))


def builtin_profiles() -> dict[str, Path]:
    """``{name: path}`` of the profiles shipped with the plugin (``profiles/*.json``)."""
    return {p.stem: p for p in sorted(PROFILES_DIR.glob("*.json"))}


def load_profile(profile: "NoiseProfile | str | os.PathLike") -> NoiseProfile:
    """A profile given as an object, a shipped name (``"lvis"``) or a JSON path."""
    if isinstance(profile, NoiseProfile):
        return profile
    if isinstance(profile, (str, os.PathLike)):
        shipped = builtin_profiles()
        if isinstance(profile, str) and profile in shipped:
            return NoiseProfile.load(shipped[profile])
        if not Path(profile).exists():
            raise ProfileError(
                f"noise profile {str(profile)!r}: no such file, and not a shipped profile "
                f"(shipped: {sorted(shipped)})"
            )
        return NoiseProfile.load(profile)
    raise TypeError(f"profile must be a NoiseProfile, a shipped name or a path, got {type(profile).__name__}")


# --------------------------------------------------------------------------
# Schools
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class School:
    """A group of simulated raters sharing a systematic bias.

    Attributes:
        name: the school's name; its raters are named ``f"{name}_{j}"``.
        size: number of raters in the school (``>= 1``).
        offset: ``(dx, dy, dw, dh)`` added to the residual of every shifted
            box of every member (box sizes for ``dx, dy``, log scale for
            ``dw, dh``), not scaled by ``λ``.
        class_map_rate: share of the reference classes the school relabels
            systematically; the map is drawn once per school (seeded by the
            school's name), the new class from the confusion table.
        class_map: an explicit ``{class: new class}`` map (used instead of
            drawing one when given).
    """

    name: str
    size: int
    offset: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    class_map_rate: float = 0.0
    class_map: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a school needs a non-empty name")
        if isinstance(self.size, bool) or not isinstance(self.size, (int, np.integer)) or self.size < 1:
            raise ValueError(f"school {self.name!r}: size must be an integer >= 1, got {self.size!r}")
        off = tuple(float(v) for v in self.offset)
        if len(off) != 4 or not all(math.isfinite(v) for v in off):
            raise ValueError(f"school {self.name!r}: offset must be 4 finite numbers (dx, dy, dw, dh), got {self.offset!r}")
        object.__setattr__(self, "offset", off)
        _check_level(self.class_map_rate, f"school {self.name!r}: class_map_rate", upper=1.0)
        if self.class_map is not None:
            cm = {str(k): str(v) for k, v in dict(self.class_map).items()}
            object.__setattr__(self, "class_map", cm)


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SimulationReport:
    """What the generator did.

    Attributes:
        magnitude: ``λ``.
        seed: the seed.
        reference_rater: the reference rater's name.
        raters: the simulated raters' names (generation order).
        schools: ``{school: rater names}``.
        school_class_maps: ``{school: {class: new class}}`` actually used.
        rates: ``{stage: min(1, p_base · λ)}``.
        requested: ``{stage: errors sampled}`` over all raters and samples.
        applied: ``{stage: errors made}`` (for ``localisation``: boxes shifted;
            for ``category``: includes the school relabellings).
        cannibalised: ``{stage: sampled errors that found no clean candidate}``.
        source: ``(N,)`` for every row of the returned corpus, the row of the
            reference box it derives from in the input corpus (``-1`` for a
            false positive; a combination gives its seed box).
        origin: ``(N,)`` what made the row: ``"localisation"``,
            ``"category"``, ``"school_category"``, ``"fragment"``,
            ``"combination"``, ``"false_positive"`` or ``"reference"``.
    """

    magnitude: float
    seed: int
    reference_rater: str
    raters: tuple[str, ...]
    schools: dict
    school_class_maps: dict
    rates: dict
    requested: dict
    applied: dict
    cannibalised: dict
    source: np.ndarray = field(repr=False)
    origin: np.ndarray = field(repr=False)

    @property
    def total_cannibalised(self) -> int:
        return int(sum(self.cannibalised.values()))

    def as_dict(self) -> dict:
        """The counts as plain JSON-able values (no per-row arrays)."""
        return {
            "magnitude": self.magnitude, "seed": self.seed, "reference_rater": self.reference_rater,
            "raters": list(self.raters), "schools": {k: list(v) for k, v in self.schools.items()},
            "school_class_maps": self.school_class_maps, "rates": dict(self.rates),
            "requested": dict(self.requested), "applied": dict(self.applied),
            "cannibalised": dict(self.cannibalised), "total_cannibalised": self.total_cannibalised,
        }


class Simulation(NamedTuple):
    """``(annotations, report)`` returned by :func:`simulate`."""

    annotations: MultiRaterAnnotations
    report: SimulationReport


# --------------------------------------------------------------------------
# Generator internals
# --------------------------------------------------------------------------


class _ClassSampler:
    """Draws a new class for a class ``c``: confusion row, else reference frequencies."""

    def __init__(self, confusion: Mapping[str, Mapping[str, float]], prior_labels: np.ndarray) -> None:
        self.rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for c, row in confusion.items():
            items = [(k, v) for k, v in sorted(row.items()) if v > 0 and k != c]
            if items:
                t = np.empty(len(items), dtype=object)
                t[:] = [k for k, _ in items]
                w = np.array([v for _, v in items], dtype=np.float64)
                self.rows[c] = (t, w / w.sum())
        classes, counts = np.unique(np.asarray([str(x) for x in prior_labels], dtype=object).astype(str),
                                    return_counts=True)
        self.prior_classes = np.empty(len(classes), dtype=object)
        self.prior_classes[:] = list(classes)
        self.prior_counts = counts.astype(np.float64)
        self.index = {c: i for i, c in enumerate(self.prior_classes)}

    def has_alternative(self, c: Any) -> bool:
        if c in self.rows:
            return True
        n_other = len(self.prior_classes) - (1 if c in self.index else 0)
        return n_other > 0

    def draw(self, c: Any, rng: np.random.Generator) -> Any:
        if c in self.rows:
            t, p = self.rows[c]
            return t[rng.choice(len(t), p=p)]
        w = self.prior_counts.copy()
        if c in self.index:
            w[self.index[c]] = 0.0
        return self.prior_classes[rng.choice(len(w), p=w / w.sum())]


def _elementwise_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax1, ay1 = a[:, 0] + a[:, 2], a[:, 1] + a[:, 3]
    bx1, by1 = b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]
    iw = np.clip(np.minimum(ax1, bx1) - np.maximum(a[:, 0], b[:, 0]), 0, None)
    ih = np.clip(np.minimum(ay1, by1) - np.maximum(a[:, 1], b[:, 1]), 0, None)
    inter = iw * ih
    union = a[:, 2] * a[:, 3] + b[:, 2] * b[:, 3] - inter
    same = np.all(a == b, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    return np.where(same, 1.0, iou)


def _apply_residuals(boxes: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Boxes moved by residuals ``(dx, dy, dw, dh)`` (before clipping)."""
    w, h = boxes[:, 2], boxes[:, 3]
    cx = boxes[:, 0] + w / 2 + r[:, 0] * w
    cy = boxes[:, 1] + h / 2 + r[:, 1] * h
    nw = w * np.exp(np.clip(r[:, 2], -20, 20))
    nh = h * np.exp(np.clip(r[:, 3], -20, 20))
    return np.stack([cx - nw / 2, cy - nh / 2, nw, nh], axis=1)


def _shift(
    boxes: np.ndarray,
    loc: LocalisationProfile,
    lam: float,
    threshold: float,
    offset: tuple[float, float, float, float],
    rng: np.random.Generator,
) -> np.ndarray:
    """Stage 4 geometry: residuals from ``loc`` restricted to IoU ``>= threshold``, times ``λ``."""
    m = len(boxes)
    if m == 0:
        return boxes.copy()
    r = loc.sample(rng, m)
    bad = _elementwise_iou(boxes, _apply_residuals(boxes, r)) < threshold
    for _ in range(_REJECTION_ROUNDS):
        if not bad.any():
            break
        idx = np.flatnonzero(bad)
        r[idx] = loc.sample(rng, len(idx))
        bad[idx] = _elementwise_iou(boxes[idx], _apply_residuals(boxes[idx], r[idx])) < threshold
    r[bad] = 0.0  # only after _REJECTION_ROUNDS failures (a profile far too wide for its threshold)
    total = lam * r + np.asarray(offset, dtype=np.float64)[None, :]
    out = _clip_to_image(_apply_residuals(boxes, total))
    still = np.all(total == 0.0, axis=1)  # exact copies (no round-off) where nothing moves, e.g. λ = 0
    out[still] = boxes[still]
    return out


def _split(box: np.ndarray, k: int, size: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``k`` pieces of a box cut across its longer side (pixel aspect when known)."""
    x, y, w, h = box
    W, H = (size if np.all(np.isfinite(size)) and np.all(size > 0) else (1.0, 1.0))
    frac = rng.dirichlet(np.full(k, 2.0))
    edges = np.concatenate([[0.0], np.cumsum(frac)])
    edges[-1] = 1.0
    pieces = np.empty((k, 4))
    if w * W >= h * H:
        pieces[:, 0] = x + edges[:-1] * w
        pieces[:, 2] = np.diff(edges) * w
        pieces[:, 1], pieces[:, 3] = y, h
    else:
        pieces[:, 1] = y + edges[:-1] * h
        pieces[:, 3] = np.diff(edges) * h
        pieces[:, 0], pieces[:, 2] = x, w
    return pieces


def _hull(boxes: np.ndarray) -> np.ndarray:
    x0, y0 = boxes[:, 0].min(), boxes[:, 1].min()
    x1, y1 = (boxes[:, 0] + boxes[:, 2]).max(), (boxes[:, 1] + boxes[:, 3]).max()
    return np.array([x0, y0, x1 - x0, y1 - y0])


def _false_positives(
    n_fp: int, labels: np.ndarray, shape: FalsePositiveShape, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    size = np.exp(rng.normal(shape.log_size_mean, shape.log_size_std, n_fp))
    aspect = np.exp(rng.normal(shape.log_aspect_mean, shape.log_aspect_std, n_fp))
    w = np.clip(size * np.sqrt(aspect), 0.0, 1.0)
    h = np.clip(size / np.sqrt(aspect), 0.0, 1.0)
    x = rng.random(n_fp) * (1.0 - w)
    y = rng.random(n_fp) * (1.0 - h)
    lab = labels[rng.integers(0, len(labels), n_fp)] if n_fp else labels[:0]
    return np.stack([x, y, w, h], axis=1), lab


def _binomial(rng: np.random.Generator, n: int, p: float) -> int:
    return int(rng.binomial(n, p)) if n and p > 0 else 0


def _simulate_cell(
    boxes: np.ndarray,
    labels: np.ndarray,
    image_size: np.ndarray,
    profile: NoiseProfile,
    rates: dict[str, float],
    lam: float,
    sampler: _ClassSampler,
    class_map: Mapping[str, str],
    offset: tuple[float, float, float, float],
    rng: np.random.Generator,
    counts: dict[str, dict[str, int]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One rater on one sample: ``(boxes, labels, source, origin)``, rows shuffled."""
    n = len(boxes)
    clean = np.ones(n, dtype=bool)
    out_b: list[np.ndarray] = []
    out_l: list[Any] = []
    out_s: list[int] = []
    out_o: list[str] = []
    req, app, can = counts["requested"], counts["applied"], counts["cannibalised"]

    # Stage 1: unmatched instances.
    k = _binomial(rng, n, rates["false_negative"])
    req["false_negative"] += k
    if k:
        clean[rng.choice(n, size=k, replace=False)] = False
    app["false_negative"] += k
    k = _binomial(rng, n, rates["false_positive"])
    req["false_positive"] += k
    if k:
        fb, fl = _false_positives(k, labels, profile.false_positive_shape, rng)
        out_b.append(fb)
        out_l.extend(fl)
        out_s.extend([-1] * k)
        out_o.extend(["false_positive"] * k)
    app["false_positive"] += k

    # Stage 2a: fragmentation.
    k = _binomial(rng, n, rates["fragmentation"])
    req["fragmentation"] += k
    if k:
        avail = np.flatnonzero(clean)
        take = min(k, len(avail))
        can["fragmentation"] += k - take
        app["fragmentation"] += take
        for i in rng.choice(avail, size=take, replace=False) if take else ():
            pieces = _split(boxes[i], 2 + int(rng.poisson(profile.fragment_extra_mean)), image_size, rng)
            clean[i] = False
            out_b.append(pieces)
            out_l.extend([labels[i]] * len(pieces))
            out_s.extend([int(i)] * len(pieces))
            out_o.extend(["fragment"] * len(pieces))

    # Stage 2b: combination.
    k = _binomial(rng, n, rates["combination"])
    req["combination"] += k
    if k:
        centres = boxes[:, :2] + boxes[:, 2:] / 2
        codes = np.unique(labels.astype(str), return_inverse=True)[1]
        for g in range(k):
            same = codes[:, None] == codes[None, :]
            partners = (same & clean[None, :] & clean[:, None]).sum(axis=1) - 1
            eligible = np.flatnonzero(clean & (partners >= 1))
            if not len(eligible):
                can["combination"] += k - g
                break
            seed_box = int(rng.choice(eligible))
            size = 2 + int(rng.poisson(profile.combination_extra_mean))
            cand = np.flatnonzero(clean & (codes == codes[seed_box]))
            cand = cand[cand != seed_box]
            d = np.hypot(*(centres[cand] - centres[seed_box]).T)
            members = np.concatenate([[seed_box], cand[np.argsort(d, kind="stable")[: size - 1]]])
            clean[members] = False
            out_b.append(_hull(boxes[members])[None, :])
            out_l.append(labels[seed_box])
            out_s.append(seed_box)
            out_o.append("combination")
            app["combination"] += 1

    # Stage 3: category mistakes (school relabelling first, then sampled confusions).
    mis = np.zeros(n, dtype=bool)
    new_labels = labels.copy()
    if class_map:
        mapped = np.array([clean[i] and str(labels[i]) in class_map for i in range(n)], dtype=bool)
        for i in np.flatnonzero(mapped):
            new_labels[i] = class_map[str(labels[i])]
        mis |= mapped
        clean &= ~mapped
        app["school_category"] += int(mapped.sum())
    k = _binomial(rng, n, rates["category"])
    req["category"] += k
    if k:
        avail = np.array([i for i in np.flatnonzero(clean) if sampler.has_alternative(labels[i])], dtype=np.intp)
        take = min(k, len(avail))
        can["category"] += k - take
        app["category"] += take
        chosen = np.sort(rng.choice(avail, size=take, replace=False)) if take else np.zeros(0, np.intp)
        for i in chosen:
            new_labels[i] = sampler.draw(labels[i], rng)
        clean[chosen] = False
        mis[chosen] = True
    idx = np.flatnonzero(mis)
    if len(idx):
        out_b.append(_shift(boxes[idx], profile.misclassified_localisation, lam, profile.iou_threshold, offset, rng))
        out_l.extend(new_labels[idx])
        out_s.extend(idx.tolist())
        out_o.extend(["school_category" if class_map and str(labels[i]) in class_map else "category" for i in idx])

    # Stage 4: localisation shift of whatever is still clean.
    idx = np.flatnonzero(clean)
    if len(idx):
        out_b.append(_shift(boxes[idx], profile.localisation, lam, profile.iou_threshold, offset, rng))
        out_l.extend(labels[idx])
        out_s.extend(idx.tolist())
        out_o.extend(["localisation"] * len(idx))
    app["localisation"] += len(idx)

    m = len(out_s)
    ob = np.concatenate(out_b) if out_b else np.zeros((0, 4))
    ol = np.empty(m, dtype=object)
    ol[:] = out_l
    os_ = np.asarray(out_s, dtype=np.intp)
    oo = np.asarray(out_o, dtype=object)
    perm = rng.permutation(m)
    return ob[perm], ol[perm], os_[perm], oo[perm]


def simulate(
    reference: MultiRaterAnnotations,
    profile: NoiseProfile | str | os.PathLike = "lvis",
    magnitude: float = 1.0,
    num_raters: int = 3,
    seed: int = 0,
    school: School | Sequence[School] | None = None,
    rater: str | None = None,
    names: Sequence[str] | None = None,
    include_reference: bool = False,
) -> Simulation:
    """Simulates ``K`` raters from a reference with the KαLOS empirical noise generator.

    Every simulated rater is produced per sample by the four prioritised
    stages of the module docstring (unmatched instances; fragmentation and
    combination; category mistakes; localisation shift), each drawing its
    errors among the still-clean reference boxes. The magnitude scales every
    rate, ``p = min(1, p_base · λ)``, and every localisation residual (``λ ·
    r``); ``λ = 0`` copies the reference, ``λ = 1`` reproduces the profile.

    Args:
        reference: the corpus holding the reference rater.
        profile: a :class:`NoiseProfile`, a shipped name (``"lvis"``) or a
            JSON file (see :func:`agreement.noise.fit.fit_profile`).
        magnitude: ``λ``, finite and ``>= 0``.
        num_raters: ``K >= 1`` simulated raters (school members included).
        seed: non-negative integer seed.
        school: a :class:`School` or several (disjoint groups of raters with a
            shared systematic bias); their members are the first raters.
        rater: the reference rater (optional when there is only one).
        names: the ``K`` rater names; default ``f"{school.name}_{j}"`` for
            school members and ``f"sim_{i}"`` for the others (1-based).
        include_reference: also include the reference rater, unchanged.

    Returns:
        :class:`Simulation` ``(annotations, report)``: the corpus of the
        simulated raters (assigned where the reference rater is; an empty
        reference set stays empty, as false positives are drawn per
        reference box), and the :class:`SimulationReport` with the counts per
        stage, the cannibalisation counts and each row's source.

    Raises:
        ValueError: ``λ`` negative or non-finite, ``K < 1``, more school
            members than raters, a reference that is empty everywhere, an
            unknown rater. :class:`ProfileError` for a profile that does not
            validate.

    Reference: Tschirschwitz & Rodehorst, KαLOS (empirical noise generator,
    stages in priority order, magnitude scaling, cannibalisation).
    """
    lam = _check_level(magnitude, "magnitude (λ)")
    seed = _check_seed(seed)
    if isinstance(num_raters, bool) or not isinstance(num_raters, (int, np.integer)) or num_raters < 1:
        raise ValueError(f"num_raters must be an integer K >= 1, got {num_raters!r}")
    prof = load_profile(profile)
    r = _reference_rater(reference, rater)
    ref_name = reference.raters[r]
    schools: list[School] = [] if school is None else ([school] if isinstance(school, School) else list(school))
    for sc in schools:
        if not isinstance(sc, School):
            raise TypeError(f"school must be a School or a list of them, got {type(sc).__name__}")
    if len({sc.name for sc in schools}) != len(schools):
        raise ValueError("school names must be unique")
    n_school = sum(sc.size for sc in schools)
    if n_school > num_raters:
        raise ValueError(f"the schools have {n_school} members but only num_raters={num_raters} raters are simulated")
    member_of: list[School | None] = [sc for sc in schools for _ in range(sc.size)]
    member_of += [None] * (num_raters - n_school)
    if names is None:
        names = [f"{sc.name}_{j + 1}" for sc in schools for j in range(sc.size)]
        names += [f"sim_{i + 1}" for i in range(num_raters - n_school)]
    names = [str(x) for x in names]
    if len(names) != num_raters:
        raise ValueError(f"names has {len(names)} entries for num_raters={num_raters}")
    all_names = names + ([ref_name] if include_reference else [])
    if len(set(all_names)) != len(all_names):
        raise ValueError(f"rater names must be unique, got {all_names}")

    ref_rows = np.flatnonzero(reference.rater_index == r)
    sampler = _ClassSampler(prof.confusion, reference.labels[ref_rows])
    class_maps: dict[str, dict[str, str]] = {}
    for sc in schools:
        if sc.class_map is not None:
            class_maps[sc.name] = dict(sc.class_map)
        else:
            rng = np.random.default_rng(np.random.SeedSequence([seed, _crc("school:" + sc.name), _crc("class_map")]))
            cmap = {}
            for c in sampler.prior_classes:
                if rng.random() < sc.class_map_rate and sampler.has_alternative(c):
                    cmap[str(c)] = str(sampler.draw(c, rng))
            class_maps[sc.name] = cmap
    rates = {k: min(1.0, v * lam) for k, v in prof.rates().items()}
    counts = {
        "requested": {k: 0 for k in STAGES if k != "localisation"},
        "applied": {k: 0 for k in STAGES + ("school_category",)},
        "cannibalised": {k: 0 for k in STAGES if k != "localisation"},
    }
    cells: dict[tuple[int, int], tuple] = {}
    prov: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    zero = (0.0, 0.0, 0.0, 0.0)
    for s in np.flatnonzero(reference.assigned[:, r]):
        s = int(s)
        sl = reference.rows(s, r)
        boxes, labels, ids = reference.boxes[sl], reference.labels[sl], reference.label_ids[sl]
        for k, rname in enumerate(names):
            sc = member_of[k]
            rng = _rng(seed, rname, reference.sample_ids[s])
            b, lab, src, org = _simulate_cell(
                boxes, labels, reference.image_sizes[s], prof, rates, lam, sampler,
                class_maps.get(sc.name, {}) if sc else {}, sc.offset if sc else zero, rng, counts,
            )
            lid = np.empty(len(src), dtype=object)
            lid[:] = [ids[i] if i >= 0 else None for i in src]
            cells[(s, k)] = (b, lab, lid)
            prov[(s, k)] = (np.where(src >= 0, src + sl.start, -1), org)
        if include_reference:
            cells[(s, num_raters)] = (boxes.copy(), labels.copy(), ids.copy())
            prov[(s, num_raters)] = (np.arange(sl.start, sl.stop), np.full(len(boxes), "reference", dtype=object))
    out = _assemble(reference, r, all_names, cells)
    # Provenance in the row order of ``out`` (sample-major, raters sorted by name).
    order = sorted(range(len(all_names)), key=lambda k: all_names[k])
    src_l, org_l = [], []
    for s in np.flatnonzero(reference.assigned[:, r]):
        for k in order:
            a, o = prov[(int(s), k)]
            src_l.append(a)
            org_l.append(o)
    source = np.concatenate(src_l).astype(np.intp) if src_l else np.zeros(0, np.intp)
    origin = np.concatenate(org_l).astype(object) if org_l else np.zeros(0, object)
    report = SimulationReport(
        magnitude=lam, seed=seed, reference_rater=ref_name, raters=tuple(names),
        schools={sc.name: tuple(names[k] for k in range(num_raters) if member_of[k] is sc) for sc in schools},
        school_class_maps=class_maps, rates=rates,
        requested=counts["requested"], applied=counts["applied"], cannibalised=counts["cannibalised"],
        source=source, origin=origin,
    )
    return Simulation(out, report)
