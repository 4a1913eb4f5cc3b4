"""benchmarks/log_scale.py: its c = 10⁻⁴ column is the library's default base, and its
rule picks the least worst-case regret (ties by the geometric mean)."""

from __future__ import annotations

import numpy as np
import pytest
from bench_support import load_benchmark


@pytest.fixture(scope="module")
def ls():
    return load_benchmark("log_scale")


def test_the_smallest_c_is_the_library_default(ls):
    """The default's log scale is 10⁻⁴·width (the sweep's first candidate): the same exact
    error through the default mechanism as through the sweep's own construction."""
    from instancedp.recipes import build_mechanism

    lb = ls._lower_bound()
    draw, (lo, hi), res = ls.FAMILIES["narrow-far"]
    assert res is None and ls.CS[0] == 1e-4
    errs = ls.cell_errors("narrow-far", 20, 1.0, 0.5, reps=1, seed=7)
    x = np.sort(np.clip(draw(np.random.default_rng(7), 20), lo, hi))
    default = build_mechanism("quantile", 1.0, bounds=(lo, hi), quantile=0.5,
                              neighbours="add_remove")
    assert default.log_scale == pytest.approx(1e-4 * (hi - lo), rel=1e-15)
    from instancedp.mechanisms.quantile import ExponentialQuantile
    from instancedp.queries.order import Quantile

    qq = Quantile(0.5, lo, hi)
    qq.neighbours = "add_remove"
    log = ExponentialQuantile(qq, 1.0, base="log", log_scale=default.log_scale)
    assert errs["c=0.0001"] == pytest.approx(lb.continuous_error(log, x, float(x[9])), rel=1e-12)
    # on this column (data near 1000 in [0, 2000], 20 rows) the tilt towards 0 costs:
    assert errs["c=0.0001"] > 2 * errs["c=0.01"]


def test_rule_is_least_worst_regret_then_geometric_mean(ls):
    keys = [f"c={c:g}" for c in ls.CS]
    # candidate 2 has the least worst regret; candidate 1 ties it within 1 % and has the
    # smaller geometric mean, so it wins; candidate 0 is best on average but worst-case bad
    table = [[1.0, 1.2, 1.19, 5.0, 5.0], [3.0, 1.0, 1.0, 5.0, 5.0], [1.0, 1.0, 1.1, 5.0, 5.0]]
    rows = [{"errors": dict(zip(keys, r, strict=True)), "best": 1.0, "n": n}
            for r, n in zip(table, (5, 50, 200), strict=True)]
    s = ls.summarise(rows)
    assert s[keys[0]]["worst_regret"] == pytest.approx(3.0)
    assert s[keys[1]]["worst_regret"] == pytest.approx(1.2)
    assert s[keys[2]]["worst_regret"] == pytest.approx(1.19)
    assert s["chosen"] == keys[1]
