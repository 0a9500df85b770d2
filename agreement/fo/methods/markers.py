"""The method markers that are not a declared method's, and the prefix every marker starts with.

A run records its method as a marker ``"iaa.<name>"`` (``RunConfig.method``).
Each declared method's marker is its own (``METHOD`` in its module, see
:mod:`agreement.fo.methods`); the markers of the plugin's other runs are kept here, so that no shared
module spells a marker.
"""

from __future__ import annotations

__all__ = ["MARKER_PREFIX", "SIMULATION_METHOD"]

#: What every method marker of the plugin starts with.
MARKER_PREFIX = "iaa."
#: The marker of a simulation run (:func:`agreement.fo.simulate.raters.simulate_raters`): raters simulated from a
#: reference field, not a compute method.
SIMULATION_METHOD = MARKER_PREFIX + "simulate_raters"
