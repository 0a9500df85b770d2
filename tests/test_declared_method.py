"""A method declared in one file gets everything: operator and form, Python call, run info, panel card,
typed results, and delete and rename through FiftyOne's own commands.

The test copies the plugin, adds one module to ``agreement/fo/methods/`` (a
toy method: the mean IoU of the boxes two raters matched, with its kernel and
its declaration), lets ``python -m agreement.fo.manifest`` list its operator
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

from agreement.fo.declaration import MethodDeclaration, Param, python_function
from agreement.fo.engine import MethodOutput, MethodSpec
from agreement.fo.run_results import AgreementResults
from agreement.geometry import pairwise_iou


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
    return MethodOutput({"mean_iou": mean}, {}, sample_values={"mean_iou": values})


class MeanIouResults(AgreementResults):
    """Mean IoU of matched boxes: ``mean_iou``."""


DECLARATION = MethodDeclaration(
    operator="compute_mean_iou",
    label="Annotator Agreement: mean IoU",
    description="Mean IoU of the boxes two raters matched",
    spec=MethodSpec(method="iaa.mean_iou", sample_suffixes=("mean_iou",), label_suffixes=(), compute=_compute),
    params=(Param("threshold", float, 0.5, "IoU threshold", "Boxes match when their IoU is at least this",
                  low=0.0, high=1.0),),
    outputs=(("mean_iou", "Mean IoU of matched boxes", "float"),),
    key_prefix="miou",
    streams=False,
    view={"title": "Mean IoU", "score_suffix": "mean_iou", "score_label": "mean matched IoU of the sample",
          "score_axis": "mean matched IoU", "score_name": "mean IoU", "score_range": lambda params: (0.0, 1.0),
          "cards": [{"key": "mean_iou", "label": "mean IoU of matched boxes"}]},
    results_cls=MeanIouResults,
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
from agreement.fo.panel_data import run_panel_data
from agreement.fo.runs import get_agreement_run_info

info = get_agreement_run_info(ds, "miou")
cards = {c["label"]: c["text"] for c in run_panel_data(ds, "miou")["cards"]}
values = ds.values("miou_mean_iou")
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
    "signature": list(inspect.signature(op).parameters), "report": res.report(),
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
    env.update(PYTHONPATH=str(plugin), FIFTYONE_PLUGINS_DIR=str(plugin), IAA_AGREEMENT_NO_PTH="1")
    before = (plugin / "fiftyone.yml").read_text()
    check = subprocess.run([sys.executable, "-m", "agreement.fo.manifest", "--check"], cwd=plugin, env=env,
                           capture_output=True, text=True)
    assert check.returncode == 1 and "compute_mean_iou" in check.stdout, check.stdout + check.stderr
    subprocess.run([sys.executable, "-m", "agreement.fo.manifest"], cwd=plugin, env=env, check=True,
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
