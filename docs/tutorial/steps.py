"""The tutorial's Python steps (``docs/tutorial.md``), run on the real crowd exactly as the tutorial shows them.

The adult-content crowd of the shared data (Ipeirotis, Provost & Wang, HCOMP
2010: 496 web sites, 338 Mechanical Turk workers, about 90 judgements per
site, classes G, P, R, X) goes from its judgement file to a finalized
consensus: import (with its repairs), class agreement, the workers who pull
agreement down, Dawid–Skene and MACE consensus, the review queue, the
decisions and the final labels. Every step calls the plugin's operators the
FiftyOne way (``foo.get_operator(uri)(dataset, ...)``), as the App's forms do.

:func:`run_tutorial` returns the numbers the tutorial quotes, formatted as it
quotes them; :data:`EXPECTED` holds the quoted values and :func:`check_numbers`
compares the two (``make_tutorial.py`` and ``tests/test_tutorial.py`` call it,
so the tutorial cannot go stale silently).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The shared data folder beside the repository (see its README).
SHARED_DATA = REPO.parent / "shared" / "data"
JUDGEMENTS = SHARED_DATA / "adultcontent3_hcomp2010_labels.tsv"
DATASET = "adult-content"
CLASSES = "G, P, R, X"
PLUGIN = "@iaa/agreement"

#: The numbers the tutorial quotes, as it writes them.
EXPECTED: dict[str, str] = {
    "judgements": "44,373",
    "unknown_B": "737",
    "samples": "496",
    "workers": "338",
    "repeated_pairs": "7,883",
    "repeated_set_aside": "8,868",
    "conflicting_pairs": "2,535",
    "alpha": "0.327",
    "alpha_low": "0.310",
    "alpha_high": "0.343",
    "mean_agreement": "0.512",
    "worst_rater": "A3EWXINB8H2O6A",
    "worst_alpha_without": "0.336",
    "worst_judged": "474",
    "below_half_majority": "68",
    "ds_review": "0",
    "mace_review": "1",
    "ds_mace_differ": "29",
    "review_band_hi": "0.999",
    "queue": "23",
    "queue_disputed": "8",
    "final_kept": "488",
    "final_rejected": "8",
    "final_accepted": "15",
}


def placeholder(name: str, path: Path) -> None:
    """Draws a small PNG showing ``name`` (the crowd judged web sites, and the file has no pictures of them):
    the name without its scheme, on up to three lines, in the largest size that fits."""
    from PIL import Image, ImageDraw, ImageFont

    width, height, margin = 480, 270, 24
    image = Image.new("RGB", (width, height), (236, 240, 245))
    draw = ImageDraw.Draw(image)
    text = name.split("//", 1)[-1].rstrip("/")
    lines = [text[i:i + 28] for i in range(0, min(len(text), 84), 28)]
    for size in range(40, 9, -2):
        font = ImageFont.load_default(size=size)
        box = draw.multiline_textbbox((0, 0), "\n".join(lines), font=font, align="center")
        if box[2] - box[0] <= width - 2 * margin and box[3] - box[1] <= height - 2 * margin:
            break
    draw.multiline_text(((width - (box[2] - box[0])) / 2, (height - (box[3] - box[1])) / 2), "\n".join(lines),
                        fill=(40, 50, 70), font=font, align="center")
    image.save(path)


def judgements_with_images(source: Path, folder: Path) -> Path:
    """Makes one placeholder image per item of the judgement file ``source`` in ``folder/images`` and writes
    ``folder/judgements.tsv``: the same judgements, in the same order, each naming its item's image.

    In a real project the item column already names the images; nothing else of the file changes.
    """
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    with open(source, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    paths: dict[str, str] = {}
    for _, item, _ in rows:
        if item not in paths:
            paths[item] = str(images / (re.sub(r"[^A-Za-z0-9.-]+", "_", item.split("//", 1)[-1]) + ".png"))
            placeholder(item, Path(paths[item]))
    out = folder / "judgements.tsv"
    with open(out, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, delimiter="\t", lineterminator="\n").writerows(
            (worker, paths[item], label) for worker, item, label in rows)
    return out


def operator(name: str):
    """The plugin's operator ``name``, callable from Python with the App form's parameters."""
    import fiftyone.operators as foo

    return foo.get_operator(f"{PLUGIN}/{name}")


def import_crowd(tsv: Path, name: str = DATASET) -> tuple[str, dict]:
    """Step 1: imports the judgements, first as the file is (refused: a label outside the classes), then with
    those judgements dropped; returns the refusal's message and the import's result."""
    import_judgements = operator("import_judgements")
    try:
        import_judgements(path=str(tsv), dataset_name=name, categories=CLASSES)
        refused = ""
    except ValueError as e:  # the plugin's own refusal, of its own type, with its message
        refused = str(e)
    result = import_judgements(path=str(tsv), dataset_name=name, categories=CLASSES, unknown_labels="drop")
    return refused, result


def drifting_raters(dataset, key: str = "classes") -> dict:
    """Step 3: the workers who pull agreement down, from the class agreement run's rater diagnostics."""
    detail = dataset.load_run_results(key).detail
    vit = detail["rater_vitality"]
    worst = min(range(len(vit["raters"])), key=lambda i: (vit["vitality"][i], vit["raters"][i]))
    rater = vit["raters"][worst]
    judged = len(dataset.filter_labels("judgements", _rater_is(rater)).values("id"))
    maj = detail["rater_majority"]
    below = sum(1 for a in maj["agreement"] if a is not None and a < 0.5)
    return {"worst_rater": rater, "worst_alpha_without": vit["alpha_without"][worst], "worst_judged": judged,
            "below_half_majority": below}


def _rater_is(rater: str):
    from fiftyone import ViewField as F

    return F("annotator") == rater


def decision_of_first(dataset, key: str = "review", second_opinion: str = "ds") -> str:
    """The decision :func:`review_decisions` makes on the first sample of the queue (made in the App)."""
    from agreement.fo.methods.consensus import review_view

    sample = review_view(dataset, key).first()
    other = dataset[sample.id][f"{second_opinion}_consensus"].label
    return "accept" if sample[f"{key}_consensus"].label == other else "reject"


def review_decisions(dataset, key: str = "review", second_opinion: str = "ds") -> dict:
    """Step 6: accepts the queue's consensus labels that the second model (``second_opinion``) agrees with and
    rejects the others, with the operator ``review_consensus_labels``; returns the counts."""
    from agreement.fo.methods.consensus import review_view

    queue = review_view(dataset, key)
    sample_ids, ids, mine = queue.values(["id", f"{key}_consensus.id", f"{key}_consensus.label"])
    second = dict(zip(*dataset.values(["id", f"{second_opinion}_consensus.label"]), strict=True))
    other = [second[s] for s in sample_ids]
    accept = [i for i, a, b in zip(ids, mine, other, strict=True) if a == b]
    reject = [i for i, a, b in zip(ids, mine, other, strict=True) if a != b]
    review = operator("review_consensus_labels")
    if accept:
        review(queue, key=key, decision="accept", label_ids=accept)
    if reject:
        review(queue, key=key, decision="reject", label_ids=reject)
    return {"queue": len(ids), "queue_disputed": len(reject)}


def analyse(folder: Path, name: str = DATASET):
    """Steps 1 to 5: placeholder images, import, class agreement, the drifting workers, the two consensus
    models and the consensus with the wider review band; returns the dataset and the numbers so far."""
    import fiftyone as fo

    refused, imported = import_crowd(judgements_with_images(JUDGEMENTS, folder), name)
    dataset = fo.load_dataset(name)
    agreement = operator("compute_class_agreement")(dataset, key="classes", field="judgements").summary
    drift = drifting_raters(dataset)
    consensus = operator("compute_consensus")
    ds = consensus(dataset, key="ds", field="judgements", method="em").summary
    mace = consensus(dataset, key="mace", field="judgements", method="mace").summary
    differ = sum(a != b for a, b in zip(*dataset.values(["ds_consensus.label", "mace_consensus.label"]), strict=True))
    consensus(dataset, key="review", field="judgements", method="mace", review_band=[0.2, 0.999])
    numbers = {
        "judgements": imported["judgements"], "unknown_B": imported["unknown_counts"].get("B"),
        "samples": imported["num_samples"], "workers": len(imported["raters"]),
        "repeated_pairs": imported["repeated_pairs"], "repeated_set_aside": imported["repeated_judgements_set_aside"],
        "conflicting_pairs": imported["conflicting_pairs"], **{k: agreement[k] for k in (
            "alpha", "alpha_low", "alpha_high", "mean_agreement")}, **drift,
        "ds_review": ds["n_review"], "mace_review": mace["n_review"], "ds_mace_differ": differ,
        "review_band_hi": 0.999,
    }
    out = {k: _quoted(v) for k, v in numbers.items()}
    out["_messages"] = {"refused": refused, "summary": imported["summary"]}
    return dataset, out


def final_counts(final: dict) -> dict:
    """Step 7's numbers from the result of ``finalize_consensus``."""
    return {f"final_{k}": _quoted(final[k]) for k in ("kept", "rejected", "accepted")}


def run_tutorial(folder: Path, name: str = DATASET) -> dict:
    """Runs every step of the tutorial on the real crowd; returns the quoted numbers, formatted as quoted
    (and, under ``"_messages"``, the import's refusal and summary)."""
    dataset, numbers = analyse(folder, name)
    numbers.update({k: _quoted(v) for k, v in review_decisions(dataset).items()})
    numbers.update(final_counts(operator("finalize_consensus")(dataset, key="review")))
    return numbers


def _quoted(value) -> str:
    """A number as the tutorial writes it: integers with thousands separators, fractions to three places."""
    if isinstance(value, float) and not value.is_integer() or isinstance(value, float) and value < 1:
        return f"{value:.3f}"
    if isinstance(value, (int, float)):
        return f"{int(value):,}"
    return str(value)


def check_numbers(numbers: dict, tutorial: Path | None = None) -> list[str]:
    """The differences between the numbers of a run and :data:`EXPECTED`, and quoted values missing from the
    tutorial's text; an empty list when the tutorial is right."""
    problems = [f"{k}: the tutorial says {v}, the run gives {numbers.get(k)}" for k, v in EXPECTED.items()
                if numbers.get(k) != v]
    if tutorial is not None:
        text = tutorial.read_text(encoding="utf-8")
        problems += [f"{k}: {v} is not in {tutorial.name}" for k, v in EXPECTED.items() if v not in text]
    return problems
