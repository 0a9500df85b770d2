"""Every ``python`` block of the README and the documentation pages runs as written.

One test per block (id ``page.md:line``). The blocks of one page run in order in one namespace, as a reader
runs them, from a working folder that sees the repository's files (``docs/``, ``examples/``, ...) at the
same relative paths as the repository root, so that files a snippet writes stay out of the repository.
FiftyOne is this test run's private database (``tests/conftest.py``).

A page says what a block needs in an HTML comment right before it, which the site and GitHub do not show:

* ``<!-- snippet: setup=NAME -->`` puts the names of a setup of :data:`SETUPS` into the page's namespace
  (``ds``/``dataset``, files in the working folder, ...) before the block runs; ``setup=demo`` is the state
  after ``make demo`` (built once per session, with ``--num-images 40``);
* ``<!-- snippet: skip=REASON -->`` does not run the block, for a hard external need only (a Dask
  scheduler, a Label Studio server); the reason is the skip message.

The App is the one thing no snippet gets: ``fo.launch_app`` returns a stand-in session whose ``view`` can be
set, and a plotly figure's ``show()`` only builds the figure. The outputs the pages show are not checked.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, SHARED_DATA

pytestmark = pytest.mark.fiftyone

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)")
DIRECTIVE = re.compile(r"^<!--\s*snippet:\s*(\w+)\s*=\s*(.*?)\s*-->$")
DEMO_IMAGES = 40
CROWD_SITES = 200
LVIS_IMAGES = 20


@dataclass(frozen=True)
class Block:
    """One ``python`` block of a page, with the directives of the comments right before it."""

    page: str
    line: int
    code: str
    setup: str | None = None
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def page_blocks(path: Path) -> list[Block]:
    """The ``python`` blocks of ``path`` (line = the fence's line, 1-based), refusing an unknown directive."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = str(path.relative_to(REPO))
    blocks, directives, i = [], {}, 0
    while i < len(lines):
        text = lines[i].strip()
        d = DIRECTIVE.match(text)
        fence = FENCE.match(text)
        if d:
            if d[1] not in ("setup", "skip"):
                raise ValueError(f"{name}:{i + 1}: unknown snippet directive {d[1]!r} (setup=NAME or skip=REASON)")
            directives[d[1]] = d[2]
        elif fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```")), len(lines))
            if fence[1] in ("python", "py"):
                blocks.append(Block(name, i + 1, "\n".join(lines[i + 1:end]), directives.get("setup"),
                                    directives.get("skip")))
            elif directives:
                raise ValueError(f"{name}:{i + 1}: a snippet directive before a {fence[1] or 'plain'} block")
            directives, i = {}, end
        elif text:
            directives = {}
        i += 1
    return blocks


BLOCKS = [b for page in PAGES for b in page_blocks(page)]


# ---------------------------------------------------------------------------------------------------- setups


class FakeSession:
    """What ``fo.launch_app`` returns here: the App's ``view`` can be set (and is loaded, as the App would)."""

    def __init__(self, dataset: Any = None, view: Any = None, **_: Any) -> None:
        self.dataset, self._view = dataset, view

    @property
    def view(self) -> Any:
        return self._view

    @view.setter
    def view(self, value: Any) -> None:
        len(value)  # the App would load it
        self._view = value

    def wait(self, *_: Any) -> None:
        pass


@dataclass
class Context:
    """What a setup may use: the working folder and the session's demo."""

    workdir: Path
    demo: Callable[[], Any]
    monkeypatch: pytest.MonkeyPatch


def _names(fo: Any) -> dict:
    import fiftyone.operators as foo
    from fiftyone import ViewField as F

    return {"fo": fo, "foo": foo, "F": F, "session": FakeSession()}


def _fresh(fo: Any, name: str) -> Any:
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    return fo.Dataset(name)


def _box_raters(fo: Any, ctx: Context, name: str, raters: tuple[str, ...] = ("r1", "r2", "r3"), num: int = 24) -> Any:
    """A dataset of ``num`` small blank images (in the working folder) with simulated raters' boxes (one field
    each) and ``ground_truth``."""
    from PIL import Image

    from agreement.fo.importers.build import samples_from_corpus
    from agreement.simulate.synthetic.crowd import CrowdNoise, crowd_corpus

    corpus, truth = crowd_corpus(num, len(raters), raters_per_sample=len(raters), min_objects=1, max_objects=5,
                                 num_classes=3, noise=CrowdNoise(), seed=4)
    names = dict(zip(corpus.raters, raters, strict=True))
    paths = [str(ctx.workdir / "images" / name / f"{s:03d}.jpg") for s in range(num)]
    os.makedirs(os.path.dirname(paths[0]), exist_ok=True)
    for path in paths:
        Image.new("RGB", (64, 48), (128, 128, 128)).save(path)
    samples = samples_from_corpus(corpus, paths, field_names=names, raters_field=None)
    ref = samples_from_corpus(truth, paths, field_names={truth.raters[0]: "ground_truth"}, raters_field=None)
    for sample, r in zip(samples, ref, strict=True):
        sample["ground_truth"] = r["ground_truth"]
    ds = _fresh(fo, name)
    ds.add_samples(samples, dynamic=True, progress=False)
    return ds


def setup_demo(fo: Any, ctx: Context) -> dict:
    """The demo dataset ``iaa-demo`` as ``make demo`` leaves it (see :func:`demo`)."""
    ctx.demo()
    return {}


def setup_demo_tour(fo: Any, ctx: Context) -> dict:
    """``ds``: the demo dataset after the README's tour (runs ``kalos``, ``ot``, ``cons``)."""
    import fiftyone.operators as foo

    ctx.demo()
    ds = fo.load_dataset("iaa-demo")
    raters = ds.info["iaa_demo"]["rater_fields"]
    for op, key in (("compute_kalos", "kalos"), ("compute_ot_agreement", "ot"), ("compute_consensus", "cons")):
        if key not in ds.list_runs():  # (another page's tour may have deleted it)
            foo.get_operator(f"@iaa/agreement/{op}")(ds, key=key, fields=raters)
    return {**_names(fo), "ds": ds, "dataset": ds, "raters": raters}


def setup_boxes(fo: Any, ctx: Context) -> dict:
    """``ds`` (= ``dataset``): 24 images, raters ``r1``, ``r2``, ``r3`` (a ``Detections`` field each) and
    ``ground_truth``."""
    ds = _box_raters(fo, ctx, "snippets-boxes")
    return {**_names(fo), "ds": ds, "dataset": ds}


def setup_boxes_with_runs(fo: Any, ctx: Context) -> dict:
    """:func:`setup_boxes` with the runs the method pages make: ``kalos`` and ``cons``."""
    import fiftyone.operators as foo

    names = setup_boxes(fo, ctx)
    ds, raters = names["ds"], ["r1", "r2", "r3"]
    foo.get_operator("@iaa/agreement/compute_kalos")(ds, key="kalos", fields=raters)
    foo.get_operator("@iaa/agreement/compute_consensus")(ds, key="cons", fields=raters)
    return names


def setup_disjoint_raters(fo: Any, ctx: Context) -> dict:
    """``dataset``: raters ``alice`` and ``bob`` who never share a sample (a ``Detections`` field each)."""
    ds = _box_raters(fo, ctx, "snippets-disjoint", raters=("alice", "bob"), num=8)
    half = ds.take(4, seed=1)
    half.set_field("alice", None).save()
    ds.exclude(half.values("id")).set_field("bob", None).save()
    return {**_names(fo), "ds": ds, "dataset": ds}


def setup_attribute_layout(fo: Any, ctx: Context) -> dict:
    """``ds``: one field ``ground_truth`` whose boxes carry the rater in ``annotator``, and the sample-level
    list of the raters assigned in ``assigned``."""
    from agreement.fo.importers.build import samples_from_corpus
    from agreement.simulate.synthetic.crowd import crowd_corpus

    corpus, _ = crowd_corpus(12, 6, raters_per_sample=3, min_objects=1, max_objects=4, num_classes=2, seed=5)
    ds = _fresh(fo, "snippets-attribute")
    ds.add_samples(samples_from_corpus(corpus, [f"/images/a{s:02d}.jpg" for s in range(12)], layout="attribute",
                                       field="ground_truth", raters_field="assigned"), progress=False)
    return {**_names(fo), "ds": ds, "dataset": ds}


def setup_classes(fo: Any, ctx: Context) -> dict:
    """``ds``: raters ``r1``, ``r2``, ``r3``, a ``Classification`` each from ``low``, ``mid``, ``high``."""
    import numpy as np

    rng = np.random.default_rng(2)
    levels = ["low", "mid", "high"]
    samples = []
    for s in range(30):
        truth = int(rng.integers(0, 3))
        labels = {r: levels[truth if rng.random() < 0.7 else int(rng.integers(0, 3))] for r in ("r1", "r2", "r3")}
        samples.append(fo.Sample(filepath=f"/images/c{s:02d}.jpg",
                                 **{r: fo.Classification(label=v) for r, v in labels.items()}))
    ds = _fresh(fo, "snippets-classes")
    ds.add_samples(samples, progress=False)
    return {**_names(fo), "ds": ds, "dataset": ds}


def setup_masks(fo: Any, ctx: Context) -> dict:
    """``ds`` (= ``dataset``): semantic masks (``Segmentation``) by raters ``r1``, ``r2``, ``r3``, classes
    background (0), road (1) and car (2) in ``mask_targets``."""
    import numpy as np

    rng = np.random.default_rng(1)
    samples = []
    for s in range(8):
        truth = np.zeros((40, 48), np.uint8)
        truth[5:25, 8:30] = 1
        truth[20:35, 25:45] = 2
        sample = fo.Sample(filepath=f"/images/m{s}.png")
        for r in ("r1", "r2", "r3"):
            m = np.roll(truth, tuple(rng.integers(-2, 3, 2)), axis=(0, 1)).copy()
            flip = rng.random(m.shape) < 0.03
            m[flip] = rng.integers(0, 3, int(flip.sum()))
            sample[r] = fo.Segmentation(mask=m)
        samples.append(sample)
    ds = _fresh(fo, "snippets-masks")
    ds.add_samples(samples, progress=False)
    ds.mask_targets = {r: {0: "background", 1: "road", 2: "car"} for r in ("r1", "r2", "r3")}
    ds.save()
    return {**_names(fo), "ds": ds, "dataset": ds}


def setup_masks_with_run(fo: Any, ctx: Context) -> dict:
    """:func:`setup_masks` with the mask agreement run ``masks``."""
    import fiftyone.operators as foo

    names = setup_masks(fo, ctx)
    foo.get_operator("@iaa/agreement/compute_mask_agreement")(names["ds"], key="masks", fields=["r1", "r2", "r3"])
    return names


def _videos(fo: Any, ctx: Context, name: str) -> Any:
    """Three simulated videos of 30 frames (no media files), raters ``r1``-``r3`` in both layouts: frame
    fields ``frames.r1`` ... and ``frames.labels`` (``annotator``); segments ``s1`` ... and ``actions``.
    Built once (``snippets-base-videos``), cloned as ``name``."""
    from agreement.fo.simulate.video import simulate_video_dataset

    base = "snippets-base-videos"
    if not fo.dataset_exists(base):
        kw: dict[str, Any] = {"num_videos": 3, "num_frames": 30, "num_objects": 3, "num_raters": 3, "seed": 0, "overwrite": True,
              "media": "none", "media_dir": str(ctx.workdir.parent / "videos")}
        ds, _ = simulate_video_dataset(base, **kw)
        other, _ = simulate_video_dataset(f"{base}-attr", layout="attribute", segments_field="actions", **kw)
        ds.merge_samples(other, key_field="filepath", fields=["frames.labels", "actions"])
        other.delete()
        for r in ("r1", "r2", "r3"):
            ds.rename_sample_field(f"{r}_segments", f"s{r[1]}")
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    return fo.load_dataset(base).clone(name)


def setup_videos(fo: Any, ctx: Context) -> dict:
    """``videos`` (= ``dataset``): :func:`_videos`."""
    ds = _videos(fo, ctx, "snippets-videos")
    return {**_names(fo), "videos": ds, "dataset": ds, "ds": ds}


def setup_temporal(fo: Any, ctx: Context) -> dict:
    """``dataset``: videos with segments by ``rater1``, ``rater2``, ``rater3`` (a ``TemporalDetections``
    field each) and in ``actions``, whose segments carry the rater in ``annotator``."""
    ds = _videos(fo, ctx, "snippets-temporal")
    for r in ("1", "2", "3"):
        ds.rename_sample_field(f"s{r}", f"rater{r}")
    return {**_names(fo), "dataset": ds, "ds": ds}


def setup_video_runs(fo: Any, ctx: Context) -> dict:
    """``dataset``: :func:`_videos` with KαLOS per frame as run ``k`` and OT on the frames as run ``ot``."""
    import fiftyone.operators as foo

    ds = _videos(fo, ctx, "snippets-video-runs")
    frames = ["frames.r1", "frames.r2", "frames.r3"]
    foo.get_operator("@iaa/agreement/compute_kalos")(ds, key="k", fields=frames)
    foo.get_operator("@iaa/agreement/compute_ot_agreement")(ds, key="ot", fields=frames)
    return {**_names(fo), "dataset": ds, "ds": ds}


def setup_exports(fo: Any, ctx: Context) -> dict:
    """In the working folder, the 14 images of ``tests/fixtures_imports`` in ``images/`` and their labels as
    tools export them: ``cvat/annotations.xml`` (alice), Label Studio's converter's ``ls-bob-coco/``,
    ``ls-carol-yolo/``, ``ls-dave-voc/``, its JSON export ``project-7-export.json`` (alice and bob) and the
    KαLOS COCO layout ``raters.json``."""
    pytest.importorskip("label_studio_converter", reason="label-studio-converter (requirements-test.txt)")
    from fixtures_imports import real_exports as rx

    root, data = ctx.workdir, rx.labels()
    rx.write_images(root / "images")
    rx.cvat_xml(root / "cvat" / "annotations.xml", data["alice"])
    for r, fmt in (("bob", "COCO"), ("carol", "YOLO"), ("dave", "VOC")):
        rx.convert(rx.label_studio_tasks([r], data), root / f"ls-{r}-{fmt.lower()}", fmt)
    (root / "project-7-export.json").write_text(json.dumps(rx.label_studio_tasks(["alice", "bob"], data)))
    rx.kalos_coco(root / "raters.json", data, list(rx.RATERS))
    return _names(fo)


def setup_lvis(fo: Any, ctx: Context) -> dict:
    """``lvis_doubly.json`` in the working folder: the first :data:`LVIS_IMAGES` images of the shared LVIS
    double annotations, in their KαLOS COCO layout (skips when absent)."""
    source = SHARED_DATA / "lvis_v1.0_val_doubly_annos_subset200.json"
    if not source.exists():
        pytest.skip(f"shared data not found: {source.name} is expected in ../shared/data beside the repository")
    coco = json.loads(source.read_text())
    coco["images"] = coco["images"][:LVIS_IMAGES]
    kept = {im["id"] for im in coco["images"]}
    coco["annotations"] = [a for a in coco["annotations"] if a["image_id"] in kept]
    (ctx.workdir / "lvis_doubly.json").write_text(json.dumps(coco))
    return {}


def setup_crowd(fo: Any, ctx: Context) -> dict:
    """The tutorial's crowd, cut to the judgements in its classes of its first :data:`CROWD_SITES` sites: its
    ``steps`` module's ``JUDGEMENTS`` (the shared adult-content file, skipped when absent) is that cut for the
    page (a worker whose judgements there are all dropped by ``unknown_labels="drop"`` is refused by class
    agreement: "gave no label on the samples").
    ``tests/test_tutorial.py`` runs the tutorial's steps on the whole crowd and checks the numbers it quotes."""
    import sys

    source = SHARED_DATA / "adultcontent3_hcomp2010_labels.tsv"
    if not source.exists():
        pytest.skip(f"shared data not found: {source.name} is expected in ../shared/data beside the repository")
    rows: list[str] = []
    sites: set[str] = set()
    for line in source.read_text(encoding="utf-8").splitlines():
        _, site, label = line.split("\t")
        if label.strip() in ("G", "P", "R", "X") and (site in sites or len(sites) < CROWD_SITES):
            sites.add(site)
            rows.append(line)
    cut = ctx.workdir / "crowd.tsv"
    cut.write_text("\n".join(rows) + "\n", encoding="utf-8")
    ctx.monkeypatch.syspath_prepend(str(REPO / "docs" / "tutorial"))
    ctx.monkeypatch.setattr(sys, "dont_write_bytecode", True)  # no __pycache__ in docs/ (the site would publish it)
    import steps

    ctx.monkeypatch.setattr(steps, "JUDGEMENTS", cut)
    return {}


SETUPS: dict[str, Callable[[Any, Context], dict]] = {
    "demo": setup_demo, "demo-tour": setup_demo_tour, "boxes": setup_boxes, "boxes-with-runs": setup_boxes_with_runs,
    "disjoint-raters": setup_disjoint_raters, "attribute-layout": setup_attribute_layout, "classes": setup_classes,
    "masks": setup_masks, "masks-with-run": setup_masks_with_run, "videos": setup_videos,
    "temporal": setup_temporal, "video-runs": setup_video_runs, "exports": setup_exports, "lvis": setup_lvis,
    "crowd": setup_crowd,
}


# ---------------------------------------------------------------------------------------------------- running


@dataclass
class PageRun:
    """One page's namespace and how far its blocks have run."""

    workdir: Path
    namespace: dict = field(default_factory=dict)
    done: int = 0
    failed: str | None = None


@pytest.fixture(scope="session")
def demo(fo):
    """The demo dataset ``iaa-demo`` as ``make demo DEMO_ARGS="--num-images 40"`` leaves it, with the runs of
    the demo that the pages meet (``ot``, ``kalos``, with the demo's parameters), built once when a page needs
    it. (The demo's other datasets and runs, which no snippet reads, would take three times as long.)"""
    import fiftyone.operators as foo

    from agreement.fo.demo import DATASET_NAME, build_demo_dataset

    built: list = []

    def _build() -> Any:
        if not built:
            ds = build_demo_dataset(DATASET_NAME, num_images=DEMO_IMAGES)
            fields = ds.info["iaa_demo"]["rater_fields"]
            for op, params in (("compute_ot_agreement", {"key": "ot", "lam": 0.5, "beta": 0.5}),
                               ("compute_kalos", {"key": "kalos", "similarity": "iou", "tau": 0.5})):
                foo.execute_operator(f"@iaa/agreement/{op}", ctx={"view": ds.view(),
                                                                 "params": {"fields": fields, **params}})
            built.append(ds)
        return built[0]

    return _build


@pytest.fixture(scope="module")
def runner(fo, demo, tmp_path_factory):
    """Runs blocks page by page from a working folder that links the repository's top-level entries."""
    import plotly.basedatatypes

    root = tmp_path_factory.mktemp("snippets")
    runs: dict[str, PageRun] = {}
    kept = set(fo.list_datasets())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fo, "launch_app", FakeSession)
        mp.setattr(plotly.basedatatypes.BaseFigure, "show", lambda self, *a, **k: self.to_dict())
        mp.setattr(tempfile, "tempdir", str(root / "tmp"))
        (root / "tmp").mkdir()
        mp.syspath_prepend(str(REPO / "tests"))

        def run(block: Block) -> None:
            blocks = [b for b in BLOCKS if b.page == block.page]
            state = runs.get(block.page)
            if state is None:
                for name in set(fo.list_datasets()) - kept:
                    if not name.startswith(("iaa-demo", "snippets-base-")):
                        fo.delete_dataset(name)
                workdir = root / re.sub(r"\W", "_", block.page)
                workdir.mkdir()
                for entry in REPO.iterdir():
                    if entry.name not in (".git", ".venv", "site"):
                        (workdir / entry.name).symlink_to(entry)
                state = runs[block.page] = PageRun(workdir)
            index = blocks.index(block)
            for k in range(state.done, index + 1):
                if state.failed:
                    pytest.skip(f"an earlier block of the page did not run: {state.failed}")
                state.done = k + 1
                if blocks[k].skip and k < index:
                    continue
                _execute(fo, blocks[k], state, demo, mp)

        mp.chdir(root)
        yield run


def _execute(fo: Any, block: Block, state: PageRun, demo: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs ``block`` in ``state``'s namespace (its setup first), recording a failure."""
    os.chdir(state.workdir)
    if block.skip:
        pytest.skip(f"{block.id}: not run: {block.skip}")
    try:
        if block.setup:
            if block.setup not in SETUPS:
                raise KeyError(f"{block.id}: unknown snippet setup {block.setup!r}; known: {sorted(SETUPS)}")
            state.namespace.update(SETUPS[block.setup](fo, Context(state.workdir, demo, monkeypatch)))
        code = compile("\n" * block.line + block.code, str(REPO / block.page), "exec")
        exec(code, state.namespace)  # noqa: S102 - the documentation's own code, as a reader runs it
    except pytest.skip.Exception as skipped:  # (its setup's data is absent): the page's later blocks skip too
        state.failed = f"{block.id} (skipped: {skipped.msg})"
        raise
    except BaseException:
        state.failed = block.id
        raise


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_snippet_runs(runner, block):
    runner(block)


def test_every_page_with_python_blocks_is_found():
    pages = {b.page for b in BLOCKS}
    assert "README.md" in pages and "docs/operators.md" in pages and len(BLOCKS) >= 40
