"""Independent references for the mechanism tests (no tests here).

- :class:`BruteQuery`: a statistic on multisets of size n over a small finite
  domain under substitution neighbours, with LS, A^(k) and SS computed by
  breadth-first search over all datasets — nothing shared with the library's
  sensitivity code.
- :func:`hockey_stick` / :func:`max_log_ratio`: privacy measures of two output
  laws on a dense grid (plus atoms), used to check claims exactly up to
  quadrature error.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np


def lower_median(x: Sequence[float]) -> float:
    s = sorted(x)
    return float(s[(len(s) - 1) // 2])


class BruteQuery:
    """f on sorted tuples over ``domain`` (size n), substitution neighbours, by brute force."""

    neighbours = "substitution"

    def __init__(self, f: Callable, domain: Sequence[float], n: int, name: str = "brute"):
        self.f = f
        self.domain = tuple(domain)
        self.n = n
        self.name = name
        self.all = list(itertools.combinations_with_replacement(self.domain, n))
        self._nb: dict[tuple, list[tuple]] = {}
        self._ls = {x: self._local(x) for x in self.all}
        self._ak: dict[tuple, list[float]] = {}

    @staticmethod
    def key(x) -> tuple:
        return tuple(sorted(float(v) for v in np.asarray(x).ravel()))

    def neighbours_of(self, x) -> list[tuple]:
        x = self.key(x)
        if x not in self._nb:  # memo: every breadth-first search visits every dataset
            out = set()
            for i in range(len(x)):
                for v in self.domain:
                    if v != x[i]:
                        out.add(tuple(sorted(x[:i] + (float(v),) + x[i + 1 :])))
            self._nb[x] = sorted(out)
        return list(self._nb[x])

    def _local(self, x) -> float:
        fx = self.f(x)
        return max((abs(fx - self.f(y)) for y in self.neighbours_of(x)), default=0.0)

    def value(self, data) -> float:
        return float(self.f(self.key(data)))

    @property
    def global_sensitivity(self) -> float:
        return max(self._ls.values())

    def max_distance(self, data) -> int:
        return self.n

    def _levels(self, x) -> list[float]:
        x = self.key(x)
        if x not in self._ak:
            seen = {x}
            frontier = [x]
            best = self._ls[x]
            levels = [best]
            for _ in range(self.n):
                nxt = []
                for y in frontier:
                    for z in self.neighbours_of(y):
                        if z not in seen:
                            seen.add(z)
                            nxt.append(z)
                best = max([best] + [self._ls[z] for z in nxt])
                levels.append(best)
                frontier = nxt
            self._ak[x] = levels
        return self._ak[x]

    def local_sensitivity(self, data, distance: int = 0) -> float:
        lv = self._levels(data)
        return lv[min(int(distance), len(lv) - 1)]

    def smooth_sensitivity(self, data, beta: float) -> float:
        lv = self._levels(data)
        return max(math.exp(-k * beta) * a for k, a in enumerate(lv))

    def pairs(self) -> list[tuple[tuple, tuple]]:
        out = []
        for x in self.all:
            for y in self.neighbours_of(x):
                if x < y:
                    out.append((x, y))
        return out

    def parameters(self) -> dict:
        return {"domain": list(self.domain)}


def _tail_mass(d, lo: float, hi: float) -> float:
    return float(d.cdf(lo)) + (d.continuous_mass - float(d.cdf(hi)))


#: reach = span·2^k for k = 0 … 40 (2^40 > 1e12 ≥ 2^39): _grid's doubling ladder
_DOUBLINGS = 2.0 ** np.arange(41)


def _reach(dists, lo: float, hi: float, span: float) -> float:
    """The first reach = span·2^k (k = 0, 1, …) at which every law has at most 1e−13 of
    its continuous mass outside [lo − reach, hi + reach], or 2^40·span (≥ 1e12·span):
    each law's cdf is evaluated once on the whole ladder (the laws' cdfs are numpy
    functions, elementwise the scalar values)."""
    reaches = span * _DOUBLINGS
    done = np.ones(reaches.size, dtype=bool)
    for d in dists:
        with np.errstate(over="ignore"):  # far rungs of a tiny scale: (y − c)/s = ±inf
            below = np.asarray(d.cdf(lo - reaches), dtype=np.float64)
            above = np.asarray(d.cdf(hi + reaches), dtype=np.float64)
        done &= ~(below + (d.continuous_mass - above) > 1e-13)  # as the loop read a NaN
    done[-1] = True
    return float(reaches[int(np.argmax(done))])


def _grid(dists, extra=(), width: float = 60.0, points: int = 20001) -> np.ndarray:
    """Kinks ± 1e−9, a uniform core, and geometric tails out to where every law
    has less than 1e−13 of its continuous mass left outside."""
    kinks = sorted({float(k) for d in dists for k in d.kinks} | {float(e) for e in extra})
    lo, hi = (kinks[0], kinks[-1]) if kinks else (0.0, 0.0)
    span = max(hi - lo, 1.0)
    reach = _reach(dists, lo, hi, span)
    core = np.linspace(lo - reach, hi + reach, points)
    tail = np.geomspace(span * 1e-3, reach * width, 2000)
    eps = np.array([-1e-9, 0.0, 1e-9]) * span
    g = np.concatenate([core, lo - tail, hi + tail, *[k + eps for k in kinks]])
    return np.unique(g)


def _logpdf(d, y):
    if d.logpdf is not None:
        return d.logpdf(y)
    with np.errstate(divide="ignore"):
        return np.log(d.pdf(y))


def max_log_ratio(d1, d2, extra=(), **kw) -> float:
    """max over a dense grid (incl. kinks and far tails) and atoms of |ln p1 − ln p2|."""
    y = _grid([d1, d2], extra, **kw)
    l1, l2 = _logpdf(d1, y), _logpdf(d2, y)
    both = np.isfinite(l1) & np.isfinite(l2)
    one = np.isfinite(l1) ^ np.isfinite(l2)
    worst = math.inf if one.any() else 0.0
    if both.any():
        worst = max(worst, float(np.max(np.abs(l1[both] - l2[both]))))
    for k in set(d1.atoms) | set(d2.atoms):
        p, q = d1.atoms.get(k, 0.0), d2.atoms.get(k, 0.0)
        if (p > 0) != (q > 0):
            return math.inf
        if p > 0:
            worst = max(worst, abs(math.log(p) - math.log(q)))
    return worst


def hockey_stick(d1, d2, epsilon: float, extra=(), points: int = 200001) -> float:
    """max of H_ε(P1‖P2), H_ε(P2‖P1): ∫(p − e^ε q)₊ by the trapezoid rule on a dense
    grid with kinks, plus atoms, plus the continuous mass outside the grid (an upper
    bound on what the tails add)."""
    e = math.exp(epsilon)
    out = 0.0
    if d1.continuous_mass <= 0 and d2.continuous_mass <= 0:
        for a, b in ((d1, d2), (d2, d1)):
            val = sum(
                max(0.0, a.atoms.get(k, 0.0) - e * b.atoms.get(k, 0.0))
                for k in set(a.atoms) | set(b.atoms)
            )
            out = max(out, val)
        return out
    y = _grid([d1, d2], extra, points=points)
    for a, b in ((d1, d2), (d2, d1)):
        f = np.maximum(np.exp(_logpdf(a, y)) - e * np.exp(_logpdf(b, y)), 0.0)
        val = float(np.trapezoid(f, y))
        val += float(a.cdf(y[0])) + (a.continuous_mass - float(a.cdf(y[-1])))
        for k in set(a.atoms) | set(b.atoms):
            val += max(0.0, a.atoms.get(k, 0.0) - e * b.atoms.get(k, 0.0))
        out = max(out, val)
    return out
