"""``instancedp release FILE --by COL``: output forms, public keys, analyst mode on neighbours."""

from __future__ import annotations

import csv
import io
import json

from cli_support import cli

from instancedp import ApproxDP, PureDP, Session

DATA = "state,income\n" + "".join(f"{s},{v}\n" for s, v in
                                  [("CA", 10), ("CA", 20), ("CA", 90), ("NY", 50), ("NY", 55)])


def _files(tmp_path, extra: str = ""):
    f = tmp_path / "d.csv"
    f.write_text(DATA + extra)
    k = tmp_path / "keys.csv"
    k.write_text("state\nCA\nNY\nTX\n")
    return f, k


def test_csv_output_lists_every_public_key(tmp_path):
    f, k = _files(tmp_path)
    r = cli("release", f, "--column", "income", "--statistic", "median,p90,count", "--by",
            "state", "--keys", k, "--epsilon", "1", "--bounds", "0", "100", "--owner",
            "--seed", "0", "--csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0] == ["state", "median", "p90", "count"]
    assert [row[0] for row in rows[1:]] == ["CA", "NY", "TX"]  # TX is empty, still answered
    assert "guarantee 1-DP" in r.stderr


def test_json_record_has_one_guarantee_and_charges_once(tmp_path):
    f, k = _files(tmp_path)
    led = tmp_path / "l.db"
    r = cli("release", f, "--column", "income", "--statistic", "median,mean", "--by", "state",
            "--keys", k, "--epsilon", "0.5", "--bounds", "0", "100", "--owner", "--ledger", led,
            "--budget-epsilon", "2", "--json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    *cells, out = lines  # JSON lines: one per group × statistic, then the guarantee
    assert [(c["state"], c["statistic"]) for c in cells] == [
        (k, s) for k in ("CA", "NY", "TX") for s in ("median", "mean")]
    assert all(set(c) == {"state", "statistic", "value"} for c in cells)
    assert out["guarantee"] == {"type": "pure", "epsilon": 0.5} and out["groups"] == 3
    assert out["remaining"]["epsilon"] == 1.5
    assert len(Session(None, ledger=led).history()) == 1


def test_output_csv_jsonl_and_plot_files(tmp_path):
    f, k = _files(tmp_path)
    args = ["release", f, "--column", "income", "--statistic", "median,count", "--by", "state",
            "--keys", k, "--epsilon", "1", "--bounds", "0", "100", "--owner", "--seed", "3"]
    r = cli(*args, "--output", tmp_path / "g.csv", "--plot", tmp_path / "g.png")
    assert r.returncode == 0, r.stderr
    rows = list(csv.reader(io.StringIO((tmp_path / "g.csv").read_text())))
    assert rows[0] == ["state", "median", "count"] and [x[0] for x in rows[1:]] == [
        "CA", "NY", "TX"]
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r2 = cli(*args, "--output", tmp_path / "g.jsonl", "--json")
    assert r2.returncode == 0, r2.stderr
    assert (tmp_path / "g.jsonl").read_text().splitlines() == r2.stdout.splitlines()
    # the same seed, the same values in both forms
    first = json.loads(r2.stdout.splitlines()[0])
    assert first["state"] == "CA" and float(rows[1][1]) == first["value"]
    for bad in (["--output", tmp_path / "g.txt"], ["--plot", tmp_path / "g.pdf"]):
        r3 = cli(*args, *bad)
        assert r3.returncode == 2 and bad[0] in r3.stderr


def test_sqlite_table_by_group(tmp_path):
    import sqlite3

    db = tmp_path / "d.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (state TEXT, income REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [("CA", 10.0), ("CA", 20.0), ("NY", 50.0)])
    con.commit()
    con.close()
    r = cli("release", db, "--table", "t", "--column", "income", "--statistic", "median,count",
            "--by", "state", "--keys", _files(tmp_path)[1], "--epsilon", "1", "--bounds", "0",
            "100", "--owner", "--seed", "0", "--csv")
    assert r.returncode == 0, r.stderr
    assert [row[0] for row in csv.reader(io.StringIO(r.stdout))] == ["state", "CA", "NY", "TX"]


def test_unknown_keys_under_pure_budget_refused_before_any_charge(tmp_path):
    f, _ = _files(tmp_path)
    led = tmp_path / "l.db"
    Session(None, PureDP(1.0), ledger=led).close()
    r = cli("release", f, "--column", "income", "--by", "state", "--epsilon", "0.5",
            "--bounds", "0", "100", "--ledger", led)
    assert r.returncode == 2 and "keys" in r.stderr
    assert Session(None, ledger=led).history() == []


def test_analyst_mode_neighbours_see_the_same_record_but_values(tmp_path):
    seen = []
    for i, extra in enumerate(("", "TX,99999\n")):  # a row holding a key of its own
        d = tmp_path / str(i)
        d.mkdir()
        f, _ = _files(d, extra)
        led = d / "l.db"
        Session(None, ApproxDP(1.0, 1e-5), ledger=led).close()
        r = cli("release", f, "--column", "income", "--statistic", "median", "--by", "state",
                "--epsilon", "0.5", "--delta", "1e-6", "--bounds", "0", "100", "--ledger",
                led, "--json", "--seed", "1")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout.splitlines()[-1])  # the guarantee line (no values)
        seen.append((out, r.stderr))
    assert seen[0] == seen[1]


def test_group_flags_without_by_are_refused(tmp_path):
    f, k = _files(tmp_path)
    r = cli("release", f, "--column", "income", "--keys", k, "--epsilon", "1", "--bounds",
            "0", "100", "--owner")
    assert r.returncode == 2 and "--by" in r.stderr
