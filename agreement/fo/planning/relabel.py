"""Which samples need one more rater: ``suggest_relabel`` on a consensus or agreement run.

:func:`suggest_relabel` asks the run's method for the expected value of one more label on every sample of the
run (its :attr:`agreement.fo.runs.method_spec.MethodHooks.relabel` hook: classes,
:mod:`agreement.fo.planning.class_relabel`; instance labels, :mod:`agreement.fo.planning.box_relabel`), writes
it to the float field ``{key}_relabel_priority`` on every sample of the run (owned by the run: deleting or
renaming the run takes it along; a rerun overwrites it), the rank that implies in ``{key}_relabel_rank`` (int,
1 = the first to label; ties of priority: fewer ratings first, then the run's sample order) and returns the
``budget`` samples of the collection given with the best ranks. The rules are those of
:data:`agreement.methods.planning.relabel.RELABEL_RULES`: ``expected_error_reduction`` (the default: the
expected drop in the probability that the sample's consensus is wrong if one more rater of the crowd's typical
reliability labelled it), and the simple ``lowest_agreement``, ``fewest_raters`` and ``random``
(docs/relabel.md).

:func:`suggested_view` is the stored ranking as a view: the samples by ``{key}_relabel_rank``, at most
``budget`` (the same samples, in the same order, as the suggestion of the same view).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fiftyone import ViewField as F

from agreement.fo.runs import store as runs
from agreement.fo.runs.store import RunError
from agreement.methods.planning.priority import RelabelPriority
from agreement.methods.planning.relabel import RELABEL_RULES

__all__ = ["RelabelSuggestion", "suggest_relabel", "suggested_view", "priority_field", "rank_field", "RELABEL_RULES"]

#: The suffix of the run's field of priorities: ``{key}_relabel_priority``.
PRIORITY_SUFFIX = "relabel_priority"
#: The suffix of the run's field of ranks (1 = the first sample to label): ``{key}_relabel_rank``.
RANK_SUFFIX = "relabel_rank"


def priority_field(key: str) -> str:
    """The name of run ``key``'s priority field, ``{key}_relabel_priority``."""
    return f"{key}_{PRIORITY_SUFFIX}"


@dataclass(frozen=True)
class RelabelSuggestion:
    """The samples to give one more rater, highest expected value first.

    Attributes:
        key: the run.
        rule: the rule ranking them (:data:`agreement.methods.planning.relabel.RELABEL_RULES`).
        budget: the samples suggested.
        field: the run's field holding every sample's priority (``{key}_relabel_priority``).
        sample_ids: the ``budget`` samples suggested, ranked.
        priorities: their priorities (the rule's units; ``>= 0``).
        notes: what the rule and the method assumed, one sentence each.
        expected_errors_now: the expected number of wrong consensus labels over the run's samples now
            (the sum of the rule's ``error_now``).
        expected_errors_after: that number expected once the suggested samples have one more label each (the
            sum of ``error_after`` over them and ``error_now`` over the rest).
        n_samples: the run's samples that got a priority.
    """

    key: str
    rule: str
    budget: int
    field: str
    sample_ids: list[str]
    priorities: list[float]
    notes: tuple[str, ...] = ()
    expected_errors_now: float = float("nan")
    expected_errors_after: float = float("nan")
    n_samples: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The operator's result: flat, JSON-serialisable."""
        return {"key": self.key, "rule": self.rule, "budget": self.budget, "field": self.field,
                "sample_ids": list(self.sample_ids), "priorities": list(self.priorities),
                "expected_errors_now": self.expected_errors_now,
                "expected_errors_after": self.expected_errors_after, "n_samples": self.n_samples,
                "notes": list(self.notes)}


def _relabel_methods() -> list[str]:
    """The operators whose runs ``suggest_relabel`` takes (their method declares the ``relabel`` hook)."""
    from agreement.fo.methods import declarations

    return sorted(d.operator for d in declarations() if d.hooks.relabel is not None)


def _check_request(samples, key: str, budget: Any, rule: str) -> dict:
    """The run's info once the request is valid; refuses the rule, the budget, the run, its method and a clash."""
    from agreement.fo.methods import hooks_of

    if rule not in RELABEL_RULES:
        raise ValueError(f"unknown rule {rule!r}: suggest_relabel ranks by one of {', '.join(RELABEL_RULES)}")
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ValueError(f"budget must be a positive whole number of samples to suggest, got {budget!r}")
    if budget > len(samples):
        raise ValueError(f"budget {budget} is larger than the {len(samples)} samples of the view: suggest at most "
                         f"{len(samples)}")
    info = runs.get_agreement_run_info(samples, key)
    if info.get("status", "complete") != "complete":
        raise RunError(f"run {key!r} is incomplete (interrupted): rerun it before suggest_relabel")
    if hooks_of(info["method"]).relabel is None:
        raise RunError(f"run {key!r} is a {info['method']} run, which cannot say which samples need one more "
                       f"rater; suggest_relabel takes the runs of {', '.join(_relabel_methods()) or 'no method'}")
    schema = samples._root_dataset.get_field_schema()
    for name in (priority_field(key), rank_field(key)):
        if name in schema and name not in info["sample_fields"]:
            raise RunError(f"field {name!r} already exists on dataset {samples._root_dataset.name!r} and does not "
                           f"belong to run {key!r}: rename or delete it (a run never overwrites fields it does "
                           "not own)")
    return info


def _checked(key: str, ids: list, priority: RelabelPriority) -> None:
    """Refuses a hook's answer that does not give one finite priority per sample."""
    n = len(ids)
    shapes = {a: np.shape(getattr(priority, a)) for a in ("priority", "error_now", "error_after", "n_ratings", "order")}
    if any(s != (n,) for s in shapes.values()) or len(set(ids)) != n:
        raise RunError(f"the relabel hook of run {key!r} gave {n} sample ids and arrays of shapes {shapes}")
    if not np.isfinite(priority.priority).all():
        raise RunError(f"the relabel hook of run {key!r} gave a priority that is not finite")


def rank_field(key: str) -> str:
    """The name of run ``key``'s rank field, ``{key}_relabel_rank`` (1 = the first sample to label)."""
    return f"{key}_{RANK_SUFFIX}"


def _write(samples, info: dict, ids: list[str], priority: RelabelPriority) -> str:
    """Writes ``{key}_relabel_priority`` and ``{key}_relabel_rank`` (owned by the run) on every sample ``ids``:
    each sample document updated once (:func:`agreement.fo.runs.store.write_run_columns`, the bulk path of the
    runs' own write-back)."""
    key, name = info["key"], priority_field(info["key"])
    dataset = samples._root_dataset
    rank = np.empty(len(ids), dtype=np.int64)
    rank[priority.order] = np.arange(1, len(ids) + 1)
    for field in (name, rank_field(key)):
        runs.add_run_sample_field(dataset, key, field)
    plan = runs.RunPlan(key=key, method=info["method"], sample_fields=[name, rank_field(key)])
    runs.write_run_columns(dataset, plan, {PRIORITY_SUFFIX: dict(zip(ids, map(float, priority.priority), strict=True)),
                                           RANK_SUFFIX: dict(zip(ids, map(int, rank), strict=True))})
    return name


def suggest_relabel(samples, key: str, *, budget: int, rule: str = "expected_error_reduction",
                    seed: int = 0) -> RelabelSuggestion:
    """The ``budget`` samples of ``samples`` to give one more rater, by ``rule``, from run ``key``.

    Every sample of the run gets its priority in ``{key}_relabel_priority`` (float, never NaN; owned by the run);
    the suggestion is the ``budget`` samples of ``samples`` (those of the run) with the highest priority, ties
    broken by fewer ratings, then by sample id (:func:`agreement.methods.planning.priority.rank_items`).

    Args:
        samples: a dataset or view of the run's dataset (the samples to choose from).
        key: a run whose method offers the ``relabel`` hook (class consensus, class agreement, box consensus, ...).
        budget: how many samples to suggest, ``1 ..`` the run's samples in ``samples``.
        rule: one of :data:`agreement.methods.planning.relabel.RELABEL_RULES`.
        seed: the seed of a consensus fitted for the rule and of ``rule="random"``.

    Returns:
        The :class:`RelabelSuggestion`.

    Raises:
        ValueError: an unknown rule, or a budget below 1 or above the samples.
        agreement.fo.runs.store.RunError: no run ``key``, a method without the hook, a field of the name that the
            run does not own, or a run whose data changed since it was computed. Nothing is written then.
    """
    info = _check_request(samples, key, budget, rule)
    budget = int(budget)
    ids, priority = hooks_of_run(info)(samples, info, {"rule": rule, "seed": int(seed)})
    ids = [str(i) for i in ids]
    _checked(key, ids, priority)
    in_view = set(map(str, samples.values("id")))
    ranked = [i for i in priority.order.tolist() if ids[i] in in_view]
    if budget > len(ranked):
        raise ValueError(f"budget {budget} is larger than the {len(ranked)} samples of run {key!r} in the view: "
                         f"suggest at most {len(ranked)}")
    name = _write(samples, info, ids, priority)
    top = ranked[:budget]
    now = float(np.sum(priority.error_now))
    after = now - float(np.sum(priority.error_now[top] - priority.error_after[top]))
    return RelabelSuggestion(key=key, rule=rule, budget=budget, field=name, sample_ids=[ids[i] for i in top],
                             priorities=[float(priority.priority[i]) for i in top], notes=tuple(priority.notes),
                             expected_errors_now=now, expected_errors_after=after, n_samples=len(ids))


def hooks_of_run(info: dict) -> Any:
    """The ``relabel`` hook of run ``info``'s method (``None``: it offers none)."""
    from agreement.fo.methods import hooks_of

    return hooks_of(info["method"]).relabel


def suggested_view(samples, key: str, budget: int):
    """The samples of ``samples`` by run ``key``'s stored rank (``{key}_relabel_rank``), at most ``budget``: the
    last :func:`suggest_relabel` of the run as a view (its suggestion on the same view, in its order).

    Raises:
        ValueError: a budget below 1.
        agreement.fo.runs.store.RunError: no run ``key``, or no priority stored for it (run suggest_relabel).
    """
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ValueError(f"budget must be a positive whole number of samples, got {budget!r}")
    info = runs.get_agreement_run_info(samples, key)
    name = rank_field(key)
    if name not in info["sample_fields"]:
        raise RunError(f"run {key!r} has no relabel priorities ({name!r}): run suggest_relabel on it first")
    return samples.match(F(name) != None).sort_by(name).limit(int(budget))  # noqa: E711
