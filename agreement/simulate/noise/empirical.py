"""The empirical noise generator of KαLOS: simulated raters with real raters' errors.

Starting from a reference annotation set (one rater), each simulated rater is
produced per sample by four stages in strict priority. Every reference box is
*clean* until a stage consumes it; each stage draws its errors only among the
boxes still clean, so an earlier error type takes precedence over a later one.

With ``n`` the number of reference boxes of the sample and ``λ >= 0`` the
*magnitude*, every rate is scaled as ``p = min(1, p_base · λ)`` and a stage
asks for ``Binomial(n, p)`` errors (so at ``λ = 1`` the expected count is the
fitted rate times ``n``):

1. **Unmatched instances.** False negatives: ``Binomial(n, p_FN)`` clean boxes
   are removed. False positives: ``Binomial(n, p_FP)`` new boxes are injected
   (size ``exp(N(μ_s, σ_s))`` as relative ``sqrt(w h)``, aspect
   ``exp(N(μ_a, σ_a))`` as ``w / h``, placed uniformly inside the image, with
   the class of a random reference box of the sample); they skip the later
   stages.
2. **Fragmentation and combination.** Fragmentation: ``Binomial(n, p_frag)``
   clean boxes are each split along their longer side into
   ``k = 2 + Poisson(μ_frag)`` pieces (piece lengths ``Dirichlet(2, ..., 2)``),
   keeping the class. Combination: ``Binomial(n, p_comb)`` groups, each a
   random clean box merged with its ``g - 1`` nearest clean boxes of the same
   class (``g = 2 + Poisson(μ_comb)``, fewer if fewer are left) into their
   enclosing box.
3. **Category mistakes.** ``Binomial(n, p_cat)`` clean boxes get another class,
   drawn from the row of the fitted confusion table for their class (counts
   ``C[c][c']``, ``P(c' | c) ∝ C[c][c']``); a class absent from the table
   falls back to the reference's class frequencies (without ``c``). A
   misclassified box is then moved with the *misclassified* localisation
   profile.
4. **Localisation shift** of every box still clean, with residuals
   ``Δcx / w``, ``Δcy / h``, ``log(w' / w)``, ``log(h' / h)`` drawn
   independently from the fitted Student's t distributions (``loc + scale ·
   T_df``) and multiplied by ``λ``. The draws are restricted, by rejection, to
   the region the fit could observe (IoU with the source box ``>= t_fit``,
   the profile's IoU threshold, before scaling by ``λ``), so that a profile
   fitted at IoU 0.5 reproduces at ``λ = 1`` the residuals it was fitted on;
   at ``λ > 1`` shifted boxes can leave that region and stop matching.

At ``λ = 0`` every simulated rater is an exact copy of the reference. The
generator acts on boxes and labels only (polygons, masks and keypoints of the
reference are not carried over); a derived box keeps the ``label_id`` of its
source reference box (``None`` for a false positive).

**Cannibalisation.** A stage whose sampled errors exceed the clean boxes it
can use (no clean box left to fragment, no clean box with a clean same-class
neighbour to combine, no clean box with another class available) counts the
surplus as *cannibalised*; the report gives the count per stage. It rises with
``λ``, as earlier stages consume more of the reference.

**Schools of thought.** A :class:`School` is a group of simulated raters that
share a systematic bias on top of their independent noise: a fixed residual
offset added to every shifted box (not scaled by ``λ``) and a fixed class
relabelling (a class map, drawn once per school from the confusion table, or
given) applied to the clean boxes of the mapped classes before stage 3.

Randomness: each (rater, sample) cell draws from a generator seeded by
``(seed, crc32(rater name), crc32(str(sample_id)))``, a school's shared draws
by ``(seed, crc32("school:" + name), ...)``, so results do not depend on the
order of samples and adding a rater leaves the others unchanged.

References: T. Tschirschwitz and V. Rodehorst, "KαLOS" (the empirical noise
generator and its fitted profiles; localisation first, classification
second); A. Prokhorov and D. Kalinin, "Quantifying Annotation Agreement in
Object Detection with Optimal Transport" (validation by controlled noise).

This module does not import FiftyOne.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple, Sequence

import numpy as np

from agreement.core.data import MultiRaterAnnotations
from agreement.simulate.noise.perturbations import (
    assemble_raters,
    cell_rng,
    check_level,
    check_seed,
    crc32_text,
    reference_rater_index,
)
from agreement.simulate.noise.profile import (
    PROFILES_DIR,  # noqa: F401  (reachable here too: the tests read the shipped profiles' folder)
    STAGES,
    FalsePositiveShape,
    LocalisationProfile,
    NoiseProfile,
    ProfileError,
    StudentT,
    builtin_profiles,
    load_profile,
)
from agreement.simulate.noise.stages import (
    ClassSampler,
    NoiseModel,
    SchoolBias,
    simulate_cell,
)

__all__ = [
    "STAGES",
    "ProfileError",
    "StudentT",
    "LocalisationProfile",
    "FalsePositiveShape",
    "NoiseProfile",
    "School",
    "SimulationReport",
    "Simulation",
    "builtin_profiles",
    "load_profile",
    "simulate",
]


# --------------------------------------------------------------------------
# Schools
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class School:
    """A group of simulated raters sharing a systematic bias.

    Attributes:
        name: the school's name; its raters are named ``f"{name}_{j}"``.
        size: number of raters in the school (``>= 1``).
        offset: ``(dx, dy, dw, dh)`` added to the residual of every shifted
            box of every member (box sizes for ``dx, dy``, log scale for
            ``dw, dh``), not scaled by ``λ``.
        class_map_rate: share of the reference classes the school relabels
            systematically; the map is drawn once per school (seeded by the
            school's name), the new class from the confusion table.
        class_map: an explicit ``{class: new class}`` map (used instead of
            drawing one when given).
    """

    name: str
    size: int
    offset: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    class_map_rate: float = 0.0
    class_map: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("a school needs a non-empty name")
        if isinstance(self.size, bool) or not isinstance(self.size, (int, np.integer)) or self.size < 1:
            raise ValueError(f"school {self.name!r}: size must be an integer >= 1, got {self.size!r}")
        off = tuple(float(v) for v in self.offset)
        if len(off) != 4 or not all(math.isfinite(v) for v in off):
            raise ValueError(f"school {self.name!r}: offset must be 4 finite numbers (dx, dy, dw, dh), got {self.offset!r}")
        object.__setattr__(self, "offset", off)
        check_level(self.class_map_rate, f"school {self.name!r}: class_map_rate", upper=1.0)
        if self.class_map is not None:
            cm = {str(k): str(v) for k, v in dict(self.class_map).items()}
            object.__setattr__(self, "class_map", cm)


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SimulationReport:
    """What the generator did.

    Attributes:
        magnitude: ``λ``.
        seed: the seed.
        reference_rater: the reference rater's name.
        raters: the simulated raters' names (generation order).
        schools: ``{school: rater names}``.
        school_class_maps: ``{school: {class: new class}}`` actually used.
        rates: ``{stage: min(1, p_base · λ)}``.
        requested: ``{stage: errors sampled}`` over all raters and samples.
        applied: ``{stage: errors made}`` (for ``localisation``: boxes shifted;
            for ``category``: includes the school relabellings).
        cannibalised: ``{stage: sampled errors that found no clean candidate}``.
        source: ``(N,)`` for every row of the returned corpus, the row of the
            reference box it derives from in the input corpus (``-1`` for a
            false positive; a combination gives its seed box).
        origin: ``(N,)`` what made the row: ``"localisation"``,
            ``"category"``, ``"school_category"``, ``"fragment"``,
            ``"combination"``, ``"false_positive"`` or ``"reference"``.
    """

    magnitude: float
    seed: int
    reference_rater: str
    raters: tuple[str, ...]
    schools: dict
    school_class_maps: dict
    rates: dict
    requested: dict
    applied: dict
    cannibalised: dict
    source: np.ndarray = field(repr=False)
    origin: np.ndarray = field(repr=False)

    @property
    def total_cannibalised(self) -> int:
        """The number of boxes cannibalised over all classes."""
        return int(sum(self.cannibalised.values()))

    def as_dict(self) -> dict:
        """The counts as plain JSON-able values (no per-row arrays)."""
        return {
            "magnitude": self.magnitude, "seed": self.seed, "reference_rater": self.reference_rater,
            "raters": list(self.raters), "schools": {k: list(v) for k, v in self.schools.items()},
            "school_class_maps": self.school_class_maps, "rates": dict(self.rates),
            "requested": dict(self.requested), "applied": dict(self.applied),
            "cannibalised": dict(self.cannibalised), "total_cannibalised": self.total_cannibalised,
        }


class Simulation(NamedTuple):
    """``(annotations, report)`` returned by :func:`simulate`."""

    annotations: MultiRaterAnnotations
    report: SimulationReport


def simulate(
    reference: MultiRaterAnnotations,
    *,
    profile: NoiseProfile | str | os.PathLike = "lvis",
    magnitude: float = 1.0,
    num_raters: int = 3,
    seed: int = 0,
    school: School | Sequence[School] | None = None,
    rater: str | None = None,
    names: Sequence[str] | None = None,
    include_reference: bool = False,
) -> Simulation:
    """Simulates ``K`` raters from a reference with the KαLOS empirical noise generator.

    Every simulated rater is produced per sample by the four prioritised
    stages of the module docstring (unmatched instances; fragmentation and
    combination; category mistakes; localisation shift), each drawing its
    errors among the still-clean reference boxes. The magnitude scales every
    rate, ``p = min(1, p_base · λ)``, and every localisation residual (``λ ·
    r``); ``λ = 0`` copies the reference, ``λ = 1`` reproduces the profile.

    Args:
        reference: the corpus holding the reference rater.
        profile: a :class:`NoiseProfile`, a shipped name (``"lvis"``) or a
            JSON file (see :func:`agreement.simulate.noise.fit.fit_profile`).
        magnitude: ``λ``, finite and ``>= 0``.
        num_raters: ``K >= 1`` simulated raters (school members included).
        seed: non-negative integer seed.
        school: a :class:`School` or several (disjoint groups of raters with a
            shared systematic bias); their members are the first raters.
        rater: the reference rater (optional when there is only one).
        names: the ``K`` rater names; default ``f"{school.name}_{j}"`` for
            school members and ``f"sim_{i}"`` for the others (1-based).
        include_reference: also include the reference rater, unchanged.

    Returns:
        :class:`Simulation` ``(annotations, report)``: the corpus of the
        simulated raters (assigned where the reference rater is; an empty
        reference set stays empty, as false positives are drawn per
        reference box), and the :class:`SimulationReport` with the counts per
        stage, the cannibalisation counts and each row's source.

    Raises:
        ValueError: ``λ`` negative or non-finite, ``K < 1``, more school
            members than raters, a reference that is empty everywhere, an
            unknown rater. :class:`ProfileError` for a profile that does not
            validate.

    Reference: Tschirschwitz & Rodehorst, KαLOS (empirical noise generator,
    stages in priority order, magnitude scaling, cannibalisation).
    """
    lam = check_level(magnitude, "magnitude (λ)")
    seed = check_seed(seed)
    if isinstance(num_raters, bool) or not isinstance(num_raters, (int, np.integer)) or num_raters < 1:
        raise ValueError(f"num_raters must be an integer K >= 1, got {num_raters!r}")
    prof = load_profile(profile)
    r = reference_rater_index(reference, rater)
    ref_name = reference.raters[r]
    schools, member_of, names = _schools_and_names(school, num_raters, names)
    all_names = names + ([ref_name] if include_reference else [])
    if len(set(all_names)) != len(all_names):
        raise ValueError(f"rater names must be unique, got {all_names}")

    ref_rows = np.flatnonzero(reference.rater_index == r)
    sampler = ClassSampler(prof.confusion, reference.labels[ref_rows])
    class_maps = _school_class_maps(schools, sampler, seed)
    rates = {k: min(1.0, v * lam) for k, v in prof.rates().items()}
    counts = {
        "requested": {k: 0 for k in STAGES if k != "localisation"},
        "applied": {k: 0 for k in STAGES + ("school_category",)},
        "cannibalised": {k: 0 for k in STAGES if k != "localisation"},
    }
    raters = _SimulatedRaters(names=names, member_of=member_of, class_maps=class_maps)
    noise = NoiseModel(profile=prof, rates=rates, lam=lam, sampler=sampler)
    cells, prov = _simulate_cells(reference, r, raters, noise, seed=seed, counts=counts,
                                  include_reference=include_reference)
    out = assemble_raters(reference, r, all_names, cells)
    source, origin = _provenance_in_row_order(reference, r, all_names, prov)
    report = SimulationReport(
        magnitude=lam, seed=seed, reference_rater=ref_name, raters=tuple(names),
        schools={sc.name: tuple(names[k] for k in range(num_raters) if member_of[k] is sc) for sc in schools},
        school_class_maps=class_maps, rates=rates,
        requested=counts["requested"], applied=counts["applied"], cannibalised=counts["cannibalised"],
        source=source, origin=origin,
    )
    return Simulation(out, report)


def _schools_and_names(school, num_raters: int, names) -> tuple[list[School], list[School | None], list[str]]:
    """The schools (checked), the school of each simulated rater (its members first, ``None`` for the
    others) and the rater names (default ``f"{school.name}_{j}"``, then ``f"sim_{i}"``, 1-based)."""
    schools: list[School] = [] if school is None else ([school] if isinstance(school, School) else list(school))
    for sc in schools:
        if not isinstance(sc, School):
            raise TypeError(f"school must be a School or a list of them, got {type(sc).__name__}")
    if len({sc.name for sc in schools}) != len(schools):
        raise ValueError("school names must be unique")
    n_school = sum(sc.size for sc in schools)
    if n_school > num_raters:
        raise ValueError(f"the schools have {n_school} members but only num_raters={num_raters} raters are simulated")
    member_of: list[School | None] = [sc for sc in schools for _ in range(sc.size)]
    member_of += [None] * (num_raters - n_school)
    if names is None:
        names = [f"{sc.name}_{j + 1}" for sc in schools for j in range(sc.size)]
        names += [f"sim_{i + 1}" for i in range(num_raters - n_school)]
    names = [str(x) for x in names]
    if len(names) != num_raters:
        raise ValueError(f"names has {len(names)} entries for num_raters={num_raters}")
    return schools, member_of, names


def _school_class_maps(schools: list[School], sampler: ClassSampler, seed: int) -> dict[str, dict[str, str]]:
    """Each school's relabelling: its ``class_map``, or one drawn at ``class_map_rate`` per class
    from the seed sequence ``(seed, crc("school:" + name), crc("class_map"))``."""
    class_maps: dict[str, dict[str, str]] = {}
    for sc in schools:
        if sc.class_map is not None:
            class_maps[sc.name] = dict(sc.class_map)
        else:
            seq = np.random.SeedSequence([seed, crc32_text("school:" + sc.name), crc32_text("class_map")])
            rng = np.random.default_rng(seq)
            cmap = {}
            for c in sampler.prior_classes:
                if rng.random() < sc.class_map_rate and sampler.has_alternative(c):
                    cmap[str(c)] = str(sampler.draw(c, rng))
            class_maps[sc.name] = cmap
    return class_maps


@dataclass(frozen=True)
class _SimulatedRaters:
    """The simulated raters: their ``names``, the :class:`School` of each (``None``: none) and each school's
    relabelling (``class_maps``, by school name)."""

    names: list[str]
    member_of: list
    class_maps: dict


def _simulate_cells(reference, r: int, raters: _SimulatedRaters, noise: NoiseModel, *, seed: int, counts: dict,
                    include_reference: bool) -> tuple[dict, dict]:
    """Every simulated rater on every sample the reference rater ``r`` is assigned: the cells
    ``(boxes, labels, label ids)`` and their provenance ``(source row, origin)`` by (sample, rater)."""
    names, member_of, class_maps = raters.names, raters.member_of, raters.class_maps
    num_raters = len(names)
    cells: dict[tuple[int, int], tuple] = {}
    prov: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    zero = (0.0, 0.0, 0.0, 0.0)
    for s in np.flatnonzero(reference.assigned[:, r]).tolist():
        sl = reference.rows(s, r)
        boxes, labels, ids = reference.boxes[sl], reference.labels[sl], reference.label_ids[sl]
        for k, rname in enumerate(names):
            sc = member_of[k]
            rng = cell_rng(seed, rname, reference.sample_ids[s])
            school = SchoolBias(class_map=class_maps.get(sc.name, {}) if sc else {}, offset=sc.offset if sc else zero)
            b, lab, src, org = simulate_cell(boxes, labels, reference.image_sizes[s], noise, school, rng=rng,
                                              counts=counts)
            lid = np.empty(len(src), dtype=object)
            lid[:] = [ids[i] if i >= 0 else None for i in src]
            cells[(s, k)] = (b, lab, lid)
            prov[(s, k)] = (np.where(src >= 0, src + sl.start, -1), org)
        if include_reference:
            cells[(s, num_raters)] = (boxes.copy(), labels.copy(), ids.copy())
            prov[(s, num_raters)] = (np.arange(sl.start, sl.stop), np.full(len(boxes), "reference", dtype=object))
    return cells, prov


def _provenance_in_row_order(reference, r: int, all_names: list[str], prov: dict) -> tuple[np.ndarray, np.ndarray]:
    """Source row and origin of every row of the assembled corpus (sample-major, raters sorted by name)."""
    order = sorted(range(len(all_names)), key=lambda k: all_names[k])
    src_l, org_l = [], []
    for s in np.flatnonzero(reference.assigned[:, r]):
        for k in order:
            a, o = prov[(int(s), k)]
            src_l.append(a)
            org_l.append(o)
    source = np.concatenate(src_l).astype(np.intp) if src_l else np.zeros(0, np.intp)
    origin = np.concatenate(org_l).astype(object) if org_l else np.zeros(0, object)
    return source, origin
