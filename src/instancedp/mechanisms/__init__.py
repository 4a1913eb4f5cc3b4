"""Release mechanisms, one module per paper mechanism (names load lazily)."""

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
    "UnboundedQuantile": "unbounded",
    "ExponentialMechanism": "exponential",
    "LaplaceMechanism": "global_noise",
    "GaussianMechanism": "global_noise",
    "InstanceBasedNoise": "levels",
    "level_rates": "levels",
    "check_instance_noise": "levels",
    "SmallDB": "smalldb",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
