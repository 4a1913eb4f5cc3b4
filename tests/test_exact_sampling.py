"""Distribution, API and grid tests of instancedp.noise.exact.

Statistical tests use fixed seeds through ``instancedp.random.simulation`` and
a significance level of 1e-3: under a correct sampler a test would fail for
a fresh random seed with probability 1e-3 (with the fixed seed it is
deterministic).  Expected probabilities come from the families' own float
CDFs (or closed forms written here), never from the sampler.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from instancedp.mechanisms.base import add_noise as mechanism_add_noise
from instancedp.noise import (
    ArsinhNormal,
    Gaussian,
    GeneralizedCauchy,
    Laplace,
    LaplaceLogNormal,
    PolyPlace,
    StudentT,
    UniformLogNormal,
)
from instancedp.noise.exact import (
    SUPPORTED_FAMILIES,
    add_noise,
    grid_sensitivity,
    refinement_count,
    round_scale_up,
    scale_upper_bound,
    snap_to_grid,
    uniform,
    work_count,
)
from instancedp.random import SecureRandom, simulation

ALPHA = 1e-3  # per-test false-failure rate for a random seed

FAMILIES = [
    Laplace(1.0),
    Gaussian(1.0),
    GeneralizedCauchy(4.0),
    GeneralizedCauchy(1.5),
    StudentT(3.0),
    StudentT(1.0),
    LaplaceLogNormal(0.5),
    UniformLogNormal(0.8),
    ArsinhNormal(0.5),
    PolyPlace(1.0, 5.0),
    PolyPlace(2.0, 1.2),
]


def test_every_family_is_covered():
    assert {type(f) for f in FAMILIES} == set(SUPPORTED_FAMILIES)


@pytest.mark.parametrize("noise", FAMILIES, ids=repr)
def test_ks_against_family_cdf(noise):
    """Outputs (y − value)/scale follow the family's CDF (KS, n = 1500, α = 1e-3)."""
    value, scale = 2.5, 3.0
    y = add_noise(value, scale, noise, size=1500, rng=simulation(11))
    z = (y - value) / scale  # rounding of y is < 1e-15 relative: invisible to KS at n = 1500
    assert stats.kstest(z, noise.cdf).pvalue > ALPHA


def test_sizes_and_types():
    noise = Laplace(1.0)
    one = add_noise(0.0, 1.0, noise, size=None, rng=simulation(1))
    assert isinstance(one, float)
    arr = add_noise(0.0, 1.0, noise, size=4, rng=simulation(1))
    assert isinstance(arr, np.ndarray) and arr.shape == (4,) and arr.dtype == np.float64
    assert add_noise(0.0, 1.0, noise, size=0, rng=simulation(1)).shape == (0,)
    # The default size is 1 (an array), as documented.
    assert add_noise(0.0, 1.0, noise, rng=simulation(1)).shape == (1,)
    # Same seed, same output: the simulation path is reproducible.
    assert add_noise(0.0, 1.0, noise, size=None, rng=simulation(1)) == one


def test_default_source_is_the_os_csprng():
    y = add_noise(5.0, 1.0, Gaussian(1.0), size=None)
    assert math.isfinite(y)


def test_mechanism_add_noise_routes_secure_sources_here():
    """mechanisms.base.add_noise: a secure source gives exactly this module's output,
    at the scale raised to its 16-ulp upper bound (float-computed scales)."""

    class Replay(SecureRandom):
        def __init__(self, data: bytes) -> None:
            self.data, self.pos = data, 0

        def random_bytes(self, n: int) -> bytes:
            out = self.data[self.pos : self.pos + n]
            self.pos += n
            return out

    data = np.random.default_rng(3).bytes(4096)
    got = mechanism_add_noise(7.0, 2.0, StudentT(3.0), Replay(data))
    raised = 2.0
    for _ in range(16):
        raised = math.nextafter(raised, math.inf)
    want = add_noise(7.0, raised, StudentT(3.0), size=None, rng=Replay(data))
    assert got == want
    assert got != add_noise(7.0, 2.0, StudentT(3.0), size=None, rng=Replay(data))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"value": math.nan}, "value"),
        ({"value": math.inf}, "value"),
        ({"value": "x"}, "value"),
        ({"value": 2**1100}, "value"),
        ({"scale": 0.0}, "scale"),
        ({"scale": -1.0}, "scale"),
        ({"scale": math.nan}, "scale"),
        ({"scale": True}, "scale"),
        ({"noise": object()}, "noise"),
        ({"size": -1}, "size"),
        ({"size": 1.5}, "size"),
        ({"grid": 1.0}, "grid"),
        ({"grid": 2000}, "grid"),
        ({"grid": -1000, "scale": 1e300}, "grid"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, name):
    args = {"value": 0.0, "scale": 1.0, "noise": Laplace(1.0), "size": None}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        add_noise(**args, rng=simulation(0))


def test_numpy_generator_is_refused():
    with pytest.raises(TypeError, match="simulation"):
        add_noise(0.0, 1.0, Laplace(1.0), rng=np.random.default_rng(0))


def test_round_scale_up():
    assert round_scale_up(0.1) == 0.1  # floats are used as they are
    assert round_scale_up(3) == 3.0
    third = round_scale_up(Fraction(1, 3))
    assert Fraction(third) >= Fraction(1, 3)
    assert Fraction(math.nextafter(third, 0.0)) < Fraction(1, 3)
    big = 2**60 + 1  # not a double: rounded up, never down
    assert Fraction(round_scale_up(big)) > big
    with pytest.raises(ValueError, match="scale"):
        round_scale_up(Fraction(-1, 2))


def test_scale_upper_bound_covers_float_rounding_errors():
    """A scale computed with a few float operations can fall below the true real value;
    scale_upper_bound(·, 16) never does (true value from mpmath at 200 bits)."""
    import mpmath as mp

    mp.mp.prec = 200
    rng = np.random.default_rng(0)
    below = 0
    for _ in range(2000):
        d, eps, gamma = rng.uniform(2, 10), rng.uniform(0.1, 4), rng.uniform(0, 0.01)
        # Student's t scale per unit SS (FORMULAS.md §2), in floats and in mpmath.
        flt = (d + 1) / (2 * math.sqrt(d) * (eps - gamma * (d + 1)))
        true = (mp.mpf(d) + 1) / (2 * mp.sqrt(d) * (mp.mpf(eps) - mp.mpf(gamma) * (d + 1)))
        below += mp.mpf(flt) < true
        assert mp.mpf(scale_upper_bound(flt)) >= true
    assert below > 0  # the float computation alone does undercut sometimes
    assert scale_upper_bound(1.0, 0) == 1.0
    assert scale_upper_bound(1.0, 2) == 1.0 + 2 * 2.0**-52
    with pytest.raises(ValueError, match="ulps"):
        scale_upper_bound(1.0, -1)


# --- exact discrete behaviour where the float grid is coarse ----------------------------


def _chi2_pvalue(counts: np.ndarray, probs: np.ndarray) -> float:
    keep = probs * counts.sum() >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(probs[keep], probs[~keep].sum()) * counts.sum()
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp).pvalue)


def test_outputs_next_to_one_follow_the_exact_cell_probabilities():
    """value 1, scale 2^-52: outputs are a few doubles around 1 with probabilities
    F(cell)/S computed from the asymmetric cells (spacing 2^-53 below 1, 2^-52 above)."""
    noise = Laplace(1.0)
    s = 2.0**-52
    y = add_noise(1.0, s, noise, size=3000, rng=simulation(5))
    support = sorted(set(y.tolist()))
    assert all(Fraction(v) % Fraction(1, 2**53) == 0 for v in support)
    below = [math.nextafter(1.0, 0.0) - j * 2.0**-53 for j in range(60)][::-1]
    grid = np.array(below + [1.0 + j * 2.0**-52 for j in range(60)])
    # Cell boundaries (midpoints of neighbouring doubles) relative to 1, in units of s: exact.
    mids = [
        float(((Fraction(a) + Fraction(b)) / 2 - 1) / Fraction(s))
        for a, b in zip(grid[:-1], grid[1:], strict=True)
    ]
    lo, hi = np.array([-np.inf, *mids]), np.array([*mids, np.inf])
    probs = noise.cdf(hi) - noise.cdf(lo)
    counts = np.array([(y == g).sum() for g in grid])
    assert counts.sum() == y.size
    assert _chi2_pvalue(counts, probs) > ALPHA


def test_int_value_beyond_2_53_is_used_exactly():
    """value 2^60 + 200 (an int): outputs are 2^60 or 2^60 + 256 with P(2^60) = F(−7.2) for
    Laplace scale 10; converting the value to a float first would make it F(−12.8)."""
    base = 2**60
    y = add_noise(base + 200, 10.0, Laplace(1.0), size=20000, rng=simulation(6))
    assert set(y.tolist()) <= {float(base), float(base + 256), float(base - 256)}
    k = int((y == float(base)).sum())
    p = 0.5 * math.exp(-(200 - 128 + 0) / 10.0) - 0.5 * math.exp(-(200 + 128) / 10.0)
    assert stats.binomtest(k, y.size, p).pvalue > ALPHA


def test_overflow_rounds_to_infinity_with_the_right_probability():
    noise = GeneralizedCauchy(1.5)
    y = add_noise(1e308, 1e306, noise, size=2000, rng=simulation(7))
    overflow = Fraction(2**1024 - 2**970)  # mid(MAX, 2^1024): IEEE overflow threshold
    p_up = float(noise.sf(float((overflow - Fraction(1e308)) / Fraction(1e306))))
    p_down = float(noise.cdf(float((-overflow - Fraction(1e308)) / Fraction(1e306))))
    up, down = int(np.isposinf(y).sum()), int(np.isneginf(y).sum())
    assert up > 0 and stats.binomtest(up, y.size, p_up).pvalue > ALPHA
    assert stats.binomtest(down, y.size, p_down).pvalue > ALPHA
    assert not np.isnan(y).any()


def test_subnormal_outputs():
    """scale 1e-320: outputs are multiples of 2^-1074 with P(0) = F(½·2^-1074/S) − F(−…)."""
    noise = Gaussian(1.0)
    s = 1e-320
    y = add_noise(0.0, s, noise, size=3000, rng=simulation(8))
    tiny = 2.0**-1074
    n = np.round(y / tiny)
    assert np.all(n * tiny == y)
    half = (tiny / s) * 0.5
    p0 = float(noise.cdf(half) - noise.cdf(-half))
    assert stats.binomtest(int((y == 0).sum()), y.size, p0).pvalue > ALPHA


# --- the power-of-two grid ---------------------------------------------------------------


def test_grid_sensitivity_values():
    assert grid_sensitivity(1.0, 0) == 2.0
    assert grid_sensitivity(1.0, -3) == 1.125
    assert grid_sensitivity(0.0, 4) == 16.0
    # Rounded up when not representable.
    g = grid_sensitivity(0.1, -60)
    assert Fraction(g) >= Fraction(0.1) + Fraction(1, 2**60)
    with pytest.raises(ValueError, match="sensitivity"):
        grid_sensitivity(-1.0, 0)
    with pytest.raises(ValueError, match="grid"):
        grid_sensitivity(1.0, 5000)


@given(
    x=st.floats(-1e6, 1e6, allow_nan=False),
    d=st.floats(0.0, 10.0, allow_nan=False),
    frac=st.floats(-1.0, 1.0),
    k=st.integers(-20, 10),
)
def test_snapping_moves_neighbours_apart_by_at_most_grid_sensitivity(x, d, frac, k):
    """Brute-force the claim behind grid_sensitivity: |snap(x) − snap(x')| ≤ Δ + 2^k."""
    x2 = x + frac * d
    if abs(Fraction(x2) - Fraction(x)) > Fraction(d):
        return  # float rounding pushed the pair beyond Δ
    gap = abs(Fraction(snap_to_grid(x, k)) - Fraction(snap_to_grid(x2, k)))
    assert gap <= Fraction(grid_sensitivity(d, k))
    assert Fraction(snap_to_grid(x, k)) % Fraction(2) ** k == 0
    assert abs(Fraction(snap_to_grid(x, k)) - Fraction(x)) <= Fraction(2) ** (k - 1)


def test_grid_bound_is_attained():
    """Δ + 2^k is tight: x = 2^(k−1)·(1 − η) and x' = x + Δ snap 2^k·(1 + Δ/2^k) apart."""
    k, d = 0, 0.5
    x, x2 = 0.49999, 0.49999 + 0.5  # snap to 0 and 1: gap 1 vs Δ 0.5
    gap = abs(snap_to_grid(x2, k) - snap_to_grid(x, k))
    assert gap > d and gap <= grid_sensitivity(d, k)


def _grid_pmf_log(center: float, b: float, k: int, n: np.ndarray) -> np.ndarray:
    """log P(center + Lap(b) rounds to n·2^k), integrating e^{−|t|/b}/(2b) over the cell."""
    g = 2.0**k
    lo, hi = (n - 0.5) * g - center, (n + 0.5) * g - center
    width = math.log(-math.expm1(-g / b))  # log(1 − e^{−g/b})
    right = math.log(0.5) - lo / b + width  # cell within t ≥ 0
    left = math.log(0.5) + hi / b + width  # cell within t ≤ 0
    with np.errstate(divide="ignore", invalid="ignore"):
        mid = np.log1p(-0.5 * np.exp(lo / b) - 0.5 * np.exp(-hi / b))  # cell holds 0
    return np.where(lo >= 0, right, np.where(hi <= 0, left, mid))


@given(
    x=st.floats(-50.0, 50.0, allow_nan=False),
    frac=st.floats(-1.0, 1.0),
    k=st.integers(-2, 3),
)
def test_grid_mechanism_guarantee_with_the_charged_sensitivity(x, frac, k):
    """Laplace on a query with Δ = 1 snapped to 2^k, scale grid_sensitivity(1, k)/ε: the exact
    output pmfs of neighbours have log ratio ≤ ε everywhere (it is ε-DP)."""
    eps, d = 1.0, 1.0
    x2 = x + frac * d
    b = grid_sensitivity(d, k) / eps
    c1, c2 = snap_to_grid(x, k), snap_to_grid(x2, k)
    n = np.arange(-60, 61) + round(c1 / 2.0**k)
    ratio = _grid_pmf_log(c1, b, k, n) - _grid_pmf_log(c2, b, k, n)
    assert np.max(np.abs(ratio)) <= eps + 1e-9


def test_charging_only_the_query_sensitivity_would_break_the_guarantee():
    """The same check fails if the grid's extra 2^k is not charged (so the test can fail)."""
    eps, d, k = 1.0, 1.0, 2
    x, x2 = 1.9, 2.9  # neighbours (|Δ| = 1) that snap to 0 and 4
    c1, c2 = snap_to_grid(x, k), snap_to_grid(x2, k)
    n = np.arange(-40, 41)
    ratio = _grid_pmf_log(c1, d / eps, k, n) - _grid_pmf_log(c2, d / eps, k, n)
    assert np.max(np.abs(ratio)) > eps + 0.5


def test_grid_outputs_follow_the_discretised_law():
    noise, k, value, scale = StudentT(3.0), -1, 3.3, 1.7
    y = add_noise(value, scale, noise, size=3000, rng=simulation(9), grid=k)
    snapped = snap_to_grid(value, k)
    assert snapped == 3.5
    n = (y - snapped) / 2.0**k
    assert np.all(n == np.round(n))
    support = np.arange(-40, 41)
    g = 2.0**k
    probs = noise.cdf((support + 0.5) * g / scale) - noise.cdf((support - 0.5) * g / scale)
    counts = np.array([(n == j).sum() for j in support])
    probs = np.append(probs, 1 - probs.sum())
    counts = np.append(counts, y.size - counts.sum())
    assert _chi2_pvalue(counts, probs) > ALPHA


def test_grid_noise_does_not_depend_on_the_value():
    """On the grid, the same randomness gives outputs that differ exactly by the values'
    difference: the draw (and its running time) no longer depends on the data."""
    for noise in (Laplace(1.0), PolyPlace(1.0, 4.0), LaplaceLogNormal(0.5)):
        w0, r0 = work_count(), refinement_count()
        a = add_noise(0.0, 2.0, noise, size=50, rng=simulation(10), grid=-4)
        w1, r1 = work_count(), refinement_count()
        b = add_noise(1234.5, 2.0, noise, size=50, rng=simulation(10), grid=-4)
        w2, r2 = work_count(), refinement_count()
        assert np.array_equal(b - a, np.full(50, 1234.5))
        assert w2 - w1 == w1 - w0 > 0 and r2 - r1 == r1 - r0


def test_float_path_work_depends_on_the_value():
    """The timing channel the grid closes: on the nearest-double path, the same random
    stream costs more work when the value puts the output among dense doubles."""
    work = []
    for value in (0.0, 1e6):
        w0 = work_count()
        add_noise(value, 1.0, Laplace(1.0), size=400, rng=simulation(13))
        work.append(work_count() - w0)
    assert work[0] > work[1] == 2 * 400


def test_grid_outputs_beyond_the_double_range_are_infinite():
    """value near MAX on a coarse grid: outputs are snapped + N·2^k rounded to a double,
    +inf past the overflow threshold (never an exception)."""
    y = add_noise(1.7e308, 1e307, Laplace(1.0), size=300, rng=simulation(12), grid=1000)
    assert np.isposinf(y).any() and np.isfinite(y).any() and not np.isnan(y).any()
    finite = y[np.isfinite(y)]
    assert all(Fraction(v) % Fraction(2) ** 1000 == 0 for v in finite)


# --- exact uniform on an interval --------------------------------------------------------


def test_uniform_law():
    src = simulation(14)
    x = np.array([uniform(2.0, 5.0, src) for _ in range(3000)])
    assert np.all((x >= 2.0) & (x <= 5.0))
    assert stats.kstest((x - 2.0) / 3.0, "uniform").pvalue > ALPHA


def test_uniform_on_a_few_doubles_has_the_cell_probabilities():
    """[1, 1 + 4·2^-52] holds 5 doubles; their cells inside the interval have widths
    ½, 1, 1, 1, ½ (in ulps), so the probabilities are 1/8, 1/4, 1/4, 1/4, 1/8."""
    src = simulation(15)
    y = np.array([uniform(1.0, 1.0 + 4 * 2.0**-52, src) for _ in range(8000)])
    support = 1.0 + np.arange(5) * 2.0**-52
    counts = np.array([(y == v).sum() for v in support])
    assert counts.sum() == y.size
    probs = np.array([1, 2, 2, 2, 1]) / 8
    assert stats.chisquare(counts, probs * y.size).pvalue > ALPHA


def test_uniform_validation_and_degenerate_interval():
    assert uniform(3.0, 3.0, simulation(0)) == 3.0
    with pytest.raises(ValueError, match="low"):
        uniform(2.0, 1.0, simulation(0))
    with pytest.raises(ValueError, match="low"):
        uniform(math.nan, 1.0, simulation(0))
    with pytest.raises(ValueError, match="high"):
        uniform(0.0, math.inf, simulation(0))
