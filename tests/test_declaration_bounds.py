"""Every declared numeric range, validated at its ends: generated from the method registry.

For every numeric parameter with a range of every method declaration
(:func:`agreement.fo.methods.declarations`, so a new method or parameter is
covered without editing this file), the value exactly at a closed bound is
accepted, and the value just past it (or exactly at an open bound) refused,
through :meth:`MethodDeclaration.validate`: the validation that both the
operators and the Python functions run (:func:`agreement.fo.runs.declaration.run_declared`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("fiftyone")

from agreement.fo.methods import declarations  # noqa: E402


def _bounds() -> list[tuple[str, str, str, float, bool]]:
    """``(operator, param, side, bound, open)`` of every declared numeric bound."""
    out = []
    for decl in declarations():
        for p in decl.method_params:
            if p.kind not in (int, float) or p.choices:
                continue
            if p.low is not None:
                out.append((decl.operator, p.name, "low", p.low, p.low_open))
            if p.high is not None:
                out.append((decl.operator, p.name, "high", p.high, p.high_open))
    return out


BOUNDS = _bounds()


def _decl(operator: str):
    return next(d for d in declarations() if d.operator == operator)


def _past(kind: type, bound: float, side: str) -> float:
    """The nearest value of the parameter's type beyond ``bound``."""
    if kind is int:
        return bound - 1 if side == "low" else bound + 1
    return float(np.nextafter(bound, -math.inf if side == "low" else math.inf))


def test_the_registry_declares_bounds_of_both_kinds():
    # guards the generation itself: an empty list would make every test below vacuous
    assert len(BOUNDS) >= 15
    assert any(not open_ and side == "high" for _, _, side, _, open_ in BOUNDS)
    assert any(open_ for *_, open_ in BOUNDS)
    assert {"tau", "beta"} <= {name for _, name, *_ in BOUNDS}


@pytest.mark.parametrize("operator, name, side, bound, open_", BOUNDS,
                         ids=[f"{o}.{n}.{s}" for o, n, s, *_ in BOUNDS])
def test_value_at_and_past_each_bound(operator, name, side, bound, open_):
    decl = _decl(operator)
    kind = decl.param(name).kind
    at = kind(bound)
    if open_:
        with pytest.raises(ValueError, match=name):
            decl.validate({name: at})
    else:
        assert decl.validate({name: at})[name] == at
    with pytest.raises(ValueError, match=name):
        decl.validate({name: _past(kind, bound, side)})


def test_tau_one_is_accepted_where_declared():
    # the example: tau = 1.0 (a closed upper bound) must be accepted
    taus = [d for d in declarations() if any(p.name == "tau" and p.high == 1.0 and not p.high_open
                                             for p in d.method_params)]
    assert taus
    for decl in taus:
        assert decl.validate({"tau": 1.0})["tau"] == 1.0
