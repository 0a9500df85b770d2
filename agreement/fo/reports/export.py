"""Agreement runs exported as files a labelling lead can send, for the people who never open the App.

:func:`export_agreement_report` writes one folder per run, ``<output_dir>/<key>/``, and beside them
``<output_dir>/plotly.min.js``, the one copy of plotly.js (from the installed plotly package) that every
run's page of the export loads (``<script src="../plotly.min.js">``: no network needed, as long as the run
folders stay beside it); with ``self_contained=True`` each page has plotly.js inlined instead (one file of
about 5 MB that can be sent alone, e.g. by e-mail) and no ``plotly.min.js`` is written:

* ``report.html``: one page (about 0.1 MB, or 5 MB self-contained): the run (key, method,
  parameters, dataset, date, corpus), its headline numbers with their intervals, and the App panel's figures
  on the whole run: the per-sample score histogram, the rater-by-rater agreement matrix, rater vitality or
  reliability, class difficulty, the α-versus-τ curve where the method has one, a consensus run's cards and
  class confusions, a video run's timeline; a sentence where a figure does not apply;
* ``run.json``: the run (method, parameters, input layout, fields written, timestamp) and its full results,
  NaN as ``null``;
* tidy CSV tables, where the run has them: ``raters.csv`` (one row per rater: every per-rater figure),
  ``rater_pairs.csv`` (one row per rater pair), ``classes.csv`` (one row per class), ``samples.csv`` (one row
  per sample: ``sample_id``, ``file_name``, ``filepath``, ``score``, the run's other per-sample values and
  ``reason`` where the score is undefined; a consensus as counts, never labels), ``conflicts.csv`` (one row
  per label conflict typed as CVAT types them: ``missing``, ``extra``, ``label differs``, ``low overlap``),
  ``confusion.csv`` (a consensus run's class confusion, one row per cell), ``alpha_by_tau.csv`` (KαLOS's
  sensitivity curve) and a mask run's ``pair_class_dice.csv``.

Column names are plain snake_case words; counts are integers; every other number is rounded to four
significant digits; an undefined number is an empty cell (see :mod:`agreement.reporting.tables`). The page
and the columns are described in ``docs/reports.md``.
"""

from __future__ import annotations

import os
from typing import Iterable

from agreement.fo.reports.run_report import write_run_report
from agreement.fo.runs.store import get_agreement_run_info, list_agreement_runs
from agreement.reporting.html import PLOTLY_JS, write_plotly_js

__all__ = ["export_agreement_report"]


def export_agreement_report(
    samples,
    output_dir: str | os.PathLike,
    keys: str | Iterable[str] | None = None,
    samples_csv: bool = True,
    self_contained: bool = False,
) -> dict:
    """Writes each run's report folder (``report.html``, ``run.json``, CSV tables) into ``output_dir``, and
    ``output_dir/plotly.min.js``, which every page loads.

    Args:
        samples: the dataset (or a view of it: ``samples.csv`` and ``conflicts.csv`` then hold only its
            samples; the figures, cards and other tables are the whole run's).
        output_dir: the folder for the report folders (created if needed); an existing run folder's files
            are replaced, nothing else in ``output_dir`` is touched.
        keys: a run key, several, or ``None`` for every agreement run.
        samples_csv: also write ``samples.csv``.
        self_contained: inline plotly.js in each ``report.html`` (about 5 MB a page, nothing needed beside
            it) instead of one shared ``plotly.min.js`` (a page of about 0.1 MB).

    Returns:
        ``{"output_dir", "plotly_js" (its path, ``None`` when self-contained), "runs": {key: {"folder", "html",
        "json", "raters", ...: path}}}``.

    Raises:
        agreement.fo.runs.store.RunError: a key that is not an agreement run of the dataset (checked before anything
            is written).
        ValueError: no runs to export.
    """
    keys = [keys] if isinstance(keys, str) else list(keys or list_agreement_runs(samples))
    if not keys:
        raise ValueError(f"dataset {samples._root_dataset.name!r} has no agreement runs to export")
    for key in keys:  # every key checked before anything is written
        get_agreement_run_info(samples, key)
    out_dir = os.fspath(output_dir)
    os.makedirs(out_dir, exist_ok=True)
    plotly_js = None if self_contained else write_plotly_js(out_dir)
    src = None if self_contained else f"../{PLOTLY_JS}"
    written = {}
    for key in keys:
        folder = os.path.join(out_dir, key)
        written[key] = {"folder": folder, **write_run_report(samples, key, folder, samples_csv=samples_csv,
                                                             plotly_src=src)}
    return {"output_dir": out_dir, "plotly_js": plotly_js, "runs": written}
