"""The tutorial (docs/tutorial.md) on the real crowd: its Python steps, run as it shows them, give the numbers it
quotes, and every quoted number is in its text (the screenshots are ``docs/tutorial/make_tutorial.py``'s)."""

from __future__ import annotations

import sys

import pytest

from conftest import REPO, SHARED_DATA

pytestmark = pytest.mark.fiftyone

TUTORIAL = REPO / "docs" / "tutorial.md"


def _steps():
    """The tutorial's steps module (docs/tutorial/steps.py), imported without writing a __pycache__ into docs/
    (the site would publish it)."""
    if str(REPO / "docs" / "tutorial") not in sys.path:
        sys.path.insert(0, str(REPO / "docs" / "tutorial"))
    before, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        import steps
    finally:
        sys.dont_write_bytecode = before
    return steps


def test_the_tutorial_steps_give_the_numbers_it_quotes(fo, tmp_path):
    steps = _steps()

    if not steps.JUDGEMENTS.exists():
        pytest.skip(f"shared data not found: {steps.JUDGEMENTS.name} is expected in {SHARED_DATA.name} beside "
                    "the repository")
    name = "tutorial-crowd"
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    try:
        numbers = steps.run_tutorial(tmp_path, name)
        messages = numbers.pop("_messages")
        assert "737 judgements carry labels that are not among the categories" in messages["refused"]
        assert "{'B': 737}" in messages["refused"] and "unknown_labels='drop'" in messages["refused"]
        assert steps.check_numbers(numbers, TUTORIAL) == []
        dataset = fo.load_dataset(name)
        # the placeholder images are the samples' media, one per site, and the run's final field has the
        # consensus label of every sample but the rejected ones
        assert dataset.media_type == "image" and len(set(dataset.values("filepath"))) == len(dataset)
        assert all(p.startswith(str(tmp_path)) for p in dataset.values("filepath"))
        kept = [s for s, lab in zip(*dataset.values(["id", "review_final"])) if lab is not None]
        assert len(kept) == int(steps.EXPECTED["final_kept"])
    finally:
        if fo.dataset_exists(name):
            fo.delete_dataset(name)


def test_check_numbers_names_a_stale_number(tmp_path):
    steps = _steps()

    numbers = dict(steps.EXPECTED, alpha="0.300")
    page = tmp_path / "page.md"
    page.write_text(" ".join(v for k, v in steps.EXPECTED.items() if k != "worst_rater"))
    assert steps.check_numbers(numbers, page) == [
        f"alpha: the tutorial says {steps.EXPECTED['alpha']}, the run gives 0.300",
        f"worst_rater: {steps.EXPECTED['worst_rater']} is not in page.md"]
