"""A smooth sensitivity that underflows to 0.0 must not release the exact value.

For the median on [−1, 1] of n = 1493 zeros (m = 747), SS_1(x) = e^{−746}, which
rounds to 0.0, while the neighbour x′ (one record set to −1) has SS_1(x′) = e^{−745},
which rounds to the smallest subnormal 5e−324.  Releasing q(x) exactly when the
float SS is 0 gives an atom at 0.0 on x and (almost) no mass there on x′: an
infinite privacy loss for a mechanism that claims pure ε-DP.  The same holds for
the privately bounded local sensitivity: SS = 0.0 made the noisy bound g = 0 and
the value was released exactly, while the neighbour’s g is positive.
"""

from __future__ import annotations

import numpy as np

from instancedp.mechanisms.bounded_ls import BoundedLocalSensitivity, SmoothSensitivityBound
from instancedp.mechanisms.smooth import SmoothSensitivityMechanism
from instancedp.queries import Median
from instancedp.random import simulation

M = 747
N = 2 * M - 1


def _pair() -> tuple[np.ndarray, np.ndarray]:
    x = np.zeros(N)
    xp = x.copy()
    xp[0] = -1.0
    return x, xp


def test_setup_true_smooth_sensitivity_positive_but_float_underflows():
    q = Median(-1, 1, neighbours="substitution")
    x, xp = _pair()
    assert q.log_smooth_sensitivity(x, 1.0) == -746.0  # SS(x) > 0 in the reals
    assert q.smooth_sensitivity(x, 1.0) == 0.0  # ... but 0.0 in float
    assert q.smooth_sensitivity(xp, 1.0) > 0.0  # the neighbour's does not underflow


def test_smooth_mechanism_never_releases_an_exact_atom_on_underflow():
    mech = SmoothSensitivityMechanism(
        Median(-1, 1, neighbours="substitution"), epsilon=3.0, gamma=1.0, noise="polyplace"
    )
    x, xp = _pair()
    # exact law: no atom on either side of the pair (x′ has none: SS(x′) > 0)
    assert not mech.output_distribution(xp).atoms
    assert not mech.output_distribution(x).atoms
    # secure releases on x are not all the exact value 0.0
    outs = [mech.release(x).value for _ in range(40)]
    assert sum(v == 0.0 for v in outs) < 20, outs


def test_bounded_ls_never_releases_the_exact_value_on_underflow():
    # β = 1: SS_1(x) = e^{−746} → 0.0 (bound g = 0 → q(x) released exactly) while
    # SS_1(x′) = e^{−745} → 5e−324, so g(x′) > 0 and x′ gets continuous noise.
    bound = SmoothSensitivityBound(beta=1.0)
    mech = BoundedLocalSensitivity(Median(-1, 1, neighbours="substitution"), bound, 1.0, 1.0, 0.01)
    x, xp = _pair()
    source = simulation(0)
    assert bound.bound(Median(-1, 1, neighbours="substitution"), xp, 1.0, 0.01, source) > 0.0
    assert bound.bound(Median(-1, 1, neighbours="substitution"), x, 1.0, 0.01, source) > 0.0
    outs = [mech.release(x).value for _ in range(20)]
    assert sum(v == 0.0 for v in outs) < 10, outs
    law = mech.output_distribution(x, points=401)
    assert not law.atoms
