"""Import and export of the multi-rater COCO layout."""

from __future__ import annotations

from typing import Any, Callable

import fiftyone.operators.types as types

from agreement.fo.importers.coco import LAYOUTS, POLYGON_MODES, export_multi_rater_coco, import_multi_rater_coco
from agreement.fo.importers.common import rater_warnings
from agreement.fo.storage.reading import read_annotations

from .common import Progress, compute_config, execute_with_progress, require
from .outputs import result_property, shown_result
from .python_call import AgreementOperator
from .target import target_input, target_record, target_view

#: what every import returns first: the new dataset, opened in the App when the import ends
IMPORTED = (("dataset_name", "Dataset (now open)", "str"), ("media_type", "Media type", "str"),
            ("num_samples", "Samples", "int"), ("raters", "Raters", "raters"), ("layout", "Layout", "str"),
            ("rater_fields", "Rater fields (rater: field)", "per_rater"), ("field", "Label field (one-field layout)", "str"))


def _open_imported(result: dict) -> list:
    """The App opens the dataset an import made (its dataset selector then lists it)."""
    return [("open_dataset", {"dataset": result["dataset_name"]})]


def _run_import(operator, ctx, compute):
    """An import operator's execution: ``compute`` with progress, the new dataset opened, its result shown
    (long lists of raters summarised: :func:`operators.outputs.shown_result`)."""
    return execute_with_progress(ctx, compute, outputs=lambda r: result_property(operator.outputs, r),
                                 triggers=_open_imported, show=lambda r: shown_result(operator.outputs, r))


#: what an import says about its names and raters
MATCHED = (("match", "Name matching: the rule, and per rater its images, matched, unmatched (a few listed), renamed by",
            "json"),)
WARNINGS = (("warnings", "Warnings", "lines"),)


class ImportMultiRaterCoco(AgreementOperator):
    """``import_multi_rater_coco``: builds a dataset from a multi-rater COCO file."""

    outputs = IMPORTED + (("num_labels", "Labels", "int"), ("per_rater", "Labels per rater", "per_rater"),
                          ("repairs", "Boxes past the image border", "json")) + WARNINGS

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return compute_config(
            "import_multi_rater_coco",
            "Annotator Agreement: import multi-rater COCO",
            "Builds a dataset from a COCO file whose annotations carry rater_id and images rater_list",
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
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
        inputs.enum("box_policy", ["clip", "drop", "error"], default="clip", label="Boxes past the image border",
                    description="clip them to the image, drop them, or refuse the file (repairs are counted per rater)")
        inputs.bool("overwrite", default=False, label="Replace an existing dataset of that name")
        inputs.bool("persistent", default=True, label="Persistent dataset")
        return types.Property(inputs, view=types.View(label="Import multi-rater COCO"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        p = ctx.params
        coco_path = require(p, "coco_path", "the multi-rater COCO JSON file")
        kwargs: dict[str, Any] = dict(
            dataset_name=p.get("dataset_name") or None,
            layout=p.get("layout") or "fields",
            polygons=p.get("polygons") or "polylines",
            field=p.get("field") or "ground_truth",
            rater_attr=p.get("rater_attr") or "annotator",
            image_dir=p.get("image_dir") or None,
            overwrite=bool(p.get("overwrite", False)),
            persistent=bool(p.get("persistent", True)),
            box_policy=p.get("box_policy") or "clip",
        )
        return _run_import(self, ctx, lambda progress: _import(
            progress, lambda: import_multi_rater_coco(coco_path, **kwargs), _coco_import_result))


class ExportMultiRaterCoco(AgreementOperator):
    """``export_multi_rater_coco``: writes the samples back to the multi-rater COCO layout."""

    takes_target = True
    outputs = (("path", "File written", "str"), ("target", "Samples exported", "str"), ("images", "Images", "int"),
               ("annotations", "Annotations", "int"), ("raters", "Raters", "raters"))

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return compute_config(
            "export_multi_rater_coco",
            "Annotator Agreement: export multi-rater COCO",
            "Writes the dataset (or the current view, or the selected samples) back to the multi-rater COCO "
            "layout",
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        inputs = types.Object()
        target_input(inputs, ctx, "Export")
        inputs.str("coco_path", required=True, label="Output JSON file")
        inputs.list("fields", types.String(), required=False, label="Rater fields",
                    description="One label field per rater (default: the layout recorded at import)")
        inputs.str("field", required=False, label="Label field with a rater attribute")
        inputs.str("rater_attr", required=False, default="annotator", label="Rater attribute")
        return types.Property(inputs, view=types.View(label="Export multi-rater COCO"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        p = ctx.params
        from .reports import describe_target

        path = require(p, "coco_path", "the output JSON file")
        samples = target_view(ctx)
        record = target_record(ctx, samples)

        def compute(progress: Progress) -> dict:
            progress(0.0, f"writing {len(samples):,} samples to {path}")
            out = export_multi_rater_coco(
                samples, path, fields=p.get("fields") or None, field=p.get("field") or None,
                rater_attr=p.get("rater_attr") or None,
            )
            return {"path": str(path), "target": describe_target(record), **out}

        return execute_with_progress(ctx, compute, outputs=lambda r: result_property(self.outputs, r),
                                     show=lambda r: shown_result(self.outputs, r))


def _layout_inputs(inputs: types.Object, ctx) -> None:
    """Form fragment: layout (and its field and rater attribute), overwrite, persistent."""
    layout = types.RadioGroup()
    layout.add_choice("fields", label="One label field per rater")
    layout.add_choice("attribute", label="One field, rater in a label attribute")
    inputs.enum("layout", ["fields", "attribute"], default="fields", label="Layout", view=layout)
    if ctx.params.get("layout") == "attribute":
        inputs.str("field", default="ground_truth", label="Label field")
        inputs.str("rater_attr", default="annotator", label="Rater attribute")
    inputs.bool("overwrite", default=False, label="Replace an existing dataset of that name")
    inputs.bool("persistent", default=True, label="Persistent dataset")


def _layout_kwargs(p: dict) -> dict:
    return {
        "layout": p.get("layout") or "fields",
        "field": p.get("field") or "ground_truth",
        "rater_attr": p.get("rater_attr") or "annotator",
        "overwrite": bool(p.get("overwrite", False)),
        "persistent": bool(p.get("persistent", True)),
    }


def _coco_import_result(dataset) -> dict:
    """The summary of ``import_multi_rater_coco``: dataset, samples, labels per rater, layout."""
    meta = dataset.info["iaa_coco"]
    if meta["layout"] == "fields":
        read = read_annotations(dataset, fields=sorted(set(meta["rater_fields"].values())), min_raters=1)
    else:
        read = read_annotations(dataset, field=meta["field"], rater_attr=meta["rater_attr"], raters_field="raters", min_raters=1)
    summary = read.annotations.summary()
    return {
        "dataset_name": dataset.name,
        "media_type": dataset.media_type,
        "num_samples": summary["samples"],
        "raters": list(read.annotations.raters),
        "layout": meta["layout"],
        "rater_fields": meta["rater_fields"],
        "num_labels": summary["annotations"],
        "per_rater": summary["per_rater"],
        "repairs": meta.get("repairs"),
        "warnings": rater_warnings(list(read.annotations.raters)) + _repair_warnings(meta),
    }


def _repair_warnings(meta: dict) -> list[str]:
    """A sentence when the import clipped or dropped boxes past the image border (counted in ``repairs``)."""
    rep = meta.get("repairs") or {}
    done = {k: rep.get(k, 0) for k in ("clipped_boxes", "outside_boxes", "dropped_boxes") if rep.get(k)}
    if not done:
        return []
    what = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in done.items())
    return [f"boxes past the image border were repaired ({what}; box_policy={meta.get('box_policy')!r}): see "
            "'repairs' for the raters and examples; box_policy='error' refuses such a file instead"]


def _import(progress: Progress, importer: Callable[[], Any], summarise: Callable[[Any], dict]) -> dict:
    """The body of an import operator: ``summarise(importer())``, each reported as a stage."""
    progress(0.0, "importing")
    imported = importer()
    progress(0.9, "summarising the new dataset")
    return summarise(imported)


def _import_result(dataset, report: dict) -> dict:
    meta = dataset.info["iaa_coco"]
    return {
        "dataset_name": dataset.name,
        "media_type": dataset.media_type,
        "num_samples": dataset.count(),
        "raters": list(meta.get("rater_fields") or {}),
        "layout": meta["layout"],
        "rater_fields": meta["rater_fields"],
        "field": meta["field"],
        **report,
    }


class ImportMultiRater(AgreementOperator):
    """``import_multi_rater``: merges one export per rater, in any format FiftyOne reads, by file name."""

    outputs = IMPORTED + (("images", "Images matched across the exports", "int"),
                          ("videos", "Videos matched across the exports", "int"),
                          ("frames", "Frames with labels", "int"),
                          ("per_rater", "Per rater: images, labels, images missing", "per_rater"),
                          ("label_fields", "Image-level labels (kind: label type)", "json")) + MATCHED + (
                          ("converted", "Label Studio converter outputs read (rater: how)", "json"),) + WARNINGS

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return compute_config(
            "import_multi_rater",
            "Annotator Agreement: import one export per rater",
            "Merges per-rater exports in any format FiftyOne reads (COCO, CVAT image, VOC, YOLO, classification "
            "tree, segmentation masks, CVAT video with tracks, ...) by image or video file name",
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        from agreement.fo.importers.image_level import LABEL_TYPES
        from agreement.fo.importers.multi_rater import FORMATS

        inputs = types.Object()
        entry = types.Object()
        entry.str("rater", required=True, label="Rater name")
        entry.str("path", required=True, label="Export (folder or labels file)")
        entry.enum("format", list(FORMATS), required=True, label="Format")
        entry.str("image_dir", required=False, label="Image folder (if not in the export)")
        entry.bool("complete", required=False, label="This export covers every image")
        entry.str("classes", required=False, label="YOLO classes (if no dataset.yaml)",
                  description="The class names in class id order, separated by commas, or the path of classes.txt")
        entry.str("annotator", required=False, label="Label Studio annotator (JSON with several)",
                  description="format label_studio: the annotator's id or email whose annotations are this rater's")
        inputs.list("exports", entry, required=True, label="Exports, one per rater",
                    description="Images are matched across exports by file name (Label Studio's upload id removed)")
        inputs.str("dataset_name", required=True, label="Dataset name")
        inputs.bool("complete", default=False, label="Every export covers every image",
                    description="Then an image missing from an export means that rater found nothing there "
                                "(explicit absence); otherwise it means the rater was not assigned it")
        inputs.str("image_dir", required=False, label="Image folder",
                    description="Where the images are (default: where the exports point)")
        inputs.enum("label_type", list(LABEL_TYPES), default="auto", label="Image-level classes",
                    description="Classification tree folders, CVAT tags: classification (one class per rater and "
                                "image), tags (a set), or auto (tags when some image has several)")
        inputs.str("mask_targets", required=False, label="Mask targets (segmentation)",
                   description='JSON {"pixel value": "class"}, e.g. {"1": "road", "2": "car"}; default: the '
                               "exports' own, else none (pixel values are the classes)")
        inputs.str("classes", required=False, label="YOLO classes (exports without dataset.yaml)",
                   description="Label Studio's YOLO output: the class names in class id order, separated by commas, "
                               "or the path of its classes.txt (default: a classes.txt in the export)")
        _name_inputs(inputs)
        _layout_inputs(inputs, ctx)
        return types.Property(inputs, view=types.View(label="Import one export per rater"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.importers import import_multi_rater

        p = ctx.params
        exports = require(p, "exports", "a list of {rater, path, format}, one per rater")
        name = require(p, "dataset_name", "the name of the new dataset")
        exports = [_export_entry(e) for e in exports]
        kwargs = dict(complete=bool(p.get("complete", False)), image_dir=p.get("image_dir") or None,
                      label_type=p.get("label_type") or "auto", mask_targets=_mask_targets(p.get("mask_targets")),
                      classes=_class_names(p.get("classes")), **_name_kwargs(p), **_layout_kwargs(p))
        return _run_import(self, ctx, lambda progress: _import(
            progress, lambda: import_multi_rater(exports, name, **kwargs), lambda out: _import_result(*out)))


def _export_entry(entry: Any) -> Any:
    """A form's export entry as ``import_multi_rater`` takes it: ``classes`` parsed, ``annotator`` an option."""
    if not isinstance(entry, dict):
        return entry
    entry = {k: v for k, v in entry.items() if v not in (None, "")}
    if "classes" in entry:
        entry["classes"] = _class_names(entry["classes"])
    if "annotator" in entry:
        entry["options"] = {**dict(entry.get("options") or {}), "annotator": entry.pop("annotator")}
    return entry


def _name_inputs(inputs: types.Object) -> None:
    """Form fragment: how image names correspond across exports."""
    inputs.bool("upload_ids", default=True, label="Remove Label Studio's upload id from names",
                description="'01b89637-photo.jpg' is matched as 'photo.jpg' (exactly 8 hex digits and a hyphen)")
    inputs.str("strip_prefix", required=False, label="Prefix pattern removed from names",
               description="A regular expression; its match at the start of a file name is removed (e.g. ^task\\d+_)")
    inputs.str("name_map", required=False, label="Name map (CSV or JSON file)",
               description="export name -> image name: a CSV of two columns (export_name,image_name) or a JSON object")


def _name_kwargs(p: dict) -> dict:
    return {"name_map": p.get("name_map") or None, "strip_prefix": p.get("strip_prefix") or None,
            "upload_ids": bool(p.get("upload_ids", True))}


def _class_names(value: Any) -> Any:
    """YOLO classes as given: a list (Python), a ``classes.txt`` path, or names separated by commas (the form)."""
    import os

    if value in (None, "", []):
        return None
    if isinstance(value, str) and not os.path.isfile(value):
        return [c.strip() for c in value.split(",") if c.strip()]
    return value


def _mask_targets(value: Any) -> dict | None:
    """``mask_targets`` as given: a mapping (Python call) or its JSON text (the form); empty: ``None``."""
    if value in (None, "", {}):
        return None
    if isinstance(value, str):
        import json

        try:
            value = json.loads(value)
        except ValueError as e:
            raise ValueError(f'mask_targets must be JSON such as {{"1": "road"}}, got {value!r} ({e})') from e
    if not isinstance(value, dict):
        raise ValueError(f"mask_targets must map pixel values to class names, got {value!r}")
    return value


class ImportLabelStudio(AgreementOperator):
    """``import_label_studio``: builds a multi-rater dataset from a Label Studio JSON export."""

    outputs = IMPORTED + (("tasks", "Tasks", "int"), ("regions", "Regions", "int"),
                          ("per_rater", "Regions per rater", "per_rater"), ("skipped", "Skipped regions", "json"),
                          ("repaired", "Repaired regions", "json"),
                          ("choices", "Choices controls (class or tags, classes, answered)", "json"),
                          ("fell_back_to_updated_by", "Annotations whose rater is their updated_by (no completed_by)",
                           "int")) + MATCHED + WARNINGS

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return compute_config(
            "import_label_studio",
            "Annotator Agreement: import a Label Studio export",
            "Builds a multi-rater dataset from Label Studio's JSON export (one annotation per annotator and task)",
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        from agreement.io.labelstudio import RATER_SOURCES, ROTATED_POLICIES

        inputs = types.Object()
        inputs.str("json_path", required=True, label="Label Studio JSON export",
                   description="Several annotations per task; completed_by is the rater")
        inputs.str("dataset_name", required=False, label="Dataset name",
                   description="Default: the file's name without extension")
        inputs.str("image_dir", required=False, label="Image folder",
                   description="Where the images are (default: the JSON file's folder); files need not exist")
        inputs.str("image_key", required=False, label="Image key in the task data",
                   description="Default: 'image', else the task data's only string value")
        inputs.enum("rotated", list(ROTATED_POLICIES), default="error", label="Rotated rectangles",
                    description="error: refuse the file; bbox: their bounding box (counted); skip: leave out (counted)")
        inputs.str("label_config", required=False, label="Label config (XML file or text)",
                   description="The project's labeling interface: decides whether a Choices control is one class "
                               "or tags, and checks the choices (default: inferred from the export)")
        inputs.enum("rater_from", list(RATER_SOURCES), default="completed_by", label="Rater of an annotation",
                    description="completed_by: an annotation without it is refused; updated_by_fallback: its "
                                "updated_by is the rater (counted)")
        _name_inputs(inputs)
        _layout_inputs(inputs, ctx)
        return types.Property(inputs, view=types.View(label="Import a Label Studio export"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.importers import import_label_studio

        p = ctx.params
        path = require(p, "json_path", "the Label Studio JSON export")
        kwargs = dict(
            dataset_name=p.get("dataset_name") or None, image_dir=p.get("image_dir") or None,
            image_key=p.get("image_key") or None, rotated=p.get("rotated") or "error",
            rater_names=p.get("rater_names") or None, label_config=p.get("label_config") or None,
            rater_from=p.get("rater_from") or "completed_by", **_name_kwargs(p), **_layout_kwargs(p),
        )
        return _run_import(self, ctx, lambda progress: _import(
            progress, lambda: import_label_studio(path, **kwargs), lambda out: _import_result(*out)))


class ImportJudgements(AgreementOperator):
    """``import_judgements``: builds a dataset of image-level classes from a crowd judgements file."""

    outputs = IMPORTED + (("judgements", "Judgements in the file", "int"), ("classes", "Classes", "list"),
                          ("repeated_pairs", "(worker, item) pairs judged more than once", "int"),
                          ("repeated_judgements_set_aside", "Repeated judgements set aside", "int"),
                          ("conflicting_pairs", "Repeated pairs with different labels", "int"),
                          ("unknown_counts", "Labels outside the categories (label: judgements)", "json"),
                          ("dropped", "Judgements dropped", "int"),
                          ("header", "Header line skipped", "str"),
                          ("header_lines", "Header lines skipped (repeats included)", "int"),
                          ("whitespace_stripped", "Fields with surrounding whitespace, stripped", "int"),
                          ("whitespace_examples", "Whitespace stripped: first fields", "lines"),
                          ("comments", "Comment lines (#) skipped", "int"),
                          ("bom", "UTF-8 byte order mark ignored", "bool"),
                          ("columns", "Columns (in file order)", "list"),
                          ("categories_file", "Categories file: what was repaired", "json"),
                          ("summary", "What was read and repaired", "str")) + WARNINGS

    @property
    def config(self):
        """The operator's name, label and description in the App."""
        return compute_config(
            "import_judgements",
            "Annotator Agreement: import crowd judgements",
            "Builds a dataset of image-level classes from a worker<TAB>item<TAB>label file (one sample per item, "
            "the workers as raters)",
        )

    def resolve_input(self, ctx):
        """The App's form of the operator's parameters, built from ``ctx.params`` so far."""
        from agreement.io.judgements import REPEATED_POLICIES, UNKNOWN_POLICIES

        inputs = types.Object()
        inputs.str("path", required=True, label="Judgement file (TSV or CSV)",
                   description="One judgement per line: worker, item, label (a header line of column names is "
                               "recognised and skipped; UTF-8 text)")
        separator = types.DropdownView()
        for char, name in _DELIMITERS.items():
            separator.add_choice(char, label=name)
        inputs.enum("delimiter", list(_DELIMITERS), default="\t", label="Separator", view=separator,
                    description="tab: worker<TAB>item<TAB>label; comma: a CSV file")
        inputs.enum("header", list(_HEADER), default="auto", label="Header line",
                    description="auto: a first line of column names (worker, item, label, ...) is skipped and "
                                "reported; yes: the first line is a header; no: it is a judgement")
        inputs.str("dataset_name", required=True, label="Dataset name")
        inputs.str("categories", required=False, label="Categories",
                   description="A file of one class per line, or the classes separated by commas; lowest first for "
                               "ordered classes (default: the labels found)")
        inputs.enum("repeated", list(REPEATED_POLICIES), default="mode", label="Repeated judgements",
                    description="A worker who judged an item several times: mode (their most frequent label), "
                                "last, first, or error")
        inputs.enum("unknown_labels", list(UNKNOWN_POLICIES), default="error", label="Labels not in the categories",
                    description="error: refuse the file, naming them; drop: leave those judgements out; keep: add "
                                "them as classes")
        inputs.str("field", default="judgements", label="Label field",
                   description="The Classifications field holding every worker's label")
        inputs.str("rater_attr", default="annotator", label="Rater attribute")
        inputs.str("image_dir", required=False, label="Image folder",
                   description="Where the items' files are (default: the judgement file's folder); a web address "
                               "item names the file <image_dir>/<address without http://, / as _>")
        inputs.bool("overwrite", default=False, label="Replace an existing dataset of that name")
        inputs.bool("persistent", default=True, label="Persistent dataset")
        return types.Property(inputs, view=types.View(label="Import crowd judgements"))

    def execute(self, ctx):
        """Runs the operator on ``ctx.params`` and returns its result dict (its keys: :attr:`outputs`)."""
        from agreement.fo.importers.judgements import import_judgements

        p = ctx.params
        path = require(p, "path", "the worker<TAB>item<TAB>label file")
        name = require(p, "dataset_name", "the name of the new dataset")
        kwargs = dict(categories=_categories(p.get("categories")), repeated=p.get("repeated") or "mode",
                      unknown_labels=p.get("unknown_labels") or "error", field=p.get("field") or "judgements",
                      rater_attr=p.get("rater_attr") or "annotator", overwrite=bool(p.get("overwrite", False)),
                      persistent=bool(p.get("persistent", True)), image_dir=p.get("image_dir") or None,
                      delimiter=p.get("delimiter") or "\t", header=_header(p.get("header")))

        def summarise(out) -> dict:
            dataset, record = out
            keep = ("judgements", "classes", "repeated_pairs", "repeated_judgements_set_aside", "conflicting_pairs",
                    "unknown_counts", "dropped", "header", "header_lines", "whitespace_stripped",
                    "whitespace_examples", "comments", "bom", "columns", "categories_file", "summary", "warnings")
            return _import_result(dataset, {k: record[k] for k in keep})

        return _run_import(self, ctx, lambda progress: _import(
            progress, lambda: import_judgements(path, name, **kwargs), summarise))


#: the separators a judgement file may use (the form shows their names)
_DELIMITERS = {"\t": "tab", ",": "comma", ";": "semicolon"}
#: the form's header choices: detect, the first line is a header, there is none
_HEADER = {"auto": None, "yes": True, "no": False}


def _header(value: Any) -> bool | None:
    """The form's header choice as ``read_judgements`` takes it (``None``: detect)."""
    if isinstance(value, bool) or value is None:
        return value
    if value not in _HEADER:
        raise ValueError(f"header must be one of {list(_HEADER)}, got {value!r}")
    return _HEADER[value]


def _categories(value: Any) -> Any:
    """The categories as given: a file path, or names separated by commas (the form), or a list (Python)."""
    import os

    if not value:
        return None
    if isinstance(value, str) and not os.path.isfile(value) and "," in value:
        return [c.strip() for c in value.split(",") if c.strip()]
    return value
