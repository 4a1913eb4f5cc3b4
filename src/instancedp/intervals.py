"""Private error bars: a confidence interval with every release.

An interval states what it covers — the statistic the query defines, on
these data — its level, how it was obtained and what it charged.  Its
endpoints are part of the public record, so they must be a DP function of
the rows: either post-processing of the release (data-independent noise) or
the output of a further, charged mechanism.  One function per family:

* **Data-independent noise** (:func:`noise_interval`; the Laplace and
  Gaussian mechanisms): value ± scale·F⁻¹(1 − α/2), F the unit noise's cdf.
  The noise is independent of the data and symmetric, so
  P(|value − f(x)| > half-width) = α exactly.  No extra charge.  The release
  is projected onto the query's public range R, which holds f(x)
  (:func:`~instancedp.mechanisms.base.public_range`); the projection never
  moves it away from f(x), so the interval around the projected value covers
  at least as often, and it is then intersected with R (post-processing).
* **Noisy sum ÷ noisy count** (:func:`ratio_interval`): each noise is inside
  ±b·ln(2/α) with probability 1 − α/2 (Laplace tails, union bound); on that
  event the clamped mean S/n lies between (S̃ − a_S)/(C̃ + a_C) and
  (S̃ + a_S)/max(1, C̃ − a_C).  Post-processing of the two noisy values
  (their sum is the release's ε); no extra charge.
* **Smooth sensitivity** (:func:`smooth_interval`, queries other than order
  statistics): a share ε_I of ε releases ln S̃ = ln S_γ(x) + Lap(γ/ε_I).
  ln S_γ changes by at most γ between neighbours (S_γ is γ-smooth: NRS 2007,
  Def. 2.1), so this is ε_I-DP (Laplace mechanism).  With probability
  1 − α/2, S_γ(x) ≤ Ŝ = exp(ln S̃ + (γ/ε_I)·ln(1/α)) (one Laplace tail:
  P(Lap(b) < −t) = ½e^{−t/b}); independently |Z| ≤ z = F_Z⁻¹(1 − α/4) with
  probability 1 − α/2.  The release is q(x) + S_γ(x)·Z, so
  |release − q(x)| ≤ Ŝ·z with probability ≥ 1 − α (union bound), and so
  for the release projected onto the public range R.  The interval is then
  intersected with R, which holds the value (post-processing; coverage
  unchanged).
* **Quantiles and the median, every mechanism** (:func:`quantile_interval`):
  two AboveThreshold scans (Dwork & Roth 2014, Alg. 1 and Thm. 3.23; each
  ε_I/2-DP) over public candidates walking away from the released value
  (post-processing of a public number), with exact discrete Laplace noise
  (Canonne, Kamath & Steinke 2020) on integer queries.  See that function
  for the proof; the failure probability is at most α/2 per side whatever
  the main mechanism did.

* **A single bound-free quantile** (:func:`bound_free_interval`; ``bounds=None``:
  :class:`~instancedp.mechanisms.loglog.LogLogQuantile`,
  :class:`~instancedp.mechanisms.unbounded.UnboundedQuantile`): the two scans
  above on a public range R around the released value (:func:`bound_free_range`,
  the several-quantile rule's single-value case), on the rows clamped to R,
  with the ends that reach R opened to ±∞ (:func:`open_ends`): it covers the
  rows' own x_m.

* **Several quantiles, every mechanism** (:func:`quantiles_intervals`): ONE
  noisy hierarchical histogram (a 16-ary tree over 4,096 public cells, exact
  discrete Laplace on every node) gives an interval for every level by
  post-processing, so its cost does not grow with m; bound-free releases draw
  it on the range their values span and open the ends that reach it
  (:func:`open_ends`).  See that function for the proof.

* **A public or released scale** (:func:`family_draws`): propose-test-release
  (value ± (b/ε′)·ln(1/α), b the public proposal; ⊥ gets the public range),
  bounded local sensitivity (value ± (g/ε2)·ln(1/α): the LS-bound note's
  Theorem 1 covers releasing the bound g with the value), the private ratio
  (from its ε-DP noisy counts, :func:`share_interval`; bounded-ls from g),
  instance-based noise (the largest public scale; with its stated level graph
  a charged noisy ln λ, :func:`_noisy_rate_draws`).  Conditionally on the
  scale the Laplace noise is data-independent: exact, and free except the last.

Instance-adaptive families that need a charged diagnostic take a documented
share ``DEFAULT_FRACTION`` of ε for the interval: the mechanism runs at
ε·(1 − f), the interval at the rest, and the record states both; the
guarantee charged is their composition.  A mechanism without an interval
method is refused before anything is charged, with the reason
(:data:`NO_INTERVAL`: the stable mode is released exactly or not at all; the
generic exponential mechanism and SmallDB estimate no number).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .errors import ParameterError
from .mechanisms.loglog import LOGLOG_SCALE
from .privacy import Guarantee, PureDP, compose
from .random import RandomSource, resolve

#: the share of ε that an instance-adaptive mechanism's interval spends
DEFAULT_FRACTION = 0.25
#: the number of public candidates each AboveThreshold scan may visit
SCAN_CANDIDATES = 512
#: the noisy tree of the several-quantile intervals: B^h = 16³ = 4,096 public cells
TREE_BRANCHING = 16
TREE_DEPTH = 3
#: edges tested around a released value: every edge within this many cells, then
#: offsets growing by EDGE_RATIO (about 150 edges in all, not 4,095)
DENSE_EDGES = 16
EDGE_RATIO = 1.1
#: a single bound-free release's interval is drawn on v ± this factor × (|v| + 1) around
#: the released value v (:func:`bound_free_range`)
BOUND_FREE_FACTOR = 1000.0
#: denominator of the public rationals bracketing q in the scans' integer queries
_Q_DENOMINATOR = 2**16

NOISE = "noise"  # data-independent noise: exact, free
RATIO = "sum_over_count"  # two noises: union bound, free
SMOOTH = "noisy_log_smooth_sensitivity"  # charged
QUANTILE = "above_threshold_ranks"  # charged
CDF = "noisy_tree_cdf"  # charged, once for every level of a vector

COVERS = {
    NOISE: "the query's exact value on these data",
    RATIO: "the mean of the rows clamped to the bounds (any point of the bounds when empty)",
    SMOOTH: "the query's exact value on these data (rows clamped to the bounds)",
    QUANTILE: "the query's order statistic x_m, m = max(1, ceil(q·n)), of the rows clamped "
    "to the bounds (any point of the bounds when empty)",
}
#: what a single bound-free quantile's interval covers (no bounds: the rows themselves)
COVERS_BOUND_FREE = ("the query's order statistic x_m, m = max(1, ceil(q·n)), of the rows "
                     "(any value when the table is empty)")


@dataclass(frozen=True)
class Interval:
    """A private confidence interval [lower, upper] at ``level``.

    ``covers``: what it covers, in words; ``method``: how it was obtained;
    ``epsilon``: its extra charge (0.0 for post-processing), already part of
    the release's guarantee; ``parameters``: its public constants."""

    level: float
    lower: float
    upper: float
    covers: str
    method: str
    epsilon: float = 0.0
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The record; an infinite end (a bound-free interval reaching its range) is
        None, so that the record is strict JSON."""
        return {
            "level": self.level,
            "lower": finite_or_none(self.lower),
            "upper": finite_or_none(self.upper),
            "covers": self.covers,
            "method": self.method,
            "epsilon": self.epsilon,
            "parameters": dict(self.parameters),
        }

    def describe(self) -> str:
        extra = f", ε = {self.epsilon:g} of the release's" if self.epsilon else ", no extra ε"
        return (
            f"[{self.lower:.6g}, {self.upper:.6g}] at {100 * self.level:g}% "
            f"({self.method}{extra})"
        )


def finite_or_none(v: Any) -> Any:
    """A number for the record: ±∞ (an open end) becomes None (JSON null)."""
    return v if v is None or math.isfinite(float(v)) else None


def check_level(level: Any) -> float:
    """A confidence level in (0, 1), or a ParameterError naming ``ci``."""
    try:
        v = float(level)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(level, bool) or not (0.0 < v < 1.0):
        raise ParameterError(
            f"ci must be a confidence level in (0, 1), e.g. 0.95; got {level!r}",
            parameter="ci",
            allowed="(0, 1)",
        )
    return v


def check_fraction(fraction: Any) -> float:
    try:
        v = float(fraction)
    except (TypeError, ValueError):
        v = math.nan
    if not (0.0 < v <= 0.5):
        raise ParameterError(
            f"ci_fraction must be a share of epsilon in (0, 0.5]; got {fraction!r}",
            parameter="ci_fraction",
            allowed="(0, 0.5]",
        )
    return v


# --------------------------------------------------------------------------- families


def noise_interval(value: Any, scale: float, noise: Any, level: float) -> tuple[Any, Any]:
    """value ± scale·F⁻¹((1 + level)/2) for symmetric data-independent noise (exact)."""
    half = float(scale) * float(noise.ppf(0.5 + level / 2.0))
    v = np.asarray(value, dtype=np.float64)
    return v - half, v + half


def laplace_margin(scale: float, alpha: float) -> float:
    """a with P(|Lap(scale)| > a) = alpha."""
    return float(scale) * math.log(1.0 / alpha)


def ratio_interval(
    noisy_sum: Any, noisy_count: Any, sum_scale: float, count_scale: float,
    lower: float, width: float, level: float,
) -> tuple[Any, Any]:
    """The clamped mean's interval from S̃ (shifted sum, in [0, n·width]) and C̃.

    With a_S, a_C the two-sided Laplace margins at α/2 each, on the event
    |S̃ − S| ≤ a_S and |C̃ − n| ≤ a_C (probability ≥ 1 − α) and n ≥ 1:
    S/n ≥ max(0, S̃ − a_S)/(C̃ + a_C) and S/n ≤ (S̃ + a_S)/max(1, C̃ − a_C),
    both clamped to [0, width] (S/n always is)."""
    alpha = 1.0 - level
    a_s = laplace_margin(sum_scale, alpha / 2.0)
    a_c = laplace_margin(count_scale, alpha / 2.0)
    s = np.asarray(noisy_sum, dtype=np.float64)
    c = np.asarray(noisy_count, dtype=np.float64)
    top = np.maximum(c + a_c, 1.0)  # n ≤ C̃ + a_C and n ≥ 1
    lo = np.maximum(s - a_s, 0.0) / top
    hi = (s + a_s) / np.maximum(c - a_c, 1.0)
    lo = np.where(c + a_c < 1.0, 0.0, lo)  # then the event excludes n ≥ 1: say nothing
    return lower + np.clip(lo, 0.0, width), lower + np.clip(hi, 0.0, width)


def log_scale_noise(gamma: float, epsilon: float) -> float:
    """The Laplace scale for ln S: (γ + rounding slack)/ε_I (ln S moves by ≤ γ)."""
    return (gamma * (1.0 + 2.0**-30) + 2.0**-40) / epsilon


def smooth_interval(
    value: Any, noisy_log_scale: Any, log_noise: float, noise: Any, level: float
) -> tuple[Any, Any]:
    """value ± Ŝ·F_Z⁻¹(1 − α/4), Ŝ = exp(ln S̃ + b·ln(1/α)) (module docstring)."""
    alpha = 1.0 - level
    s_hat = np.exp(np.asarray(noisy_log_scale, dtype=np.float64) + log_noise * math.log(1 / alpha))
    # 2^−40 covers the release path's 16-ulp raise of the scale and the rounding of exp/ppf
    half = s_hat * float(noise.ppf(1.0 - alpha / 4.0)) * (1.0 + 2.0**-40)
    v = np.asarray(value, dtype=np.float64)
    return v - half, v + half


# -- quantiles: AboveThreshold on integer rank queries -------------------------------


def _bracket_q(q: float) -> tuple[Fraction, Fraction]:
    """Public rationals r₋ ≤ q ≤ r₊ with denominator 2^16 (lowest terms: 1/2 for the median)."""
    d = _Q_DENOMINATOR
    lo = Fraction(math.floor(q * d), d)
    hi = Fraction(math.ceil(q * d), d)
    while lo > Fraction(q):  # float rounding of q·d: never above q
        lo -= Fraction(1, d)
    while hi < Fraction(q):
        hi += Fraction(1, d)
    return lo, hi


def rank_sensitivity(r: Fraction, neighbours: str) -> int:
    """Δ of G_r(c) = (D − N)·#{x < c} − N·#{x > c}, r = N/D in lowest terms.

    Adding or removing a row changes one count by one (Δ = max(N, D − N));
    a substitution moves a row from one side to the other (Δ = D)."""
    if neighbours == "substitution":
        return r.denominator
    return max(r.numerator, r.denominator - r.numerator, 1)


def rank_query(rows: np.ndarray, candidates: np.ndarray, r: Fraction) -> np.ndarray:
    """G_r at each candidate (integers; n never appears, only the two counts)."""
    x = np.asarray(rows, dtype=np.float64)
    below = np.searchsorted(x, candidates, side="left").astype(np.int64)
    above = x.size - np.searchsorted(x, candidates, side="right").astype(np.int64)
    return (r.denominator - r.numerator) * below - r.numerator * above


def _discrete_tail(scale: Fraction, beta: float) -> int:
    """Smallest integer a ≥ 1 with P(Z ≥ a) = e^{−a/t}/(1 + e^{−1/t}) ≤ beta."""
    t = float(scale)
    a = max(1, math.ceil(t * math.log(1.0 / (beta * (1.0 + math.exp(-1.0 / t))))))
    while math.exp(-a / t) / (1.0 + math.exp(-1.0 / t)) > beta:
        a += 1
    return a


@dataclass(frozen=True)
class ScanPlan:
    """The public constants of one AboveThreshold scan (Dwork & Roth 2014, Alg. 1).

    Threshold noise: discrete Laplace of scale t_T = 2Δ/ε_s; query noise: t_Q =
    4Δ/ε_s; threshold A = a_T + a_Q − 1 with P(ν_T ≤ −a_T) ≤ β/2 and
    m·P(ν_i ≥ a_Q) ≤ β/2."""

    sensitivity: int
    threshold_scale: Fraction
    query_scale: Fraction
    threshold: int


def scan_plan(sensitivity: int, epsilon: float, beta: float, m: int) -> ScanPlan:
    eps = Fraction(epsilon)
    t_t = Fraction(2 * sensitivity) / eps
    t_q = Fraction(4 * sensitivity) / eps
    a_t = _discrete_tail(t_t, beta / 2.0)
    a_q = _discrete_tail(t_q, beta / (2.0 * m))
    return ScanPlan(sensitivity, t_t, t_q, a_t + a_q - 1)


def first_crossing(f: np.ndarray, plan: ScanPlan, source: RandomSource) -> int | None:
    """AboveThreshold: the first i with f[i] + ν_i ≥ A + ν_T, or None.

    Secure sources draw each ν_i exactly and only as far as the scan goes
    (the same law as drawing all of them); simulation sources draw them at once."""
    from .noise.discrete import sample_discrete_laplace

    thr = plan.threshold + int(sample_discrete_laplace(plan.threshold_scale, source))
    if not source.secure and not getattr(source, "exact", False):
        nu = np.asarray(sample_discrete_laplace(plan.query_scale, source, f.size))
        hit = np.nonzero(f + nu >= thr)[0]
        return int(hit[0]) if hit.size else None
    for i, fi in enumerate(f.tolist()):
        if fi + int(sample_discrete_laplace(plan.query_scale, source)) >= thr:
            return i
    return None


def quantile_candidates(
    t: float, lower: float, upper: float, chart_scale: float, direction: int, m: int
) -> np.ndarray:
    """m public points from t towards lower (direction −1) or upper (+1) in the chart
    φ(u) = sign(u)·log1p(|u|/s), at chart offsets H·(j/(m − 1))², H = φ(upper) − φ(lower):
    fine steps near t, where a crossing is likely, and the far bound within reach."""
    from .mechanisms.quantile import log_scale_map

    phi, phi_inv = log_scale_map(chart_scale)
    span = float(phi(upper) - phi(lower))
    offsets = span * (np.arange(m) / max(m - 1, 1)) ** 2
    c = phi_inv(phi(min(max(t, lower), upper)) + direction * offsets)
    return np.clip(c, lower, upper)


def quantile_interval(
    rows: np.ndarray, t: float, *, q: float, lower: float, upper: float, neighbours: str,
    epsilon: float, level: float, chart_scale: float, source: RandomSource,
) -> tuple[float, float]:
    """[L, U] around the released t covering x_m, m = max(1, ⌈qn⌉), at ``level``.

    ``rows``: the rows clamped to [lower, upper], sorted.  G_r(c) =
    (D − N)·#{x < c} − N·#{x > c} for r = N/D = D·((1 − r)·#below − r·#above).

    Proof.  Lower side, r = r₋ ≤ q.  For c > x_m, #below ≥ m and #above ≤ n − m,
    so (1 − q)#below − q·#above ≥ m − qn ≥ 0, and G_{r₋}(c) ≥ that × D ≥ 0 (the
    expression decreases in r).  The scan fires at c_i when −G(c_i) + ν_i ≥ A + ν_T;
    on the event ν_T > −a_T and ν_i < a_Q for all i (probability ≥ 1 − β by the
    union bound), firing implies −G(c_i) ≥ 1, so c_i ≤ x_m.  If it never fires
    L = lower ≤ x_m.  Upper side, r = r₊ ≥ q: for c < x_m, #below ≤ m − 1 and
    #above ≥ n − m + 1 give (1 − q)#below − q·#above ≤ m − 1 − qn < 0, so firing
    on G(c_i) ≥ 1 implies c_i ≥ x_m.  With β = α/2 per side the interval covers
    x_m with probability ≥ 1 − α.  (n = 0: G ≡ 0, nothing fires on the event and
    [lower, upper] holds every value.)  Privacy: each scan is AboveThreshold over
    queries of sensitivity Δ (:func:`rank_sensitivity`, no n anywhere), ε/2-DP
    (Dwork & Roth 2014, Thm. 3.23; the shift argument holds verbatim for integer
    queries and discrete Laplace noise); its candidates depend only on public
    numbers (t is the release's output); the two compose to ε.
    """
    out = []
    for side in scan_inputs(rows, t, q=q, lower=lower, upper=upper, neighbours=neighbours,
                            epsilon=epsilon, level=level, chart_scale=chart_scale):
        i = first_crossing(side["f"], side["plan"], source)
        out.append(side["default"] if i is None else float(side["candidates"][i]))
    return out[0], out[1]


def scan_inputs(
    rows: np.ndarray, t: float, *, q: float, lower: float, upper: float, neighbours: str,
    epsilon: float, level: float, chart_scale: float,
) -> list[dict[str, Any]]:
    """The two scans of :func:`quantile_interval`: candidates, queries f, plan, default."""
    beta = (1.0 - level) / 2.0
    m = SCAN_CANDIDATES
    r_lo, r_hi = _bracket_q(q)
    sides = []
    for r, direction, default in ((r_lo, -1, lower), (r_hi, +1, upper)):
        plan = scan_plan(rank_sensitivity(r, neighbours), epsilon / 2.0, beta, m)
        c = quantile_candidates(t, lower, upper, chart_scale, direction, m)
        f = direction * rank_query(rows, c, r)
        sides.append({"candidates": c, "f": f, "plan": plan, "default": default})
    return sides


# -- several quantiles: one noisy hierarchical histogram for every level ---------------


@dataclass(frozen=True)
class TreePlan:
    """The public constants of the noisy tree behind :func:`quantiles_intervals`.

    ``edges``: K + 1 = B^h + 1 nondecreasing public points, ``edges[0] = lower``,
    ``edges[K] = upper``, uniform in the chart φ(u) = sign(u)·log1p(|u|/s); cell i
    is [edges[i], edges[i + 1]) (the last one closed).  Nodes: every block of
    B^b consecutive cells, b = 0 … h − 1 (the root, b = h, is not released).
    ``sensitivity``: the L1 change of the node counts between neighbours (one
    node per level under add/remove, two under substitution); ``scale`` = Δ/ε of
    the exact discrete Laplace noise on each node."""

    branching: int
    depth: int
    sensitivity: int
    scale: Fraction
    edges: np.ndarray
    chart_scale: float

    @property
    def cells(self) -> int:
        return self.branching**self.depth

    def public(self) -> dict[str, Any]:
        return {"branching": self.branching, "depth": self.depth, "cells": self.cells,
                "sensitivity": self.sensitivity, "noise": "discrete_laplace",
                "noise_scale": float(self.scale), "chart_scale": self.chart_scale}


def tree_plan(
    lower: float, upper: float, *, neighbours: str, epsilon: float, chart_scale: float,
    branching: int = TREE_BRANCHING, depth: int = TREE_DEPTH,
) -> TreePlan:
    """The public tree over [lower, upper] at ε (nothing here reads a row)."""
    edges = tree_edges(lower, upper, chart_scale, branching**depth)
    sens = depth * (2 if neighbours == "substitution" else 1)
    return TreePlan(branching, depth, sens, Fraction(sens) / Fraction(epsilon), edges,
                    float(chart_scale))


def tree_edges(lower: float, upper: float, chart_scale: float, cells: int) -> np.ndarray:
    """``cells`` + 1 nondecreasing public points from ``lower`` to ``upper``, uniform in
    the chart φ(u) = sign(u)·log1p(|u|/s), s = ``chart_scale`` (no row is read)."""
    from .mechanisms.quantile import log_scale_map

    phi, phi_inv = log_scale_map(chart_scale)
    u = float(phi(lower)) + (float(phi(upper)) - float(phi(lower))) * np.arange(cells + 1) / cells
    with np.errstate(over="ignore"):  # φ⁻¹ may round past huge bounds: clipped
        edges = np.clip(phi_inv(u), lower, upper)
    edges[0], edges[-1] = lower, upper
    return np.maximum.accumulate(edges)  # rounding never makes a cell negative


def tree_leaves(rows: np.ndarray, plan: TreePlan) -> np.ndarray:
    """The K cell counts: #{x in [edges[i], edges[i + 1])}, the last cell closed.

    ``rows``: sorted, clamped to [edges[0], edges[K]]."""
    x = np.asarray(rows, dtype=np.float64)
    below = np.searchsorted(x, plan.edges[:-1], side="left").astype(np.int64)
    return np.diff(np.append(below, x.size))


def tree_nodes(rows: np.ndarray, plan: TreePlan, leaves: np.ndarray | None = None
               ) -> list[np.ndarray]:
    """Exact node counts, level b = 0 (the K cells) … h − 1 (B nodes of B^{h−1} cells).

    ``rows``: sorted, clamped to [edges[0], edges[K]] (or ``leaves``, the cell
    counts of :func:`tree_leaves`, e.g. from a database's histogram).  A row lies
    in one cell, hence in one node per level: adding or removing it changes h
    counts by one (L1 = h); substituting it moves it between two cells (L1 ≤ 2h)."""
    if leaves is None:
        leaves = tree_leaves(rows, plan)
    leaves = np.asarray(leaves, dtype=np.int64)
    return [leaves.reshape(-1, plan.branching**b).sum(axis=1) for b in range(plan.depth)]


def noisy_tree(rows: np.ndarray, plan: TreePlan, source: RandomSource,
               leaves: np.ndarray | None = None) -> list[np.ndarray]:
    """Every node count plus independent exact discrete Laplace noise of scale Δ/ε.

    ε-DP: the node vector has L1 sensitivity Δ (:func:`tree_nodes`), and the
    discrete Laplace mechanism with scale Δ/ε is ε-DP for integer vectors of
    L1 sensitivity Δ (Canonne, Kamath & Steinke 2020; the density ratio is
    exp(Σ_i |c_i − c′_i|/t) ≤ e^ε).  Secure sources draw each noise exactly."""
    from .noise.discrete import sample_discrete_laplace

    return [c + np.asarray(sample_discrete_laplace(plan.scale, source, c.size), dtype=np.int64)
            for c in tree_nodes(rows, plan, leaves)]


def _prefix(levels: list[np.ndarray], plan: TreePlan, k: np.ndarray) -> np.ndarray:
    """Σ of cells [0, k) from the canonical decomposition: at level b the
    digit_b(k) nodes from B·⌊k/B^{b+1}⌋ to ⌊k/B^b⌋ (0 < k < K)."""
    out = np.zeros(k.size, dtype=np.int64)
    for b, nodes in enumerate(levels):
        size = plan.branching**b
        acc = np.concatenate(([0], np.cumsum(nodes)))
        out += acc[k // size] - acc[(k // (size * plan.branching)) * plan.branching]
    return out


def _digit_sum(k: np.ndarray, plan: TreePlan) -> np.ndarray:
    """How many nodes the prefix [0, k) adds up (each carrying one noise)."""
    out = np.zeros(k.size, dtype=np.int64)
    for b in range(plan.depth):
        out += (k // plan.branching**b) % plan.branching
    return out


def tree_ranks(levels: list[np.ndarray], plan: TreePlan) -> tuple[np.ndarray, ...]:
    """(k, B̃_k, Ã_k, j_B, j_A) at the interior edges k = 1 … K − 1: the noisy
    #{x < edges[k]} and #{x ≥ edges[k]} from disjoint nodes (independent noises),
    and how many noises each sums."""
    k = np.arange(1, plan.cells, dtype=np.int64)
    below = _prefix(levels, plan, k)
    above = _prefix([lv[::-1] for lv in levels], plan, plan.cells - k)  # mirrored suffix
    return k, below, above, _digit_sum(k, plan), _digit_sum(plan.cells - k, plan)


def _log_mgf_dlap(u: np.ndarray, t: float) -> np.ndarray:
    """log E[e^{uZ}] for Z ~ DLap(t), |u| < 1/t: (1 − p)²/((1 − pe^u)(1 − pe^{−u})),
    p = e^{−1/t}, in cancellation-free form."""
    inv = 1.0 / t
    return (2.0 * np.log(-np.expm1(-inv)) - np.log(-np.expm1(u - inv))
            - np.log(-np.expm1(-u - inv)))


def chernoff_margin(j_b: np.ndarray, j_a: np.ndarray, w_b: int, w_a: int, scale: Fraction,
                    beta: float) -> np.ndarray:
    """Integers e with P(w_b·S_B − w_a·S_A ≥ e) ≤ beta, S_B, S_A independent sums of
    j_b and j_a discrete Laplace noises of ``scale`` (Chernoff: for every
    0 < λ < 1/(t·max w), P(E ≥ e) ≤ e^{−λe}·M(w_b λ)^{j_b}·M(w_a λ)^{j_a}; the
    best λ of a fixed grid is taken — any λ gives a valid bound)."""
    t = float(scale)
    w = max(w_b, w_a, 1)
    theta = np.concatenate((np.linspace(0.01, 0.9, 90), 1.0 - np.geomspace(0.1, 1e-4, 40)))
    lam = theta / (t * w)
    pairs, inverse = np.unique(np.stack([j_b, j_a], axis=1), axis=0, return_inverse=True)
    log_m = (pairs[:, :1] * _log_mgf_dlap(w_b * lam, t)[None, :]
             + pairs[:, 1:] * _log_mgf_dlap(w_a * lam, t)[None, :])
    e = ((log_m + math.log(1.0 / beta)) / lam[None, :]).min(axis=1)
    # slack for the float evaluation (relative 1e−9), then the next integer
    return np.ceil(e * (1.0 + 1e-9) + 1e-6).astype(np.int64)[np.asarray(inverse).reshape(-1)]


@functools.lru_cache(maxsize=256)
def _edge_margins(branching: int, depth: int, w_b: int, w_a: int, scale: Fraction,
                  beta: float) -> np.ndarray:
    """:func:`chernoff_margin` at every interior edge of a tree (public; cached)."""
    k = np.arange(1, branching**depth, dtype=np.int64)
    shape = TreePlan(branching, depth, 0, scale, np.empty(0), 0.0)
    out = chernoff_margin(_digit_sum(k, shape), _digit_sum(branching**depth - k, shape),
                          w_b, w_a, scale, beta)
    out.flags.writeable = False
    return out


def tested_edges(plan: TreePlan, centre: float) -> np.ndarray:
    """The interior edges tested for one level: every edge within
    :data:`DENSE_EDGES` cells of the released value ``centre``, then edges at
    geometric offsets (ratio :data:`EDGE_RATIO`) out to both bounds — a public
    function of a released number, so the union bound runs over these only."""
    k0 = int(np.searchsorted(plan.edges, centre))
    offsets = [*range(DENSE_EDGES + 1)]
    d = float(DENSE_EDGES)
    while d < plan.cells:
        d *= EDGE_RATIO
        offsets.append(round(d))
    off = np.array(offsets)
    k = np.concatenate((k0 - off, k0 + off, [1, plan.cells - 1]))  # the first and last too
    return np.unique(k[(k >= 1) & (k <= plan.cells - 1)])


@functools.lru_cache(maxsize=1024)
def _margin_table(max_j: int, w_b: int, w_a: int, scale: Fraction, beta: float) -> np.ndarray:
    """:func:`chernoff_margin` for every (j_B, j_A) in [0, max_j]² (public; cached)."""
    j = np.arange(max_j + 1)
    jb, ja = np.meshgrid(j, j, indexing="ij")
    out = chernoff_margin(jb.ravel(), ja.ravel(), w_b, w_a, scale, beta).reshape(jb.shape)
    out.flags.writeable = False
    return out


def cdf_intervals(
    levels: list[np.ndarray], plan: TreePlan, qs: Any, level: float,
    centres: Any = None,
) -> list[tuple[float, float]]:
    """[L_j, U_j] for each q_j from one noisy tree (post-processing; see
    :func:`quantiles_intervals` for the proof).  ``centres``: the released values
    (one per level) around which :func:`tested_edges` picks the edges; None tests
    every interior edge."""
    k, below, above, j_b, j_a = tree_ranks(levels, plan)
    edges = plan.edges
    out = []
    for j, q in enumerate(qs):
        if centres is None:
            pos = np.arange(k.size)
        else:
            pos = tested_edges(plan, float(centres[j])) - 1  # k = pos + 1
        beta = (1.0 - level) / 2.0 / max(pos.size, 1)  # per side, per tested edge
        r_lo, r_hi = _bracket_q(float(q))
        lo, hi = float(edges[0]), float(edges[-1])
        for r, side in ((r_lo, -1), (r_hi, +1)):
            n_, d_ = r.numerator, r.denominator
            g = (d_ - n_) * below[pos] - n_ * above[pos]
            if centres is None:
                e = _edge_margins(plan.branching, plan.depth, d_ - n_, n_, plan.scale, beta)
            else:
                table = _margin_table((plan.branching - 1) * plan.depth, d_ - n_, n_,
                                      plan.scale, beta)
                e = table[j_b[pos], j_a[pos]]
            if side < 0:  # lower end: G < 0 certified by G̃ + e < 0 (r₋ ≤ q)
                ok = np.nonzero(g + e < 0)[0]
                if ok.size:
                    lo = float(edges[k[pos[ok[-1]]]])
            else:  # upper end: G ≥ 0 certified by G̃ − e ≥ 0 (r₊ ≥ q)
                ok = np.nonzero(g - e >= 0)[0]
                if ok.size:
                    hi = float(edges[k[pos[ok[0]]]])
        out.append((lo, hi))
    return out


def quantiles_intervals(
    rows: np.ndarray, qs: Any, *, lower: float, upper: float, neighbours: str,
    epsilon: float, level: float, chart_scale: float, source: RandomSource,
    centres: Any = None, branching: int = TREE_BRANCHING, depth: int = TREE_DEPTH,
    leaves: Any = None,
) -> tuple[list[tuple[float, float]], TreePlan]:
    """An interval for every level q_j at ``level`` from ONE ε-DP noisy histogram,
    and the tree's public plan.  ``rows``: sorted, clamped to [lower, upper];
    ``centres``: the released values (then only :func:`tested_edges` around each
    are tested, a smaller union bound), or None (every edge).  ``leaves``: instead
    of ``rows``, a function of the tree's public plan returning its cell counts
    (:func:`tree_leaves`; e.g. from a database's histogram on the plan's edges).

    Each [L_j, U_j] covers x_(⌈q_j n⌉) of the rows (``lower`` when ⌈q_j n⌉ = 0)
    with probability ≥ ``level``; the cost does not grow with m.

    Privacy.  The noisy node counts (:func:`noisy_tree`) are ε-DP under the
    relation; every interval is a function of them and of public numbers
    (post-processing).  n is never used: under add/remove it is private.

    Coverage.  For an interior edge c_k let B_k = #{x < c_k}, A_k = #{x ≥ c_k}
    (n = B_k + A_k), and for a public rational r = N/D (lowest terms, denominator
    dividing 2¹⁶; r₋ ≤ q ≤ r₊) the integer G_k = (D − N)·B_k − N·A_k = D·(B_k − r·n).
    Its noisy version G̃_k = (D − N)·B̃_k − N·Ã_k sums two disjoint sets of nodes
    (the canonical decompositions of the prefix [0, k) and the suffix [k, K)),
    so G̃_k − G_k = E_k = (D − N)·S_B − N·S_A with S_B, S_A independent sums of
    j_B and j_A discrete Laplace noises; |E_k| ≤ e_k except with probability
    β/|S| per side (:func:`chernoff_margin`, E_k symmetric), β = (1 − level)/2,
    S the tested edges: every interior edge, or :func:`tested_edges` around
    the released value — a function of the release, whose randomness is
    independent of the tree's noise, so conditionally on it the bound below
    holds, hence also unconditionally.  On the event that every tested edge's
    bound holds (probability ≥ 1 − 2β by the union bound):

    * lower end, r = r₋: G̃_k + e_k < 0 implies G_k < 0, i.e. B_k < r₋·n ≤ q·n, so
      ⌈qn⌉ ≥ 1 and at most ⌈qn⌉ − 1 rows lie below c_k: x_(⌈qn⌉) ≥ c_k.  L is the
      largest such tested edge (``lower`` if none; rows are clamped, so x ≥ lower);
    * upper end, r = r₊: G̃_k − e_k ≥ 0 implies G_k ≥ 0, i.e. B_k ≥ r₊·n ≥ q·n, so
      B_k ≥ ⌈qn⌉ and x_(⌈qn⌉) < c_k (or ⌈qn⌉ = 0 and the value is ``lower``).
      U is the smallest such tested edge (``upper`` if none).

    The empty table: every G_k = 0, nothing is certified on the event, and
    [lower, upper] holds the value ``lower``.
    """
    plan = tree_plan(lower, upper, neighbours=neighbours, epsilon=epsilon,
                     chart_scale=chart_scale, branching=branching, depth=depth)
    if leaves is not None:
        return cdf_intervals(noisy_tree(None, plan, source, leaves(plan)), plan, qs, level,
                             centres), plan
    x = np.clip(np.asarray(rows, dtype=np.float64), lower, upper)
    return cdf_intervals(noisy_tree(x, plan, source), plan, qs, level, centres), plan


def released_range(values: Any) -> tuple[float, float]:
    """R = [v_1 − w/2, v_m + w/2], w = v_m − v_1, from released sorted values (a
    public function of them; padded to a nonempty range when w = 0)."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    half = float(v[-1]) / 2 - float(v[0]) / 2  # w/2 without overflow
    big = np.finfo(np.float64).max
    lo = max(float(v[0]) - half, -big)
    hi = min(float(v[-1]) + half, big)
    if not hi > lo:
        pad = max(abs(lo), 1.0) * 1e-6
        lo, hi = lo - pad, hi + pad
    return lo, hi


def bound_free_range(values: Any) -> tuple[float, float]:
    """The public range R on which a bound-free release's interval is drawn, a
    function of the released values only (never of a row):

    * values spread over w > 0: R = [v_1 − w/2, v_m + w/2] (:func:`released_range`);
    * one value v (or several equal ones): R = [v − W, v + W], W = F·(|v| + s),
      F = :data:`BOUND_FREE_FACTOR`, s = :data:`~instancedp.mechanisms.loglog.
      LOGLOG_SCALE` (the bound-free mechanisms' unit), clipped to the doubles.
      Symmetric in value: a value near 0 from data spread far either side still
      gets both sides (a window in the log chart would end a few units below it).

    R only places the interval's search: :func:`open_ends` makes an end that
    reaches R infinite, so coverage holds wherever the quantile lies."""
    v = np.sort(np.asarray(values, dtype=np.float64).reshape(-1))
    if v.size > 1 and v[-1] > v[0]:
        return released_range(v)
    big = float(np.finfo(np.float64).max)
    c = float(v[0])
    half = min(BOUND_FREE_FACTOR * (abs(c) + LOGLOG_SCALE), big)
    return max(c - half, -big), min(c + half, big)


def bound_free_interval(
    rows: np.ndarray, t: float, *, q: float, neighbours: str, epsilon: float, level: float,
    source: RandomSource,
) -> tuple[float, float, tuple[float, float]]:
    """(L, U, R): the interval of a single bound-free quantile release t, covering
    x_m, m = max(1, ⌈q·n⌉), of the UNCLAMPED rows at ``level``.

    The single release's method with public bounds (:func:`quantile_interval`,
    two AboveThreshold scans at ε/2 each) run on R = :func:`bound_free_range` of
    t, a public function of the release, on the rows clamped to R; then
    :func:`open_ends`.  Clamping is monotone, so the clamped rows' x_m is
    clip(x_m, R); the scans cover it at ``level`` and the opened ends carry that
    coverage to x_m itself (:func:`open_ends`).  ε-DP: the scans' guarantee
    (their candidates depend only on the public t and R; clamping to R is a
    row-by-row map fixed by them).  ``rows``: sorted, finite."""
    lower, upper = bound_free_range([t])
    x = np.clip(np.asarray(rows, dtype=np.float64), lower, upper)
    lo, hi = quantile_interval(
        x, t, q=q, lower=lower, upper=upper, neighbours=neighbours, epsilon=epsilon,
        level=level, chart_scale=chart_scale_for(lower, upper), source=source)
    (lo, hi), = open_ends([(lo, hi)], lower, upper)
    return lo, hi, (lower, upper)


def open_ends(pairs: list[tuple[float, float]], lower: float, upper: float
              ) -> list[tuple[float, float]]:
    """Intervals for the quantiles of the UNCLAMPED rows from intervals for the rows
    clamped to [lower, upper]: an end at the range's end becomes ∓∞.

    If the clamped value v′ = clip(v, lower, upper) lies in [L, U] and L > lower,
    then v′ > lower, so v = v′ unless v′ = upper, where v ≥ upper = U: v ∈ [L, ∞)
    after the upper end is opened.  Symmetrically at the lower end.  So
    coverage of v′ at a level gives coverage of v at the same level."""
    return [(-math.inf if lo <= lower else lo, math.inf if hi >= upper else hi)
            for lo, hi in pairs]


class IntervalList(list):
    """The intervals of a vector release, one :class:`Interval` per coordinate (in
    order); ``as_dict`` gives the record's list, ``describe`` one line each."""

    @property
    def level(self) -> float:
        return self[0].level

    @property
    def epsilon(self) -> float:
        return self[0].epsilon

    @property
    def method(self) -> str:
        return self[0].method

    def as_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        return [i.as_dict() for i in self]

    def describe(self) -> str:
        return "; ".join(i.describe() for i in self)


def covers_quantile(q: float, *, clamped: bool = True) -> str:
    """What a several-quantile interval covers, in words."""
    if clamped:
        return (f"the empirical {q:g}-quantile x_(⌈{q:g}·n⌉) of the rows clamped to the "
                "bounds (the lower bound when ⌈q·n⌉ = 0)")
    return (f"the empirical {q:g}-quantile x_(⌈{q:g}·n⌉) of the rows (any value when the "
            "table is empty)")


# --------------------------------------------------------------------------- dispatch


def interval_method(mechanism: Any) -> str | None:
    """The interval family of ``mechanism`` (None: it offers none)."""
    from .mechanisms.global_noise import GaussianMechanism, LaplaceMechanism
    from .mechanisms.smooth import SmoothSensitivityMechanism
    from .mechanisms.sum_count import NoisySumOverCount

    if _vector_spec(mechanism) is not None:
        return CDF
    if isinstance(mechanism, LaplaceMechanism | GaussianMechanism):
        return NOISE
    if isinstance(mechanism, NoisySumOverCount):
        return RATIO
    if _quantile_spec(mechanism) is not None:
        return QUANTILE
    if isinstance(mechanism, SmoothSensitivityMechanism):
        return SMOOTH
    return family_method(mechanism)


def _quantile_spec(mechanism: Any) -> dict[str, Any] | None:
    """q, bounds and relation of a single quantile release; a bound-free one
    (``bounds_free``: no public bounds) has bounds None and gets its range from
    the released value (:func:`bound_free_range`)."""
    if getattr(mechanism, "bounds_free", False):
        q = getattr(mechanism, "q", None)
        if q is None or np.ndim(q) != 0:
            return None
        return {"q": float(q), "lower": None, "upper": None,
                "neighbours": mechanism.neighbours, "chart_scale": None}
    query = getattr(mechanism, "query", None)
    q = getattr(query, "q", getattr(mechanism, "q", None))
    lo = getattr(query, "lower", getattr(mechanism, "lower", None))
    hi = getattr(query, "upper", getattr(mechanism, "upper", None))
    if q is None or lo is None or hi is None or np.ndim(q) != 0:
        return None
    if not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        return None
    rel = getattr(mechanism, "neighbours", None) or getattr(query, "neighbours", "substitution")
    scale = getattr(mechanism, "log_scale", None) or (float(hi) - float(lo)) * 1e-4
    return {"q": float(q), "lower": float(lo), "upper": float(hi), "neighbours": rel,
            "chart_scale": float(scale)}


def _vector_spec(mechanism: Any) -> dict[str, Any] | None:
    """Levels, bounds (None: bound-free) and relation of a several-quantile release."""
    from .mechanisms.quantiles import QuantilesMechanism
    from .mechanisms.unbounded_quantiles import UnboundedQuantiles

    if isinstance(mechanism, QuantilesMechanism):
        q = mechanism.query
        return {"qs": tuple(q.qs), "bounds": (float(q.lower), float(q.upper)),
                "neighbours": q.neighbours}
    if isinstance(mechanism, UnboundedQuantiles):
        return {"qs": tuple(mechanism.qs), "bounds": None, "neighbours": mechanism.neighbours}
    return None


def chart_scale_for(lower: float, upper: float) -> float:
    """The log chart's scale over public bounds (as for a single quantile)."""
    return (float(upper) / 2 - float(lower) / 2) * 2e-4  # no overflow on huge bounds


def vector_intervals(
    rows: np.ndarray, values: Any, *, qs: Any, bounds: tuple[float, float] | None,
    neighbours: str, epsilon: float, level: float, source: RandomSource,
) -> IntervalList:
    """The m intervals of a several-quantile release as :class:`Interval` objects.

    ``rows``: the sorted rows (unclamped); ``values``: the released vector (public:
    only the bound-free case reads it, for the range R = :func:`released_range`).
    With bounds each interval covers the clamped rows' quantile; without, the
    rows are clamped to R and :func:`open_ends` turns the intervals into ones for
    the rows' own quantiles (an end that reaches R is infinite)."""
    if bounds is None:
        lower, upper = bound_free_range(values)
    else:
        lower, upper = bounds
    pairs, plan = quantiles_intervals(
        rows, qs, lower=lower, upper=upper, neighbours=neighbours, epsilon=epsilon,
        level=level, chart_scale=chart_scale_for(lower, upper), source=source,
        centres=[float(v) for v in np.asarray(values, dtype=np.float64)])
    extra: dict[str, Any] = {**plan.public(), "edges_tested": "around the released value: "
                             f"every edge within {DENSE_EDGES} cells, then offsets × "
                             f"{EDGE_RATIO:g}"}
    if bounds is None:
        pairs = open_ends(pairs, lower, upper)
        extra["range"] = [lower, upper]
        extra["range_rule"] = RANGE_RULE
    return IntervalList(
        Interval(level, float(lo), float(hi), covers_quantile(q, clamped=bounds is not None),
                 CDF, epsilon, extra)
        for q, (lo, hi) in zip(qs, pairs, strict=True))


#: the record's statement of :func:`bound_free_range` (one text for every bound-free interval)
RANGE_RULE = (f"R = [v_1 − w/2, v_m + w/2], w = v_m − v_1 (released values); one value v (or "
              f"equal ones): R = [v − W, v + W], W = {BOUND_FREE_FACTOR:g}·(|v| + "
              f"{LOGLOG_SCALE:g}); an end reaching R is infinite")


# -- scales that are public or released with the value ---------------------------------
#
# Propose-test-release, bounded local sensitivity, instance-based noise and the
# private ratio add Laplace noise whose scale is public (PTR's proposal b/ε′; the
# largest of the public level rates) or a private quantity that the mechanism's
# own theorem already lets it release with the value (the bound g of bounded local
# sensitivity, LS-bound note Thm. 1; the ratio's noisy counts).  Conditionally on
# that scale the noise is data-independent, so value ± scale·ln(1/α) covers the
# query's value with probability exactly 1 − α (Laplace: P(|Z| > b·ln(1/α)) = α);
# the release and the interval are projected onto the public range, which holds
# the value, so coverage survives.  No extra ε (post-processing), except for
# instance-based noise with its level graph, which releases a noisy ln λ.

RELEASED_SCALE = "laplace_at_released_scale"  # PTR's proposal; bounded-ls's bound g
SHARE = "share_from_noisy_counts"  # the private ratio's noisy counts (or its bound g)
LARGEST_SCALE = "largest_public_scale"  # instance-based noise: the smallest public rate
NOISY_RATE = "noisy_log_rate"  # instance-based noise with its level graph: charged
#: the families of this block that are post-processing (no share of ε)
FREE_FAMILIES = (RELEASED_SCALE, SHARE, LARGEST_SCALE)
FAMILIES = (*FREE_FAMILIES, NOISY_RATE)
COVERS.update({
    RELEASED_SCALE: "the query's exact value on these data (rows clamped to the bounds); a "
    "refusal (⊥) gets the whole public range",
    SHARE: "the share a/b of the flags equal to 1 (any point of [0, 1] when there are none)",
    LARGEST_SCALE: "the query's exact value on these data",
    NOISY_RATE: "the query's exact value on these data",
})
#: the exact noise path raises a scale by 16 ulps (base.add_noise): the margins do too
_SCALE_SLACK = 1.0 + 2.0**-40

#: why a mechanism has no interval, for the refusal's message
NO_INTERVAL = {
    "stable_release": "it releases the mode itself or ⊥: a category carries no noise to "
    "bound and has no interval (a released mode IS the mode of these data; ⊥ says it "
    "was not stable)",
    "exponential": "it picks among the caller's candidates by the caller's score: there is "
    "no statistic whose value the choice estimates",
    "smalldb": "it releases a synthetic database, not a number",
}


def family_method(mechanism: Any) -> str | None:
    """The family of this block for ``mechanism`` (None: not one of them)."""
    from .mechanisms.bounded_ls import BoundedLocalSensitivity
    from .mechanisms.levels import InstanceBasedNoise
    from .mechanisms.ptr import ProposeTestRelease
    from .mechanisms.ratio import PrivateRatio

    if isinstance(mechanism, PrivateRatio):
        return SHARE
    if isinstance(mechanism, ProposeTestRelease | BoundedLocalSensitivity):
        return RELEASED_SCALE
    if isinstance(mechanism, InstanceBasedNoise):
        return LARGEST_SCALE if mechanism.log_rate_sensitivity() is None else NOISY_RATE
    return None


def laplace_interval(value: Any, scale: Any, level: float) -> tuple[Any, Any]:
    """value ± scale·ln(1/α): exact for Laplace noise of that scale (α = 1 − level)."""
    half = np.asarray(scale, dtype=np.float64) * math.log(1.0 / (1.0 - level)) * _SCALE_SLACK
    v = np.asarray(value, dtype=np.float64)
    return v - half, v + half


def share_interval(noisy_ones: Any, noisy_zeros: Any, scale: float, level: float
                   ) -> tuple[Any, Any]:
    """a/b = a/(a + z) from ô = a + Lap(s), ẑ = z + Lap(s) (Kulesza, Suresh & Wang 2024).

    With margin m = s·ln(2/α) each noise is inside ±m with probability 1 − α/2
    (union bound: both, 1 − α).  On that event a ∈ [a_l, a_u] = [max(0, ô − m), ô + m]
    and z ∈ [z_l, z_u] likewise; a/(a + z) increases in a and decreases in z, so
    a/(a + z) ≥ a_l/(a_l + z_u) (a·z_u ≥ a_l·z_u ≥ a_l·z) and, by symmetry,
    a/(a + z) ≤ 1 − z_l/(z_l + a_u).  A zero denominator says nothing (0, resp. 1)."""
    m = laplace_margin(scale * _SCALE_SLACK, (1.0 - level) / 2.0)
    o = np.asarray(noisy_ones, dtype=np.float64)
    z = np.asarray(noisy_zeros, dtype=np.float64)
    a_l, a_u = np.maximum(o - m, 0.0), np.maximum(o + m, 0.0)
    z_l, z_u = np.maximum(z - m, 0.0), np.maximum(z + m, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(a_l + z_u > 0, a_l / (a_l + z_u), 0.0)
        hi = np.where(z_l + a_u > 0, 1.0 - z_l / (z_l + a_u), 1.0)
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def _ratio_parts_interval(inner: Any, parts: Mapping[str, Any], values: Any, level: float
                          ) -> tuple[Any, Any, dict[str, Any]]:
    """The private ratio's interval from the parts its draw released (every method)."""
    if inner.method == "ksw":
        lo, hi = share_interval(parts["noisy_ones"], parts["noisy_zeros"], parts["scale"],
                                level)
        return lo, hi, {"rule": "a/(a + z) over the noisy counts ± s·ln(2/α)",
                        "noise_scale": parts["scale"]}
    if inner.method == "naive":
        s = parts["scale"] * _SCALE_SLACK
        lo, hi = ratio_interval(parts["noisy_a"], parts["noisy_b"], s, s, 0.0, 1.0, level)
        return lo, hi, {"rule": "the noisy counts ± s·ln(2/α), divided", "noise_scale":
                        parts["scale"]}
    # bounded_ls: value ± (g/ε2)·ln(1/α) where the bound held; the naive draw at ε2 where
    # it bailed out (g = nan)
    g = np.asarray(parts["bound"], dtype=np.float64)
    bail = np.isnan(g)
    lo, hi = laplace_interval(values, np.where(bail, 0.0, g) / parts["epsilon_release"], level)
    if bail.any():
        s = parts["bail_scale"] * _SCALE_SLACK
        blo, bhi = ratio_interval(parts["noisy_a"], parts["noisy_b"], s, s, 0.0, 1.0, level)
        lo, hi = np.where(bail, blo, lo), np.where(bail, bhi, hi)
    return lo, hi, {"rule": "value ± (g/ε2)·ln(1/α) (g the released bound); where g bails "
                    "out, the naive noisy counts ± s·ln(2/α), divided",
                    "epsilon_release": parts["epsilon_release"]}


def _noisy_rate_draws(inner: Any, data: Any, epsilon: float, level: float,
                      source: RandomSource, size: int | None) -> tuple[Any, ...]:
    """Instance-based noise with its level graph: ε_I releases ln λ̃ = ln λ_x + Lap(b),
    b = Δ/ε_I, Δ = max |ln λ_k − ln λ_l| over the graph's edges (neighbours sit in one
    level or adjacent ones, so ln λ_x moves by ≤ Δ: the Laplace mechanism, ε_I-DP).
    With probability 1 − α/2, λ_x ≥ exp(ln λ̃ − b·ln(1/α)) (one Laplace tail), so the
    scale 1/λ_x ≤ Ŝ = min(exp(b·ln(1/α) − ln λ̃), 1/min λ) (the second always holds);
    independently P(|Lap(1/λ_x)| > Ŝ·ln(2/α)) ≤ α/2 on that event: value ± Ŝ·ln(2/α)
    covers with probability ≥ 1 − α (union bound), then within the public range."""
    from .mechanisms.base import add_noise
    from .mechanisms.global_noise import _unit

    n = 1 if size is None else size
    state = inner._state(data)  # (value, λ_x): once, for the value and ln λ̃
    values = np.asarray(inner._draw(state, source, n), dtype=np.float64)
    b = log_scale_noise(inner.log_rate_sensitivity(), epsilon)
    noisy = np.atleast_1d(add_noise(math.log(state[1]), b, _unit("laplace"), source, n))
    alpha = 1.0 - level
    s_hat = np.minimum(np.exp(b * math.log(1.0 / alpha) - noisy),
                       1.0 / float(np.min(inner.rates)))
    half = s_hat * math.log(2.0 / alpha) * _SCALE_SLACK
    extra: dict[str, Any] = {"rule": "value ± Ŝ·ln(2/α), Ŝ = min(exp(b·ln(1/α) − ln λ̃), "
                             "1/min λ)", "log_rate_noise": b}
    if size is None:
        extra["noisy_log_rate"] = float(noisy[0])
    return values, values - half, values + half, extra


def family_draws(w: WithInterval, data: Any, source: RandomSource, size: int | None
                 ) -> tuple[Any, Any, Any, dict[str, Any]]:
    """(values, lower, upper, interval parameters) for the families of this block:
    the draw runs the mechanism's own release code, the interval post-processes
    what that draw released (one draw, or ``size`` through the same code)."""
    from .mechanisms.base import public_range

    inner, level, n = w.inner, w.level, 1 if size is None else size
    span = public_range(getattr(inner, "query", None)) or (-math.inf, math.inf)
    extra: dict[str, Any] = {}
    if w.method == SHARE:
        values, parts = inner._draw_parts(inner._state(data), source, n)
        lo, hi, extra = _ratio_parts_interval(inner, parts, values, level)
        if size is None:  # the released parts (the mechanism's ε covers them)
            extra.update({k: finite_or_none(float(np.asarray(v).reshape(-1)[0]))
                          for k, v in parts.items() if k.startswith("noisy_") or k == "bound"})
    elif w.method == RELEASED_SCALE and hasattr(inner, "noise_scale"):  # PTR
        values = np.asarray(inner.sample(data, n, rng=source), dtype=object)
        passed = np.array([v is not None for v in values.tolist()])
        centre = np.where(passed, [0.0 if v is None else float(v) for v in values.tolist()], 0.0)
        lo, hi = laplace_interval(centre, inner.noise_scale, level)
        lo, hi = np.where(passed, lo, span[0]), np.where(passed, hi, span[1])
        extra = {"rule": "value ± (b/ε′)·ln(1/α) when the test passed; the public range "
                 "for ⊥", "noise_scale": inner.noise_scale}
    elif w.method == RELEASED_SCALE:  # bounded local sensitivity: g is released
        values, g = inner._draw_parts(inner._state(data), source, n)
        values = np.asarray(values, dtype=np.float64)
        lo, hi = laplace_interval(values, np.asarray(g) / inner.epsilon_release, level)
        extra = {"rule": "value ± (g/ε2)·ln(1/α), g the released bound on the local "
                 "sensitivity (LS-bound note Thm. 1)", "epsilon_release": inner.epsilon_release}
        if size is None:
            extra["bound"] = float(np.asarray(g).reshape(-1)[0])
    elif w.method == LARGEST_SCALE:  # the noise scale 1/λ_k is at most 1/min λ (public)
        values = np.asarray(inner.sample(data, n, rng=source), dtype=np.float64)
        scale = 1.0 / float(np.min(inner.rates))
        lo, hi = laplace_interval(values, scale, level)
        extra = {"rule": "value ± (1/min λ)·ln(1/α): the largest scale any level uses",
                 "noise_scale": scale}
    else:  # NOISY_RATE
        values, lo, hi, extra = _noisy_rate_draws(inner, data, w.interval_epsilon, level,
                                                  source, size)
    lo, hi = np.clip(lo, *span), np.clip(hi, *span)
    return _one(values, size), _one(lo, size), _one(hi, size), extra


def _unsupported(mechanism: Any) -> ParameterError:
    name = getattr(mechanism, "name", type(mechanism).__name__)
    why = NO_INTERVAL.get(name, "it has no interval method")
    return ParameterError(
        f"mechanism {name!r} offers no confidence interval: {why}; intervals exist for the "
        "Laplace and Gaussian mechanisms, sum-over-count means, smooth sensitivity, "
        "propose-test-release, bounded local sensitivity, instance-based noise, the private "
        "ratio, every median or quantile release (with or without bounds) and every "
        "several-quantile release",
        parameter="ci",
        allowed="a mechanism with an interval, or ci=None",
    )


class WithInterval:
    """A mechanism plus its private interval: one release, one guarantee.

    Built by :func:`with_interval`.  ``guarantee`` is the composition of the
    mechanism's and the interval's (the interval's ε is 0 for post-processing);
    ``release`` returns the mechanism's :class:`Release` with ``ci`` set and the
    combined guarantee; the record's parameters gain ``interval``."""

    def __init__(self, inner: Any, level: float, method: str, epsilon: float,
                 fraction: float | None) -> None:
        self.inner = inner
        self.level = level
        self.method = method
        self.interval_epsilon = epsilon
        self.fraction = fraction
        self.name = inner.name
        self.query = getattr(inner, "query", None)
        self._guarantee: Guarantee = (
            compose([inner.guarantee, PureDP(epsilon)]) if epsilon > 0 else inner.guarantee
        )

    def __getattr__(self, attr: str) -> Any:  # bounds, q, neighbours … of the mechanism
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    @property
    def guarantee(self) -> Guarantee:
        return self._guarantee

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "method": self.method,
                               "epsilon": self.interval_epsilon}
        if self.fraction is not None:
            out["fraction_of_epsilon"] = self.fraction
        if self.method == QUANTILE:
            out["candidates_per_side"] = SCAN_CANDIDATES
        if self.method == CDF:
            out["tree"] = {"branching": TREE_BRANCHING, "depth": TREE_DEPTH,
                           "cells": TREE_BRANCHING**TREE_DEPTH}
            out["coverage"] = "each level separately (not simultaneous)"
        return out

    def parameters(self) -> dict[str, Any]:
        return {**self.inner.parameters(), "interval": self.spec()}

    # -- the draws -------------------------------------------------------------------
    def _draws(self, data: Any, source: RandomSource, size: int | None) -> tuple[Any, ...]:
        """(values, lower, upper, interval parameters) for one draw (``size=None``) or
        ``size`` draws, from one computation of the private state: ``release`` and
        ``sample_intervals`` run this same code."""
        inner, level, method = self.inner, self.level, self.method
        if method in FAMILIES:
            return family_draws(self, data, source, size)
        if method == RATIO:
            y = inner._shifted(data)
            s, c = inner._sum.sample(y, 1 if size is None else size, rng=source), \
                inner._count.sample(y, 1 if size is None else size, rng=source)
            values = np.array([inner._combine(a, b) for a, b in zip(s, c, strict=True)])
            lo, hi = ratio_interval(s, c, inner._sum.scale, inner._count.scale,
                                    inner.lower, inner.range, level)
            extra = {"sum_scale": inner._sum.scale, "count_scale": inner._count.scale}
            return _one(values, size), _one(lo, size), _one(hi, size), extra
        if method == SMOOTH:
            state = inner._state(data)  # once: value and SS share it with ln S below
            values = inner._draw(state, source, 1 if size is None else size)
        else:
            values = inner.sample(data, 1 if size is None else size, rng=source)
        values = np.asarray(values, dtype=object if method == QUANTILE else np.float64)
        if method == NOISE:
            from .mechanisms.global_noise import _unit

            family = "laplace" if inner.name == "laplace" else "gaussian"
            scale = inner.scale if family == "laplace" else inner.sigma
            lo, hi = _within(inner, *noise_interval(values.astype(float), scale,
                                                   _unit(family), level))
            return (_one(values.astype(float), size), _one(lo, size), _one(hi, size),
                    {"noise": family, "scale": scale})
        if method == QUANTILE:
            spec = _quantile_spec(inner)
            from .mechanisms.quantile import sorted_rows

            if spec["lower"] is None:
                return self._bound_free_draws(values, data, spec, source, size)
            rows = sorted_rows(data, spec["lower"], spec["upper"])
            mid = spec["lower"] + (spec["upper"] - spec["lower"]) / 2
            bounds = [  # a refusal (⊥) still gets its interval: the record keeps its shape
                quantile_interval(
                    rows, mid if v is None else float(v), q=spec["q"], lower=spec["lower"],
                    upper=spec["upper"],
                    neighbours=spec["neighbours"], epsilon=self.interval_epsilon,
                    level=level, chart_scale=spec["chart_scale"], source=source)
                for v in values.tolist()
            ]
            lo = np.array([b[0] for b in bounds], dtype=object)
            hi = np.array([b[1] for b in bounds], dtype=object)
            return (_one(values, size), _one(lo, size), _one(hi, size),
                    {"chart_scale": spec["chart_scale"]})
        # SMOOTH: the mechanism's private state gives ln S; one Laplace draw releases it
        from .mechanisms.base import add_noise
        from .mechanisms.global_noise import _unit

        _, ss, cal, gamma = state
        b = log_scale_noise(gamma, self.interval_epsilon)
        noisy = np.atleast_1d(add_noise(math.log(ss), b, _unit("laplace"), source,
                                        None if size is None else size))
        lo, hi = _within(inner, *smooth_interval(values, noisy, b, cal.noise, level))
        extra = {"log_scale_noise": b, "record": inner.parameters(gamma=gamma)}
        if size is None:
            extra["noisy_log_scale"] = float(noisy[0])
        return _one(values, size), _one(lo, size), _one(hi, size), extra

    def _bound_free_draws(self, values: np.ndarray, data: Any, spec: dict[str, Any],
                          source: RandomSource, size: int | None) -> tuple[Any, ...]:
        """The draws of a single bound-free quantile: each value's interval on the range
        its own value gives (:func:`bound_free_interval`)."""
        rows = self._vector_rows(data)
        got = [bound_free_interval(rows, float(v), q=spec["q"], neighbours=spec["neighbours"],
                                   epsilon=self.interval_epsilon, level=self.level,
                                   source=source)
               for v in values.tolist()]
        lo = np.array([g[0] for g in got], dtype=object)
        hi = np.array([g[1] for g in got], dtype=object)
        r = got[0][2]
        extra = {"range": [r[0], r[1]], "range_rule": RANGE_RULE,
                 "chart_scale": chart_scale_for(*r), "covers": COVERS_BOUND_FREE}
        return _one(values, size), _one(lo, size), _one(hi, size), extra

    def _vector_rows(self, data: Any) -> np.ndarray:
        from .mechanisms.quantile import sorted_rows

        return sorted_rows(data, -math.inf, math.inf)

    def _vector_draw(self, rows: np.ndarray, values: Any, source: RandomSource) -> IntervalList:
        spec = _vector_spec(self.inner)
        return vector_intervals(rows, values, qs=spec["qs"], bounds=spec["bounds"],
                                neighbours=spec["neighbours"], epsilon=self.interval_epsilon,
                                level=self.level, source=source)

    def release(self, data: Any, rng: Any = None) -> Any:
        from .mechanisms.base import Release

        source = resolve(rng)
        if self.method == CDF:  # the vector, then one noisy tree for all its levels
            rel = self.inner.release(data, rng=source)
            ci = self._vector_draw(self._vector_rows(data), rel.value, source)
            return Release(rel.value, self._guarantee, self.inner.name,
                           {**rel.parameters, "interval": self.spec()}, source.secure, ci=ci)
        value, lo, hi, extra = self._draws(data, source, None)
        record = extra.pop("record", None) or self.inner.parameters()
        params = {**record, "interval": self.spec()}
        covers = extra.pop("covers", COVERS[self.method])
        ci = None
        if lo is not None:
            ci = Interval(self.level, float(lo), float(hi), covers, self.method,
                          self.interval_epsilon, extra)
        return Release(value, self._guarantee, self.inner.name, params, source.secure, ci=ci)

    def sample_intervals(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` (value, lower, upper) rows through the release path (coverage tests);
        for a several-quantile release an array (size, 3, m)."""
        if self.method == CDF:
            source = resolve(rng)
            rows = self._vector_rows(data)
            values = self.inner.sample(data, int(size), rng=source)
            out = []
            for v in values:
                ci = self._vector_draw(rows, v, source)
                out.append([list(v), [i.lower for i in ci], [i.upper for i in ci]])
            return np.array(out, dtype=np.float64)
        values, lo, hi, _ = self._draws(data, resolve(rng), int(size))
        return np.array([[np.nan if v is None else float(v) for v in col]
                         for col in (values, lo, hi)]).T


def _within(mechanism: Any, lo: Any, hi: Any) -> tuple[Any, Any]:
    """[lo, hi] intersected with the public range the release is projected onto
    (:meth:`~instancedp.mechanisms.base.Mechanism.output_range`; post-processing)."""
    from .mechanisms.base import public_range

    bounds = public_range(getattr(mechanism, "query", None))
    if bounds is None:
        return lo, hi
    return np.clip(lo, *bounds), np.clip(hi, *bounds)


def _one(a: Any, size: int | None) -> Any:
    """The single draw (``size=None``) as a Python scalar, else the array."""
    if size is not None:
        return a
    v = np.asarray(a, dtype=object).reshape(-1)[0]
    return None if v is None else float(v)


def with_interval(
    build: Callable[[float], Any], epsilon: float, level: Any,
    fraction: float = DEFAULT_FRACTION,
) -> WithInterval:
    """The mechanism ``build(ε′)`` with a private interval at ``level``, charging ε in all.

    Data-independent families: ``build(ε)`` and an interval by post-processing.
    Instance-adaptive ones: ``build(ε·(1 − f))`` and the interval at the rest
    (ε − ε·(1 − f), so that the two add up to ε exactly in floating point:
    Sterbenz's lemma, f ≤ ½).  Refused (before any charge) for a mechanism with
    no interval method."""
    level = check_level(level)
    fraction = check_fraction(fraction)
    probe = build(epsilon)
    method = interval_method(probe)
    if method is None:
        raise _unsupported(probe)
    if method in (NOISE, RATIO, *FREE_FAMILIES):
        return WithInterval(probe, level, method, 0.0, None)
    main = float(epsilon) * (1.0 - fraction)
    inner = build(main)
    return WithInterval(inner, level, method, float(epsilon) - main, fraction)
