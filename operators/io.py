"""Import and export of the multi-rater COCO layout."""

from __future__ import annotations

import fiftyone.operators as foo
import fiftyone.operators.types as types

from agreement.fo.coco import LAYOUTS, POLYGON_MODES, export_multi_rater_coco, import_multi_rater_coco
from agreement.fo.reading import read_annotations

from .common import compute_config, require


class ImportMultiRaterCoco(foo.Operator):
    @property
    def config(self):
        return compute_config(
            "import_multi_rater_coco",
            "Annotator Agreement: import multi-rater COCO",
            "Builds a dataset from a COCO file whose annotations carry rater_id and images rater_list",
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("coco_path", required=True, label="COCO JSON file",
                   description="Images carry rater_list, annotations rater_id (the KaLOS tool's layout)")
        inputs.str("dataset_name", required=False, label="Dataset name",
                   description="Default: the file's name without extension")
        layout = types.RadioGroup()
        layout.add_choice("fields", label="One label field per rater")
        layout.add_choice("attribute", label="One field, rater in a label attribute")
        inputs.enum("layout", list(LAYOUTS), default="fields", label="Layout", view=layout)
        inputs.enum("polygons", list(POLYGON_MODES), default="polylines", label="Polygons",
                    description="polylines: lossless Polylines fields; masks: instance masks; none: boxes only")
        if ctx.params.get("layout") == "attribute":
            inputs.str("field", default="ground_truth", label="Label field")
            inputs.str("rater_attr", default="annotator", label="Rater attribute")
        inputs.str("image_dir", required=False, label="Image folder",
                   description="Where the images are (default: the JSON file's folder); files need not exist")
        inputs.bool("overwrite", default=False, label="Replace an existing dataset of that name")
        inputs.bool("persistent", default=True, label="Persistent dataset")
        return types.Property(inputs, view=types.View(label="Import multi-rater COCO"))

    def execute(self, ctx):
        p = ctx.params
        coco_path = require(p, "coco_path", "the multi-rater COCO JSON file")
        ctx.set_progress(progress=0.1, label="importing")
        dataset = import_multi_rater_coco(
            coco_path,
            dataset_name=p.get("dataset_name") or None,
            layout=p.get("layout") or "fields",
            polygons=p.get("polygons") or "polylines",
            field=p.get("field") or "ground_truth",
            rater_attr=p.get("rater_attr") or "annotator",
            image_dir=p.get("image_dir") or None,
            overwrite=bool(p.get("overwrite", False)),
            persistent=bool(p.get("persistent", True)),
        )
        meta = dataset.info["iaa_coco"]
        if meta["layout"] == "fields":
            read = read_annotations(dataset, fields=sorted(set(meta["rater_fields"].values())), min_raters=1)
        else:
            read = read_annotations(dataset, field=meta["field"], rater_attr=meta["rater_attr"], raters_field="raters", min_raters=1)
        summary = read.annotations.summary()
        return {
            "dataset_name": dataset.name,
            "num_samples": summary["samples"],
            "num_labels": summary["annotations"],
            "per_rater": summary["per_rater"],
            "rater_fields": meta["rater_fields"],
            "layout": meta["layout"],
        }

    def resolve_output(self, ctx):
        outputs = types.Object()
        outputs.str("dataset_name", label="Dataset")
        outputs.int("num_samples", label="Samples")
        outputs.int("num_labels", label="Labels")
        outputs.obj("per_rater", label="Per rater", view=types.JSONView())
        return types.Property(outputs)


class ExportMultiRaterCoco(foo.Operator):
    @property
    def config(self):
        return foo.OperatorConfig(
            name="export_multi_rater_coco",
            label="Annotator Agreement: export multi-rater COCO",
            description="Writes the current view back to the multi-rater COCO layout",
            dynamic=True,
        )

    def resolve_input(self, ctx):
        inputs = types.Object()
        inputs.str("coco_path", required=True, label="Output JSON file")
        inputs.list("fields", types.String(), required=False, label="Rater fields",
                    description="One label field per rater (default: the layout recorded at import)")
        inputs.str("field", required=False, label="Label field with a rater attribute")
        inputs.str("rater_attr", required=False, default="annotator", label="Rater attribute")
        return types.Property(inputs, view=types.View(label="Export multi-rater COCO"))

    def execute(self, ctx):
        p = ctx.params
        path = require(p, "coco_path", "the output JSON file")
        return export_multi_rater_coco(
            ctx.view, path, fields=p.get("fields") or None, field=p.get("field") or None,
            rater_attr=p.get("rater_attr") or None,
        )
