"""The run lifecycle: runs stored on a dataset (list, load, rename, delete: :mod:`.store`, re-exported here), the engine, method declarations, run classes and results, locking and the Dask backend."""

# the public names of :mod:`agreement.fo.runs.store`, at the path earlier releases documented
from agreement.fo.runs.store import *  # noqa: F401,F403
from agreement.fo.runs.store import __all__  # noqa: F401
