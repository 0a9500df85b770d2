"""Noise profiles of the empirical noise generator (:mod:`agreement.simulate.noise.empirical`): the fitted rates
of each error type, the Student-t localisation residuals, the false-positive shape and the class
confusions, their JSON format (``iaa-noise-profile``, version 1) with validation that names the key,
and the shipped profiles (``profiles/*.json``).

Reference: Tschirschwitz & Rodehorst, "KαLOS finds Consensus" (empirical noise generator).

This module does not import FiftyOne.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

PROFILE_FORMAT = "iaa-noise-profile"
PROFILE_VERSION = 1
PROFILES_DIR = Path(__file__).resolve().parent / "profiles"

STAGES = ("false_negative", "false_positive", "fragmentation", "combination", "category", "localisation")
"""Error types of the generator, in priority order (false positives skip the rest)."""


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
        """The distribution as a JSON-ready dict."""
        return {"df": self.df, "loc": self.loc, "scale": self.scale}

    @classmethod
    def from_dict(cls, d: Any, path: str, source: str) -> "StudentT":
        """Reads :meth:`to_dict`'s output; ``path`` and ``source`` locate an error in its messages."""
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
        """The profile as a JSON-ready dict."""
        out = {k: getattr(self, k).to_dict() for k in _RESIDUALS}
        out["n_pairs"] = int(self.n_pairs)
        return out

    @classmethod
    def from_dict(cls, d: Any, path: str, source: str) -> "LocalisationProfile":
        """Reads :meth:`to_dict`'s output; ``path`` and ``source`` locate an error in its messages."""
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
        """The shape as a JSON-ready dict."""
        return {k: getattr(self, k) for k in ("log_size_mean", "log_size_std", "log_aspect_mean", "log_aspect_std")}

    @classmethod
    def from_dict(cls, d: Any, path: str, source: str) -> "FalsePositiveShape":
        """Reads :meth:`to_dict`'s output; ``path`` and ``source`` locate an error in its messages."""
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
