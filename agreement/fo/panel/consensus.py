"""What the App panel shows for a consensus run, from its results and its consensus labels.

The consensus cards (labels, share flagged for review, mean confidence: counted
by the database on the whole dataset and on the view), the correspondence
threshold τ and the consensus method, the rater report (one row per rater
against the consensus), one rater's confusion matrix and the review queue
(:func:`review_queue_view`). Part of :func:`agreement.fo.panel.data.run_panel_data`
(``"consensus"``).
"""

from __future__ import annotations

from typing import Any

from agreement.fo.panel.rater_tables import Column, column_legend, count_columns, f1_score, row_texts
from agreement.reporting.figures.method_figures import (
    PanelDataError,
    confusion_figure,
    confusion_matrix,
    count_text,
    is_finite,
    sig3,
)

__all__ = [
    "CLASS_CONSENSUS_RATER_COLUMNS",
    "CONSENSUS_RATER_COLUMNS",
    "class_consensus_rater_rows",
    "consensus_rater_rows",
    "CLASS_REPORT_COLUMNS",
    "CLASS_REVIEW_HELP",
    "REPORT_COLUMNS",
    "REPORT_NOTE",
    "REVIEW_HELP",
    "consensus_cards",
    "consensus_panel_section",
    "consensus_counts",
    "consensus_tau_card",
    "default_rater",
    "is_class_consensus",
    "rater_report_markdown",
    "rater_report_rows",
    "review_queue_view",
]


REVIEW_HELP = (
    "**Review queue** loads the consensus labels flagged for review as patches, least confident first "
    "(the same view as the operator *load_agreement_view* in mode *review*); **Review in the sample view** "
    "then opens them one by one with **Accept**, **Reject**, **Undo**, **Previous** and **Next** (or select "
    "patches and run *review_consensus_labels*). **Finalize** (the operator **finalize_consensus**) writes the "
    "reviewed label set `{key}_final`: rejected labels left out, accepted ones no longer flagged."
)
REPORT_COLUMNS = (  # short headings: the table must fit a panel column; REPORT_NOTE says what they mean
    ("sensitivity", "sensitivity"),
    ("false_positive_rate", "FP / sample"),
    ("precision", "precision"),
    ("localisation_error", "loc. error"),
    ("agreement", "agrees"),
    ("n_labels", "labels"),
    ("n_samples", "samples"),
)
#: The rater report of a class consensus (Dawid–Skene, MACE, majority): competence, agreement, labels.
CLASS_REPORT_COLUMNS = (("competence", "competence"), ("agreement", "agrees"), ("labels", "labels"))
CLASS_REVIEW_HELP = (
    "**Review queue** loads the samples whose consensus class is flagged for review, least confident first "
    "(the same view as the operator *load_agreement_view* in mode *review*; a class consensus is one label per "
    "sample, so the queue is samples, not patches). Open a sample: the panel shows **Accept**, **Reject** and "
    "**Next**, which tag only its consensus label `accepted` or `rejected`; or select samples and run "
    "*review_consensus_labels*. Then **finalize_consensus** writes `{key}_final`: rejected labels left out, "
    "accepted ones no longer flagged."
)


#: The columns of a consensus run's rater table (against the consensus), the default sort column first.
CONSENSUS_RATER_COLUMNS = (
    Column("f1", "F1", description="harmonic mean of sensitivity and precision"),
    Column("sensitivity", "sensitivity",
           description="share of the consensus objects on its samples that the rater drew"),
    Column("precision", "precision", description="share of its labels that are real objects"),
    Column("false_positive_rate", "FP / sample", False, description="false positives per assigned sample"),
    Column("localisation_error", "loc. error", False,
           description="localisation error, mean 1 − IoU to the consensus label"),
    Column("agreement", "agrees", description="share of its labels in a consensus label of their class"),
) + count_columns()
#: The columns of the rater table of a consensus run on classes (its report holds competences, not sensitivities).
CLASS_CONSENSUS_RATER_COLUMNS = (
    Column("competence", "competence",
           description="the model's estimate that the rater gives the true class (Dawid–Skene: the diagonal "
                       "of its confusion matrix, weighted by the classes' prior; MACE: its competence; "
                       "majority: its agreement with the consensus)"),
    Column("agreement", "agrees", description="share of its classes equal to the consensus"),
    Column("n_labels", "labels", True, True, "the classes it gave"),
)


def consensus_rater_rows(report: dict) -> list[dict]:
    """A consensus run's ``detail["rater_report"]`` as rows, with each rater's F1
    (:func:`agreement.fo.panel.rater_tables.f1_score`)."""
    cols = CONSENSUS_RATER_COLUMNS
    rows = []
    for rater, entry in report.items():
        row = {"rater": str(rater), **{c.key: entry.get(c.key) for c in cols if c.key != "f1"}}
        row["f1"] = f1_score(entry.get("sensitivity"), entry.get("precision"))
        rows.append(row_texts(row, cols))
    return rows


def class_consensus_rater_rows(report: dict) -> list[dict]:
    """A class consensus run's ``detail["rater_report"]`` as rows: competence, agreement with the consensus,
    labels."""
    cols = CLASS_CONSENSUS_RATER_COLUMNS
    return [row_texts({"rater": str(r), "competence": e.get("competence"), "agreement": e.get("agreement"),
                       "n_labels": e.get("labels")}, cols) for r, e in report.items()]


def _legend(columns: tuple, table: tuple) -> str:
    """The legend of a report with ``columns`` ((key, heading) pairs): what the rater table with columns
    ``table`` says of the columns of the same headings (:func:`agreement.fo.panel.rater_tables.column_legend`)."""
    described = {c.heading: c for c in table}
    return column_legend([described[heading] for _, heading in columns])


#: What the report's columns mean (under the table), made from its columns.
REPORT_NOTE = _legend(REPORT_COLUMNS, CONSENSUS_RATER_COLUMNS)
CLASS_REPORT_NOTE = _legend(CLASS_REPORT_COLUMNS, CLASS_CONSENSUS_RATER_COLUMNS)
CLASS_CONSENSUS_METHOD_NAMES = {"em": "Dawid–Skene (EM: each rater's confusion matrix)",
                                "mace": "MACE (each rater's competence and spamming)", "majority": "majority vote"}
CONSENSUS_METHOD_NAMES = {"em": "EM (Dawid–Skene classes, rater sensitivity and localisation noise)",
                          "majority": "majority vote", "wbf": "weighted boxes fusion"}


def _tau_sources() -> dict[str, str]:
    from agreement.methods.consensus.threshold import AUTO_TAU_RANGE

    lo, hi = AUTO_TAU_RANGE
    return {"auto": f"chosen from the data in [{lo:g}, {hi:g}]", "given": "given", "model": "the fitted model's"}


def consensus_tau_card(summary: dict) -> dict:
    """The card of a consensus run's correspondence threshold τ and where it came from (runs made before
    ``tau="auto"`` record only the number)."""
    tau, selection = summary.get("tau"), summary.get("tau_selection")
    source = _tau_sources().get(selection) if selection is not None else None
    text = sig3(tau) if is_finite(tau) else "not recorded"
    return {"label": "same-object threshold τ", "value": tau if is_finite(tau) else None,
            "text": f"{text} ({source})" if source and is_finite(tau) else text}


def _consensus_paths(samples, key: str) -> tuple[str, str]:
    """The consensus field ``{key}_consensus`` and the path of its labels (``…consensus.detections``; the
    field itself for a class consensus, one ``Classification`` per sample)."""
    import fiftyone.core.labels as fol

    from agreement.fo.storage.label_schema import label_list_path
    from agreement.fo.storage.reading import LABEL_TYPES

    field = f"{key}_consensus"
    doc_type = getattr(samples._root_dataset.get_field(field), "document_type", None)
    if doc_type is None or (doc_type not in LABEL_TYPES and doc_type is not fol.Classification):
        raise PanelDataError(f"field {field!r} of the consensus run {key!r} is missing or not a label list")
    return field, label_list_path(field, doc_type)


def is_class_consensus(samples, key: str) -> bool:
    """Whether consensus run ``key`` fused image-level classes (its consensus is one ``Classification`` per
    sample, its review queue the flagged samples rather than patches)."""
    import fiftyone.core.labels as fol

    return getattr(samples._root_dataset.get_field(f"{key}_consensus"), "document_type", None) is fol.Classification


def consensus_counts(samples, key: str) -> dict:
    """Consensus labels of run ``key`` in ``samples``, those flagged for review and their mean confidence.

    One database aggregation (``Count``, ``CountValues`` of ``{key}_review``,
    ``Mean`` of ``confidence``), never the values in Python.

    Returns:
        ``{"n_labels", "n_flagged", "share_flagged" (None without labels), "mean_confidence" (None)}``.
    """
    import fiftyone.core.aggregations as foa

    _, path = _consensus_paths(samples, key)
    n, flags, mean = samples.aggregate([foa.Count(path), foa.CountValues(f"{path}.{key}_review"),
                                        foa.Mean(f"{path}.confidence")])
    flagged = int(flags.get(True, 0))
    return {"n_labels": int(n), "n_flagged": flagged, "share_flagged": flagged / n if n else None,
            "mean_confidence": float(mean) if n and is_finite(mean) else None}


def consensus_cards(samples, key: str) -> list[dict]:
    """The consensus cards of ``samples``: consensus labels, share flagged for review, mean confidence.

    ``value`` is the number, ``text`` what the panel shows (three significant figures).
    """
    c = consensus_counts(samples, key)
    n, flagged, share = c["n_labels"], c["n_flagged"], c["share_flagged"]
    share_text = (f"{sig3(100 * share)}% ({flagged:,} of {count_text(n, what='label')})" if share is not None
                  else "undefined: no consensus labels")
    mean = c["mean_confidence"]
    return [
        {"label": "consensus labels", "value": n, "text": f"{n:,}"},
        {"label": "flagged for review", "value": share, "text": share_text, "count": flagged},
        {"label": "mean confidence of the consensus labels", "value": mean,
         "text": sig3(mean) if mean is not None else "undefined: no consensus labels"},
    ]


def _report_columns(report: dict) -> tuple[tuple, str]:
    """The report's columns and note: a class consensus reports competence, boxes sensitivity and more."""
    if any("competence" in (entry or {}) for entry in report.values()):
        return CLASS_REPORT_COLUMNS, CLASS_REPORT_NOTE
    return REPORT_COLUMNS, REPORT_NOTE


def rater_report_rows(results: dict) -> list[dict]:
    """The rater report of a consensus run's results, one row per rater:
    ``{"rater", <column>: value, "text": {<column>: shown text}}`` for the columns of ``REPORT_COLUMNS``
    (a class consensus: ``CLASS_REPORT_COLUMNS``)."""
    report = (results.get("detail") or {}).get("rater_report") or {}
    columns, _ = _report_columns(report)
    rows = []
    for rater, entry in report.items():
        row: dict[str, Any] = {"rater": str(rater), "text": {}}
        for k, _ in columns:
            v = entry.get(k)
            row[k] = v
            row["text"][k] = (f"{int(v):,}" if (k.startswith("n_") or k == "labels") and is_finite(v) else
                              "< 0.001" if is_finite(v) and 0 < abs(v) < 1e-3 else sig3(v))
        rows.append(row)
    return rows


def rater_report_markdown(rows: list[dict]) -> str:
    """The rater report as a markdown table (three significant figures; "undefined" for NaN) and a note
    saying what each column means."""
    columns, note = (CLASS_REPORT_COLUMNS, CLASS_REPORT_NOTE) if rows and "competence" in rows[0] else \
        (REPORT_COLUMNS, REPORT_NOTE)
    head = "| rater | " + " | ".join(name for _, name in columns) + " |"
    align = "|:--|" + "--:|" * len(columns)
    body = ["| " + r["rater"] + " | " + " | ".join(r["text"][k] for k, _ in columns) + " |" for r in rows]
    return "\n".join([head, align, *body]) + "\n\n" + note


def default_rater(results: dict, raters: list[str]) -> str | None:
    """The rater whose confusion matrix the panel shows first: the least competent one when the report
    has competences (a class consensus; ties by name), else the first."""
    report = (results.get("detail") or {}).get("rater_report") or {}
    scored = [(float(report[r]["competence"]), r) for r in raters
              if is_finite((report.get(r) or {}).get("competence"))]
    if scored:
        return min(scored)[1]
    return raters[0] if raters else None


def review_queue_view(samples, key: str):
    """The review queue of consensus run ``key`` on ``samples``: a patches view of the flagged consensus
    labels (a class consensus: the flagged samples), least confident first; the view the operator ``load_agreement_view`` loads in mode ``"review"``."""
    from agreement.fo.methods import hooks_of
    from agreement.fo.runs import store as runs

    method = runs.get_agreement_run_info(samples, key)["method"]
    review = hooks_of(method).review_view
    if review is None:
        raise runs.RunError(f"run {key!r} is a {method} run, which has no review queue")
    return review(samples, key)


def consensus_panel_section(samples, info: dict, results: dict, whole: bool, rater: str | None) -> dict:
    """The consensus part of :func:`agreement.fo.panel.data.run_panel_data` (its hook ``panel_section``): cards
    (whole run, this view), rater report, confusion.

    Args:
        samples: the view the panel shows.
        info: the consensus run's info.
        results: its results.
        whole: whether ``samples`` is the whole dataset.
        rater: the rater whose confusion matrix to draw (default: the least competent, else the first).

    Returns:
        ``{"cards", "view_cards", "report_rows", "report_md", "raters", "rater", "confusion", "review_help",
        "class_consensus", "figure"}``.
    """
    key = info["key"]
    rows = rater_report_rows(results)
    raters = [r["rater"] for r in rows]
    chosen = rater if rater in raters else default_rater(results, raters)
    summary, detail = results.get("summary") or {}, results.get("detail") or {}
    classes = is_class_consensus(samples, key)
    names = CLASS_CONSENSUS_METHOD_NAMES if classes else CONSENSUS_METHOD_NAMES
    method_name = summary.get("method")
    method = names.get(method_name, method_name or "unknown") if method_name is not None else "unknown"
    n_iter, converged = summary.get("n_iter", detail.get("n_iter")), summary.get("converged", detail.get("converged"))
    if summary.get("method") in ("em", "mace") and n_iter is not None:
        method += f", {'converged' if converged else 'stopped'} after {n_iter} iterations"
    out: dict[str, Any] = {
        "cards": consensus_cards(samples._root_dataset, key) + [
            {"label": "consensus method", "value": summary.get("method"), "text": method}]
        + ([] if classes else [consensus_tau_card(summary)]),  # classes need no same-object threshold
        "view_cards": [] if whole or not len(samples) else consensus_cards(samples, key),
        "report_rows": rows,
        "report_md": rater_report_markdown(rows) if rows else "No rater report in the run results.",
        "raters": raters,
        "rater": chosen,
        "confusion": confusion_matrix(results, chosen) if chosen else None,
        "review_help": (CLASS_REVIEW_HELP if is_class_consensus(samples, key) else REVIEW_HELP).format(key=key),
        "class_consensus": is_class_consensus(samples, key),
    }
    out["figure"] = confusion_figure(out["confusion"]) if out["confusion"] and out["confusion"]["classes"] else None
    return out
