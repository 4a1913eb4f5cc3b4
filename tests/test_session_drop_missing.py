"""drop_missing per call: the hint in the missing-value error must work as written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from instancedp import PureDP, Session
from instancedp.io import DataError


def test_release_statistic_takes_drop_missing():
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0] * 100})
    with Session(df, PureDP(100)) as s:
        with pytest.raises(DataError, match="drop_missing=True"):
            s.release_statistic("mean", "x", epsilon=50, bounds=(0, 10))
        assert s.spent.describe() == "epsilon=0"
        r = s.release_statistic("mean", "x", epsilon=50, bounds=(0, 10), drop_missing=True)
        assert abs(r.value - 2.0) < 0.5
        # The session default is unchanged by a per-call override.
        with pytest.raises(DataError):
            s.release_statistic("mean", "x", epsilon=1, bounds=(0, 10))


def test_release_takes_drop_missing():
    from instancedp.mechanisms import SmoothSensitivityMechanism
    from instancedp.queries import Median

    with Session([1.0, None, 2.0, 3.0], PureDP(100)) as s:
        r = s.release(SmoothSensitivityMechanism(Median(0, 10), 50), drop_missing=True)
        assert abs(r.value - 2.0) < 1.0


def test_graph_with_sparse_large_ids():
    edges = np.array([[1, 2], [2, 3], [3, 1], [10**11, 1]])
    with Session(edges, PureDP(100)) as s:
        r = s.release_statistic("triangles", epsilon=50, vertices=4)
        assert abs(r.value - 1) < 0.5
