"""The noise families: densities, CDFs, quantiles, variances and samplers.

References are independent of the code under test: scipy.stats where it has
the law, the defining integrals (adaptive quadrature, split at the branch
points) where it does not, and FORMULAS.md §2 written out afresh for PolyPlace.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

from instancedp.noise import (
    ArsinhNormal,
    Gaussian,
    GeneralizedCauchy,
    Laplace,
    LaplaceLogNormal,
    NoiseDistribution,
    PolyPlace,
    StudentT,
    UniformLogNormal,
)
from instancedp.random import simulation

FAMILY_CASES = [
    Laplace(1.3),
    Gaussian(0.7),
    GeneralizedCauchy(4.5, 1.2),
    GeneralizedCauchy(2.0),
    GeneralizedCauchy(1.2, 0.5),
    StudentT(3.5, 0.8),
    StudentT(1.0),
    StudentT(0.6, 2.0),
    PolyPlace(3.0, 4.0),
    PolyPlace(1.0, 1.2),
    PolyPlace(1000.0, 1000.0),
    LaplaceLogNormal(0.5, 1.1),
    LaplaceLogNormal(1.5),
    UniformLogNormal(math.sqrt(2.0), 0.9),
    UniformLogNormal(0.5),
    ArsinhNormal(0.8, 1.2),
    ArsinhNormal(2.0),
]
IDS = [repr(d) for d in FAMILY_CASES]


def _split_quad(f, points, tol=1e-13):
    """∫_ℝ f, split at the branch points (adaptive Gauss–Kronrod on each piece)."""
    edges = [-np.inf, *sorted(set(points)), np.inf]
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        if a < b:
            total += integrate.quad(f, a, b, limit=500, epsabs=tol, epsrel=1e-12)[0]
    return total


def _pdf(d):
    return lambda x: float(d.pdf(x))


def _points(d):
    return [*d.kinks, 0.0]


@pytest.mark.parametrize("d", FAMILY_CASES, ids=IDS)
def test_density_integrates_to_one(d):
    assert _split_quad(_pdf(d), _points(d)) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("d", FAMILY_CASES, ids=IDS)
def test_variance_matches_quadrature(d):
    v = d.var()
    if math.isfinite(v):
        second = _split_quad(lambda x: x * x * float(d.pdf(x)), _points(d))
        assert second == pytest.approx(v, rel=1e-9)
        assert d.std() == pytest.approx(math.sqrt(v), rel=1e-15)
    else:
        # Infinite variance: the truncated second moment keeps growing.
        tail = integrate.quad(lambda x: x * x * float(d.pdf(x)), 1e6 * d.scale, 1e7 * d.scale)
        assert tail[0] > 1e-3 * d.scale**2
        assert d.std() == math.inf


@pytest.mark.parametrize("d", FAMILY_CASES, ids=IDS)
def test_cdf_is_integral_of_pdf(d):
    xs = np.array([-60.0, -3.0, -0.4, -0.01, 0.0, 0.2, 2.0, 45.0]) * d.scale
    for x in xs:
        pts = [p for p in _points(d) if p < x]
        if x < 0:
            edges = [-np.inf, *sorted(set(pts)), x]
            ref = sum(
                integrate.quad(_pdf(d), a, b, limit=500, epsabs=1e-14)[0]
                for a, b in zip(edges[:-1], edges[1:], strict=True)
                if a < b
            )
            assert float(d.cdf(x)) == pytest.approx(ref, rel=1e-8, abs=1e-13)
        else:
            upper = [p for p in _points(d) if p > x]
            edges = [x, *sorted(set(upper)), np.inf]
            ref = sum(
                integrate.quad(_pdf(d), a, b, limit=500, epsabs=1e-14)[0]
                for a, b in zip(edges[:-1], edges[1:], strict=True)
                if a < b
            )
            assert float(d.sf(x)) == pytest.approx(ref, rel=1e-8, abs=1e-13)


@pytest.mark.parametrize("d", FAMILY_CASES, ids=IDS)
def test_ppf_inverts_cdf_including_far_tails(d):
    q = np.array([1e-200, 1e-30, 1e-8, 0.01, 0.25, 0.5 - 1e-7, 0.5, 0.5 + 1e-7, 0.9, 1 - 1e-12])
    x = d.ppf(q)
    finite = np.isfinite(x)  # quantiles beyond 1.8e308 are ±inf, correctly
    back = d.cdf(x[finite])
    rel = np.abs(back - q[finite]) / np.minimum(q[finite], 1 - q[finite])
    assert np.all(rel < 1e-9), (q[finite], rel)
    assert np.all(np.diff(x) >= 0)
    assert d.ppf(0.0) == -np.inf and d.ppf(1.0) == np.inf
    assert np.isnan(d.ppf(1.5)) and np.isnan(d.ppf(-0.1))


@pytest.mark.parametrize("d", FAMILY_CASES, ids=IDS)
def test_symmetry_and_scale_law(d):
    x = np.array([-7.0, -1.0, -0.1, 0.3, 2.5, 1e4]) * d.scale
    np.testing.assert_allclose(d.logpdf(x), d.logpdf(-x), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(d.cdf(x) + d.cdf(-x), 1.0, rtol=0, atol=1e-15)
    e = d.with_scale(3.0 * d.scale)
    assert type(e) is type(d) and e.family == d.family
    np.testing.assert_allclose(
        e.logpdf(3.0 * x), d.logpdf(x) - math.log(3.0), rtol=1e-12, atol=1e-12
    )
    assert e.var() == pytest.approx(9.0 * d.var(), rel=1e-12) or d.var() == math.inf
    assert repr(d).startswith(type(d).__name__ + "(")
    assert set(d.parameters()) >= ({"sigma"} if isinstance(d, Gaussian) else {"scale"})


# ------------------------------------------------------------ independent references
def test_laplace_gaussian_t_cauchy_against_scipy():
    x = np.linspace(-30, 30, 601)
    q = np.linspace(0.001, 0.999, 99)
    pairs = [
        (Laplace(1.7), stats.laplace(scale=1.7)),
        (Gaussian(2.2), stats.norm(scale=2.2)),
        (StudentT(3.3, 0.6), stats.t(3.3, scale=0.6)),
        (StudentT(0.7), stats.t(0.7)),
        (GeneralizedCauchy(2.0, 1.5), stats.cauchy(scale=1.5)),
    ]
    for ours, ref in pairs:
        np.testing.assert_allclose(ours.logpdf(x), ref.logpdf(x), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ours.cdf(x), ref.cdf(x), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(ours.ppf(q), ref.ppf(q), rtol=1e-9, atol=1e-12)
        assert ours.var() == pytest.approx(ref.var(), rel=1e-12) or not np.isfinite(ref.var())


def test_generalized_cauchy_density_is_normalised_power_law():
    for c, s in [(1.5, 1.0), (3.0, 2.0), (6.0, 0.5)]:
        raw = lambda x, c=c, s=s: 1.0 / (1.0 + abs(x / s) ** c)  # noqa: E731
        z = 2 * integrate.quad(raw, 0, np.inf, limit=500, epsabs=1e-14)[0]
        d = GeneralizedCauchy(c, s)
        for x in [0.0, 0.3, 1.0, 7.0, 1e3]:
            # (quad on the slowly decaying c = 1.5 tail is good to ~1e-10 only)
            assert float(d.pdf(x)) == pytest.approx(raw(x) / z, rel=1e-8)
    # Closed-form variance from FORMULAS.md §2: 1/(2cos(2π/c)+1).
    for c in [3.5, 4.8, 10.0]:
        assert GeneralizedCauchy(c).var() == pytest.approx(
            1.0 / (2 * math.cos(2 * math.pi / c) + 1), rel=1e-13
        )


def _polyplace_pdf_formulas(x, s, a):
    """FORMULAS.md §2, written with plain powers (independent of polyplace.py)."""
    n = a / (2 * s * (2 * ((a - 1) / a) ** a + a - 1))
    u = abs(x) / s
    if u < 1 / a:
        return n * (a - 1) * (1 - u) ** (a - 1)
    return n * (a + 1) * (1 - 1 / a**2) ** a * (1 + u) ** (-a - 1)


def _lemma13(s, a):
    """001 Lemma 13 as restored in FORMULAS.md §2, verbatim (no cancellation)."""
    num = (19 * a**2 + 5) * (1 - 1 / a**2) ** a + (a - 2) * (a - 1) ** 2 * (1 + 1 / a) ** a
    den = (2 * ((a - 1) / a) ** a + a - 1) * (a**4 - 5 * a**2 + 4)
    return 2 * s**2 * (1 + 1 / a) ** (-a) * num / den


@pytest.mark.parametrize("a", [1.3, 2.5, 3.0, 5.0, 10.0, 30.0, 200.0])
def test_polyplace_density_and_lemma13(a):
    d = PolyPlace(1.7, a)
    for x in [0.0, 0.1, 1.7 / a * 0.999, 1.7 / a, 1.7 / a * 1.001, 3.0, 40.0, -2.0]:
        assert float(d.pdf(x)) == pytest.approx(_polyplace_pdf_formulas(x, 1.7, a), rel=1e-11)
    # Continuous at the branch point s/α.
    b = 1.7 / a
    assert float(d.pdf(b * (1 - 1e-12))) == pytest.approx(float(d.pdf(b)), rel=1e-9)
    if a > 2:
        assert d.var() == pytest.approx(_lemma13(1.7, a), rel=1e-12)
        second = _split_quad(lambda x: x * x * _polyplace_pdf_formulas(x, 1.7, a), [-b, 0, b])
        assert d.var() == pytest.approx(second, rel=1e-9)
    else:
        assert d.var() == math.inf


def test_polyplace_tends_to_laplace_as_gamma_to_zero():
    """001 Lemma 15: PolyPlace(SS/γ, ε/γ) → Lap(SS/ε); variance ratio to 2SS²/ε² → 1."""
    for eps in [0.5, 1.0, 4.0]:
        gaps = []
        for gamma in [1e-2 * eps, 1e-3 * eps, 1e-4 * eps, 1e-5 * eps]:
            d = PolyPlace(1.0 / gamma, eps / gamma)
            ratio = d.var() / (2.0 / eps**2)
            gaps.append(ratio - 1.0)
            # The gap is first order in γ/ε (≈ 3.25γ/ε, measured), so it vanishes.
            assert 0 < ratio - 1.0 < 3.5 * gamma / eps
            x = np.linspace(-20 / eps, 20 / eps, 81)
            cdf_gap = np.max(np.abs(d.cdf(x) - stats.laplace(scale=1 / eps).cdf(x)))
            assert cdf_gap < 2 * gamma / eps
        assert all(b < a for a, b in zip(gaps[:-1], gaps[1:], strict=True))


def _lln_pdf_direct(z, sigma):
    """∫ φ(y)·½exp(−|z|e^{−σy})·e^{−σy} dy: the density of X·e^{σY}, by quadrature."""

    def f(y):
        return stats.norm.pdf(y) * 0.5 * math.exp(-abs(z) * math.exp(-sigma * y) - sigma * y)

    return integrate.quad(f, -40, 40, limit=500, epsabs=0, epsrel=1e-12, points=[0.0])[0]


def _uln_pdf_direct(z, sigma):
    """∫ φ(y)·½·1{|z|e^{−σy} ≤ 1}·e^{−σy} dy."""
    lo = math.log(abs(z)) / sigma if z != 0 else -40.0
    return integrate.quad(
        lambda y: stats.norm.pdf(y) * 0.5 * math.exp(-sigma * y), lo, 40, epsabs=0, epsrel=1e-12
    )[0]


@pytest.mark.parametrize("sigma", [0.1, 0.5, 1.5, 2.5])
def test_log_normal_mixtures_against_defining_integrals(sigma):
    lln, uln = LaplaceLogNormal(sigma), UniformLogNormal(sigma)
    for z in [0.0, 1e-6, 0.05, 0.7, 3.0, 30.0, 400.0]:
        ref = _lln_pdf_direct(z, sigma)
        if ref > 1e-250:
            assert float(lln.pdf(z)) == pytest.approx(ref, rel=1e-9)
        ref = _uln_pdf_direct(z, sigma)
        if ref > 1e-250:
            assert float(uln.pdf(z)) == pytest.approx(ref, rel=1e-9)


def test_arsinh_normal_is_sinh_of_normal():
    d = ArsinhNormal(1.3, 2.0)
    y = np.linspace(-5, 5, 41)
    z = 2.0 * np.sinh(1.3 * y) / 1.3
    np.testing.assert_allclose(d.cdf(z), stats.norm.cdf(y), rtol=1e-12, atol=1e-15)
    # Change of variables: p(z) = φ(y)/(dz/dy), dz/dy = 2cosh(1.3y).
    np.testing.assert_allclose(
        d.pdf(z), stats.norm.pdf(y) / (2.0 * np.cosh(1.3 * y)), rtol=1e-12, atol=0
    )


# ------------------------------------------------------------ samplers (KS tests)
KS_N = 20_000
# Each KS test fails a correct sampler with probability KS_ALPHA (for a seed
# drawn at random); the seeds are fixed, so the suite is deterministic.  With
# 2·17 + 4 KS tests in this file the family-wise false-failure rate is ≤ 0.38%.
KS_ALPHA = 1e-4


@pytest.mark.parametrize("i", range(len(FAMILY_CASES)), ids=IDS)
def test_fast_sampler_ks(i):
    d = FAMILY_CASES[i]
    x = d.sample(KS_N, simulation(1000 + i))
    assert x.shape == (KS_N,)
    assert stats.kstest(x, d.cdf).pvalue > KS_ALPHA
    assert isinstance(d.sample(None, simulation(1)), float)


@pytest.mark.parametrize("i", range(len(FAMILY_CASES)), ids=IDS)
def test_inverse_cdf_sampler_ks(i):
    """The base class's inversion path (ppf of uniforms) against the own cdf."""
    d = FAMILY_CASES[i]
    x = NoiseDistribution.sample(d, KS_N // 2, simulation(2000 + i))
    assert stats.kstest(x, d.cdf).pvalue > KS_ALPHA


@pytest.mark.parametrize(
    "d", [GeneralizedCauchy(1.02), GeneralizedCauchy(400.0), StudentT(0.02), StudentT(0.3, 2.0)]
)
def test_extreme_shape_samplers_ks(d):
    """Tiny gamma shapes (1/c, 1−1/c, d/2) would underflow to 0 without log-space draws."""
    x = d.sample(KS_N, simulation(31))
    assert np.all(np.isfinite(x) | (np.abs(x) == np.inf))
    assert np.mean(x == 0.0) < 1e-3
    # Compare in probability space: kstest on cdf values handles the huge magnitudes.
    assert stats.kstest(d.cdf(x), "uniform").pvalue > KS_ALPHA


def test_ks_detects_a_wrong_sampler():
    """Power check: a 10% scale error is caught (so the KS tests above can fail)."""
    d = PolyPlace(3.0, 4.0)
    x = d.with_scale(3.3).sample(KS_N, simulation(7))
    assert stats.kstest(x, d.cdf).pvalue < KS_ALPHA


# ------------------------------------------------------------ properties
_family_strategy = st.one_of(
    st.builds(Laplace, st.floats(0.01, 100)),
    st.builds(GeneralizedCauchy, st.floats(1.05, 12), st.floats(0.01, 100)),
    st.builds(StudentT, st.floats(0.2, 60), st.floats(0.01, 100)),
    st.builds(PolyPlace, st.floats(0.01, 100), st.floats(1.01, 5000)),
    st.builds(LaplaceLogNormal, st.floats(0.05, 3), st.floats(0.01, 100)),
    st.builds(UniformLogNormal, st.floats(0.05, 3), st.floats(0.01, 100)),
    st.builds(ArsinhNormal, st.floats(0.05, 3), st.floats(0.01, 100)),
)


@given(d=_family_strategy, q=st.floats(1e-12, 1 - 1e-12))
def test_property_ppf_cdf_round_trip(d, q):
    x = float(d.ppf(q))
    assert float(d.cdf(x)) == pytest.approx(q, rel=1e-8, abs=1e-15)
    # 1 − q2 is exact for q2 = fl(1 − q) ≥ ½ (Sterbenz), so compare tail masses.
    q2 = 1.0 - q
    assert float(d.sf(d.ppf(q2))) == pytest.approx(1.0 - q2, rel=1e-8, abs=1e-15)


@given(d=_family_strategy, x=st.floats(-1e6, 1e6), h=st.floats(1e-3, 10))
def test_property_cdf_monotone_and_density_positive(d, x, h):
    assert float(d.cdf(x)) <= float(d.cdf(x + h))
    assert np.isfinite(d.logpdf(x))


# ------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "make, name",
    [
        (lambda v: Laplace(v), "scale"),
        (lambda v: Gaussian(v), "sigma"),
        (lambda v: GeneralizedCauchy(4.0, v), "scale"),
        (lambda v: StudentT(3.0, v), "scale"),
        (lambda v: StudentT(v), "df"),
        (lambda v: PolyPlace(v, 3.0), "scale"),
        (lambda v: LaplaceLogNormal(v), "sigma"),
        (lambda v: LaplaceLogNormal(1.0, v), "scale"),
        (lambda v: UniformLogNormal(v), "sigma"),
        (lambda v: ArsinhNormal(1.0, v), "scale"),
    ],
)
@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, "x"])
def test_nonpositive_or_nonfinite_parameters_rejected(make, name, bad):
    with pytest.raises(ValueError, match=name) as info:
        make(bad)
    assert "> 0" in str(info.value)


@pytest.mark.parametrize("bad", [1.0, 0.5, -3.0, math.nan, math.inf])
def test_shape_range_rejected(bad):
    with pytest.raises(ValueError, match=r"shape must be in \(1, inf\)"):
        PolyPlace(1.0, bad)
    with pytest.raises(ValueError, match=r"power must be in \(1, inf\)"):
        GeneralizedCauchy(bad)
