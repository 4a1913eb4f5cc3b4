"""instancedp — instance-adaptive differential privacy.

Noise calibrated to the dataset at hand (smooth sensitivity, propose-test-
release, privately bounded local sensitivity, instance-based noise on
sensitivity levels), with exact privacy checks and a persistent budget.
"""

from __future__ import annotations

import importlib
from typing import Any

from .privacy import ZCDP, ApproxDP, PureDP

__version__ = "0.1.0"

_LAZY = {
    "Session": "session",
    "BudgetExceeded": "ledger",
    "Release": "mechanisms.base",
}

__all__ = ["PureDP", "ApproxDP", "ZCDP", "__version__", *_LAZY]


def __dir__() -> list[str]:
    # The lazy names are public too: list them for dir() and tab completion.
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
