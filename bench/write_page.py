"""The benchmarks page: each bench script records its table here, ``write_page`` assembles them.

Every benchmark of ``make bench`` ends with :func:`record`, which writes its
current table as one small JSON fragment, ``bench/results/<name>.json``, with
the machine it ran on (CPU model, cores, memory, OS, Python, FiftyOne, numpy),
the date and the options it was run with. ``python bench/write_page.py`` (the
last step of ``make bench``) turns the fragments into ``docs/benchmarks.md``:
one current table per benchmark, in the order of :data:`BENCHMARKS`. A
benchmark that has not recorded a fragment yet is listed as not run. The page
holds no history: earlier figures are in git.

A quick run (``--quick``, ``make bench BENCH_QUICK=1``) never touches the
recorded figures: its fragments go to :data:`QUICK_RESULTS` (a temporary
folder; ``IAA_BENCH_QUICK_DIR`` to choose it), and ``write_page.py --quick``
assembles the page from them over the recorded ones into that folder, leaving
``docs/benchmarks.md`` as it was.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
from importlib import metadata
from pathlib import Path

BENCH = Path(__file__).resolve().parent
#: The recorded fragments (``IAA_BENCH_RESULTS``: another folder, for a check run whose figures are not to be kept).
RESULTS = Path(os.environ.get("IAA_BENCH_RESULTS") or BENCH / "results")
PAGE = BENCH.parent / "docs" / "benchmarks.md"
#: Where a quick run's fragments (and its page) go when a full run's figures are recorded under :data:`RESULTS`.
QUICK_RESULTS = Path(os.environ.get("IAA_BENCH_QUICK_DIR") or Path(tempfile.gettempdir()) / "iaa-bench-quick")

#: The benchmarks of ``make bench``, in page order: (fragment name, title, the script that records it).
BENCHMARKS = [
    ("run_read", "Bridge read", "bench/run.py"),
    ("run_giou", "Pairwise GIoU", "bench/run.py"),
    ("run_ot", "OT agreement on LVIS against POT", "bench/run.py"),
    ("kalos", "KαLOS against the reference implementation", "bench/kalos_bench.py"),
    ("geometry", "Geometry agreement", "bench/geometry_bench.py"),
    ("crowd", "Crowds: a few raters in all against a crowd", "bench/crowd_bench.py"),
    ("scale", "End to end at scale, against the floor", "bench/scale_bench.py"),
    ("scale_1m", "End to end at 1,000,000 samples, against the floor", "bench/scale_bench.py"),
    ("profiles", "Profiles", "bench/profile_ops.py"),
    ("import", "Import of a crowd's judgements", "bench/import_bench.py"),
    ("class", "Image-level classes", "bench/class_bench.py"),
    ("mask", "Semantic masks", "bench/mask_bench.py"),
    ("video", "Video: frames, tracks and segments", "bench/video_bench.py"),
]
#: The benchmarks of ``make bench-extra`` (each builds its own large dataset), not of ``make bench``.
_EXTRA = {"class", "mask", "video"}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict:
    """The machine and software a benchmark ran on (without importing FiftyOne)."""
    mem = _memory_gib()
    return {
        "cpu": _cpu_model(), "cores": os.cpu_count(),
        "memory": f"{mem:.1f} GiB" if mem is not None else "unknown",
        "os": platform.platform(), "python": platform.python_version(),
        "fiftyone": _version("fiftyone"), "numpy": _version("numpy"),
    }


def _fragment_path(name: str, quick: bool) -> Path:
    """Where ``record`` writes: ``bench/results/<name>.json``; a quick run's fragment to :data:`QUICK_RESULTS`
    (a quick run never replaces, nor adds to, the recorded figures)."""
    return (QUICK_RESULTS if quick else RESULTS) / f"{name}.json"


def record(name: str, columns: list[str], rows: list[list], *, about: str, notes: str = "",
           options: str | None = None, quick: bool = False, tables: list[dict] | None = None) -> Path:
    """Write one benchmark's current table to ``bench/results/<name>.json`` (a quick run: see :func:`_fragment_path`).

    Args:
        name: the fragment's name, one of :data:`BENCHMARKS`.
        columns: the table's column titles.
        rows: the table's rows, cells already formatted as text.
        about: what was measured, against what, at which size (a sentence or two, Markdown).
        notes: what to read from the table (targets met or missed), Markdown; optional.
        options: the command line the benchmark ran with (default: this process's arguments).
        quick: a run at the small sizes of ``make bench BENCH_QUICK=1`` (the page says so), written to
            :data:`QUICK_RESULTS` instead: it never replaces the recorded figures.
        tables: further tables shown under the first, each ``{"title", "columns", "rows"}`` (e.g. the
            profiles of each operator).

    Returns:
        The fragment's path.
    """
    if name not in {n for n, _, _ in BENCHMARKS}:
        raise ValueError(f"unknown benchmark fragment {name!r}: expected one of {[n for n, _, _ in BENCHMARKS]}")
    bad = [i for i, row in enumerate(rows) if len(row) != len(columns)]
    if bad:
        raise ValueError(f"benchmark {name!r}: rows {bad} do not have the {len(columns)} columns {columns}")
    for t in tables or []:
        if any(len(row) != len(t["columns"]) for row in t["rows"]):
            raise ValueError(f"benchmark {name!r}, table {t.get('title')!r}: rows do not have its columns")
    out = _fragment_path(name, quick)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "name": name, "about": about, "notes": notes, "columns": columns,
        "rows": [[str(c) for c in row] for row in rows],
        "tables": [{"title": t.get("title", ""), "columns": list(t["columns"]),
                    "rows": [[str(c) for c in row] for row in t["rows"]]} for t in tables or []],
        "options": options if options is not None else " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "quick": quick, "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
    }, indent=1, ensure_ascii=False) + "\n")
    return out


def appended(name: str, columns: list[str], rows: list[list], options: str, *, key=lambda row: row[0],
             keep=lambda row: True) -> tuple[list[list], str]:
    """A benchmark's ``--append``: ``rows`` followed by the recorded rows of fragment ``name`` whose ``key`` this
    run did not measure (and that ``keep`` accepts), with the options of both runs and the earlier run's date.

    Raises:
        SystemExit: the recorded fragment has other columns (every row must be measured again).
    """
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return rows, options
    old = json.loads(path.read_text())
    if old.get("columns") != columns:
        raise SystemExit(f"--append: {path} has other columns; run every operator instead")
    measured = {key(row) for row in rows}
    kept = [row for row in old["rows"] if key(row) not in measured and keep(row)]
    if not kept:
        return rows, options
    named = ", ".join(" ".join(map(str, key(r))) if isinstance(key(r), tuple) else str(key(r)) for r in kept)
    return list(rows) + kept, f"{options}; rows of {named}: {old['options']} ({old['date']})"


def _table(columns: list[str], rows: list[list[str]]) -> str:
    def cell(s: str) -> str:
        return str(s).replace("|", "\\|")
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _machine_line(m: dict) -> str:
    return (f"{m['cpu']}, {m['cores']} cores, {m['memory']} memory; {m['os']}; Python {m['python']}, "
            f"FiftyOne {m['fiftyone']}, numpy {m['numpy']}")


def _section(name: str, title: str, script: str, quick: bool = False) -> str:
    path = RESULTS / f"{name}.json"
    if quick and (QUICK_RESULTS / f"{name}.json").exists():
        path = QUICK_RESULTS / f"{name}.json"
    if not path.exists():
        target = "make bench-extra" if name in _EXTRA else "make bench"
        return f"## {title}\n\n`{script}`: not run on this checkout yet (`{target}`).\n"
    frag = json.loads(path.read_text())
    parts = [f"## {title}\n"]
    if frag.get("quick"):
        parts.append("!!! warning \"Quick run\"\n    Measured at the small sizes of `make bench BENCH_QUICK=1`, "
                     "to check the mechanism: not figures to quote.\n")
    parts.append(f"{frag['about']}\n")
    parts.append(_table(frag["columns"], frag["rows"]) + "\n")
    for t in frag.get("tables") or []:
        parts.append((f"**{t['title']}**\n\n" if t.get("title") else "") + _table(t["columns"], t["rows"]) + "\n")
    if frag.get("notes"):
        parts.append(f"{frag['notes']}\n")
    parts.append(f"*Measured {frag['date']} on {_machine_line(frag['machine'])}. "
                 f"Command: `{frag['options']}` (`{script}`).*\n")
    return "\n".join(parts)


def page_text(quick: bool = False) -> str:
    """The whole benchmarks page, from the fragments in ``bench/results/`` (``quick``: a quick run's fragments
    in :data:`QUICK_RESULTS` over them)."""
    head = ("# Benchmarks\n\n"
            "*Generated by `make bench` (`bench/write_page.py`, from the fragments the benchmarks write to "
            "`bench/results/`): do not edit by hand.* Each table is the latest run of its benchmark, with the "
            "machine and date it ran on; earlier figures are in the repository's history. Figures are ratios "
            "against a baseline measured in the same run wherever possible (a bare FiftyOne `values()` read of "
            "the same fields, a reference implementation), because absolute times depend on the machine. "
            "What the figures mean for your datasets: [scale and Dask](scale.md#what-to-expect).\n\n"
            "Run them with `make bench` (about an hour; `SCALE_SAMPLES=1000000` for the million-sample "
            "figures); `make bench BENCH_QUICK=1` runs every benchmark at small sizes (about ten minutes on two "
            "cores), to check that they work (their tables go to a temporary folder, never over these). `make bench-extra` adds the class, mask and video benchmarks (each builds "
            "its own large dataset).\n")
    return head + "\n" + "\n".join(_section(*b, quick=quick) for b in BENCHMARKS)


def main(argv: list[str] | None = None) -> int:
    """Write ``docs/benchmarks.md`` (``--check``: exit 1 when it differs from the fragments)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check that the page matches the fragments")
    p.add_argument("--quick", action="store_true",
                   help=f"the page of a quick run (its fragments over the recorded ones), written to {QUICK_RESULTS} "
                        "instead of docs/benchmarks.md")
    args = p.parse_args(argv)
    if args.quick:
        QUICK_RESULTS.mkdir(parents=True, exist_ok=True)
        out = QUICK_RESULTS / "benchmarks.md"
        out.write_text(page_text(quick=True))
        print(f"wrote the quick run's page to {out} (docs/benchmarks.md unchanged)")
        return 0
    text = page_text()
    if args.check:
        same = PAGE.exists() and PAGE.read_text() == text
        print("docs/benchmarks.md is " + ("up to date" if same else "out of date: run python bench/write_page.py"))
        return 0 if same else 1
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(BENCH.parent)} from {len(list(RESULTS.glob('*.json')))} fragments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
