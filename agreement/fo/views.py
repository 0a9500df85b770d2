"""Views of a run's disagreements: lowest-scoring samples, one rater pair's disagreements.

Both are built from what the run wrote (its per-sample score field, and the
per-rater-pair sample scores in its results), so they can be recomputed at any
time and saved as named views of the dataset.
"""

from __future__ import annotations

from fiftyone import ViewField as F

from agreement.fo import runs
from agreement.fo.panel_data import higher_is_better, score_field

__all__ = ["lowest_scoring_view", "rater_pair_view", "save_agreement_view", "ViewError"]


class ViewError(ValueError):
    """The view cannot be built as asked; the message says why."""


def lowest_scoring_view(samples, key: str, limit: int | None = 50, max_score: float | None = None):
    """The scored samples of run ``key``, lowest agreement first, optionally at
    most ``limit`` of them and only those with score ``<= max_score``."""
    info = runs.get_agreement_run_info(samples, key)
    field = score_field(info)
    if field is None:
        raise ViewError(f"run {key!r} ({info['method']}) has no per-sample score to sort by")
    better_high = higher_is_better(info)
    view = samples.exists(field)
    if max_score is not None:  # a threshold on agreement: for distances, "at least this far apart"
        view = view.match(F(field) <= float(max_score) if better_high else F(field) >= float(max_score))
    view = view.sort_by(field, reverse=not better_high)
    if limit is not None:
        if int(limit) < 1:
            raise ViewError(f"limit must be a positive number of samples, got {limit!r}")
        view = view.limit(int(limit))
    return view


def rater_pair_view(samples, key: str, rater_a: str, rater_b: str, max_score: float | None = None,
                    limit: int | None = 50):
    """The samples where raters ``rater_a`` and ``rater_b`` agree least in run
    ``key`` (their pair score ``<= max_score``), lowest first."""
    results = runs.load_agreement_results(samples, key)
    pairs = results.get("detail", {}).get("pair_sample_scores")
    if pairs is None:
        raise ViewError(f"run {key!r} does not store per-rater-pair sample scores; re-run it with this version")
    a, b = sorted([str(rater_a), str(rater_b)])
    scores = pairs.get(f"{a}|{b}")
    if scores is None:
        known = sorted({r for p in pairs for r in p.split("|")})
        raise ViewError(f"run {key!r} has no scores for the rater pair ({a}, {b}); its raters are {known}")
    items = sorted((v, sid) for sid, v in scores.items() if v is not None and (max_score is None or v <= max_score))
    if limit is not None:
        items = items[: int(limit)]
    ids = [sid for _, sid in items]
    return samples.select(ids, ordered=True)


def save_agreement_view(samples, name: str, view, overwrite: bool = False) -> str:
    """Saves ``view`` under ``name`` on the dataset; an existing saved view of
    that name is replaced only with ``overwrite``."""
    dataset = samples._root_dataset
    if dataset.has_saved_view(name) and not overwrite:
        raise ViewError(f"dataset {dataset.name!r} already has a saved view {name!r}; pass overwrite=True or another name")
    dataset.save_view(name, view, overwrite=overwrite)
    return name
