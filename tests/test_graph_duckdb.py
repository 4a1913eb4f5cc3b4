"""Graph statistics where the edges live: DuckDB aggregates against the in-memory path.

The in-memory definitions (``queries.graphs``) are the reference; every check
compares the engine's sufficient statistics with them, or the whole release
record (JSON bytes) of a seeded release with the in-memory one.
"""

from __future__ import annotations

import contextlib
import io as _stdio
import json

import duckdb
import numpy as np
import pandas as pd
import pytest

from instancedp.backends import graph as gsql
from instancedp.backends.duckdb import connect
from instancedp.cli import main
from instancedp.errors import DataError, ParameterError
from instancedp.privacy import ApproxDP, PureDP
from instancedp.queries import graphs as qg
from instancedp.random import simulation
from instancedp.recipes import build_mechanism
from instancedp.session import Session


def _graphs() -> dict[str, tuple[np.ndarray, int]]:
    rng = np.random.default_rng(11)
    out = {
        "empty": (np.zeros((0, 2), dtype=np.int64), 4),
        "one_edge": (np.array([[0, 1]]), 2),
        "one_edge_isolated": (np.array([[2, 0]]), 5),
        "triangle": (np.array([[0, 1], [1, 2], [2, 0]]), 3),
        "k5_minus_edge": (np.array([[i, j] for i in range(5) for j in range(i + 1, 5)
                                    if (i, j) != (0, 1)]), 7),
        "star": (np.array([[0, j] for j in range(1, 8)]), 8),
    }
    for p in (0.2, 0.5):
        n = 16
        pairs = np.array([[i, j] for i in range(n) for j in range(i + 1, n)])
        keep = pairs[rng.random(len(pairs)) < p]
        out[f"gnp_{p}"] = (keep[:, ::-1] if p == 0.5 else keep, n)  # (j, i) order too
    return out


GRAPHS = _graphs()


def _tables(edges: np.ndarray, n: int, **kw) -> gsql.GraphTables:
    frame = pd.DataFrame({"a": edges[:, 0].astype(np.int64), "b": edges[:, 1].astype(np.int64)})
    return gsql.edge_tables(connect(frame), n, **kw)


@pytest.mark.parametrize("name", list(GRAPHS))
def test_engine_statistics_equal_the_in_memory_ones(name):
    edges, n = GRAPHS[name]
    g, mem = _tables(edges, n), qg.as_graph(edges, n)
    assert gsql.n_edges(g) == mem.n_edges
    assert gsql.degrees(g).tolist() == mem.degrees.tolist()
    assert gsql.kstar_pair_frontier(g).tolist() == qg.kstar_pair_frontier(mem).tolist()
    assert gsql.two_triangle_count(g) == qg.two_triangle_count(mem)
    assert gsql.two_triangle_local_sensitivity(g) == qg.two_triangle_local_sensitivity(mem)


def _parquet(path, edges: np.ndarray) -> str:
    con = duckdb.connect()
    con.register("t", pd.DataFrame({"u": edges[:, 0].astype(np.int64),
                                    "v": edges[:, 1].astype(np.int64)}))
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    con.close()
    return str(path)


def _record(data, statistic: str, n: int, seed: int, **kw) -> str:
    mech = build_mechanism(statistic, 1.0, kw.pop("delta", None), vertices=n, **kw)
    with Session(data, ApproxDP(50.0, 1e-3)) as s:
        r = s.release(mech, rng=simulation(seed))
    return json.dumps(r.to_dict(), default=str, sort_keys=True)


CASES = [("triangles", {}), ("kstars", {"k": 2}), ("kstars", {"k": 3}),
         ("two-triangles", {}), ("triangles", {"mechanism": "laplace"}),
         ("triangles", {"mechanism": "ptr", "delta": 1e-6, "ptr_bound": 3.0})]


@pytest.mark.parametrize("name", ["empty", "one_edge", "one_edge_isolated", "k5_minus_edge",
                                  "gnp_0.5"])
def test_parquet_and_frame_releases_give_the_in_memory_record(tmp_path, name):
    edges, n = GRAPHS[name]
    pq = _parquet(tmp_path / "g.parquet", edges)
    frame = pd.DataFrame({"u": edges[:, 0], "v": edges[:, 1]})
    for i, (stat, kw) in enumerate(CASES):
        if n < 3 and kw.get("mechanism") == "laplace":
            continue  # global sensitivity n − 2 = 0: no Laplace mechanism (a public refusal)
        want = _record(edges, stat, n, i, **dict(kw))
        assert _record(pq, stat, n, i, **dict(kw)) == want, (stat, kw)
        if i == 0:
            assert _record(frame, stat, n, i, **dict(kw)) == want


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = _stdio.StringIO(), _stdio.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def _cli_record(path, *extra: str) -> dict:
    code, out, err = _cli("release-graph", str(path), "--epsilon", "1", "--vertices", "6",
                          "--seed", "4", "--json", *extra)
    assert code == 0, err
    rec = json.loads(out)
    rec.pop("remaining"), rec.pop("ledger"), rec.pop("dataset_id")
    return rec


def test_cli_csv_and_parquet_equal_the_text_edge_list_with_the_public_normalisation(tmp_path):
    """Self-loops, repeats (also as (j, i)) and an isolated public vertex (5)."""
    raw = np.array([[0, 1], [1, 2], [2, 0], [0, 0], [1, 0], [3, 4], [2, 3], [3, 2]])
    text = tmp_path / "g.edges"
    text.write_text("".join(f"{a} {b}\n" for a, b in raw))
    csv = tmp_path / "g.csv"
    csv.write_text("source,target\n" + "".join(f"{a},{b}\n" for a, b in raw))
    pq = _parquet(tmp_path / "g.parquet", raw)
    for stat in ("triangles", "kstars", "two-triangles"):
        want = _cli_record(text, "--owner", "--normalise", "--statistic", stat)
        for path in (csv, pq):
            assert _cli_record(path, "--owner", "--normalise", "--statistic", stat) == want
    # the owner is told about the self-loop and the repeats without --normalise; no charge
    led = tmp_path / "l.db"
    code, _, err = _cli("release-graph", "--owner", str(pq), "--epsilon", "1", "--vertices",
                        "6", "--ledger", str(led), "--budget-epsilon", "5")
    assert code != 0 and "--normalise" in err and "normalise=True" not in err
    # analyst mode: row-by-row policy, the same record as the in-memory analyst path
    led2 = tmp_path / "owner.db"
    Session(None, PureDP(100.0), ledger=led2).close()
    recs = [_cli_record(p, "--ledger", str(led2)) for p in (text, csv, pq)]
    assert recs[1] == recs[0] and recs[2] == recs[0]


def test_analyst_outcome_depends_on_the_edges_only_through_the_value(tmp_path):
    """An edge entering, a malformed line, an id outside the vertex set, a self-loop,
    a repeat: the same exit codes and messages, one charge each, only the value moves."""
    base = "0,1\n1,2\n0,2\n"
    outs, values = [], set()
    for i, extra in enumerate(("", "2,3\n", "9,99\n", "x,y\n", "3,3\n", "1,0\n")):
        f = tmp_path / f"g{i}.csv"
        f.write_text(base + extra)
        led = tmp_path / f"g{i}.db"
        Session(None, PureDP(1.0), ledger=led).close()
        runs = []
        for _ in range(2):  # the second does not fit: refused before any edge is read
            code, out, err = _cli("release-graph", str(f), "--epsilon", "0.6", "--vertices",
                                  "4", "--ledger", str(led), "--seed", "0", "--json")
            if code == 0:
                rec = json.loads(out)
                values.add(rec.pop("value"))
                rec.pop("remaining"), rec.pop("ledger")
                out = json.dumps(rec)
            runs.append((code, out, err.replace(str(f), "FILE").replace(str(led), "LEDGER")))
        outs.append(runs)
    assert all(o == outs[0] for o in outs), outs
    assert [r[0] for r in outs[0]] == [0, 3]
    assert len(values) == 2  # "2,3" changes the statistics; the rest are dropped or merged


def test_owner_errors_name_the_problem_before_any_charge(tmp_path):
    led = tmp_path / "l.db"
    mech = build_mechanism("triangles", 1.0, vertices=4)
    for i, body in enumerate(("0,1\n1,9\n", "0,1\nx,y\n", "0,1\n1,1\n")):
        f = tmp_path / f"bad{i}.csv"
        f.write_text(body)
        with Session(f, PureDP(5.0), ledger=led) as s, pytest.raises(DataError):
            s.release(mech, rng=simulation(0))
        with Session(None, None, ledger=led) as s:
            assert s.remaining.epsilon == 5.0
    # a header and comment lines are not edges
    f = tmp_path / "ok.csv"
    f.write_text("# a comment\nsrc,dst\n\n0,1\n1,2\n2,0\n")
    g = gsql.edge_tables(connect(f, lines=True), 4, lines=True)
    assert gsql.triangle_count(g) == 1
    # the vertex set is public: it must be given; other engines are refused up front
    with Session(f, PureDP(5.0), ledger=led) as s, pytest.raises(ParameterError):
        s.release(build_mechanism("triangles", 1.0), rng=simulation(0))


def test_a_release_reads_only_the_statistics_its_query_needs():
    edges, n = GRAPHS["k5_minus_edge"]
    asked: list[str] = []
    tables = _tables(edges, n)
    inner = gsql.summary(tables)
    summary = qg.GraphSummary(n, lambda name: (asked.append(name), inner.cached(name))[1])
    build_mechanism("triangles", 1.0, vertices=n).release(summary, rng=simulation(0))
    assert sorted(asked) == ["triangle_count", "triangle_frontier"]
    with pytest.raises(ParameterError):
        qg.TriangleCount(n_vertices=n + 1).value(summary)


def test_graph_statistics_on_other_engines_are_refused_before_any_charge(tmp_path):
    import sqlite3

    db = tmp_path / "g.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE e (u INTEGER, v INTEGER)")
        con.execute("INSERT INTO e VALUES (0, 1)")
    led = tmp_path / "l.db"
    with Session(str(db), PureDP(2.0), ledger=led, table="e") as s:
        with pytest.raises(ParameterError, match="DuckDB") as e:
            s.release(build_mechanism("triangles", 1.0, vertices=3), rng=simulation(0))
        assert e.value.parameter == "data"
        assert s.remaining.epsilon == 2.0


def test_edge_files_other_than_parquet_csv_tsv_are_refused_before_any_charge(tmp_path):
    f = tmp_path / "g.json"
    f.write_text('{"u": 0, "v": 1}\n')
    led = tmp_path / "l.db"
    Session(None, PureDP(2.0), ledger=led).close()
    for analyst in (False, True):
        with Session(f, None, ledger=led, analyst=analyst) as s:
            with pytest.raises(ParameterError, match="Parquet") as e:
                s.release(build_mechanism("triangles", 1.0, vertices=3), rng=simulation(0))
            assert e.value.parameter == "data"
            assert s.remaining.epsilon == 2.0
