"""The validation matrix (issue 47): computes every cell of :mod:`tests.validation_matrix`, fails on any
applicable cell whose property does not hold, and writes ``docs/validation.md``.

The matrix is computed in work units (:data:`UNITS`: label types of the images part, pieces of the
video_classes part), each once, in a module-scoped fixture parametrized by unit (not at collection: every
pytest-xdist worker collects every module). Under ``make test`` each unit is a work unit of its own for
pytest-xdist (``tests/conftest.py``), so the units compute on different workers instead of one worker
computing the whole matrix (the suite's longest fixture, 4.6 minutes). Each unit saves its cells into the
run's temporary directory (shared by the workers); the unit that completes the set writes the page, from every
unit's cells in the page's order, and checks it."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from validation_matrix import PROPERTIES, Cell, images, render, video_classes

PAGE = Path(__file__).resolve().parents[1] / "docs" / "validation.md"

HEADER = """# The validation matrix

Every compute method, on every label type it accepts, against the properties a chance-corrected score must
have, measured on the simulator's raters. **This page is written by the test suite**
(`tests/test_validation_matrix.py`, from `tests/validation_matrix/`): a cell whose property does not hold fails
the suite; "n/a" says why a property does not apply. Numbers are seeded and deterministic.

| property | what is checked |
|:---|:---|
""" + "\n".join(f"| {title} | {what} |" for title, what in PROPERTIES.values()) + "\n"

#: The pieces of the matrix: ``("images", label type)`` (:func:`validation_matrix.images.kind_cells`) and
#: ``("video_classes", piece)`` (:data:`validation_matrix.video_classes.PIECES`).
PIECES: tuple[tuple[str, str], ...] = (*(("images", k) for k in images.KINDS),
                                       *(("video_classes", p) for p in video_classes.PIECES))

#: The work units (id -> pieces), the costliest first: CPU seconds of each piece computed alone (December
#: 2026, on this 2-core machine under load): tracks 32; classes 9, segments 3, frames 10; polygons 19; boxes 8,
#: keypoints 11; semantic masks 18; 3D cuboids 17; instance masks 14; 3D polylines 11, 3D points 3 (154 in
#: all). ``tests/conftest.py`` ranks them among the suite's slowest modules by these ids.
UNITS: dict[str, tuple[tuple[str, str], ...]] = {
    "tracks": (("video_classes", "tracks"),),
    "classes_segments_frames": (("video_classes", "classes"), ("video_classes", "segments"),
                                ("video_classes", "frames")),
    "polygons": (("images", "polygons"),),
    "boxes_keypoints": (("images", "boxes"), ("images", "keypoints")),
    "semantic_masks": (("video_classes", "semantic masks"),),
    "cuboids": (("images", "3D cuboids"),),
    "instance_masks": (("images", "instance masks"),),
    "polylines_points": (("images", "3D polylines"), ("images", "3D points")),
}

#: The properties each test asserts (together: every property, so every applicable cell is asserted).
FAMILIES: dict[str, tuple[str, ...]] = {
    "identical_monotone": ("identical", "monotone"),
    "chance": ("chance_homogeneous", "chance_heterogeneous"),
    "invariant": ("invariant",),
    "degenerate": ("one_rater", "never_meet", "empty_rater", "all_empty", "single_class"),
}


def test_the_units_and_families_cover_the_matrix():
    """Every piece in exactly one unit, every property in exactly one family: nothing goes unasserted."""
    pieces = [p for unit in UNITS.values() for p in unit]
    assert sorted(pieces) == sorted(PIECES)
    props = [p for family in FAMILIES.values() for p in family]
    assert sorted(props) == sorted(PROPERTIES)


def _compute(piece: tuple[str, str]) -> list[Cell]:
    part, name = piece
    return images.kind_cells(name) if part == "images" else video_classes.PIECES[name]()


def _ordered(got: dict[tuple[str, str], list[Cell]]) -> list[Cell]:
    """Every cell, in the page's order (the images part, then the video_classes part's pieces)."""
    return (images.order({k: got[("images", k)] for k in images.KINDS})
            + [c for p in video_classes.PIECES for c in got[("video_classes", p)]])


def _shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's directory for the units' cells: under pytest-xdist, the parent of the workers' temporary
    directories (the run's own, shared by its workers, as pytest-xdist's docs advise); else the process's."""
    base = tmp_path_factory.getbasetemp()
    out = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "validation-matrix"
    out.mkdir(exist_ok=True)
    return out


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@pytest.fixture(scope="module", params=list(UNITS))
def unit(request, tmp_path_factory) -> tuple[list[Cell], list[Cell] | None]:
    """``(cells of this unit, every cell when this unit completed the set and wrote the page, else None)``.

    Each unit saves its cells (atomically) before looking for the others', so the last of two units that
    finish together sees both: at least one unit writes the page (two may: the same text, atomically)."""
    got = {piece: _compute(piece) for piece in UNITS[request.param]}
    mine = [c for cells in got.values() for c in cells]
    assert len({c.id for c in mine}) == len(mine), "two cells with one id"
    shared = _shared_dir(tmp_path_factory)
    _write_atomically(shared / f"{request.param}.pickle", pickle.dumps(got))
    done = {name: shared / f"{name}.pickle" for name in UNITS}
    if not all(path.exists() for path in done.values()):
        return mine, None
    for path in done.values():
        got.update(pickle.loads(path.read_bytes()))
    every = _ordered(got)
    assert len({c.id for c in every}) == len(every), "two cells with one id"
    _write_atomically(PAGE, render(every, HEADER).encode())
    return mine, every


def _assert_hold(cells: list[Cell], family: str) -> None:
    props = FAMILIES[family]
    failed = [f"{c.id}: {c.value} ({c.note or PROPERTIES[c.prop][1]})" for c in cells
              if c.prop in props and c.ok is False]
    assert not failed, f"{len(failed)} cells of the matrix fail:\n" + "\n".join(failed)


def test_identical_and_monotone_cells_hold(unit):
    _assert_hold(unit[0], "identical_monotone")


def test_chance_cells_hold(unit):
    _assert_hold(unit[0], "chance")


def test_invariant_cells_hold(unit):
    _assert_hold(unit[0], "invariant")


def test_degenerate_cells_hold(unit):
    _assert_hold(unit[0], "degenerate")


def test_the_page_lists_every_cell(unit):
    """The unit's cells are on their rendering; the unit that wrote the page: every cell is on the page."""
    mine, every = unit
    text = render(mine, HEADER)
    for c in mine:
        assert f"## {c.method}" in text and f"| {c.kind} |" in text
    if every is not None:
        text = PAGE.read_text()
        for c in every:
            assert f"## {c.method}" in text and f"| {c.kind} |" in text
