"""InstanceBasedNoise.from_levels needs the level graph it is private for."""

from __future__ import annotations

import pytest

from instancedp.audit.catalogue import _median, median_levels
from instancedp.errors import ParameterError
from instancedp.mechanisms import InstanceBasedNoise
from instancedp.mechanisms.levels import check_instance_noise, layered_level_rates


def test_adjacency_none_is_refused():
    level_of, levels, _ = median_levels()
    with pytest.raises(ParameterError, match="adjacency") as err:
        InstanceBasedNoise.from_levels(level_of, levels, None, _median(), 1.0, 1e-3)
    assert err.value.parameter == "adjacency"
    with pytest.raises(ParameterError, match="adjacency"):
        InstanceBasedNoise.from_levels(level_of, levels, "layers", _median(), 1.0, 1e-3)


def test_layered_rates_break_theorem_14_on_the_median_levels():
    # What adjacency=None used to do on the library's own median levels: the
    # layered rates violate Theorem 14 on the real level graph (which joins
    # non-consecutive levels), so the claimed δ did not hold.
    level_of, levels, adjacency = median_levels()
    assert any(abs(j - k) > 1 for k, js in adjacency.items() for j in js)  # not layered
    pairs = [(k, j) for k, js in adjacency.items() for j in js if j > k]
    layered = layered_level_rates(levels, 1.0, 1e-3)
    assert not check_instance_noise(layered, levels, pairs, 1.0, 1e-3, alphas=0.5).ok
    # The rates from_levels computes for the given graph pass it.
    mech = InstanceBasedNoise.from_levels(level_of, levels, adjacency, _median(), 1.0, 1e-3)
    assert check_instance_noise(mech.rates, levels, pairs, 1.0, 1e-3, alphas=0.5).ok
