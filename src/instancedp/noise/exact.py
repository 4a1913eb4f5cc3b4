"""Floating-point-safe noise: the correctly rounded float64 of value + scale·Z.

Mironov (CCS 2012, "On significance of the least significant bits for
differential privacy") showed that textbook floating-point noise,
``value + scale * ppf(u)`` evaluated in doubles, has a *porous* output set
that depends on ``value``: an attacker who sees one output can often tell
whether the input was 0 or 1.  The cure used here (the "interval refining"
idea of Haney et al. 2022, generalised to every family instancedp uses) is to
release a deterministic function of the *exact* real-number output of the
ideal mechanism, so that the real-number privacy proof carries over by
post-processing:

* the output is the float ``y`` whose round-to-nearest cell
  ``[mid(y⁻, y), mid(y, y⁺))`` contains the real number ``value + S·Z``
  (``y⁻``, ``y⁺`` the neighbouring doubles; ±inf beyond the overflow
  threshold, as IEEE-754 round-to-nearest does), with ``Z`` drawn exactly
  from ``noise``;
* or, with ``grid=k``, the value is first snapped to the nearest multiple of
  2^k and the output is ``snapped + 2^k·N`` with N the integer nearest to
  S·Z/2^k.  Snapping moves the query by at most 2^(k−1), so its sensitivity
  grows by at most 2^k: :func:`grid_sensitivity` says how much to charge.
  The noise draw then no longer depends on the value at all, which removes
  the value from the timing channel of the float path.

How Z is drawn exactly (no real number is ever rounded before the output):

* **CDF route** (Laplace, Gaussian, PolyPlace, Student's t, generalized
  Cauchy, arsinh-normal): U is a uniform whose binary digits are drawn lazily,
  64 at a time, from the random source, so U is known to lie in a dyadic
  interval [a, a + 2^−k).  The output cell y satisfies
  F((lo(y) − value)/S) ≤ U < F((hi(y) − value)/S), F the unit CDF.  F is
  evaluated in ball arithmetic (python-flint ``arb``) at the exact cell
  boundaries; the float first guess value + S·ppf(U) is checked, and if it is
  wrong a galloping search and a bisection over the ordered float bit
  patterns find the cell.  A comparison that the current ball and the
  current digits of U cannot decide draws more digits (or raises the working
  precision) until it is decided — the answer is the exact one.
* **Product route** (Laplace-log-normal, uniform-log-normal; Bun–Steinke
  2019, Z = X·e^{σY}): the sign of X, |X| = −ln V (LLN) or V (ULN) and
  Y = Φ^{−1}(W) are refined from two lazy uniforms V, W through interval
  enclosures of their closed-form inverse CDFs until value + S·Z is known to
  lie in one rounding cell.

:func:`uniform` does the same for a point drawn uniformly in [low, high].

The total scale is S = scale × noise.scale, multiplied exactly (no rounding):
``scale`` is used as the float it is; a scale given as an int too large for a
float, a ``Fraction`` or a ``Decimal`` is rounded *up* to a float first
(:func:`round_scale_up`), so the noise is never smaller than asked for.
A scale computed in floating point may sit a few ulps below its real value:
:func:`scale_upper_bound` steps it up by a few doubles to cover that.

Cost: one float guess and two ball CDF evaluations in the common case; under
1 % of draws need more random digits (those whose rounding cell is narrow in
U, e.g. outputs close to 0).  The number of steps depends on the draw and, on
the float path, on ``value`` (via the width of the float cells around the
output): that is a timing side channel this module does not close; ``grid=k``
removes the value from it (the work still depends on the noise drawn).
:func:`work_count` and :func:`refinement_count` expose the work done.  See
``docs/safe-sampling.md``.

python-flint's working precision is a process-wide setting: this module sets
it for the duration of a draw and restores it afterwards, so concurrent use
of python-flint from several threads is not safe.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
from flint import arb, ctx

from .. import _validate
from ..errors import ParameterError
from ..random import RandomSource, resolve
from .base import NoiseDistribution, RegistryView, family_class

__all__ = [
    "SUPPORTED_FAMILIES",
    "add_noise",
    "grid_sensitivity",
    "refinement_count",
    "round_scale_up",
    "sample_index",
    "sample_piece",
    "sample_piece_lazy",
    "scale_upper_bound",
    "snap_to_grid",
    "uniform",
    "work_count",
]

# Every registered family with exact-sampling hooks (a live view of the registry).
SUPPORTED_FAMILIES: Any = RegistryView(lambda c: c.exact_route is not None, lambda c: c)

_START_PREC = 96  # working bits; always ≥ digits of U + 32
_MAX_PREC = 1 << 15  # beyond this something is wrong (never reached in practice)
_GRID_MIN, _GRID_MAX = -1074, 1023
_GRID_SPAN = 128  # grid=k needs scale·noise.scale < 2^(k + 128)


# ---------------------------------------------------------------------------
# Lazy uniform: U = (m + [0, 1)) · 2^−k, 64 more digits on demand.
# ---------------------------------------------------------------------------


_WORK = [0, 0]  # ball evaluations, uniform refinements (diagnostics: the timing channel)


class _LazyUniform:
    __slots__ = ("m", "k", "_source")

    def __init__(self, source: RandomSource) -> None:
        self._source = source
        self.m = int.from_bytes(source.random_bytes(8), "little")
        self.k = 64

    def refine(self) -> None:
        self.m = (self.m << 64) | int.from_bytes(self._source.random_bytes(8), "little")
        self.k += 64
        _WORK[1] += 1

    def lower(self) -> arb:
        return arb((self.m, -self.k))

    def upper(self) -> arb:
        return arb((self.m + 1, -self.k))

    def width(self) -> arb:
        return arb((1, -self.k))

    def guess(self) -> tuple[float, float]:
        """Floats near min(U, 1 − U) and U − ½, each without cancellation (midpoint of U)."""
        c = math.ldexp(float(2 * self.m + 1 - (1 << self.k)), -self.k - 1)
        if c > 0:
            p = math.ldexp(float(2 * ((1 << self.k) - self.m) - 1), -self.k - 1)
        else:
            p = math.ldexp(float(2 * self.m + 1), -self.k - 1)
        return p, c


# ---------------------------------------------------------------------------
# Rounding cells: ordered keys, their exact lower boundaries, their outputs.
# ---------------------------------------------------------------------------

_SIGN = 1 << 63
_KEY_INF = 0x7FF0000000000000  # key of +inf; −_KEY_INF is −inf
_OVERFLOW = arb(((1 << 54) - 1, 970))  # 2^1024 − 2^970 = mid(MAX, +inf), exact
_NEG_INF, _POS_INF = object(), object()  # boundary sentinels


def _float_key(x: float) -> int:
    """Order-preserving integer key of a double (−0.0 and +0.0 share key 0)."""
    b = struct.unpack("<Q", struct.pack("<d", x))[0]
    return -(b & ~_SIGN) if b & _SIGN else b


def _key_float(key: int) -> float:
    b = (-key) | _SIGN if key < 0 else key
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def key_floats(keys: np.ndarray) -> np.ndarray:
    """The doubles of order-preserving integer keys (:func:`_float_key`'s inverse,
    vectorised)."""
    keys = np.asarray(keys, dtype=np.int64)
    bits = np.where(keys < 0, (-keys) | np.int64(-(2**63)), keys).astype(np.int64)
    return bits.view(np.float64)


def last_double(pred: Callable[[np.ndarray], np.ndarray], lower: float, upper: float,
                size: int, ways: int = 64) -> np.ndarray:
    """Per entry i < ``size``: the key (:func:`_float_key`) of the greatest double t in
    [lower, upper] with ``pred(t)[i]`` true, for predicates true at ``lower`` and
    monotone (true, then false) in t; ``upper``'s key where it is true there.

    ``pred`` maps an array of doubles of shape (size, m) (row i for entry i) to
    booleans of that shape.  A ``ways``-way search over the doubles' keys (spans in
    wrapping unsigned arithmetic: keys run from −2⁶³ to 2⁶³), all entries at once:
    about 64/log₂(ways) steps of ways − 1 evaluations each (64-way: few calls of a
    costly predicate; 2-way: fewest evaluations).  Exact, whatever the predicate's
    own rounding."""
    lo = np.full(size, _float_key(lower), dtype=np.int64)
    hi = np.full(size, _float_key(upper), dtype=np.int64)
    top = pred(np.full((size, 1), float(upper)))[:, 0]
    w = np.uint64(ways)
    j = np.arange(1, ways, dtype=np.uint64)
    rows = np.arange(size)
    while True:  # invariant: pred(key lo), not pred(key hi), unless top
        span = hi.view(np.uint64) - lo.view(np.uint64)
        live = (span > 1) & ~top
        if not live.any():
            break
        step = np.maximum(span // w, np.uint64(1))
        offs = step[:, None] * j[None, :]  # ≤ (ways − 1)/ways of the span: no wrap
        valid = (offs < span[:, None]) & live[:, None]
        cand = (lo.view(np.uint64)[:, None] + offs).view(np.int64)
        ok = valid & pred(key_floats(cand))
        c, nv = ok.sum(axis=1), valid.sum(axis=1)  # monotone: both are prefixes
        lo = np.where(c > 0, cand[rows, np.maximum(c - 1, 0)], lo)
        hi = np.where(live & (c < nv), cand[rows, np.minimum(c, ways - 2)], hi)
    return np.where(top, hi, lo)


class _FloatCells:
    """Cells of round-to-nearest onto float64: key k ↔ the k-th double."""

    @staticmethod
    def boundary(key: int) -> Any:
        """Lower boundary of the cell of ``key``: mid(previous double, this double)."""
        if key <= -_KEY_INF:
            return _NEG_INF
        if key > _KEY_INF:
            return _POS_INF
        if key == _KEY_INF:
            return _OVERFLOW
        if key == -_KEY_INF + 1:
            return -_OVERFLOW
        # Adjacent doubles: the sum has ≤ 55 significant bits, exact at prec ≥ 64.
        return (arb(_key_float(key - 1)) + arb(_key_float(key))) * 0.5

    @staticmethod
    def key_of(y: float) -> int:
        if math.isnan(y):
            return 0
        return _float_key(y)

    @staticmethod
    def clamp(key: int) -> int:
        return max(-_KEY_INF, min(_KEY_INF + 1, key))


class _GridCells:
    """Cells of rounding to the nearest multiple of 2^k: key N ↔ N·2^k."""

    def __init__(self, k: int) -> None:
        self.k = k

    def boundary(self, n: int) -> arb:
        return arb((2 * n - 1, self.k - 1))  # (N − ½)·2^k, exact

    def key_of(self, y: float) -> int:
        if math.isnan(y):
            return 0
        if math.isinf(y):
            y = math.copysign(2.0**1023, y)
        try:
            scaled = math.ldexp(y, -self.k)  # exact unless it leaves the float range
        except OverflowError:
            scaled = math.inf
        if math.isfinite(scaled) and (scaled == 0.0) == (y == 0.0):
            return round(scaled)
        return round(Fraction(y) / Fraction(2) ** self.k)

    @staticmethod
    def clamp(key: int) -> int:
        return key


def _locate(cells: Any, lo: arb, hi: arb) -> int | None:
    """The key whose cell holds every real in [lo, hi] (balls), or None if not decided."""
    try:
        guess = float(lo.mid())
    except (OverflowError, ValueError):  # pragma: no cover - arb mid is always finite
        return None
    base = cells.key_of(guess)
    for key in (base, base - 1, base + 1):
        key = cells.clamp(key)
        b0, b1 = cells.boundary(key), cells.boundary(key + 1)
        low_ok = b0 is _NEG_INF or (b0 is not _POS_INF and b0 <= lo)
        high_ok = b1 is _POS_INF or (b1 is not _NEG_INF and hi < b1)
        if low_ok and high_ok:
            return key
    return None


# ---------------------------------------------------------------------------
# Unit CDFs from the family's survival function sf(t) = P(Z > t), t > 0 (arb).
# ---------------------------------------------------------------------------


def _cdf(sf: Any, params: tuple[float, ...], z: arb) -> arb:
    """Unit CDF F(z) = 1 − sf(z) for z > 0, sf(−z) for z < 0 (symmetric law)."""
    if z > 0:
        return 1 - sf(z, params)
    if z < 0:
        return sf(-z, params)
    # The ball holds 0: F is increasing, so F(ball) ⊂ [F(lower), F(upper)].
    lo, hi = z.lower(), z.upper()
    f_lo = sf(-lo, params) if lo < 0 else arb(0.5)
    f_hi = 1 - sf(hi, params) if hi > 0 else arb(0.5)
    return f_lo.union(f_hi)


def _ppf_guess(cls: type, params: tuple[float, ...], p: float, c: float) -> float:
    """Unit quantile at U = ½ + c, in floats (p = min(U, 1 − U) = ½ − |c|): the family's
    guess of |F⁻¹(U)| (``exact_ppf_guess``) with the sign of c.  Only a starting point."""
    return math.copysign(cls.exact_ppf_guess(params, p, c), c)


class _SurvivalFunctions:
    """``_SF[name]``: the unit survival function of a registered family, in arb."""

    def __getitem__(self, name: str) -> Any:
        return family_class(name).exact_sf


_SF = _SurvivalFunctions()


def _family(noise: Any) -> tuple[str, tuple[float, ...], str]:
    """(name, unit shape parameters, route) for an instance of a registered family."""
    cls = type(noise)
    try:
        ok = cls.exact_route is not None and cls is family_class(cls.family)
    except (AttributeError, KeyError):
        ok = False
    if not isinstance(noise, NoiseDistribution) or not ok:
        names = ", ".join(f.__name__ for f in SUPPORTED_FAMILIES)
        raise ParameterError(f"noise must be an instance of one of {names}; got {cls.__name__}")
    return cls.family, tuple(noise.exact_params()), cls.exact_route


# ---------------------------------------------------------------------------
# The two exact samplers.  Both return a cell key; ctx.prec is set by callers.
# ---------------------------------------------------------------------------


class _Undecidable(RuntimeError):
    pass


def work_count() -> int:
    """Number of ball-arithmetic evaluations (CDF or product enclosures) made so far in
    this process: a machine-independent measure of the work behind each draw."""
    return _WORK[0]


def refinement_count() -> int:
    """Number of times a lazy uniform drew 64 more random bits, so far in this process."""
    return _WORK[1]


def _sample_cdf(
    name: str,
    params: tuple[float, ...],
    center: arb,
    center_float: float,
    total_scale: arb,
    scale_float: float,
    cells: Any,
    source: RandomSource,
) -> int:
    """Largest key with F((boundary(key) − center)/S) ≤ U: the cell holding center + S·F⁻¹(U)."""
    sf = _SF[name]
    cls = family_class(name)
    u = _LazyUniform(source)
    prec = _START_PREC

    def below(key: int) -> bool:
        """Is boundary(key) ≤ center + S·Z, i.e. F((boundary − center)/S) ≤ U?"""
        nonlocal prec
        b = cells.boundary(key)
        if b is _NEG_INF:
            return True
        if b is _POS_INF:
            return False
        f = None
        while True:
            if f is None:
                ctx.prec = prec
                f = _cdf(sf, params, (b - center) / total_scale)
                _WORK[0] += 1
            if f <= u.lower():
                return True
            if f >= u.upper():
                return False
            if f.rad() * 8 > u.width():  # the ball is the blur: more working bits
                prec *= 2
                if prec > _MAX_PREC:
                    raise _Undecidable(f"exact sampler undecided at {prec} bits")
                f = None
            else:  # U is the blur: draw more of its digits
                u.refine()
                if prec < u.k + 32:
                    prec = u.k + 32
                    f = None

    # First guess in floats; any error only costs search steps.
    p, c = u.guess()
    try:
        z = _ppf_guess(cls, params, p, c)
    except (ValueError, OverflowError, ZeroDivisionError):
        z = 0.0
    with np.errstate(all="ignore"):
        y = float(np.float64(center_float) + np.float64(scale_float) * np.float64(z))
    key = cells.clamp(cells.key_of(y))

    return _search(below, key, cells)


def _search(below: Any, key: int, cells: Any) -> int:
    """Largest key with ``below(key)`` (a monotone predicate), starting from a guess.

    Probes the guess's neighbours one by one (the guess is usually within a
    cell or two), then gallops to bracket the answer (below(lo), not below(hi))
    and finishes by bisection over the keys.
    """
    step, probes = 1, 0
    if below(key):
        lo = key
        while True:
            hi = cells.clamp(lo + step)
            if hi == lo or not below(hi):
                break
            lo, probes = hi, probes + 1
            step = 1 if probes < 3 else step * 2
    else:
        hi = key
        while True:
            lo = cells.clamp(hi - step)
            if below(lo):
                break
            hi, probes = lo, probes + 1
            step = 1 if probes < 3 else step * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if below(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _norm_ppf(num: int, k: int) -> arb:
    """Φ⁻¹(num·2^−k) for 0 < num < 2^k, as a ball (via erfcinv, accurate in both tails)."""
    if 2 * num <= (1 << k):
        return -(arb((num, 1 - k)).erfcinv()) * arb(2).sqrt()
    return arb(((1 << k) - num, 1 - k)).erfcinv() * arb(2).sqrt()


def _sample_product(
    name: str,
    params: tuple[float, ...],
    center: arb,
    total_scale: arb,
    cells: Any,
    source: RandomSource,
) -> int:
    """Cell of center + S·(±|X|·e^{σY}) refined from lazy uniforms (Bun–Steinke 2019)."""
    (sigma,) = params
    factor = family_class(name).exact_abs_factor
    negative = source.random_bytes(1)[0] & 1
    v, w = _LazyUniform(source), _LazyUniform(source)
    prec = _START_PREC
    while True:
        ctx.prec = prec
        s = arb(sigma)
        top = 1 << w.k
        if v.m > 0 and w.m > 0 and w.m + 1 < top:
            x_lo, x_hi = factor(v.lower(), v.upper())  # |X| from V (the family's law)
            z_lo = x_lo * (s * _norm_ppf(w.m, w.k)).exp()
            z_hi = x_hi * (s * _norm_ppf(w.m + 1, w.k)).exp()
            if negative:
                lo, hi = center - total_scale * z_hi, center - total_scale * z_lo
            else:
                lo, hi = center + total_scale * z_lo, center + total_scale * z_hi
            key = _locate(cells, lo, hi)
            _WORK[0] += 1
            if key is not None:
                return key
        v.refine()
        w.refine()
        prec = max(prec, w.k + 32)
        if prec > _MAX_PREC:  # pragma: no cover - needs ~2^15 random bits
            raise _Undecidable(f"exact sampler undecided at {prec} bits")


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def round_scale_up(scale: Any) -> float:
    """``scale`` as a float64, rounded *up* when it is not one already.

    Floats (and numpy floats) are used as they are; ints, ``Fraction`` and
    ``Decimal`` are converted exactly when representable and rounded to the
    next double above otherwise, so that the noise scale never shrinks.
    """
    if isinstance(scale, bool):
        raise ParameterError(f"scale must be a finite number > 0, got {scale!r}")
    if isinstance(scale, (int, Fraction, Decimal)) and not isinstance(scale, float):
        try:
            exact = Fraction(scale)
        except (ValueError, OverflowError):
            raise ParameterError(f"scale must be a finite number > 0, got {scale!r}") from None
        f = float(exact) if exact.denominator != 1 else float(exact.numerator)
        if math.isfinite(f) and Fraction(f) < exact:
            f = math.nextafter(f, math.inf)
        return _validate.finite_positive(f, "scale")
    return _validate.finite_positive(scale, "scale")


def scale_upper_bound(scale: float, ulps: int = 16) -> float:
    """``scale`` raised by ``ulps`` doubles: an upper bound on a scale that was computed
    in floating point with a few correctly rounded operations (each errs by ≤ ½ ulp,
    so a chain of n operations by ≲ n ulps).  Pass the result to :func:`add_noise` when
    the true S must not be undercut; the noise grows by a factor ≈ 1 + ulps·2^−52.
    """
    s = round_scale_up(scale)
    if isinstance(ulps, bool) or not isinstance(ulps, (int, np.integer)) or ulps < 0:
        raise ParameterError(f"ulps must be an integer >= 0, got {ulps!r}")
    for _ in range(int(ulps)):
        s = math.nextafter(s, math.inf)
    return _validate.finite_positive(s, "scale")


def grid_sensitivity(sensitivity: float, k: int) -> float:
    """Sensitivity of a query snapped to the nearest multiple of 2^k.

    Snapping moves each value by at most 2^(k−1), so two neighbouring values
    that differed by Δ differ by at most Δ + 2^k after snapping.  The result is
    rounded up to a float.  A smooth upper bound S stays smooth after adding
    the constant 2^k (S + c ≤ e^γ S' + c ≤ e^γ (S' + c)).
    """
    d = _validate.nonnegative(sensitivity, "sensitivity")
    k = _grid_exponent(k)
    exact = Fraction(d) + Fraction(2) ** k
    out = float(exact)
    if Fraction(out) < exact:
        out = math.nextafter(out, math.inf)
    return out


def snap_to_grid(value: float, k: int) -> float:
    """The multiple of 2^k nearest to ``value`` (ties to even), as a float."""
    k = _grid_exponent(k)
    v = _validate_value(value)
    n = round(Fraction(v) / Fraction(2) ** k)
    return float(n * Fraction(2) ** k)


def _grid_exponent(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ParameterError(
            f"grid must be an integer exponent in [{_GRID_MIN}, {_GRID_MAX}], got {k!r}"
        )
    k = int(k)
    if not _GRID_MIN <= k <= _GRID_MAX:
        raise ParameterError(
            f"grid must be an integer exponent in [{_GRID_MIN}, {_GRID_MAX}], got {k}"
        )
    return k


def _validate_value(value: Any, name: str = "value") -> float | int:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if abs(int(value)) >= 2**1023:
            raise ParameterError(
                f"{name} must be a finite number below 2**1023 in size, got {value!r}"
            )
        return int(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a finite number, got {value!r}") from None
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be a finite number, got {value!r}")
    return v


def add_noise(
    value: float,
    scale: float,
    noise: NoiseDistribution,
    size: int | None = 1,
    rng: Any = None,
    *,
    grid: int | None = None,
) -> float | np.ndarray:
    """Correctly rounded ``value + scale·Z``, Z ~ ``noise``, safe against Mironov's attack.

    Returns a float when ``size`` is None, else a float64 array of ``size``
    independent draws.  Each output is exactly the round-to-nearest double of
    the real number value + S·Z, S = scale × noise.scale (exact product), Z drawn
    exactly from ``noise`` (see the module docstring).  With ``grid=k`` the
    value is snapped to the nearest multiple of 2^k first and the output is
    the snapped value plus the multiple of 2^k nearest to S·Z: charge
    :func:`grid_sensitivity` instead of the query's sensitivity.

    ``value`` may be an int (used exactly) or a finite float; ``scale`` is
    rounded up to a float (:func:`round_scale_up`).  ``rng``: None for the OS
    CSPRNG, or ``instancedp.random.simulation(seed)`` for reproducible tests.
    """
    source = resolve(rng)
    v = _validate_value(value)
    s = round_scale_up(scale)
    if not isinstance(noise, NoiseDistribution):
        _family(noise)  # raises the ValueError naming the supported families
    name, params, route = _family(noise)
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise ParameterError(f"size must be None or an integer >= 0, got {size!r}")
    k = None if grid is None else _grid_exponent(grid)
    if k is not None and s * float(noise.scale) >= 2.0 ** min(k + _GRID_SPAN, 1023):
        # The draw resolves S·Z to 2^k: its cost grows with log2(S·Z/2^k) (steps and bits).
        raise ParameterError(
            f"grid must be at least log2(scale * noise.scale) - {_GRID_SPAN} "
            f"(got grid={k} for a total scale {s * float(noise.scale):g}); "
            "a finer grid than that is below the precision of any double output"
        )

    old = ctx.prec
    try:
        ctx.prec = 256
        total_scale = arb(s) * arb(float(noise.scale))  # ≤ 106 bits: exact
        if k is None:
            cells: Any = _FloatCells
            center = arb(v)
            center_float = float(v)
            offset = 0
        else:
            cells = _GridCells(k)
            center = arb(0)
            center_float = 0.0
            # snapped value / 2^k (round half to even, as snap_to_grid)
            if isinstance(v, float):
                offset = cells.key_of(v)
            else:
                offset = round(Fraction(v) / Fraction(2) ** k)
        scale_float = s * float(noise.scale)

        def draw() -> float:
            if route == "cdf":
                key = _sample_cdf(
                    name, params, center, center_float, total_scale, scale_float, cells, source
                )
            else:
                key = _sample_product(name, params, center, total_scale, cells, source)
            if k is None:
                return _key_float(key)
            return _grid_value(offset + key, k)

        if size is None:
            return draw()
        return np.array([draw() for _ in range(int(size))], dtype=np.float64)
    finally:
        ctx.prec = old


def uniform(low: float, high: float, rng: Any = None) -> float:
    """The correctly rounded double of low + U·(high − low), U uniform on (0, 1) exactly.

    For releases that pick a point uniformly inside a data-dependent interval
    (e.g. the exponential-mechanism quantile): the textbook
    ``low + u * (high - low)`` in doubles has an output set that depends on
    ``low`` and ``high`` (Mironov's porosity); this one is a function of the
    exact real-number point only.  Always returns a double in [low, high].
    """
    source = resolve(rng)
    lo = float(_validate_value(low, "low"))
    hi = float(_validate_value(high, "high"))
    if not lo <= hi:
        raise ParameterError(f"low must be <= high, got low={low!r}, high={high!r}")
    if lo == hi:
        return lo
    u = _LazyUniform(source)
    old = ctx.prec
    try:
        # Doubles span 2^−1074 … 2^1024: at this precision every sum and product
        # below is exact, so the comparisons are exact rational ones.
        ctx.prec = 2240
        a, diff = arb(lo), arb(hi) - arb(lo)
        bounds: list[arb] = []

        def below(key: int) -> bool:
            """Is boundary(key) ≤ low + U·(high − low)?"""
            b = _FloatCells.boundary(key)
            if b is _NEG_INF:
                return True
            if b is _POS_INF:
                return False
            while True:
                if not bounds:
                    ctx.prec = 2240 + u.k
                    bounds[:] = [a + u.lower() * diff, a + u.upper() * diff]
                    _WORK[0] += 1
                if b <= bounds[0]:
                    return True
                if b >= bounds[1]:
                    return False
                u.refine()
                bounds.clear()

        p, c = u.guess()
        frac = 0.5 + c
        with np.errstate(all="ignore"):
            guess = float(np.float64(lo) + np.float64(frac) * (np.float64(hi) - np.float64(lo)))
        guess = min(max(guess, lo), hi) if math.isfinite(guess) else lo
        return _key_float(_search(below, _float_key(guess), _FloatCells))
    finally:
        ctx.prec = old


def _grid_value(n: int, k: int) -> float:
    """n·2^k as the nearest double (exact while |n| < 2^53; ±inf past the range)."""
    try:
        if abs(n) < 2**53 and k >= -1022:  # n exact, n·2^k normal or zero: ldexp is exact
            return math.ldexp(float(n), k)
        return float(n * Fraction(2) ** k) if k < 0 else float(n << k)
    except OverflowError:  # the correctly rounded value is ±inf
        return math.inf if n > 0 else -math.inf


# ---------------------------------------------------------------------------
# Exact discrete sampling: index i with probability ∝ exp(log_weights[i])·length_i.
# ---------------------------------------------------------------------------

_U52 = 2.0**-52
_FLUSH = -700.0  # d = log w − max below this: w is taken as [0, 2^−1000] (e^−699 < 2^−1008)
_FLUSH_ABS = 2.0**-999
_LOG_ERR_LIMIT = 2.0**-20  # beyond this float log-weights are too coarse: go straight to arb


def _check_log_weights(log_weights: Any) -> np.ndarray:
    from ..errors import ParameterError

    lw = np.asarray(log_weights, dtype=np.float64)
    if lw.ndim != 1 or lw.size == 0:
        raise ParameterError(
            "log_weights must be a non-empty 1-D array",
            parameter="log_weights",
            allowed="non-empty 1-D array of floats",
        )
    return lw


def _float_weights(lw: np.ndarray, edges: np.ndarray | None):
    """(w, s, lo, hi, M, c): float weights exp(c − M) with c the combined log-weight,
    their float cumsum s, and rigorous enclosures lo ≤ C_k ≤ hi of the true prefix
    sums C_k = Σ_{j≤k} w_j·e^{−M}
    (None where the float error bound is not small enough to be useful).

    Error bound: c_i = lw_i (+ log length_i) is computed with absolute error
    e_i ≤ 2^−50·(|lw_i| + |log len_i| + |M| + 1) (each operation errs by ≤ ½ ulp of its
    result); exp adds ≤ a few ulps; the computed weight is within relative error
    r = 2·max e_i + 2^−48 of the true one, or below 2^−999 absolutely when flushed.
    The float cumsum s_k is within (k+1)·2^−53·s_k of the exact sum of the float
    weights (each partial sum ≤ s_k).  Constants are doubled against the rounding
    of the bounds themselves.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = np.where(np.isfinite(lw), lw, -np.inf)
        log_len = None
        if edges is not None:
            length = edges[1:] - edges[:-1]
            over = ~np.isfinite(length)
            half = 0.5 * edges[1:] - 0.5 * edges[:-1]
            log_len = np.where(over, np.log(half) + math.log(2.0), np.log(length))
            log_len = np.where(length > 0, log_len, -np.inf)
            c = c + log_len
    ok = np.isfinite(c)
    if not ok.any():
        return None
    m = float(c[ok].max())
    d = np.where(ok, c - m, -np.inf)
    flushed = ok & (d < _FLUSH)
    with np.errstate(under="ignore"):
        w = np.where(ok & ~flushed, np.exp(np.maximum(d, _FLUSH)), 0.0)
    err = np.abs(np.where(ok, lw, 0.0))
    if log_len is not None:
        err = err + np.abs(np.where(ok, log_len, 0.0))
    e_max = 2.0**-50 * (float(err.max()) + abs(m) + 1.0)
    s = np.cumsum(w)
    if e_max > _LOG_ERR_LIMIT:
        return w, s, None, None, m, c
    r = 2.0 * e_max + 2.0**-48
    k1 = np.arange(1, s.size + 1, dtype=np.float64)
    rho = 2.0 * (k1 * _U52 + r) + 2.0**-50
    lo = s * (1.0 - rho)
    hi = s * (1.0 + rho) + np.cumsum(flushed) * _FLUSH_ABS
    return w, s, lo, hi, m, c


#: The last law's float enclosures, keyed by its inputs' bytes: a release path that
#: draws many times from one law (``sample(data, size)``, audits) builds them once.
#: Pure memoisation of a deterministic function: the draws are the same bytes.
_FW_LAST: list = [None]
_FW_MEMO_MAX = 1 << 16  # pieces; larger laws are recomputed rather than held in memory


def _float_weights_memo(lw: np.ndarray, edges: np.ndarray | None):
    """:func:`_float_weights`, remembered for the last (lw, edges) seen (read-only arrays)."""
    if lw.size > _FW_MEMO_MAX:
        return _float_weights(lw, edges)
    key = (lw.tobytes(), None if edges is None else edges.tobytes())
    last = _FW_LAST[0]
    if last is not None and last[0] == key:
        return last[1]
    fw = _float_weights(lw, edges)
    if fw is not None:
        for a in fw:
            if isinstance(a, np.ndarray):
                a.setflags(write=False)
    _FW_LAST[0] = (key, fw)
    return fw


def _ball_prefix(
    lw: np.ndarray, edges: np.ndarray | None, m: float, ok: np.ndarray, prec: int
) -> list[arb]:
    """Prefix sums B[k] = Σ_{j<k} exp(lw_j − M)·(e_{j+1} − e_j) as balls at ``prec`` bits."""
    ctx.prec = prec
    shift = arb(m)
    total = arb(0)
    out = [total]
    for j in range(lw.size):
        if ok[j]:
            w = (arb(float(lw[j])) - shift).exp()
            if edges is not None:
                w = w * (arb(float(edges[j + 1])) - arb(float(edges[j])))
            total = total + w
        out.append(total)
    _WORK[0] += lw.size
    return out


def _sample_index_exact(lw: np.ndarray, edges: np.ndarray | None, source: RandomSource) -> int:
    from ..errors import ParameterError

    fw = _float_weights_memo(lw, edges)
    if fw is None:
        raise ParameterError(
            "log_weights has no finite entry of positive weight",
            parameter="log_weights",
            allowed="at least one finite log-weight (with a non-empty piece)",
        )
    w, s, lo, hi, m, c = fw
    u = _LazyUniform(source)
    n = int(w.size)
    if lo is not None:
        # Fast path: certify C_{i−1} ≤ U·W < C_i with float enclosures (outward rounding).
        top = u.m >> 11  # first 53 digits of U: u_lo ≤ U < u_hi
        u_lo, u_hi = top * 2.0**-53, (top + 1) * 2.0**-53
        t_lo = u_lo * float(lo[-1]) * (1.0 - 2.0**-50)
        t_hi = u_hi * float(hi[-1]) * (1.0 + 2.0**-50)
        i = int(min(np.searchsorted(s, (u_lo + 2.0**-54) * s[-1], side="right"), n - 1))
        prev_hi = float(hi[i - 1]) if i > 0 else 0.0
        if prev_hi <= t_lo and t_hi < float(lo[i]):
            return i
    # Exact path: ball prefix sums and the same lazy U, refined until every comparison
    # made by the bisection is decided.
    ok = np.isfinite(c)
    old = ctx.prec
    prec = max(_START_PREC, u.k + 64)
    try:
        balls = _ball_prefix(lw, edges, m, ok, prec)

        def below(k: int) -> bool:
            """Is B[k] = C_{k−1} ≤ U·W?"""
            nonlocal balls, prec
            while True:
                ctx.prec = prec
                total = balls[n]
                if balls[k] <= u.lower() * total:
                    return True
                if balls[k] >= u.upper() * total:
                    return False
                blur = balls[k].rad() + total.rad()
                if blur * 8 > u.width() * total.lower():
                    prec *= 2
                    if prec > _MAX_PREC:
                        raise _Undecidable(f"exact index sampler undecided at {prec} bits")
                    balls = _ball_prefix(lw, edges, m, ok, prec)
                else:
                    u.refine()
                    if prec < u.k + 64:
                        prec = u.k + 64
                        balls = _ball_prefix(lw, edges, m, ok, prec)

        lo_k, hi_k = 0, n  # below(0) holds (B[0] = 0); B[n] = W > U·W
        while hi_k - lo_k > 1:
            mid = (lo_k + hi_k) // 2
            if below(mid):
                lo_k = mid
            else:
                hi_k = mid
        return lo_k
    finally:
        ctx.prec = old


def sample_index(log_weights: Any, rng: Any = None) -> int:
    """Index i drawn with probability exactly exp(lw_i) / Σ_j exp(lw_j).

    The log-weights are the floats given (exact binary rationals); entries that
    are not finite get weight 0.  Inverse CDF on a lazily drawn uniform U:
    return the i with C_{i−1} ≤ U·W < C_i, C the exact prefix sums of the
    weights and W their total.  A float pass with rigorous error bounds (see
    :func:`_float_weights`) decides almost every draw in O(m) numpy work; a
    draw it cannot certify (U·W within the float error of a boundary — about
    m²·2^−50 of draws) is decided with ball arithmetic (python-flint ``arb``)
    on the same U, drawing more digits of U or raising the precision until
    the comparison is certain.  No weight is ever absorbed: a weight e^−800
    below the others is returned with probability exactly its share.
    """
    lw = _check_log_weights(log_weights)
    return _sample_index_exact(lw, None, resolve(rng))


def sample_piece(log_density: Any, edges: Any, rng: Any = None) -> tuple[int, float]:
    """(i, y): piece i with probability ∝ exp(ld_i)·(b_i − a_i), then y uniform on it.

    ``edges`` are the m + 1 ordered piece boundaries a_0 ≤ … ≤ a_m (finite
    floats; b_i = a_{i+1}); pieces of length 0 and non-finite log-densities
    get weight 0.  The piece is drawn exactly (as :func:`sample_index`, with
    the exact real lengths, so a length beyond the float range is no problem)
    and y is :func:`uniform` on [a_i, a_{i+1}]: the output is the correctly
    rounded double of an exact draw from the density exp(ld_i)/Z on piece i.
    """
    from ..errors import ParameterError

    ld = _check_log_weights(log_density)
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.size != ld.size + 1 or not np.all(np.isfinite(e)):
        raise ParameterError(
            "edges must be a 1-D array of finite floats, one longer than log_density",
            parameter="edges",
            allowed="finite floats, len(log_density) + 1 of them",
        )
    if np.any(e[1:] < e[:-1]):
        raise ParameterError("edges must be non-decreasing", parameter="edges")
    source = resolve(rng)
    i = _sample_index_exact(ld, e, source)
    return i, uniform(float(e[i]), float(e[i + 1]), source)


def sample_piece_lazy(
    log_density: Callable[[int], float],
    edge_at: Callable[[int], float],
    m: int,
    window_start: int,
    window_edges: Any,
    rng: Any = None,
    window_log_density: Any = None,
    window_pieces: Any = None,
) -> tuple[int, float]:
    """:func:`sample_piece` over m pieces whose edges are read only where needed.

    ``window_log_density`` (optional): the floats ``log_density(i)`` of the
    window's pieces s … t − 1, computed at once by the caller (the same values).

    ``window_pieces`` (optional): the window as blocks: increasing piece indices
    p_0 = s < … < p_K = t, one per window edge (``window_edges[k]`` is a_{p_k});
    block k holds the pieces [p_k, p_{k+1}).  A block of more than one piece
    must have equal end edges (a run of equal values: weight exactly 0, never
    drawn, none of its edges read), so a window may hold the two ends of a long
    run of ties without its middle; ``window_log_density`` then has one value
    per block (its first piece's).  Default: every window piece its own block.

    Piece i has log-density ``log_density(i)`` (a float) on [a_i, a_{i+1}];
    ``window_edges`` are the known edges a_s … a_t (s = ``window_start``),
    ``edge_at(i)`` reads any other one (e.g. one order statistic from a database).
    The log-density must be unimodal with its maximum inside [s, t), so that on
    a run of pieces outside the window it is bounded by its values at the run's
    two ends.  The draw is **the same exact inversion** as :func:`sample_piece`:
    the piece i with C_{i−1} ≤ U·W < C_i for a lazily drawn uniform U, C the
    exact prefix sums of exp(ld_i)·(a_{i+1} − a_i), W their total — so the law
    is exactly the one :func:`sample_piece` draws from, whatever was read.

    How, without every edge: the pieces before s and from t on start as two
    *runs*, each known only through its two end edges; a run's weight lies
    between exp(min ld)·length and exp(max ld)·length (its pieces' lengths sum
    to the run's length).  Prefix sums are balls that contain these intervals.
    When a comparison of U·W with a prefix sum is undecided because of a run,
    the widest run is split at its middle piece (one ``edge_at`` call) —
    otherwise U gets more digits or the balls more precision, as in
    :func:`sample_index`.  A run the inversion lands in is split until one
    piece is left.  Runs far from the mode weigh ≲ exp(ld_max − ld_edge) of
    the total, so a window a few 1/ε wide typically reads no edge at all.
    Staged sampling of the exponential mechanism from a database: see
    ``docs/backends.md``.
    """
    source = resolve(rng)
    win_arr = np.asarray(window_edges, dtype=np.float64).ravel()
    s = int(window_start)
    at_arr = (np.arange(s, s + win_arr.size) if window_pieces is None
              else np.asarray(window_pieces, dtype=np.int64).ravel())
    t = int(at_arr[-1]) if at_arr.size else s
    if (at_arr.size != win_arr.size or not (0 <= s < t <= m) or int(at_arr[0]) != s
            or not np.all(np.isfinite(win_arr))):
        raise ParameterError(
            "window_edges must hold finite edges a_s … a_t with 0 <= s < t <= m"
            " (one per window_pieces entry, the first at window_start)",
            parameter="window_edges",
        )
    gaps = np.diff(at_arr)
    if np.any(gaps <= 0) or np.any((gaps > 1) & (win_arr[1:] != win_arr[:-1])):
        raise ParameterError(
            "window_pieces must increase, and a block of several pieces must have equal "
            "end edges", parameter="window_pieces")
    win, at = win_arr.tolist(), at_arr.tolist()
    edges: dict[int, float] = dict(zip(at, win, strict=True))
    wblocks = list(zip(at[:-1], at[1:], strict=True))  # the window's blocks, in order
    ld_cache: dict[int, float] = {}
    if window_log_density is not None:
        # one value per block (its first piece): at[:-1] (a shorter list: its prefix)
        ld_cache.update(zip(at, np.asarray(window_log_density, dtype=np.float64).tolist(),
                            strict=False))

    def ld(i: int) -> float:
        if i not in ld_cache:
            ld_cache[i] = float(log_density(i))
        return ld_cache[i]

    def edge(i: int) -> float:
        if i not in edges:
            e = float(edge_at(i))
            if not math.isfinite(e):
                raise ParameterError("edge_at must return finite floats", parameter="edge_at")
            edges[i] = e
        return edges[i]

    # blocks [i1, i2): single pieces inside the window, two runs outside it (split into
    # shorter runs as the inversion needs); the block list is left + window + right
    left: list[tuple[int, int]] = []
    right: list[tuple[int, int]] = []
    if s > 0:
        edge(0)
        left.append((0, s))
    if t < m:
        edge(m)
        right.append((t, m))
    nwin = len(wblocks)

    def bounds(b: tuple[int, int]) -> tuple[arb, arb]:
        """Balls enclosing a lower and an upper bound of the block's exact weight (equal
        for one piece).  Kept apart: one ball around both would lose the lower bound
        of a run to the few bits of a ball's radius."""
        i1, i2 = b
        if edges[i1] == edges[i2]:  # length 0 (a run of ties): weight exactly 0
            return arb(0), arb(0)
        length = arb(edges[i2]) - arb(edges[i1])
        if i2 - i1 == 1:
            w = _exp_ball(ld(i1)) * length
            return w, w
        lds = (ld(i1), ld(i2 - 1))
        return _exp_ball(min(lds)) * length, _exp_ball(max(lds)) * length

    def run_prefix(runs: list[tuple[int, int]]) -> tuple[list[arb], list[arb], int, arb]:
        """Prefix sums of the runs' lower and upper bounds, and the widest run (the
        first of the largest bound gap; −1: none is longer than one piece)."""
        lows, highs = [arb(0)], [arb(0)]
        widest, width = -1, arb(0)
        for j, blk in enumerate(runs):
            lo_w, hi_w = bounds(blk)
            lows.append(lows[-1] + lo_w)
            highs.append(highs[-1] + hi_w)
            if blk[1] - blk[0] > 1 and (hi_w - lo_w).upper() > width.upper():
                widest, width = j, hi_w - lo_w
        return lows, highs, widest, width

    u = _LazyUniform(source)
    if LAZY_FLOAT_PATH and nwin > 1:
        runs = [None if i1 == i2 else (min(ld(i1), ld(i2 - 1)), max(ld(i1), ld(i2 - 1)),
                                       edge(i2) - edge(i1))
                for i1, i2 in ((0, s), (t, m))]
        lds = (np.asarray(window_log_density, dtype=np.float64)
               if window_log_density is not None else np.array([ld(a) for a, _ in wblocks]))
        p = _lazy_float_inversion(lds, np.diff(win_arr), runs[0], runs[1], u)
        if p is not None:  # a block of weight > 0: one piece
            i = wblocks[p][0]
            return i, uniform(edges[i], edges[i + 1], source)
    old = ctx.prec
    prec = max(_START_PREC, u.k + 64)
    # The window's pieces never change: their prefix sums are computed once per working
    # precision, so a step (a split, a digit of U) costs O(runs + log window), not
    # O(window) — a draw that lands in a run far outside a wide window (e.g. every
    # window piece of length 0: the target rank among rows clamped to a bound) takes
    # some log2(m) splits.
    win_prec, win_sums = -1, [arb(0)]
    try:
        while True:
            ctx.prec = prec
            if win_prec != prec:
                win_sums = [arb(0)]
                for blk in wblocks:
                    win_sums.append(win_sums[-1] + bounds(blk)[0])
                win_prec = prec
            lo_l, hi_l, wide_l, width_l = run_prefix(left)
            lo_r, hi_r, wide_r, width_r = run_prefix(right)
            nl = len(left)
            n_blocks = nl + nwin + len(right)
            # the widest run of the whole list: the left one unless the right is wider
            if wide_r >= 0 and (wide_l < 0 or width_r.upper() > width_l.upper()):
                widest = nl + nwin + wide_r
            else:
                widest = wide_l

            def prefix(k: int, lo_l: list = lo_l, hi_l: list = hi_l, lo_r: list = lo_r,
                       hi_r: list = hi_r, nl: int = nl,
                       win_sums: list = win_sums) -> tuple[arb, arb]:
                """Enclosures (low, high) of the bounds' prefix sums over blocks < k."""
                if k <= nl:
                    return lo_l[k], hi_l[k]
                if k <= nl + nwin:
                    w = win_sums[k - nl]
                    return lo_l[-1] + w, hi_l[-1] + w
                j, w = k - nl - nwin, win_sums[-1]
                return lo_l[-1] + w + lo_r[j], hi_l[-1] + w + hi_r[j]

            def block(k: int, nl: int = nl) -> tuple[int, int]:
                if k < nl:
                    return left[k]
                if k < nl + nwin:
                    return wblocks[k - nl]
                return right[k - nl - nwin]

            w_lo, w_hi = prefix(n_blocks)
            if not w_lo > 0:
                if w_hi.upper() <= 0:
                    raise ParameterError("the pieces have no weight", parameter="log_density")
                action: tuple[str, int] | None = ("split", widest) if widest >= 0 else (
                    "precision", -1)
            else:
                action = None
                lo_k, hi_k = 0, n_blocks
                while hi_k - lo_k > 1:
                    mid = (lo_k + hi_k) // 2
                    low_mid, high_mid = prefix(mid)
                    if high_mid <= u.lower() * w_lo:  # C_mid ≤ U·W for sure
                        lo_k = mid
                    elif low_mid >= u.upper() * w_hi:  # C_mid ≥ U·W for sure
                        hi_k = mid
                    else:
                        scale = u.width() * w_lo.lower()
                        run_blur = (w_hi - w_lo).upper()
                        if widest >= 0 and run_blur * 8 > scale:
                            action = ("split", widest)
                        elif (high_mid.rad() + w_lo.rad() + w_hi.rad()) * 8 > scale:
                            action = ("precision", -1)
                        else:
                            action = ("refine", -1)
                        break
                if action is None:
                    i1, i2 = block(lo_k)
                    if i2 - i1 == 1:
                        ctx.prec = old
                        return i1, uniform(edges[i1], edges[i1 + 1], source)
                    action = ("split", lo_k)
            kind, j = action
            if kind == "split":
                i1, i2 = block(j)
                mid_i = (i1 + i2) // 2
                edge(mid_i)
                runs_of = left if j < nl else right
                r = j if j < nl else j - nl - nwin
                runs_of[r:r + 1] = [(i1, mid_i), (mid_i, i2)]
            elif kind == "precision":
                prec *= 2
                if prec > _MAX_PREC:
                    raise _Undecidable(f"lazy piece sampler undecided at {prec} bits")
            else:
                u.refine()
                prec = max(prec, u.k + 64)
    finally:
        ctx.prec = old


#: certify the lazy inversion with floats first (the same piece, the same digits of U)
LAZY_FLOAT_PATH = True


def _lazy_float_inversion(
    lds: np.ndarray, lens: np.ndarray, run_l: tuple | None, run_r: tuple | None,
    u: _LazyUniform,
) -> int | None:
    """The window piece p that :func:`sample_piece_lazy`'s exact inversion picks for U,
    certified with float enclosures, or None (undecided: the ball path decides).

    Blocks as in the ball path: the left run (weight in [e^{ld_min}·len, e^{ld_max}·len]),
    the window's single pieces (e^{ld_p}·len_p), the right run.  With the error
    bound of :func:`_float_weights` (relative r on each weight, (k+1)·2^−52 on a
    float prefix sum, 2^−50 per further operation), p is returned only when
    C_{p−1} ≤ U_lo·W_lo and C_p > U_hi·W_hi for enclosures of the exact prefix
    sums and total, U ∈ [U_lo, U_hi) its first 53 digits: every comparison the
    ball path's bisection makes on the same U is then decided the same way, at
    its first step, before it would split a run or draw another digit of U.
    """
    if u.k < 53 or not np.all(np.isfinite(lens)):
        return None
    with np.errstate(divide="ignore"):
        log_len = np.log(lens)
    c = np.where(lens > 0, lds + log_len, -np.inf)
    ends = []
    for run in (run_l, run_r):
        if run is None:
            ends.append(None)
            continue
        lo_ld, hi_ld, length = run
        if not (math.isfinite(length) and math.isfinite(lo_ld) and math.isfinite(hi_ld)):
            return None
        ll = math.log(length) if length > 0 else -math.inf
        ends.append((lo_ld + ll, hi_ld + ll, abs(hi_ld) + abs(lo_ld) + abs(ll)))
    finite = c[np.isfinite(c)]
    if finite.size == 0:
        return None
    m = max([float(finite.max())] + [e[1] for e in ends if e is not None and e[1] > -math.inf])
    d = c - m
    if np.any(np.isfinite(d) & (d < _FLUSH)):
        return None
    err = float(np.max(np.abs(lds[np.isfinite(c)]) + np.abs(log_len[np.isfinite(c)])))
    err = max([err] + [e[2] for e in ends if e is not None and math.isfinite(e[2])])
    e_max = 2.0**-50 * (err + abs(m) + 1.0)
    if e_max > _LOG_ERR_LIMIT:
        return None
    r = 2.0 * e_max + 2.0**-48
    w = np.where(np.isfinite(d), np.exp(np.where(np.isfinite(d), d, 0.0)), 0.0)
    sums = np.cumsum(w)
    rho = 2.0 * (np.arange(1, sums.size + 1, dtype=np.float64) * _U52 + r) + 2.0**-50
    lo, hi = sums * (1.0 - rho), sums * (1.0 + rho)
    run_w = []
    for e in ends:
        if e is None or e[1] == -math.inf:
            run_w.append((0.0, 0.0))
            continue
        d_lo, d_hi = e[0] - m, e[1] - m
        w_lo = 0.0 if d_lo < _FLUSH else math.exp(d_lo) * (1.0 - r - 2.0**-50)
        w_hi = _FLUSH_ABS if d_hi < _FLUSH else math.exp(d_hi) * (1.0 + r + 2.0**-50)
        run_w.append((max(w_lo, 0.0), w_hi))
    (l_lo, l_hi), (r_lo, r_hi) = run_w
    w_lo_total = (l_lo + float(lo[-1]) + r_lo) * (1.0 - 2.0**-49)
    w_hi_total = (l_hi + float(hi[-1]) + r_hi) * (1.0 + 2.0**-49)
    if not (w_lo_total > 0.0 and math.isfinite(w_hi_total)):
        return None
    top = u.m >> (u.k - 53)
    t_lo = top * 2.0**-53 * w_lo_total * (1.0 - 2.0**-50)
    t_hi = (top + 1) * 2.0**-53 * w_hi_total * (1.0 + 2.0**-50)
    after_lo = (l_lo + lo) * (1.0 - 2.0**-50)  # C_p, lower enclosure
    p = int(np.searchsorted(after_lo, t_hi, side="right"))  # first p with C_p > U·W surely
    if p >= sums.size:
        return None
    before_hi = (l_hi + (float(hi[p - 1]) if p > 0 else 0.0)) * (1.0 + 2.0**-50)
    return p if before_hi <= t_lo else None


def _exp_ball(x: float) -> arb:
    """exp(x) as a ball (0 for −inf)."""
    if x == -math.inf:
        return arb(0)
    return arb(x).exp()


# ---------------------------------------------------------------------------
# Exact permute-and-flip (report-noisy-max with exponential noise) over blocks.
# ---------------------------------------------------------------------------

_PF_MARGIN = 2.0**-40  # relative slack on the float enclosures of log τ (see below)
_PF_FAST = [True]  # tests switch the float shortcut off to exercise the ball path


def _word_uniform(source: RandomSource, word: int) -> _LazyUniform:
    """A lazy uniform whose first 64 digits are ``word`` (already drawn from ``source``)."""
    u = _LazyUniform.__new__(_LazyUniform)
    u._source, u.m, u.k = source, int(word), 64
    return u


def _ball_of(u: _LazyUniform) -> arb:
    return u.lower().union(u.upper())


def _log_interval(x: arb) -> tuple[float, float]:
    """Floats lo ≤ log x ≤ hi, outward (−inf/+inf where the ball does not decide)."""
    if not x.is_finite():
        return -math.inf, math.inf
    lo_x, hi_x = x.lower(), x.upper()
    lo = math.nextafter(float(lo_x.log().lower()), -math.inf) if lo_x > 0 else -math.inf
    hi = math.nextafter(float(hi_x.log().upper()), math.inf) if hi_x > 0 else -math.inf
    return lo, hi


def sample_permute_and_flip(
    log_rate: Any,
    log_rate_ball: Callable[[int], arb],
    sizes: Any,
    error_scale: Any = None,
    ratio: Callable[[int, int], arb] | None = None,
    rng: Any = None,
) -> tuple[int, int]:
    """(b, j): point j of block b, drawn by permute-and-flip, exactly.

    The candidates come in blocks: block b holds ``sizes[b]`` points; point j of
    it has rate p_{b,j} = p̄_b·ρ_b(j) with log p̄_b = ``log_rate[b]`` (a float
    approximation whose exact value is the ball ``log_rate_ball(b)`` at the
    current working precision, absolute float error ≤ 2⁻⁴⁵·(1 + ``error_scale[b]``))
    and ρ_b(j) = ``ratio(b, j)`` ∈ (0, 1] (a ball; 1 for every point when
    ``ratio`` is None).  Returns point i with probability

        P(i) = ∫₀^∞ p_i·∏_{k≠i} max(0, 1 − p_k·t) dt  over t < 1/p_i,

    which is the law of report-noisy-max with exponential noise,
    argmax_i (log p_i + E_i), E_i iid Exp(1) — identical to McKenna & Sheldon's
    permute-and-flip with acceptance exp(log p_i − max log p) (Ding, Kifer et al.
    2021, Thm. 1).  Scaling every p_i by the same constant leaves the law unchanged.

    How, exactly.  RNM-exponential is argmin_i T_i with T_i = U_i/p_i, U_i iid
    uniform (T_i = exp(−(log p_i + E_i)) with E_i = −log U_i).  Within block b write
    T_{b,j} = τ_{b,j}/ρ_b(j) with τ_{b,j} = U_{b,j}/p̄_b ≤ T_{b,j}: the block's
    τ's, taken in increasing order, are m_b iid uniforms on [0, 1/p̄_b] in order,
    attached to the block's points in a uniformly random order.  The first has
    P(τ > t) = (1 − p̄ t)^m, i.e. τ = (1 − V^{1/m})/p̄ with V uniform; given the
    previous one τ₀ and r points left, the next is τ₀ + (1/p̄ − τ₀)(1 − V^{1/r}).
    The sampler *reveals* a block's next τ (and its point, uniform among the
    block's unrevealed points, and so its T = τ/ρ) while that τ may still be below
    the smallest revealed T; it stops when one revealed T is certainly below
    every other revealed T and every block's next τ (a lower bound of all its
    unrevealed T's).  Revealing in any order does not change the law; every
    comparison is decided exactly: float enclosures of log τ (from the first 53
    digits of each V, widened by 2⁻⁴⁰ relative) decide almost all of them, and
    the rest are decided in ball arithmetic on lazily refined uniforms (more
    digits, more working bits) as in :func:`sample_index`.  Work: one vectorised
    float pass over the blocks plus a few ball evaluations per draw while ρ is
    close to 1 inside large blocks (the callers' blocks keep ρ ≥ ~½ there).
    The work depends on the draw and on the blocks (so on the data): a timing
    channel, as for the other exact samplers of this module.
    """
    source = resolve(rng)
    lr = np.asarray(log_rate, dtype=np.float64)
    m = np.asarray(sizes, dtype=np.int64)
    if lr.ndim != 1 or lr.size == 0 or m.shape != lr.shape or np.any(m < 1):
        raise ParameterError(
            "log_rate and sizes must be non-empty 1-D arrays of the same length, sizes >= 1",
            parameter="sizes",
        )
    if not np.all(np.isfinite(lr)):
        raise ParameterError("log_rate must be finite", parameter="log_rate")
    scale = np.zeros_like(lr) if error_scale is None else np.asarray(error_scale, float)
    B = lr.size
    words = np.frombuffer(source.random_bytes(8 * B), dtype=np.uint64)
    top = (words >> np.uint64(11)).astype(np.float64)
    v_lo, v_hi = top * 2.0**-53, (top + 1.0) * 2.0**-53
    mf = m.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # log τ = log(1 − V^{1/m}) − log p̄, decreasing in V
        k_hi = np.log(-np.expm1(np.log(v_lo) / mf)) - lr
        k_lo = np.log(-np.expm1(np.log(v_hi) / mf)) - lr
        slack = _PF_MARGIN * (
            1.0 + np.abs(np.where(np.isfinite(k_hi), k_hi, 0.0)) + np.abs(lr) + scale
        )
    lo = np.where(np.isfinite(k_lo), k_lo - slack, -np.inf)
    hi = np.where(np.isfinite(k_hi), k_hi + slack, np.inf)
    if ratio is None and _PF_FAST[0]:
        # every ρ = 1: the first τ of the block with the smallest one is the winner's
        # T (its block's later τ's are larger); certified by the float enclosures alone
        b = int(np.argmin(lo))
        if B == 1 or hi[b] < np.partition(lo, 1)[1]:
            return b, source.integers(int(m[b]))

    chains: dict[int, list[tuple[_LazyUniform, int]]] = {}  # exact blocks: (V, r) per τ
    tried: dict[int, set[int]] = {}
    revealed: list[list[Any]] = []  # [block, index in chain, point, lo, hi]
    old = ctx.prec
    prec = _START_PREC

    def taus(b: int) -> list[arb]:
        inv = (-log_rate_ball(b)).exp()  # 1/p̄
        t, out = arb(0), []
        for u, r in chains[b]:
            t = t + (inv - t) * (-((_ball_of(u).log() / r).expm1()))
            out.append(t)
        _WORK[0] += len(out)
        return out

    def evaluate(b: int) -> None:
        """Ball enclosures of block b's chain: the revealed T's and the next τ."""
        ctx.prec = prec
        ts = taus(b)
        for rv in revealed:
            if rv[0] == b:
                t = ts[rv[1]]
                if ratio is not None:
                    t = t / ratio(b, rv[2])
                rv[3], rv[4] = _log_interval(t)
        if len(ts) > len(tried[b]):  # the last τ is the block's next, unrevealed one
            lo[b], hi[b] = _log_interval(ts[-1])

    def to_exact(b: int) -> None:
        if b not in chains:
            chains[b] = [(_word_uniform(source, int(words[b])), int(m[b]))]
            tried[b] = set()

    def refine(b: int) -> None:
        nonlocal prec
        to_exact(b)
        for u, _ in chains[b]:
            u.refine()
        prec = max(prec, max(u.k for u, _ in chains[b]) + 64)
        if prec > _MAX_PREC:
            raise _Undecidable(f"permute-and-flip undecided at {prec} bits")

    def reveal(b: int) -> None:
        to_exact(b)
        chain = chains[b]
        r = chain[-1][1]
        size = int(m[b])
        # the point: uniform among the block's unrevealed ones
        if size - len(tried[b]) <= 64 or len(tried[b]) * 2 > size:
            left = [j for j in range(size) if j not in tried[b]]
            j = left[source.integers(len(left))]
        else:
            while True:
                j = source.integers(size)
                if j not in tried[b]:
                    break
        tried[b].add(j)
        revealed.append([b, len(chain) - 1, j, -math.inf, math.inf])
        if r - 1 > 0:
            chain.append((_LazyUniform(source), r - 1))
        else:
            lo[b], hi[b] = math.inf, math.inf
        evaluate(b)

    try:
        steps = 0
        while True:
            steps += 1
            if steps > 1 << 20:
                raise _Undecidable("permute-and-flip: too many steps")
            b_min = int(np.argmin(lo))
            if revealed:
                best = min(range(len(revealed)), key=lambda i: revealed[i][4])
                h = revealed[best][4]
                others = [rv for i, rv in enumerate(revealed) if i != best]
                if h < lo[b_min] and all(h < rv[3] for rv in others):
                    _, _, j, _, _ = revealed[best]
                    return int(revealed[best][0]), int(j)
                if not math.isfinite(h):  # its digits do not bound it yet
                    refine(revealed[best][0])
                    evaluate(revealed[best][0])
                    continue
            else:
                h = math.inf
            if lo[b_min] < h:  # the block's next point may come first: look at it
                reveal(b_min)
                continue
            # undecided by the current enclosures: refine the blocks that blur it
            blur = {revealed[best][0]}
            blur.update(rv[0] for rv in others if rv[3] <= h)
            blur.update(int(b) for b in np.flatnonzero(lo <= h))
            for b in blur:
                refine(b)
            for b in blur:
                evaluate(b)
    finally:
        ctx.prec = old
