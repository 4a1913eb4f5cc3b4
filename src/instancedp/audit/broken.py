"""Deliberately broken mechanisms: each must be flagged by the audits.

These variants are built from public pieces (noise families, queries, the
catalogue's samplers) with one flaw each; ``BROKEN`` maps a name to the
builder and to the checks (``exact``, ``empirical``) that must flag it.  They
live in the library (not in tests) so that ``benchmarks/audit.py`` and the
test suite share them; nothing here is a mechanism to use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..mechanisms.base import OutputDistribution
from ..privacy import ApproxDP, PureDP
from .catalogue import (
    MEDIAN_BOUNDS,
    AuditCase,
    additive_sampler,
    atoms_sampler,
    mechanism_case,
    refusal_sampler,
)
from .profile import neighbour_pairs_from_brute

EPS = 1.0

# --------------------------------------------------------------------------
# Helpers for the broken variants (built from public pieces only).
def _median():
    from ..queries import Median

    return Median(*MEDIAN_BOUNDS, neighbours="substitution")


MEDIAN_PAIRS = neighbour_pairs_from_brute((0.0, 1.0, 2.0, 4.0, 8.0), 3, "substitution")


def _point_mass(value: float) -> OutputDistribution:
    zero = lambda y: np.zeros_like(np.asarray(y, dtype=float))  # noqa: E731
    return OutputDistribution(pdf=zero, cdf=zero, atoms={float(value): 1.0})


def _additive_case(name, descr, guarantee, pairs, center, scale, noise, **kw) -> AuditCase:
    """Output center(x) + scale(x)·Z (a point mass when the scale is 0)."""

    def law(d):
        s = scale(d)
        return (
            _point_mass(center(d)) if s == 0 else OutputDistribution.additive(center(d), s, noise)
        )

    return AuditCase(
        name,
        descr,
        guarantee,
        pairs,
        lambda d: additive_sampler(center(d), scale(d), noise),
        law,
        **kw,
    )


def half_scale_laplace() -> AuditCase:
    from ..noise import Laplace

    q = _median()
    return _additive_case(
        "half-noise-scale",
        "Laplace on the median with scale GS/(2ε) instead of GS/ε",
        PureDP(EPS),
        MEDIAN_PAIRS,
        q.value,
        lambda d: q.global_sensitivity / (2 * EPS),
        Laplace(1.0),
    )


def smooth_beta_too_large() -> AuditCase:
    from ..noise import calibrate

    q, gamma = _median(), 0.1
    cal = calibrate("polyplace", EPS, gamma)
    return _additive_case(
        "smooth-beta-too-large",
        "PolyPlace calibrated for γ = 0.1 but SS computed with β = 1.5",
        cal.guarantee,
        MEDIAN_PAIRS,
        q.value,
        lambda d: q.smooth_sensitivity(d, beta=1.5),
        cal.noise,
    )


def ls_for_ss() -> AuditCase:
    from ..noise import calibrate

    q = _median()
    cal = calibrate("polyplace", EPS, 0.1)
    return _additive_case(
        "local-for-smooth",
        "PolyPlace scaled by LS(x) instead of SS_γ(x)",
        cal.guarantee,
        MEDIAN_PAIRS,
        q.value,
        lambda d: q.local_sensitivity(d, 0),
        cal.noise,
    )


def _ptr_case(name, descr, eps, delta, bound, threshold, noisy_test=True) -> AuditCase:
    """PTR (PTR notes Prop. 15.5, continuous-Laplace test): d̂ = d + Lap(2/ε); if
    d̂ > threshold release median + Lap(2b/ε), else ⊥.  Claims (ε, δ)-DP."""
    from ..mechanisms.ptr import distance_to_high_sensitivity
    from ..noise import Laplace

    q = _median()
    e1 = eps / 2

    def p_pass(d):
        dist = distance_to_high_sensitivity(q, d, bound)
        if math.isinf(dist):
            return 1.0
        if not noisy_test:
            return 1.0 if dist > threshold else 0.0
        z = threshold - dist  # P(Lap(1/e1) > z)
        return 0.5 * math.exp(-e1 * z) if z >= 0 else 1 - 0.5 * math.exp(e1 * z)

    def law(d):
        p = p_pass(d)
        return OutputDistribution.additive(
            q.value(d), bound / e1, Laplace(1.0), atoms={None: 1 - p}
        )

    def sampler(d):
        return refusal_sampler(p_pass(d), additive_sampler(q.value(d), bound / e1, Laplace(1.0)))

    return AuditCase(name, descr, ApproxDP(eps, delta), MEDIAN_PAIRS, sampler, law)


def ptr_correct_threshold() -> AuditCase:
    eps, delta = 3.0, 1e-3
    return _ptr_case(
        "ptr-continuous (control)",
        "PTR with threshold ln(1/δ)/ε′ (correct)",
        eps,
        delta,
        1.0,
        math.log(1 / delta) / (eps / 2),
    )


def ptr_integer_threshold() -> AuditCase:
    # T = ln(1/δ)/ε′ = 4.605 truncated to 4: P(pass | d = 0) = ½e^{−6} = 1.24e−3 > δ.
    eps, delta = 3.0, 1e-3
    return _ptr_case(
        "ptr-integer-threshold",
        "PTR with the threshold ln(1/δ)/ε′ truncated to an integer",
        eps,
        delta,
        1.0,
        math.floor(math.log(1 / delta) / (eps / 2)),
    )


def ptr_noiseless_test() -> AuditCase:
    eps, delta = 1.0, 1e-3
    # Releases whenever the exact distance is positive, i.e. whenever LS(x) ≤ b.
    return _ptr_case(
        "ptr-noiseless-test",
        "PTR testing the exact distance d(x) > 0 (no noise, no margin)",
        eps,
        delta,
        1.0,
        0.0,
        noisy_test=False,
    )


def triangles_ls_for_ss() -> AuditCase:
    # Edge privacy: the triangle count with PolyPlace scaled by LS (0 on a
    # triangle-free graph whose pairs share no neighbour: the count is released exactly).
    from ..noise import calibrate
    from ..queries.graphs import TriangleCount

    q = TriangleCount()
    cal = calibrate("polyplace", EPS, 0.1)
    return _additive_case(
        "triangles-local-for-smooth",
        "triangle count + LS(G)·PolyPlace instead of SS_γ(G), edge privacy",
        cal.guarantee,
        neighbour_pairs_from_brute((), 4, "edge"),
        q.value,
        lambda g: q.local_sensitivity(g, 0),
        cal.noise,
    )


def clamping_skipped() -> AuditCase:
    # Sum with public bounds [0, 1] (sensitivity 1), but the records are not
    # clamped: a record 4 moves the sum by 4.
    from ..noise import Laplace

    pairs = neighbour_pairs_from_brute((0.0, 0.5, 1.0, 4.0), 3, "substitution")
    return _additive_case(
        "clamping-skipped",
        "Laplace(1/ε) on a sum with bounds [0, 1] computed on unclamped data",
        PureDP(EPS),
        pairs,
        lambda d: float(np.sum(d)),
        lambda d: 1.0 / EPS,
        Laplace(1.0),
    )


def add_remove_under_substitution() -> AuditCase:
    # Sum on [−1, 1]: add/remove sensitivity max(|lo|, |hi|) = 1, but under
    # substitution a record −1 → 1 moves the sum by 2.
    from ..noise import Laplace

    pairs = neighbour_pairs_from_brute((-1.0, 0.0, 1.0), 3, "substitution")
    return _additive_case(
        "add-remove-sensitivity",
        "sum on [−1, 1] with the add/remove sensitivity 1 under substitution",
        PureDP(EPS),
        pairs,
        lambda d: float(np.sum(np.clip(d, -1, 1))),
        lambda d: 1.0 / EPS,
        Laplace(1.0),
    )


def student_t_gamma_too_large() -> AuditCase:
    # d = 3 needs γ < ε/(d+1) = 0.25; here γ = 0.5 and the scale formula
    # (d+1)/(2√d(ε − γ(d+1))) is used with |ε − γ(d+1)| = 1.
    from ..noise import StudentT

    q, d, gamma = _median(), 3.0, 0.5
    unit = (d + 1) / (2 * math.sqrt(d) * abs(EPS - gamma * (d + 1)))
    return _additive_case(
        "student-t-gamma-too-large",
        "Student t (d = 3) with γ = 0.5 > ε/(d+1) = 0.25",
        PureDP(EPS),
        MEDIAN_PAIRS,
        q.value,
        lambda x: unit * q.smooth_sensitivity(x, beta=gamma),
        StudentT(d, 1.0),
    )


def polyplace_shape_plus_one() -> AuditCase:
    from ..noise import PolyPlace

    q, gamma = _median(), 0.25
    return _additive_case(
        "polyplace-shape-plus-one",
        "PolyPlace(SS/γ, ε/γ + 1) instead of PolyPlace(SS/γ, ε/γ), γ = 0.25",
        PureDP(EPS),
        MEDIAN_PAIRS,
        q.value,
        lambda x: q.smooth_sensitivity(x, beta=gamma),
        PolyPlace(1 / gamma, EPS / gamma + 1),
    )


def gaussian_classic(eps: float, delta: float) -> AuditCase:
    """σ = √(2 ln(1.25/δ))·Δ/ε (Dwork–Roth Thm. A.1, proved for ε < 1 only), Δ = 1."""
    from ..noise import Gaussian

    sigma = math.sqrt(2 * math.log(1.25 / delta)) / eps
    pairs = [((0.0,), (1.0,))]
    return _additive_case(
        f"gaussian-classic-eps{eps:g}",
        f"classic Gaussian σ at ε = {eps:g}, δ = {delta:g} (outside ε < 1)",
        ApproxDP(eps, delta),
        pairs,
        lambda d: float(d[0]),
        lambda d: sigma,
        Gaussian(1.0),
    )


def exponential_half_sensitivity() -> AuditCase:
    from ..mechanisms import ExponentialMechanism

    cats = ["a", "b", "c"]

    def counts(data, cands):
        items = list(data)
        return np.array([items.count(c) for c in cands], dtype=float)

    mech = ExponentialMechanism(cats, counts, 0.5, EPS)  # true sensitivity is 1
    pairs = neighbour_pairs_from_brute(cats, 4, "substitution")
    case = mechanism_case("exponential-half-sensitivity", "", mech, pairs)
    case.description = "exponential mechanism (mode of 3 categories) with sensitivity 1/2"
    return case


def stable_mode_zero_threshold() -> AuditCase:
    # Stable release (PTR notes §15.1) must pass only if d(x) + Lap(1/ε) > ln(1/δ)/ε;
    # with threshold 0 an unstable mode (d = 0) is released half the time.
    from ..mechanisms.stability import Mode

    cats = ["a", "b", "c"]
    mode = Mode(cats)

    def law(d):
        dist = mode.distance_to_instability(d)
        p = 1 - 0.5 * math.exp(-EPS * dist)  # P(dist + Lap(1/ε) > 0)
        zero = lambda y: np.zeros_like(np.asarray(y, dtype=float))  # noqa: E731
        return OutputDistribution(pdf=zero, cdf=zero, atoms={mode.value(d): p, None: 1 - p})

    pairs = neighbour_pairs_from_brute(cats, 4, "substitution")
    return AuditCase(
        "stable-zero-threshold",
        "stable release of the mode with threshold 0 instead of ln(1/δ)/ε",
        ApproxDP(EPS, 1e-3),
        pairs,
        lambda d: atoms_sampler(law(d).atoms),
        law,
    )


@dataclass
class Broken:
    build: Callable[[], AuditCase]
    flagged_by: frozenset  # which checks must flag it


E, M = "exact", "empirical"
BROKEN: dict[str, Broken] = {
    "half-noise-scale": Broken(half_scale_laplace, frozenset({E, M})),
    "smooth-beta-too-large": Broken(smooth_beta_too_large, frozenset({E, M})),
    "local-for-smooth": Broken(ls_for_ss, frozenset({E, M})),
    "triangles-local-for-smooth": Broken(triangles_ls_for_ss, frozenset({E, M})),
    "ptr-integer-threshold": Broken(ptr_integer_threshold, frozenset({E})),
    "ptr-noiseless-test": Broken(ptr_noiseless_test, frozenset({E, M})),
    "clamping-skipped": Broken(clamping_skipped, frozenset({E, M})),
    "add-remove-sensitivity": Broken(add_remove_under_substitution, frozenset({E, M})),
    "student-t-gamma-too-large": Broken(student_t_gamma_too_large, frozenset({E, M})),
    "polyplace-shape-plus-one": Broken(polyplace_shape_plus_one, frozenset({E})),
    "gaussian-classic-eps10": Broken(lambda: gaussian_classic(10.0, 1e-5), frozenset({E})),
    "exponential-half-sensitivity": Broken(exponential_half_sensitivity, frozenset({E, M})),
    "stable-zero-threshold": Broken(stable_mode_zero_threshold, frozenset({E, M})),
}


