"""Intra-annotator consistency (:mod:`agreement.methods.kalos.diagnostics`): one rater annotating the same images
in several sessions, each session treated as a rater; nominal α between sessions (KαLOS,
``alpha = 1 - D_o / D_e``) measures self-consistency.

Reference: T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus" (intra-annotator agreement).

This module does not import FiftyOne.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from agreement.core.data import MultiRaterAnnotations
from agreement.geometry.similarity import SimilarityOptions
from agreement.methods.kalos import NO_OBJECT, KalosResult, kalos_alpha
from agreement.methods.kalos.candidates import SimilarityFn

# --------------------------------------------------------------------------
# Intra-annotator consistency
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class IntraConsistency:
    """Agreement of one rater with themself across annotation sessions.

    Attributes:
        rater (str): The rater.
        sessions (tuple of str): The sessions, the "raters" of ``result``.
        result (KalosResult): KαLOS over the sessions (per-sample α, units, global α, ...).
    """

    rater: str
    sessions: tuple
    result: KalosResult

    @property
    def global_alpha(self) -> float:
        """α of the pooled matrix of the sessions (``result.global_alpha``)."""
        return self.result.global_alpha

    @property
    def mean_alpha(self) -> float:
        """Mean per-sample α over the samples where it is defined (``result.mean_alpha``)."""
        return self.result.mean_alpha

    @property
    def n_undefined(self) -> int:
        """Samples whose α is undefined (``result.n_undefined``)."""
        return self.result.n_undefined


def sessions_as_raters(
    data: MultiRaterAnnotations,
    sessions: ArrayLike,
    rater: str,
    session_assigned: Mapping[Hashable, ArrayLike] | None = None,
) -> MultiRaterAnnotations:
    """One rater's sessions as the raters of a new corpus.

    Args:
        data (MultiRaterAnnotations): The corpus, with ``rater`` among its raters.
        sessions (array-like of shape (N,)): The session (any hashable, e.g. 1, 2 or "2024-05") of each annotation row.
        rater (str): Whose sessions to compare.
        session_assigned (mapping, optional): ``{session: (S,) bool}``: the samples each session covered. By
            default every session of the rater (every session label found on
            their annotations) covered every sample the rater is assigned to, so
            a session without annotations on such a sample is explicit absence
            ("nothing here"). Pass this mapping when sessions covered different
            samples, or to name a session that drew nothing at all.

    Returns:
        MultiRaterAnnotations: Same samples; raters are ``str(session)``; the rows are ``rater``'s
            annotations (boxes, labels, ids, polygons kept).
    """
    if rater not in data.raters:
        raise ValueError(f"unknown rater {rater!r}; the raters are {list(data.raters)}")
    sessions = np.asarray(sessions, dtype=object).reshape(-1)
    if len(sessions) != len(data):
        raise ValueError(f"sessions has {len(sessions)} entries for {len(data)} annotations")
    r = data.raters.index(rater)
    rows = np.flatnonzero(data.rater_index == r)
    if any(v is None for v in sessions[rows]):
        bad = int(rows[[v is None for v in sessions[rows]]][0])
        sample_names = data.sample_ids if data.sample_names is None else data.sample_names
        raise ValueError(
            f"annotation {bad} of rater {rater!r} on sample {sample_names[data.sample_index[bad]]!r} has no session"
        )
    labels = {str(v) for v in sessions[rows]}
    if session_assigned is not None:
        labels |= {str(k) for k in session_assigned}
    names = tuple(sorted(labels))
    if not names:
        raise ValueError(f"rater {rater!r} has no annotations and no session_assigned: no session to compare")
    if len({str(k) for k in (session_assigned or {})}) != len(session_assigned or {}):
        raise ValueError("session_assigned has two sessions with the same name")
    S = data.num_samples
    assigned = np.zeros((S, len(names)), dtype=bool)
    if session_assigned is None:
        assigned[:] = data.assigned[:, r][:, None]
    else:
        given = {str(k): np.asarray(v, dtype=bool).reshape(-1) for k, v in session_assigned.items()}
        for k, name in enumerate(names):
            if name not in given:
                raise ValueError(f"session {name!r} of rater {rater!r} is missing from session_assigned")
            if len(given[name]) != S:
                raise ValueError(f"session_assigned[{name!r}] has {len(given[name])} entries for {S} samples")
            assigned[:, k] = given[name]
    index = {n: k for k, n in enumerate(names)}
    s_rater = np.fromiter((index[str(v)] for v in sessions[rows]), dtype=np.intp, count=len(rows))
    off = ~assigned[data.sample_index[rows], s_rater]
    if np.any(off):
        bad = int(rows[np.flatnonzero(off)[0]])
        sample_names = data.sample_ids if data.sample_names is None else data.sample_names
        raise ValueError(
            f"annotation {bad} of rater {rater!r} on sample {sample_names[data.sample_index[bad]]!r} is in "
            f"session {str(sessions[bad])!r}, which session_assigned says did not cover that sample"
        )
    return MultiRaterAnnotations(
        sample_ids=data.sample_ids,
        raters=names,
        assigned=assigned,
        boxes=data.boxes[rows],
        labels=data.labels[rows],
        label_ids=data.label_ids[rows],
        sample_index=data.sample_index[rows],
        rater_index=s_rater,
        image_sizes=data.image_sizes,
        polygons=[data.polygons[i] for i in rows] if data.polygons is not None else None,
        sample_names=data.sample_names,
    )


def session_consistency(
    sessions_data: MultiRaterAnnotations,
    similarity: str | SimilarityFn = "iou",
    tau: float = 0.5,
    solver: str = "greedy",
    cost: str = "soft",
    rater: str = "",
    no_object: str = NO_OBJECT,
    *,
    options: SimilarityOptions | None = None,
) -> IntraConsistency:
    """Intra-annotator consistency: KαLOS α between one rater's sessions.

    ``sessions_data`` is a corpus whose "raters" are one rater's annotation
    sessions of the same samples (e.g. one label field per session, or
    :func:`sessions_as_raters`). α (at most 1; 1 perfectly consistent, 0 no
    more consistent than chance) is computed as in
    :func:`agreement.methods.kalos.kalos_alpha` (``options``: the 3D similarities' parameters, as there).

    Returns:
        IntraConsistency: The rater, the sessions and KαLOS over them.

    References:
        T. Tschirschwitz and V. Rodehorst, "KαLOS finds Consensus" (intra-annotator
        agreement).
    """
    res = kalos_alpha(sessions_data, similarity=similarity, tau=tau, solver=solver, cost=cost, no_object=no_object,
                      options=options)
    return IntraConsistency(rater, tuple(sessions_data.raters), res)


def intra_annotator_consistency(
    data: MultiRaterAnnotations,
    sessions: ArrayLike,
    raters: Sequence[str] | None = None,
    session_assigned: Mapping[str, Mapping[Hashable, ArrayLike]] | None = None,
    similarity: str | SimilarityFn = "iou",
    tau: float = 0.5,
    solver: str = "greedy",
    cost: str = "soft",
    no_object: str = NO_OBJECT,
    *,
    options: SimilarityOptions | None = None,
) -> dict[str, IntraConsistency]:
    """Intra-annotator consistency of every rater who annotated in two or more sessions.

    Args:
        data (MultiRaterAnnotations): The annotations, every session's included.
        sessions (array-like of shape (N,)): Session of each annotation row.
        raters (sequence of str, optional): Whom to evaluate (default: every rater with two or more sessions).
        session_assigned (mapping, optional): ``{rater: {session: (S,) bool}}``, see :func:`sessions_as_raters`.
        similarity: As in :func:`agreement.methods.kalos.kalos_alpha`.
        tau: As in :func:`agreement.methods.kalos.kalos_alpha`.
        solver: As in :func:`agreement.methods.kalos.kalos_alpha`.
        cost: As in :func:`agreement.methods.kalos.kalos_alpha`.
        no_object: As in :func:`agreement.methods.kalos.kalos_alpha`.
        options: As in :func:`agreement.methods.kalos.kalos_alpha`.

    Returns:
        dict: ``{rater: IntraConsistency}``.
    """
    sessions = np.asarray(sessions, dtype=object).reshape(-1)
    if len(sessions) != len(data):
        raise ValueError(f"sessions has {len(sessions)} entries for {len(data)} annotations")
    if raters is None:
        raters = []
        for r, name in enumerate(data.raters):
            given = (session_assigned or {}).get(name, {})
            found = {str(v) for v in sessions[data.rater_index == r]} | {str(k) for k in given}
            if len(found) >= 2:
                raters.append(name)
    out = {}
    for name in raters:
        sd = sessions_as_raters(data, sessions, name, (session_assigned or {}).get(name))
        if sd.num_raters < 2:
            raise ValueError(f"rater {name!r} has only one session ({list(sd.raters)}): nothing to compare")
        out[name] = session_consistency(sd, similarity, tau, solver, cost, rater=name, no_object=no_object,
                                          options=options)
    return out
