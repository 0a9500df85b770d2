"""Agreement runs exported as files (:func:`export_agreement_report`, re-exported here from :mod:`.export`): tables, conflicts, the HTML page."""

# the public names of :mod:`agreement.fo.reports.export`, at the path earlier releases documented
from agreement.fo.reports.export import *  # noqa: F401,F403
from agreement.fo.reports.export import __all__  # noqa: F401
