"""Release mechanisms, one module per paper mechanism (names load lazily).

Every mechanism has one shape (``base.Mechanism``): ``Cls(query, epsilon, *,
delta=None, …)`` with ε the total it charges, ``parameters()`` built by the
base class, ``release`` = ``sample`` of one plus the record, and its exact law
``output_distribution`` beside it where known.  Their names and descriptions
live in one table, ``instancedp.registry``.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "Release": "base",
    "Mechanism": "base",
    "OutputDistribution": "base",
    "SmoothSensitivityMechanism": "smooth",
    "default_gamma": "smooth",
    "ProposeTestRelease": "ptr",
    "StableRelease": "stability",
    "BoundedLocalSensitivity": "bounded_ls",
    "ExponentialQuantile": "quantile",
    "InverseSensitivity": "inverse",
    "TieAdaptiveQuantile": "tie_adaptive",
    "TailChoiceQuantile": "tail_choice",
    "UnboundedQuantile": "unbounded",
    "LogLogQuantile": "loglog",
    "ExponentialMechanism": "exponential",
    "LaplaceMechanism": "global_noise",
    "GaussianMechanism": "global_noise",
    "InstanceBasedNoise": "levels",
    "level_rates": "levels",
    "check_instance_noise": "levels",
    "SmallDB": "smalldb",
    "NoisySumOverCount": "sum_count",
    "CandidateQuantile": ".sources",  # the out-of-core quantile lives beside the backends
    "JointQuantiles": "joint_quantiles",
    "RecursiveQuantiles": "recursive_quantiles",
    "IndependentQuantiles": "independent_quantiles",
    "UnboundedQuantiles": "unbounded_quantiles",
    "PrivateRatio": "ratio",
    "Mode": "stability",
    "SmoothSensitivityBound": "bounded_ls",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
