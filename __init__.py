"""The ``@iaa/agreement`` FiftyOne plugin.

FiftyOne imports this file under a synthetic module name and calls
:func:`register`. Operators and panels are imported there, not at module
level, so that ``import agreement`` (the pure library) never starts FiftyOne.
"""

import os
import sys

_PLUGIN_DIR = os.path.dirname(os.path.abspath(__file__))


def register(p):
    # make the plugin's own `agreement` package importable by its absolute name
    if _PLUGIN_DIR not in sys.path:
        sys.path.insert(0, _PLUGIN_DIR)

    from .operators import OPERATORS
    from .panels import PANELS

    for cls in OPERATORS + PANELS:
        p.register(cls)
