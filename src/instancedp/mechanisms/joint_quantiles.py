r"""The joint exponential mechanism for m quantiles (Gillenwater, Joseph &
Kulesza, "Differentially Private Quantiles", ICML 2021, §3), sampled exactly.

**Law.**  Data clamped to the public [a, b] and sorted, x_0 = a ≤ x_1 ≤ … ≤
x_n ≤ x_{n+1} = b; interval i = (x_i, x_{i+1}) (i = 0 … n) has length L_i.
An output is a sorted vector a ≤ o_1 ≤ … ≤ o_m ≤ b; with o_0 = a, o_{m+1} = b,
q_0 = 0, q_{m+1} = 1 and w_j = q_j − q_{j−1}, its utility is

    u(o) = −Σ_{j=1}^{m+1} | #{x : o_{j−1} ≤ x < o_j} − w_j·n |

(the last gap closed at b) and its density on the sorted simplex (Lebesgue
measure, data-free) is p(o) = exp(ε·u(o)/(2Δ)) / Z, Δ the utility's
sensitivity under the relation (:func:`utility_sensitivity`).

**Sensitivity.**  Substitution: one gap count drops by 1 and one rises by 1,
n is fixed: |Δu| ≤ 2 = Δ (GJK 2021, Lemma 3.3).  Add/remove: adding a row
that falls in gap j* raises c_{j*} by 1 and every target w_j·n by w_j.  Term
j* changes by at most |1 − w_{j*}| = 1 − w_{j*}, every other term j by at
most w_j, and Σ_{j≠j*} w_j = 1 − w_{j*}: |Δu| ≤ 2·(1 − w_{j*}) ≤ 2·(1 − min_j
w_j) = Δ (removal is the same change reversed).  For evenly spaced levels
j/(m + 1) this is 2m/(m + 1): 1.5 for quartiles, 1.8 for deciles — the
published bound 2 is loose by that factor under add/remove.  So
exp(ε·u/(2Δ)) is the exponential mechanism with sensitivity Δ and p is ε-DP
(McSherry & Talwar 2007, Thm. 6: the numerator moves by e^{ε/2}, Z by
e^{ε/2}).  n enters only inside the score, whose bound covers its change.

**Path weights.**  If o puts a run of r outputs in interval i, the sorted
r-tuples there have volume L_i^r / r!.  With i_1 ≤ … ≤ i_m the intervals of
o (i_0 = 0, i_{m+1} = n) the gap counts are i_j − i_{j−1}, so the mass of the
interval path is  Π_runs L_i^r / r! · Π_j K_j(i_j − i_{j−1}),
K_j(d) = exp(−ε|d − w_j n|/(2Δ)).  A forward pass over "j outputs placed, last
run ends in interval i" (B_j[i]) and "transition into interval i"
(G_s[i] = Σ_{i'<i} B_s[i'] K_{s+1}(i − i')) gives Z in O(m²·n) — each G_s is
O(n) by splitting K at d = w·n into two geometric pieces (a sliding-window
and a prefix log-sum-exp, no subtraction).  A backward pass draws the path;
each run gets r sorted exactly rounded uniforms in its interval.

**Exactness (certified rejection).**  The forward pass runs in float64, so
the backward draw has a law q close to, not equal to, the target.  Each
categorical draw is exact for its float log-weights ℓ_k (probability
exp(ℓ_k)/S, with a lazily refined uniform and rigorous bounds on the float
prefix sums); the path is then accepted with probability
A = W(path)/(M·q(path)), W the exact path mass (ball arithmetic,
python-flint ``arb``), M = exp(log Ẑ + η).  The accepted path has exactly the
declared law whenever A ≤ 1 for every path, i.e. whenever the float pass's
relative error is below η: η is set to 4× a worst-case bound of that error
(IEEE-754 rounding of every + and ×, and float64 exp/log1p assumed within
2^12 ulp — numpy documents ≤ 4 ulp) and every draw checks A ≤ 1 in ball
arithmetic.  Acceptance rate e^{−η}·Z/Ẑ ≈ 1.

**The log chart** (``base="log"``, as ExponentialQuantile's): the mechanism
above runs on the rows mapped by φ(u) = sign(u)·log1p(|u|/s) (public s,
default 10⁻⁴ of the bounds' length) between φ(a) and φ(b), and its output is
mapped back by φ⁻¹ (clipped to [a, b]).  φ is monotone, so the gap counts —
hence the utility u and its sensitivity 2 — are those of the rows themselves
(up to rows that φ merges in floating point, which the declared law counts as
its φ-rows do); a row-wise public map sends neighbours to neighbours, so the
φ-law is ε-DP, and φ⁻¹ is post-processing.  The output's law is the same
exponential mechanism with the base measure of density ∝ 1/(s + |t|) in
place of Lebesgue measure: an interval between two rows gets mass by its
φ-length, so a loose bound's empty end costs ∝ log(width), not ∝ width.  The
sampler is the exact one above on the φ-rows; the exact check runs there.

**The grid base** (``base="grid"``, a declared ``resolution`` r > 0): outputs on
the public grid c_k = lower + k·r ≤ upper, k = 0 … K − 1 (the single quantile's
grid, :func:`~instancedp.mechanisms.quantile.grid_count`).  Each row x is mapped
to its nearest grid point g(x) (:func:`~instancedp.mechanisms.quantile.grid_index`,
a row-local public map) and then to s = ``spread`` chart rows
g(x) + i/(s + 1), i = 1 … s, in the chart [0, K]; the mechanism above runs on
the s·n chart rows with utility sensitivity s·Δ, and a chart output o is
released as c_⌊o⌋.

*Privacy.*  Neighbouring tables map to tables that differ in the s chart rows
of one row; s single-row steps move the chart utility u′ by at most Δ each
(the bound above holds for any one row), so |Δu′| ≤ s·Δ and the chart law
exp(ε·u′/(2sΔ))/Z is ε-DP; o ↦ c_⌊o⌋ is post-processing.

*What it releases.*  Split each cell [k, k + 1) into s + 1 sub-cells of length
1/(s + 1); sub-cell (k, t) holds no chart row inside, and below it lie
s·#{g(x) < k} + t·#{g(x) = k} chart rows.  So u′/s = −Σ_j |F(o_j) − F(o_{j−1}) −
w_j·n| with F(k, t) = #{g < k} + (t/s)·#{g = k}: the published utility in which a
run of tied rows at c_k may count below an output c_k in steps of 1/s of the
run — a release c_k scores well when the target rank falls inside the run of
rows equal to c_k, as the peers' candidate scores do.  (Rows put on the cell
edges instead, ψ(x) = #{k : c_k ≤ x}, give F(k, ·) = #{g < k}: the published
utility at c_k, whose law is the continuous one rounded up to the grid — a
tie never scores inside its run, the reason to spread.)  The law
of the sorted sub-cell vector is the exponential mechanism with the data-free
base measure Π_runs (1/(s + 1))^r / r! (r equal sub-cells; the sorted simplex
of a product of sub-cells) — the law of the release is its push-forward.

*Exact sampling.*  Chart points are multiples of 1/(s + 1) below K, exact
doubles when K·(s + 1) ≤ 2⁵² (checked); an interval between chart rows is a
whole number of sub-cells, each inside one cell, so ⌊U⌋ for U uniform on it is
the cell of a uniformly drawn sub-cell index (``RandomSource.integers``), and
the r sorted uniforms of a run are r sorted independent indices.  The path draw
is the exact one above.  Cost: the forward pass on s·n rows (s = 7 by default,
chosen on a synthetic integer column: docs/results/quantiles.md).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from flint import arb, ctx
from scipy.special import gammaln, logsumexp

from ..noise.exact import _LazyUniform
from ..random import RandomSource
from .quantiles import QuantilesMechanism, uniform_point

#: base measures of the joint mechanism (module docstring)
JOINT_BASES = ("uniform", "log", "grid")
#: chart rows per row on the grid base (so that chart points are exact doubles)
SPREADS = (1, 3, 7, 15, 31)
DEFAULT_SPREAD = 7
_TWO52 = 2.0**-52
_EXP_REL = 2.0**-40  # 2^12 ulp: assumed bound on float64 exp/log1p relative error


def _window_lse(y: np.ndarray, width: int) -> np.ndarray:
    """out[i] = log Σ exp(y[max(0, i − width) : i]) (−inf when empty), O(len(y)).

    Van Herk / Gil-Werman blocks: each window is a block suffix plus the next
    block's prefix, so no sum is ever subtracted.
    """
    n = y.size
    if width <= 0 or n == 0:
        return np.full(n, -np.inf)
    width = min(width, n)
    nb = (n + width) // width + 1
    buf = np.full(nb * width, -np.inf)
    buf[width : width + n] = y
    blocks = buf.reshape(nb, width)
    with np.errstate(invalid="ignore"):
        pre = np.logaddexp.accumulate(blocks, axis=1).ravel()
        suf = np.logaddexp.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].ravel()
        p = np.arange(n)
        end = p + width - 1
        return np.where(p % width == 0, pre[end], np.logaddexp(suf[p], pre[end]))


def _transition(log_b: np.ndarray, t: float, c: float) -> np.ndarray:
    """G[i] = log Σ_{i' < i} exp(log_b[i'] − c·|i − i' − t|)."""
    n = log_b.size
    i = np.arange(n, dtype=np.float64)
    whole = math.floor(t)
    # d = i − i' ∈ [1, ⌊t⌋]: −c(t − d) = −ct + ci − ci'
    near = -c * t + c * i + _window_lse(log_b - c * i, whole)
    # d ≥ ⌊t⌋ + 1 > t: −c(d − t) = ct − ci + ci'
    far = np.full(n, -np.inf)
    gap = whole + 1
    if gap < n:
        with np.errstate(invalid="ignore"):
            acc = np.logaddexp.accumulate(log_b + c * i)
        far[gap:] = c * t - c * i[gap:] + acc[: n - gap]
    with np.errstate(invalid="ignore"):
        return np.logaddexp(near, far)


@dataclass
class JointState:
    """Forward pass on one dataset (private: an analysis object, never released)."""

    pts: np.ndarray  # a, sorted clamped data, b
    log_len: np.ndarray  # log L_i, i = 0 … n
    targets: np.ndarray  # w_j·n, j = 1 … m+1 (floats)
    targets_exact: list[Fraction]
    c: float
    c_exact: Fraction
    log_g: list[np.ndarray]  # G_s, s = 0 … m−1
    log_b: list[np.ndarray | None]  # B_j, j = 1 … m (index 0 unused)
    run_prefix: np.ndarray  # Σ_{l ≤ j} −c·t_l (internal steps of a run)
    log_final: np.ndarray  # log B_m[i] + log K_{m+1}(n − i)
    log_z: float
    eta: float  # certified margin of the rejection step

    @property
    def n(self) -> int:
        return self.pts.size - 2

    def run_log_weights(self, j: int, i: int) -> np.ndarray:
        """Log-weights of the run length r = 1 … j ending output j in interval i."""
        r = np.arange(1, j + 1)
        s = j - r
        internal = self.run_prefix[j] - self.run_prefix[s + 1]  # l = s+2 … j
        g = np.array([self.log_g[k][i] for k in s])
        with np.errstate(invalid="ignore"):
            return r * self.log_len[i] - gammaln(r + 1) + internal + g


def utility_sensitivity(qs: tuple[float, ...], neighbours: str) -> Fraction:
    """Δ of u (module docstring): 2 under substitution, 2·(1 − min_j w_j) under
    add/remove, w_j = q_j − q_{j−1} (q_0 = 0, q_{m+1} = 1; exact rationals)."""
    if neighbours == "substitution":
        return Fraction(2)
    levels = [Fraction(0), *(Fraction(q) for q in qs), Fraction(1)]
    return 2 * (1 - min(b - a for a, b in itertools.pairwise(levels)))


def forward(
    x_sorted: np.ndarray, qs: tuple[float, ...], lower: float, upper: float, epsilon: float,
    sensitivity: Fraction = Fraction(2),
) -> JointState:
    """The float64 forward pass: log Z and the tables the backward draw needs
    (density exp(ε·u/(2·sensitivity)))."""
    pts = np.concatenate(([lower], x_sorted, [upper]))
    n = x_sorted.size
    size = n + 1
    with np.errstate(divide="ignore"):
        log_len = np.log(np.diff(pts))
    levels = [Fraction(0), *(Fraction(q) for q in qs), Fraction(1)]
    w_exact = [b - a for a, b in itertools.pairwise(levels)]
    t_exact = [w * n for w in w_exact]
    targets = np.array([float(t) for t in t_exact])
    c_exact = Fraction(epsilon) / (2 * Fraction(sensitivity))
    c = float(c_exact)
    m = len(qs)
    idx = np.arange(size, dtype=np.float64)
    run_prefix = np.concatenate(([0.0], np.cumsum(-c * targets)))
    log_g: list[np.ndarray] = [-c * np.abs(idx - targets[0])]
    log_b: list[np.ndarray | None] = [None]
    for j in range(1, m + 1):
        r = np.arange(1, j + 1)
        internal = run_prefix[j] - run_prefix[j - r + 1]
        with np.errstate(invalid="ignore"):
            terms = (
                r[:, None] * log_len[None, :]
                - gammaln(r + 1)[:, None]
                + internal[:, None]
                + np.stack([log_g[j - k] for k in r])
            )
        top = terms.max(axis=0)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore", under="ignore"):
            np.subtract(terms, top, out=terms)
            np.exp(terms, out=terms)
            log_b.append(np.log(terms.sum(axis=0)) + top)
        if j < m:
            log_g.append(_transition(log_b[j], targets[j], c))
    log_final = log_b[m] - c * np.abs(n - idx - targets[m])
    log_z = float(logsumexp(log_final))
    # Worst-case relative error of the float pass (see module docstring): along
    # each chain of ≤ size + m + 8 log-add-exps, every step rounds by at most an
    # ulp of the largest log magnitude plus its exp/log1p error; a path's ratio
    # W/q telescopes over ≤ 2m + 1 stored values, each carrying one such chain.
    finite = [np.abs(a[np.isfinite(a)]) for a in (*log_g, *log_b[1:], log_final)]
    big = max([float(a.max()) for a in finite if a.size] + [0.0]) + c * size + 1.0
    bound = (2 * m + 2) * (size + m + 8) * (8.0 * _TWO52 * big + 4.0 * _EXP_REL)
    eta = max(2.0**-20, 4.0 * bound)
    return JointState(
        pts, log_len, targets, t_exact, c, c_exact, log_g, log_b, run_prefix, log_final, log_z, eta
    )


# ---------------------------------------------------------------------------
# Exact categorical draws over float log-weights, and the rejection step.
# ---------------------------------------------------------------------------


def _sum_bounds(lw: np.ndarray) -> tuple[float, np.ndarray, float, float]:
    """(top, float prefix sums of exp(lw − top), relative and absolute error bounds)."""
    finite = np.isfinite(lw)
    top = float(lw[finite].max())
    with np.errstate(under="ignore"):
        p = np.where(finite, np.exp(lw - top), 0.0)
    cum = np.cumsum(p)
    rel = (lw.size + 4) * _TWO52 + 2 * _EXP_REL
    absolute = (lw.size + 1) * 2.0**-1070  # exp underflowing to 0 or a subnormal
    return top, cum, rel, absolute


def _ball(x: float, rel: float, absolute: float) -> tuple[Fraction, Fraction]:
    f = Fraction(x)
    err = abs(f) * Fraction(rel) + Fraction(absolute)
    return max(f - err, Fraction(0)), f + err


def _arb_prefix(lw: np.ndarray, top: float) -> list[arb]:
    """Rigorous prefix sums of exp(lw − top) (fallback, O(len) ball operations)."""
    out, acc = [], arb(0)
    for v in lw:
        if np.isfinite(v):
            acc = acc + (arb(float(v)) - arb(top)).exp()
        out.append(acc)
    return out


def categorical(lw: np.ndarray, source: RandomSource) -> tuple[int, arb]:
    """Index k with probability exactly exp(lw[k]) / Σ exp(lw), and a ball for log Σ exp(lw).

    The float prefix sums, widened by their rigorous error bounds, decide the
    draw whenever the lazily refined uniform U lies clear of the blur; else U
    gets more digits, and after 256 digits the sums are recomputed in ball
    arithmetic (probability ~ 1e−12 per draw).
    """
    lw = np.asarray(lw, dtype=np.float64)
    top, cum, rel, absolute = _sum_bounds(lw)
    u = _LazyUniform(source)
    total_lo, total_hi = _ball(float(cum[-1]), rel, absolute)
    while u.k < 256:
        u_lo, u_hi = Fraction(u.m, 1 << u.k), Fraction(u.m + 1, 1 << u.k)
        low, high = u_lo * total_lo, u_hi * total_hi
        guess = int(np.searchsorted(cum, float(u_lo) * float(cum[-1]), side="right"))
        for k in (guess, guess - 1, guess + 1):
            if not 0 <= k < cum.size or cum[k] == (cum[k - 1] if k else 0.0):
                continue
            prev_hi = _ball(float(cum[k - 1]), rel, absolute)[1] if k else Fraction(0)
            here_lo = _ball(float(cum[k]), rel, absolute)[0]
            if prev_hi <= low and high <= here_lo:
                total = arb(mid=float(cum[-1]), rad=float(total_hi - Fraction(float(cum[-1]))) * 2)
                return k, arb(top) + total.log()
        u.refine()
    return _categorical_arb(lw, top, u)


def _categorical_arb(lw: np.ndarray, top: float, u: _LazyUniform) -> tuple[int, arb]:
    old = ctx.prec
    try:
        prec = 128
        while True:
            ctx.prec = max(prec, u.k + 64)
            pre = _arb_prefix(lw, top)
            total = pre[-1]
            for k in range(len(pre)):
                low, high = u.lower() * total, u.upper() * total
                prev = pre[k - 1] if k else arb(0)
                if prev <= low and high < pre[k]:
                    return k, arb(top) + total.log()
            u.refine()
            prec *= 2
    finally:
        ctx.prec = old


def _bernoulli(log_a: arb, source: RandomSource) -> bool:
    """True with probability exactly exp(log_a) (a ball; must be ≤ 1)."""
    a = log_a.exp()
    if a > 1:
        raise RuntimeError("joint-quantile rejection bound violated (certified margin too small)")
    v = _LazyUniform(source)
    while True:
        if v.upper() <= a:
            return True
        if v.lower() >= a:
            return False
        if v.k > 512:  # the ball, not U, is the blur: cannot happen with a ≤ 1 − 2^−40 ball
            raise RuntimeError("joint-quantile acceptance undecided")
        v.refine()


def draw_path(state: JointState, source: RandomSource) -> list[tuple[int, int]] | None:
    """One proposal and its exact accept/reject: runs (interval, length) in order, or None."""
    old = ctx.prec
    ctx.prec = 192
    try:
        n = state.n
        c = arb(state.c_exact.numerator) / state.c_exact.denominator
        t = [arb(v.numerator) / v.denominator for v in state.targets_exact]
        log_q = arb(0)  # Σ (ℓ_chosen − log S)
        log_w = arb(0)  # exact log path mass
        i, log_s = categorical(state.log_final, source)
        log_q += arb(float(state.log_final[i])) - log_s
        log_w += -c * abs(arb(n - i) - t[-1])
        j, runs = len(state.log_b) - 1, []
        while True:
            lw = state.run_log_weights(j, i)
            r, log_s = categorical(lw, source)
            r += 1
            log_q += arb(float(lw[r - 1])) - log_s
            s = j - r
            length = arb(float(state.pts[i + 1])) - arb(float(state.pts[i]))
            log_w += r * length.log() - arb(r + 1).lgamma()
            for ell in range(s + 2, j + 1):  # outputs inside the run: gap count 0
                log_w += -c * t[ell - 1]
            runs.append((i, r))
            if s == 0:
                log_w += -c * abs(arb(i) - t[0])
                break
            prev = np.arange(i, dtype=np.float64)
            lw = state.log_b[s][:i] - state.c * np.abs(i - prev - state.targets[s])
            k, log_s = categorical(lw, source)
            log_q += arb(float(lw[k])) - log_s
            log_w += -c * abs(arb(i - k) - t[s])
            i, j = k, s
        log_m = arb(state.log_z) + arb(state.eta)
        if _bernoulli(log_w - log_m - log_q, source):
            return runs[::-1]
        return None
    finally:
        ctx.prec = old


class JointQuantiles(QuantilesMechanism):
    """ε-DP several quantiles: the joint exponential mechanism (Gillenwater et al. 2021).

    Density exp(ε·u(o)/(2Δ))/Z on sorted vectors (Δ = 2 under substitution,
    2·(1 − min_j w_j) under add/remove; proof in the module docstring), drawn
    exactly by certified rejection.  O(n log n + m²·n) per dataset (the sort,
    then the forward pass), then O(m·n) per draw.

    ``base``: ``"uniform"`` (Lebesgue measure on [lower, upper]), ``"log"`` (the
    log chart, scale ``log_scale``) or ``"grid"`` (releases on lower +
    k·``resolution``, each row spread over ``spread`` chart rows inside its cell;
    the cost is that of ``spread``·n rows).  Proofs in the module docstring.
    """

    name = "joint_quantiles"

    def __init__(self, query: Any, epsilon: float, *, base: str = "uniform",
                 log_scale: float | None = None, resolution: float | None = None,
                 spread: int = DEFAULT_SPREAD) -> None:
        from .. import _validate
        from ..errors import ParameterError

        super().__init__(query, epsilon)
        self.base = _validate.one_of(base, JOINT_BASES, "base")
        self.log_scale = None
        if base == "log":
            self.log_scale = (_validate.finite_positive(log_scale, "log_scale")
                              if log_scale is not None
                              else (self.query.upper - self.query.lower) * 1e-4)
        self.resolution = self.spread = None
        if base == "grid":
            from .quantile import grid_count

            if resolution is None:
                raise ParameterError(
                    "base='grid' needs the column's public resolution (e.g. 1 for integers)",
                    parameter="resolution", allowed="> 0")
            _validate.one_of(spread, SPREADS, "spread")
            self.resolution = _validate.finite_positive(resolution, "resolution")
            self.spread = int(spread)
            # chart points are multiples of 1/(spread + 1) below grid_points: exact doubles
            self.grid_points = grid_count(self.query.lower, self.query.upper, self.resolution,
                                          limit=2**52 // (self.spread + 1))
        elif resolution is not None:
            raise ParameterError("resolution applies to base 'grid' only",
                                 parameter="resolution")

    @property
    def sensitivity(self) -> Fraction:
        """The utility's sensitivity under the query's relation (public)."""
        return utility_sensitivity(self.query.qs, self.query.neighbours)

    @property
    def chart_sensitivity(self) -> Fraction:
        """Sensitivity of the utility on the chart's rows: a row is ``spread`` chart
        rows on the grid base, one elsewhere."""
        return self.sensitivity * (self.spread or 1)

    def parameters(self) -> dict[str, Any]:
        p = {**super().parameters(), "base": self.base,
             "utility_sensitivity": float(self.sensitivity)}
        if self.log_scale is not None:
            p["log_scale"] = self.log_scale
        if self.resolution is not None:
            p["resolution"] = self.resolution
            p["spread"] = self.spread
        return p

    def chart(self, x: np.ndarray) -> tuple[np.ndarray, float, float]:
        """(rows, lower, upper) in the coordinates the mechanism runs in: φ for the log
        chart (monotone: sorted rows stay sorted); on the grid base, each row's
        ``spread`` chart rows g + i/(spread + 1), i = 1 … spread, g its nearest grid
        point, in [0, K] (sorted); the identity otherwise."""
        q = self.query
        if self.base == "grid":
            from .quantile import grid_index

            g = grid_index(x, q.lower, self.resolution, self.grid_points).astype(np.float64)
            k = self.spread
            offsets = np.arange(1, k + 1, dtype=np.float64) / (k + 1)
            return np.sort((g[:, None] + offsets[None, :]).ravel()), 0.0, float(self.grid_points)
        if self.base != "log":
            return x, q.lower, q.upper
        from .quantile import log_scale_map

        phi, _ = log_scale_map(self.log_scale)
        lo, hi = float(phi(q.lower)), float(phi(q.upper))
        return np.clip(phi(x), lo, hi), lo, hi

    def _setup(self, x: np.ndarray) -> JointState | np.ndarray:
        q = self.query
        if q.lower == q.upper:
            return x
        y, lo, hi = self.chart(x)
        return forward(y, q.qs, lo, hi, self.epsilon, self.chart_sensitivity)

    def _grid_draw(self, runs: list[tuple[int, int]], state: JointState,
                   source: RandomSource) -> np.ndarray:
        """Grid base: the cells ⌊o⌋ of the chart outputs, drawn exactly.  A chart
        interval is a whole number of sub-cells of length 1/(spread + 1), each inside
        one cell, so ⌊U⌋ for U uniform on it is the cell of a uniform sub-cell index;
        r sorted uniforms give r sorted independent indices."""
        per = self.spread + 1
        out: list[float] = []
        for i, r in runs:
            first = int(state.pts[i] * per)
            subcells = int(state.pts[i + 1] * per) - first
            for s in sorted(int(source.integers(subcells)) for _ in range(r)):
                cell = (first + s) // per
                out.append(min(self.query.lower + cell * self.resolution, self.query.upper))
        return np.array(out, dtype=np.float64)

    def _draw(self, state: Any, source: RandomSource) -> np.ndarray:
        if not isinstance(state, JointState):  # lower == upper: one possible output
            return np.full(self.query.m, self.query.lower)
        while True:
            runs = draw_path(state, source)
            if runs is not None:
                break
        if self.base == "grid":
            return self._grid_draw(runs, state, source)
        out: list[float] = []
        for i, r in runs:
            lo, hi = float(state.pts[i]), float(state.pts[i + 1])
            out.extend(sorted(uniform_point(lo, hi, source) for _ in range(r)))
        o = np.array(out, dtype=np.float64)
        if self.base == "log":  # φ⁻¹: public post-processing, monotone (stays sorted)
            from .quantile import log_scale_map

            _, phi_inv = log_scale_map(self.log_scale)
            o = np.clip(phi_inv(o), self.query.lower, self.query.upper)
        return o

    def log_density(self, data: Any, outputs: Any) -> np.ndarray:
        """Exact log density at sorted output vectors (rows): ε·u(o)/(2Δ) − log Z.

        log Z is the float forward pass (relative error ≤ η, reported by
        :func:`forward`); u(o) is exact.  An analysis tool for the privacy check.
        For the log chart, data and outputs are in φ-coordinates (the density is
        the φ-law's, with respect to Lebesgue measure on the chart).
        """
        q = self.query
        x, lo, hi = self.chart(q.prepare(data).data)
        state = forward(x, q.qs, lo, hi, self.epsilon, self.chart_sensitivity)
        return utility(x, q.qs, np.atleast_2d(outputs)) * float(state.c_exact) - state.log_z

    def output_distribution(self, data: Any) -> JointState:
        """The exact law's tables on ``data`` (path masses via :meth:`log_density`;
        φ-coordinates for the log chart)."""
        q = self.query
        x, lo, hi = self.chart(q.prepare(data).data)
        return forward(x, q.qs, lo, hi, self.epsilon, self.chart_sensitivity)


def utility(x_sorted: np.ndarray, qs: tuple[float, ...], outputs: np.ndarray) -> np.ndarray:
    """u(o) = −Σ_j |#{o_{j−1} ≤ x < o_j} − w_j·n| for each row o (last gap closed)."""
    n = x_sorted.size
    below = np.searchsorted(x_sorted, outputs, side="left")  # #{x < o_j}
    edges = np.concatenate(
        [np.zeros((below.shape[0], 1)), below, np.full((below.shape[0], 1), n)], axis=1
    )
    counts = np.diff(edges, axis=1)
    w = np.diff(np.concatenate(([0.0], qs, [1.0])))
    return -np.abs(counts - w * n).sum(axis=1)
