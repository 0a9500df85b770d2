"""Class and semantic mask runs through the Python call the FiftyOne way (``foo.get_operator(uri)(dataset, ...)``)
and FiftyOne's own run commands (``rename_run``, ``delete_run``) on them."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.fiftyone


def _class_ds(fo, make_dataset):
    return make_dataset([fo.Sample(filepath=f"/c/{i}", r1=fo.Classification(label="ab"[i % 2]),
                                   r2=fo.Classification(label="ab"[i // 2 % 2])) for i in range(8)])


def _mask_ds(fo, make_dataset):
    grid = (np.indices((6, 6)).sum(axis=0) % 3).astype(np.uint8)
    return make_dataset([fo.Sample(filepath=f"/m/{i}", m1=fo.Segmentation(mask=grid),
                                   m2=fo.Segmentation(mask=np.roll(grid, i, axis=0))) for i in range(3)])


@pytest.mark.parametrize("kind", ["classes", "masks"])
def test_python_call_then_fiftyone_rename_and_delete(fo, make_dataset, kind):
    import fiftyone.operators as foo

    ds = _class_ds(fo, make_dataset) if kind == "classes" else _mask_ds(fo, make_dataset)
    name, fields, suffix = (("compute_class_agreement", ["r1", "r2"], "agreement") if kind == "classes"
                            else ("compute_mask_agreement", ["m1", "m2"], "dice"))
    op = foo.get_operator(f"@iaa/agreement/{name}")
    op(ds, key="run", fields=fields)
    assert ds.list_runs() == ["run"] and ds.count(f"run_{suffix}") == len(ds)
    ds.rename_run("run", "renamed")  # FiftyOne's command moves the fields the run wrote
    schema = ds.get_field_schema()
    assert f"renamed_{suffix}" in schema and f"run_{suffix}" not in schema
    assert "alpha" in ds.load_run_results("renamed").summary  # the results load under the new key
    ds.delete_run("renamed")  # and removes them
    assert ds.list_runs() == [] and not [f for f in ds.get_field_schema() if f.startswith("renamed_")]
