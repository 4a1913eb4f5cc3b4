"""The log base measure with public atoms at round numbers, for quantiles of float
columns that declare no resolution.

Why.  The exponential quantile's continuous base measures put no mass on a single
value, so when the target rank lies inside a run of equal rows (ties: counts
stored as doubles, prices in cents, a mass at 0) the release lands beside the run,
however large n·ε is — half a unit off on a count, 3–76 off on a column with 30 %
zeros (``docs/results/accuracy_grid.md``).  A grid holds the tied value, but a
float column has no public grid.  Round numbers are public: most ties in real
data sit on a decimal grid of some step 10^j.  So the base measure gets point
masses there, and a run of ties on such a number is released exactly.

The measure.  With φ the log base's chart (φ(t) = sign(t)·log1p(|t|/s)), the
levels j = j₀, j₀ − 1, …, j₀ − J + 1 (j₀ = ⌊log₁₀(upper − lower)⌋, J =
``levels``; all public) and the atoms c = k·10^j of each level (the double nearest
the exact decimal), the base measure is

    μ = (1 − w)·dφ + Σ_j (w/J) Σ_k [φ((k + ½)·10^j) − φ((k − ½)·10^j)]·δ_{c_{j,k}}:

each atom weighs w/J times the log measure of its level's cell, so on every
scale the atoms hold about the share w of the mass around them and the law of
continuous data barely moves (w = ``ATOM_SHARE``: the share chosen on synthetic
columns, ``benchmarks/accuracy_grid.py``).  A value on several levels (0, 10, …)
carries the sum of its atoms.

Realised as a chart.  Let E₋(t) = (1 − w)·φ(t) + Σ_j (w/J)·φ((K_j(t) + ½)·10^j),
K_j(t) the largest k with c_{j,k} < t, and E₊(t) the same with c_{j,k} ≤ t
(:meth:`AtomChart.coordinates` computes both and whether t is an atom at once).  E₋
and E₊ are non-decreasing, E₋(t) ≤ E₊(t), E₊(t) ≤ E₋(t′) for t < t′, and
E₊(c) − E₋(c) is the atom mass at c (zero off the atoms).  The expanded line
[E₋(lower), E₊(upper)] with Lebesgue measure is μ pushed forward: a point u of
it maps back to t = max{t : E₋(t) ≤ u} (:meth:`AtomChart.value`), an atom when
u ∈ [E₋(c), E₊(c)].

The score.  For a value t let R(t) = {#{x < t}, …, #{x ≤ t}} (one integer off the
data; k + 1 of them at a value held by k rows).  A point u of the expanded line
scores S(u) = dist(q·n, R(t)), t its value: the usual |#{x < t} − q·n| between
rows, and at an atom holding a run of ties the distance from q·n to the run's
ranks — 0 up to rounding when the target rank lies inside the run (the usual
score |(1 − q)·L − q·G| would charge the run's asymmetry around it).

Lemma (sensitivity).  |S_x(u) − S_x′(u)| ≤ Δ = max(q, 1 − q) for x′ = x plus one
row, and ≤ 1 under substitution.  Proof: S is the distance from p = q·n to the
integer set {A, …, B}.  A row below t shifts the set by one and p by q: the
distance moves by at most 1 − q; a row at t adds B + 1 (the distance falls by at
most 1) and moves p by q, so it moves by at most max(q, 1 − q) — it can only fall
by 1 when p > B, then it falls by exactly 1 − q; a row above t moves p alone, by
q.  Under substitution p stays and the set's ends move by at most one each: a
distance change of at most 1.  ∎  So the exponential mechanism on the expanded
line (public Lebesgue measure: μ pushed forward) with score S is ε-DP with the
usual Δ (McSherry & Talwar 2007, Thm. 6), and the map back to a value is
post-processing.  n enters inside S only, whose Δ covers its change.

Realised by the staged samplers.  A row at a value that is not an atom sits at
E₋ = E₊.  The k rows of a run at an atom c with L rows below it are split: the
first m − L sit at E₋(c), the rest at E₊(c), m = :func:`atom_rank` (the integer
of {L, …, L + k} nearest q·n).  The rank pieces of ``quantile.PieceSet`` on these
coordinates then carry exactly the law above: the atom's interval is piece m, of
log-weight −ε·|m − q·n|/(2Δ) = −ε·S/(2Δ); the run's other pieces have length 0.
(Checked by brute-force neighbour enumeration in tests/test_atoms.py.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from .quantile import log_scale_map

__all__ = ["AtomChart", "atom_rank", "ATOM_SHARE", "ATOM_LEVELS"]

#: the share w of the base measure on the atoms (benchmarks/accuracy_grid.py: 5 % costs
#: ≤ 1 % of the log base's error on continuous columns and releases heavy ties exactly)
ATOM_SHARE = 0.05
#: the number J of decimal levels, from the bounds' width down
ATOM_LEVELS = 7
_EXACT = 2.0**52  # |k| below this: k and (2k + 1) are exact doubles


def atom_rank(q: float, n: int, below: int, k: int) -> int:
    """The rank position of an atom holding k rows with ``below`` rows under it: the
    integer of {below, …, below + k} nearest q·n (exact; ties of q·n + ½ round up).
    The run's first ``atom_rank − below`` rows sit at E₋, the rest at E₊."""
    num, den = float(q).as_integer_ratio()
    nearest = (2 * num * int(n) + den) // (2 * den)
    return min(max(nearest, below), below + k)


class AtomChart:
    """The atom base measure's chart (module docstring): :meth:`left` = E₋,
    :meth:`right` = E₊, :meth:`is_atom`, :meth:`value` (the map back)."""

    def __init__(self, lower: float, upper: float, log_scale: float,
                 share: float = ATOM_SHARE, levels: int = ATOM_LEVELS) -> None:
        self.lower, self.upper = float(lower), float(upper)
        self.scale = _validate.finite_positive(log_scale, "log_scale")
        self.phi = log_scale_map(self.scale)[0]  # the log base's chart φ
        if not (0.0 < float(share) < 1.0):
            raise ValueError(f"share must be in (0, 1), got {share!r}")
        self.share = float(share)
        top = math.floor(math.log10(self.upper - self.lower))
        span = max(abs(self.lower), abs(self.upper))
        # public levels whose steps are exact powers of ten and whose atom indices over
        # the bounds are exact doubles
        self.levels = tuple(j for j in range(top, top - int(levels), -1)
                            if -22 <= j <= 22 and span / 10.0**j < _EXACT)
        self.weight = self.share / max(len(self.levels), 1)

    # -- one level ------------------------------------------------------------------------

    @staticmethod
    def _atom(k: np.ndarray, j: int) -> np.ndarray:
        """The double nearest k·10^j (k exact: one correctly rounded operation)."""
        return k * 10.0**j if j >= 0 else k / 10.0**-j

    @staticmethod
    def _half_past(k: np.ndarray, j: int) -> np.ndarray:
        """The double nearest (k + ½)·10^j, non-decreasing in k."""
        return (2.0 * k + 1.0) * (10.0**j / 2.0) if j >= 0 else (2.0 * k + 1.0) / (
            2.0 * 10.0**-j)

    def _last(self, t: np.ndarray, j: int) -> np.ndarray:
        """K_j(t): the largest k with atom(k) ≤ t."""
        k0 = np.floor(t / 10.0**j) if j >= 0 else np.floor(t * 10.0**-j)
        best = np.full(t.shape, np.nan)
        for d in (-2.0, -1.0, 0.0, 1.0, 2.0):  # the float quotient is off by ≤ 1
            k = k0 + d
            a = self._atom(k, j)
            best = np.where(a <= t, k, best)  # increasing k: the last that passes wins
        return best

    def coordinates(self, t: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(E₋(t), E₊(t), whether t is an atom), in one pass over the levels: K_j at or
        below t, one less when that atom is t itself (atoms are distinct doubles:
        their spacing 10^j exceeds an ulp of the span, as the levels require)."""
        t = np.asarray(t, dtype=np.float64) + 0.0
        cont = (1.0 - self.share) * self.phi(t)
        lo, hi = cont, cont
        hit = np.zeros(t.shape, dtype=bool)
        for j in self.levels:
            k = self._last(t, j)
            on = self._atom(k, j) == t
            hit |= on
            c_hi = self._half_past(k, j)
            c_lo = self._half_past(np.where(on, k - 1.0, k), j)
            hi = hi + self.weight * self.phi(c_hi)
            lo = lo + self.weight * self.phi(c_lo)
        return lo, hi, hit

    def left(self, t: Any) -> np.ndarray:
        """E₋(t): the expanded coordinate just below t."""
        return self.coordinates(t)[0]

    def right(self, t: Any) -> np.ndarray:
        """E₊(t): the expanded coordinate just above t (E₋(t) + the atom mass at t)."""
        return self.coordinates(t)[1]

    def is_atom(self, t: Any) -> np.ndarray:
        return self.coordinates(t)[2]

    def value(self, u: float) -> float:
        """The map back: max{t in [lower, upper] : E₋(t) ≤ u}."""
        return float(self.values(np.array([u], dtype=np.float64))[0])

    def values(self, u: np.ndarray) -> np.ndarray:
        """:meth:`value` of every entry, at once: the greatest double with E₋ ≤ u
        (:func:`~instancedp.noise.exact.last_double`; E₋ is non-decreasing)."""
        from ..noise.exact import key_floats, last_double

        u = np.atleast_1d(np.asarray(u, dtype=np.float64))
        keys = last_double(lambda t: self.left(t) <= u[:, None], self.lower, self.upper,
                           u.size)
        return key_floats(keys) + 0.0

    def parameters(self) -> dict[str, Any]:
        return {"atom_share": self.share,
                "atom_steps": [float(10.0**j) for j in self.levels]}


def atom_points(chart: AtomChart) -> np.ndarray:
    """Every atom in [lower, upper] (small bounds and few levels: exact laws in tests)."""
    pts = []
    for j in chart.levels:
        step = 10.0**j
        k = np.arange(math.floor(chart.lower / step) - 1, math.ceil(chart.upper / step) + 2,
                      dtype=np.float64)
        c = chart._atom(k, j)
        pts.append(c[(c >= chart.lower) & (c <= chart.upper)])
    return np.unique(np.concatenate(pts)) if pts else np.array([])


def expanded_law(chart: AtomChart, values: np.ndarray, coords: np.ndarray,
                 log_weights: np.ndarray) -> Any:
    """The exact law of the value released from the expanded line: pieces i between
    boundaries i and i + 1 (their ``values`` lower, x_(1) … x_(n), upper and their
    expanded ``coords``) with log-density ``log_weights[i]``; the atoms' masses and
    the continuous density (1 − w)·φ′(t)·e^{ld}/Z in between (every atom listed:
    for few levels and narrow bounds)."""
    from .base import OutputDistribution

    lw = np.asarray(log_weights, dtype=np.float64)
    length = np.diff(coords)
    top = float(np.max(np.where(length > 0, lw, -np.inf)))
    w = np.exp(lw - top)
    z = float(np.sum(w * length))
    pts = atom_points(chart)
    lo_e, hi_e, _ = chart.coordinates(pts)
    piece = np.searchsorted(coords, (lo_e + hi_e) / 2.0, side="right") - 1
    piece = np.clip(piece, 0, lw.size - 1)
    mass = w[piece] * (hi_e - lo_e) / z
    atoms = {float(c): float(m) for c, m in zip(pts, mass, strict=True) if m > 0}
    s, share, phi = chart.scale, chart.share, chart.phi

    def piece_of(y: np.ndarray) -> np.ndarray:
        # between two values the piece is the last boundary at or below y with a
        # different value above it
        return np.clip(np.searchsorted(values, y, side="right") - 1, 0, lw.size - 1)

    inside = (np.asarray(values[:-1]) < np.asarray(values[1:]))

    def logpdf(y: Any) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        i = piece_of(y)
        ok = (y >= chart.lower) & (y <= chart.upper)
        with np.errstate(divide="ignore"):
            out = (np.log(w[i] * (1.0 - share) / z) - np.log(s + np.abs(y)))
        return np.where(ok, out, -np.inf)

    def cdf(y: Any) -> np.ndarray:
        y = np.atleast_1d(np.asarray(y, dtype=np.float64))
        a, b = values[:-1], values[1:]
        top_ = np.minimum(b[None, :], y[:, None])
        part = np.where(inside[None, :] & (top_ > a[None, :]),
                        phi(top_) - phi(np.broadcast_to(a, top_.shape)), 0.0)
        return (part * w[None, :]).sum(axis=1) * (1.0 - share) / z

    return OutputDistribution(
        pdf=lambda y: np.exp(logpdf(y)), cdf=cdf,
        kinks=tuple(float(v) for v in np.unique(values)), atoms=atoms, logpdf=logpdf)
