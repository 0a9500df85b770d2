"""The plugin's operators (thin: parameters in, bridge call, flat dict out)."""

from .app_filters import RestoreFilters
from .consensus import ExportRaterReport, FinalizeConsensus
from .declared import declared_operators
from .io import ExportMultiRaterCoco, ImportJudgements, ImportLabelStudio, ImportMultiRater, ImportMultiRaterCoco
from .labelling import LoadRequestedLabels, RequestLabels
from .planning import PlanRaters
from .relabel import SuggestRelabel
from .reports import ExportAgreementReport
from .review import ReviewConsensusLabels
from .runs import DeleteAgreementRun, GetAgreementRunInfo, ListAgreementRuns, LoadAgreementView, RenameAgreementRun
from .simulate import SimulateRaters

OPERATORS = [
    ImportMultiRaterCoco,
    ImportMultiRater,
    ImportLabelStudio,
    ImportJudgements,
    SimulateRaters,
    ReviewConsensusLabels,
    FinalizeConsensus,
    ExportRaterReport,
    ExportMultiRaterCoco,
    ExportAgreementReport,
    ListAgreementRuns,
    GetAgreementRunInfo,
    RenameAgreementRun,
    DeleteAgreementRun,
    LoadAgreementView,
    PlanRaters,
    SuggestRelabel,
    RequestLabels,
    LoadRequestedLabels,
] + declared_operators()

#: The App's own helpers (unlisted; no Python signature): put the sidebar filters back after a reload.
APP_OPERATORS = [RestoreFilters]
