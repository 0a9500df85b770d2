"""Generator of real-tool exports of the same 14 images, for tests/test_import_real_exports.py.

What writes what:

* **Label Studio JSON export** (its published "JSON" export format: tasks with
  ``id``, ``data.image`` = ``/data/upload/<project>/<upload id>-<file name>``,
  ``annotations`` with ``id``, ``completed_by`` (a user id, or a user object
  ``{"id", "email", ...}``), ``updated_by``, ``result`` regions with
  ``original_width``/``original_height`` and percent coordinates), written
  here in that layout (the JSON export is Label Studio's server's own; no
  library writes it offline). One annotation has no ``completed_by``, only
  ``updated_by``.
* **Label Studio converter outputs** (COCO, YOLO, VOC), written by Label
  Studio's own converter, the ``label-studio-converter`` package
  (``label_studio_converter.Converter``), from that JSON export filtered to
  one annotator, as Label Studio exports a project filtered by annotator.
  ``label-studio-sdk`` (whose ``converter`` is the same code) pins an older
  NumPy than the plugin's, so the standalone converter is used.
* **CVAT for images 1.1 XML** (CVAT 2.x "CVAT for images 1.1" export:
  ``<annotations><version>1.1</version><meta><job>..<labels>..``, one
  ``<image id name width height>`` per frame with ``<box label xtl ytl xbr
  ybr ...>``), written here following CVAT's published format: ``cvat-sdk``
  cannot write an export offline and ``datumaro`` (which writes it) would
  replace the environment's pandas and Pillow.
* **KαLOS multi-rater COCO** (the layout of
  ``../shared/data/lvis_v1.0_val_doubly_annos_subset200.json``: images with
  ``rater_list``, annotations with ``rater_id``): the same labels.

Boxes are on whole pixels chosen so that every tool's arithmetic gives the
same pixels back: Label Studio stores ``px / W * 100`` and its converter
computes ``pct / 100 * W`` (truncated to an integer for VOC), so only pixel
values that survive that round trip exactly are used.
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

CLASSES = ("cat", "dog", "person")
RATERS = {"alice": 11, "bob": 12, "carol": 13, "dave": 14}  # rater -> Label Studio user id
N_IMAGES = 14
PROJECT = 7
LABEL_CONFIG = ('<View><Image name="image" value="$image"/><RectangleLabels name="label" toName="image">'
                + "".join(f'<Label value="{c}"/>' for c in CLASSES) + "</RectangleLabels></View>")


def image_names() -> list[str]:
    """The images' own names (as CVAT and the user's disk have them)."""
    return [f"pexels-photo-{1000 + 37 * i}.jpg" for i in range(N_IMAGES)]


def sizes() -> list[tuple[int, int]]:
    return [(640, 480) if i % 3 else (480, 640) for i in range(N_IMAGES)]


def upload_ids(seed: int = 5) -> list[str]:
    rng = np.random.default_rng(seed)
    return [f"{int(v):08x}" for v in rng.integers(0, 2 ** 32, N_IMAGES)]


def write_images(folder: Path) -> Path:
    """The 14 images (PIL, small noise patterns), under their own names."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, (w, h) in zip(image_names(), sizes()):
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(folder / name)
    return folder


def _exact(v: int, n: int) -> bool:
    """``v`` pixels of ``n`` survive Label Studio's percent and its converter's way back, to the bit."""
    back = (v / n * 100) / 100 * n
    return back == v


def _snap(v: float, n: int) -> int:
    v = int(np.clip(round(v), 0, n))
    for d in range(n):
        for c in (v - d, v + d):
            if 0 <= c <= n and _exact(c, n):
                return c
    raise AssertionError(n)


def labels(seed: int = 1) -> dict[str, list[list[tuple[str, tuple[int, int, int, int]]]]]:
    """``{rater: per image [(class, (x, y, w, h) pixels)]}``: noisy copies of hidden objects; some images
    empty for some raters (explicit absence), some relabelled or missed objects."""
    rng = np.random.default_rng(seed)
    out = {r: [] for r in RATERS}
    for (W, H) in sizes():
        k = int(rng.integers(0, 5))
        truth = [(CLASSES[int(rng.integers(0, 3))], rng.uniform([0, 0, 30, 30], [W - 120, H - 120, 110, 110]))
                 for _ in range(k)]
        for r in RATERS:
            boxes = []
            for cls, (x, y, w, h) in truth:
                if rng.random() < 0.12:
                    continue  # missed
                if rng.random() < 0.1:
                    cls = CLASSES[int(rng.integers(0, 3))]
                j = rng.normal(0, 3, 4)
                x0, y0 = _snap(x + j[0], W), _snap(y + j[1], H)
                x1, y1 = _snap(x + w + j[2], W), _snap(y + h + j[3], H)
                if x1 - x0 >= 2 and y1 - y0 >= 2 and _exact(x1 - x0, W) and _exact(y1 - y0, H):
                    boxes.append((cls, (x0, y0, x1 - x0, y1 - y0)))
            out[r].append(boxes)
    return out


def _region(rid: str, cls: str, box, W: int, H: int) -> dict:
    x, y, w, h = box
    return {"id": rid, "type": "rectanglelabels", "from_name": "label", "to_name": "image", "origin": "manual",
            "original_width": W, "original_height": H, "image_rotation": 0,
            "value": {"x": x / W * 100, "y": y / H * 100, "width": w / W * 100, "height": h / H * 100,
                      "rotation": 0, "rectanglelabels": [cls]}}


def label_studio_tasks(raters: list[str], data: dict, updated_by_only: tuple[str, int] | None = None) -> list[dict]:
    """Label Studio's JSON export of the 14 tasks, one annotation per rater in ``raters``. The first rater's
    ``completed_by`` is a user object, the others' a user id; ``updated_by_only`` = (rater, image) has only
    ``updated_by``."""
    tasks, ann_id = [], 100
    for i, (name, uid, (W, H)) in enumerate(zip(image_names(), upload_ids(), sizes())):
        anns = []
        for j, r in enumerate(raters):
            ann_id += 1
            user = RATERS[r]
            who = {"id": user, "first_name": r.title(), "last_name": "", "email": f"{r}@example.org"} if j == 0 else user
            result = [_region(f"{r[:2]}{i}_{k}", c, b, W, H) for k, (c, b) in enumerate(data[r][i])]
            ann = {"id": ann_id, "completed_by": who, "result": result, "was_cancelled": False, "ground_truth": False,
                   "created_at": "2024-05-01T10:00:00.000000Z", "updated_at": "2024-05-01T10:05:00.000000Z",
                   "lead_time": 12.5, "prediction": {}, "result_count": len(result), "task": 500 + i,
                   "project": PROJECT, "updated_by": user, "parent_prediction": None, "parent_annotation": None,
                   "last_created_by": None, "import_id": None, "draft_created_at": None}
            if updated_by_only == (r, i):
                del ann["completed_by"]
            anns.append(ann)
        tasks.append({"id": 500 + i, "annotations": anns, "drafts": [], "predictions": [],
                      "data": {"image": f"/data/upload/{PROJECT}/{uid}-{name}"}, "meta": {},
                      "created_at": "2024-05-01T09:00:00.000000Z", "updated_at": "2024-05-01T10:05:00.000000Z",
                      "inner_id": i + 1, "total_annotations": len(anns), "cancelled_annotations": 0,
                      "total_predictions": 0, "comment_count": 0, "unresolved_comment_count": 0,
                      "last_comment_updated_at": None, "project": PROJECT, "updated_by": RATERS[raters[0]],
                      "comment_authors": []})
    return tasks


def label_studio_user(rater: str) -> str:
    """How :func:`agreement.io.labelstudio.parse_label_studio` names a rater of :func:`label_studio_tasks`."""
    return str(RATERS[rater])


def convert(tasks: list[dict], out: Path, fmt: str, upload_dir: Path | None = None) -> Path:
    """Label Studio's converter output ``fmt`` ("COCO", "YOLO", "VOC") of ``tasks``. With ``upload_dir``
    (Label Studio's upload folder: ``<project>/<upload id>-<name>``) it copies the images, as a download does."""
    from label_studio_converter import Converter

    out.mkdir(parents=True, exist_ok=True)
    src = out.parent / f"{out.name}-export.json"
    src.write_text(json.dumps(tasks))
    upload = upload_dir or (out.parent / "no-upload")
    upload.mkdir(exist_ok=True)
    conv = Converter(LABEL_CONFIG, project_dir=None, upload_dir=str(upload), download_resources=upload_dir is not None)
    conv.convert(str(src), str(out), fmt, is_dir=False)
    return out


def label_studio_upload(images: Path, folder: Path) -> Path:
    """Label Studio's upload folder: each image under ``<project>/<upload id>-<name>``."""
    import shutil

    (folder / str(PROJECT)).mkdir(parents=True, exist_ok=True)
    for name, uid in zip(image_names(), upload_ids()):
        shutil.copy(images / name, folder / str(PROJECT) / f"{uid}-{name}")
    return folder


def cvat_xml(path: Path, boxes: list, names: list[str] | None = None) -> Path:
    """A CVAT for images 1.1 XML export (CVAT 2.x job export) of ``boxes`` (per image [(class, xywh px)])."""
    names = names or image_names()
    labels = "".join(f"<label><name>{c}</name><color>#33ddff</color><type>rectangle</type><attributes></attributes>"
                     "</label>" for c in CLASSES)
    lines = ['<?xml version="1.0" encoding="utf-8"?>', "<annotations>", "  <version>1.1</version>",
             f"  <meta><job><id>3</id><size>{N_IMAGES}</size><mode>annotation</mode><overlap>0</overlap>"
             "<bugtracker></bugtracker><created>2024-05-01 09:00:00.000000+00:00</created>"
             "<updated>2024-05-01 10:00:00.000000+00:00</updated><subset>default</subset>"
             f"<start_frame>0</start_frame><stop_frame>{N_IMAGES - 1}</stop_frame><frame_filter></frame_filter>"
             f"<segments><segment><id>3</id><start>0</start><stop>{N_IMAGES - 1}</stop><url></url></segment></segments>"
             f"<owner><username>alice</username><email>alice@example.org</email></owner><assignee></assignee>"
             f"<labels>{labels}</labels></job><dumped>2024-05-01 10:10:00.000000+00:00</dumped></meta>"]
    for i, (name, (W, H), per) in enumerate(zip(names, sizes(), boxes)):
        lines.append(f'  <image id="{i}" name={quoteattr(name)} width="{W}" height="{H}">')
        for cls, (x, y, w, h) in per:
            lines.append(f'    <box label={quoteattr(cls)} source="manual" occluded="0" xtl="{x:.2f}" ytl="{y:.2f}" '
                         f'xbr="{x + w:.2f}" ybr="{y + h:.2f}" z_order="0">\n    </box>')
        lines.append("  </image>")
    lines.append("</annotations>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def kalos_coco(path: Path, data: dict, raters: list[str]) -> Path:
    """The same labels in the KαLOS multi-rater COCO layout (``rater_list``, ``rater_id``)."""
    images, anns = [], []
    for i, (name, (W, H)) in enumerate(zip(image_names(), sizes())):
        images.append({"id": i + 1, "file_name": name, "width": W, "height": H, "rater_list": list(raters)})
        for r in raters:
            for cls, (x, y, w, h) in data[r][i]:
                anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": CLASSES.index(cls) + 1,
                             "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0, "rater_id": r})
    path.write_text(json.dumps({"images": images, "annotations": anns, "info": {},
                                "categories": [{"id": k + 1, "name": c} for k, c in enumerate(CLASSES)]}))
    return path


def name_map_csv(path: Path, pairs: dict[str, str]) -> Path:
    """A two-column CSV name map (export name, image name) with its header."""
    path.write_text("export_name,image_name\n" + "".join(f"{k},{v}\n" for k, v in pairs.items()))
    return path


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "json", "os", "np", "Path",
                                                                     "quoteattr")]
