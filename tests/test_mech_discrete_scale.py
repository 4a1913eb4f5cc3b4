"""The discrete Laplace scales of the secure paths must not round below 1/ε.

``sample_discrete_laplace`` samples exactly the law of the *float* scale it is
given.  For ε = 0.7, float(1/ε) < 1/ε, so DLap(float(1/ε)) has privacy loss
1/float(1/ε) > ε per unit step: the stability test (and PTR's, at ε/2) and the
ratio's noisy counts (scale 2/ε1) were very slightly less private than stated.
The scale passed must be at least the exact real 1/ε (resp. 2/ε1).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from instancedp.mechanisms import ratio, stability
from instancedp.random import SecureRandom


@pytest.fixture
def scales(monkeypatch):
    seen: list[Fraction] = []

    def spy(mod):
        real = mod.sample_discrete_laplace

        def wrapped(scale, source, size=None):
            seen.append(Fraction(scale))
            return real(scale, source, size)

        monkeypatch.setattr(mod, "sample_discrete_laplace", wrapped)

    spy(stability)
    spy(ratio)
    return seen


def test_setup_float_inverse_rounds_down():
    assert Fraction(1.0 / 0.7) < 1 / Fraction(0.7)


def test_stability_test_scale_not_rounded_down(scales):
    stability.noisy_distance_passes(5, 0.7, 1e-6, SecureRandom())
    assert scales and all(s >= 1 / Fraction(0.7) for s in scales)


def test_ratio_count_scale_not_rounded_down(scales):
    eps = 0.7 / 0.1  # ε1 = 0.1·ε
    eps1 = eps * 0.1
    ratio.bounded_ls(30, 100, eps, 1e-6, 0.1, SecureRandom())
    assert scales and all(s >= 2 / Fraction(eps1) for s in scales)
