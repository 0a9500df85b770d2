"""Simulated raters: controlled perturbations and the KαLOS empirical noise generator.

* :mod:`agreement.simulate.noise.perturbations`: the OT paper's Section 4.1 controlled
  perturbations of a reference set (box dropping, centre shifting, label
  swapping) at a noise level ``γ``.
* :mod:`agreement.simulate.noise.empirical`: the KαLOS empirical noise generator (four
  prioritised stages: unmatched instances, fragmentation/combination,
  category mistakes, localisation shift) driven by a :class:`NoiseProfile`
  and a magnitude ``λ``, with schools of thought and a cannibalisation report.
* :mod:`agreement.simulate.noise.fit`: fitting a profile from real pairs of raters
  (``python -m agreement.simulate.noise.fit data.json -o profile.json``).
* ``profiles/lvis.json``: the profile fitted from the shared LVIS
  double-annotation subset (``load_profile("lvis")``).

Typical use::

    from agreement.simulate.noise import perturb, simulate, load_profile

    dropped = perturb(reference, "drop", 0.3, seed=0, rater="r1")
    sim, report = simulate(reference, "lvis", magnitude=1.0, num_raters=5, seed=0, rater="r1")

This package does not import FiftyOne.
"""

from agreement.simulate.noise.empirical import (
    STAGES,
    FalsePositiveShape,
    LocalisationProfile,
    NoiseProfile,
    ProfileError,
    School,
    Simulation,
    SimulationReport,
    StudentT,
    builtin_profiles,
    load_profile,
    simulate,
)
from agreement.simulate.noise.perturbations import PERTURBATIONS, perturb, perturb_set, perturbation_series

__all__ = [
    "PERTURBATIONS",
    "perturb",
    "perturb_set",
    "perturbation_series",
    "STAGES",
    "FalsePositiveShape",
    "LocalisationProfile",
    "NoiseProfile",
    "ProfileError",
    "School",
    "Simulation",
    "SimulationReport",
    "StudentT",
    "builtin_profiles",
    "load_profile",
    "simulate",
    "fit_profile",
    "pair_statistics",
]


def __getattr__(name: str):
    # The fitting module is imported lazily so that ``python -m agreement.simulate.noise.fit``
    # does not find it already imported by its package.
    if name in ("fit_profile", "pair_statistics"):
        from agreement.simulate.noise import fit

        return getattr(fit, name)
    raise AttributeError(f"module 'agreement.simulate.noise' has no attribute {name!r}")
