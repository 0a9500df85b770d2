"""Classes (nominal, ordinal, interval, ratio), tag sets and class consensus, through the pure library
(:mod:`agreement.methods.classes`, :mod:`agreement.methods.consensus.class_labels`) on the class simulator
(:mod:`agreement.simulate.noise.class_raters`).

Designs (codes ``(S, R)``, ``-1`` missing):

* homogeneous chance: 300 items, 3 raters, 4 equally likely classes, each rater a uniform spammer
  (independent columns of one generator), 5 seeds;
* heterogeneous chance: 400 items, a crowd of 200 raters, each item rated by 2–5 of them drawn without
  replacement, every answer drawn from the rare-class prior 0.9/0.05/0.03/0.02, 5 seeds;
* monotone: true classes, 3 raters of accuracy 1.0, 0.9, 0.7, 0.5, 0.3 (coupled draws: one seed);
* invariant: accuracy 0.7, items and raters permuted, classes renamed as the level allows.
"""

from __future__ import annotations

import math

import numpy as np

from agreement.methods.classes import class_alpha, masi_alpha
from agreement.methods.consensus.class_headline import class_consensus_headline
from agreement.methods.consensus.class_labels import class_consensus
from agreement.simulate.noise.class_raters import noisy_confusion, random_truth, simulate_class_raters, uniform_spammer
from validation_matrix import Cell
from validation_matrix.vc_common import (
    chance_cell,
    degenerate_cell,
    identical_cell,
    invariant_cell,
    monotone_cell,
    na_cell,
)

K = 4
SEEDS = (0, 1, 2, 3, 4)
RARE = np.array([0.9, 0.05, 0.03, 0.02])
ACCURACIES = (1.0, 0.9, 0.7, 0.5, 0.3)
LEVELS = ("nominal", "ordinal", "interval", "ratio")
ALPHA = "Class agreement: α"
CONSENSUS = {"majority": "majority vote", "dawid_skene": "Dawid–Skene", "mace": "MACE"}


def crowd_assignment(S: int, R: int, lo: int, hi: int, rng: np.random.Generator) -> np.ndarray:
    """``(S, R)`` bool: each item rated by ``lo..hi`` raters drawn without replacement (vectorised)."""
    m = rng.integers(lo, hi + 1, S)
    rank = np.argsort(rng.random((S, R)), axis=1).argsort(axis=1)
    return rank < m[:, None]


def random_codes(seed: int, heterogeneous: bool) -> np.ndarray:
    """Independent random raters (module docstring)."""
    rng = np.random.default_rng(seed)
    if not heterogeneous:
        return simulate_class_raters(random_truth(300, K, seed=seed), np.stack([uniform_spammer(K)] * 3),
                                     seed=seed + 100)
    S, R = 400, 200
    codes = rng.choice(K, p=RARE, size=(S, R))
    return np.where(crowd_assignment(S, R, 2, 5, rng), codes, -1)


def noisy_codes(accuracy: float, S: int = 300, R: int = 3, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """True classes and ``R`` raters of one accuracy (coupled across accuracies for one seed)."""
    truth = random_truth(S, K, seed=seed)
    return truth, simulate_class_raters(truth, np.stack([noisy_confusion(K, accuracy)] * R), seed=seed + 1)


def level_alpha(level: str):
    """``codes -> (alpha, reason)`` at ``level`` (ratio and interval: the codes' values 1..K)."""
    def stat(codes: np.ndarray, values: np.ndarray | None = None) -> tuple[float, str]:
        if level in ("interval", "ratio"):
            values = np.arange(1.0, K + 1) if values is None else values
        try:
            r = class_alpha(codes, level=level, values=values, n_classes=max(K, int(codes.max()) + 1))
        except (ValueError, TypeError) as e:
            return math.nan, f"error: {e}"
        return float(r.alpha), r.reason
    return stat


def degenerate_codes() -> dict[str, np.ndarray]:
    """One design per degenerate property (careful raters: accuracy 0.8)."""
    _, careful = noisy_codes(0.8, S=60)
    S = len(careful)
    never = np.full((S, 2), -1)
    never[: S // 2, 0] = careful[: S // 2, 0]
    never[S // 2:, 1] = careful[S // 2:, 1]
    empty = careful.copy()
    empty[:, 2] = -1
    return {"one_rater": careful[:, :1], "never_meet": never, "empty_rater": empty,
            "all_empty": np.full((S, 3), -1), "single_class": np.zeros((S, 3), dtype=np.int64)}


def _alpha_cells(kind: str, stat, renamed) -> list[Cell]:
    """Every property of one α (``stat(codes) -> (alpha, reason)``); ``renamed(codes)`` the renaming
    variant's ``(alpha, reason)``."""
    truth, _ = noisy_codes(1.0)
    out = [identical_cell(ALPHA, kind, stat(np.stack([truth] * 3, 1)))]
    for prop, het in (("chance_homogeneous", False), ("chance_heterogeneous", True)):
        out.append(chance_cell(ALPHA, kind, prop, [stat(random_codes(s, het))[0] for s in SEEDS]))
    out.append(monotone_cell(ALPHA, kind, ACCURACIES, [stat(noisy_codes(a)[1])[0] for a in ACCURACIES],
                             "rater accuracy"))
    _, codes = noisy_codes(0.7)
    rng = np.random.default_rng(3)
    base = stat(codes)[0]
    variants = {"items permuted": stat(codes[rng.permutation(len(codes))])[0],
                "raters permuted": stat(codes[:, rng.permutation(codes.shape[1])])[0],
                "classes renamed": renamed(codes)[0]}
    out.append(invariant_cell(ALPHA, kind, base, variants))
    for prop, codes in degenerate_codes().items():
        out.append(degenerate_cell(ALPHA, kind, prop, stat(codes), need_none=prop in ("one_rater", "never_meet"),
                                   ceiling=stat(codes[:, :2])[0] if prop == "empty_rater" else None))
    return out


def class_alpha_cells() -> list[Cell]:
    """``Class agreement: α`` on classes at every level."""
    perm = np.array([2, 0, 3, 1])
    out: list[Cell] = []
    for level in LEVELS:
        stat = level_alpha(level)
        if level == "nominal":
            renamed = lambda c: stat(np.where(c >= 0, perm[np.maximum(c, 0)], -1))  # noqa: E731, B023
        elif level == "ordinal":  # unused classes interleaved: ranks kept, codes renamed
            renamed = lambda c: stat(np.where(c >= 0, 2 * c, -1))  # noqa: E731, B023
        elif level == "interval":  # an affine change of the values
            renamed = lambda c: stat(c, 3.0 * np.arange(1.0, K + 1) + 7.0)  # noqa: E731, B023
        else:  # a change of unit
            renamed = lambda c: stat(c, 3.0 * np.arange(1.0, K + 1))  # noqa: E731, B023
        out += _alpha_cells(f"classes ({level})", stat, renamed)
    return out


# ----------------------------------------------------------------------------- tag sets (MASI α)

def _masi(present: np.ndarray, rated: np.ndarray) -> tuple[float, str]:
    r = masi_alpha(present, rated)
    return float(r.alpha), r.reason


def tag_cells() -> list[Cell]:
    """``Class agreement: α`` on tag sets (MASI α). Random tag sets: each tag present with its own
    probability, independently per rater; noise flips each tag with probability p (coupled uniforms)."""
    kind = "tag sets (MASI α)"
    S, R, T = 300, 3, 5
    rng = np.random.default_rng(11)
    truth = rng.random((S, T)) < 0.3
    rated = np.ones((S, R), bool)
    out = [identical_cell(ALPHA, kind, _masi(np.stack([truth] * R, 1), rated))]
    for prop, het in (("chance_homogeneous", False), ("chance_heterogeneous", True)):
        vals = []
        for s in SEEDS:
            g = np.random.default_rng(200 + s)
            if het:
                Sh, Rh = 400, 200
                p = np.array([0.5, 0.1, 0.05, 0.03, 0.02])
                present = g.random((Sh, Rh, T)) < p
                asg = crowd_assignment(Sh, Rh, 2, 5, g)
                vals.append(_masi(present & asg[..., None], asg)[0])
            else:
                vals.append(_masi(g.random((S, R, T)) < 0.3, rated)[0])
        out.append(chance_cell(ALPHA, kind, prop, vals))
    u = np.random.default_rng(12).random((S, R, T))
    flips = (0.0, 0.05, 0.1, 0.2, 0.4)
    noisy = lambda p: truth[:, None, :] ^ (u < p)  # noqa: E731
    out.append(monotone_cell(ALPHA, kind, flips, [_masi(noisy(p), rated)[0] for p in flips], "tag flips"))
    x = noisy(0.1)
    base = _masi(x, rated)[0]
    out.append(invariant_cell(ALPHA, kind, base, {
        "items permuted": _masi(x[rng.permutation(S)], rated)[0],
        "raters permuted": _masi(x[:, rng.permutation(R)], rated)[0],
        "tags renamed": _masi(x[:, :, rng.permutation(T)], rated)[0]}))
    careful = noisy(0.05)[:60]
    r60 = rated[:60]
    never_r = np.zeros((60, 2), bool)
    never_r[:30, 0] = never_r[30:, 1] = True
    empty_r = r60.copy()
    designs = {"one_rater": (careful[:, :1], r60[:, :1]), "never_meet": (careful[:, :2] & never_r[..., None], never_r),
               "empty_rater": (np.concatenate([careful[:, :2], np.zeros((60, 1, T), bool)], 1), empty_r),
               "all_empty": (np.zeros((60, R, T), bool), r60),
               "single_class": (np.ones((60, R, 1), bool), r60)}
    for prop, (present, rt) in designs.items():
        out.append(degenerate_cell(ALPHA, kind, prop, _masi(present, rt),
                                   need_none=prop in ("one_rater", "never_meet"),
                                   ceiling=_masi(present[:, :2], rt[:, :2])[0] if prop == "empty_rater" else None))
    return out


# ----------------------------------------------------------------------------- class consensus

def consensus_headline(codes: np.ndarray, method: str) -> tuple[float, float, str, str]:
    """The run's headline (:func:`agreement.methods.consensus.class_headline.class_consensus_headline`, which
    the bridge writes): ``agreement``, ``mean_confidence`` and the reason of each (with any warning)."""
    res = class_consensus(codes, max(int(codes.max()) + 1, 1), method=method, seed=0)
    head = class_consensus_headline(codes, res.labels, res.confidence)
    extra = res.warning or ("no rater gave a class" if not (codes >= 0).any() else "")
    reasons = [" ".join(x for x in (r, extra) if x) for r in (head.agreement_reason, head.mean_confidence_reason)]
    return head.agreement, head.mean_confidence, reasons[0], reasons[1]


#: Why the mean confidence of a class consensus is shown but not judged monotone.
CONFIDENCE_NOT_MONOTONE = ("the consensus confidence is the fitted model's posterior, not an agreement statistic: "
                           "with 3 raters near chance a maximum-likelihood fit can trust one rater entirely, and "
                           "the confidence rises again (documented: docs/method-consensus.md, 'What the "
                           "confidence means'); the agreement row is the one judged")


def consensus_cells() -> list[Cell]:
    """``Class consensus: agreement`` and ``Class consensus: mean confidence`` for each consensus method."""
    out: list[Cell] = []
    chance_why = ("not chance-corrected: the share of votes equal to the consensus (and its posterior) is at "
                  "least 1/m on an item of m votes whatever the raters do; measured at chance: {v}")
    for method, name in CONSENSUS.items():
        kind = f"classes, {name}"
        truth, _ = noisy_codes(1.0)
        ident = consensus_headline(np.stack([truth] * 3, 1), method)
        chance = {het: [consensus_headline(random_codes(s, het), method) for s in SEEDS[:2]] for het in (False, True)}
        mono = [consensus_headline(noisy_codes(a)[1], method) for a in ACCURACIES]
        _, codes = noisy_codes(0.7)
        rng = np.random.default_rng(5)
        perm = np.array([2, 0, 3, 1])
        variants = {"items permuted": codes[rng.permutation(len(codes))],
                    "raters permuted": codes[:, rng.permutation(3)],
                    "classes renamed": np.where(codes >= 0, perm[np.maximum(codes, 0)], -1)}
        base = consensus_headline(codes, method)
        vh = {k: consensus_headline(c, method) for k, c in variants.items()}
        degen = {p: consensus_headline(c, method) for p, c in degenerate_codes().items()}
        for i, stat in enumerate(("agreement", "mean confidence")):
            m = f"Class consensus: {stat}"
            out.append(identical_cell(m, kind, (ident[i], ident[2 + i])))
            for prop, het in (("chance_homogeneous", False), ("chance_heterogeneous", True)):
                v = np.mean([c[i] for c in chance[het]])
                out.append(na_cell(m, kind, prop, chance_why.format(v=f"{v:.3f}"), f"{v:.3f}"))
            if stat == "mean confidence":  # the model's posterior, not an agreement statistic: shown, not judged
                out.append(na_cell(m, kind, "monotone", CONFIDENCE_NOT_MONOTONE,
                                   " → ".join(f"{x[i]:.2f}" for x in mono)))
            else:
                out.append(monotone_cell(m, kind, ACCURACIES, [x[i] for x in mono], "rater accuracy"))
            out.append(invariant_cell(m, kind, base[i], {k: x[i] for k, x in vh.items()},
                                      {k: 1e-6 for k in vh}, "EM stops at its tolerance"))
            for prop, got in degen.items():
                if prop == "single_class":
                    v = got[i]
                    ok = v >= 1 - 1e-6
                    out.append(Cell(m, kind, prop, f"{v:.3f}", ok, "unanimous raters, one class: the share of "
                                    "agreeing votes and the posterior are 1 (documented; not chance-corrected)"
                                    if ok else "unanimous raters should give 1"))
                    continue
                out.append(degenerate_cell(m, kind, prop, (got[i], got[2 + i]),
                                           need_none=prop in ("one_rater", "never_meet")))
    return out


def cells() -> list[Cell]:
    """Every cell of classes, tag sets and class consensus."""
    return class_alpha_cells() + tag_cells() + consensus_cells()
