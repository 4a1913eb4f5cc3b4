"""The ratio out of core: two exact counts from one histogram, the in-memory record's bytes.

Expected records are the in-memory path's own (``mechanism.release`` on the array,
or an in-memory analyst Session on the same rows), never the code under test's output.
"""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from instancedp import Session
from instancedp.backends import open_source
from instancedp.errors import ParameterError
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.sources import flag_counts, out_of_core_mechanism

FLAGS = [1.0, 0.0, 1.0, 1.0, -0.0, 0.0, 1.0]
# values next to 0 and 1 that are not flags: the counts must not take them
NEAR = [5e-324, -5e-324, 0.9999999999999999, 1.0000000000000002, 2.0, math.inf, -math.inf,
        1e308, -1e308, 0.5]


def _files(tmp_path, name, values):
    pq.write_table(pa.table({"v": pa.array(values, pa.float64())}), tmp_path / f"{name}.parquet")
    con = sqlite3.connect(tmp_path / f"{name}.db")
    con.execute("CREATE TABLE t (v REAL)")
    con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    con.commit()
    con.close()
    return {"duckdb": (str(tmp_path / f"{name}.parquet"), {}),
            "sqlite": (str(tmp_path / f"{name}.db"), {"table": "t"})}


def _json(release) -> str:
    return json.dumps(release.to_dict(), sort_keys=True)


@pytest.mark.parametrize("values", [[], [0.0], [1.0], FLAGS, FLAGS + NEAR + [None, math.nan]])
def test_flag_counts_are_exact_on_every_engine(tmp_path, values):
    x = np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    kept = x[~np.isnan(x)]
    want = (int(np.sum(kept == 1.0)), int(np.sum(kept == 0.0)),
            int(np.sum((kept != 0.0) & (kept != 1.0))))
    assert flag_counts(open_source(x), None) == want
    for path, where in _files(tmp_path, "f", values).values():
        with open_source(path, **where) as src:
            assert flag_counts(src, "v") == want, src.backend


@pytest.mark.parametrize("method,delta", [(None, None), ("naive", None), ("bounded-ls", 1e-6)])
def test_ratio_record_is_the_in_memory_bytes(tmp_path, method, delta):
    mech = out_of_core_mechanism("ratio", 1.0, delta, mechanism=method)
    want = _json(mech.release(np.array(FLAGS), rng=simulation(5)))
    for path, where in _files(tmp_path, "r", FLAGS).values():
        budget = PureDP(5.0) if delta is None else None
        from instancedp.privacy import ApproxDP

        with Session(path, budget or ApproxDP(5.0, 1e-3), **where) as s:
            r = s.release_statistic("ratio", "v", epsilon=1.0, delta=delta, mechanism=method,
                                    rng=simulation(5))
        assert _json(r) == want, path


def test_owner_mode_refuses_non_flags_and_charges_only_what_it_ran(tmp_path):
    for path, where in _files(tmp_path, "b", FLAGS + [0.5]).values():
        with Session(path, PureDP(1.0), **where) as s:
            with pytest.raises(ParameterError, match="0/1 flags"):
                s.release_statistic("ratio", "v", epsilon=0.5)


def test_analyst_policy_drops_non_flags_as_in_memory(tmp_path):
    """The analyst mode's public policy (drop values other than 0 and 1, add its public
    row) gives the in-memory analyst Session's record, and a non-flag row entering the
    table changes nothing."""
    ledger = tmp_path / "l.db"
    Session([0.0], PureDP(5.0), ledger=ledger, dataset_id="d").close()
    with Session(np.array(FLAGS), ledger=ledger, dataset_id="d", analyst=True) as s:
        want = _json(s.release_statistic("ratio", epsilon=0.1, rng=simulation(9)))
    for i, extra in enumerate([[], NEAR, [None]]):
        for path, where in _files(tmp_path, f"a{i}", FLAGS + extra).values():
            with Session(path, ledger=ledger, dataset_id="d", analyst=True, **where) as s:
                r = s.release_statistic("ratio", "v", epsilon=0.1, rng=simulation(9))
            assert _json(r) == want, (path, extra)


def test_several_quantiles_are_refused_by_name(tmp_path):
    """The joint quantiles weigh every gap of the sorted column: in memory only."""
    path, where = _files(tmp_path, "m", FLAGS)["sqlite"]
    with Session(path, PureDP(1.0), **where) as s:
        with pytest.raises(ParameterError, match="in memory") as e:
            s.release_statistic("quantiles", "v", epsilon=0.1, bounds=(0.0, 1.0),
                                quantiles=[0.25, 0.75])
        assert e.value.parameter == "statistic"
        assert float(s.spent.epsilon) == 0.0
