"""Exact discrete sampling: ``sample_index`` and ``sample_piece`` (noise/exact.py).

The law check is exact: the sampler is a function of one uniform U (drawn lazily
from the source's bytes), and the declared law says index i is returned exactly
for U in [C_{i−1}/W, C_i/W).  A scripted source puts U just inside and just
outside every boundary (computed at 6000 bits), including boundaries that
differ by a weight e^−800 — the old float sampler returned index 0 or 2 there.
Statistical checks use fixed seeds at significance 1e-3 (the false-failure
rate for a fresh seed).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx
from scipy import special, stats

from instancedp.errors import ParameterError
from instancedp.mechanisms.quantile import ExponentialQuantile
from instancedp.noise.exact import sample_index, sample_piece
from instancedp.random import RandomSource, sample_index_from_log_weights, simulation

ALPHA = 1e-3
BITS = 2560  # digits of U scripted (finer than every boundary gap used here: e^−1500 ≈ 2^−2164)


class _Scripted(RandomSource):
    """Bytes of a chosen U (little-endian 64-bit chunks, most significant first)."""

    def __init__(self, u: Fraction) -> None:
        digits = math.floor(u * 2**BITS)
        chunks = [(digits >> (BITS - 64 * (j + 1))) & (2**64 - 1) for j in range(BITS // 64)]
        self._data = b"".join(c.to_bytes(8, "little") for c in chunks)
        self._pos = 0

    def random_bytes(self, n: int) -> bytes:
        out = self._data[self._pos : self._pos + n]
        self._pos += n
        return out + bytes(n - len(out))

    @property
    def generator(self) -> np.random.Generator:  # pragma: no cover
        raise NotImplementedError


def _exact(x: arb) -> Fraction:
    man, exp = x.mid().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _boundaries(weights: list[arb]) -> list[Fraction]:
    """C_i / W for i = 0 … m (computed at 6000 bits: error ≪ 2^−BITS)."""
    total = sum(weights, arb(0))
    out, run = [Fraction(0)], arb(0)
    for w in weights:
        run += w
        out.append(_exact(run / total))
    return out


def _law_matches(log_weights, weights_fn, sampler) -> None:
    old = ctx.prec
    ctx.prec = 6000
    try:
        bounds = _boundaries(weights_fn())
    finally:
        ctx.prec = old
    eps = Fraction(1, 2 ** (BITS - 8))
    for i in range(len(bounds) - 1):
        lo, hi = bounds[i], bounds[i + 1]
        if lo == hi:
            continue  # weight exactly 0: no U maps here
        for u in (lo + eps, (lo + hi) / 2, hi - eps):
            assert sampler(_Scripted(u)) == i, (i, float(lo), float(hi))


EXTREME = [
    [0.0, -800.0, 0.0],
    [0.0, -800.0, -1500.0, 0.0, -np.inf, -750.5],
    [-1e6, -1e6 - 745.0, -1e6 + 1.0],
    [5.0],
]


@pytest.mark.parametrize("lw", EXTREME, ids=str)
def test_sample_index_law_is_exact_at_every_boundary(lw):
    def weights():
        top = max(v for v in lw if math.isfinite(v))
        return [arb(0) if not math.isfinite(v) else (arb(v) - arb(top)).exp() for v in lw]

    _law_matches(lw, weights, lambda src: sample_index(lw, src))
    _law_matches(lw, weights, lambda src: sample_index_from_log_weights(np.array(lw), src))


def test_sample_piece_law_is_exact_with_huge_and_tiny_pieces():
    edges = [-1e308, 1e308, 1e308 + 2.0**972, 1e308 + 2.0**973, 1.5e308]
    ld = [-800.0, 0.0, 30.0, -np.inf]

    def weights():
        return [
            (arb(d).exp() * (arb(b) - arb(a))) if math.isfinite(d) else arb(0)
            for d, a, b in zip(ld, edges[:-1], edges[1:], strict=True)
        ]

    _law_matches(ld, weights, lambda src: sample_piece(ld, edges, src)[0])


def test_sample_piece_point_lies_in_its_piece():
    src = simulation(3)
    edges = np.array([0.0, 0.0, 1e-300, 2.0, 2.0])
    for _ in range(200):
        i, y = sample_piece([0.0, 0.0, 0.0, 0.0], edges, src)
        assert i in (1, 2) and edges[i] <= y <= edges[i + 1]


def test_sample_index_matches_softmax_statistically():
    lw = np.array([0.0, 1.0, -2.0, 0.5, -np.inf, -30.0])
    p = np.exp(lw - special.logsumexp(lw))
    src = simulation(11)
    n = 6_000
    counts = np.bincount([sample_index(lw, src) for _ in range(n)], minlength=6)
    assert counts[4] == 0
    keep = p > 1e-6
    assert stats.chisquare(counts[keep], p[keep] / p[keep].sum() * n).pvalue > ALPHA


def test_sample_piece_is_uniform_inside_the_piece():
    src = simulation(12)
    ys = np.array([sample_piece([0.0, -np.inf], [0.0, 1.0, 2.0], src)[1] for _ in range(1500)])
    assert stats.kstest(ys, "uniform").pvalue > ALPHA


def test_a_million_candidates_sample_near_the_top():
    # Speed is a benchmark's business (no timed tests); here: a draw over 10^6 candidates
    # lands where the law puts its mass.  P(log-weight < max − 40) ≤ 10^6·e^−40 < 1e-11.
    lw = np.random.default_rng(0).normal(size=10**6) * 10
    src = simulation(1)
    for _ in range(3):
        assert lw[sample_index(lw, src)] >= lw.max() - 40.0


@pytest.mark.parametrize(
    "bad", [np.array([]), np.array([-np.inf, -np.inf]), np.zeros((2, 2))], ids=str
)
def test_sample_index_rejects_bad_weights(bad):
    with pytest.raises(ParameterError, match="log_weights"):
        sample_index(bad, simulation(0))


def test_sample_piece_rejects_bad_edges():
    with pytest.raises(ParameterError, match="edges"):
        sample_piece([0.0], [1.0, 0.0], simulation(0))
    with pytest.raises(ParameterError, match="edges"):
        sample_piece([0.0], [0.0, np.inf], simulation(0))


def test_exponential_quantile_survives_huge_bounds():
    # Interval lengths beyond the float range keep their exact weight (they used to
    # overflow to inf and get weight 0 or NaN).
    mech = ExponentialQuantile(0.5, -1e308, 1e308, 1.0)
    src = simulation(5)
    below = sum(mech.release([0.0], rng=src).value < 0 for _ in range(400))
    assert stats.binomtest(below, 400, 0.5).pvalue > ALPHA


def test_remembered_float_weights_give_the_same_draws(monkeypatch):
    """The last law's float enclosures are kept between draws (noise.exact's memo): the
    draws are the bytes of recomputing them every time, and the kept arrays are
    read-only, so no caller can alter a later draw's law."""
    from instancedp.noise import exact

    lw = np.random.default_rng(3).normal(size=9) * 40.0
    other = lw[::-1].copy()  # same size, another law: drawn in between, never mixed up
    edges = np.cumsum(np.r_[0.0, np.random.default_rng(4).uniform(0.0, 2.0, 9)])

    def draws() -> list:
        src = simulation(17)
        out = [sample_index(lw, src) for _ in range(100)]
        out += [sample_index(lw if i % 3 else other, src) for i in range(100)]
        return out + [sample_piece(lw, edges, src) for _ in range(200)]

    kept = draws()
    w = exact._float_weights_memo(lw, edges)[0]
    assert not w.flags.writeable
    monkeypatch.setattr(exact, "_FW_MEMO_MAX", -1)  # recompute on every draw
    assert draws() == kept
