"""A black-box auditor: a statistical lower bound on ε from samples.

Given samplers for a mechanism on two neighbouring inputs x and x′, the
auditor looks for an event E with P_x(E) > e^ε P_x′(E) + δ, which no
(ε, δ)-DP mechanism can have.  It works in two stages on independent samples,
in the manner of DP-Sniper (Bichsel et al. 2021) and StatDP (Ding et al. 2018):

1. **Selection** (first half of the samples).  Outputs are put in cells:
   refusals ⊥ (``None``), NaN, +∞ and −∞ each form a cell, discrete outputs
   (anything that is not a number, or numbers with few distinct values) form
   one cell per value, and finite numbers are binned into 4, 16, 64 and 256
   equal-mass bins of the pooled sample.  Candidate events are single cells,
   threshold events {y ≤ t} and {y > t} at every bin edge, and — the
   likelihood-ratio test of DP-Sniper — unions of the cells with the highest
   estimated ratio, in both directions (x against x′ and x′ against x).  Each
   candidate is scored with the bound below on the selection half, and the best
   ``events`` distinct candidates go on.  Two more partitions look below the
   distribution's shape, at the floating-point representation: **low bits**
   (sign, binary exponent and the 4 lowest significand bits of each finite
   output: Mironov 2012's attack on textbook float Laplace makes some of those
   cells impossible on one input), and **atoms** (each value seen at least
   twice in the pooled selection half: a continuous release repeats a value
   with negligible probability, so repeats are point masses).
2. **Test** (second half).  For each chosen event, one-sided Clopper–Pearson
   bounds give p̲ ≤ P_x(E) and p̄′ ≥ P_x′(E), and the lower confidence bound

       ε_lb = ln((p̲ − δ) / p̄′)

   (Google DP-Auditorium's verifyApproximateDp estimator; Gilbert &
   McMillan 2018).  The audit reports the largest ε_lb over the tested events
   and ``violated = ε_lb > ε``.

**False-alarm guarantee.**  If the mechanism is (ε, δ)-DP then for every
event E fixed before the test half is seen, P_x(E) ≤ e^ε P_x′(E) + δ.  A false
alarm on E needs ln((p̲ − δ)/p̄′) > ε, i.e. p̲ − δ > e^ε p̄′, which with
p̲ ≤ P_x(E) and p̄′ ≥ P_x′(E) would give P_x(E) − δ > e^ε P_x′(E), impossible.
So a false alarm needs p̲ > P_x(E) or p̄′ < P_x′(E); each bound is taken at level
α/(2K) for the K tested events, so by the union bound the probability of any
false alarm is ≤ α (default 1e−3).  The events depend only on the selection
half, which is independent of the test half.

What it cannot see: events of probability below about 1/samples (a δ of 1e−6
needs millions of samples to show); such failures are the job of the exact
checks in :mod:`instancedp.audit.profile`.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import beta as beta_dist

from .. import _validate
from ..errors import ParameterError

_SPECIALS = ("⊥", "nan", "+inf", "-inf")


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`empirical_audit`."""

    epsilon_lower_bound: float
    violated: bool
    event: str
    epsilon: float
    delta: float
    samples: int  # per input; half select the events, half test them
    seconds: float
    alpha: float  # false-alarm probability bound
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "violated": self.violated,
            "event": self.event,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "samples": self.samples,
            "seconds": self.seconds,
            "false_alarm_bound": self.alpha,
            **self.details,
        }


def cp_lower(k: np.ndarray, n: int, level: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound: P(bound > p) ≤ level."""
    k = np.asarray(k, dtype=float)
    with np.errstate(all="ignore"):
        out = beta_dist.ppf(level, k, n - k + 1)
    return np.where(k <= 0, 0.0, out)


def cp_upper(k: np.ndarray, n: int, level: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound: P(bound < p) ≤ level."""
    k = np.asarray(k, dtype=float)
    with np.errstate(all="ignore"):
        out = beta_dist.ppf(1 - level, k + 1, n - k)
    return np.where(k >= n, 1.0, out)


def epsilon_lower_bound(k_x: Any, k_x_prime: Any, n: int, delta: float, level: float) -> np.ndarray:
    """ln((p̲ − δ)/p̄′) with CP bounds at ``level`` each (−inf where p̲ ≤ δ)."""
    lo = cp_lower(k_x, n, level)
    up = cp_upper(k_x_prime, n, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(lo - delta) - np.log(up)
    return np.where(lo > delta, out, -np.inf)


# ---------------------------------------------------------------------------
# Cells


class _Cells:
    """Maps outputs to integer cells; fitted on the selection half."""

    def __init__(self, pooled: list[Any] | np.ndarray, bins: int, max_distinct: int = 512):
        num, cats = _split(pooled)
        self.categories: dict[Hashable, int] = {}
        for c in cats:
            if c not in self.categories:
                self.categories[c] = len(self.categories)
        finite = num[np.isfinite(num)]
        distinct = np.unique(finite)
        self.exact = distinct.size <= max_distinct
        if self.exact:
            self.edges = distinct  # one cell per value seen
        else:
            qs = np.quantile(finite, np.linspace(0, 1, bins + 1)[1:-1])
            self.edges = np.unique(qs)
        self.n_numeric = self.edges.size + (0 if self.exact else 1)
        self.n_cells = self.n_numeric + len(self.categories) + 1  # + "unseen"
        self.labels: list[str] = []

    def assign(self, outputs: list[Any] | np.ndarray) -> np.ndarray:
        num, cats = _split(outputs)
        cells = np.full(num.size, self.n_cells - 1, dtype=np.int64)
        fin = np.isfinite(num)
        if self.exact:
            v = num[fin]
            if self.edges.size:
                pos = np.minimum(np.searchsorted(self.edges, v), self.edges.size - 1)
                c = np.where(self.edges[pos] == v, pos, self.n_cells - 1)
            else:
                c = np.full(v.size, self.n_cells - 1)
        else:
            c = np.searchsorted(self.edges, num[fin], side="right")
        cells[fin] = c
        cat_idx = np.flatnonzero(~fin)
        for i, key in zip(cat_idx, cats, strict=True):
            j = self.categories.get(key)
            cells[i] = self.n_numeric + j if j is not None else self.n_cells - 1
        return cells

    def describe(self, members: np.ndarray) -> str:
        """Readable description of a union of cells."""
        parts = []
        num = sorted(int(m) for m in members if m < self.n_numeric)
        inv = {v: k for k, v in self.categories.items()}
        # Merge runs of consecutive numeric cells into intervals.
        runs: list[tuple[int, int]] = []
        for m in num:
            if runs and m == runs[-1][1] + 1:
                runs[-1] = (runs[-1][0], m)
            else:
                runs.append((m, m))
        for a, b in runs[:6]:
            if self.exact:
                lo, hi = self.edges[a], self.edges[b]
                parts.append(f"y = {lo:.6g}" if a == b else f"y in [{lo:.6g}, {hi:.6g}] (seen)")
            else:
                lo = "-inf" if a == 0 else f"{self.edges[a - 1]:.6g}"
                hi = "+inf" if b >= self.edges.size else f"{self.edges[b]:.6g}"
                parts.append(f"y in ({lo}, {hi}]")
        if len(runs) > 6:
            parts.append(f"... {len(runs) - 6} more intervals")
        for m in members:
            if self.n_numeric <= m < self.n_cells - 1:
                parts.append(f"y = {inv[int(m) - self.n_numeric]!s}")
        return " or ".join(parts) if parts else "(empty)"


class _KeyCells:
    """Cells from a key function on outputs (keys seen in the pooled selection half)."""

    exact = False

    def __init__(self, pooled: Any, key: Callable[[Any], np.ndarray], label: str) -> None:
        self._key = key
        self._label = label
        keys = key(pooled)
        self._keys = sorted({k for k in keys.tolist() if k is not None}, key=repr)
        self._index = {k: i for i, k in enumerate(self._keys)}
        self.n_numeric = len(self._keys)
        self.n_cells = self.n_numeric + 1  # + "unseen / not applicable"
        self.categories: dict[Hashable, int] = {}

    def assign(self, outputs: Any) -> np.ndarray:
        keys = self._key(outputs).tolist()
        return np.array([self._index.get(k, self.n_cells - 1) for k in keys], dtype=np.int64)

    def describe(self, members: np.ndarray) -> str:
        ks = [self._keys[int(m)] for m in members if m < self.n_numeric]
        more = f" ... {len(ks) - 6} more" if len(ks) > 6 else ""
        return f"{self._label} in {{{', '.join(map(str, ks[:6]))}{more}}}"


def _low_bits_keys(outputs: Any) -> np.ndarray:
    """(sign, binary exponent, 4 lowest significand bits) of finite nonzero outputs."""
    num, _ = _split(outputs)
    out = np.full(num.size, None, dtype=object)
    ok = np.isfinite(num) & (num != 0)
    v = num[ok]
    bits = v.view(np.uint64)
    exp = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1023
    low = (bits & np.uint64(0xF)).astype(np.int64)
    sign = np.where(v < 0, "-", "+")
    parts = zip(sign, exp.tolist(), low.tolist(), strict=True)
    out[ok] = [f"{s}2^{e}:{lo:x}" for s, e, lo in parts]
    return out


class _AtomCells:
    """One cell per finite value seen at least twice in the pooled selection half."""

    exact = False

    def __init__(self, pooled: Any) -> None:
        num, _ = _split(pooled)
        vals, counts = np.unique(num[np.isfinite(num)], return_counts=True)
        self.atoms = vals[counts >= 2]
        self.n_numeric = int(self.atoms.size)
        self.n_cells = self.n_numeric + 1
        self.categories: dict[Hashable, int] = {}

    def assign(self, outputs: Any) -> np.ndarray:
        num, _ = _split(outputs)
        cells = np.full(num.size, self.n_cells - 1, dtype=np.int64)
        if self.n_numeric:
            pos = np.minimum(np.searchsorted(self.atoms, num), self.n_numeric - 1)
            hit = np.isfinite(num) & (self.atoms[pos] == num)
            cells[hit] = pos[hit]
        return cells

    def describe(self, members: np.ndarray) -> str:
        vals = [f"{self.atoms[int(m)]!r}" for m in members if m < self.n_numeric]
        more = f" ... {len(vals) - 6} more" if len(vals) > 6 else ""
        return f"y (a repeated value) in {{{', '.join(vals[:6])}{more}}}"


def _split(outputs: Any) -> tuple[np.ndarray, list[Hashable]]:
    """Numeric view (NaN where not a finite number) and the category keys of
    the non-finite / non-numeric outputs, in order."""
    if isinstance(outputs, np.ndarray) and outputs.dtype.kind in "fiu" and outputs.ndim == 1:
        num = outputs.astype(float)
        bad = ~np.isfinite(num)
        cats = [_special(v) for v in num[bad]]
        return num, cats
    seq = list(outputs)
    num = np.full(len(seq), np.nan)
    cats: list[Hashable] = []
    for i, v in enumerate(seq):
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            f = float(v)
            if math.isfinite(f):
                num[i] = f
                continue
            cats.append(_special(f))
        elif v is None:
            cats.append("⊥")
        else:
            cats.append(_key(v))
    return num, cats


def _special(v: float) -> str:
    if math.isnan(v):
        return "nan"
    return "+inf" if v > 0 else "-inf"


def _key(v: Any) -> Hashable:
    if isinstance(v, np.ndarray):
        return ("array", tuple(v.ravel().tolist()))
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


# ---------------------------------------------------------------------------
# Candidate events


def _candidates(cells: _Cells, cx: np.ndarray, cy: np.ndarray) -> list[np.ndarray]:
    """Orders of cells whose prefixes are candidate events."""
    orders = []
    n_num = cells.n_numeric
    numeric = np.arange(n_num)
    # Threshold events {y ≤ t} and {y > t} (numeric cells only).
    if n_num > 1:
        orders.append(numeric)
        orders.append(numeric[::-1])
    # Likelihood-ratio orders (both directions), over all cells.
    ratio = (cx + 0.5) / (cy + 0.5)
    orders.append(np.argsort(-ratio, kind="stable"))
    orders.append(np.argsort(ratio, kind="stable"))
    return orders


def _candidates_unordered(cx: np.ndarray, cy: np.ndarray) -> list[np.ndarray]:
    """Likelihood-ratio orders only (cells without a numeric order)."""
    ratio = (cx + 0.5) / (cy + 0.5)
    return [np.argsort(-ratio, kind="stable"), np.argsort(ratio, kind="stable")]


def _score_orders(
    orders: list[np.ndarray], cx: np.ndarray, cy: np.ndarray, n: int, delta: float, level: float
) -> list[tuple[float, int, int, int]]:
    """(ε_lb, order index, prefix length, direction) of every prefix and singleton."""
    out = []
    for oi, order in enumerate(orders):
        px = np.cumsum(cx[order])
        py = np.cumsum(cy[order])
        for direction, (a, b) in enumerate(((px, py), (py, px))):
            lb = epsilon_lower_bound(a, b, n, delta, level)
            j = int(np.argmax(lb))
            out.append((float(lb[j]), oi, j + 1, direction))
    # Single cells.
    for direction, (a, b) in enumerate(((cx, cy), (cy, cx))):
        lb = epsilon_lower_bound(a, b, n, delta, level)
        j = int(np.argmax(lb))
        out.append((float(lb[j]), -1 - j, 1, direction))
    return out


def _call(sampler: Callable, m: int, gen: np.random.Generator) -> Any:
    try:
        params = [
            p
            for p in inspect.signature(sampler).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    out = sampler(m, gen) if len(params) >= 2 else sampler(m)
    if isinstance(out, np.ndarray):
        out = out.ravel() if out.ndim > 1 and out.shape[1:] == (1,) else out
    if len(out) != m:
        raise ParameterError(f"sampler must return {m} outputs, got {len(out)}")
    return out


def empirical_audit(
    sample_x: Callable[..., Any],
    sample_x_prime: Callable[..., Any],
    epsilon: float,
    delta: float = 0.0,
    samples: int = 200_000,
    seed: int = 0,
    alpha: float = 1e-3,
    events: int = 3,
    bins: tuple[int, ...] = (4, 16, 64, 256),
    low_bits: bool = True,
    atoms: bool = True,
    representation: bool | None = None,
) -> AuditResult:
    """Statistical lower bound on the ε of a mechanism at δ, from samples.

    ``sample_x(m)`` (or ``sample_x(m, rng)``, rng a numpy Generator seeded
    from ``seed``) returns m outputs of the mechanism on x — floats, ``None``
    for a refusal, NaN/±inf, or any hashable discrete output — and likewise
    ``sample_x_prime`` on a neighbour x′.  ``samples`` outputs are drawn per
    input: the first half select the events, the second half test them.
    ``violated`` is True when the ε lower bound exceeds ``epsilon``; for an
    (ε, δ)-DP mechanism that happens with probability ≤ ``alpha`` (see the
    module docstring for the argument).  ``low_bits`` and ``atoms`` add the
    floating-point partitions; turn ``low_bits`` off only for samplers that do
    not round as releases do (the fast float simulation path, which Mironov's
    attack breaks by design).  ``representation=False`` turns both off.
    """
    if representation is not None:
        low_bits = atoms = bool(representation)
    eps = _validate.nonnegative(epsilon, "epsilon")
    dl = _validate.delta(delta)
    if not isinstance(samples, (int, np.integer)) or samples < 20:
        raise ParameterError(f"samples must be an integer >= 20, got {samples!r}")
    a = _validate.in_open_interval(alpha, "alpha", 0.0, 1.0)
    if not isinstance(events, int) or events < 1:
        raise ParameterError(f"events must be an integer >= 1, got {events!r}")
    t0 = time.perf_counter()
    gen = np.random.default_rng(seed)
    gx, gy = gen.spawn(2)
    ox = _call(sample_x, int(samples), gx)
    oy = _call(sample_x_prime, int(samples), gy)
    n1 = int(samples) // 2
    n2 = int(samples) - n1
    sel_x, test_x = ox[:n1], ox[n1:]
    sel_y, test_y = oy[:n1], oy[n1:]
    pooled = _concat(sel_x, sel_y)
    level = a / (2 * events)
    # Score every candidate on the selection half.
    scored: list[tuple[float, Any, np.ndarray, int]] = []
    partitions = []
    for b in bins:
        cells = _Cells(pooled, b)
        cx = np.bincount(cells.assign(sel_x), minlength=cells.n_cells).astype(float)
        cy = np.bincount(cells.assign(sel_y), minlength=cells.n_cells).astype(float)
        # The "unseen" cell is never part of an event.
        cx[-1] = cy[-1] = 0
        orders = _candidates(cells, cx[:-1], cy[:-1])
        for lb, oi, length, direction in _score_orders(orders, cx[:-1], cy[:-1], n1, dl, level):
            members = orders[oi][:length] if oi >= 0 else np.array([-1 - oi])
            scored.append((lb, len(partitions), np.sort(members), direction))
        partitions.append(cells)
        if cells.exact:
            break  # every distinct value already has its own cell
    extras: list[Any] = []
    if not partitions[-1].exact:
        # Below the shape: floating-point low bits, and repeated values (atoms).
        if low_bits:
            extras.append(_KeyCells(pooled, _low_bits_keys, "(sign, exponent, low 4 bits)"))
        if atoms:
            extras.append(_AtomCells(pooled))
    if extras:
        for extra in extras:
            if extra.n_numeric == 0:
                continue
            cx = np.bincount(extra.assign(sel_x), minlength=extra.n_cells).astype(float)
            cy = np.bincount(extra.assign(sel_y), minlength=extra.n_cells).astype(float)
            cx[-1] = cy[-1] = 0
            orders = _candidates_unordered(cx[:-1], cy[:-1])
            for lb, oi, length, direction in _score_orders(orders, cx[:-1], cy[:-1], n1, dl, level):
                members = orders[oi][:length] if oi >= 0 else np.array([-1 - oi])
                scored.append((lb, len(partitions), np.sort(members), direction))
            partitions.append(extra)
    scored.sort(key=lambda t: -t[0])
    chosen: list[tuple[float, Any, np.ndarray, int]] = []
    seen = set()
    for item in scored:
        key = (item[1], tuple(item[2].tolist()), item[3])
        if key in seen:
            continue
        seen.add(key)
        chosen.append(item)
        if len(chosen) == events:
            break
    # Test the chosen events on the second half.
    best, best_desc, best_counts = -math.inf, "(none)", {}
    assigned: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for _, pi, members, direction in chosen:
        cells = partitions[pi]
        if pi not in assigned:
            assigned[pi] = (cells.assign(test_x), cells.assign(test_y))
        tx, ty = assigned[pi]
        kx = int(np.isin(tx, members).sum())
        ky = int(np.isin(ty, members).sum())
        k_a, k_b = (kx, ky) if direction == 0 else (ky, kx)
        lb = float(epsilon_lower_bound(k_a, k_b, n2, dl, level))
        if lb > best or best_counts == {}:
            best = lb
            who = "P_x(E) vs P_x'(E)" if direction == 0 else "P_x'(E) vs P_x(E)"
            best_desc = f"E = {cells.describe(members)}; {who}"
            best_counts = {"count_x": kx, "count_x_prime": ky, "test_samples": n2}
    lb_out = max(best, 0.0) if math.isfinite(best) else 0.0
    return AuditResult(
        epsilon_lower_bound=lb_out,
        violated=bool(best > eps),
        event=best_desc,
        epsilon=eps,
        delta=dl,
        samples=int(samples),
        seconds=time.perf_counter() - t0,
        alpha=a,
        details={**best_counts, "events_tested": len(chosen)},
    )


def _concat(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype.kind in "fiub":
        return np.concatenate([a, b])
    return list(a) + list(b)
