"""Exact privacy checks (instancedp.audit.profile) against closed forms.

Every expected value is derived independently of the code under test: closed
forms for δ(ε) of Laplace and Gaussian pairs (Balle & Wang 2018 Thm. 8),
Rényi divergences of Laplace and Gaussian pairs (Mironov 2017, Table II),
exact polynomial integrals, and scipy's QUADPACK on the positive part.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate as sci_integrate
from scipy import stats

from instancedp.audit import (
    check_distributions,
    check_mechanism,
    max_privacy_loss,
    privacy_profile,
    renyi_divergence,
)
from instancedp.audit.profile import discrete_max_loss, discrete_profile, integrate
from instancedp.mechanisms.base import OutputDistribution
from instancedp.noise.base import NoiseDistribution
from instancedp.privacy import ZCDP, ApproxDP, PureDP


# Densities written out here (scipy's laplace.logpdf underflows past |y| ≈ 745).
def lap_logpdf(c: float, b: float):
    return lambda y: -np.abs(np.asarray(y, float) - c) / b - math.log(2 * b)


def lap_pdf(c: float, b: float):
    return lambda y: np.exp(lap_logpdf(c, b)(y))


def lap_cdf(c: float, b: float):
    def cdf(y):
        z = (np.asarray(y, float) - c) / b
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1 - 0.5 * np.exp(-np.maximum(z, 0)))

    return cdf


def lap_profile(c1, b1, c2, b2, eps, **kw):
    return privacy_profile(
        lap_pdf(c1, b1),
        lap_pdf(c2, b2),
        eps,
        kinks=(c1, c2),
        cdfs=(lap_cdf(c1, b1), lap_cdf(c2, b2)),
        logdensities=(lap_logpdf(c1, b1), lap_logpdf(c2, b2)),
        **kw,
    )


class _Lap(NoiseDistribution):
    """A minimal unit Laplace for building OutputDistribution objects."""

    family = "test-laplace"

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def logpdf(self, x):
        return -np.abs(np.asarray(x, float)) / self.scale - math.log(2 * self.scale)

    def cdf(self, x):
        return lap_cdf(0.0, self.scale)(x)

    def ppf(self, q):
        q = np.asarray(q, float)
        return -self.scale * np.sign(q - 0.5) * np.log1p(-2 * np.abs(q - 0.5))

    def var(self):
        return 2 * self.scale**2

    def parameters(self):
        return {"scale": self.scale}

    def with_scale(self, scale):
        return _Lap(scale)


# --------------------------------------------------------------------------
def test_gauss_kronrod_exact_on_polynomials():
    # K15 integrates polynomials of degree ≤ 22 exactly: ∫_0^1 y^d = 1/(d+1).
    for d in range(23):
        v, _ = integrate(lambda y, d=d: y**d, [0.0, 1.0], abs_tol=1.0)
        assert v == pytest.approx(1 / (d + 1), abs=1e-14)


def test_integrate_adapts_to_a_peak():
    # ∫ 1/(1e-6 + y²) on [-1, 1] = 2 atan(1/√1e-6)/√1e-6.
    exact = 2 * math.atan(1 / 1e-3) / 1e-3
    v, e = integrate(lambda y: 1 / (1e-6 + y**2), [-1.0, 0.0, 1.0], rel_tol=1e-12)
    assert abs(v - exact) <= max(e, 1e-9 * exact)


@settings(max_examples=40)
@given(
    b=st.floats(0.1, 10.0),
    shift=st.floats(0.0, 5.0),
    eps=st.floats(0.0, 3.0),
)
def test_laplace_shift_profile_closed_form(b, shift, eps):
    # Lap(0, b) vs Lap(Δ, b): δ(ε) = max(0, 1 − exp((ε − Δ/b)/2)).
    exact = max(0.0, -math.expm1((eps - shift / b) / 2))
    p = lap_profile(0.0, b, shift, b, eps)
    assert abs(p.delta - exact) <= p.error_bound + 1e-14
    assert p.error_bound < 1e-12
    assert p.rigorous_tails


@settings(max_examples=30)
@given(sigma=st.floats(0.3, 20.0), eps=st.floats(0.01, 4.0))
def test_gaussian_profile_balle_wang(sigma, eps):
    # N(0, σ²) vs N(1, σ²): δ(ε) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ).
    exact = stats.norm.cdf(0.5 / sigma - eps * sigma) - math.exp(eps) * stats.norm.cdf(
        -0.5 / sigma - eps * sigma
    )
    P, Q = stats.norm(0, sigma), stats.norm(1, sigma)
    p = privacy_profile(P.pdf, Q.pdf, eps, cdfs=(P.cdf, Q.cdf), logdensities=(P.logpdf, Q.logpdf))
    assert abs(p.delta - exact) <= p.error_bound + 1e-13 + 1e-9 * exact


def test_canard_olivier_gaussian_delta():
    # FORMULAS §3: σ = 4.390 at ε = 1 has true δ ≈ 4.4e−7 (well under 1e−5).
    P, Q = stats.norm(0, 4.390), stats.norm(1, 4.390)
    p = privacy_profile(P.pdf, Q.pdf, 1.0, cdfs=(P.cdf, Q.cdf), logdensities=(P.logpdf, Q.logpdf))
    assert 4.3e-7 < p.delta < 4.5e-7


@pytest.mark.parametrize(
    "c1,b1,c2,b2,eps",
    [(0, 1, 0.5, 1.5, 0.3), (0, 2, 1, 1, 0.1), (-1, 0.5, 1, 0.7, 0.5), (0, 1, 0, 3, 0.2)],
)
def test_laplace_scale_mismatch_vs_quadpack(c1, b1, c2, b2, eps):
    # Reference: scipy's QUADPACK on the positive part over the whole line.
    def ref(a, b):
        f = lambda y: max(lap_pdf(*a)(y) - math.exp(eps) * lap_pdf(*b)(y), 0.0)  # noqa: E731
        pts = sorted({a[0], b[0]})
        return sum(
            sci_integrate.quad(f, lo, hi, limit=500, epsabs=1e-14, epsrel=1e-12)[0]
            for lo, hi in zip([-np.inf, *pts], [*pts, np.inf], strict=True)
        )

    expect = max(ref((c1, b1), (c2, b2)), ref((c2, b2), (c1, b1)))
    p = lap_profile(c1, b1, c2, b2, eps)
    assert abs(p.delta - expect) <= p.error_bound + 1e-10


def test_atoms_refusal_closed_form():
    # Same continuous shape, refusal masses 0.3 and 0.1: δ(ε) is
    # max((0.7 − e^ε·0.9)₊ + (0.3 − e^ε·0.1)₊, (0.9 − e^ε·0.7)₊ + (0.1 − e^ε·0.3)₊).
    for eps in (0.0, 0.2, 0.5, 1.0, 1.2):
        e = math.exp(eps)
        exact = max(
            max(0.7 - e * 0.9, 0) + max(0.3 - e * 0.1, 0),
            max(0.9 - e * 0.7, 0) + max(0.1 - e * 0.3, 0),
        )
        p = privacy_profile(
            lambda y: 0.7 * lap_pdf(0, 1)(y),
            lambda y: 0.9 * lap_pdf(0, 1)(y),
            eps,
            kinks=(0.0,),
            cdfs=(lambda y: 0.7 * lap_cdf(0, 1)(y), lambda y: 0.9 * lap_cdf(0, 1)(y)),
            atoms_x={None: 0.3},
            atoms_x_prime={None: 0.1},
        )
        assert abs(p.delta - exact) <= p.error_bound + 1e-14, eps


def test_output_distribution_objects_accepted():
    a = OutputDistribution.additive(0.0, 1.0, _Lap(), atoms={None: 0.2})
    b = OutputDistribution.additive(1.0, 1.0, _Lap(), atoms={None: 0.2})
    # Continuous parts are 0.8·Lap(0,1) and 0.8·Lap(1,1); atoms cancel.
    for eps in (0.0, 0.5):
        exact = 0.8 * max(0.0, -math.expm1((eps - 1) / 2)) + max(0.0, 0.2 - math.exp(eps) * 0.2)
        p = privacy_profile(a, b, eps)
        assert abs(p.delta - exact) <= p.error_bound + 1e-14


def test_cauchy_heavy_tails_profile():
    P, Q = stats.cauchy(0, 1), stats.cauchy(0.5, 1.3)

    def ref(p, q):
        f = lambda y: max(p.pdf(y) - math.exp(0.1) * q.pdf(y), 0.0)  # noqa: E731
        return sum(
            sci_integrate.quad(f, lo, hi, limit=1000, epsabs=1e-14)[0]
            for lo, hi in [(-np.inf, -100), (-100, 0), (0, 100), (100, np.inf)]
        )

    expect = max(ref(P, Q), ref(Q, P))
    p = privacy_profile(P.pdf, Q.pdf, 0.1, cdfs=(P.cdf, Q.cdf), logdensities=(P.logpdf, Q.logpdf))
    # QUADPACK's own error on the infinite tails is ~1e-10.
    assert abs(p.delta - expect) < 1e-9 + p.error_bound
    assert p.error_bound < 1e-10


# --------------------------------------------------------------------------
@settings(max_examples=25)
@given(b=st.floats(0.2, 5.0), shift=st.floats(0.0, 3.0))
def test_max_loss_laplace_shift(b, shift):
    m = max_privacy_loss(
        lap_pdf(0, b),
        lap_pdf(shift, b),
        kinks=(0, shift),
        logdensities=(lap_logpdf(0, b), lap_logpdf(shift, b)),
        cdfs=(lap_cdf(0, b), lap_cdf(shift, b)),
    )
    assert m.epsilon == pytest.approx(shift / b, rel=1e-9, abs=1e-12)


def test_max_loss_laplace_scale_change_tail_limit():
    # Lap(0, 1) vs Lap(0.3, 1.2): ln p − ln p' = −|y| + |y − 0.3|/1.2 + ln 1.2.
    # As y → −∞ it tends to −∞·(1 − 1/1.2) → unbounded: the tails must be seen.
    m = max_privacy_loss(
        lap_pdf(0, 1),
        lap_pdf(0.3, 1.2),
        kinks=(0, 0.3),
        logdensities=(lap_logpdf(0, 1), lap_logpdf(0.3, 1.2)),
        cdfs=(lap_cdf(0, 1), lap_cdf(0.3, 1.2)),
    )
    assert m.epsilon > 1000  # grows without bound; seen far beyond any ε


def test_max_loss_polyplace_like_bounded():
    # Student t(3) shifted and rescaled: dense brute-force grid as the reference.
    P, Q = stats.t(3, 0, 1), stats.t(3, 0.4, 1.1)
    y = np.concatenate([np.linspace(-60, 60, 1_200_001), np.geomspace(60, 1e12, 20001)])
    y = np.concatenate([-y, y])
    ref = float(np.max(np.abs(P.logpdf(y) - Q.logpdf(y))))
    m = max_privacy_loss(P.pdf, Q.pdf, cdfs=(P.cdf, Q.cdf), logdensities=(P.logpdf, Q.logpdf))
    assert m.epsilon == pytest.approx(ref, rel=1e-7)


def test_max_loss_atoms():
    a = OutputDistribution.additive(0.0, 1.0, _Lap(), atoms={None: 0.2})
    b = OutputDistribution.additive(0.0, 1.0, _Lap(), atoms={None: 0.1})
    m = max_privacy_loss(a, b)
    assert m.epsilon == pytest.approx(math.log(2), rel=1e-12)
    assert m.argmax is None
    c = OutputDistribution.additive(0.0, 1.0, _Lap())
    assert max_privacy_loss(a, c).epsilon == math.inf


def test_discrete_helpers():
    p = {"a": 0.6, "b": 0.4}
    q = {"a": 0.4, "b": 0.6}
    assert discrete_max_loss(p, q) == pytest.approx(math.log(1.5))
    assert discrete_profile(p, q, 0.0) == pytest.approx(0.2)
    assert discrete_profile(p, q, math.log(1.5)) == pytest.approx(0.0, abs=1e-15)
    assert discrete_max_loss(p, {"a": 1.0}) == math.inf


# --------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0, 20.0])
def test_renyi_gaussian_and_laplace_closed_forms(alpha):
    # Gaussian: D_α = αΔ²/(2σ²).
    P, Q = stats.norm(0, 2), stats.norm(1, 2)
    d, e = renyi_divergence(
        P.pdf, Q.pdf, alpha, cdfs=(P.cdf, Q.cdf), logdensities=(P.logpdf, Q.logpdf)
    )
    assert d == pytest.approx(alpha / 8, rel=1e-9)
    # Laplace (Mironov 2017, Table II), scale 1, shift 1:
    # D_α = ln(α/(2α−1) e^{α−1} + (α−1)/(2α−1) e^{−α}) / (α−1).
    exact = math.log(
        alpha / (2 * alpha - 1) * math.exp(alpha - 1)
        + (alpha - 1) / (2 * alpha - 1) * math.exp(-alpha)
    ) / (alpha - 1)
    d, e = renyi_divergence(
        lap_pdf(0, 1),
        lap_pdf(1, 1),
        alpha,
        kinks=(0, 1),
        cdfs=(lap_cdf(0, 1), lap_cdf(1, 1)),
        logdensities=(lap_logpdf(0, 1), lap_logpdf(1, 1)),
    )
    assert d == pytest.approx(exact, rel=1e-9)


# --------------------------------------------------------------------------
class _FakeLaplace:
    """Counting query + Laplace(scale); claims ε-DP with ε = 1/scale_claim."""

    def __init__(self, scale: float, claimed: float):
        self.scale = scale
        self.guarantee = PureDP(claimed)

    def output_distribution(self, data):
        return OutputDistribution.additive(float(sum(data)), self.scale, _Lap())


PAIRS = [((0, 0, 1), (0, 1, 1)), ((0, 0, 0), (1, 0, 0)), ((1, 1, 1), (1, 1, 0))]


def test_check_mechanism_pure_pass_and_fail():
    # The fourth pair has the same laws (centres 1 and 2) as the first.
    ok = check_mechanism(_FakeLaplace(1.0, 1.0), [*PAIRS, ((0, 1, 0), (1, 1, 0))])
    assert ok.passed is True and ok.measured == pytest.approx(1.0, rel=1e-9)
    assert ok.details["distinct"] == 3 and ok.pairs_checked == 4
    bad = check_mechanism(_FakeLaplace(0.5, 1.0), PAIRS)
    assert bad.passed is False and bad.measured == pytest.approx(2.0, rel=1e-9)


def test_check_mechanism_approx_and_zcdp():
    # Laplace(1) on a count: δ at ε = 0.5 is 1 − e^{−1/4}.
    m = _FakeLaplace(1.0, 1.0)
    d = 1 - math.exp(-0.25)
    assert check_mechanism(m, PAIRS, guarantee=ApproxDP(0.5, d * 1.0001)).passed is True
    assert check_mechanism(m, PAIRS, guarantee=ApproxDP(0.5, d * 0.999)).passed is False
    # Laplace(1), Δ = 1 is 1-DP ⇒ ½-zCDP; by Mironov's closed form D_α/α at
    # α = 1.5 is 0.342 > 0.25, so it is not 0.25-zCDP.
    assert check_mechanism(m, PAIRS, guarantee=ZCDP(0.5)).passed is True
    assert check_mechanism(m, PAIRS, guarantee=ZCDP(0.25)).passed is False


def test_check_mechanism_discrete():
    # Randomised response with p = 0.75 is ln 3-DP exactly.
    class RR:
        guarantee = PureDP(math.log(3))

        def output_probabilities(self, data):
            return {"yes": 0.75, "no": 0.25} if data[0] else {"yes": 0.25, "no": 0.75}

    res = check_mechanism(RR(), [((1,), (0,))])
    assert res.passed is True and res.measured == pytest.approx(math.log(3))
    assert check_mechanism(RR(), [((1,), (0,))], guarantee=PureDP(1.0)).passed is False


def test_check_distributions_reports_worst_pair():
    laws = [
        (OutputDistribution.additive(0, 1, _Lap()), OutputDistribution.additive(0.5, 1, _Lap())),
        (OutputDistribution.additive(0, 1, _Lap()), OutputDistribution.additive(1.5, 1, _Lap())),
    ]
    res = check_distributions(laws, PureDP(1.0))
    assert res.passed is False and res.worst_pair == 1
    assert res.measured == pytest.approx(1.5, rel=1e-9)


def test_validation():
    with pytest.raises(ValueError, match="epsilon"):
        privacy_profile(lap_pdf(0, 1), lap_pdf(1, 1), -1.0)
    with pytest.raises(ValueError, match="alpha"):
        renyi_divergence(lap_pdf(0, 1), lap_pdf(1, 1), 1.0)
    with pytest.raises(ValueError, match="neighbour_pairs"):
        check_mechanism(_FakeLaplace(1.0, 1.0), [])
    with pytest.raises(TypeError, match="output_distribution"):
        check_mechanism(object(), PAIRS, guarantee=PureDP(1.0))


def test_law_with_no_continuous_part():
    # x always refuses; x′ refuses half the time.  δ(ε) = max((1 − e^ε/2)₊, 1/2):
    # backwards, the continuous half of x′ has no counterpart under x.
    a = OutputDistribution.additive(0.0, 1.0, _Lap(), atoms={None: 1.0})
    b = OutputDistribution.additive(0.0, 1.0, _Lap(), atoms={None: 0.5})
    for eps in (0.0, 0.5, 2.0):
        p = privacy_profile(a, b, eps)
        expect = max(max(0.0, 1 - math.exp(eps) * 0.5), 0.5)
        assert abs(p.delta - expect) <= p.error_bound + 1e-14
    assert max_privacy_loss(a, b).epsilon == math.inf


def test_renyi_support_mismatch():
    # U(0, 1) vs U(0, 2): D_α(U1‖U2) = ln 2 for every α; D_α(U2‖U1) = ∞.
    u1, u2 = stats.uniform(0, 1), stats.uniform(0, 2)
    kw = {"kinks": (0.0, 1.0, 2.0)}
    d, _ = renyi_divergence(u1.pdf, u2.pdf, 3.0, cdfs=(u1.cdf, u2.cdf), **kw)
    assert d == pytest.approx(math.log(2), rel=1e-9)
    d, _ = renyi_divergence(u2.pdf, u1.pdf, 3.0, cdfs=(u2.cdf, u1.cdf), **kw)
    assert d == math.inf
