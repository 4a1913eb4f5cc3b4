"""Exact privacy checks for mechanisms whose output law is known.

For two output laws P (on input x) and P′ (on a neighbour x′) with densities p,
p′ and point masses (refusals ⊥ and other discrete outputs):

- the **privacy profile** (hockey-stick divergence, Balle & Wang 2018 Thm. 5;
  Balle, Barthe & Gaboardi 2018)

      δ(ε) = max{ H_ε(P‖P′), H_ε(P′‖P) },
      H_ε(P‖P′) = ∫ (p − e^ε p′)₊ dy + Σ_atoms (P{a} − e^ε P′{a})₊,

  is the smallest δ for which the pair satisfies (ε, δ)-DP;
- the **maximal privacy loss** sup_y |ln p(y) − ln p′(y)| (and over atoms) is
  the smallest ε of pure DP;
- the **Rényi divergence** D_α(P‖P′) = ln(∫ p^α p′^{1−α}) / (α − 1) gives
  zCDP: ρ-zCDP means D_α ≤ αρ for every α > 1 (Bun & Steinke 2016, Def. 1.1).

The integrals are computed by a vectorised adaptive Gauss–Kronrod (7/15)
rule on pieces split at the densities' kinks and at the crossing points where
p = e^ε p′ (found by a sign scan on a sinh-spaced grid and bisection), so that
the integrand is smooth on each piece.  The integration range is widened until
both laws put at most ``tail_tolerance`` outside it, measured through their
CDFs; the tail mass left outside bounds what the tails can add to δ (the
integrand (p − e^ε p′)₊ is at most p).  ``error_bound`` is that tail mass plus
the Gauss–Kronrod error estimates |K15 − G7| summed over the pieces.  Without
CDFs the tails are handled by quadrature alone and ``rigorous_tails`` is False.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..privacy import ZCDP, ApproxDP, Guarantee, PureDP

# ---------------------------------------------------------------------------
# Gauss–Kronrod 7/15 (QUADPACK qk15 constants)
_XGK = np.array(
    [
        0.991455371120812639206854697526329,
        0.949107912342758524526189684047851,
        0.864864423359769072789712788640926,
        0.741531185599394439863864773280788,
        0.586087235467691130294144845693013,
        0.405845151377397166906606412076961,
        0.207784955007898467600689403773245,
        0.000000000000000000000000000000000,
    ]
)
_WGK = np.array(
    [
        0.022935322010529224963732008058970,
        0.063092092629978553290700663189204,
        0.104790010322250183839876322541518,
        0.140653259715525918745189590510238,
        0.169004726639267902826583426598550,
        0.190350578064785409913256402421014,
        0.204432940075298892414161999234649,
        0.209482141084727828012999174891714,
    ]
)
_WG = np.array(
    [
        0.129484966168869693270611432679082,
        0.279705391489276667901467771423780,
        0.381830050505118944950369775488975,
        0.417959183673469387755102040816327,
    ]
)
# Full 15 nodes on [-1, 1] and the matching weights.
_NODES = np.concatenate([-_XGK[:-1], _XGK[::-1]])
_KW = np.concatenate([_WGK[:-1], _WGK[::-1]])
_GW = np.zeros(15)
# Gauss nodes are the Kronrod nodes with odd index in _XGK (1, 3, 5, 7).
for _i, _w in zip((1, 3, 5), _WG[:3], strict=True):
    _GW[_i] = _w
    _GW[14 - _i] = _w
_GW[7] = _WG[3]


def integrate(
    f: Callable[[np.ndarray], np.ndarray],
    breaks: Sequence[float],
    abs_tol: float = 1e-15,
    rel_tol: float = 1e-12,
    max_intervals: int = 50_000,
) -> tuple[float, float]:
    """∫ f over [breaks[0], breaks[-1]] by adaptive Gauss–Kronrod 7/15.

    ``f`` must be vectorised.  The pieces between consecutive breaks are
    refined by bisection where |K15 − G7| is largest until the summed estimate
    is ≤ max(abs_tol, rel_tol·|result|).  Returns (value, error estimate),
    the estimate being Σ|K15 − G7| (a conservative QUADPACK-style estimate for
    piecewise-smooth integrands).
    """
    b = np.unique(np.asarray(breaks, dtype=float))
    b = b[np.isfinite(b)]
    if b.size < 2:
        return 0.0, 0.0
    k_done: list[float] = []
    e_done: list[float] = []
    lo, hi = b[:-1], b[1:]
    value = 0.0
    for _ in range(60):
        half = 0.5 * (hi - lo)
        mid = 0.5 * (hi + lo)
        y = mid[:, None] + half[:, None] * _NODES[None, :]
        with np.errstate(all="ignore"):
            fy = np.asarray(f(y.ravel()), dtype=float).reshape(y.shape)
        if np.isposinf(fy).any():
            return math.inf, 0.0  # an infinite integrand (e.g. D_α with p′ = 0 < p)
        fy = np.where(np.isnan(fy), 0.0, fy)
        kr = half * (fy @ _KW)
        gr = half * (fy @ _GW)
        err = np.abs(kr - gr)
        value = float(sum(k_done) + kr.sum())
        total_err = float(sum(e_done) + err.sum())
        target = max(abs_tol, rel_tol * abs(value))
        n_total = len(k_done) + kr.size
        if total_err <= target or n_total >= max_intervals:
            return value, total_err
        # Split pieces carrying more than their share of the allowed error.
        share = target / max(n_total, 1)
        split = err > share
        # Pieces too short to split further are accepted as they are.
        tiny = (hi - lo) <= 4 * np.finfo(float).eps * np.maximum(np.abs(lo), np.abs(hi))
        split &= ~tiny
        if not split.any():
            return value, total_err
        k_done.extend(kr[~split].tolist())
        e_done.extend(err[~split].tolist())
        lo_s, hi_s, mid_s = lo[split], hi[split], mid[split]
        lo = np.concatenate([lo_s, mid_s])
        hi = np.concatenate([mid_s, hi_s])
    return value, total_err


# ---------------------------------------------------------------------------
# Output laws


@dataclass(frozen=True)
class _Law:
    logpdf: Callable[[np.ndarray], np.ndarray]
    cdf: Callable[[np.ndarray], np.ndarray] | None
    kinks: tuple[float, ...]
    atoms: dict[Hashable, float]
    mass: float  # continuous mass

    def lower_tail(self, y: float) -> float:
        assert self.cdf is not None
        return float(max(0.0, float(self.cdf(np.array([y]))[0])))

    def upper_tail(self, y: float) -> float:
        assert self.cdf is not None
        return float(max(0.0, self.mass - float(self.cdf(np.array([y]))[0])))


def _law(
    density: Any,
    logdensity: Callable | None = None,
    cdf: Callable | None = None,
    kinks: Iterable[float] = (),
    atoms: Mapping[Hashable, float] | None = None,
) -> _Law:
    """Normalise a density callable or an ``OutputDistribution`` to a _Law."""
    if hasattr(density, "pdf") and hasattr(density, "cdf") and hasattr(density, "atoms"):
        od = density
        logdensity = logdensity or od.logpdf
        cdf = cdf or od.cdf
        kinks = tuple(kinks) + tuple(od.kinks)
        atoms = dict(od.atoms) if atoms is None else dict(atoms)
        density = od.pdf
    atoms = {k: float(v) for k, v in dict(atoms or {}).items()}
    for k, v in atoms.items():
        if not (math.isfinite(v) and 0 <= v <= 1):
            raise ParameterError(f"atom probabilities must be in [0, 1], got {v!r} for {k!r}")
    if logdensity is None:
        pdf = density

        def logdensity(y: np.ndarray) -> np.ndarray:
            # Below 1e-250 a float density has lost its relative precision
            # (and soon underflows): report it as zero, which the loss scan skips.
            v = np.asarray(pdf(y), dtype=float)
            with np.errstate(divide="ignore"):
                return np.where(v < 1e-250, -np.inf, np.log(v))

    mass = 1.0 - sum(atoms.values())
    if cdf is not None:
        with np.errstate(all="ignore"):
            top = float(np.asarray(cdf(np.array([np.inf])), dtype=float).ravel()[0])
        if math.isfinite(top) and 0 <= top <= 1 + 1e-12:
            mass = top
    lp = logdensity

    def safe_logpdf(y: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = np.asarray(lp(np.asarray(y, dtype=float)), dtype=float)
        return np.where(np.isnan(out), -np.inf, out)

    kk = tuple(sorted({float(k) for k in kinks if math.isfinite(float(k))}))
    return _Law(safe_logpdf, cdf, kk, atoms, mass)


def _pair(density_x, density_x_prime, kinks, cdfs, atoms_x, atoms_x_prime, logdensities):
    cx, cxp = (None, None) if cdfs is None else cdfs
    lx, lxp = (None, None) if logdensities is None else logdensities
    px = _law(density_x, lx, cx, kinks, atoms_x)
    pxp = _law(density_x_prime, lxp, cxp, kinks, atoms_x_prime)
    return px, pxp


def _median(law: _Law, start: float) -> float:
    """Median of the continuous part by bisection on the CDF."""
    half = 0.5 * law.mass
    lo, hi, step = start - 1.0, start + 1.0, 1.0
    for _ in range(2000):
        if float(law.cdf(np.array([lo]))[0]) <= half:
            break
        step *= 2
        lo = start - step
    step = 1.0
    for _ in range(2000):
        if float(law.cdf(np.array([hi]))[0]) >= half:
            break
        step *= 2
        hi = start + step
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if float(law.cdf(np.array([mid]))[0]) < half:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class _Range:
    centre: float
    width: float  # core scale h
    lo: float
    hi: float
    tail: tuple[float, float]  # mass of each law outside [lo, hi]
    rigorous: bool


def _find_range(laws: Sequence[_Law], tail_tolerance: float) -> _Range:
    # A law with no continuous mass has no tails to bound.
    all_laws = list(laws)
    laws = [law for law in all_laws if law.mass > 0] or all_laws
    kinks = sorted({k for law in laws for k in law.kinks})
    have_cdf = all(law.cdf is not None and law.mass > 0 for law in laws)
    if kinks:
        centre = float(np.median(kinks))
    elif have_cdf:
        centre = _median(laws[0], 0.0)
    else:
        centre = 0.0
    # Core scale: 1/peak density (a density of width h peaks near 1/h).
    pts = np.array([centre, *kinks], dtype=float)
    peak = max(float(np.max(law.logpdf(pts))) for law in laws)
    h = math.exp(-peak) if math.isfinite(peak) and peak > -700 else 1.0
    if kinks:
        h = max(h, 1e-300, (kinks[-1] - kinks[0]) / 8) if len(kinks) > 1 else h
    h = min(max(h, 1e-300), 1e300)
    left = (kinks[0] if kinks else centre) - h
    right = (kinks[-1] if kinks else centre) + h
    if have_cdf:
        # Candidate ends at anchor ∓ h·2^j, evaluated in one vectorised call per law.
        with np.errstate(over="ignore"):
            spans = h * 2.0 ** np.arange(0, 1100)
        lo_anchor = kinks[0] if kinks else centre
        hi_anchor = kinks[-1] if kinks else centre
        lefts = lo_anchor - spans
        rights = hi_anchor + spans
        lefts = lefts[np.isfinite(lefts)]
        rights = rights[np.isfinite(rights)]
        with np.errstate(all="ignore"):
            lt = np.max([np.maximum(np.asarray(law.cdf(lefts), float), 0) for law in laws], 0)
            ut = np.max(
                [np.maximum(law.mass - np.asarray(law.cdf(rights), float), 0) for law in laws], 0
            )
        lt = np.where(np.isnan(lt), np.inf, lt)
        ut = np.where(np.isnan(ut), np.inf, ut)
        ok_l = np.flatnonzero(lt <= tail_tolerance)
        ok_r = np.flatnonzero(ut <= tail_tolerance)
        left = float(lefts[ok_l[0]] if ok_l.size else lefts[-1])
        right = float(rights[ok_r[0]] if ok_r.size else rights[-1])
        tails = tuple(
            law.lower_tail(left) + law.upper_tail(right) if law.mass > 0 else 0.0
            for law in all_laws
        )
        return _Range(centre, h, left, right, (tails[0], tails[1]), True)
    # No CDFs: widen until h·density is negligible at the ends (a heuristic).
    for side in (-1, 1):
        span = h
        for _ in range(2100):
            y = centre + side * span
            lp = max(float(law.logpdf(np.array([y]))[0]) for law in laws)
            if lp + math.log(span) < math.log(tail_tolerance) - 5:
                break
            span *= 2
        if side < 0:
            left = min(left, centre - span)
        else:
            right = max(right, centre + span)
    return _Range(centre, h, left, right, (math.nan, math.nan), False)


def _grid(rng: _Range, extra: Iterable[float], n: int = 4001) -> np.ndarray:
    """sinh-spaced points over [lo, hi] (dense in the core, geometric in the
    tails), plus points clustered around each extra point (kinks)."""
    c, h = rng.centre, rng.width
    t = np.linspace(math.asinh((rng.lo - c) / h), math.asinh((rng.hi - c) / h), n)
    pts = [c + h * np.sinh(t)]
    offs = h * np.logspace(-9, 1, 40)
    for k in extra:
        pts.append(np.concatenate([k - offs, [k], k + offs]))
    g = np.concatenate(pts)
    g = g[(g >= rng.lo) & (g <= rng.hi)]
    return np.unique(g)


def _sign_changes(g: Callable[[np.ndarray], np.ndarray], grid: np.ndarray) -> list[float]:
    """Points where sign(g) changes along ``grid``, refined by bisection."""
    with np.errstate(invalid="ignore"):
        v = g(grid)
    # Rounding noise where the ratio is exactly e^ε on a stretch is not a crossing.
    v = np.where(np.abs(v) <= 1e-10, 0.0, v)
    s = np.sign(np.where(np.isnan(v), 0.0, v))
    nz = np.flatnonzero(s != 0)
    out: list[float] = []
    for i, j in zip(nz[:-1], nz[1:], strict=True):
        if s[i] == s[j]:
            continue
        lo, hi, slo = float(grid[i]), float(grid[j]), s[i]
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            gm = g(np.array([mid]))[0]
            sm = 0.0 if abs(gm) <= 1e-10 else np.sign(gm)
            if sm == slo:
                lo = mid
            elif sm == 0 or np.isnan(sm):
                lo = hi = mid
                break
            else:
                hi = mid
        out.append(0.5 * (lo + hi))
    return out


def _breaks(rng: _Range, points: Iterable[float]) -> list[float]:
    """Pieces: [lo, hi] split at the given points and at centre ± h·10^j so
    that long tail pieces are refined on a geometric scale."""
    c, h = rng.centre, rng.width
    geo = []
    j_max = int(math.ceil(math.log10(max((rng.hi - rng.lo) / h, 10.0)))) + 1
    for j in range(-3, j_max + 1):
        geo += [c - h * 10.0**j, c + h * 10.0**j]
    pts = [rng.lo, rng.hi, c, *points, *geo]
    return sorted({float(p) for p in pts if rng.lo <= p <= rng.hi and math.isfinite(p)})


# ---------------------------------------------------------------------------
# Privacy profile


@dataclass(frozen=True)
class PrivacyProfile:
    """δ(ε) of a pair of output laws (the max over both directions).

    The true value lies in [delta − error_bound, delta + error_bound]
    (the tail part only adds, the quadrature part goes either way).
    """

    epsilon: float
    delta: float
    error_bound: float
    delta_forward: float  # H_ε(P_x ‖ P_x′)
    delta_backward: float  # H_ε(P_x′ ‖ P_x)
    crossings: tuple[float, ...] = ()
    rigorous_tails: bool = True

    @property
    def upper(self) -> float:
        """A bound the true δ(ε) does not exceed (up to the quadrature estimate)."""
        return self.delta + self.error_bound


def _hockey_stick(
    a: _Law, b: _Law, eps: float, rng: _Range, grid: np.ndarray, tails: tuple[float, float]
) -> tuple[float, float, list[float]]:
    """H_ε(A‖B) on [lo, hi] + atoms; returns (value, error bound, crossings)."""
    log_e = eps

    def g(y: np.ndarray) -> np.ndarray:
        la, lb = a.logpdf(y), b.logpdf(y)
        with np.errstate(invalid="ignore"):
            out = la - lb - log_e
        # Both zero: no contribution (sign 0); only A positive: positive.
        out = np.where(np.isneginf(la) & np.isneginf(lb), np.nan, out)
        return out

    cross = _sign_changes(g, grid)

    def f(y: np.ndarray) -> np.ndarray:
        la, lb = a.logpdf(y), b.logpdf(y)
        with np.errstate(all="ignore"):
            d = np.exp(la) - np.exp(lb + log_e)
        return np.maximum(d, 0.0)

    val, err = integrate(f, _breaks(rng, [*a.kinks, *b.kinks, *cross]))
    e = math.exp(eps)
    for key in set(a.atoms) | set(b.atoms):
        val += max(0.0, a.atoms.get(key, 0.0) - e * b.atoms.get(key, 0.0))
    # The tails outside [lo, hi] add at most A's mass there.
    tail = tails[0] if rng.rigorous else 0.0
    if not rng.rigorous:
        # Quadrature-only tails: integrate out to where nothing is left.
        span = rng.hi - rng.lo
        for side, edge in ((-1, rng.lo), (1, rng.hi)):
            brk = sorted([edge, *(edge + side * span * 10.0**j for j in range(-3, 7))])
            tv, te = integrate(f, brk)
            val += tv
            err += te
    return val, err + tail, cross


def privacy_profile(
    density_x: Any,
    density_x_prime: Any,
    epsilon: float,
    kinks: Iterable[float] = (),
    cdfs: tuple[Callable, Callable] | None = None,
    atoms_x: Mapping[Hashable, float] | None = None,
    atoms_x_prime: Mapping[Hashable, float] | None = None,
    logdensities: tuple[Callable, Callable] | None = None,
    tail_tolerance: float = 1e-14,
) -> PrivacyProfile:
    """δ(ε) = max over both directions of ∫(p − e^ε p′)₊ + Σ atoms (P{a} − e^ε P′{a})₊.

    ``density_x`` / ``density_x_prime``: vectorised densities of the continuous
    parts (integrating to 1 − their atom masses), or ``OutputDistribution``
    objects (``instancedp.mechanisms.base``), whose cdf, logpdf, kinks and atoms
    are then used.  ``kinks``: points where either density is not smooth.
    ``cdfs``: the continuous parts' CDFs (mass on (−∞, y]); they make the tail
    bound rigorous.  ``atoms_*``: point masses, e.g. ``{None: P(⊥)}``.
    ``logdensities``: log-densities (avoid underflow in far tails).
    """
    eps = _validate.nonnegative(epsilon, "epsilon")
    px, pxp = _pair(density_x, density_x_prime, kinks, cdfs, atoms_x, atoms_x_prime, logdensities)
    return _profile_laws(px, pxp, eps, tail_tolerance)


def _profile_laws(px: _Law, pxp: _Law, eps: float, tail_tolerance: float) -> PrivacyProfile:
    if px.mass <= 0 and pxp.mass <= 0:
        fwd = _atoms_hs(px.atoms, pxp.atoms, eps)
        bwd = _atoms_hs(pxp.atoms, px.atoms, eps)
        return PrivacyProfile(eps, max(fwd, bwd), 0.0, fwd, bwd)
    rng = _find_range([px, pxp], tail_tolerance)
    grid = _grid(rng, [*px.kinks, *pxp.kinks])
    fwd, efwd, c1 = _hockey_stick(px, pxp, eps, rng, grid, rng.tail)
    rng_b = _Range(rng.centre, rng.width, rng.lo, rng.hi, (rng.tail[1], rng.tail[0]), rng.rigorous)
    bwd, ebwd, c2 = _hockey_stick(pxp, px, eps, rng_b, grid, rng_b.tail)
    delta = max(fwd, bwd)
    err = max(efwd, ebwd)
    return PrivacyProfile(eps, delta, err, fwd, bwd, tuple(sorted(set(c1) | set(c2))), rng.rigorous)


def _atoms_hs(a: Mapping, b: Mapping, eps: float) -> float:
    e = math.exp(eps)
    return float(sum(max(0.0, a.get(k, 0.0) - e * b.get(k, 0.0)) for k in set(a) | set(b)))


def discrete_profile(
    p: Mapping[Hashable, float], q: Mapping[Hashable, float], epsilon: float
) -> float:
    """δ(ε) of two discrete laws: max over directions of Σ (p − e^ε q)₊ (exact up to rounding)."""
    eps = _validate.nonnegative(epsilon, "epsilon")
    return max(_atoms_hs(p, q, eps), _atoms_hs(q, p, eps))


def discrete_max_loss(p: Mapping[Hashable, float], q: Mapping[Hashable, float]) -> float:
    """max over outcomes of |ln p(o) − ln q(o)| (inf where only one is positive)."""
    worst = 0.0
    for k in set(p) | set(q):
        a, b = float(p.get(k, 0.0)), float(q.get(k, 0.0))
        if a == 0 and b == 0:
            continue
        if a == 0 or b == 0:
            return math.inf
        worst = max(worst, abs(math.log(a) - math.log(b)))
    return worst


# ---------------------------------------------------------------------------
# Maximal privacy loss

_UNDERFLOW = -550.0


@dataclass(frozen=True)
class PrivacyLoss:
    """sup |ln p_x(y) − ln p_x′(y)| over the continuous outputs and the atoms."""

    epsilon: float
    argmax: Any  # the output where it is reached (an atom key or a float)
    grid_size: int


def max_privacy_loss(
    density_x: Any,
    density_x_prime: Any,
    kinks: Iterable[float] = (),
    cdfs: tuple[Callable, Callable] | None = None,
    atoms_x: Mapping[Hashable, float] | None = None,
    atoms_x_prime: Mapping[Hashable, float] | None = None,
    logdensities: tuple[Callable, Callable] | None = None,
    grid_points: int = 8001,
) -> PrivacyLoss:
    """sup over outputs of |ln p_x − ln p_x′| on a grid that includes the kinks
    (and points 1e-9·h to 10·h either side), the bulk, geometric tails out to
    where the laws leave less than 1e-300 of mass, and far points up to 1e30
    core widths away; the top grid maxima are then refined by bounded scalar
    optimisation.  Pass log-densities (or ``OutputDistribution`` objects,
    whose ``logpdf`` is used) so that far tails do not underflow.
    """
    from scipy.optimize import minimize_scalar

    px, pxp = _pair(density_x, density_x_prime, kinks, cdfs, atoms_x, atoms_x_prime, logdensities)
    best, arg = 0.0, None
    for key in set(px.atoms) | set(pxp.atoms):
        a, b = px.atoms.get(key, 0.0), pxp.atoms.get(key, 0.0)
        if a == 0 and b == 0:
            continue
        loss = math.inf if (a == 0 or b == 0) else abs(math.log(a) - math.log(b))
        if loss > best:
            best, arg = loss, key
    if (px.mass > 0) != (pxp.mass > 0):
        return PrivacyLoss(math.inf, "continuous part", 0)
    if px.mass <= 0:
        return PrivacyLoss(best, arg, 0)
    rng = _find_range([px, pxp], 1e-300)
    grid = _grid(rng, [*px.kinks, *pxp.kinks], grid_points)
    far = rng.centre + rng.width * np.array([10.0**j for j in range(3, 31)])
    far2 = rng.centre - rng.width * np.array([10.0**j for j in range(3, 31)])
    grid = np.unique(np.concatenate([grid, far, far2]))

    def loss(y: np.ndarray) -> np.ndarray:
        la, lb = px.logpdf(y), pxp.logpdf(y)
        with np.errstate(invalid="ignore"):
            d = np.abs(la - lb)
        # Both zero, or one zero and the other below e^-550: a log-density
        # computed as log(pdf) underflows there, so the point says nothing.
        skip = (np.isneginf(la) & (lb < _UNDERFLOW)) | (np.isneginf(lb) & (la < _UNDERFLOW))
        # Where |ln p| exceeds 1e4 the difference of two rounded logs is off by
        # more than 1e-12 (far tails of light-tailed laws): not informative.
        with np.errstate(invalid="ignore"):
            skip |= np.isfinite(la) & np.isfinite(lb) & (np.maximum(-la, -lb) > 1e4)
        return np.where(skip | np.isnan(d), 0.0, d)

    v = loss(grid)
    i = int(np.argmax(v))
    if v[i] > best:
        best, arg = float(v[i]), float(grid[i])
    if math.isfinite(best):
        for i in np.argsort(v)[-5:]:
            lo = grid[max(i - 1, 0)]
            hi = grid[min(i + 1, grid.size - 1)]
            if hi <= lo:
                continue
            res = minimize_scalar(
                lambda t: -float(loss(np.array([t]))[0]),
                bounds=(lo, hi),
                method="bounded",
                options={"xatol": 1e-12 * max(1.0, abs(lo))},
            )
            if -res.fun > best:
                best, arg = float(-res.fun), float(res.x)
    return PrivacyLoss(best, arg, int(grid.size))


# ---------------------------------------------------------------------------
# Rényi divergence (for zCDP)


def renyi_divergence(
    density_x: Any,
    density_x_prime: Any,
    alpha: float,
    kinks: Iterable[float] = (),
    cdfs: tuple[Callable, Callable] | None = None,
    atoms_x: Mapping[Hashable, float] | None = None,
    atoms_x_prime: Mapping[Hashable, float] | None = None,
    logdensities: tuple[Callable, Callable] | None = None,
) -> tuple[float, float]:
    """D_α(P_x‖P_x′) = ln(∫ p^α p′^{1−α} + Σ atoms) / (α − 1) by quadrature.

    Returns (value, error estimate of the value).  The range is widened until
    the integrand times the distance to the centre is below 1e-18 at both ends.
    """
    if not alpha > 1:
        raise ParameterError(f"alpha must be > 1, got {alpha!r}")
    px, pxp = _pair(density_x, density_x_prime, kinks, cdfs, atoms_x, atoms_x_prime, logdensities)
    return _renyi_laws(px, pxp, [alpha])[0]


def _renyi_laws(
    px: _Law, pxp: _Law, alphas: Sequence[float], rng: _Range | None = None
) -> list[tuple[float, float]]:
    """[(D_α(P‖P′), error estimate) for α in alphas], sharing the range search."""
    out: list[tuple[float, float]] = []
    if px.mass > 0 and pxp.mass <= 0:
        return [(math.inf, 0.0) for _ in alphas]
    if px.mass > 0:
        if rng is None:
            rng = _find_range([px, pxp], 1e-16)
        # Candidate ends further out, for tails of p^α p′^(1−α) heavier than p's.
        with np.errstate(over="ignore", invalid="ignore"):
            spans = (rng.hi - rng.centre) * 2.0 ** np.arange(0, 200)
            his = rng.centre + spans[np.isfinite(rng.centre + spans)]
            spans_l = (rng.centre - rng.lo) * 2.0 ** np.arange(0, 200)
            los = rng.centre - spans_l[np.isfinite(rng.centre - spans_l)]
        ends = np.concatenate([his, los])
        la_e, lb_e = px.logpdf(ends), pxp.logpdf(ends)
    for alpha in alphas:
        total = 0.0
        inf = False
        for key in set(px.atoms) | set(pxp.atoms):
            a, b = px.atoms.get(key, 0.0), pxp.atoms.get(key, 0.0)
            if a > 0 and b == 0:
                inf = True
            elif a > 0:
                total += math.exp(alpha * math.log(a) + (1 - alpha) * math.log(b))
        if inf:
            out.append((math.inf, 0.0))
            continue
        err = 0.0
        if px.mass > 0:

            def f(y: np.ndarray, alpha: float = alpha) -> np.ndarray:
                la, lb = px.logpdf(y), pxp.logpdf(y)
                with np.errstate(all="ignore"):
                    v = np.exp(alpha * la + (1 - alpha) * lb)
                # p = 0 contributes nothing; p′ = 0 < p is an infinite divergence
                # unless p is below e^-550 there (a log(pdf) that underflowed).
                return np.where(np.isneginf(la) | (np.isneginf(lb) & (la < _UNDERFLOW)), 0.0, v)

            with np.errstate(all="ignore"):
                fe = np.exp(alpha * la_e + (1 - alpha) * lb_e)
            fe = np.where(np.isneginf(la_e) | np.isnan(fe), 0.0, fe)
            small = fe * np.abs(ends - rng.centre) < 1e-18
            k_hi = np.flatnonzero(small[: his.size])
            k_lo = np.flatnonzero(small[his.size :])
            hi = float(his[k_hi[0]] if k_hi.size else his[-1])
            lo = float(los[k_lo[0]] if k_lo.size else los[-1])
            wide = _Range(rng.centre, rng.width, lo, hi, rng.tail, rng.rigorous)
            v, e = integrate(f, _breaks(wide, [*px.kinks, *pxp.kinks]))
            total += v
            err += e
        if total <= 0:
            out.append((math.inf, 0.0))
        else:
            out.append((math.log(total) / (alpha - 1), err / (total * (alpha - 1))))
    return out


# ---------------------------------------------------------------------------
# Checking a mechanism against its guarantee

DEFAULT_ORDERS: tuple[float, ...] = (1.5, 2.0, 3.0, 5.0, 8.0, 16.0)


@dataclass(frozen=True)
class MechanismCheck:
    """Verdict of an exact check of a mechanism against a guarantee.

    ``passed`` is True when the measured quantity plus its error bound is within
    the claim (plus ``tolerance``), False when the measured quantity minus its
    error bound exceeds it, and None when the error bound straddles the claim.
    ``measured`` is the worst case over the pairs: ``epsilon`` (max privacy
    loss) for pure DP, ``delta`` (δ at the claimed ε) for approximate DP,
    ``rho`` (max over orders of D_α/α) for zCDP.
    """

    passed: bool | None
    guarantee: Guarantee
    measured: float
    error_bound: float
    claimed: float
    worst_pair: int | None
    pairs_checked: int
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return {True: "pass", False: "FAIL", None: "inconclusive"}[self.passed]

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "guarantee": self.guarantee.as_dict(),
            "measured": self.measured,
            "error_bound": self.error_bound,
            "claimed": self.claimed,
            "worst_pair": self.worst_pair,
            "pairs_checked": self.pairs_checked,
            **self.details,
        }


_PROBE = (
    np.concatenate([-np.geomspace(1e-3, 1e6, 19)[::-1], [0.0], np.geomspace(1e-3, 1e6, 19)])
    + 0.123456789
)


def _fingerprint(law: Any) -> Any:
    """A hashable summary (log-density and CDF at 39 fixed points, kinks,
    atoms) so that identical laws are checked once."""
    if isinstance(law, Mapping):
        return ("d", tuple(sorted((repr(k), round(float(v), 15)) for k, v in law.items())))
    if hasattr(law, "branches"):  # a stated private choice: (choice, value) laws
        return ("b", tuple((k, round(float(p), 15), _fingerprint(v))
                           for k, (p, v) in sorted(law.branches.items())))
    lp = law.logpdf if law.logpdf is not None else (lambda y: np.log(law.pdf(y)))
    with np.errstate(all="ignore"):
        v = np.asarray(lp(_PROBE), dtype=float)
        c = np.asarray(law.cdf(_PROBE), dtype=float)
    atoms = tuple(sorted((repr(k), round(float(p), 15)) for k, p in law.atoms.items()))
    kinks = tuple(np.round(law.kinks, 12).tolist())
    return ("c", tuple(np.round(v, 12).tolist()), tuple(np.round(c, 14).tolist()), kinks, atoms)


def _law_of(mechanism: Any, data: Any) -> Any:
    if hasattr(mechanism, "output_distribution"):
        return mechanism.output_distribution(data)
    if hasattr(mechanism, "output_probabilities"):
        probs = mechanism.output_probabilities(data)
        if isinstance(probs, Mapping):
            return {k: float(v) for k, v in probs.items()}
        arr = np.asarray(probs, dtype=float).ravel()
        return {i: float(v) for i, v in enumerate(arr)}
    raise TypeError(
        f"{type(mechanism).__name__} has neither output_distribution(data) nor "
        "output_probabilities(data); use instancedp.audit.empirical_audit instead"
    )


def check_distributions(
    laws: Sequence[tuple[Any, Any]],
    guarantee: Guarantee,
    orders: Sequence[float] = DEFAULT_ORDERS,
    tolerance: float = 1e-9,
) -> MechanismCheck:
    """Check pairs of output laws (``OutputDistribution`` or discrete dicts
    outcome → probability) against a guarantee; worst case over the pairs."""
    seen: dict[Any, tuple[float, float]] = {}
    if isinstance(guarantee, PureDP):
        claimed = guarantee.epsilon
    elif isinstance(guarantee, ApproxDP):
        claimed = guarantee.delta
    elif isinstance(guarantee, ZCDP):
        claimed = guarantee.rho
    else:
        raise TypeError(f"guarantee must be PureDP, ApproxDP or ZCDP, got {guarantee!r}")
    measures: list[tuple[float, float]] = []
    for a, b in laws:
        key = (_fingerprint(a), _fingerprint(b))
        rkey = (key[1], key[0])
        if key in seen or rkey in seen:
            m, e = seen.get(key) or seen[rkey]
        else:
            m, e = _measure(a, b, guarantee, orders)
            seen[key] = (m, e)
        measures.append((m, e))
    if not measures:
        raise ParameterError("neighbour_pairs is empty: pass at least one pair")
    tol = tolerance * max(1.0, claimed) if not isinstance(guarantee, ApproxDP) else tolerance * 1e-3
    upper = [m + e for m, e in measures]
    lower = [m - e for m, e in measures]
    if max(lower) > claimed + tol:
        passed: bool | None = False
        worst_i = int(np.argmax(lower))
    else:
        worst_i = int(np.argmax(upper))
        passed = True if upper[worst_i] <= claimed + tol else None
    worst, worst_err = measures[worst_i]
    if isinstance(guarantee, PureDP):
        method = (
            "sup |ln p - ln p'| on a grid with local refinement (error_bound 0: a spike "
            "narrower than the grid could only be under-estimated)"
        )
    elif isinstance(guarantee, ApproxDP):
        method = "delta(eps) by adaptive quadrature; error_bound = tail mass + Gauss-Kronrod"
    else:
        method = f"max over alpha in {tuple(orders)} of D_alpha/alpha by quadrature"
    details = {"distinct": len(seen), "method": method}
    return MechanismCheck(passed, guarantee, worst, worst_err, claimed, worst_i, len(laws), details)


def _branched_max_loss(a: Any, b: Any) -> float:
    """sup over (choice c, value y) of |ln P(c)p_c(y) − ln P′(c)p′_c(y)| (pure DP):
    each branch's laws with their log-densities (and atoms) shifted by ln P(c)."""
    worst = 0.0
    for key in set(a.branches) | set(b.branches):
        (pa, la), (pb, lb) = a.branches.get(key, (0.0, None)), b.branches.get(key, (0.0, None))
        if pa == 0 and pb == 0:
            continue
        if pa == 0 or pb == 0:
            return math.inf
        if isinstance(la, Mapping):
            worst = max(worst, discrete_max_loss({k: pa * v for k, v in la.items()},
                                                 {k: pb * v for k, v in lb.items()}))
            continue
        shifted = []
        for p, law in ((pa, la), (pb, lb)):
            lp = law.logpdf if law.logpdf is not None else (lambda y, law=law: np.log(law.pdf(y)))
            c = math.log(p)
            shifted.append(replace(
                law, logpdf=lambda y, lp=lp, c=c: lp(y) + c,
                atoms={k: p * v for k, v in law.atoms.items()},
            ))
        worst = max(worst, max_privacy_loss(*shifted).epsilon)
    return worst


def _measure(a: Any, b: Any, guarantee: Guarantee, orders: Sequence[float]) -> tuple[float, float]:
    if hasattr(a, "branches"):
        if not isinstance(guarantee, PureDP):
            raise TypeError("a branched law (a stated private choice) is checked under PureDP")
        return _branched_max_loss(a, b), 0.0
    discrete = isinstance(a, Mapping)
    if isinstance(guarantee, PureDP):
        if discrete:
            return discrete_max_loss(a, b), 0.0
        return max_privacy_loss(a, b).epsilon, 0.0
    if isinstance(guarantee, ApproxDP):
        if discrete:
            return discrete_profile(a, b, guarantee.epsilon), 1e-15
        prof = privacy_profile(a, b, guarantee.epsilon)
        return prof.delta, prof.error_bound
    rho, err = 0.0, 0.0
    if discrete:
        for alpha in orders:
            for p, q in ((a, b), (b, a)):
                tot = sum(
                    math.exp(alpha * math.log(p[k]) + (1 - alpha) * math.log(q[k]))
                    if q.get(k, 0) > 0
                    else (math.inf if p.get(k, 0) > 0 else 0.0)
                    for k in set(p) | set(q)
                    if p.get(k, 0) > 0
                )
                d = math.log(tot) / (alpha - 1)
                if d / alpha > rho:
                    rho, err = d / alpha, 1e-12
        return rho, err
    la, lb = _law(a), _law(b)
    rng = _find_range([la, lb], 1e-16) if la.mass > 0 and lb.mass > 0 else None
    for p, q in ((la, lb), (lb, la)):
        for alpha, (d, e) in zip(orders, _renyi_laws(p, q, orders, rng), strict=True):
            if d / alpha > rho:
                rho, err = d / alpha, e / alpha
    return rho, err


def check_mechanism(
    mechanism: Any,
    neighbour_pairs: Iterable[tuple[Any, Any]],
    guarantee: Guarantee | None = None,
    orders: Sequence[float] = DEFAULT_ORDERS,
    tolerance: float = 1e-9,
    samples: int = 2000,
    seed: int = 0,
) -> MechanismCheck:
    """Exact check of ``mechanism`` over ``neighbour_pairs`` (pairs of datasets),
    and a check that its release path samples that law.

    The mechanism must offer ``output_distribution(data)`` (an
    ``OutputDistribution``) or ``output_probabilities(data)`` (a mapping
    outcome → probability, or an array over a fixed outcome list).  The claim
    is ``guarantee`` or else ``mechanism.guarantee``:

    - ``PureDP(ε)``: max privacy loss over all pairs and outputs ≤ ε;
    - ``ApproxDP(ε, δ)``: δ(ε) of every pair ≤ δ (privacy profile);
    - ``ZCDP(ρ)``: D_α/α ≤ ρ at the Rényi orders ``orders``, both directions.

    Identical pairs of laws (same fingerprint) are checked once.  Use
    ``neighbour_pairs_from_brute`` for all neighbour pairs on a small domain.

    The law checked is the one the mechanism declares; so that it is also the
    one it releases, a mechanism with ``sample`` (the release path) is tested
    against its declared law on both inputs of the worst pair and on the first
    pair (:func:`~.conformance.check_sampling`, ``samples`` draws each,
    false-failure probability ≤ 1e−6 per input); a mismatch fails the check
    (``details["sampling"]``).  ``samples=0`` skips it.
    """
    pairs = list(neighbour_pairs)
    g = guarantee if guarantee is not None else mechanism.guarantee
    cache: dict[int, Any] = {}
    laws = []
    for x, xp in pairs:
        for d in (x, xp):
            if id(d) not in cache:
                cache[id(d)] = (_law_of(mechanism, d), d)
        laws.append((cache[id(x)][0], cache[id(xp)][0]))
    result = check_distributions(laws, g, orders, tolerance)
    if samples and callable(getattr(mechanism, "sample", None)) and pairs:
        from .conformance import check_sampling

        picked = [*pairs[result.worst_pair or 0], *pairs[0]]
        inputs = list({id(d): d for d in picked}.values())
        checks = [
            check_sampling(mechanism, d, samples, seed + i, law=cache[id(d)][0])
            for i, d in enumerate(inputs)
        ]
        bad = [c for c in checks if not c.passed]
        details = {**result.details, "sampling": [c.as_dict() for c in checks]}
        passed = False if bad else result.passed
        result = replace(result, passed=passed, details=details)
    return result


def neighbour_pairs_from_brute(
    domain: Sequence[Any], n: int, relation: str = "substitution", unique: bool = True
) -> list[tuple[Any, Any]]:
    """All neighbour pairs (x, x′) of datasets of size n over ``domain`` from the
    brute-force engine ``instancedp.queries.brute`` (each unordered pair once
    when ``unique``: the checks are symmetric).  For ``relation="edge"`` the
    inputs are all graphs on n vertices and ``domain`` is ignored."""
    from ..queries import brute

    pairs = []
    seen = set()
    # Edge privacy: all graphs on n vertices (domain unused).
    inputs = brute.graphs(n) if relation == "edge" else brute.datasets(domain, n)
    for x in inputs:
        for xp in brute.neighbours(x, relation, domain):
            if unique:
                key = frozenset((_data_key(x), _data_key(xp)))
                if key in seen:
                    continue
                seen.add(key)
            pairs.append((x, xp))
    return pairs


def _data_key(d: Any) -> Any:
    if not isinstance(d, (list, np.ndarray)):
        try:
            hash(d)
            return d
        except TypeError:
            pass
    try:
        return tuple(np.asarray(d).ravel().tolist())
    except (TypeError, ValueError):
        return repr(d)
