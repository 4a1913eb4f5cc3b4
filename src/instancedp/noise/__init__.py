"""Noise families with a scipy.stats-like face, and their privacy calibrations.

Families (one module each): :class:`Laplace`, :class:`Gaussian`,
:class:`GeneralizedCauchy`, :class:`StudentT`, :class:`LaplaceLogNormal`,
:class:`UniformLogNormal`, :class:`ArsinhNormal`, :class:`PolyPlace`.
:func:`calibrate` turns (family, ε, γ[, δ]) into the unit-sensitivity noise Z
and its guarantee; :func:`max_gamma` gives the admissible smoothness bound.
"""

from .base import NoiseDistribution
from .calibrate import FAMILIES, Calibration, calibrate, max_gamma
from .cauchy import GeneralizedCauchy
from .gaussian import Gaussian
from .laplace import Laplace
from .lognormal import ArsinhNormal, LaplaceLogNormal, UniformLogNormal
from .polyplace import PolyPlace
from .student_t import StudentT

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
    "max_gamma",
]
