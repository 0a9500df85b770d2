"""Every method the engine runs, by its run's method marker: the one registry of :class:`MethodSpec` declarations.

A Dask worker finds the method of a shard here (:func:`spec_of`); adding a
method means adding its module's ``SPEC`` to :data:`_MODULES`.
"""

from __future__ import annotations

import importlib

from agreement.fo.engine import MethodSpec

__all__ = ["spec_of", "streamed_methods"]

_MODULES = ("agreement.fo.kalos", "agreement.fo.geometry", "agreement.fo.ot_agreement", "agreement.fo.consensus",
            "agreement.fo.consensus_labels", "agreement.fo.calibrate")


def _specs() -> dict[str, MethodSpec]:
    out = {}
    for name in _MODULES:
        spec = getattr(importlib.import_module(name), "SPEC", None)
        if isinstance(spec, MethodSpec):
            out[spec.method] = spec
    return out


def spec_of(method: str) -> MethodSpec:
    """The declaration of the method with run marker ``method`` (e.g. ``"iaa.kalos"``)."""
    specs = _specs()
    if method not in specs:
        raise KeyError(f"no agreement method {method!r}; known: {sorted(specs)}")
    return specs[method]


def streamed_methods() -> list[str]:
    """The method markers whose runs stream (a kernel and a finish): they take shard sizes and backends."""
    return sorted(m for m, spec in _specs().items() if spec.kernel is not None)
