"""The demo: a generated multi-rater dataset on the embedded MongoDB, and every
agreement computation the plugin has, run through ``execute_operator``.

Run it with ``make demo`` (or ``python -m agreement.fo.demo``). It

1. renders a few hundred images of shapes on textured backgrounds
   (:mod:`agreement.simulate.synthetic.scenes`) under FiftyOne's dataset directory;
2. simulates five raters with documented profiles
   (:mod:`agreement.simulate.synthetic.demo_raters`: careful, sloppy, misses_small,
   confuses_classes, part_time);
3. loads them into the persistent dataset ``iaa-demo``, in both layouts: one
   ``Detections`` field per rater, and one field ``annotations`` whose labels
   carry the rater in ``annotator`` with the assigned raters in ``raters``; the
   true objects are in ``truth``;
4. runs the plugin's operators headless and prints a report;
5. says how to open the App on the dataset (``make app``).

Beside it: ``iaa-demo-3d`` (street scenes with cuboids) and ``iaa-demo-video``,
six simulated videos of 120 frames with three raters whose tracks drift,
switch identity and miss stretches, rendered as small playable videos (the
reference's boxes drawn frame by frame) under FiftyOne's dataset directory,
with KaLOS computed per frame.

Re-running replaces the demo dataset (and only it); images already rendered
are reused.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

import fiftyone as fo
import fiftyone.operators as foo

from agreement.core.rater_pairs import records_to_matrix
from agreement.fo.importers.build import add_corpus_fields, samples_from_corpus
from agreement.fo.storage.assignment import declare_raters_field
from agreement.simulate.synthetic import (
    DEMO_PROFILES,
    generate_scenes,
    ground_truth,
    simulate_demo_raters,
    write_scenes,
)
from agreement.simulate.synthetic.demo_extras import (
    CUBOID_PROFILES,
    MASK_PROFILES,
    generate_cuboid_scenes,
    simulate_cuboid_raters,
    simulate_mask_raters,
)

MASK_IMAGES = 40

DATASET_NAME = "iaa-demo"
VIDEO_DEMO: dict[str, Any] = {"num_videos": 6, "num_frames": 120, "num_objects": 4, "num_raters": 3, "magnitude": 1.5}
OPERATOR = "@iaa/agreement/{}"


def _say(msg: str) -> None:
    print(msg, flush=True)


def build_demo_dataset(name: str = DATASET_NAME, num_images: int = 300, seed: int = 0) -> fo.Dataset:
    """Generates (or reuses) the images and builds the demo dataset from scratch."""
    t = time.time()
    scenes = generate_scenes(num_images=num_images, seed=seed)
    image_dir = os.path.join(fo.config.default_dataset_dir, name, "images")
    paths = write_scenes(scenes, image_dir, seed=seed)
    _say(f"  {len(paths)} images in {image_dir} ({time.time() - t:.1f} s)")
    raters = simulate_demo_raters(scenes, seed=seed)
    truth = ground_truth(scenes)
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    dataset = fo.Dataset(name, persistent=True)
    add_corpus_fields(dataset, list(raters.raters) + ["truth", "annotations"])
    samples = samples_from_corpus(raters, paths, layout="fields", raters_field="raters")
    attr = samples_from_corpus(raters, paths, layout="attribute", field="annotations", raters_field=None)
    ref = samples_from_corpus(truth, paths, layout="fields", field_names={"truth": "truth"}, raters_field=None)
    for sample, a, r in zip(samples, attr, ref, strict=True):
        sample["annotations"] = a["annotations"]
        sample["truth"] = r["truth"]
    mask_raters = simulate_mask_raters(scenes[:MASK_IMAGES], seed=seed)
    for p, per_scene in mask_raters.items():
        dataset.add_sample_field(f"mask_{p}", fo.EmbeddedDocumentField, embedded_doc_type=fo.Detections)
        for sample, objs in zip(samples[:MASK_IMAGES], per_scene, strict=False):
            sample[f"mask_{p}"] = fo.Detections(detections=[
                fo.Detection(label=label, bounding_box=box.tolist(), mask=mask) for label, box, mask in objs
            ])
    dataset.add_samples(samples, dynamic=True, validate=False, progress=False)
    dataset.info["iaa_demo"] = {
        "seed": seed,
        "raters": {p.name: p.description for p in DEMO_PROFILES},
        "rater_fields": list(raters.raters),
        "reference_field": "truth",
        "attribute_layout": {"field": "annotations", "rater_attr": "annotator", "raters_field": "raters"},
        "mask_fields": [f"mask_{p}" for p in MASK_PROFILES],
        "mask_images": MASK_IMAGES,
    }
    dataset.save()
    declare_raters_field(dataset, "annotations", "raters", raters=raters.raters)
    _say(f"  dataset {name!r}: {len(dataset)} samples ({time.time() - t:.1f} s)")
    return dataset


def build_3d_dataset(name: str, num_scenes: int = 30, seed: int = 0) -> fo.Dataset:
    """A 3D dataset: empty ``.fo3d`` street scenes with three raters' car cuboids."""
    scenes = generate_cuboid_scenes(num_scenes=num_scenes, seed=seed)
    raters = simulate_cuboid_raters(scenes, seed=seed)
    scene_dir = os.path.join(fo.config.default_dataset_dir, name, "scenes")
    os.makedirs(scene_dir, exist_ok=True)
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    dataset = fo.Dataset(name, persistent=True)
    samples = []
    for k, scene in enumerate(scenes):
        path = os.path.join(scene_dir, scene.name)
        if not os.path.exists(path):
            fo.Scene().write(path)
        kw = {}
        for rater, per_scene in raters.items():
            kw[rater] = fo.Detections(detections=[
                fo.Detection(label="car", location=c[:3].tolist(), dimensions=c[3:6].tolist(), rotation=c[6:].tolist())
                for c in per_scene[k]
            ])
        samples.append(fo.Sample(filepath=path, **kw))
    dataset.add_samples(samples, dynamic=True, progress=False)
    return dataset


def build_video_demo(name: str, seed: int = 0) -> fo.Dataset:
    """The video dataset (:data:`VIDEO_DEMO`): simulated raters on frames and segments, the reference in
    ``frames.reference``, each video rendered (320 x 240, the reference's boxes drawn) into
    ``<fo.config.default_dataset_dir>/<name>`` so that the App plays it."""
    from agreement.fo.simulate.video import simulate_video_dataset

    t = time.time()
    dataset, _ = simulate_video_dataset(name, seed=seed, overwrite=True, persistent=True, **VIDEO_DEMO)
    _say(f"  video dataset {name!r}: {len(dataset)} videos of {VIDEO_DEMO['num_frames']} frames rendered in "
         f"{os.path.dirname(dataset.first().filepath)} ({time.time() - t:.1f} s)")
    return dataset


def _video_report(dataset, k: dict) -> str:
    worst = dataset.exists("kalos_frames_mean").sort_by("kalos_frames_mean").first()
    raters = dataset.info["iaa_video_simulation"]["raters"]
    return (
        f"\n  Video (dataset '{dataset.name}': {len(dataset)} rendered videos of {VIDEO_DEMO['num_frames']} "
        f"frames, raters {', '.join(raters)} at noise magnitude {VIDEO_DEMO['magnitude']:g}; run 'kalos' per frame):"
        f"\n    KaLOS global alpha {_fmt(k.get('global_alpha'))}, mean alpha {_fmt(k.get('mean_alpha'))}; worst "
        f"video {os.path.basename(worst.filepath)} (mean alpha over its frames {_fmt(worst['kalos_frames_mean'])})"
    )


def _run(name: str, dataset, **params) -> dict:
    t = time.time()
    result = foo.execute_operator(OPERATOR.format(name), ctx={"view": dataset.view(), "params": params}).result
    _say(f"  ran {name} ({time.time() - t:.1f} s)")
    return result or {}


def _rater_table(dataset) -> str:
    rows = ["  rater             assigned  explicit-absence  boxes  boxes/image", "  " + "-" * 64]
    for rater in dataset.info["iaa_demo"]["rater_fields"]:
        counts = dataset.values(f"{rater}.detections", missing_value=None)
        assigned = [c for c in counts if c is not None]
        n = sum(len(c) for c in assigned)
        empty = sum(1 for c in assigned if len(c) == 0)
        rows.append(f"  {rater:<17} {len(assigned):>8}  {empty:>16}  {n:>5}  {n / max(1, len(assigned)):>11.2f}")
    return "\n".join(rows)


def _fmt(x, digits: int = 3) -> str:
    return "undefined" if x is None else f"{x:.{digits}f}"


def _ot_report(dataset, ot: dict) -> str:
    from agreement.fo.runs.store import load_agreement_results

    detail = load_agreement_results(dataset, "ot")["detail"]
    raters = detail["raters"]
    lines = [
        "\n  OT agreement (run 'ot', lam=0.5, beta=0.5; score in [0.5, 1]):",
        f"    alpha-OT {_fmt(ot['alpha_ot'])} (1 perfect, 0 chance; D_o {_fmt(ot['observed_cost'])}, "
        f"D_e {_fmt(ot['expected_cost'])}, {'exact' if ot['alpha_ot_exact'] else 'estimated'} over "
        f"{ot['n_cross_pairs_evaluated']} cross-sample pairs"
        + ("" if ot["alpha_ot_exact"] else f", se {_fmt(ot['alpha_ot_se'], 4)}") + ")",
        (f"    mean OT score {_fmt(ot['mean_ot'])} over {ot['n_scored']} samples; baselines: F1@0.5 "
         f"{_fmt(ot['f1'])}, mean IoU {_fmt(ot['mean_iou'])}, threshold alpha {_fmt(ot['threshold_alpha'])}"),
        "    alpha-OT per rater pair (who agrees with whom):",
    ]
    width = max(len(r) for r in raters)
    lines.append("      " + " " * width + "  " + "  ".join(f"{r[:8]:>8}" for r in raters))
    _, matrix, _ = records_to_matrix(detail["rater_pairs"], "alpha_ot", raters=raters)
    for i, r in enumerate(raters):
        cells = ["       -" if i == j else f"{_fmt(None if np.isnan(matrix[i][j]) else matrix[i][j]):>8}" for j in range(len(raters))]
        lines.append(f"      {r:<{width}}  " + "  ".join(cells))
    worst = dataset.exists("ot_ot").sort_by("ot_ot").limit(3)
    lines.append("    lowest-scoring samples: " + ", ".join(
        f"{os.path.basename(p)} ({v:.3f})" for p, v in zip(*worst.values(["filepath", "ot_ot"]), strict=True)
    ))
    return "\n".join(lines)


def _interval(g: dict, name: str) -> str:
    v = g.get(name)
    if v is None:
        return f"undefined ({g.get(name + '_reason') or 'no data'})"
    lo, hi = g.get(name + "_ci_low"), g.get(name + "_ci_high")
    return f"{v:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "")


def _geometry_report(title: str, g: dict, indent: str = "  ") -> str:
    return (
        f"\n{indent}{title}:\n{indent}  sigma {_interval(g, 'sigma')}, distance alpha {_interval(g, 'distance_alpha')}, "
        f"KS {_interval(g, 'ks')}\n{indent}  detection agreement {_interval(g, 'detection_alpha')}, "
        f"classification alpha {_interval(g, 'classification_alpha')}"
        + (f"\n{indent}  ({g['n_samples_skipped']} sample(s) alone over the pair budget skipped, "
           f"{g['n_samples_measured']} measured; see the run's skipped_samples)" if g.get("truncated") else "")
    )


def _kalos_report(dataset, k: dict) -> str:
    from agreement.fo.runs.store import load_agreement_results

    d = load_agreement_results(dataset, "kalos")["detail"]
    vit = d["rater_vitality"]
    cd = d["class_difficulty"]
    curve = d["sensitivity_curve"]
    hardest = [i for i in cd["hardest_first"] if cd["alpha"][i] is not None][:3]
    lines = [
        "\n  KaLOS (run 'kalos', box IoU, tau = 0.5, greedy, soft cost):",
        (f"    global alpha {_fmt(k['global_alpha'])}, mean alpha {_fmt(k['mean_alpha'])} over {k['n_defined']} "
         f"samples ({k['n_undefined']} undefined, e.g. nobody drew anything; the reference tool would count those "
         "as 1.0)"),
        "    rater vitality (alpha - alpha without the rater): "
        + ", ".join(f"{r} {_fmt(v, 3)}" for r, v in zip(vit["raters"], vit["vitality"], strict=False)),
        "    hardest classes: " + ", ".join(f"{cd['classes'][i]} ({_fmt(cd['alpha'][i])})" for i in hardest),
        "    alpha vs tau: " + ", ".join(f"{t:g}: {_fmt(a)}" for t, a in zip(curve["taus"], curve["global_alpha"], strict=False)),
    ]
    return "\n".join(lines)


def run_demo(name: str = DATASET_NAME, num_images: int = 300, seed: int = 0) -> dict:
    """Builds the dataset, runs every computation through the operators, prints a report."""
    _say(f"[1/3] building the demo dataset {name!r}")
    dataset = build_demo_dataset(name, num_images, seed)
    _say("[2/3] running the plugin's operators headless (execute_operator)")
    report: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        coco_path = os.path.join(tmp, "demo_multi_rater.json")
        fields = dataset.info["iaa_demo"]["rater_fields"]
        report["export"] = _run("export_multi_rater_coco", dataset, coco_path=coco_path, fields=fields)
        report["import"] = _run(
            "import_multi_rater_coco", dataset, coco_path=coco_path, dataset_name=f"{name}-coco",
            layout="attribute", polygons="none", image_dir=os.path.dirname(dataset.first().filepath),
            overwrite=True, persistent=True,
        )
    fields = dataset.info["iaa_demo"]["rater_fields"]
    report["ot"] = _run("compute_ot_agreement", dataset, fields=fields, key="ot", lam=0.5, beta=0.5, overwrite=True)
    report["kalos"] = _run("compute_kalos", dataset, fields=fields, key="kalos", similarity="iou", tau=0.5,
                           overwrite=True)
    report["geometry"] = _run("compute_geometry_agreement", dataset, fields=fields, key="geometry", distance="giou",
                              threshold=0.5, bootstrap=200, overwrite=True)
    mask_view = dataset.limit(dataset.info["iaa_demo"]["mask_images"])
    report["staple"] = foo.execute_operator(OPERATOR.format("compute_mask_consensus"), ctx={
        "view": mask_view, "params": {"fields": dataset.info["iaa_demo"]["mask_fields"], "key": "staple",
                                      "overwrite": True}}).result
    _say("  ran compute_mask_consensus (on the first images, which carry instance masks)")
    ds3 = build_3d_dataset(f"{name}-3d", seed=seed)
    cuboid_raters = list(CUBOID_PROFILES)
    report["kalos_3d"] = _run("compute_kalos", ds3, fields=cuboid_raters, key="kalos", similarity="cuboid_iou",
                              tau=0.25, overwrite=True)
    report["geometry_3d"] = _run("compute_geometry_agreement", ds3, fields=cuboid_raters, key="geometry",
                                 distance="cuboid_iou", threshold=0.1, bootstrap=200, overwrite=True)
    videos = build_video_demo(f"{name}-video", seed=seed)
    report["kalos_video"] = _run("compute_kalos", videos, key="kalos", overwrite=True,
                                 fields=[f"frames.{r}" for r in videos.info["iaa_video_simulation"]["raters"]])
    out_dir = os.path.join(fo.config.default_dataset_dir, name)
    report["calibration"] = _run(
        "calibrate_agreement", dataset, fields=fields, key="calibration", distances=["iou", "giou", "centroid"],
        plot_path=os.path.join(out_dir, "calibration.png"), overwrite=True,
    )
    report["simulation"] = _run(
        "simulate_raters", dataset, field="truth", key="sim", num_raters=4, noise="empirical", magnitude=2.0,
        school_size=2, seed=seed, overwrite=True,
    )
    report["ot_sim"] = _run("compute_ot_agreement", dataset, fields=report["simulation"]["fields"], key="ot_sim",
                            overwrite=True)
    report["runs"] = _run("list_agreement_runs", dataset)
    _say("[3/3] report")
    _say(f"\nDataset {name!r}: {len(dataset)} images, raters {', '.join(dataset.info['iaa_demo']['rater_fields'])}")
    _say(_rater_table(dataset))
    _say("\n  rater profiles:")
    for rater, description in dataset.info["iaa_demo"]["raters"].items():
        _say(f"    {rater:<17} {description}")
    imp = report["import"]
    _say(
        f"\n  COCO round trip: exported {report['export']['annotations']} boxes of {report['export']['images']} images, "
        f"re-imported as {imp['dataset_name']!r} (attribute layout): {imp['num_labels']} labels"
    )
    _say(_ot_report(dataset, report["ot"]))
    _say(_kalos_report(dataset, report["kalos"]))
    _say(_geometry_report("Geometry agreement (run 'geometry', GIoU, matching at 0.5, 200 bootstrap resamples)",
                          report["geometry"]))
    st = report["staple"]
    _say(
        f"\n  STAPLE mask consensus (run 'staple', {st['n_consensus']} images with instance masks by "
        f"{', '.join(MASK_PROFILES)}; {st['n_skipped']} skipped):\n    sensitivity "
        + ", ".join(f"{p} {_fmt(st.get('sensitivity_mask_' + p))}" for p in MASK_PROFILES)
        + f"\n    mean specificity {_fmt(st['mean_specificity'], 4)}; Dice of the STAPLE consensus vs the majority "
        f"vote {_fmt(st['staple_vs_majority_dice'])}; consensus masks in field 'staple_consensus'"
    )
    k3 = report["kalos_3d"]
    _say(
        f"\n  3D (dataset '{name}-3d': 30 street scenes, raters {', '.join(CUBOID_PROFILES)}; exact cuboid IoU):"
        f"\n    KaLOS (cuboid IoU, tau = 0.25): global alpha {_fmt(k3['global_alpha'])}, mean alpha "
        f"{_fmt(k3['mean_alpha'])}\n    (one class only: KaLOS alpha then measures nothing but found/missed, and a unit can never "
        f"hold two no_object values, so alpha cannot be positive; the detection agreement below is the number to read)"
    )
    _say(_geometry_report("Geometry agreement (cuboid IoU, matching at 0.1)", report["geometry_3d"], indent="    "))
    _say(_video_report(videos, report["kalos_video"]))
    cal = report["calibration"]
    _say(
        "\n  Calibration (run 'calibration'): KS one-sided "
        + ", ".join(f"{d} {_fmt(cal.get('ks_' + d))}" for d in ("iou", "giou", "centroid"))
        + f"; best distance {cal['best_distance']}, tau* {_fmt(cal['tau_star'])} "
        f"(KaLOS tau = similarity {_fmt(cal['similarity_threshold'])}), OT beta* {_fmt(cal['beta_star'])}"
        f"\n    densities plotted to {cal.get('plot_path')}"
    )
    sim = report["simulation"]
    _say(
        f"\n  Simulated raters (run 'sim', KaLOS empirical noise fitted on LVIS, magnitude 2, from 'truth'): "
        f"{', '.join(sim['fields'])}; school sharing a box offset: {', '.join(sim['school']) or 'none'}"
        f"\n    their alpha-OT: {_fmt(report['ot_sim']['alpha_ot'])}, mean OT score {_fmt(report['ot_sim']['mean_ot'])}"
    )
    _say(f"\n  agreement runs on {name!r}: {report['runs']['keys'] or 'none yet'}")
    _say(
        "\nOpen the App on the demo dataset with:\n"
        "    make app\n"
        f"(or: FIFTYONE_PLUGINS_DIR=$PWD .venv/bin/python -c \"import fiftyone as fo; "
        f"fo.launch_app(fo.load_dataset('{name}')).wait()\")"
        f"\nand pick '{name}-video' (or '{name}-3d') in the App's dataset menu for the videos (or the 3D scenes)."
    )
    return report


def main(argv: list[str] | None = None) -> int:
    """The ``make demo`` command line (``python -m agreement.fo.demo --help`` lists its options).

    Args:
        argv: The command-line arguments (``None``: ``sys.argv[1:]``).

    Returns:
        The process's exit status (0: done).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default=DATASET_NAME)
    parser.add_argument("--num-images", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--app", action="store_true", help="open the App on the demo dataset (building it if missing)")
    parser.add_argument("--port", type=int, default=5151)
    args = parser.parse_args(argv)
    if args.app:
        if not fo.dataset_exists(args.name):
            run_demo(args.name, args.num_images, args.seed)
        session = fo.launch_app(fo.load_dataset(args.name), port=args.port, auto=False)
        _say(f"App at {session.url} (Ctrl-C to stop)")
        session.wait(-1)
        return 0
    run_demo(args.name, args.num_images, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
