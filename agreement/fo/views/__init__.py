"""Views of a run's disagreements (re-exported here from :mod:`.disagreements`), the samples behind any view, and the consensus review loop."""

# the public names of :mod:`agreement.fo.views.disagreements`, at the path earlier releases documented
from agreement.fo.views.disagreements import *  # noqa: F401,F403
from agreement.fo.views.disagreements import __all__  # noqa: F401
