"""The plugin's operators (thin: parameters in, bridge call, flat dict out)."""

from .ot import CalibrateAgreement, ComputeOTAgreement
from .simulate import SimulateRaters
from .consensus import ComputeMaskConsensus
from .kalos import ComputeKalos
from .geometry import ComputeGeometryAgreement
from .io import ExportMultiRaterCoco, ImportMultiRaterCoco
from .runs import DeleteAgreementRun, GetAgreementRunInfo, ListAgreementRuns, LoadAgreementView, RenameAgreementRun

OPERATORS = [
    ImportMultiRaterCoco,
    ComputeOTAgreement,
    CalibrateAgreement,
    ComputeKalos,
    ComputeGeometryAgreement,
    SimulateRaters,
    ComputeMaskConsensus,
    ExportMultiRaterCoco,
    ListAgreementRuns,
    GetAgreementRunInfo,
    RenameAgreementRun,
    DeleteAgreementRun,
    LoadAgreementView,
]
