"""The plugin's operators (thin: parameters in, bridge call, flat dict out)."""

from .simulate import SimulateRaters
from .consensus import ExportRaterReport, FinalizeConsensus
from .declared import declared_operators
from .io import ExportMultiRaterCoco, ImportLabelStudio, ImportMultiRater, ImportMultiRaterCoco
from .reports import ExportAgreementReport
from .runs import DeleteAgreementRun, GetAgreementRunInfo, ListAgreementRuns, LoadAgreementView, RenameAgreementRun

OPERATORS = [
    ImportMultiRaterCoco,
    ImportMultiRater,
    ImportLabelStudio,
    SimulateRaters,
    FinalizeConsensus,
    ExportRaterReport,
    ExportMultiRaterCoco,
    ExportAgreementReport,
    ListAgreementRuns,
    GetAgreementRunInfo,
    RenameAgreementRun,
    DeleteAgreementRun,
    LoadAgreementView,
] + declared_operators()
