"""Mironov's attack on textbook floating-point noise, and the cost of the safe sampler.

Mironov (CCS 2012) observed that ``value + scale·ppf(U)`` computed in doubles,
with U on the 2^−53 grid of a standard uniform generator, can only produce a
sparse, value-dependent set of doubles.  An attacker who knows the
construction checks which of the two candidate inputs (a count of 0 or 1)
can produce the observed output at all.

* :func:`attack_table` measures, per noise family, the success of that
  attacker (and of a generic attacker that learns float-bit features) on
  the naive sampler and on :func:`instancedp.noise.exact.add_noise`.
* :func:`latency_table` measures the median latency of one exact draw against
  the fast float path, in one run.

Both return lists of dict rows; ``benchmarks/safe_sampling.py`` writes them
to ``docs/results/safe_sampling.md``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from ..errors import ParameterError
from ..noise import (
    ArsinhNormal,
    Gaussian,
    GeneralizedCauchy,
    Laplace,
    LaplaceLogNormal,
    PolyPlace,
    StudentT,
    UniformLogNormal,
)
from ..noise.base import NoiseDistribution
from ..noise.exact import add_noise, refinement_count, work_count
from ..random import simulation

_TWO53 = 2.0**53


# --- the naive (textbook) sampler and the attacker who knows it --------------------------


def naive_forward(noise: NoiseDistribution, value: float, k: np.ndarray) -> np.ndarray:
    """Textbook output value + scale·F⁻¹(U) in doubles, for U = k·2^−53 (k = 1 … 2^53 − 1).

    Each family's textbook inverse CDF, written here so that the attacked
    construction is fixed (not whatever the family's ``ppf`` does today):

    * Laplace(b): value + b·(−sign(u)·ln(1 − 2|u|)), u = U − ½;
    * PolyPlace(s, α): the closed-form inverse (docs/noise.md);
    * Student's t: ``scipy.special.stdtrit``.
    """
    u = np.asarray(k, dtype=np.float64) / _TWO53
    with np.errstate(all="ignore"):
        if isinstance(noise, Laplace):
            c = u - 0.5
            return value + noise.scale * (-np.sign(c) * np.log(1.0 - 2.0 * np.abs(c)))
        if isinstance(noise, PolyPlace):
            a, s = noise.shape, noise.scale
            n1 = a / (2.0 * (2.0 * ((a - 1.0) / a) ** a + a - 1.0))
            body = n1 * (a - 1.0) / a  # mass of [0, x] = body·(1 − (1 − x)^α), x < 1/α
            tail = n1 * (a + 1.0) / a * (1.0 - 1.0 / a**2) ** a  # P(Z > x) = tail·(1 + x)^−α
            p = np.minimum(u, 1.0 - u)
            # expm1/log1p keep full relative precision (as a careful library would).
            x_tail = np.expm1(-np.log(p / tail) / a)
            x_body = -np.expm1(np.log1p(-(0.5 - p) / body) / a)
            x = np.where(p <= tail * (1.0 + 1.0 / a) ** (-a), x_tail, x_body)
            return value + s * np.where(u < 0.5, -x, x)
        if isinstance(noise, StudentT):
            return value + noise.scale * special.stdtrit(noise.df, u)
    raise ParameterError(f"no textbook sampler for {noise!r} (Laplace, PolyPlace, StudentT)")


def naive_sample(noise: NoiseDistribution, value: float, n: int, seed: int) -> np.ndarray:
    """n draws of the naive sampler (k uniform on 1 … 2^53 − 1)."""
    k = np.random.default_rng(seed).integers(1, 2**53, n).astype(np.float64)
    return naive_forward(noise, value, k)


def naive_member(noise: NoiseDistribution, value: float, y: np.ndarray) -> np.ndarray:
    """Could the naive sampler on input ``value`` output exactly ``y``?  (vectorised)

    The forward map is non-decreasing in k: bisect for the largest k with
    forward(k) ≤ y, then test the few grid points around it.
    """
    y = np.asarray(y, dtype=np.float64)
    lo = np.ones(y.shape)
    hi = np.full(y.shape, _TWO53 - 1.0)
    with np.errstate(all="ignore"):
        for _ in range(54):
            mid = np.floor((lo + hi) / 2.0)
            le = naive_forward(noise, value, mid) <= y
            lo = np.where(le, mid, lo)
            hi = np.where(le, hi, mid)
        hit = np.zeros(y.shape, dtype=bool)
        for d in range(-3, 4):
            k = lo + d
            ok = (k >= 1) & (k <= _TWO53 - 1)
            hit |= ok & (naive_forward(noise, value, np.where(ok, k, 1.0)) == y)
    return hit


def membership_attack_success(
    noise: NoiseDistribution, out0: np.ndarray, out1: np.ndarray, values=(0.0, 1.0)
) -> float:
    """Success of Mironov's attacker: say 0 if only input 0 can produce y, 1 if only
    input 1 can, and guess (counts ½) otherwise; averaged over both inputs' outputs."""
    score = 0.0
    for truth, out in ((0, out0), (1, out1)):
        m0 = naive_member(noise, values[0], out)
        m1 = naive_member(noise, values[1], out)
        says0 = m0 & ~m1
        says1 = m1 & ~m0
        correct = says0 if truth == 0 else says1
        wrong = says1 if truth == 0 else says0
        score += (correct.sum() + 0.5 * (out.size - correct.sum() - wrong.sum())) / out.size
    return score / 2.0


def _float_features(y: np.ndarray) -> list[np.ndarray]:
    """Generic float-representability features of doubles (small integer codes)."""
    bits = np.asarray(y, dtype=np.float64).view(np.uint64)
    mant = bits & np.uint64((1 << 52) - 1)
    low8 = (bits & np.uint64(0xFF)).astype(np.int64)
    lowbit = mant & (~mant + np.uint64(1))  # lowest set bit of the mantissa
    with np.errstate(divide="ignore"):
        tz = np.where(mant == 0, 52, np.log2(lowbit.astype(np.float64))).astype(np.int64)
    with np.errstate(all="ignore"):
        trip = ((y - 1.0) + 1.0 == y).astype(np.int64)  # is y reachable as 1 + something?
    return [low8, np.minimum(tz, 15) * 2 + trip]


def generic_attack_success(out0: np.ndarray, out1: np.ndarray) -> float:
    """Best held-out success of plug-in classifiers on float-bit features.

    For each feature, the label of each feature value is learned from the first
    half of both samples (majority, ties count ½) and scored on the second half.
    """
    best = 0.0
    h0, h1 = out0.size // 2, out1.size // 2
    for f0, f1 in zip(_float_features(out0), _float_features(out1), strict=True):
        size = int(max(f0.max(), f1.max())) + 1
        c0 = np.bincount(f0[:h0], minlength=size)
        c1 = np.bincount(f1[:h1], minlength=size)
        vote1 = np.where(c1 > c0, 1.0, np.where(c1 < c0, 0.0, 0.5))  # P(say 1)
        acc0 = 1.0 - vote1[f0[h0:]].mean()
        acc1 = vote1[f1[h1:]].mean()
        best = max(best, (acc0 + acc1) / 2.0)
    return float(best)


# Noise per unit of a count's sensitivity at small ε, so that the real-number
# mechanism itself leaks almost nothing (total variation ≲ 0.005 between inputs
# 0 and 1): any success far from ½ comes from the floats.
ATTACK_CASES: dict[str, NoiseDistribution] = {
    "laplace": Laplace(128.0),  # ε = 1/128
    "polyplace": PolyPlace(1000.0, 10.0),  # ε = 0.01, γ = 0.001 (Thm. 8: s = 1/γ, α = ε/γ)
    "student_t": StudentT(2.0, 128.0),  # heavier tails: sparser naive outputs
}


def attack_rows(
    name: str, n: int = 50_000, seed: int = 0, naive: bool = True, safe: bool = True
) -> dict[str, Any]:
    """Attack successes for one family: n outputs per input (0 and 1) on each path."""
    noise = ATTACK_CASES[name]
    row: dict[str, Any] = {"family": name, "noise": repr(noise), "outputs_per_input": n}
    if naive:
        o0 = naive_sample(noise, 0.0, n, seed)
        o1 = naive_sample(noise, 1.0, n, seed + 1)
        row["naive_mironov"] = membership_attack_success(noise, o0, o1)
        row["naive_generic"] = generic_attack_success(o0, o1)
    if safe:
        unit = noise.with_scale(1.0)
        s0 = add_noise(0.0, noise.scale, unit, size=n, rng=simulation(seed + 2))
        s1 = add_noise(1.0, noise.scale, unit, size=n, rng=simulation(seed + 3))
        row["safe_mironov"] = membership_attack_success(noise, s0, s1)
        row["safe_generic"] = generic_attack_success(s0, s1)
    return row


def attack_table(quick: bool = False, seed: int = 0) -> list[dict[str, Any]]:
    """Mironov's and the generic attacker's success, naive vs safe, per family."""
    n = 5_000 if quick else 50_000
    return [attack_rows(name, n=n, seed=seed) for name in ATTACK_CASES]


# --- latency ----------------------------------------------------------------------------

LATENCY_FAMILIES: dict[str, NoiseDistribution] = {
    "laplace": Laplace(1.0),
    "gaussian": Gaussian(1.0),
    "polyplace": PolyPlace(10.0, 10.0),
    "student_t": StudentT(3.0),
    "cauchy": GeneralizedCauchy(4.0),
    "laplace_log_normal": LaplaceLogNormal(0.5),
    "uniform_log_normal": UniformLogNormal(0.5),
    "arsinh_normal": ArsinhNormal(0.5),
}


def _latencies(fn, reps: int) -> tuple[np.ndarray, np.ndarray]:
    """(wall seconds, thread CPU seconds) of each of ``reps`` calls.  On a shared machine
    the CPU time is the cost of the work itself; the wall time adds preemptions."""
    wall, cpu = np.empty(reps), np.empty(reps)
    for i in range(reps):
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        wall[i], cpu[i] = time.perf_counter() - t0, time.thread_time() - c0
    return wall, cpu


def latency_table(
    quick: bool = False, value: float = 42.0, scale: float = 3.0
) -> list[dict[str, Any]]:
    """Per-draw cost: the exact path with the secure OS source (as releases use it) and
    with a simulation source, against the fast float path (value + scale·noise.sample),
    one draw per call, all in one run; CPU-time medians and p99, wall-time medians."""
    reps = 300 if quick else 3000
    rows = []
    for name, noise in LATENCY_FAMILIES.items():
        gen = simulation(1)
        add_noise(value, scale, noise, size=None)  # warm caches (arb constants, imports)
        w0 = work_count()
        safe_wall, safe = _latencies(lambda n=noise: add_noise(value, scale, n, size=None), reps)
        evaluations = (work_count() - w0) / reps
        _, safe_sim = _latencies(
            lambda n=noise, g=gen: add_noise(value, scale, n, size=None, rng=g), reps
        )
        fast_wall, fast = _latencies(lambda n=noise, g=gen: value + scale * n.sample(None, g), reps)
        rows.append(
            {
                "family": name,
                "noise": repr(noise),
                "safe_median_us": float(np.median(safe)) * 1e6,
                "safe_p99_us": float(np.quantile(safe, 0.99)) * 1e6,
                "safe_max_us": float(safe.max()) * 1e6,
                "safe_wall_median_us": float(np.median(safe_wall)) * 1e6,
                "safe_simulation_median_us": float(np.median(safe_sim)) * 1e6,
                "mean_evaluations": evaluations,
                "fast_median_us": float(np.median(fast)) * 1e6,
                "fast_wall_median_us": float(np.median(fast_wall)) * 1e6,
                "ratio": float(np.median(safe) / np.median(fast)),
                "reps": reps,
                "cpu_count": os.cpu_count(),
            }
        )
    return rows


TIMING_CASES: list[tuple[str, float, float]] = [
    ("value 0, scale 1", 0.0, 1.0),
    ("value 1e6, scale 1", 1e6, 1.0),
    ("value 1, scale 1e-12", 1.0, 1e-12),
    ("value 0, scale 1e-300", 0.0, 1e-300),
]


def _timed_draws(value: float, scale: float, grid: int | None, reps: int, seed: int):
    noise, src = Laplace(1.0), simulation(seed)
    times, work, refines = np.empty(reps), np.empty(reps), np.empty(reps)
    for i in range(reps):
        w0, r0, t0 = work_count(), refinement_count(), time.thread_time()
        add_noise(value, scale, noise, size=None, rng=src, grid=grid)
        times[i] = time.thread_time() - t0
        work[i], refines[i] = work_count() - w0, refinement_count() - r0
    return times, work, refines


def timing_table(quick: bool = False, grid: int = -20) -> list[dict[str, Any]]:
    """Work (ball evaluations) and latency of exact Laplace draws for several (value,
    scale), same random stream for each: on the float path the work depends on the value
    (the timing channel); with ``grid`` it does not."""
    reps = 300 if quick else 20000
    rows = []
    for label, value, scale in TIMING_CASES:
        for g in (None, grid):
            t, w, r = _timed_draws(value, scale, g, reps, seed=2)
            rows.append(
                {
                    "case": label,
                    "grid": g,
                    "mean_evaluations": float(w.mean()),
                    "max_evaluations": int(w.max()),
                    "draws_needing_more_bits": float(np.mean(r > 0)),
                    "median_us": float(np.median(t)) * 1e6,
                    "reps": reps,
                }
            )
    return rows


# ---- rendering (moved from benchmarks/) ----


def reproduce(outdir: str | Path, quick: bool = True) -> list[Path]:
    """Write safe_sampling.md, safe_sampling.json into ``outdir``; the paths written."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    latency = latency_table(quick=quick)
    timing = timing_table(quick=quick)
    attack = attack_table(quick=quick)
    elapsed = time.perf_counter() - start
    cores = os.cpu_count()
    lines = [
        "# Safe (correctly rounded) noise: latency and the attack it stops",
        "",
        f"Machine: {cores} cores (os.cpu_count()), Python {platform.python_version()}, "
        f"load average {load:.1f} at the start (the machine is shared); one run of "
        f"`benchmarks/safe_sampling.py{' --quick' if quick else ''}` ({elapsed:.0f} s).  "
        "All ratios come from this one run.",
        "",
        "## Latency of one draw",
        "",
        "Exact draw: `instancedp.noise.exact.add_noise(42.0, 3.0, noise, size=None)` with "
        "the default secure source (os.urandom), as releases use it; fast path: "
        "`42.0 + 3.0 * noise.sample(None, rng)` (the family's vectorised float sampler, "
        "called for one value).  Times are per-thread CPU time (`time.thread_time`), which "
        "the other jobs on the shared machine do not inflate; the wall-clock median of the "
        "exact draw is given too.  Target: ≤ 1 ms per exact draw.",
        "",
        "| family | noise | exact median µs | exact p99 µs | exact wall median µs | exact, "
        "simulation source, median µs | fast median µs | exact / fast | ball evaluations "
        "per exact draw |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in latency:
        lines.append(
            f"| {r['family']} | `{r['noise']}` | {r['safe_median_us']:.1f} | "
            f"{r['safe_p99_us']:.1f} | {r['safe_wall_median_us']:.1f} | "
            f"{r['safe_simulation_median_us']:.1f} | {r['fast_median_us']:.2f} | "
            f"{r['ratio']:.1f} | {r['mean_evaluations']:.2f} |"
        )
    worst = max(r["safe_median_us"] for r in latency)
    lines += [
        "",
        f"Slowest family median: {worst:.0f} µs — "
        + ("within" if worst <= 1000 else "**above**")
        + " the 1 ms target.",
        "",
        "## The timing channel (Laplace, simulation source)",
        "",
        "On the float path the cells around the output depend on the value, so the number "
        "of CDF evaluations (and the time) can depend on it; with `grid=k` the draw is the "
        "same computation for every value (same random stream in every row).",
        "",
        "| case | output | mean CDF evaluations | max | draws needing more random bits "
        "| median CPU µs |",
        "|---|---|---|---|---|---|",
    ]
    for r in timing:
        g = "nearest double" if r["grid"] is None else f"grid 2^{r['grid']}"
        lines.append(
            f"| {r['case']} | {g} | {r['mean_evaluations']:.3f} | {r['max_evaluations']} | "
            f"{100 * r['draws_needing_more_bits']:.2f} % | {r['median_us']:.1f} |"
        )
    n = attack[0]["outputs_per_input"]
    lines += [
        "",
        "## Mironov's attack (count 0 vs 1)",
        "",
        f"{n} outputs per input per path.  *Mironov*: the attacker who knows the textbook "
        "construction (U on the 2^−53 grid, inverse CDF in doubles) answers the input that "
        "can produce the output, guessing when both can.  *generic*: plug-in classifier on "
        "float-bit features (low mantissa bits, trailing zeros, whether y − 1 + 1 = y), "
        "trained on half the outputs and scored on the other half.  The noise is wide "
        "(ε ≈ 0.01 per unit count) so the real-number mechanism leaks ≤ 0.503: anything "
        "above comes from the floats.",
        "",
        "| family | noise | naive: Mironov | naive: generic | exact: Mironov | exact: generic |",
        "|---|---|---|---|---|---|",
    ]
    for r in attack:
        lines.append(
            f"| {r['family']} | `{r['noise']}` | {r['naive_mironov']:.4f} | "
            f"{r['naive_generic']:.4f} | {r['safe_mironov']:.4f} | {r['safe_generic']:.4f} |"
        )
    lines.append("")
    (outdir / "safe_sampling.md").write_text("\n".join(lines))
    payload = {
        "cpu_count": cores,
        "python": platform.python_version(),
        "load_average": load,
        "quick": quick,
        "seconds": elapsed,
        "latency": latency,
        "timing": timing,
        "attack": [
            {k: float(v) if hasattr(v, "dtype") else v for k, v in r.items()} for r in attack
        ],
    }
    (outdir / "safe_sampling.json").write_text(json.dumps(payload, indent=2))
    return [outdir / "safe_sampling.md", outdir / "safe_sampling.json"]
