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
    out = json.loads(r.stdout)
    assert out["guarantee"] == {"type": "pure", "epsilon": 0.5}
    assert [row["state"] for row in out["value"]] == ["CA", "NY", "TX"]
    assert out["remaining"]["epsilon"] == 1.5
    assert len(Session(None, ledger=led).history()) == 1


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
        out = json.loads(r.stdout)
        out.pop("value")
        seen.append((out, r.stderr))
    assert seen[0] == seen[1]


def test_group_flags_without_by_are_refused(tmp_path):
    f, k = _files(tmp_path)
    r = cli("release", f, "--column", "income", "--keys", k, "--epsilon", "1", "--bounds",
            "0", "100", "--owner")
    assert r.returncode == 2 and "--by" in r.stderr
