"""The demo: a generated multi-rater dataset on the embedded MongoDB, and every
agreement computation the plugin has, run through ``execute_operator``.

Run it with ``make demo`` (or ``python -m agreement.fo.demo``). It

1. renders a few hundred images of shapes on textured backgrounds
   (:mod:`agreement.synthetic.scenes`) under FiftyOne's dataset directory;
2. simulates five raters with documented profiles
   (:mod:`agreement.synthetic.demo_raters`: careful, sloppy, misses_small,
   confuses_classes, part_time);
3. loads them into the persistent dataset ``iaa-demo``, in both layouts: one
   ``Detections`` field per rater, and one field ``annotations`` whose labels
   carry the rater in ``annotator`` with the assigned raters in ``raters``; the
   true objects are in ``truth``;
4. runs the plugin's operators headless and prints a report;
5. says how to open the App on the dataset (``make app``).

Re-running replaces the demo dataset (and only it); images already rendered
are reused.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import fiftyone as fo
import fiftyone.operators as foo

from agreement.fo.build import add_corpus_fields, samples_from_corpus
from agreement.synthetic import DEMO_PROFILES, generate_scenes, ground_truth, simulate_demo_raters, write_scenes

DATASET_NAME = "iaa-demo"
OPERATOR = "@iaa/agreement/{}"


def _say(msg: str) -> None:
    print(msg, flush=True)


def build_demo_dataset(name: str = DATASET_NAME, num_images: int = 300, seed: int = 0) -> fo.Dataset:
    """Generates (or reuses) the images and builds the demo dataset from scratch."""
    t = time.time()
    scenes = generate_scenes(num_images, seed=seed)
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
    for sample, a, r in zip(samples, attr, ref):
        sample["annotations"] = a["annotations"]
        sample["truth"] = r["truth"]
    dataset.add_samples(samples, dynamic=True, validate=False, progress=False)
    dataset.info["iaa_demo"] = {
        "seed": seed,
        "raters": {p.name: p.description for p in DEMO_PROFILES},
        "rater_fields": list(raters.raters),
        "reference_field": "truth",
        "attribute_layout": {"field": "annotations", "rater_attr": "annotator", "raters_field": "raters"},
    }
    dataset.save()
    _say(f"  dataset {name!r}: {len(dataset)} samples ({time.time() - t:.1f} s)")
    return dataset


def _run(name: str, dataset, **params) -> dict:
    t = time.time()
    result = foo.execute_operator(OPERATOR.format(name), ctx=dict(view=dataset.view(), params=params)).result
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
    from agreement.fo.runs import load_agreement_results

    detail = load_agreement_results(dataset, "ot")["detail"]
    raters = detail["raters"]
    lines = [
        "\n  OT agreement (run 'ot', lam=0.5, beta=0.5; score in [0.5, 1]):",
        f"    alpha-OT {_fmt(ot['alpha_ot'])} (1 perfect, 0 chance; D_o {_fmt(ot['observed_cost'])}, "
        f"D_e {_fmt(ot['expected_cost'])}, {'exact' if ot['alpha_ot_exact'] else 'estimated'} over "
        f"{ot['n_cross_pairs_evaluated']} cross-sample pairs"
        + ("" if ot["alpha_ot_exact"] else f", se {_fmt(ot['alpha_ot_se'], 4)}") + ")",
        f"    mean OT score {_fmt(ot['mean_ot'])} over {ot['n_scored']} samples; baselines: "
        f"F1@0.5 {_fmt(ot['f1'])}, mean IoU {_fmt(ot['mean_iou'])}, threshold alpha {_fmt(ot['threshold_alpha'])}",
        "    alpha-OT per rater pair (who agrees with whom):",
    ]
    width = max(len(r) for r in raters)
    lines.append("      " + " " * width + "  " + "  ".join(f"{r[:8]:>8}" for r in raters))
    matrix = detail["rater_pair_alpha_ot"]
    for i, r in enumerate(raters):
        cells = ["       -" if i == j else f"{_fmt(matrix[i][j]):>8}" for j in range(len(raters))]
        lines.append(f"      {r:<{width}}  " + "  ".join(cells))
    worst = dataset.exists("ot_ot").sort_by("ot_ot").limit(3)
    lines.append("    lowest-scoring samples: " + ", ".join(
        f"{os.path.basename(p)} ({v:.3f})" for p, v in zip(*worst.values(["filepath", "ot_ot"]))
    ))
    return "\n".join(lines)


def _kalos_report(dataset, k: dict) -> str:
    from agreement.fo.runs import load_agreement_results

    d = load_agreement_results(dataset, "kalos")["detail"]
    vit = d["rater_vitality"]
    cd = d["class_difficulty"]
    curve = d["sensitivity_curve"]
    hardest = [i for i in cd["hardest_first"] if cd["alpha"][i] is not None][:3]
    lines = [
        "\n  KaLOS (run 'kalos', box IoU, tau = 0.5, greedy, soft cost):",
        f"    global alpha {_fmt(k['global_alpha'])}, mean alpha {_fmt(k['mean_alpha'])} over {k['n_defined']} samples "
        f"({k['n_undefined']} undefined, e.g. nobody drew anything; the reference tool would count those as 1.0)",
        "    rater vitality (alpha - alpha without the rater): "
        + ", ".join(f"{r} {_fmt(v, 3)}" for r, v in zip(vit["raters"], vit["vitality"])),
        "    hardest classes: " + ", ".join(f"{cd['classes'][i]} ({_fmt(cd['alpha'][i])})" for i in hardest),
        "    alpha vs tau: " + ", ".join(f"{t:g}: {_fmt(a)}" for t, a in zip(curve["taus"], curve["global_alpha"])),
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
    )
    return report


def main(argv: list[str] | None = None) -> int:
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
