"""The CLI on messy real-world files: a late 'NA', a header-only file, edge
lists with a BOM, non-UTF-8 bytes or sparse 64-bit ids."""

from __future__ import annotations

import json

from cli_support import assert_bad, cli


def test_late_na_is_counted_as_missing(tmp_path):
    f = tmp_path / "late.csv"
    f.write_text("age\n" + "".join(f"{i % 90}\n" for i in range(30_000)) + "NA\n")
    r = cli("release", "--owner", str(f), "--epsilon", "50", "--bounds", "0", "100")
    assert_bad(r, "1 missing", "--drop-missing")
    r = cli(
        "release", "--owner", str(f), "--epsilon", "50", "--bounds", "0", "100", "--drop-missing"
    )  # noqa: E501
    assert r.returncode == 0, r.stderr
    assert "value" in r.stdout


def test_header_only_csv_is_an_empty_selection(tmp_path):
    f = tmp_path / "hdr.csv"
    f.write_text("age\n")
    assert_bad(cli("release", "--owner", str(f), "--epsilon", "1", "--bounds", "0", "100"), "empty")


def test_edge_lists_bom_binary_and_sparse_ids(tmp_path):
    bom = tmp_path / "bom.edges"
    bom.write_bytes(b"\xef\xbb\xbf1 2\n2 3\n3 1\n")
    r = cli(
        "release-graph",
        "--owner",
        str(bom),
        "--epsilon",
        "50",
        "--vertices",
        "4",
        "--seed",
        "1",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert abs(json.loads(r.stdout)["value"] - 1) < 0.5  # the first edge was kept
    binf = tmp_path / "bin.edges"
    binf.write_bytes(b"\xff\xfe1 2\n")
    assert_bad(
        cli("release-graph", "--owner", str(binf), "--epsilon", "1", "--vertices", "5"), "not UTF-8"
    )
    big = tmp_path / "big.edges"
    big.write_text("1 2\n2 3\n3 1\n100000000000 3\n")
    r = cli("release-graph", "--owner", str(big), "--epsilon", "50", "--vertices", "4")
    assert r.returncode == 0, r.stderr


def test_csv_named_in_sql_with_a_late_na_points_to_file_mode(tmp_path):
    f = tmp_path / "late.csv"
    f.write_text("age\n" + "".join(f"{i % 90}\n" for i in range(30_000)) + "NA\n")
    r = cli(
        "release",
        "--owner",
        "--sql",
        f"SELECT age FROM '{f}'",
        "--epsilon",
        "5",
        "--bounds",
        "0",
        "100",
    )  # noqa: E501
    assert_bad(r, "CSV", "table data")
    r = cli(
        "release", "--owner", str(f), "--sql", "SELECT age FROM data", "--epsilon", "5",
        "--bounds", "0", "100", "--drop-missing",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr


def test_delta_zero_for_an_approx_mechanism_says_what_delta_to_pass(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("x\n1\n2\n3\n")
    r = cli("release", "--owner", str(f), "--epsilon", "1", "--bounds", "0", "10", "--mechanism", "ptr",  # noqa: E501
            "--ptr-bound", "1", "--delta", "0")  # fmt: skip
    assert_bad(r, "delta with 0 < delta < 1")  # the CLI maps keywords to flags
