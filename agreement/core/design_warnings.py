"""The warnings of a run: degenerate rater designs, undefined headline numbers, the method's own.

Every run of :func:`agreement.fo.runs.engine.run_method` records a list of
sentences, ``warnings``, with its results (``results.warnings``, printed by
``print_report()``), and returns them under the key ``warnings`` of the
operator's result, which the App shows. They come from three places:

1. **The design** (:func:`design_stats` of each shard, merged by
   :func:`merge_design`: the same whatever the shard size, worker count or
   sample order), checked by :func:`design_warnings`: fewer than two raters;
   raters who never share a sample (no pair meets at all, or groups of
   raters that never meet: the connected components of the co-assignment
   graph); a rater assigned no sample; a rater who drew no label on the
   samples assigned to them; no label at all; a single class.
2. **Undefined headline numbers** (:func:`undefined_warnings`): every
   headline number of the method's panel cards, or with a ``<name>_reason``
   beside it, that is NaN, with its reason.
3. **The method's own**: its spec's ``warnings`` hook
   (:attr:`agreement.fo.runs.method_spec.MethodSpec.warnings`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from agreement.core.rater_pairs import co_assignment

__all__ = ["DesignStats", "design_stats", "merge_design", "design_warnings", "undefined_warnings", "run_warnings",
           "named", "MAX_NAMED"]

#: Raters (or groups) named in a warning before "and N more".
MAX_NAMED = 5


@dataclass
class DesignStats:
    """What the design checks need of a corpus, mergeable over shards (sums).

    Attributes:
        raters: the R rater names (the run's plan: the same in every shard).
        co: ``(R, R)`` int64: samples both raters are assigned (the diagonal: each rater's samples).
        labels: ``(R,)`` int64: labels each rater drew on the samples assigned to them.
        classes: class name -> number of labels of that class.
        n_samples: samples seen.
    """

    raters: tuple
    co: np.ndarray
    labels: np.ndarray
    classes: dict = field(default_factory=dict)
    n_samples: int = 0

    def merge(self, other: "DesignStats") -> "DesignStats":
        """Both corpora's statistics (sums; commutative and associative)."""
        if tuple(other.raters) != tuple(self.raters):
            raise ValueError("design statistics of one run must share its raters")
        classes = dict(self.classes)
        for name, n in other.classes.items():
            classes[name] = classes.get(name, 0) + n
        return DesignStats(self.raters, self.co + other.co, self.labels + other.labels, classes,
                           self.n_samples + other.n_samples)


def design_stats(annotations: Any) -> DesignStats:
    """The :class:`DesignStats` of a :class:`agreement.core.data.MultiRaterAnnotations` corpus (or shard).

    ``co = Aᵀ A`` for the ``(S, R)`` assignment matrix ``A`` (:func:`agreement.core.rater_pairs.co_assignment`); labels count the rows of each rater on samples
    assigned to them; classes count the rows' class names (``None`` left out).
    """
    A = np.asarray(annotations.assigned, dtype=np.int64)
    R = len(annotations.raters)
    rows_r = np.asarray(annotations.rater_index, dtype=np.intp)
    rows_s = np.asarray(annotations.sample_index, dtype=np.intp)
    on_assigned = A[rows_s, rows_r].astype(bool) if len(rows_r) else np.zeros(0, bool)
    labels = np.bincount(rows_r[on_assigned], minlength=R).astype(np.int64)
    classes = Counter(np.asarray(annotations.labels, dtype=object)[on_assigned].tolist())
    classes.pop(None, None)
    return DesignStats(tuple(annotations.raters), co_assignment(A), labels,
                       {str(k): int(n) for k, n in classes.items()}, int(A.shape[0]))


def merge_design(parts: Sequence[DesignStats | None]) -> DesignStats | None:
    """The statistics of every shard together (``None`` when no shard has any)."""
    found = [p for p in parts if p is not None]
    if not found:
        return None
    out = found[0]
    for p in found[1:]:
        out = out.merge(p)
    return out


def named(names: Sequence[str], *, limit: int = MAX_NAMED) -> str:
    """``'a', 'b', 'c' and 4 more``: the first ``limit`` names quoted, then how many others."""
    shown = ", ".join(repr(str(n)) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _groups(co: np.ndarray, active: np.ndarray) -> list[np.ndarray]:
    """The groups of active raters that share samples within and never across (connected components of the
    graph whose edges are pairs of different raters assigned at least one sample together), largest first."""
    meet = co.copy()
    np.fill_diagonal(meet, 0)
    idx = np.flatnonzero(active)
    sub = csr_matrix(meet[np.ix_(idx, idx)] > 0)
    n, comp = connected_components(sub, directed=False)
    groups = [idx[comp == g] for g in range(n)]
    return sorted(groups, key=lambda g: (-len(g), int(g[0])))


def design_warnings(stats: DesignStats | None) -> list[str]:
    """The warnings of a design (module docstring, 1.), each saying what is wrong and what to do."""
    if stats is None:
        return []
    raters = list(stats.raters)
    R = len(raters)
    if R < 2:
        return [f"only one rater ({named(raters)}): agreement needs at least two; give the fields of several "
                "raters (fields=[...]) or a rater_attr whose labels name several raters"]
    out = []
    own = np.diag(stats.co)
    idle = [raters[r] for r in np.flatnonzero(own == 0)]
    if idle:
        out.append(f"{len(idle)} rater(s) are assigned no sample of the view ({named(idle)}): they take no part; "
                   "check raters_field or compute on samples they labelled")
    active = own > 0
    groups = _groups(stats.co, active) if active.sum() >= 2 else []
    if groups and all(len(g) == 1 for g in groups):
        out.append(f"the raters never share a sample: no two of {named([raters[g[0]] for g in groups])} are "
                   "assigned the same sample, so no agreement between raters can be measured; assign some samples "
                   "to several raters (or check raters_field)")
    elif len(groups) > 1:
        text = "; ".join("{" + named([raters[r] for r in g], limit=3) + "}" for g in groups[:MAX_NAMED])
        more = f"; and {len(groups) - MAX_NAMED} more groups" if len(groups) > MAX_NAMED else ""
        out.append(f"the raters fall into {len(groups)} groups that never share a sample ({text}{more}): raters "
                   "of different groups are never compared, and corpus numbers mix separate studies; assign some "
                   "samples to raters of different groups")
    total = int(stats.labels.sum())
    if total == 0:
        out.append(f"no rater drew any label on the {stats.n_samples} samples: there is nothing to agree on; "
                   "check the rater fields or the view")
        return out
    silent = [raters[r] for r in np.flatnonzero(active & (stats.labels == 0))]
    if silent:
        out.append(f"{len(silent)} rater(s) drew no label on the samples assigned to them ({named(silent)}): "
                   "each of their samples counts as 'nothing there' (explicit absence); if they did not label "
                   "this field, leave them out of the rater fields")
    present = [c for c, n in sorted(stats.classes.items()) if n > 0]
    if len(present) == 1:
        out.append(f"every label has one class ({present[0]!r}): class agreement is not measured (classification "
                   "statistics are undefined), only whether and where objects were drawn")
    return out


def _undefined(value: Any) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and not math.isfinite(float(value)))


def undefined_warnings(summary: Mapping[str, Any], *, cards: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """A warning per headline number that is undefined (NaN or ``None``), with its reason: the numbers of
    the method's panel ``cards`` (their ``reason`` key), then every summary number with a ``<name>_reason``."""
    wanted: dict[str, tuple[str, str | None]] = {}
    for card in cards:
        wanted.setdefault(card["key"], (card.get("label") or card["key"], card.get("reason")))
    for name in summary:
        if f"{name}_reason" in summary and not name.endswith("_reason"):
            wanted.setdefault(name, (name, f"{name}_reason"))
    out = []
    for name, (label, reason_key) in wanted.items():
        if name in summary and _undefined(summary[name]):
            reason = summary.get(reason_key) if reason_key else None
            out.append(f"{label} is undefined: {reason}" if reason else
                       f"{label} is undefined (see the run's results for the samples and pairs involved)")
    return out


def run_warnings(design: DesignStats | None, summary: Mapping[str, Any], detail: Mapping[str, Any],
                 params: Mapping[str, Any], *, spec: Any = None, cards: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """Every warning of a run, in order (design, the method's own, undefined numbers), each once."""
    hook = getattr(spec, "warnings", None)
    found = design_warnings(design) + (list(hook(summary, detail, params)) if hook is not None else [])
    found += undefined_warnings(summary, cards=cards)
    return list(dict.fromkeys(found))
