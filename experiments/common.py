"""Shared helpers of the validation experiments (issue 6, item 4).

* :func:`lvis_path` / :func:`load_lvis`: the shared LVIS double-annotation
  subset, found relative to the repository (``../shared/data``); a clear exit
  message when it is absent.
* :func:`noisy_pair`: a 2-rater corpus, the reference rater (LVIS ``r1``)
  against one copy of it under an OT-paper perturbation (shift, drop, swap)
  at noise level ``γ``. The perturbations are coupled across ``γ`` (same
  seed and stream: :mod:`agreement.simulate.noise.perturbations`), so that a sample's
  scores over the levels measure the score, not the draw.
* :func:`select_raters`: the corpus restricted to some raters.
* :data:`METRICS` and :func:`evaluate`: the metric registry. Every shipped
  score is computed **per sample** (where the score has a per-sample form) and
  at **corpus** level from one call of each engine (OT, αOT, KαLOS,
  threshold baselines, geometry agreement).
* :func:`kendall_tau_b`, :func:`adjacent_order`: the OT paper's two
  monotonicity statistics.
* :func:`markdown_table`, :func:`fmt`: small reporting helpers.

Run the experiments from the repository root, e.g.
``.venv/bin/python experiments/run_all.py``. Nothing here imports FiftyOne.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # scripts run as ``python experiments/x.py``
    sys.path.insert(0, str(REPO))

from scipy.stats import kendalltau  # noqa: E402

from agreement.core.data import MultiRaterAnnotations  # noqa: E402
from agreement.io.coco import read_multi_rater_coco  # noqa: E402
from agreement.methods.kalos import grouped_alpha, kalos_alpha  # noqa: E402
from agreement.methods.ot import sample_ot_scores  # noqa: E402
from agreement.methods.ot.alpha_ot import alpha_ot  # noqa: E402
from agreement.methods.ot.baselines import threshold_baselines  # noqa: E402
from agreement.simulate.noise import perturbation_series  # noqa: E402

LVIS_NAME = "lvis_v1.0_val_doubly_annos_subset200.json"
LVIS_PATH = Path(__file__).resolve().parents[1].parent / "shared" / "data" / LVIS_NAME
RESULTS = REPO / "experiments" / "results"
REFERENCE = "r1"
NOISE_KINDS = ("shift", "drop", "swap")

#: OT pair-cost weight used throughout (the library's and the operator's default).
LAM = 0.5
#: Geometry agreement's pair budget: large enough that the chance baseline of
#: the 200 LVIS images is exact (every between-item set pair, about 0.4 s).
GEOMETRY_MAX_PAIRS = 20_000_000
#: αOT's chance budget: 39,800 cross pairs for 200 samples and 2 raters, exact.
ALPHA_OT_MAX_PAIRS = 100_000


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


def lvis_path() -> Path:
    """The shared LVIS file; exits with a clear message when it is absent."""
    if not LVIS_PATH.exists():
        raise SystemExit(
            f"shared data not found: {LVIS_NAME} is expected in ../shared/data beside the "
            f"repository (looked for {LVIS_PATH}). The experiments need it; see ../shared/data/README.md."
        )
    return LVIS_PATH


def load_lvis() -> MultiRaterAnnotations:
    """The shared LVIS subset (200 images, raters ``r1`` and ``r2``, relative boxes)."""
    return read_multi_rater_coco(lvis_path()).annotations


def select_raters(data: MultiRaterAnnotations, names: Sequence[str]) -> MultiRaterAnnotations:
    """The corpus restricted to the raters ``names`` (kept in sorted order)."""
    names = sorted(str(n) for n in names)
    missing = [n for n in names if n not in data.raters]
    if missing:
        raise ValueError(f"raters {missing} not in the corpus {list(data.raters)}")
    old = np.array([data.raters.index(n) for n in names], dtype=np.intp)
    new_of_old = np.full(data.num_raters, -1, np.intp)
    new_of_old[old] = np.arange(len(old))
    rows = np.flatnonzero(new_of_old[data.rater_index] >= 0)
    return MultiRaterAnnotations(
        sample_ids=data.sample_ids, raters=tuple(names), assigned=data.assigned[:, old],
        boxes=data.boxes[rows], labels=data.labels[rows], label_ids=data.label_ids[rows],
        sample_index=data.sample_index[rows], rater_index=new_of_old[data.rater_index[rows]],
        image_sizes=data.image_sizes, sample_names=data.sample_names,
    )


def noisy_pair(data: MultiRaterAnnotations, kind: str, gamma: float, seed: int = 0,
               rater: str = REFERENCE) -> MultiRaterAnnotations:
    """Reference rater vs a perturbed copy of it (raters ``"noisy"`` and ``rater``).

    The perturbation (:func:`agreement.simulate.noise.perturbation_series`) uses the
    stream ``kind`` and ``seed`` for every ``γ``: the boxes dropped at ``γ``
    are dropped at every larger ``γ``, shifts are stretched along fixed
    directions, swapped pairs are a prefix of those at a larger ``γ``.
    """
    return perturbation_series(data, kind, [gamma], seed=seed, rater=rater,
                               include_reference=True, names=["noisy"])


# --------------------------------------------------------------------------
# Metric registry
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """One shipped score.

    Attributes:
        key: short name used in tables and tests.
        label: the name in tables and plots.
        engine: which computation produces it.
        per_sample: whether the score has a per-sample form (else corpus only).
        responds: the OT-paper perturbations the score is *meant* to respond
            to (its mean must fall as γ rises). For the others it must only not
            rise. See :data:`RESPONSE_NOTES`.
        floor: the bottom of the score's useful range (chance level for a
            chance-corrected score, the theoretical minimum otherwise), for
            the "range used" of the full-range experiment.
        corpus_name: what the corpus-level value is.
    """

    key: str
    label: str
    engine: str
    per_sample: bool
    responds: frozenset
    floor: float
    corpus_name: str


def _m(key, label, engine, per_sample, responds, floor, corpus_name) -> Metric:
    return Metric(key, label, engine, per_sample, frozenset(responds), float(floor), corpus_name)


ALL = ("shift", "drop", "swap")
METRICS: tuple[Metric, ...] = (
    _m("ot_0.2", "OT score (β=0.2)", "ot_0.2", True, ALL, 0.8, "mean of per-sample OT scores"),
    _m("ot_0.5", "OT score (β=0.5)", "ot_0.5", True, ALL, 0.5, "mean of per-sample OT scores"),
    _m("ot_0.8", "OT score (β=0.8)", "ot_0.8", True, ALL, 0.2, "mean of per-sample OT scores"),
    _m("ot_oc_0.5", "OT score (OC-cost norm., β=0.5)", "ot_oc_0.5", True, ALL, 0.0,
       "mean of per-sample OT scores"),
    _m("alpha_ot", "αOT (β=0.5)", "alpha_ot", False, ALL, 0.0, "αOT = 1 − D_o/D_e"),
    _m("kalos", "KαLOS α", "kalos", True, ALL, 0.0, "global (pooled) α"),
    _m("sigma", "σ (Braylan)", "geometry", True, ("shift",), 0.05, "σ"),
    _m("distance_alpha", "distance α", "geometry", True, ("shift",), 0.0, "1 − mean(W)/mean(B)"),
    _m("ks", "KS (geometry)", "geometry", False, ("shift",), 0.0, "two-sided KS D"),
    _m("detection_alpha", "detection α", "geometry", True, ("drop",), 0.0, "1 − U_o/U_e"),
    _m("classification_alpha", "classification α", "geometry", False, ("swap",), 0.0,
       "nominal α of matched labels"),
    _m("f1", "F1@0.5", "baselines", True, ALL, 0.0, "micro F1"),
    _m("mean_iou", "mean IoU", "baselines", True, ("shift",), 0.5, "mean IoU of matched pairs"),
    _m("threshold_alpha", "threshold α", "baselines", True, ALL, 0.0, "pooled nominal α"),
)
METRIC = {m.key: m for m in METRICS}

#: Why a score is or is not expected to respond to a perturbation.
RESPONSE_NOTES: dict[str, str] = {
    "ot_0.2": "GIoU and label terms in the pair cost, dummy cost for unmatched boxes: responds to all three.",
    "ot_0.5": "as above.",
    "ot_0.8": "as above.",
    "ot_oc_0.5": "the OC-cost normalisation of the same transport (a matched pair paid once, divided by "
                 "the number of transport entries): responds to all three.",
    "alpha_ot": "chance-corrected OT cost: responds to all three.",
    "kalos": "units by IoU ≥ τ, then classes with no_object: a dropped box is a no_object value, "
             "a swapped label a class disagreement, a box shifted below τ splits into two units.",
    "sigma": "localisation of matched pairs only (class-agnostic matching): blind to swap by design; "
             "drop leaves the surviving matched pairs exact, so σ stays 1.",
    "distance_alpha": "as σ (mean matched distance): responds to shift only.",
    "ks": "as σ (distribution of matched distances): responds to shift only.",
    "detection_alpha": "share of unmatched annotations: responds to drop; class-agnostic (blind to swap); "
                       "the GIoU ≥ 0 matching keeps boxes shifted by up to half a box matched.",
    "classification_alpha": "labels of matched pairs only: responds to swap; blind to drop.",
    "f1": "class-aware IoU ≥ 0.5 matching: a dropped box, a swapped label or a shift below IoU 0.5 "
          "is a miss.",
    "mean_iou": "mean IoU over matched pairs only (class-aware): drop and swap leave the surviving "
                "pairs exact (IoU 1), so it responds to shift only.",
    "threshold_alpha": "class-agnostic IoU ≥ 0.5 matching, labels and no_object as values: responds "
                       "to all three.",
}


@dataclass
class Scores:
    """Every metric of one corpus: per-sample arrays (NaN where undefined) and corpus values."""

    per_sample: dict[str, np.ndarray] = field(default_factory=dict)
    corpus: dict[str, float] = field(default_factory=dict)
    sample_mean: dict[str, float] = field(default_factory=dict)


def _nanmean(x: np.ndarray) -> float:
    x = np.asarray(x, np.float64)
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else float("nan")


def _geometry(data):
    # Imported here so that the other experiments run while the geometry
    # module is being changed; it is pure (no FiftyOne).
    from agreement.methods.geometry_agreement import geometry_agreement

    return geometry_agreement(data, distance="giou", threshold=0.5, bootstrap=None,
                              max_pairs=GEOMETRY_MAX_PAIRS, seed=0)


def _geometry_per_sample(data, g) -> dict[str, np.ndarray]:
    """Per-sample forms of the geometry scores, against the corpus's chance baseline.

    * σ_s: share of sample ``s``'s within-item matched distances below the
      corpus cut-off ``q_p(B)``;
    * distance α_s: ``1 - mean(W_s) / mean(B)``;
    * detection α_s: ``1 - U_s / U_e`` with ``U_s`` the sample's share of
      unmatched annotations.
    """
    S = data.num_samples
    sigma = np.full(S, np.nan)
    if len(g.pair_rows):
        ps = data.sample_index[g.pair_rows[:, 0]]
        below = (g.pair_distance < g.between_quantile).astype(np.float64)
        cnt = np.bincount(ps, minlength=S)
        ok = cnt > 0
        sigma[ok] = np.bincount(ps, below, S)[ok] / cnt[ok]
    with np.errstate(invalid="ignore", divide="ignore"):
        dist_alpha = 1.0 - np.asarray(g.sample_distance, np.float64) / g.mean_between
        ann = np.asarray(g.sample_n_annotations, np.float64)
        u_s = np.where(ann > 0, np.asarray(g.sample_n_unmatched, np.float64) / np.where(ann > 0, ann, 1), np.nan)
        det = 1.0 - u_s / g.unmatched_between if g.unmatched_between > 0 else np.full(S, np.nan)
    return {"sigma": sigma, "distance_alpha": dist_alpha, "detection_alpha": det}


def evaluate(data: MultiRaterAnnotations, metrics: Iterable[str] | None = None,
             kalos_solver: str = "greedy", seed: int = 0) -> Scores:
    """Computes the chosen metrics (default: all of :data:`METRICS`) on a corpus.

    Each engine runs once: OT per β (λ = :data:`LAM`; also the OC-cost
    normalisation at β = 0.5), αOT (β = 0.5, exact
    chance baseline for 200 samples), KαLOS (box IoU, τ = 0.5, ψ_soft,
    ``kalos_solver``), threshold baselines (IoU 0.5, class-aware F1/mean IoU,
    class-agnostic α) and geometry agreement (GIoU distance, threshold 0.5,
    no bootstrap, exact chance baseline).

    Returns:
        :class:`Scores`: ``per_sample[key]`` (S,) for per-sample metrics,
        ``corpus[key]`` for every metric and ``sample_mean[key]`` (mean of the
        defined per-sample values) for per-sample metrics.
    """
    keys = [m.key for m in METRICS] if metrics is None else list(metrics)
    unknown = [k for k in keys if k not in METRIC]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; known: {list(METRIC)}")
    engines = {METRIC[k].engine for k in keys}
    out = Scores()
    S = data.num_samples
    for beta in (0.2, 0.5, 0.8):
        e = f"ot_{beta:g}"
        if e in engines:
            r = sample_ot_scores(data, lam=LAM, beta=beta, normalization="paper")
            out.per_sample[e] = np.asarray(r.mean, np.float64)
            out.corpus[e] = r.mean_score
    if "ot_oc_0.5" in engines:
        r = sample_ot_scores(data, lam=LAM, beta=0.5, normalization="oc_cost")
        out.per_sample["ot_oc_0.5"] = np.asarray(r.mean, np.float64)
        out.corpus["ot_oc_0.5"] = r.mean_score
    if "alpha_ot" in engines:
        r = alpha_ot(data, lam=LAM, beta=0.5, max_pairs=ALPHA_OT_MAX_PAIRS, seed=seed)
        out.corpus["alpha_ot"] = float(r.alpha)
    if "kalos" in engines:
        r = kalos_alpha(data, similarity="iou", tau=0.5, solver=kalos_solver, cost="soft")
        out.per_sample["kalos"] = np.asarray(r.alpha, np.float64)
        out.corpus["kalos"] = float(r.global_alpha)
    if "baselines" in engines:
        r = threshold_baselines(data, iou_threshold=0.5)
        out.per_sample["f1"] = np.asarray(r.sample_f1, np.float64)
        out.per_sample["mean_iou"] = np.asarray(r.sample_mean_iou, np.float64)
        out.corpus["f1"] = float(r.f1_micro)
        out.corpus["mean_iou"] = float(r.mean_iou)
        out.corpus["threshold_alpha"] = float(r.alpha.alpha)
        if r.unit_pair.size:
            group = r.pair_sample[r.unit_pair]
            a, *_ = grouped_alpha(r.unit_values, group, S)
            out.per_sample["threshold_alpha"] = np.asarray(a, np.float64)
        else:
            out.per_sample["threshold_alpha"] = np.full(S, np.nan)
    if "geometry" in engines:
        g = _geometry(data)
        out.corpus.update(
            sigma=g.sigma.value, distance_alpha=g.distance_alpha.value, ks=g.ks.value,
            detection_alpha=g.detection_alpha.value, classification_alpha=g.classification_alpha.value,
        )
        out.per_sample.update(_geometry_per_sample(data, g))
    out.per_sample = {k: v for k, v in out.per_sample.items() if k in keys}
    out.corpus = {k: v for k, v in out.corpus.items() if k in keys}
    out.sample_mean = {k: _nanmean(v) for k, v in out.per_sample.items()}
    return out


# --------------------------------------------------------------------------
# Monotonicity statistics
# --------------------------------------------------------------------------


def kendall_tau_b(levels: Sequence[float], scores: Sequence[float]) -> float:
    """Kendall's τb between noise level and **minus** the score (scipy).

    +1: the score falls strictly with every rise in noise; 0: no order;
    −1: it rises. Levels where the score is NaN are left out; NaN when fewer
    than two levels remain or the score is constant over them (τb is 0/0).
    """
    x = np.asarray(levels, np.float64)
    y = np.asarray(scores, np.float64)
    ok = ~np.isnan(y)
    if ok.sum() < 2 or np.ptp(y[ok]) == 0.0:
        return float("nan")
    return float(kendalltau(x[ok], -y[ok], variant="b").statistic)


def adjacent_order(scores: Sequence[float], tol: float = 1e-12) -> tuple[int, int, int]:
    """Counts of adjacent noise levels whose order the score keeps, ties, reverses.

    For consecutive levels ``k, k + 1`` (both defined): *kept* when
    ``s_{k+1} < s_k - tol``, *reversed* when ``s_{k+1} > s_k + tol``, else a tie.
    """
    y = np.asarray(scores, np.float64)
    a, b = y[:-1], y[1:]
    ok = ~np.isnan(a) & ~np.isnan(b)
    d = b[ok] - a[ok]
    return int(np.sum(d < -tol)), int(np.sum(np.abs(d) <= tol)), int(np.sum(d > tol))


def per_sample_tau(levels: Sequence[float], matrix: np.ndarray) -> np.ndarray:
    """τb of every sample: ``matrix`` is ``(levels, samples)``."""
    return np.array([kendall_tau_b(levels, matrix[:, s]) for s in range(matrix.shape[1])])


def per_sample_adjacent(matrix: np.ndarray) -> tuple[int, int, int]:
    """Pooled adjacent-order counts over every sample of a ``(levels, samples)`` matrix."""
    kept = tie = rev = 0
    for s in range(matrix.shape[1]):
        k, t, r = adjacent_order(matrix[:, s])
        kept, tie, rev = kept + k, tie + t, rev + r
    return kept, tie, rev


# --------------------------------------------------------------------------
# The suite's monotonicity check (tests/test_monotonicity.py, run_all.py)
# --------------------------------------------------------------------------

#: Noise levels of the monotonicity check (few, so that the test stays fast).
MONO_LEVELS = (0.0, 0.1, 0.25, 0.5)
#: Largest tolerated rise of a score's mean between two adjacent levels.
MONO_TOL = 0.01
#: Smallest fall from γ = 0 to the largest γ of a score meant to respond.
MONO_MIN_DROP = 0.02
#: Known failures of the check, with the reason (reported, never hidden).
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("mean_iou", "shift"): (
        "mean IoU averages matched pairs only: at large shifts the worst pairs fall below IoU 0.5, "
        "leave the average, and the mean rises again (survivorship)"
    ),
}


def monotonicity_curves(data: MultiRaterAnnotations, levels: Sequence[float] = MONO_LEVELS,
                        seed: int = 0) -> dict:
    """``{(kind, "corpus" | "sample_mean"): {metric: values over levels}}`` on ``r1`` vs perturbed."""
    out: dict = {}
    for kind in NOISE_KINDS:
        corpus = {m.key: [] for m in METRICS}
        smean = {m.key: [] for m in METRICS if m.per_sample}
        for g in levels:
            sc = evaluate(noisy_pair(data, kind, g, seed=seed))
            for k in corpus:
                corpus[k].append(sc.corpus[k])
            for k in smean:
                smean[k].append(sc.sample_mean[k])
        out[(kind, "corpus")] = {k: np.asarray(v) for k, v in corpus.items()}
        out[(kind, "sample_mean")] = {k: np.asarray(v) for k, v in smean.items()}
    return out


def monotonicity_verdict(key: str, kind: str, y: np.ndarray, levels: Sequence[float] = MONO_LEVELS,
                         tol: float = MONO_TOL, min_drop: float = MONO_MIN_DROP) -> tuple[bool, str]:
    """Whether a score's curve over the noise levels passes the check, and why not.

    Passes when the value is defined at every level, never rises by more than
    ``tol`` between adjacent levels, and (when the score is meant to respond
    to ``kind``) falls by at least ``min_drop`` from the first to the last level.
    """
    m = METRIC[key]
    y = np.asarray(y, np.float64)
    if np.isnan(y).any():
        return False, f"{m.label} undefined at some level under {kind}: {np.round(y, 4).tolist()}"
    rises = np.diff(y)
    w = int(np.argmax(rises))
    if rises[w] > tol:
        return False, (f"{m.label} rises by {rises[w]:.4f} from γ={levels[w]:g} to γ={levels[w + 1]:g} "
                       f"under {kind}: {np.round(y, 4).tolist()}")
    if kind in m.responds and y[0] - y[-1] < min_drop:
        return False, (f"{m.label} is meant to respond to {kind} but falls only by {y[0] - y[-1]:.4f}: "
                       f"{np.round(y, 4).tolist()}")
    return True, ""


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def fmt(x, digits: int = 3) -> str:
    """A number for a table (``—`` for NaN/None)."""
    if x is None:
        return "—"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    if np.isnan(x):
        return "—"
    return f"{x:.{digits}f}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence], align: str | None = None) -> str:
    """A GitHub Markdown table (cells converted with ``str``)."""
    header = [str(h) for h in header]
    lines = ["| " + " | ".join(header) + " |"]
    al = align or ("l" + "r" * (len(header) - 1))
    lines.append("|" + "|".join(":---" if a == "l" else "---:" for a in al) + "|")
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.rstrip() + "\n", encoding="utf-8")
    return path


def pyplot():
    """matplotlib's pyplot on the Agg canvas (no display; imported only when plotting)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def savefig(fig, path: Path, dpi: int = 90) -> Path:
    """Saves a figure as a small PNG (no software/date metadata) and closes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    pyplot().close(fig)
    return path


def rel(path: Path) -> str:
    """``path`` relative to the repository (for printing and Markdown)."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)
