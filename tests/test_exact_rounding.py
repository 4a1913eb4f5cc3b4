"""instancedp.noise.exact returns the correctly rounded value + S·Z — checked by an oracle.

The random source here is a fixed byte stream, so the lazily drawn uniform U
(and, for the product families, V and W) is known to 1024+ bits.  The oracle
recomputes, independently of the arb code, with mpmath at 1300 bits:

* CDF families: the returned float y must satisfy
  F((lo(y) − value)/S) ≤ U < F((hi(y) − value)/S), lo/hi the exact midpoints to
  the neighbouring doubles and F written here from the closed forms of
  FORMULAS.md §2 and the families' references;
* product families: Z = ±|X|·e^{σY} is rebuilt from the same digits and
  value + S·Z must lie in y's rounding cell.

The mpmath CDFs themselves are checked against quadrature of the families'
densities (``test_oracle_cdfs_match_quadrature``).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate

from instancedp.noise import (
    ArsinhNormal,
    Gaussian,
    GeneralizedCauchy,
    Laplace,
    LaplaceLogNormal,
    PolyPlace,
    StudentT,
    UniformLogNormal,
    exact,
)
from instancedp.random import RandomSource

PREC = 1300
STREAM_BYTES = 16 * 80  # 80 chunks of 64 bits per stream: far more than ever used


class ByteStream(RandomSource):
    """A RandomSource reading a fixed byte string (never secure)."""

    secure = False

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def random_bytes(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        assert len(out) == n, "stream exhausted"
        self.pos += n
        return out

    @property
    def generator(self) -> np.random.Generator:  # pragma: no cover - not used
        raise NotImplementedError


def _chunks_to_mpf(chunks: list[int]) -> mp.mpf:
    acc = 0
    for c in chunks:
        acc = (acc << 64) | c
    return mp.mpf(acc) / mp.mpf(2) ** (64 * len(chunks))


def _chunks(data: bytes, start: int, stride: int, count: int) -> list[int]:
    return [
        int.from_bytes(data[start + stride * i : start + stride * i + 8], "little")
        for i in range(count)
    ]


# --- independent mpmath CDFs (unit scale) -------------------------------------------------


def _mp_cdf(noise, z: mp.mpf) -> mp.mpf:
    if z == 0:
        return mp.mpf(1) / 2
    t = abs(z)
    if isinstance(noise, Laplace):
        sf = mp.exp(-t) / 2
    elif isinstance(noise, Gaussian):
        sf = mp.erfc(t / mp.sqrt(2)) / 2
    elif isinstance(noise, PolyPlace):
        a = mp.mpf(noise.shape)
        n1 = a / (2 * (2 * ((a - 1) / a) ** a + a - 1))
        if t < 1 / a:  # FORMULAS.md §2: mass of [0, u] = N(α−1)/α·(1 − (1−u)^α)
            sf = mp.mpf(1) / 2 - n1 * (a - 1) / a * (1 - (1 - t) ** a)
        else:  # ∫_u^∞ N(α+1)(1−1/α²)^α(1+x)^(−α−1) dx
            sf = n1 * (a + 1) / a * (1 - 1 / a**2) ** a * (1 + t) ** (-a)
    elif isinstance(noise, StudentT):
        d = mp.mpf(noise.df)
        sf = mp.betainc(d / 2, mp.mpf(1) / 2, 0, d / (d + t * t), regularized=True) / 2
    elif isinstance(noise, GeneralizedCauchy):
        c = mp.mpf(noise.power)
        sf = mp.betainc(1 - 1 / c, 1 / c, 0, 1 / (1 + t**c), regularized=True) / 2
    elif isinstance(noise, ArsinhNormal):
        s = mp.mpf(noise.sigma)
        sf = mp.erfc(mp.asinh(s * t) / s / mp.sqrt(2)) / 2
    else:  # pragma: no cover
        raise TypeError(noise)
    return sf if z < 0 else 1 - sf


def _cell(y: float) -> tuple[mp.mpf, mp.mpf]:
    """Exact rounding cell [lo, hi) of the double y (±inf: beyond the overflow threshold)."""
    ovf = mp.mpf(2) ** 1024 - mp.mpf(2) ** 970
    if math.isinf(y):
        return (ovf, mp.inf) if y > 0 else (-mp.inf, -ovf)
    down, up = math.nextafter(y, -math.inf), math.nextafter(y, math.inf)
    lo = -ovf if math.isinf(down) else (mp.mpf(down) + mp.mpf(y)) / 2
    hi = ovf if math.isinf(up) else (mp.mpf(up) + mp.mpf(y)) / 2
    return lo, hi


CDF_FAMILIES = [
    Laplace(1.0),
    Laplace(0.3),
    Gaussian(2.0),
    PolyPlace(1.0, 5.0),
    PolyPlace(3.0, 1.5),
    StudentT(3.0),
    StudentT(1.3, 2.0),
    GeneralizedCauchy(4.0),
    GeneralizedCauchy(1.5, 0.5),
    ArsinhNormal(0.7),
]

# (value, scale): ordinary, cancellation near 0, scale far below ulp(value),
# subnormal outputs, an int value beyond 2^53 (used exactly), overflow to ±inf.
CASES = [
    (0.0, 1.0),
    (1.0, 1.0),
    (-3.25, 0.01),
    (1.0, 1e-17),
    (0.0, 1e-318),
    (2**60 + 200, 10.0),
    (1e308, 1e308),
]


def _seeded_bytes(seed: int, n: int) -> bytes:
    return np.random.default_rng(seed).bytes(n)


@pytest.mark.parametrize("noise", CDF_FAMILIES, ids=repr)
def test_cdf_route_is_correctly_rounded(noise):
    mp.mp.prec = PREC
    seed = 0
    for value, scale in CASES:
        for _ in range(6):
            seed += 1
            data = _seeded_bytes(seed, STREAM_BYTES)
            y = exact.add_noise(value, scale, noise, size=None, rng=ByteStream(data))
            u = _chunks_to_mpf(_chunks(data, 0, 8, STREAM_BYTES // 8))
            s = mp.mpf(scale) * mp.mpf(noise.scale)
            lo, hi = _cell(y)
            f_lo = mp.mpf(0) if lo == -mp.inf else _mp_cdf(noise, (lo - value) / s)
            f_hi = mp.mpf(1) if hi == mp.inf else _mp_cdf(noise, (hi - value) / s)
            # U lies in [u, u + 2^-10240): both comparisons have a huge margin.
            assert f_lo <= u < f_hi, (value, scale, y)


PRODUCTS = [LaplaceLogNormal(0.5), LaplaceLogNormal(1.2, 3.0), UniformLogNormal(0.8)]


@pytest.mark.parametrize("noise", PRODUCTS, ids=repr)
def test_product_route_is_correctly_rounded(noise):
    mp.mp.prec = PREC
    seed = 1000
    for value, scale in CASES:
        for _ in range(6):
            seed += 1
            data = _seeded_bytes(seed, 1 + STREAM_BYTES)
            y = exact.add_noise(value, scale, noise, size=None, rng=ByteStream(data))
            # Stream layout: 1 sign byte, then V and W digits interleaved 8 bytes each.
            negative = data[0] & 1
            v = _chunks_to_mpf(_chunks(data, 1, 16, STREAM_BYTES // 16))
            w = _chunks_to_mpf(_chunks(data, 9, 16, STREAM_BYTES // 16))
            x = -mp.log(v) if isinstance(noise, LaplaceLogNormal) else v
            normal = mp.sqrt(2) * mp.erfinv(2 * w - 1)  # Φ⁻¹(w)
            z = x * mp.exp(mp.mpf(noise.sigma) * normal)
            if negative:
                z = -z
            true = value + mp.mpf(scale) * mp.mpf(noise.scale) * z
            lo, hi = _cell(y)
            assert lo <= true < hi, (value, scale, y)


@pytest.mark.parametrize("noise", [Laplace(1.0), StudentT(3.0), LaplaceLogNormal(0.5)], ids=repr)
@pytest.mark.parametrize("k", [-3, 0, 5])
def test_grid_route_rounds_noise_to_the_grid(noise, k):
    """grid=k: output = snap(value) + N·2^k with N the integer nearest S·Z/2^k."""
    mp.mp.prec = PREC
    value, scale = 10.3, 7.0
    snapped = round(value / 2.0**k) * 2.0**k
    for seed in range(2000, 2012):
        data = _seeded_bytes(seed, 1 + STREAM_BYTES)
        y = exact.add_noise(value, scale, noise, size=None, rng=ByteStream(data), grid=k)
        n = (y - snapped) / 2.0**k
        assert n == round(n)
        s = mp.mpf(scale) * mp.mpf(noise.scale)
        lo, hi = (mp.mpf(n) - 0.5) * 2**k, (mp.mpf(n) + 0.5) * 2**k
        if isinstance(noise, LaplaceLogNormal):
            negative = data[0] & 1
            v = _chunks_to_mpf(_chunks(data, 1, 16, STREAM_BYTES // 16))
            w = _chunks_to_mpf(_chunks(data, 9, 16, STREAM_BYTES // 16))
            z = -mp.log(v) * mp.exp(mp.mpf(noise.sigma) * mp.sqrt(2) * mp.erfinv(2 * w - 1))
            z = -z if negative else z
            assert lo <= s * z < hi
        else:
            u = _chunks_to_mpf(_chunks(data, 0, 8, STREAM_BYTES // 8))
            assert _mp_cdf(noise, lo / s) <= u < _mp_cdf(noise, hi / s)


@pytest.mark.parametrize("noise", CDF_FAMILIES, ids=repr)
def test_oracle_cdfs_match_quadrature(noise):
    """The oracle's closed-form CDFs agree with quadrature of the family's own density."""
    mp.mp.prec = 80
    unit = noise.with_scale(1.0)
    for z in (-7.5, -1.0, -0.15, 0.0, 0.05, 0.6, 2.0, 30.0):
        pts = sorted({k for k in unit.kinks if min(0.0, z) < k < max(0.0, z)})
        edges = [min(0.0, z), *pts, max(0.0, z)]
        mass = sum(
            integrate.quad(unit.pdf, a, b, epsabs=1e-13, epsrel=1e-12)[0]
            for a, b in zip(edges[:-1], edges[1:], strict=True)
        )
        expect = 0.5 + math.copysign(mass, z)
        assert float(_mp_cdf(unit, mp.mpf(z))) == pytest.approx(expect, abs=1e-10)


def test_arb_cdf_matches_oracle():
    """exact's arb CDFs (the decision procedure) agree with the mpmath oracle to 1e-30."""
    from flint import arb, ctx

    mp.mp.prec = 200
    old = ctx.prec
    ctx.prec = 200
    try:
        for noise in CDF_FAMILIES:
            name, params, _ = exact._family(noise)
            for z in (-1e6, -7.5, -0.2, -1e-30, 0.0, 1e-9, 0.2, 0.19999, 3.0, 1e12):
                got = exact._cdf(exact._SF[name], params, arb(z))
                want = _mp_cdf(noise.with_scale(1.0), mp.mpf(z))
                assert got.contains(arb(mp.nstr(want, 60))) or abs(
                    float(got.mid()) - float(want)
                ) <= 1e-30 * max(1e-300, abs(float(want))), (noise, z)
    finally:
        ctx.prec = old


@given(st.floats(allow_nan=False), st.floats(allow_nan=False))
def test_float_keys_order_doubles_and_round_trip(a, b):
    """The search space: integer keys in the order of the doubles, neighbours at ±1."""
    ka, kb = exact._float_key(a), exact._float_key(b)
    assert (ka < kb) == (a < b) and (ka == kb) == (a == b)
    assert exact._key_float(ka) == a
    if math.isfinite(a):
        assert exact._key_float(ka + 1) == math.nextafter(a, math.inf)
        assert exact._key_float(ka - 1) == math.nextafter(a, -math.inf)


@pytest.mark.parametrize(
    ("low", "high"),
    [(0.0, 1.0), (2.0, 5.0), (-1e-300, 3e-310), (1.0, 1.0 + 2**-50), (-1e308, 1e308), (0.1, 0.7)],
)
def test_uniform_is_correctly_rounded(low, high):
    """exact.uniform: the returned double's cell holds low + U·(high − low), exactly."""
    mp.mp.prec = 2 * PREC
    for seed in range(3000, 3012):
        data = _seeded_bytes(seed, STREAM_BYTES)
        y = exact.uniform(low, high, rng=ByteStream(data))
        u = _chunks_to_mpf(_chunks(data, 0, 8, STREAM_BYTES // 8))
        true = mp.mpf(low) + u * (mp.mpf(high) - mp.mpf(low))
        lo, hi = _cell(y)
        assert lo <= true < hi and low <= y <= high, (low, high, y)
