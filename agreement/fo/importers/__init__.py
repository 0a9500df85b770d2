"""Multi-rater importers: one export per rater in any format FiftyOne reads, and Label Studio's JSON export.

Both build a dataset in the fields or the attribute layout, record the layout
in ``dataset.info`` (as :mod:`agreement.fo.importers.coco` does) and leave nothing
behind when they fail.
"""

from agreement.fo.importers.common import MultiRaterImportError
from agreement.fo.importers.label_studio import import_label_studio
from agreement.fo.importers.multi_rater import FORMATS, RaterExport, import_multi_rater

__all__ = ["FORMATS", "RaterExport", "MultiRaterImportError", "import_multi_rater", "import_label_studio"]
