"""`instancedp reproduce`: one table of experiments, each an importable ``reproduce``.

The command runs in-process through ``instancedp.cli.main``; the structural
tests read the sources with ``ast`` (no execution) to check that nothing under
``src/`` or ``benchmarks/`` imports ``tests`` and that no code executes
benchmark scripts or patches ``sys.argv``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import math
import pkgutil
from pathlib import Path

import pytest
from cli_support import cli
from scipy.optimize import brentq
from scipy.stats import norm

import instancedp.experiments as experiments
from instancedp.experiments import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(m.name for m in pkgutil.iter_modules(experiments.__path__))


def _analytic_sigma(epsilon: float, delta: float) -> float:
    """Balle & Wang 2018 Thm. 8, written here from the formula: the σ with δ(ε) = δ (Δ = 1)."""

    def excess(s: float) -> float:
        return (
            norm.cdf(0.5 / s - epsilon * s)
            - math.exp(epsilon) * norm.cdf(-0.5 / s - epsilon * s)
            - delta
        )

    return brentq(excess, 1e-3, 1e3, xtol=1e-12)


def test_reproduce_only_gaussian_quick_writes_its_files_in_process(tmp_path):
    out = tmp_path / "results"  # created by the command
    r = cli("reproduce", str(out), "--only", "gaussian", "--quick")
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["gaussian.json", "gaussian.md"]
    line = next(x for x in r.stdout.splitlines() if x.startswith("gaussian"))
    assert "ok" in line and "gaussian.md, gaussian.json" in line
    rows = json.loads((out / "gaussian.json").read_text())["rows"]
    row = next(x for x in rows if x["epsilon"] == 1.0 and x["delta"] == 1e-5)
    assert row["sigma_analytic"] == pytest.approx(_analytic_sigma(1.0, 1e-5), rel=1e-6)
    assert f"{_analytic_sigma(1.0, 1e-5):.3f}" in (out / "gaussian.md").read_text()  # 3.731


def test_reproduce_names_the_unknown_experiment_and_the_choices(tmp_path):
    r = cli("reproduce", str(tmp_path), "--only", "gaussian", "--only", "nonsense")
    assert r.returncode == 2
    assert "unknown experiment(s) nonsense" in r.stderr
    assert "choose from " + ", ".join(EXPERIMENTS) in r.stderr
    assert not any(tmp_path.iterdir())  # nothing ran


def test_reproduce_reports_a_failing_experiment_and_goes_on(tmp_path, monkeypatch):
    def broken(outdir: Path, quick: bool = True) -> list[Path]:
        raise RuntimeError("boom")

    monkeypatch.setitem(EXPERIMENTS, "median", broken)
    r = cli("reproduce", str(tmp_path), "--only", "median", "--only", "gaussian")
    assert r.returncode == 1
    assert "median           FAILED: RuntimeError: boom" in r.stdout
    assert (tmp_path / "gaussian.md").is_file()


def test_quick_and_full_reach_the_experiment(tmp_path, monkeypatch):
    seen: list[bool] = []

    def spy(outdir: Path, quick: bool = True) -> list[Path]:
        seen.append(quick)
        return []

    monkeypatch.setitem(EXPERIMENTS, "ratio", spy)
    for flag in ("--quick", "--full"):
        assert cli("reproduce", str(tmp_path), "--only", "ratio", flag).returncode == 0
    assert cli("reproduce", str(tmp_path), "--only", "ratio").returncode == 0
    assert seen == [True, False, True]  # quick unless --full


@pytest.mark.parametrize("name", MODULES)
def test_every_experiment_module_exposes_reproduce(name):
    module = importlib.import_module(f"instancedp.experiments.{name}")
    params = list(inspect.signature(module.reproduce).parameters)
    assert params[:2] == ["outdir", "quick"]
    assert inspect.signature(module.reproduce).parameters["quick"].default is True


def test_the_table_holds_each_experiment_once():
    owners = {fn.__module__.rsplit(".", 1)[1] for fn in EXPERIMENTS.values()}
    assert len(owners) == len(EXPERIMENTS)
    # two_triangles (Example 23) is rendered by levels, beside Example 22.
    assert owners == set(MODULES) - {"two_triangles"}
    for name, fn in EXPERIMENTS.items():
        assert fn.__name__ == "reproduce", name


def _python_files() -> list[Path]:
    return sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py"))


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_nothing_under_src_or_benchmarks_imports_tests():
    files = _python_files()
    assert len(files) > 50 and any(p.parent.name == "benchmarks" for p in files)
    offenders = [
        str(p.relative_to(ROOT))
        for p in files
        if any(
            m == "tests" or m.startswith("tests.") or m in {"conftest", "cli_support"}
            for m in _imports(p)
        )
    ]
    assert offenders == []


def test_no_code_executes_scripts_or_patches_sys_argv():
    offenders = []
    for p in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in {
                "spec_from_file_location",
                "exec_module",
                "run_path",
            }:
                offenders.append(f"{p.name}: {node.attr}")
            targets = node.targets if isinstance(node, ast.Assign) else []
            for t in targets:
                if ast.unparse(t) == "sys.argv":
                    offenders.append(f"{p.name}: assigns sys.argv")
    assert offenders == []


def _wrapped(path: Path) -> str | None:
    """The experiment module a benchmark script imports, if any."""
    for m in _imports(path):
        if m == "instancedp.experiments":
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module == m:
                    return node.names[0].name
        if m.startswith("instancedp.experiments."):
            return m.rsplit(".", 1)[1]
    return None


def test_benchmarks_over_an_experiment_are_thin_wrappers():
    wrappers = {p.stem: _wrapped(p) for p in sorted((ROOT / "benchmarks").glob("*.py"))}
    wrappers = {k: v for k, v in wrappers.items() if v is not None}
    assert set(wrappers.values()) == set(MODULES) - {"compare", "two_triangles"}
    for stem, module in wrappers.items():
        tree = ast.parse((ROOT / "benchmarks" / f"{stem}.py").read_text())
        functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert functions == ["main"], stem  # argument parsing and one call, nothing else
        calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert f"{module}.reproduce" in calls, stem


def test_a_benchmark_wrapper_writes_where_it_is_told(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_gaussian", ROOT / "benchmarks/gaussian.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    paths = module.main(["--quick", "--out", str(tmp_path)])
    assert paths == [tmp_path / "gaussian.md", tmp_path / "gaussian.json"]
    assert all(p.stat().st_size > 1_000 for p in paths)
