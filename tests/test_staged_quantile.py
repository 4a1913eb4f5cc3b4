"""The exponential quantile drawn in stages (a window of order statistics, more on demand).

The staged draw is the same exact inversion as the full one: for the same
random digits it returns the same piece, whatever it had to read — checked
here seed by seed against :func:`~instancedp.noise.exact.sample_piece` (whose
law the exact-sampling tests check), on data chosen to make the window
useless (ties far from the target, all equal, two clusters at the bounds).
Then the same request gives the same record bytes from an array, a CSV file,
a Parquet file and a SQLite table.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

import instancedp.mechanisms.quantile as quantile_module
from instancedp import Session
from instancedp.mechanisms.quantile import ExponentialQuantile
from instancedp.noise import exact
from instancedp.privacy import PureDP
from instancedp.queries.order import Quantile
from instancedp.random import simulation

DATASETS = {
    "normal": np.random.default_rng(5).normal(50.0, 10.0, 120).clip(0, 100),
    "all_equal": np.full(90, 37.0),
    "two_clusters": np.concatenate([np.zeros(60), np.full(40, 100.0)]),
    "far_ties": np.concatenate([np.full(70, 3.0), np.linspace(60, 61, 9), np.full(30, 99.0)]),
    "tiny": np.repeat([5e-324, 1e-300, 2.0], 5),
}


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("q,base", [(0.5, "log"), (0.9, "uniform")])
def test_staged_draw_is_the_full_inversion(monkeypatch, name, q, base):
    x = DATASETS[name]
    mech = ExponentialQuantile(Quantile(q, 0.0, 100.0), 1.0, base=base)
    monkeypatch.setattr(quantile_module, "WINDOW_EXPONENT", 1e9)
    full = mech._weights(x)
    assert full.full  # a window holding every piece: the one-step draw
    monkeypatch.setattr(quantile_module, "WINDOW_EXPONENT", 1.5)  # a window of a few pieces
    reads: list[int] = []
    staged = mech._weights(x)
    # a few window blocks (a run of ties holding the target is one block of length 0)
    assert not staged.full and len(staged.window) - 1 <= 9
    edge_at = staged._edge

    def counting_edge(i: int) -> float:
        reads.append(i)
        return float(edge_at(i))

    for seed in range(60):
        i_full, _ = exact.sample_piece(full.log_weights, full.window, simulation(seed))
        i_staged, _ = exact.sample_piece_lazy(
            staged.log_weight, counting_edge, staged.n + 1, staged.start, staged.window,
            simulation(seed), window_pieces=staged.blocks,
        )
        assert i_staged == i_full, seed
    if name == "all_equal":  # all the mass is in the two end pieces: the window holds them
        assert staged.blocks is not None and reads == []


def test_the_default_window_reads_nothing_more_on_ordinary_data():
    x = np.random.default_rng(1).lognormal(3.0, 1.0, 5000)
    mech = ExponentialQuantile(Quantile(0.5, 0.0, 1e4), 1.0, base="log")
    pieces = mech._weights(x)
    assert not pieces.full and pieces.stop - pieces.start == 81
    pieces._read = None  # any read beyond the window would fail
    values = [mech._draw(pieces, simulation(s)) for s in range(30)]
    med = float(np.median(x))
    assert all(abs(v - med) < 2.0 for v in values)  # rank error ≤ 40 of 5000 rows


def _json(release) -> str:
    return json.dumps(release.to_dict(), sort_keys=True)


@pytest.mark.parametrize("analyst", [False, True])
def test_files_and_databases_give_the_in_memory_record(tmp_path, analyst):
    """Median, p90 and mean from CSV, Parquet and SQLite: the same bytes (windowed draws)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = np.concatenate([DATASETS["far_ties"], DATASETS["normal"]]).round(3)
    (tmp_path / "t.csv").write_text("v\n" + "\n".join(repr(float(v)) for v in rows) + "\n")
    pq.write_table(pa.table({"v": rows}), tmp_path / "t.parquet")
    con = sqlite3.connect(tmp_path / "t.db")
    con.execute("CREATE TABLE t (v REAL)")
    con.executemany("INSERT INTO t VALUES (?)", [(float(v),) for v in rows])
    con.commit()
    con.close()
    ledger = tmp_path / "l.db"
    Session([0.0], PureDP(50.0), ledger=ledger, dataset_id="d").close()
    requests = [("median", {}), ("quantile", {"quantile": 0.9}), ("mean", {})]
    records: dict[str, list[str]] = {}
    for data, extra in [(str(tmp_path / "t.csv"), {}), (str(tmp_path / "t.parquet"), {}),
                        (str(tmp_path / "t.db"), {"table": "t"})]:
        with Session(data, ledger=ledger, dataset_id="d", analyst=analyst, **extra) as s:
            for stat, opts in requests:
                r = s.release_statistic(stat, "v", epsilon=0.5, bounds=(0.0, 100.0),
                                        rng=simulation(3), **opts)
                records.setdefault(stat, []).append(_json(r))
    for stat, recs in records.items():
        assert len(set(recs)) == 1, stat


def test_postgresql_gives_the_csv_record(tmp_path, postgres_url):
    import psycopg

    rows = np.concatenate([DATASETS["far_ties"], DATASETS["normal"]]).round(3)
    (tmp_path / "t.csv").write_text("v\n" + "\n".join(repr(float(v)) for v in rows) + "\n")
    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS staged_t")
        con.execute("CREATE TABLE staged_t (v double precision)")
        with con.cursor() as cur:
            cur.executemany("INSERT INTO staged_t VALUES (%s)", [(float(v),) for v in rows])
    got = []
    for data, extra in [(str(tmp_path / "t.csv"), {}), (postgres_url, {"table": "staged_t"})]:
        with Session(data, PureDP(5.0), **extra) as s:
            got.append([_json(s.release_statistic(stat, "v", epsilon=0.5, bounds=(0.0, 100.0),
                                                  rng=simulation(4)))
                        for stat in ("median", "mean")])
    assert got[0] == got[1]
