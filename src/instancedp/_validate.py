"""Validation at the public boundary.

Every check raises ``ValueError`` whose message names the parameter and the
allowed range, so that the CLI can print it as one line.  Checks on data look
only at the caller's own input (emptiness, NaN/inf) and are made before any
release, as DESIGN.md requires.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import ParameterError


def finite_positive(value: Any, name: str) -> float:
    """A finite number > 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a finite number > 0, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise ParameterError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def epsilon(value: Any, name: str = "epsilon") -> float:
    """ε: finite and > 0."""
    return finite_positive(value, name)


def at_most_decimal(value: Any) -> Any:
    """The largest double not above the decimal a person wrote for ``value``.

    A float such as 0.1 lies a little above the decimal 0.1 (by < ½ ulp); the
    ledger charges the exact value the mechanism calibrates with, so a
    mechanism calibrated at 0.1 would make ten releases of 0.1 overrun a budget
    of 1.  Calibrating at the double just below the decimal (one ulp less
    ε: the noise grows by a factor 1 + 2⁻⁵²) keeps the decimal arithmetic people
    expect — ten charges of 0.1 fill 1.0, a thousand of 0.001 fill 1.0 — while
    the charge is still exactly the ε that ran."""
    from decimal import Decimal

    if isinstance(value, bool) or not isinstance(value, int | float):
        return value  # validated (and refused, if need be) where it is used
    v = float(value)
    if math.isfinite(v) and v > 0 and Decimal(v) > Decimal(repr(v)):
        return math.nextafter(v, 0.0)
    return value


def delta(value: Any, name: str = "delta", *, allow_zero: bool = True) -> float:
    """δ in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    rng = "[0, 1)" if allow_zero else "(0, 1)"
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number in {rng}, got {value!r}") from None
    if not math.isfinite(v) or v < 0 or v >= 1 or (v == 0 and not allow_zero):
        raise ParameterError(f"{name} must be a number in {rng}, got {value!r}")
    return v


def nonnegative(value: Any, name: str) -> float:
    """A finite number ≥ 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a finite number >= 0, got {value!r}") from None
    if not math.isfinite(v) or v < 0:
        raise ParameterError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def in_open_interval(value: Any, name: str, low: float, high: float) -> float:
    """A number strictly between ``low`` and ``high``."""
    where = {"parameter": name, "allowed": f"({low:g}, {high:g})"}
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be in ({low:g}, {high:g}), got {value!r}",
                             **where) from None
    if not (math.isfinite(v) and low < v < high):
        raise ParameterError(f"{name} must be in ({low:g}, {high:g}), got {value!r}", **where)
    return v


def one_of(value: Any, choices: Any, name: str) -> Any:
    """``value`` if it is one of ``choices`` (compared as given), else a ParameterError
    naming ``name`` and the choices."""
    if value not in choices:
        listed = ", ".join(map(str, choices))
        raise ParameterError(
            f"{name} must be one of {listed}, got {value!r}", parameter=name, allowed=listed
        )
    return value


def bounds(lower: Any, upper: Any) -> tuple[float, float]:
    """Public data bounds: both finite and lower < upper."""
    if lower is None or upper is None:
        raise ParameterError("bounds are required: pass lower and upper (finite, lower < upper)")
    try:
        lo, hi = float(lower), float(upper)
    except (TypeError, ValueError):
        raise ParameterError(
            f"bounds must be finite numbers with lower < upper, got ({lower!r}, {upper!r})"
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ParameterError(f"bounds must be finite, got lower={lower!r}, upper={upper!r}")
    if lo >= hi:
        raise ParameterError(
            f"bounds reversed or empty: need lower < upper, got lower={lo:g}, upper={hi:g}"
        )
    return lo, hi


def data_array(data: Any, *, drop_missing: bool = False, name: str = "data") -> np.ndarray:
    """A non-empty 1-D float64 array with no NaN/inf.

    NaN/inf are an error that says how many there are, unless ``drop_missing``
    is set, in which case they are removed (the caller's explicit choice).
    """
    try:
        arr = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be numeric (a 1-D array of numbers)") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ParameterError(f"{name} must be 1-D, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    n_bad = int(bad.sum())
    if n_bad:
        if drop_missing:
            arr = arr[~bad]
        else:
            raise ParameterError(
                f"{name} contains {n_bad} NaN/inf value(s) out of {arr.size}; "
                "clean them or pass drop_missing=True"
            )
    if arr.size == 0:
        raise ParameterError(f"{name} is empty: at least one value is required")
    return arr
