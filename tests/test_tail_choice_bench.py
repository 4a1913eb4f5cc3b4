"""benchmarks/tail_choice.py: its exact bounded errors against the mechanism's own law,
the choice's error as the stated mixture, and its rule (least geometric mean over the
cells where the default runs the choice; within 1 %, the lower worst cell)."""

from __future__ import annotations

import numpy as np
import pytest
from bench_support import load_benchmark


@pytest.fixture(scope="module")
def tc():
    return load_benchmark("tail_choice")


def test_exact_grid_error_is_the_laws_mean_distance(tc):
    from instancedp.mechanisms.quantile import ExponentialQuantile
    from instancedp.queries.order import Quantile

    x = np.sort(np.random.default_rng(2).poisson(6, 30).astype(float))
    m = ExponentialQuantile(Quantile(0.9, 0.0, 40.0, neighbours="add_remove"), 0.5,
                            base="log-grid", resolution=1.0)
    f = float(x[26])  # x_(⌈0.9·30⌉)
    law = m.output_distribution(x)  # the grid's permute-and-flip masses, by its own code
    want = sum(p * abs(v - f) for v, p in law.items())
    assert tc.exact_error(m, x, f) == pytest.approx(want, rel=1e-6)


def _cell(whole, bounded, bracket, probs, applies=True):
    return {"mae_whole": whole, "mae_bounded": bounded, "mae_bracket": bracket,
            "applies": applies, "p_bracket": {f"{lv:g}": p for lv, p in zip(
                (2.0, 4.0, 6.0, 8.0, 12.0, 16.0), probs, strict=True)}}


def test_choice_ratio_is_the_mixture(tc):
    c = _cell(2.0, 2.1, 0.5, (0.0, 0.1, 0.2, 0.5, 0.9, 1.0))
    assert tc.choice_ratio(c, 2.0) == pytest.approx(2.1 / 2.0)
    assert tc.choice_ratio(c, 8.0) == pytest.approx((0.5 * 0.5 + 0.5 * 2.1) / 2.0)
    assert tc.choice_ratio(c, 16.0) == pytest.approx(0.25)


def test_rule_reads_only_the_cells_where_the_choice_runs(tc):
    # a cell where the bracket wins (it runs there) and one where it loses badly but the
    # default does not run the choice: the rule must ignore the second
    win = _cell(1.0, 1.05, 0.2, (0.0, 0.0, 0.2, 0.6, 0.9, 1.0))
    lose = _cell(1.0, 1.05, 50.0, (0.0, 0.0, 0.2, 0.6, 0.9, 1.0), applies=False)
    winner, table = tc.select([win, lose])
    assert winner == 16.0 and table["16"]["cells"] == 1
    # within 1 % on the geometric mean, the lower worst cell wins
    a = _cell(1.0, 1.0, 0.5, (0.0, 0.0, 0.0, 0.0, 0.98, 1.0))  # 0.51 at T = 12, 0.5 at 16
    b = _cell(1.0, 1.0, 1.5, (0.0, 0.0, 0.0, 0.0, 0.0, 0.01))  # 1.0 at T = 12, 1.005 at 16
    winner, table = tc.select([a, b])
    assert table["16"]["geomean"] < table["12"]["geomean"] <= table["16"]["geomean"] * 1.01
    assert winner == 12.0
