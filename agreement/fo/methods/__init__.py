"""Every method the plugin offers: the one registry that the operators, the panel and the docs read.

A method is a module of this package that defines ``DECLARATION``, an
:class:`agreement.fo.runs.declaration.MethodDeclaration` (its parameters, engine
spec, outputs, panel view, results class and the hooks of everything it
shows, :class:`agreement.fo.runs.method_spec.MethodHooks`): :func:`declarations`
finds every such module, so adding a method means adding its module here and
nothing else. The shared modules find a run's hooks with :func:`hooks_of` and
never test a method's name; the markers of runs that are no declared method's
are in :mod:`agreement.fo.methods.markers` (``python -m agreement.fo.runs.manifest`` then lists its operator in
``fiftyone.yml``, which FiftyOne requires).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from agreement.fo.runs.declaration import MethodDeclaration
from agreement.fo.runs.method_spec import MethodHooks
from agreement.fo.runs.results import register_results_class
from agreement.reporting.figures.method_figures import METHOD_VIEWS

__all__ = ["declarations", "declaration_of", "hooks_of"]


@lru_cache(maxsize=None)
def _declared() -> tuple[MethodDeclaration, ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        decl = getattr(importlib.import_module(f"{__name__}.{info.name}"), "DECLARATION", None)
        if isinstance(decl, MethodDeclaration):
            found.append(decl)
            view = decl.view if decl.view is not None else getattr(decl.results_cls, "view", None)
            if view is not None:
                METHOD_VIEWS.setdefault(decl.method, view)
            if decl.results_cls is not None:
                register_results_class(decl.method, decl.results_cls)
    return tuple(found)


def declarations() -> list[MethodDeclaration]:
    """Every declared method, by module name; their panel views and results classes are registered."""
    return list(_declared())


def declaration_of(method: str | None) -> MethodDeclaration | None:
    """The declaration of method marker ``method`` (``None``: no declared method has it, e.g. a simulation).

    Args:
        method: a run's method marker (``info["method"]``).

    Returns:
        The declaration, or ``None``.
    """
    return next((d for d in _declared() if d.method == method), None)


def hooks_of(method: str | None) -> MethodHooks:
    """What method marker ``method`` shows (:class:`agreement.fo.runs.method_spec.MethodHooks`): its declaration's
    hooks, or the defaults (nothing method-specific) for a run of no declared method.

    Args:
        method: a run's method marker (``info["method"]``).

    Returns:
        The hooks.
    """
    decl = declaration_of(method)
    return decl.hooks if decl is not None else MethodHooks()
