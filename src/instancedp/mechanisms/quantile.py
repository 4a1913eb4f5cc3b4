"""The exponential mechanism for quantiles, with six public base measures.

Smith 2011 ("Privacy-preserving statistical estimation with optimal
convergence rates", §3); the ``exp`` baseline of Gillenwater, Joseph & Kulesza
2021 (google-research ``dp_multiq``); the base measure idea of Khodak, Amin,
Dick & Vassilvitskii (ICML 2023, "Learning-augmented private algorithms for
multiple quantile release").

Score.  For a candidate t, with L(t) = #{x < t} and E(t) = #{x = t},

    s(t) = dist(q·n, {L(t), …, L(t) + E(t)})   (= |L(t) − q·n| between data points):

the distance from the target rank to the ranks t can take — 0 up to rounding on
a run of ties that holds the target rank, where the point score
|(1 − q)·L − q·G| (Smith 2011, OpenDP) would charge the run's asymmetry.  One
row added or removed moves s by at most Δ = max(q, 1 − q); a substitution by at
most Δ = 1 (the lemma and proof in :mod:`~instancedp.mechanisms.atoms`;
brute force in tests/test_mech_quantile_bases.py).

The grid bases score a grid point with the run's rank interval shrunk towards
its middle (:func:`grid_scores`),

    s(t) = dist(q·n, [L + a·E, L + E − a·E]),   a = GRID_SHRINK·min(q, 1 − q):

on a grid the neighbours of the true value are grid points holding runs of their
own, and the unshrunk interval scores a neighbour only by the target rank's
distance to the shared edge (≈ 0 when q·n sits near a run's end); the shrink
charges each neighbour a share of its own run too.  Off the rows (E = 0) the two
scores agree.  The same Δ (lemma in docs/formulas.md, "The grid score"; brute
force in tests/test_mech_quantile_bases.py).  The release has
density (probability, on a grid) proportional to

    μ(t) · exp(−ε · s(t) / (2Δ))

with μ a public base measure; it is ε-DP (McSherry & Talwar 2007, Thm. 6: the
base measure is fixed before the data are seen, so it cancels in every ratio).
n appears inside the score only, whose Δ already covers n's change.

Base measures (all public: they read only the bounds, q, ε and the declared
resolution):

* ``"uniform"`` — Lebesgue measure on [lower, upper] (Smith 2011);
* ``"log"`` — uniform in φ(t) = sign(t)·log(1 + |t|/s) over the bounds,
  density ∝ 1/(s + |t|): a loose bound's empty gap gets mass ∝ log(width)
  rather than ∝ width (Khodak et al. 2023 use heavy-tailed priors this way);
  s = ``log_scale``, default (upper − lower)·10⁻⁴ (public);
* ``"grid"`` — counting measure on the public grid lower + k·resolution,
  k = 0 … K, for a column whose resolution is declared (an integer type,
  a decimal scale, a user-given resolution): ties and integer data release on
  the grid.  Rows are rounded to the nearest grid point (a row-local, public
  map) and :func:`grid_quantile_from_counts` needs only the counts of rows per
  grid point, so a database can supply them in SQL;
* ``"log-grid"`` — the log measure restricted to the same public grid: grid
  point k gets μ({k}) = φ(c_k + r/2) − φ(c_k − r/2), the log measure of its
  cell (c_k = lower + k·r, r = resolution).  Ties release on the grid (exact
  hits) and the empty gap of a loose bound gets mass ∝ log(width), the two
  advantages of "grid" and "log" together;
* ``"log-log"`` — uniform in ψ(t) = sign(t)·(1 − (1 + log1p(|t|/s))^−α)/α,
  density ∝ 1/((s + |t|)·(1 + log1p(|t|/s))^(1+α)), α = ``LOGLOG_ALPHA``: a
  proper (finite) measure on the whole line, so it needs no bounds at all
  (ψ maps every double into (−1/α, 1/α)); :class:`LogLogQuantile` releases on
  the whole line with it.  A wide empty side gets mass ∝ a difference of
  (log |t|)^−α rather than of log |t|, at the price of a heavier tilt inside
  the data;
* ``"log-atoms"`` — the log base with 5 % of its mass on public atoms at round
  numbers (:mod:`~instancedp.mechanisms.atoms`): ties on them release exactly
  without a declared resolution; drawn by the same staged sampler, on the
  atoms' expanded chart.

Sampling is exact in law: the output's density (or mass) is constant on the
segments between consecutive distinct rows, so a segment is drawn with
probability exactly ∝ its weight (``random.sample_index_from_log_weights``)
and a point inside it uniformly in the base measure (``noise.exact.uniform``
in φ-coordinates; ``RandomSource.integers`` on a grid).

Permute-and-flip on the finite (grid) laws.  On a finite candidate set the
grid bases release by default with ``sampler="permute-and-flip"`` (McKenna &
Sheldon, NeurIPS 2020): utility u_k = −ε·s_k/(2Δ) + log μ_k (μ_k = 1 for
"grid", the cell's log measure for "log-grid"); take the candidates in a
uniformly random order and stop at the first k accepted with probability
exp(u_k − max u).  Its law is that of report-noisy-max with Exp(1) noise,
argmax_k (u_k + E_k) (Ding, Kifer, Wang, Zhang & Zhou 2021, Thm. 1), which is
also OpenDP 0.16's ``make_private_quantile``.  ``sampler="exponential"`` keeps
the exponential mechanism's law ∝ exp(u_k); the record states which ran.

Theorem (ε-DP).  If for neighbours x, x′ every |u_k(x) − u_k(x′)| ≤ ε/2, then
RNM with Exp(1) noise is ε-DP (McKenna & Sheldon 2020, Thm. 1, stated for
utility ε·q/(2Δ) with Δ the sensitivity of q; Ding et al. 2021, Thm. 1 for
the equivalence).  Here u_k(x) − u_k(x′) = −ε·(s_k(x) − s_k(x′))/(2Δ): the
public weight log μ_k is the same on both tables and cancels, and |s_k − s′_k|
≤ Δ (above), so the bound is ε/2.  Proof: fix the noise E_j of every j ≠ k;
k wins iff E_k ≥ τ := max_{j≠k}(u_j + E_j) − u_k.  Moving to x′ moves τ by at
most ε/2 + ε/2 = ε, so P(E_k ≥ τ′) ≥ P(E_k ≥ τ + ε) ≥ e^−ε·P(E_k ≥ τ) (the
Exp(1) tail; P = 1 for τ < 0); integrate over the other noises.  n appears only
inside s, whose Δ covers its change.  Accuracy: never less expected utility
than the exponential mechanism on the same utilities (McKenna & Sheldon 2020,
Thm. 2).

Exact sampling (``noise.exact.sample_permute_and_flip``): RNM-exponential is
argmin_k U_k·e^{−u_k} with U_k iid uniform.  Candidates of one score segment
("grid"), or of one segment cut where s + |c| doubles ("log-grid", so that μ
varies by about a factor 2 inside a block), form a block; the block's arrival
times are drawn in order, its points uniformly without replacement, and the
"log-grid" weight enters as an exact thinning ratio μ_k/max μ over the block.
Every comparison is decided exactly (floats with certified error bounds, else
ball arithmetic on lazily refined uniforms), so the law is the real-number
one; a draw costs one vectorised pass over the blocks (at most 2·distinct
rows + 1, plus the doubling cuts) whatever the number of grid points.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..noise.exact import (
    key_floats,
    last_double,
    sample_permute_and_flip,
    sample_piece,
    sample_piece_lazy,
)
from ..privacy import PureDP
from ..random import RandomSource, resolve, sample_index_from_log_weights
from .base import Mechanism, OutputDistribution, Release

BASES = ("uniform", "log", "grid", "log-grid", "log-log", "log-atoms")
#: the log-log base's exponent α (public; chosen on synthetic columns: benchmarks/accuracy.py)
LOGLOG_ALPHA = 0.5
#: how a finite (grid) law is drawn; the continuous bases are the exponential mechanism
SAMPLERS = ("permute-and-flip", "exponential")
_LOG_SCALE_FRACTION = 1e-4
#: λ of the grid score's shrink a = λ·min(q, 1 − q) (:func:`grid_scores`; chosen on
#: synthetic integer columns by benchmarks/grid_score.py, docs/results/grid_score.md)
GRID_SHRINK = 0.25


# --------------------------------------------------------------------------- core functions


def score_sensitivity(q: float, neighbours: str) -> float:
    """Δ of the quantile scores (module docstring, :func:`grid_scores`) under the relation."""
    if neighbours == "substitution":
        return 1.0
    if neighbours == "add_remove":
        return max(q, 1.0 - q)
    raise ParameterError(
        f"quantiles support neighbours 'add_remove' or 'substitution', got {neighbours!r}",
        parameter="neighbours",
        allowed="add_remove, substitution",
    )


def grid_scores(below: np.ndarray, above: np.ndarray, q: float, n: int,
                shrink: float | None = None) -> np.ndarray:
    """The grid bases' score, elementwise (floats): S = dist(q·n, [L + a·E, L + E − a·E]),
    L = ``below``, E = n − below − above, a = shrink·min(q, 1 − q) (shrink defaults to
    :data:`GRID_SHRINK`).  |L − q·n| off the rows; on a run of ties the rank interval
    shrinks towards the run's middle (module docstring; Δ as
    :func:`score_sensitivity`, docs/formulas.md)."""
    a = _grid_shrink_share(q, shrink)
    lo = np.asarray(below, dtype=np.float64)
    e = n - np.asarray(above, dtype=np.float64) - lo
    qn = q * n
    left, right = lo + a * e, lo + e - a * e
    return np.maximum(np.maximum(left - qn, qn - right), 0.0)


def _grid_shrink_share(q: float, shrink: float | None) -> float:
    # λ·min(q, 1 − q) with λ ∈ [0, 1] a dyadic constant: an exact double in [0, ½]
    return (GRID_SHRINK if shrink is None else shrink) * min(q, 1.0 - q)


def _grid_score_ball(below: int, above: int, q: float, n: int) -> Any:
    """:func:`grid_scores` as an exact ball (q and the share are doubles: dyadic)."""
    from fractions import Fraction

    from flint import arb

    a, qn = Fraction(_grid_shrink_share(q, None)), Fraction(q) * n
    e = n - above - below
    left, right = below + a * e, below + e - a * e
    s = max(left - qn, qn - right, Fraction(0))
    return arb(s.numerator) / arb(s.denominator)


def _score_terms(below: np.ndarray, above: np.ndarray, q: float, n: int) -> np.ndarray:
    """A bound on the magnitudes :func:`grid_scores` subtracts (its float error is
    relative to them, not to the score, which may cancel)."""
    return q * n + np.asarray(below, dtype=np.float64) + (n - np.asarray(above, np.float64))


def log_scale_map(scale: float) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """(φ, φ⁻¹) with φ(t) = sign(t)·log1p(|t|/scale): the log base measure's coordinate."""

    def phi(t: Any) -> Any:
        t = np.asarray(t, dtype=np.float64)
        return np.sign(t) * np.log1p(np.abs(t) / scale)

    def phi_inv(u: Any) -> Any:
        u = np.asarray(u, dtype=np.float64)
        return np.sign(u) * np.expm1(np.abs(u)) * scale

    return phi, phi_inv


def loglog_map(scale: float, alpha: float = LOGLOG_ALPHA) -> tuple[Callable[[Any], Any],
                                                                    Callable[[Any], Any]]:
    """(ψ, ψ⁻¹) with ψ(t) = sign(t)·(1 − (1 + log1p(|t|/s))^−α)/α: the log-log base's
    chart, onto (−1/α, 1/α); ψ⁻¹ overflows to ±inf at the ends (callers clip)."""

    def psi(t: Any) -> Any:
        t = np.asarray(t, dtype=np.float64)
        return np.sign(t) * -np.expm1(-alpha * np.log1p(np.log1p(np.abs(t) / scale))) / alpha

    def psi_inv(p: Any) -> Any:
        p = np.asarray(p, dtype=np.float64)
        with np.errstate(over="ignore", divide="ignore"):
            u = np.expm1(-np.log1p(-alpha * np.abs(p)) / alpha)
            return np.sign(p) * np.expm1(u) * scale

    return psi, psi_inv


def piecewise_constant_law(
    points: np.ndarray,
    log_density: np.ndarray,
    log_density_at: Callable[[np.ndarray], np.ndarray] | None = None,
) -> OutputDistribution:
    """The law with density exp(log_density[i]) on (points[i], points[i+1]).

    ``points`` non-decreasing; zero-length segments carry no mass; the
    densities need not be normalised (they are, here).  ``log_density_at``,
    if given, is the unnormalised log density as a function (so that
    ``logpdf`` at a breakpoint takes the mechanism's own value there rather
    than the left segment's).
    """
    pts = np.asarray(points, dtype=np.float64)
    lengths = np.diff(pts)
    ld = np.asarray(log_density, dtype=np.float64)
    with np.errstate(divide="ignore"):
        logmass = np.where(lengths > 0, ld + np.log(np.where(lengths > 0, lengths, 1.0)), -np.inf)
    top = logmass[np.isfinite(logmass)].max()
    log_z = top + math.log(np.exp(logmass[np.isfinite(logmass)] - top).sum())
    ld = ld - log_z
    cum = np.concatenate(([0.0], np.cumsum(np.exp(logmass - log_z))))
    cum = cum / cum[-1]
    last = pts.size - 2

    def seg(y: np.ndarray) -> np.ndarray:
        # segment i holds (p_i, p_{i+1}]; among equal points take a non-empty one
        return np.clip(np.searchsorted(pts, y, side="left") - 1, 0, last)

    def logpdf(y: Any) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        inside = (y >= pts[0]) & (y <= pts[-1])
        if log_density_at is not None:
            return np.where(inside, log_density_at(y) - log_z, -np.inf)
        return np.where(inside, ld[seg(y)], -np.inf)

    def cdf(y: Any) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        i = seg(y)
        ln = lengths[i]
        frac = np.where(ln > 0, (y - pts[i]) / np.where(ln > 0, ln, 1.0), 0.0)
        inner = cum[i] + np.clip(frac, 0.0, 1.0) * (cum[i + 1] - cum[i])
        return np.where(y < pts[0], 0.0, np.where(y >= pts[-1], 1.0, inner))

    return OutputDistribution(
        pdf=lambda y: np.exp(logpdf(y)),
        cdf=cdf,
        kinks=tuple(float(p) for p in np.unique(pts)),
        logpdf=logpdf,
    )


def sorted_rows(data: Any, lower: float, upper: float) -> np.ndarray:
    """Validated rows clamped to [lower, upper] and sorted; an empty table is
    data, not an error (it gets a release like any other)."""
    if np.size(data) == 0 and not isinstance(data, str):
        return np.empty(0, dtype=np.float64)
    return np.sort(np.clip(_validate.data_array(data), lower, upper))


def _check_q(q: Any) -> float:
    try:
        qf = float(q)
    except (TypeError, ValueError):
        qf = math.nan
    if not (0.0 <= qf <= 1.0):
        raise ParameterError(
            f"q must be a number in [0, 1], got {q!r}", parameter="q", allowed="[0, 1]"
        )
    return qf


def grid_count(lower: float, upper: float, resolution: float, limit: int = 2**53) -> int:
    """K, the number of points of the public grid lower + k·resolution ≤ upper
    (``resolution`` already validated finite and positive)."""
    ratio = (upper - lower) / resolution
    if not ratio < limit:  # also an overflow to inf
        raise ParameterError(
            f"resolution is too fine for the bounds (more than {limit} grid points)",
            parameter="resolution",
        )
    count = math.floor(ratio) + 1
    if count > limit:
        raise ParameterError(
            f"resolution is too fine for the bounds (more than {limit} grid points)",
            parameter="resolution",
        )
    return int(count)


def grid_index(x: np.ndarray, lower: float, resolution: float, count: int) -> np.ndarray:
    """Each row's nearest grid point k (a row-local public map), clipped to 0 … count − 1."""
    k = np.rint((np.asarray(x, dtype=np.float64) - lower) / resolution).astype(np.int64)
    return np.clip(k, 0, count - 1)


def grid_segments(
    candidates_count: int, index: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Segments of a grid 0 … K−1 cut by the sorted row indices ``index``.

    Returns (start, length, below, above): candidates start … start+length−1
    all have ``below`` rows strictly below and ``above`` strictly above.
    Runs of empty grid points and the occupied points alternate, so there are
    at most 2·(distinct rows) + 1 segments whatever K is.
    """
    vals, counts = np.unique(np.asarray(index, dtype=np.int64), return_counts=True)
    return occupied_segments(candidates_count, vals, counts)


def occupied_segments(
    candidates_count: int, occupied: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`grid_segments` from the occupied grid points (increasing) and their row
    counts (all > 0): what a database's histogram on :func:`grid_edges` gives."""
    K = int(candidates_count)
    vals = np.asarray(occupied, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(counts)))  # rows below vals[j]
    n = int(before[-1])
    gap_start = np.concatenate(([0], vals + 1))
    gap_end = np.concatenate((vals, [K]))  # exclusive
    starts = np.empty(2 * vals.size + 1, dtype=np.int64)
    lengths = np.empty_like(starts)
    below = np.empty_like(starts)
    starts[0::2], lengths[0::2], below[0::2] = gap_start, gap_end - gap_start, before
    starts[1::2], lengths[1::2], below[1::2] = vals, 1, before[:-1]
    above = np.empty_like(starts)
    above[0::2] = n - before
    above[1::2] = n - before[1:]
    return starts, lengths, below, above


@functools.lru_cache(maxsize=8)  # public parameters; the check and the release share it
def grid_edges(lower: float, upper: float, resolution: float, count: int) -> np.ndarray | None:
    """Cell edges [lower, b_1, …, b_{K−1}, upper] with {x : b_k ≤ x < b_{k+1}} exactly the
    rows (clamped to the bounds) that :func:`grid_index` sends to grid point k.

    b_k is the least float x in [lower, upper] with grid_index(x) ≥ k, found by bisection
    on the floats' order (grid_index is non-decreasing in x), so a histogram on these
    edges (every engine's ``histogram``: cells [e_j, e_{j+1}), values clamped to
    [e_0, e_m]) counts the rows per grid point as the in-memory grid does, bit for bit.
    Public: a function of the bounds and the resolution only.  None when the edges are
    not strictly increasing below ``upper`` (a resolution near the floats' spacing at
    the bounds: a grid point no float rounds to, or a last cell holding ``upper``
    alone), which a histogram's cells cannot express."""
    K = int(count)
    if K == 1:
        return np.array([lower, upper], dtype=np.float64) + 0.0
    k = np.arange(1, K, dtype=np.int64)[:, None]
    # the greatest double still below point k, then the next one
    below = last_double(lambda t: grid_index(t, lower, resolution, K) < k, lower, upper,
                        K - 1, ways=2)
    inner = key_floats(below + 1)
    edges = np.concatenate(([lower], inner, [upper])) + 0.0
    if np.any(edges[1:] <= edges[:-1]):
        return None
    edges.setflags(write=False)
    return edges


def _rows_of(below: np.ndarray, above: np.ndarray) -> int:
    """n from :func:`grid_segments`' output: its first segment (the empty grid points
    below every row) has 0 rows below and n above."""
    return int(below[0] + above[0])


def _grid_log_scores(below, above, q, epsilon, neighbours, n) -> np.ndarray:
    """The grid's exponent −ε·s/(2Δ) per segment (s = :func:`grid_scores`)."""
    return -epsilon * grid_scores(below, above, q, n) / (2.0 * score_sensitivity(q, neighbours))


def _grid_log_weights(lengths, below, above, q, epsilon, neighbours, n) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(lengths.astype(np.float64)) + _grid_log_scores(
            below, above, q, epsilon, neighbours, n)


def permute_and_flip_probabilities(log_rates: Any) -> np.ndarray:
    """Exact law of permute-and-flip over candidates with utilities u_i = ``log_rates``.

    P(i) = p_i·∫₀¹ ∏_{j≠i} (1 − p_j·t) dt with p = exp(u − max u): candidate i
    is accepted at "time" t (its place in the random order) with probability p_i
    and every other candidate either comes later or is rejected (McKenna &
    Sheldon 2020, §3; the same law as report-noisy-max with Exp(1) noise, Ding,
    Kifer et al. 2021, Thm. 1).  The integrand is a polynomial of degree K − 1,
    so Gauss–Legendre with ⌈K/2⌉ + 1 nodes is exact up to rounding (float; for
    tests and audits on small candidate sets).
    """
    u = np.asarray(log_rates, dtype=np.float64)
    p = np.exp(u - u.max())
    t, w = _gauss_legendre_unit(u.size // 2 + 2)
    # candidates with equal rates share their factor: ∏_j (1 − p_j·t) over classes
    rates, cls, mult = np.unique(p, return_inverse=True, return_counts=True)
    f = 1.0 - np.outer(rates, t)  # f[class, node]
    with np.errstate(divide="ignore", invalid="ignore"):
        logf = np.log(np.abs(f))
    zeros = f == 0.0
    total = (mult[:, None] * np.where(zeros, 0.0, logf)).sum(axis=0)
    nz = (mult[:, None] * zeros).sum(axis=0)
    # ∏_{j≠i} for a candidate of each class: the total without one of its factors
    others_zero = nz[None, :] - zeros
    prod = np.where(others_zero > 0, 0.0, np.exp(total[None, :] - np.where(zeros, 0.0, logf)))
    out = p * (prod @ w)[cls.ravel()]
    return out / out.sum()


@functools.lru_cache(maxsize=16)
def _gauss_legendre_unit(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on [0, 1] (cached: an eigenproblem of size nodes)."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    return (x + 1.0) / 2.0, w / 2.0


def _rate_ball(epsilon: float, delta: float) -> Any:
    from flint import arb

    return arb(epsilon) / (2 * arb(delta))


def permute_and_flip_segments(
    lengths: np.ndarray, below: np.ndarray, above: np.ndarray, q: float, epsilon: float,
    neighbours: str, n: int,
) -> Callable[[RandomSource], tuple[int, int]]:
    """A sampler of (segment, offset) by exact permute-and-flip over segments of equal score.

    Segment b holds ``lengths[b]`` candidates that all have the score s_b
    (:func:`grid_scores`), utility −ε·s_b/(2Δ) (empty segments are
    dropped).  :func:`~instancedp.noise.exact.sample_permute_and_flip` with every
    ratio 1: the exact real-number law of :func:`permute_and_flip_probabilities`.
    Built once per table; each call of the returned function is one draw.
    """
    keep = np.flatnonzero(np.asarray(lengths) > 0)
    delta = score_sensitivity(q, neighbours)
    s = grid_scores(below[keep], above[keep], q, n)
    a = epsilon / (2.0 * delta)
    log_rate, sizes = -a * s, np.asarray(lengths)[keep]
    # the float score's error is relative to its terms, not to s (which may cancel)
    terms = a * _score_terms(below[keep], above[keep], q, n)

    def ball(b: int) -> Any:
        i = int(keep[b])
        return -_rate_ball(epsilon, delta) * _grid_score_ball(int(below[i]), int(above[i]), q, n)

    def draw(source: RandomSource) -> tuple[int, int]:
        b, j = sample_permute_and_flip(log_rate, ball, sizes, terms, None, source)
        return int(keep[b]), j

    return draw


def _count_segments(counts: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs of candidates with equal score from the counts per candidate: each
    occupied candidate alone, each run of empty ones together (start, length,
    below, above), as :func:`grid_segments`."""
    cnt = np.asarray(counts, dtype=np.int64)
    n = int(cnt.sum())
    below = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    above = n - below - cnt
    # a new run starts at 0, at every occupied candidate, and right after one
    new = np.ones(cnt.size, dtype=bool)
    new[1:] = (cnt[1:] > 0) | (cnt[:-1] > 0)
    starts = np.flatnonzero(new)
    lengths = np.diff(np.concatenate((starts, [cnt.size])))
    return starts, lengths, below[starts], above[starts]


def _check_counts(candidates: Any, counts: Any) -> tuple[np.ndarray, np.ndarray]:
    cand = np.asarray(candidates, dtype=np.float64)
    cnt = np.asarray(counts)
    if cand.ndim != 1 or cand.size == 0 or np.any(np.diff(cand) <= 0):
        raise ParameterError(
            "candidates must be a non-empty increasing 1-D array", parameter="candidates"
        )
    if cnt.shape != cand.shape or np.any(cnt < 0):
        raise ParameterError(
            "counts must be non-negative and one per candidate", parameter="counts"
        )
    return cand, cnt.astype(np.int64)


def grid_quantile_from_counts(
    candidates: Any,
    counts: Any,
    q: float,
    epsilon: float,
    neighbours: str = "add_remove",
    rng: Any = None,
    sampler: str = "permute-and-flip",
) -> float:
    """ε-DP q-quantile on a public candidate grid from the counts of rows per candidate.

    ``candidates``: the public grid, increasing; ``counts[k]``: the number of
    rows whose value rounds to ``candidates[k]`` (rows outside the grid count
    at its nearest end).  Only these counts are read, so a database engine
    can compute them (GROUP BY the rounded value) without exporting the
    column.  Utility u_k = −ε·s_k/(2Δ), s_k = :func:`grid_scores`
    (module docstring); ``sampler="permute-and-flip"`` (default) releases by
    permute-and-flip on u (McKenna & Sheldon 2020), ``"exponential"`` with
    probability ∝ exp(u_k) (McSherry & Talwar 2007).  Both are ε-DP; the first
    is never less accurate (McKenna & Sheldon 2020, Thm. 2).  Law:
    :func:`grid_quantile_probabilities`.
    """
    cand, cnt = _check_counts(candidates, counts)
    qf = _check_q(q)
    eps = _validate.epsilon(epsilon)
    sampler = _validate.one_of(sampler, SAMPLERS, "sampler")
    source = resolve(rng)
    if sampler == "permute-and-flip":
        starts, lengths, below, above = _count_segments(cnt)
        b, j = permute_and_flip_segments(lengths, below, above, qf, eps, neighbours,
                                         int(cnt.sum()))(source)
        return float(cand[int(starts[b]) + j])
    n = int(cnt.sum())
    below = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    above = n - below - cnt
    logw = _grid_log_weights(np.ones_like(cnt), below, above, qf, eps, neighbours, n)
    return float(cand[sample_index_from_log_weights(logw, source)])


def grid_quantile_probabilities(
    counts: Any, q: float, epsilon: float, neighbours: str = "add_remove",
    sampler: str = "permute-and-flip",
) -> np.ndarray:
    """The exact law of :func:`grid_quantile_from_counts`: one probability per candidate."""
    cnt = np.asarray(counts, dtype=np.int64)
    qf = _check_q(q)
    eps = _validate.epsilon(epsilon)
    sampler = _validate.one_of(sampler, SAMPLERS, "sampler")
    n = int(cnt.sum())
    below = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    above = n - below - cnt
    u = _grid_log_scores(below, above, qf, eps, neighbours, n)
    if sampler == "permute-and-flip":
        return permute_and_flip_probabilities(u)
    p = np.exp(u - u.max())
    return p / p.sum()


# --------------------------------------------------------------------------- the mechanism


#: the window of pieces read up front spans score distance WINDOW_EXPONENT/a either side
#: of the target (a = ε/(2Δ)): the rest weighs at most e^−40 of its share per unit length
WINDOW_EXPONENT = 40.0
#: at most this many pieces either side (a public cap: one window is one small read)
MAX_HALF_WINDOW = 1 << 16


class PieceSet:
    """The exponential quantile's n + 1 pieces, read around the target rank only.

    Piece i lies between the i-th and (i+1)-th of lower, x_(1) … x_(n), upper
    (in the base measure's chart) and has log-weight −ε·|i − qn|/(2Δ).  The
    window of pieces within score distance ``WINDOW_EXPONENT``/a of qn
    (a = ε/(2Δ), capped at ``MAX_HALF_WINDOW`` either side — public constants)
    is read up front; when it holds every piece the draw is
    :func:`~instancedp.noise.exact.sample_piece`, otherwise
    :func:`~instancedp.noise.exact.sample_piece_lazy`, which reads further
    order statistics only when its exact inversion needs them.  Both draw from
    the same exact law.  n is used inside the score only (its change is covered
    by Δ) and to place the window; it never reaches the record.

    When the target's piece lies inside a run of equal rows (ties, or rows
    clamped to a bound), the weight lies beyond the run's two ends, possibly far
    outside the window: the run's ends are found (a galloping search, single
    order statistics) and the window becomes the pieces within the same
    half-width beyond each end, the run between them blocks of length 0
    (``blocks``: nothing of it is read) — around the atom's piece when the run
    sits on an atom of the ``atoms`` base (:mod:`~instancedp.mechanisms.atoms`).
    Otherwise the lazy draw would read, one order statistic at a time, every
    piece of the continuous rows beside the run that holds weight.  Only which
    reads happen depends on this, never the law.

    ``atoms`` (an :class:`~instancedp.mechanisms.atoms.AtomChart`, in place of
    ``chart``): boundary b's coordinate is E₋ or E₊ of its value, by its rank in
    its run (:func:`~instancedp.mechanisms.atoms.atom_rank`); a run that reaches
    past what was read is completed by the same galloping search.
    """

    def __init__(self, n: int, q: float, epsilon: float, delta: float,
                 read: Callable[[int, int], np.ndarray], chart: Callable | None,
                 bounds: tuple[float, float], atoms: Any = None) -> None:
        self.n, self.q, self.epsilon, self.delta = n, q, epsilon, delta
        self._lower, self._upper = bounds
        self._read, self._chart, self._atoms = read, chart, atoms
        self._runs: dict[float, tuple[int, int]] = {}
        self.start, self.stop = self.window_pieces(n, q, epsilon, delta)
        self.values = self._values(self.start, self.stop + 1)
        self.full = self.start == 0 and self.stop == n + 1
        #: the piece index of each window edge when the window skips a run of ties
        self.blocks: np.ndarray | None = None
        if self.full:
            i = np.arange(n + 1)
            self.log_weights = -epsilon * np.abs(i - q * n) / (2 * delta)
        else:
            self._around_ties(self._half(epsilon, delta))
        at = (np.arange(self.start, self.stop + 1) if self.blocks is None else self.blocks)
        self.window = self._coords(at, self.values)

    @staticmethod
    def _half(epsilon: float, delta: float) -> int:
        a = epsilon / (2.0 * delta)
        return int(min(math.ceil(WINDOW_EXPONENT / a), MAX_HALF_WINDOW))

    @staticmethod
    def window_pieces(n: int, q: float, epsilon: float, delta: float) -> tuple[int, int]:
        """The pieces [start, stop) read up front (boundaries start … stop: the values at
        ranks start − 1 … stop − 1); public constants around the target rank."""
        half = PieceSet._half(epsilon, delta)
        centre = min(max(round(q * n), 0), n)
        return max(0, centre - half), min(n + 1, centre + half + 1)

    def _around_ties(self, half: int) -> None:
        """Re-place the window around a run of ties holding the target's piece (the
        class docstring)."""
        centre = min(max(round(self.q * self.n), self.start), self.stop - 1)
        k = centre - self.start
        v = float(self.values[k])
        if float(self.values[k + 1]) != v:
            return
        lo, hi = self._run_end(v, -1), self._run_end(v, 1)  # boundaries lo … hi equal v
        self._runs[v] = (lo, hi)
        a0, b1 = max(lo - half, 0), min(hi + half, self.n + 1)
        if hi - lo <= 2 * half:  # a short run: one contiguous window around it
            self.start, self.stop = a0, b1
            self.values = self._values(a0, b1 + 1)
            return
        inner = np.array([], dtype=np.int64)
        if self._atoms is not None and bool(self._atoms.is_atom(v)):
            s = int(self._splits(np.array([lo]), np.array([hi]))[0])  # the atom's piece s … s + 1
            inner = np.array([b for b in (s, s + 1) if lo < b < hi], dtype=np.int64)
        self.start, self.stop = a0, b1
        self.values = np.concatenate((self._values(a0, lo + 1), np.full(inner.size, v),
                                      self._values(hi, b1 + 1)))
        self.blocks = np.concatenate((np.arange(a0, lo + 1), inner, np.arange(hi, b1 + 1)))

    def _run_end(self, v: float, step: int) -> int:
        """The farthest boundary from the window's run of values equal to ``v`` in the
        direction ``step`` (−1 down, +1 up): the window first, then a galloping search
        and a bisection on single order statistics beyond it."""
        w, s, last = self.values, self.start, self.n + 1
        if step < 0:
            j = s + int(np.searchsorted(w, v, side="left"))
            if j > s or s == 0:
                return j
            known, limit = s, 0
        else:
            j = s + int(np.searchsorted(w, v, side="right")) - 1
            if j < self.stop or self.stop == last:
                return j
            known, limit = self.stop, last
        return self._gallop(v, known, limit, step)

    def _gallop(self, v: float, known: int, limit: int, step: int) -> int:
        """The farthest boundary from ``known`` (whose value is ``v``) towards ``limit``
        whose value is still ``v``."""
        d = 1
        while True:  # gallop: value(known) == v
            probe = known + step * d
            probe = max(probe, limit) if step < 0 else min(probe, limit)
            if self._value(probe) != v:
                break
            known = probe
            if probe == limit:
                return known
            d *= 2
        while abs(probe - known) > 1:  # value(known) == v != value(probe)
            mid = (probe + known) // 2
            if self._value(mid) == v:
                known = mid
            else:
                probe = mid
        return known

    def _values(self, i: int, j: int) -> np.ndarray:
        """The values of boundaries i … j − 1 (boundary b: the value at rank b − 1)."""
        return np.asarray(self._read(i - 1, j - 1), dtype=np.float64)

    def _value(self, i: int) -> float:
        if i in (0, self.n + 1):  # a public bound: nothing to read
            return self._lower if i == 0 else self._upper
        return float(self._values(i, i + 1)[0])

    def _splits(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Per run lo … hi of boundaries equal to an atom v: the last boundary at E₋(v)
        (the bounds' pseudo-boundaries 0 and n + 1 count no row)."""
        from .atoms import atom_rank

        f, last = np.maximum(lo, 1), np.minimum(hi, self.n)
        k = np.maximum(last - f + 1, 0)
        return np.array([atom_rank(self.q, self.n, int(b), int(c))
                         for b, c in zip(f - 1, k, strict=True)], dtype=np.int64)

    def _run(self, v: float, b: int) -> tuple[int, int]:
        """The boundaries lo … hi of the run of values equal to ``v`` through boundary b."""
        if v not in self._runs:
            self._runs[v] = (self._gallop(v, b, 0, -1), self._gallop(v, b, self.n + 1, 1))
        return self._runs[v]

    def _coords(self, at: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Chart coordinates of the boundaries ``at`` (increasing) holding ``values``."""
        if self._atoms is None:
            return self._chart(values) if self._chart is not None else values
        at = np.asarray(at, dtype=np.int64)
        left, right, atom = self._atoms.coordinates(values)
        out = np.where(at > self.n, right, left)  # boundary n + 1 (upper) is above every row
        atom = atom & (at > 0) & (at <= self.n)
        if not atom.any():
            return out
        # runs of equal values among the held boundaries; a run's held ends are its true
        # ends except at the ends of what is held (there the galloping search completes it)
        first = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
        last = np.concatenate((first[1:] - 1, [values.size - 1]))
        lo, hi = at[first].copy(), at[last].copy()
        for r in {0, first.size - 1}:
            if atom[first[r]] and (r == 0 and at[0] > 0 or r == first.size - 1
                                   and at[-1] <= self.n):
                lo[r], hi[r] = self._run(float(values[first[r]]), int(at[first[r]]))
        split = np.repeat(self._splits(lo, hi), last - first + 1)
        return np.where(atom, np.where(at <= split, left, right), out)

    def _edge(self, i: int) -> float:
        v = self._value(i)
        return float(self._coords(np.array([i]), np.array([v]))[0])

    def log_weight(self, i: int) -> float:
        # the same float operations as the vectorised weights above
        return float(-self.epsilon * abs(float(i) - self.q * self.n) / (2 * self.delta))

    def draw(self, source: RandomSource) -> float:
        return self.draw_piece(source)[1]

    def draw_piece(self, source: RandomSource) -> tuple[int, float]:
        """(i, u): the piece drawn and the point in it (chart coordinates)."""
        if self.full:
            return sample_piece(self.log_weights, self.window, source)
        i = (np.arange(self.start, self.stop) if self.blocks is None
             else self.blocks[:-1]).astype(np.float64)
        # the same float operations as log_weight, at once for the window
        window_ld = -self.epsilon * np.abs(i - self.q * self.n) / (2 * self.delta)
        return sample_piece_lazy(
            self.log_weight, self._edge, self.n + 1,
            self.start, self.window, source, window_ld, window_pieces=self.blocks,
        )

    def edge(self, i: int) -> float:
        """Boundary i in chart coordinates (from the window when it holds it)."""
        if self.start <= i <= self.stop:
            if self.blocks is None:
                return float(self.window[i - self.start])
            # inside the run of ties every boundary equals its ends
            return float(self.window[int(np.searchsorted(self.blocks, i, side="right")) - 1])
        return self._edge(i)


class ExponentialQuantile(Mechanism):
    """ε-DP q-quantile over public bounds by the exponential mechanism.

    ``ExponentialQuantile(query, epsilon, *, base="uniform", resolution=None,
    log_scale=None)`` with ``query`` a :class:`~instancedp.queries.order.Quantile`
    or ``Median`` (its bounds and q; its ``neighbours`` relation, substitution
    when it declares none).  ``base``: ``"uniform"``, ``"log"``, ``"grid"``,
    ``"log-grid"`` (these two need the public ``resolution``; the grid is
    lower + k·resolution ≤ upper), ``"log-log"`` or ``"log-atoms"`` (``atom_levels``:
    its number of decimal levels, default 7).  ``sampler`` (grid bases only):
    ``"permute-and-flip"`` (default) or ``"exponential"`` (module docstring).
    The earlier call ``ExponentialQuantile(q, lower, upper, epsilon)`` still
    works (uniform base, substitution).  Guarantee: ``PureDP(epsilon)``.
    """

    name = "exponential_quantile"

    def __init__(
        self,
        query: Any,
        *args: Any,
        epsilon: Any = None,
        base: str = "uniform",
        resolution: float | None = None,
        log_scale: float | None = None,
        sampler: str | None = None,
        atom_levels: int | None = None,
    ) -> None:
        if hasattr(query, "q") and hasattr(query, "lower"):
            if len(args) + (epsilon is not None) != 1:
                raise ParameterError(
                    "ExponentialQuantile(query, epsilon, *, base=...) needs epsilon once",
                    parameter="epsilon",
                )
            self.query = query
            self.q = float(query.q)
            self.lower, self.upper = float(query.lower), float(query.upper)
            self.epsilon = _validate.epsilon(args[0] if args else epsilon)
            self.neighbours = getattr(query, "neighbours", "substitution")
        else:  # the earlier call (q, lower, upper, epsilon)
            if len(args) + (epsilon is not None) != 3:
                raise ParameterError(
                    "ExponentialQuantile takes (query, epsilon) or (q, lower, upper, epsilon)",
                    parameter="query",
                )
            rest = list(args) + ([epsilon] if epsilon is not None else [])
            self.query = None
            self.q = _check_q(query)
            self.lower, self.upper = _validate.bounds(rest[0], rest[1])
            self.epsilon = _validate.epsilon(rest[2])
            self.neighbours = "substitution"
        score_sensitivity(self.q, self.neighbours)  # validates the relation
        self.base = _validate.one_of(base, BASES, "base")
        self.resolution = None
        if base in ("grid", "log-grid"):
            if resolution is None:
                raise ParameterError(
                    f"base={base!r} needs the column's public resolution (e.g. 1 for integers)",
                    parameter="resolution",
                    allowed="> 0",
                )
            self.resolution = _validate.finite_positive(resolution, "resolution")
            self._grid_count = grid_count(self.lower, self.upper, self.resolution)
        self.log_scale = None
        if base in ("log", "log-grid", "log-log", "log-atoms"):
            self.log_scale = (
                _validate.finite_positive(log_scale, "log_scale")
                if log_scale is not None
                else (self.upper - self.lower) * _LOG_SCALE_FRACTION
            )
        self._atoms = None
        if base == "log-atoms":
            from .atoms import ATOM_LEVELS, AtomChart

            levels = ATOM_LEVELS if atom_levels is None else atom_levels
            if isinstance(levels, bool) or not isinstance(levels, int) or levels < 1:
                raise ParameterError(f"atom_levels must be an integer >= 1, got {levels!r}",
                                     parameter="atom_levels", allowed=">= 1")
            self._atoms = AtomChart(self.lower, self.upper, self.log_scale, levels=levels)
        elif atom_levels is not None:
            raise ParameterError("atom_levels applies to base='log-atoms' only",
                                 parameter="atom_levels", allowed="None")
        finite = base in ("grid", "log-grid")
        if sampler is None:
            sampler = "permute-and-flip" if finite else "exponential"
        self.sampler = _validate.one_of(sampler, SAMPLERS, "sampler")
        if self.sampler == "permute-and-flip" and not finite:
            raise ParameterError(
                "sampler='permute-and-flip' needs a finite candidate set: base 'grid' or "
                f"'log-grid', got base={base!r}",
                parameter="sampler",
                allowed="exponential (for base 'uniform' or 'log')",
            )

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def parameters(self) -> dict[str, Any]:
        p: dict[str, Any] = {
            "q": self.q,
            "lower": self.lower,
            "upper": self.upper,
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
            "base": self.base,
        }
        if self.resolution is not None:
            p["resolution"] = self.resolution
            p["sampler"] = self.sampler
            p["grid_shrink"] = GRID_SHRINK  # the score's public constant (grid_scores)
        if self.log_scale is not None:
            p["log_scale"] = self.log_scale
        if self.base == "log-log":
            p["alpha"] = LOGLOG_ALPHA
        if self._atoms is not None:
            p.update(self._atoms.parameters())
        return p

    def _chart(self) -> tuple[Callable, Callable, Callable] | None:
        """(chart, its inverse, log of the chart's derivative) of a continuous base
        measure other than Lebesgue's; None for the uniform base."""
        s = self.log_scale
        if self.base == "log":
            phi, phi_inv = log_scale_map(s)
            return phi, phi_inv, lambda y: -np.log(s + np.abs(y))
        if self.base == "log-log":
            psi, psi_inv = loglog_map(s)
            return psi, psi_inv, lambda y: (-np.log(s + np.abs(y)) - (1.0 + LOGLOG_ALPHA)
                                             * np.log1p(np.log1p(np.abs(y) / s)))
        return None

    # -- the law, shared by release, sample and output_distribution ----------------------

    def _rows(self, data: Any) -> np.ndarray:
        return sorted_rows(data, self.lower, self.upper)

    def _grid_index(self, x: np.ndarray) -> np.ndarray:
        return grid_index(x, self.lower, self.resolution, self._grid_count)

    def _continuous(self, data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(points, coordinates of the points in the base's chart, log weights)."""
        x = self._rows(data)
        n = x.size
        pts = np.concatenate(([self.lower], x, [self.upper]))
        chart = self._chart()
        coords = pts if chart is None else chart[0](pts)
        i = np.arange(n + 1)
        delta = score_sensitivity(self.q, self.neighbours)
        with np.errstate(divide="ignore"):
            logw = np.log(np.diff(coords)) - self.epsilon * np.abs(i - self.q * n) / (2 * delta)
        return pts, coords, logw

    def _segments(self, data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Grid bases: :func:`grid_segments` of the rows (all a grid release reads)."""
        return grid_segments(self._grid_count, self._grid_index(self._rows(data)))

    def _grid(self, segments: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        starts, lengths, below, above = segments
        logw = _grid_log_weights(lengths, below, above, self.q, self.epsilon, self.neighbours,
                                 _rows_of(below, above))
        return starts, lengths, logw

    def _log_grid(self, segments: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(segment starts, φ of the segments' cell edges, log score per unit of φ)."""
        starts, lengths, below, above = segments
        phi, _ = log_scale_map(self.log_scale)
        # public cell edges lower + (k − ½)·r; the segments tile the grid 0 … K − 1
        k = np.concatenate((starts, [self._grid_count])).astype(np.float64)
        edges = phi(self.lower + (k - 0.5) * self.resolution)
        log_score = _grid_log_scores(below, above, self.q, self.epsilon, self.neighbours,
                                     _rows_of(below, above))
        return starts, edges, log_score

    # -- permute-and-flip on the log grid -----------------------------------------------
    #
    # The cell of grid point k is [c_k − r/2, c_k + r/2], c_k = lower + k·r (exact reals),
    # with log measure μ_k = φ(c_k + r/2) − φ(c_k − r/2): symmetric about 0 and
    # decreasing in |c_k| (φ' = 1/(s + |t|)), so on a run of points its maximum is at
    # the point nearest 0.  The runs (blocks) are the segments of equal score cut
    # where s + |c| doubles: inside a block of more than one point μ varies by about
    # a factor 2 at most, which keeps the sampler's thinning ratios μ_k/max μ ≥ ~½.

    def _log_cell_measure(self, k: np.ndarray) -> np.ndarray:
        """log μ_k in floats (relative error a few ulps of the terms)."""
        s, r = self.log_scale, self.resolution
        c = self.lower + np.asarray(k, dtype=np.float64) * r
        a, b = c - r / 2.0, c + r / 2.0
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = np.where(
                a >= 0, np.log1p(r / (s + np.abs(a))),
                np.where(b <= 0, np.log1p(r / (s + np.abs(b))),
                         np.log1p(np.abs(b) / s) + np.log1p(np.abs(a) / s)),
            )
        return np.log(mu)

    def _cell_measure_ball(self, k: int) -> Any:
        """μ_k as a ball at the working precision."""
        from flint import arb

        s, r = arb(self.log_scale), arb(self.resolution)
        c = arb(self.lower) + arb(int(k)) * r
        a, b = c - r / 2, c + r / 2
        if a >= 0:
            return (r / (s + a)).log1p()
        if b <= 0:
            return (r / (s - b)).log1p()
        if a <= 0 and b >= 0:
            return (b / s).log1p() + (-a / s).log1p()

        def phi(t: Any) -> Any:  # a ball straddling 0: the odd φ's enclosure
            if t >= 0:
                return (t / s).log1p()
            if t <= 0:
                return -((-t / s).log1p())
            m = (t.abs_upper() / s).log1p()
            return m.union(-m)

        return phi(b) - phi(a)

    def _log_grid_blocks(self, starts, lengths, below, above) -> tuple:
        """The log-grid's blocks for :func:`~instancedp.noise.exact.sample_permute_and_flip`:
        (starts, sizes, log rate, its ball, its error scale, the thinning ratio)."""
        K, s, r, lo = self._grid_count, self.log_scale, self.resolution, self.lower
        # public cuts where s + |c| doubles, and around the point nearest 0
        span = max(abs(lo), abs(self.upper)) + r
        t = s * (2.0 ** np.arange(1, max(2, math.ceil(math.log2(span / s + 1.0)) + 2)) - 1.0)
        z = -lo / r
        with np.errstate(invalid="ignore", over="ignore"):
            cuts = np.concatenate((np.ceil((t - lo) / r), np.floor((-t - lo) / r) + 1.0,
                                   [math.floor(z), math.floor(z) + 1.0, math.ceil(z) + 1.0]))
        cuts = cuts[np.isfinite(cuts) & (cuts > 0) & (cuts < K)].astype(np.int64)
        seg = np.flatnonzero(lengths > 0)
        bstart = np.union1d(starts[seg], cuts)
        bsize = np.diff(np.concatenate((bstart, [K])))
        segment = np.searchsorted(starts, bstart, side="right") - 1
        # the point nearest 0 in each block: the ends or the clipped zero points
        last = bstart + bsize - 1
        zs = [np.clip(np.floor(z), bstart, last), np.clip(np.ceil(z), bstart, last)]
        probes = np.stack([bstart.astype(np.float64), last.astype(np.float64), *zs])
        log_mu = self._log_cell_measure(probes).max(axis=0)
        delta = score_sensitivity(self.q, self.neighbours)
        a = self.epsilon / (2.0 * delta)
        n = _rows_of(below, above)
        score = grid_scores(below[segment], above[segment], self.q, n)
        log_rate = -a * score + log_mu
        # float error: relative to the score's terms (s may cancel) and, in μ, to span/s
        terms = a * _score_terms(below[segment], above[segment], self.q, n)
        scale = terms + np.abs(log_mu) + span / s
        top_cache: dict[tuple[int, int], Any] = {}

        def top(b: int) -> Any:
            from flint import ctx

            key = (b, ctx.prec)
            if key not in top_cache:
                ks = {int(bstart[b]), int(last[b])} | {int(x[b]) for x in zs}
                balls = [self._cell_measure_ball(k) for k in sorted(ks)]
                m = balls[0]
                for x in balls[1:]:
                    m = m.max(x)
                top_cache[key] = m
            return top_cache[key]

        def ball(b: int) -> Any:
            i = int(segment[b])
            return (-_rate_ball(self.epsilon, delta)
                    * _grid_score_ball(int(below[i]), int(above[i]), self.q, n) + top(b).log())

        def ratio(b: int, j: int) -> Any:
            return self._cell_measure_ball(int(bstart[b]) + j) / top(b)

        return bstart, bsize, log_rate, ball, scale, ratio

    def _grid_value(self, k: int) -> float:
        return float(min(self.lower + k * self.resolution, self.upper))

    def grid_values(self) -> np.ndarray:
        """Grid bases: every grid point lower + k·resolution (the last clipped to upper),
        in the order of :meth:`grid_utilities` (small grids: tests and benchmarks)."""
        return np.minimum(self.lower + np.arange(self._grid_count) * self.resolution,
                          self.upper)

    def release(self, data: Any, rng: Any = None) -> Release:
        source: RandomSource = resolve(rng)
        return self._record(self._draw(self._weights(data), source), source)

    def _weights(self, data: Any) -> Any:
        if self.resolution is not None:
            return self._grid_weights(self._segments(data))
        return self._memory_pieces(data)

    def _grid_weights(self, segments: tuple) -> Any:
        """Grid bases: the draw's input from the segments (rows or a histogram's counts)."""
        if self.sampler == "permute-and-flip":
            starts, lengths, below, above = segments
            if self.base == "grid":
                return starts, permute_and_flip_segments(
                    lengths, below, above, self.q, self.epsilon, self.neighbours,
                    _rows_of(below, above))
            return self._log_grid_blocks(starts, lengths, below, above)
        return self._grid(segments) if self.base == "grid" else self._log_grid(segments)

    def grid_edges(self) -> np.ndarray | None:
        """Grid bases: the histogram edges whose cells are the grid points' cells exactly
        (:func:`grid_edges`; None where a histogram cannot express them)."""
        return grid_edges(self.lower, self.upper, self.resolution, self._grid_count)

    def weights_from_counts(self, counts: Any) -> Any:
        """Grid bases: the draw's input from the rows per grid point (a histogram on
        :meth:`grid_edges`, one count per point) — the same as :meth:`_weights` on the
        rows, so the same draws out of core as in memory."""
        cnt = np.asarray(counts, dtype=np.int64)
        if cnt.shape != (self._grid_count,) or np.any(cnt < 0):
            raise ParameterError(
                f"counts must be {self._grid_count} non-negative integers, one per grid point",
                parameter="counts")
        occupied = np.flatnonzero(cnt)
        return self._grid_weights(occupied_segments(self._grid_count, occupied, cnt[occupied]))

    def _memory_pieces(self, data: Any) -> PieceSet:
        """:meth:`pieces` over in-memory rows (the same reads an engine serves)."""
        from ..backends.numpy import pad_window

        x = self._rows(data) + 0.0  # −0.0 → 0.0, as every engine reads it

        def read(start: int, stop: int) -> np.ndarray:
            return pad_window(x[max(start, 0):], start, stop, self.lower, self.upper,
                              offset=max(start, 0), n=x.size)

        return self.pieces(int(x.size), read)

    def pieces(self, n: int, read: Callable[[int, int], np.ndarray]) -> PieceSet:
        """The continuous law's pieces over n sorted rows, read through ``read(start,
        stop)`` (the sorted clamped values at 0-based ranks [start, stop), ``lower``
        below rank 0 and ``upper`` from n on): an array here, a database's
        ``order_window`` out of core — the same draws, bit for bit."""
        chart = self._chart()
        chart = None if chart is None else chart[0]
        return PieceSet(n, self.q, self.epsilon, score_sensitivity(self.q, self.neighbours),
                        read, chart, (self.lower, self.upper), atoms=self._atoms)

    def _draw(self, weights: Any, source: RandomSource) -> float:
        if self.sampler == "permute-and-flip":
            if self.base == "grid":
                starts, draw = weights
                b, j = draw(source)
                return self._grid_value(int(starts[b]) + j)
            starts, lengths, log_rate, ball, scale, ratio = weights
            b, j = sample_permute_and_flip(log_rate, ball, lengths, scale, ratio, source)
            return self._grid_value(int(starts[b]) + j)
        if self.base == "grid":
            starts, lengths, logw = weights
            i = sample_index_from_log_weights(logw, source)
            return self._grid_value(int(starts[i]) + source.integers(int(lengths[i])))
        if self.base == "log-grid":
            starts, lengths, logw = weights
            # a segment ∝ exp(score) × its exact φ-length, a uniform point of it in φ,
            # mapped back and rounded to its grid cell (clipped to the segment's cells,
            # so the segment's probability is exact whatever the rounding)
            i, u = sample_piece(logw, lengths, source)
            _, phi_inv = log_scale_map(self.log_scale)
            k = math.floor((float(phi_inv(u)) - self.lower) / self.resolution + 0.5)
            last = int(starts[i + 1]) - 1 if i + 1 < starts.size else self._grid_count - 1
            return self._grid_value(min(max(k, int(starts[i])), last))
        # A piece ∝ score weight × its EXACT length, then an exactly rounded uniform
        # point in it: float lengths overflow on huge bounds, and lo + u·(hi − lo)
        # would reveal the data-dependent endpoints in its low bits (Mironov 2012).
        u = weights.draw(source)
        if self._atoms is not None:  # the map back from the expanded line: post-processing
            return self._atoms.value(u)
        chart = self._chart()
        if chart is not None:
            # φ⁻¹ is public post-processing of a point of the φ-chart law
            return float(np.clip(chart[1](u), self.lower, self.upper))
        return float(u)

    def sample(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` independent releases on one dataset (the release path, repeated)."""
        source = resolve(rng)
        weights = self._weights(data)
        if self._atoms is not None:  # the draws of _draw, mapped back at once
            return self._atoms.values(np.array([weights.draw(source) for _ in range(int(size))]))
        return np.array([self._draw(weights, source) for _ in range(int(size))])

    def grid_utilities(self, data: Any) -> np.ndarray:
        """Grid bases: u_k = −ε·s_k/(2Δ) (+ log μ_k on log-grid) at every grid point k,
        the utilities permute-and-flip ranks (small grids: tests and benchmarks)."""
        starts, lengths, below, above = self._segments(data)
        k = np.arange(self._grid_count)
        seg = np.searchsorted(starts[lengths > 0], k, side="right") - 1
        u = _grid_log_scores(below, above, self.q, self.epsilon, self.neighbours,
                             _rows_of(below, above))[lengths > 0][seg]
        if self.base == "log-grid":
            u = u + self._log_cell_measure(k)
        return u

    def output_probabilities(self, data: Any) -> dict[float, float]:
        """Grid bases: the exact mass of every grid point (small grids; tests)."""
        if self.base not in ("grid", "log-grid"):
            raise ParameterError(
                "output_probabilities is for base='grid' or 'log-grid'", parameter="base"
            )
        if self.sampler == "permute-and-flip":
            p = permute_and_flip_probabilities(self.grid_utilities(data))
            return {self._grid_value(int(i)): float(pi) for i, pi in enumerate(p)}
        if self.base == "log-grid":
            return self._log_grid_probabilities(data)
        starts, lengths, logw = self._grid(self._segments(data))
        keep = lengths > 0
        starts, lengths, logw = starts[keep], lengths[keep], logw[keep]
        per_point = logw - np.log(lengths.astype(float))
        top = logw[np.isfinite(logw)].max()
        z = np.exp(logw[np.isfinite(logw)] - top).sum()
        out: dict[float, float] = {}
        for s, ln, lp in zip(starts, lengths, per_point, strict=True):
            for k in range(int(s), int(s + ln)):
                out[self._grid_value(k)] = float(np.exp(lp - top) / z)
        return out

    def _log_grid_probabilities(self, data: Any) -> dict[float, float]:
        starts, edges, log_score = self._log_grid(self._segments(data))
        phi, _ = log_scale_map(self.log_scale)
        ends = np.concatenate((starts[1:], [self._grid_count]))
        top = float(log_score.max())
        masses: dict[int, float] = {}
        for s, e, ls in zip(starts, ends, log_score, strict=True):
            for k in range(int(s), int(e)):
                cell = phi(self.lower + (k + 0.5) * self.resolution) - phi(
                    self.lower + (k - 0.5) * self.resolution
                )
                masses[k] = float(np.exp(ls - top) * cell)
        z = sum(masses.values())
        return {self._grid_value(k): m / z for k, m in masses.items()}

    def output_distribution(self, data: Any) -> OutputDistribution | dict[float, float]:
        """Exact law: the grid base's point masses (a dict, as
        :meth:`output_probabilities`), else a density.

        Theorem (McSherry & Talwar 2007, Thm. 6, with base measure μ): the
        density is μ(t)·exp(−ε·s(t)/(2Δ))/Z.  Proof sketch: s is constant on
        each open segment between consecutive rows, equal to |i − qn| on the
        i-th; integrating μ over it gives the segment's mass; the sampler
        picks a segment with exactly that probability and then a point with
        density ∝ μ inside it.  Uniform base: piecewise constant.  Log and
        log-log bases: density ∝ exp(−ε|i − qn|/(2Δ))·φ′(t) (φ′(t) = 1/(s + |t|),
        resp. ψ′), returned through ``logpdf`` with a cdf in chart coordinates.
        """
        if self.base in ("grid", "log-grid"):
            return self.output_probabilities(data)
        if self._atoms is not None:
            from .atoms import expanded_law

            pieces = self._memory_pieces(data)
            if not pieces.full:
                raise ParameterError("the exact law of base='log-atoms' is computed for "
                                     "small tables only (every piece in one window)",
                                     parameter="data")
            return expanded_law(self._atoms, pieces.values, pieces.window, pieces.log_weights)
        pts, coords, logw = self._continuous(data)
        n = pts.size - 2
        delta = score_sensitivity(self.q, self.neighbours)
        log_score = -self.epsilon * np.abs(np.arange(n + 1) - self.q * n) / (2 * delta)
        base = self._chart()
        if base is None:
            return piecewise_constant_law(pts, log_score)
        phi, _, log_dphi = base
        chart = piecewise_constant_law(coords, log_score)  # the law of φ(T)

        def logpdf(y: Any) -> np.ndarray:
            y = np.asarray(y, dtype=np.float64)
            return chart.logpdf(phi(y)) + log_dphi(y)

        return OutputDistribution(
            pdf=lambda y: np.exp(logpdf(y)),
            cdf=lambda y: chart.cdf(phi(y)),
            kinks=tuple(float(p) for p in np.unique(pts)),
            logpdf=logpdf,
        )


# --------------------------------------------------------------------------- simulation helpers


def interval_log_weights(
    data: Any, q: float, lower: float, upper: float, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """(points, log weights of the n+1 intervals), uniform base, substitution."""
    mech = ExponentialQuantile(q, lower, upper, epsilon)
    pts, _, logw = mech._continuous(data)
    return pts, logw


def exponential_quantile_sample(
    data: Any,
    q: float,
    lower: float,
    upper: float,
    epsilon: float,
    size: int,
    rng: Any = None,
) -> np.ndarray:
    """Vectorised simulation draws (benchmarks): ``size`` outputs on one dataset
    (uniform base, substitution; float path, not for releases)."""
    from ..random import as_generator

    gen = as_generator(rng)
    pts, logw = interval_log_weights(data, q, lower, upper, epsilon)
    w = np.exp(logw - logw.max())
    cum = np.cumsum(w)
    idx = np.minimum(np.searchsorted(cum, gen.random(size) * cum[-1], side="right"), w.size - 1)
    return pts[idx] + gen.random(size) * (pts[idx + 1] - pts[idx])
