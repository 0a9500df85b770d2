"""Simulated raters on FiftyOne datasets (images: re-exported here from :mod:`.raters`; videos: :mod:`.video`)."""

# the public names of :mod:`agreement.fo.simulate.raters`, at the path earlier releases documented
from agreement.fo.simulate.raters import *  # noqa: F401,F403
from agreement.fo.simulate.raters import __all__  # noqa: F401
