"""Where runs of earlier releases stored their class path (``agreement.fo.run_classes.<Class>``): the classes now live in :mod:`agreement.fo.runs.classes`.

FiftyOne imports a run's config and results classes by the name stored with the run; this module keeps those names importable."""

from agreement.fo.runs.classes import *  # noqa: F401,F403
from agreement.fo.runs.classes import __all__  # noqa: F401
