"""A method declared in one file gets everything: operator and form, Python call, run info, panel card,
typed results, and delete and rename through FiftyOne's own commands; and, through the hooks it declares
(:class:`agreement.fo.runs.method_spec.MethodHooks`), its rater table, its view's own cards, its per-rater
figure, its labels explained and its report, with a clear "not offered" for what it does not declare
(drill-down modes beyond the score's, per-label conflicts).

The test copies the plugin, adds one module to ``agreement/fo/methods/`` (a
toy method: the mean IoU of the boxes two raters matched, with its kernel and
its declaration), lets ``python -m agreement.fo.runs.manifest`` list its operator
in ``fiftyone.yml``, and drives it in a fresh process with that copy as the
plugins directory. Nothing else of the plugin is edited.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.fiftyone

REPO = Path(__file__).resolve().parent.parent

TOY_METHOD = '''
"""Mean IoU of matched boxes: per sample, the mean IoU of the pairs of boxes that two raters matched
(Hungarian assignment, IoU >= threshold), over every pair of raters assigned to the sample."""

import numpy as np
from scipy.optimize import linear_sum_assignment

from agreement.fo.runs.declaration import MethodDeclaration, Param, python_function
from agreement.fo.runs.engine import MethodOutput, MethodSpec
from agreement.reporting.figures.method_figures import rater_bars
from agreement.fo.runs.method_spec import MethodHooks, RaterTable
from agreement.fo.panel.rater_tables import Column, row_texts
from agreement.fo.runs.results import AgreementResults
from agreement.geometry import pairwise_iou

METHOD = "iaa.mean_iou"


def mean_matched_iou(a: np.ndarray, b: np.ndarray, threshold: float) -> float:
    """Mean IoU of the matched pairs of box sets ``a`` and ``b`` (NaN when none match)."""
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    iou = pairwise_iou(a, b)
    rows, cols = linear_sum_assignment(-iou)
    kept = iou[rows, cols] >= threshold
    return float(iou[rows, cols][kept].mean()) if kept.any() else float("nan")


def _compute(read, params, report, extra):
    data = read.annotations
    values = []
    for s in range(len(data.sample_ids)):
        raters = np.flatnonzero(data.assigned[s])
        per_pair = []
        for i, ra in enumerate(raters):
            for rb in raters[i + 1:]:
                a = data.boxes[(data.sample_index == s) & (data.rater_index == ra)]
                b = data.boxes[(data.sample_index == s) & (data.rater_index == rb)]
                per_pair.append(mean_matched_iou(a, b, params["threshold"]))
        values.append(float(np.nanmean(per_pair)) if np.isfinite(per_pair).any() else float("nan"))
    mean = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    boxes = [int((data.rater_index == r).sum()) for r in range(len(data.raters))]
    detail = {"raters": [str(r) for r in data.raters], "n_boxes": boxes}
    return MethodOutput({"mean_iou": mean}, detail, sample_values={"mean_iou": values})


RATER_COLUMNS = (Column("n_boxes", "boxes", True, True, "the boxes it drew"),)


def _rater_rows(samples, info, detail):
    return [row_texts({"rater": r, "n_boxes": n}, RATER_COLUMNS) for r, n in zip(detail["raters"], detail["n_boxes"])]


def _explain(sample, info, labels):
    return [{"id": lab.id, "rater": r, "label": lab.label, "status": "drawn", "counterpart": "—", "value": "—",
             "disagrees": False} for r, lab in labels]


HOOKS = MethodHooks(
    rater_tables=(RaterTable(METHOD, RATER_COLUMNS, "**Boxes per rater** (whole run)", _rater_rows),),
    view_cards=lambda samples, info, detail, ids: [{"label": "samples in this view", "value": len(samples),
                                                    "text": str(len(samples))}],
    explain_labels=_explain,
)


class MeanIouResults(AgreementResults):
    """Mean IoU of matched boxes: ``mean_iou``."""


DECLARATION = MethodDeclaration(
    operator="compute_mean_iou",
    label="Annotator Agreement: mean IoU",
    description="Mean IoU of the boxes two raters matched",
    spec=MethodSpec(method=METHOD, sample_suffixes=("mean_iou",), label_suffixes=(), compute=_compute),
    params=(Param("threshold", float, 0.5, "IoU threshold", "Boxes match when their IoU is at least this",
                  low=0.0, high=1.0),),
    outputs=(("mean_iou", "Mean IoU of matched boxes", "float"),),
    key_prefix="miou",
    streams=False,
    view={"title": "Mean IoU", "score_suffix": "mean_iou", "score_label": "mean matched IoU of the sample",
          "score_axis": "mean matched IoU", "score_name": "mean IoU", "score_range": lambda params: (0.0, 1.0),
          "cards": [{"key": "mean_iou", "label": "mean IoU of matched boxes"}],
          "bars": lambda detail, info: rater_bars(detail, [("n_boxes", "boxes")], "Boxes per rater (whole run)",
                                                  "boxes")},
    results_cls=MeanIouResults,
    hooks=HOOKS,
)

compute_mean_iou = python_function(DECLARATION)
'''

SCRIPT = r'''
import inspect, json
import fiftyone as fo
import fiftyone.operators as foo
from fiftyone.operators.executor import ExecutionContext

ds = fo.Dataset("declared-toy")
box = lambda x: fo.Detection(label="cat", bounding_box=[x, 0.1, 0.2, 0.2])
for i in range(3):
    ds.add_sample(fo.Sample(filepath=f"/toy/{i}.jpg", a=fo.Detections(detections=[box(0.1)]),
                            b=fo.Detections(detections=[box(0.1 + 0.02 * i)]), c=fo.Detections(detections=[box(0.6)])))
op = foo.get_operator("@iaa/agreement/compute_mean_iou")
form = op.resolve_input(ExecutionContext(request_params={"dataset_name": ds.name, "params": {}}))
res = op(ds, key="miou", fields=["a", "b", "c"], threshold=0.3)
from agreement.fo.panel.data import run_panel_data
from agreement.fo.runs import get_agreement_run_info

info = get_agreement_run_info(ds, "miou")
data = run_panel_data(ds, "miou")
cards = {c["label"]: c["text"] for c in data["cards"]}
part = run_panel_data(ds.limit(2), "miou")  # a view: its own cards, the method's first
values = ds.values("miou_mean_iou")
import tempfile
from agreement.fo.panel.label_explanations import label_explanations
from agreement.fo.reports import export_agreement_report
from agreement.fo.views import ViewError, unmatched_labels_view
from agreement.fo.reports.conflict_table import run_conflicts

explained = label_explanations(ds, info, ds.first().id)
with tempfile.TemporaryDirectory() as folder:
    files = export_agreement_report(ds, folder, keys="miou")["runs"]["miou"]
    page = open(files["html"], encoding="utf-8").read()
    raters_csv = open(files["raters"], encoding="utf-8").read() if "raters" in files else ""
try:
    unmatched_labels_view(ds, "miou", "a")
    no_unmatched = None
except ViewError as e:
    no_unmatched = str(e)
conflicts, conflicts_note = run_conflicts(ds, info, ["a", "b", "c"])
panel = {"table": data["rater_table"] and data["rater_table"]["markdown"], "figures": sorted(data["figures"]),
         "view_cards": [c["label"] for c in part["view_cards"]], "explained": [(r["rater"], r["status"])
                                                                            for r in explained],
         "report_files": sorted(files), "report_has_title": "Mean IoU" in page,
         "report_has_boxes_chart": "Boxes per rater" in page, "raters_csv": raters_csv.splitlines()[:1],
         "no_unmatched": no_unmatched, "conflicts": conflicts, "conflicts_note": conflicts_note}
ds.rename_run("miou", "m2")
renamed = sorted(f for f in ds.get_field_schema() if f.startswith(("miou_", "m2_")))
ds.delete_run("m2")
left = sorted(f for f in ds.get_field_schema() if f.startswith(("miou_", "m2_")))
try:
    op(ds, key="bad", fields=["a", "b"], threshold=1.5)
    refused = None
except Exception as e:
    refused = str(e)
from agreement.fo.methods.mean_iou import compute_mean_iou
try:
    compute_mean_iou(ds, "bad", fields=["a", "b"], threshold=1.5)
    refused_py = None
except ValueError as e:
    refused_py = str(e)
print(json.dumps({
    "form": sorted(form.type.properties), "results": type(res).__name__, "mean_iou": res.mean_iou,
    "values": values, "params": info["params"], "method": info["method"], "cards": cards,
    "renamed": renamed, "left": left, "runs": ds.list_runs(), "refused": refused, "refused_py": refused_py,
    "signature": list(inspect.signature(op).parameters), "report": res.report(), "panel": panel,
}))
ds.delete()
'''


def _plugin_copy(dest: Path) -> Path:
    for name in ("agreement", "operators", "panels"):
        shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("__init__.py", "fiftyone.yml", "requirements.txt"):
        shutil.copy(REPO / name, dest / name)
    return dest


def test_a_method_declared_in_one_file_gets_operator_python_call_panel_and_run_commands(fo, tmp_path):
    plugin = _plugin_copy(tmp_path / "plugin")
    (plugin / "agreement" / "fo" / "methods" / "mean_iou.py").write_text(TOY_METHOD)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(PYTHONPATH=str(plugin), FIFTYONE_PLUGINS_DIR=str(plugin))
    before = (plugin / "fiftyone.yml").read_text()
    check = subprocess.run([sys.executable, "-m", "agreement.fo.runs.manifest", "--check"], cwd=plugin, env=env,
                           capture_output=True, text=True)
    assert check.returncode == 1 and "compute_mean_iou" in check.stdout, check.stdout + check.stderr
    subprocess.run([sys.executable, "-m", "agreement.fo.runs.manifest"], cwd=plugin, env=env, check=True,
                   capture_output=True)
    after = (plugin / "fiftyone.yml").read_text()
    assert after.replace("  - compute_mean_iou\n", "") == before

    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"threshold", "key", "layout"} <= set(out["form"])
    assert out["results"] == "MeanIouResults" and out["method"] == "iaa.mean_iou"
    # a and b match (IoU 1, 0.82, 0.67 on the three samples), c matches nobody
    assert out["values"] == pytest.approx([1.0, 0.036 / 0.044, 0.032 / 0.048])
    assert out["mean_iou"] == pytest.approx(sum(out["values"]) / 3)
    # the method's parameters, and the samples the run was asked to compute on (the dataset, from Python)
    assert out["params"] == {"threshold": 0.3, "target": {"target": "dataset", "n_samples": 3, "dataset_samples": 3,
                                                          "via": "python"}}
    assert out["cards"]["mean IoU of matched boxes"] != "undefined"
    assert out["renamed"] == ["m2_mean_iou"] and out["left"] == [] and out["runs"] == []
    assert "threshold" in out["refused"]  # FiftyOne's own form validation, from the declared range
    assert out["refused_py"] == "threshold must be in [0.0, 1.0], got 1.5"
    assert out["signature"][0] == "sample_collection" and "threshold" in out["signature"]
    assert "mean IoU of matched boxes" in out["report"]
    # what its hooks declare: its rater table, its view's own card, its per-rater chart, its labels explained,
    # its report (with the rater table as raters.csv); and what it does not: a clear "not offered"
    panel = out["panel"]
    assert "**Boxes per rater** (whole run)" in panel["table"] and "| a |" in panel["table"].replace("  ", " ")
    assert {"histogram", "bars_rater"} <= set(panel["figures"])
    assert panel["view_cards"][0] == "samples in this view"
    assert sorted(panel["explained"]) == [["a", "drawn"], ["b", "drawn"], ["c", "drawn"]]
    assert panel["report_has_title"] and panel["report_has_boxes_chart"]
    assert {"html", "json", "raters"} <= set(panel["report_files"]) and "conflicts" not in panel["report_files"]
    assert "n_boxes" in panel["raters_csv"][0] or "boxes" in panel["raters_csv"][0]
    assert "records no per-label matches" in panel["no_unmatched"]
    assert panel["conflicts"] is None and "no per-label counterparts" in panel["conflicts_note"]


def test_a_method_without_hooks_offers_none_of_them():
    """The hooks' defaults are "not offered": no rater table, no drill-down beyond the score's, no conflicts,
    no own section of the panel; a run of no declared method (a simulation) gets the defaults."""
    from agreement.fo.methods import hooks_of
    from agreement.fo.methods.markers import SIMULATION_METHOD
    from agreement.fo.runs.method_spec import MethodHooks

    hooks = MethodHooks()
    assert hooks.rater_table_of({"raters": ["a"]}) is None and hooks.drill_modes == ()
    assert hooks.conflicts is None and hooks.panel_section is None and hooks.explain_labels is None
    assert hooks_of(SIMULATION_METHOD) == hooks
