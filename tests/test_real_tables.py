"""Regressions found by using the library on real public tables (penguins, cars,
stocks, …) as a data person would: each test is a small synthetic reproduction."""

from __future__ import annotations

from cli_support import cli


def test_every_registered_mechanism_is_named_in_words() -> None:
    # the release summary read "mechanism   unbounded quantile" for the bound-free
    # median, with no paper and no record name
    from instancedp import registry
    from instancedp.cli import MECHANISM_IN_WORDS, mechanism_in_words

    for key in registry.keys():
        assert key in MECHANISM_IN_WORDS, key
        assert mechanism_in_words(key).endswith(f"[{key}]")


def test_ratio_summary_names_its_method(tmp_path) -> None:
    p = tmp_path / "flags.csv"
    p.write_text("flag\n" + "\n".join(["1", "0", "1", "1"] * 5) + "\n")
    r = cli("release", p, "--column", "flag", "--statistic", "ratio", "--epsilon", "1",
            "--owner", "--seed", "1", "--mechanism", "naive")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("mechanism"))
    assert "noisy a ÷ noisy b" in line and "[private_ratio, method naive]" in line
