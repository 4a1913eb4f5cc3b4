"""Queries and their sensitivities (global, local at distance k, smooth).

Every query holds only public parameters and exposes ``value``,
``neighbours``, ``global_sensitivity``, ``local_sensitivity(data, distance=k)``
(A^(k)), ``smooth_sensitivity(data, beta)`` and ``prepare(data)``; see
``docs/queries.md``.  ``instancedp.queries.brute`` is the brute-force reference.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import RELATIONS, Prepared, Query, Relation  # noqa: F401

_NAMES = {
    "Quantile": "order",
    "Median": "order",
    "Min": "order",
    "Max": "order",
    "Mean": "means",
    "TrimmedMean": "means",
    "Count": "counts",
    "Sum": "counts",
    "Ratio": "counts",
    "Graph": "graphs",
    "as_graph": "graphs",
    "TriangleCount": "graphs",
    "KStarCount": "graphs",
    "TwoTriangleCount": "graphs",
    "two_triangle_ls_bound": "graphs",
    "two_triangle_ls_bound_lemma25": "graphs",
    "two_triangle_a_max": "graphs",
    "two_triangle_layer_bound": "graphs",
    "two_triangle_local_sensitivity": "graphs",
    "SmoothSensitivity": "smooth",
    "is_beta_smooth_upper_bound": "smooth",
}

__all__ = sorted([*_NAMES, "Query", "Prepared", "Relation", "RELATIONS", "brute"])


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    if name == "brute":
        return importlib.import_module(".brute", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
