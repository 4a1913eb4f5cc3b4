"""Cross-checks with the audit package and the secure release path.

``OutputDistribution`` objects of the mechanisms go through the independent
quadrature-based ``instancedp.audit.profile.privacy_profile``; its δ(ε) must
match the closed forms (Laplace pair, Balle–Wang) and stay ≤ δ.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from instancedp.mechanisms.global_noise import GaussianMechanism, LaplaceMechanism, gaussian_delta
from instancedp.mechanisms.levels import InstanceBasedNoise, level_rates

profile = pytest.importorskip("instancedp.audit.profile")


class _Sum:
    name = "sum"
    neighbours = "substitution"
    global_sensitivity = 4.0

    def value(self, data):
        return float(np.sum(data))


def test_instance_based_noise_profiles_via_audit():
    # Data = (level index, value): level k datasets change f by ≤ LS_k.
    levels = np.array([0.5, 1.0, 4.0])
    adj = {0: [1], 1: [0, 2], 2: [1]}
    eps, delta = 1.0, 1e-4
    mech = InstanceBasedNoise(
        lambda d: d[0], level_rates(levels, adj, eps, delta), _ValueQuery(), eps, delta
    )
    for k, j in [(0, 1), (1, 2), (1, 1)]:
        shift = min(levels[k], levels[j])
        px = mech.output_distribution((k, 0.0))
        pxp = mech.output_distribution((j, shift))
        prof = profile.privacy_profile(px, pxp, eps)
        assert prof.upper <= delta
        # Same rates ⇒ pure: δ(ε) is 0 when the shift is within ε/(2λ).
        if k == j:
            assert prof.delta <= 1e-12


class _ValueQuery:
    name = "value"
    neighbours = "substitution"
    global_sensitivity = 4.0

    def value(self, data):
        return float(data[1])


def test_gaussian_profile_via_audit_matches_balle_wang():
    mech = GaussianMechanism(_Sum(), 1.0, 1e-5)
    px, pxp = mech.output_distribution([0.0]), mech.output_distribution([4.0])
    prof = profile.privacy_profile(px, pxp, 1.0)
    assert prof.delta == pytest.approx(gaussian_delta(mech.sigma, 1.0, 4.0), rel=1e-6)
    assert prof.delta <= 1e-5 * (1 + 1e-6)


def test_laplace_profile_via_audit_is_pure():
    mech = LaplaceMechanism(_Sum(), 0.7)
    prof = profile.privacy_profile(
        mech.output_distribution([0.0]), mech.output_distribution([4.0]), 0.7
    )
    assert prof.delta <= 1e-12


def test_secure_releases():
    # The default (rng=None) path: OS randomness and the exact sampler.
    pytest.importorskip("instancedp.noise.exact")
    for mech, data in [
        (LaplaceMechanism(_Sum(), 1.0), [1.0]),
        (GaussianMechanism(_Sum(), 1.0, 1e-6), [1.0]),
        (InstanceBasedNoise(lambda d: 0, [0.5], _Sum(), 1.0, 1e-6), [1.0]),
    ]:
        rel = mech.release(data)
        assert rel.secure and math.isfinite(rel.value)
