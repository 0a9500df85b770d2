"""What the App panel shows for a consensus run, from its results and its consensus labels.

The consensus cards (labels, share flagged for review, mean confidence: counted
by the database on the whole dataset and on the view), the correspondence
threshold τ and the consensus method, the rater report (one row per rater
against the consensus), one rater's confusion matrix and the review queue
(:func:`review_queue_view`). Part of :func:`agreement.fo.panel_data.run_panel_data`
(``"consensus"``).
"""

from __future__ import annotations

from agreement.fo.figures import PanelDataError, confusion_figure, confusion_matrix, count_text, is_finite, sig3

__all__ = ["consensus_cards", "consensus_counts", "consensus_tau_card", "rater_report_rows",
           "rater_report_markdown", "review_queue_view", "REVIEW_HELP", "REPORT_COLUMNS", "REPORT_NOTE"]


REVIEW_HELP = (
    "**Review queue** loads the consensus labels flagged for review as patches, least confident first "
    "(the same view as the operator *load_agreement_view* in mode *review*). Tag each patch `accepted` or "
    "`rejected` with FiftyOne's own label tagging (select patches, the tag icon above the grid, *Labels*). "
    "Then the operator **finalize_consensus** writes the reviewed label set `{key}_final`: rejected labels "
    "left out, accepted ones no longer flagged."
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
REPORT_NOTE = (
    "*sensitivity*: share of the consensus objects on its samples that the rater drew; *FP / sample*: false "
    "positives per assigned sample; *precision*: share of its labels that are real objects; *loc. error*: "
    "localisation error, mean 1 − IoU to the consensus label; *agrees*: share of its labels in a consensus "
    "label of their class; *labels*, *samples*: counted for the rater."
)
CONSENSUS_METHOD_NAMES = {"em": "EM (Dawid–Skene classes, rater sensitivity and localisation noise)",
                          "majority": "majority vote", "wbf": "weighted boxes fusion"}


def _tau_sources() -> dict[str, str]:
    from agreement.methods.consensus.threshold import AUTO_TAU_RANGE

    lo, hi = AUTO_TAU_RANGE
    return {"auto": f"chosen from the data in [{lo:g}, {hi:g}]", "given": "given", "model": "the fitted model's"}


def consensus_tau_card(summary: dict) -> dict:
    """The card of a consensus run's correspondence threshold τ and where it came from (runs made before
    ``tau="auto"`` record only the number)."""
    tau, source = summary.get("tau"), _tau_sources().get(summary.get("tau_selection"))
    text = sig3(tau) if is_finite(tau) else "not recorded"
    return {"label": "same-object threshold τ", "value": tau if is_finite(tau) else None,
            "text": f"{text} ({source})" if source and is_finite(tau) else text}


def _consensus_paths(samples, key: str) -> tuple[str, str]:
    """The consensus field ``{key}_consensus`` and the path of its label list (``…consensus.detections``)."""
    from agreement.fo.reading import LABEL_TYPES

    field = f"{key}_consensus"
    doc_type = getattr(samples._root_dataset.get_field(field), "document_type", None)
    if doc_type not in LABEL_TYPES:
        raise PanelDataError(f"field {field!r} of the consensus run {key!r} is missing or not a label list")
    return field, f"{field}.{LABEL_TYPES[doc_type]}"


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
    share_text = (f"{sig3(100 * share)}% ({flagged:,} of {count_text(n, 'label')})" if share is not None
                  else "undefined: no consensus labels")
    mean = c["mean_confidence"]
    return [
        {"label": "consensus labels", "value": n, "text": f"{n:,}"},
        {"label": "flagged for review", "value": share, "text": share_text, "count": flagged},
        {"label": "mean confidence of the consensus labels", "value": mean,
         "text": sig3(mean) if mean is not None else "undefined: no consensus labels"},
    ]


def rater_report_rows(results: dict) -> list[dict]:
    """The rater report of a consensus run's results, one row per rater:
    ``{"rater", <column>: value, "text": {<column>: shown text}}`` for the columns of ``REPORT_COLUMNS``."""
    report = (results.get("detail") or {}).get("rater_report") or {}
    rows = []
    for rater, entry in report.items():
        row = {"rater": str(rater), "text": {}}
        for k, _ in REPORT_COLUMNS:
            v = entry.get(k)
            row[k] = v
            row["text"][k] = (f"{int(v):,}" if k.startswith("n_") and is_finite(v) else
                              "< 0.001" if is_finite(v) and 0 < abs(v) < 1e-3 else sig3(v))
        rows.append(row)
    return rows


def rater_report_markdown(rows: list[dict]) -> str:
    """The rater report as a markdown table (three significant figures; "undefined" for NaN) and a note
    saying what each column means."""
    head = "| rater | " + " | ".join(name for _, name in REPORT_COLUMNS) + " |"
    align = "|:--|" + "--:|" * len(REPORT_COLUMNS)
    body = ["| " + r["rater"] + " | " + " | ".join(r["text"][k] for k, _ in REPORT_COLUMNS) + " |" for r in rows]
    return "\n".join([head, align, *body]) + "\n\n" + REPORT_NOTE


def review_queue_view(samples, key: str):
    """The review queue of consensus run ``key`` on ``samples``: a patches view of the flagged consensus
    labels, least confident first; the view the operator ``load_agreement_view`` loads in mode ``"review"``."""
    from agreement.fo.methods.consensus import review_view

    return review_view(samples, key)


def _consensus_data(samples, info: dict, results: dict, whole: bool, rater: str | None) -> dict:
    """The consensus part of :func:`run_panel_data`: cards (whole run, this view), rater report, confusion."""
    key = info["key"]
    rows = rater_report_rows(results)
    raters = [r["rater"] for r in rows]
    chosen = rater if rater in raters else (raters[0] if raters else None)
    summary = results.get("summary") or {}
    method = CONSENSUS_METHOD_NAMES.get(summary.get("method"), summary.get("method") or "unknown")
    if summary.get("method") == "em":
        method += f", {'converged' if summary.get('converged') else 'stopped'} after {summary.get('n_iter')} iterations"
    out = {
        "cards": consensus_cards(samples._root_dataset, key) + [
            {"label": "consensus method", "value": summary.get("method"), "text": method},
            consensus_tau_card(summary)],
        "view_cards": [] if whole or not len(samples) else consensus_cards(samples, key),
        "report_rows": rows,
        "report_md": rater_report_markdown(rows) if rows else "No rater report in the run results.",
        "raters": raters,
        "rater": chosen,
        "confusion": confusion_matrix(results, chosen) if chosen else None,
        "review_help": REVIEW_HELP.format(key=key),
    }
    out["figure"] = confusion_figure(out["confusion"]) if out["confusion"] and out["confusion"]["classes"] else None
    return out
