"""The method markers that are not a declared method's, and how a marker is made from a method's name.

A run records its method as a marker ``"iaa.<name>"`` (``RunConfig.method``).
Each declared method's marker is its own (``METHOD`` in its module, see
:mod:`agreement.fo.methods`); the markers of the plugin's other runs, and the
rule that turns a short name into a marker, are kept here, so that no shared
module spells a marker.
"""

from __future__ import annotations

__all__ = ["MARKER_PREFIX", "SIMULATION_METHOD", "method_marker"]

#: What every method marker of the plugin starts with.
MARKER_PREFIX = "iaa."
#: The marker of a simulation run (:func:`agreement.fo.simulate.simulate_raters`): raters simulated from a
#: reference field, not a compute method.
SIMULATION_METHOD = MARKER_PREFIX + "simulate_raters"


def method_marker(name: str) -> str:
    """The method marker of method ``name`` (``"kalos"`` -> ``"iaa.kalos"``; a marker is returned as it is).

    Args:
        name: a method's short name or its marker.

    Returns:
        The marker.
    """
    return name if name.startswith(MARKER_PREFIX) else MARKER_PREFIX + name
