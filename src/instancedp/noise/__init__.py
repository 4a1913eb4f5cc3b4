"""Noise families with a scipy.stats-like face, their privacy calibrations, and
the family registry.

Each family is one class in one module (:class:`Laplace`, :class:`Gaussian`,
:class:`GeneralizedCauchy`, :class:`StudentT`, :class:`LaplaceLogNormal`,
:class:`UniformLogNormal`, :class:`ArsinhNormal`, :class:`PolyPlace`) that owns
its shapes, its smooth-sensitivity calibration, its default-γ constants and
its exact-sampling hooks (see :mod:`instancedp.noise.base`).  The generic code
asks the family through the registry: :func:`calibrate` turns (family, ε, γ[, δ])
into the unit-sensitivity noise Z and its guarantee, :func:`max_gamma` gives
the admissible smoothness bound, :mod:`instancedp.noise.exact` samples any
registered family exactly.  Adding a family: one module with its class, and one
``register_family`` line below.
"""

from .base import (
    FAMILIES,
    NoiseDistribution,
    family_class,
    register_family,
    registered_families,
    unregister_family,
)
from .calibrate import Calibration, calibrate, max_gamma
from .cauchy import GeneralizedCauchy
from .gaussian import Gaussian
from .laplace import Laplace
from .lognormal import ArsinhNormal, LaplaceLogNormal, UniformLogNormal
from .polyplace import PolyPlace
from .student_t import StudentT

# The registry; the order of the smooth families is the order of ``FAMILIES``.
register_family(PolyPlace)
register_family(StudentT)
register_family(GeneralizedCauchy)
register_family(Laplace)
register_family(LaplaceLogNormal)
register_family(UniformLogNormal)
register_family(ArsinhNormal)
register_family(Gaussian)

__all__ = [
    "FAMILIES",
    "ArsinhNormal",
    "Calibration",
    "Gaussian",
    "GeneralizedCauchy",
    "Laplace",
    "LaplaceLogNormal",
    "NoiseDistribution",
    "PolyPlace",
    "StudentT",
    "UniformLogNormal",
    "calibrate",
    "family_class",
    "max_gamma",
    "register_family",
    "registered_families",
    "unregister_family",
]
