"""The ``instancedp`` command line: a thin layer over Session, io and experiments.

Exit codes: 0 success; 2 bad input (one line on stderr naming the problem and
the fix; nothing charged); 3 budget exhausted (the remaining budget on
stderr); 1 an audit that found a violation, or an internal error.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    name="instancedp",
    help=(
        "Instance-adaptive differential privacy: private statistics from files, SQL and "
        "graphs with noise fitted to the data at hand, and a persistent privacy budget."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # Whole help lines: click wraps at the terminal width and never breaks a word.
    context_settings={"max_content_width": 100},
)


def _print_version(value: bool) -> None:
    if value:
        from . import __version__

        print(f"instancedp {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Instance-adaptive differential privacy: private statistics from files, SQL and graphs
    with noise fitted to the data at hand, and a persistent privacy budget."""
ledger_app = typer.Typer(help="Create and inspect privacy-budget ledgers.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")

EXIT_BAD_INPUT = 2
EXIT_BUDGET = 3

# Options shared by `release` and `release-graph` (and `--json` everywhere).
PtrBoundOpt = Annotated[float | None, typer.Option(help="Proposed LS bound for ptr.")]
LedgerOpt = Annotated[
    str | None, typer.Option(help="Budget ledger: an SQLite file or a postgresql:// URL.")
]
BudgetEpsilonOpt = Annotated[float | None, typer.Option(help="Total ε (first use).")]
BudgetDeltaOpt = Annotated[float | None, typer.Option(help="Total δ (first use).")]
BudgetRhoOpt = Annotated[float | None, typer.Option(help="Total zCDP ρ (first use).")]
ZcdpDeltaOpt = Annotated[
    float | None, typer.Option(help="δ at which a zCDP release is charged to an (ε, δ) budget.")
]
DatasetIdOpt = Annotated[str, typer.Option(help="Budget key in the ledger.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


class CLIError(ValueError):
    """Bad command-line input (exit 2)."""


# -- shared helpers ----------------------------------------------------------------
def _budget_from_flags(epsilon: float | None, delta: float | None, rho: float | None) -> Any:
    from .privacy import ZCDP, ApproxDP, PureDP

    if rho is not None:
        if epsilon is not None or delta is not None:
            raise CLIError(
                "give either --budget-epsilon [--budget-delta] or --budget-rho, not both"
            )
        return ZCDP(rho)
    if epsilon is None:
        if delta is not None:
            raise CLIError("--budget-delta needs --budget-epsilon E as well")
        return None
    if delta is None or float(delta) == 0:
        return PureDP(epsilon)
    return ApproxDP(epsilon, delta)


def _rng(seed: int | None) -> Any:
    if seed is None:
        return None
    from .random import simulation

    return simulation(seed)


def _warn_seeded() -> None:
    print(
        "WARNING: --seed makes a SEEDED SIMULATION, not a private release (secure: false); "
        "use it for demos and tests only",
        file=sys.stderr,
    )


def _fmt_value(v: Any) -> str:
    if v is None:
        return "refused (⊥: the mechanism declined to answer; the budget is still spent)"
    if isinstance(v, float):
        return f"{v:.10g}"
    return str(v)


def _fmt_params(params: dict[str, Any]) -> str:
    parts = []
    for k, v in params.items():
        if isinstance(v, dict):
            v = "{" + _fmt_params(v) + "}"
        elif isinstance(v, float):
            v = f"{v:g}"
        parts.append(f"{k}={v}")
    return ", ".join(parts)


def _run_release(
    data: Any,
    do_release: Any,
    *,
    guarantee: Any,
    budget: Any,
    ledger: str | None,
    dataset_id: str,
    seed: int | None,
    as_json: bool,
    zcdp_delta: float | None = None,
    analyst: bool = False,
    neighbours: str | None = None,
    where: dict[str, Any] | None = None,
) -> None:
    """Open the Session, let ``do_release(session, rng)`` release, print the record."""

    rng = _rng(seed)
    extra: dict[str, Any] = {"neighbours": neighbours} if neighbours is not None else {}
    extra.update(where or {})
    fresh = ledger is not None and not analyst and not Path(ledger).exists()
    try:
        _release_and_print(
            data, do_release, budget=budget, guarantee=guarantee, ledger=ledger,
            dataset_id=dataset_id, rng=rng, as_json=as_json, analyst=analyst, extra=extra,
        )
    except ValueError:
        # Bad input never leaves behind a ledger this command created (it holds
        # the budget row only: nothing was charged).
        if fresh and Path(ledger).exists():  # type: ignore[arg-type]
            Path(ledger).unlink()  # type: ignore[arg-type]
        raise


def _release_and_print(
    data: Any, do_release: Any, *, budget: Any, guarantee: Any, ledger: Path | None,
    dataset_id: str, rng: Any, as_json: bool, analyst: bool, extra: dict[str, Any],
) -> None:
    from .session import Session

    session = Session(
        data,
        None if analyst else (budget if (budget is not None or ledger is not None) else guarantee),
        ledger=ledger,
        dataset_id=dataset_id,
        analyst=analyst,
        **extra,
    )
    with session:
        with _spinner("charging the ledger and computing the release"):
            release = do_release(session, rng)
        remaining = session.remaining if ledger is not None else None
        total = session.budget if ledger is not None else None
    if not release.secure:
        _warn_seeded()
    out = release.to_dict()
    out["remaining"] = remaining.as_dict() if remaining is not None else None
    out["ledger"] = _ledger_label(ledger) if ledger is not None else None
    out["dataset_id"] = dataset_id if ledger is not None else None
    if as_json:
        print(json.dumps(out, indent=2, default=str))
        return
    print(f"value       {_fmt_value(release.value)}")
    print(f"guarantee   {release.guarantee.describe()}")
    print(f"mechanism   {release.mechanism}")
    print(f"parameters  {_fmt_params(dict(release.parameters))}")
    if remaining is not None:
        print(
            f"remaining   {remaining.describe()} of {total.describe()} "
            f"(ledger {_ledger_label(ledger)}, dataset '{dataset_id}')"
        )
    else:
        print("remaining   (no ledger: pass --ledger PATH --budget-epsilon E to track a budget)")
    if release.secure:
        print("secure      true")
    else:
        print("secure      false  <-- SEEDED SIMULATION, NOT A PRIVATE RELEASE")


# -- release -------------------------------------------------------------------------
@app.command()
def release(
    file: Annotated[
        str | None,
        typer.Argument(
            help="CSV/TSV/Parquet/JSON file, SQLite file (.sqlite/.db, sqlite:///PATH) or "
            "postgresql:// URL (optional with --sql or --spark).",
            show_default=False,
        ),
    ] = None,
    column: Annotated[str | None, typer.Option(help="Column to use.")] = None,
    statistic: Annotated[
        str,
        typer.Option(
            help="One of: median, quantile, mean, trimmed-mean, count, sum, ratio, min, max.",
        ),
    ] = "median",
    epsilon: Annotated[float, typer.Option(help="Privacy parameter ε > 0.")] = ...,  # type: ignore[assignment]
    delta: Annotated[float | None, typer.Option(help="δ in [0, 1) for (ε, δ) mechanisms.")] = None,
    bounds: Annotated[
        tuple[float, float] | None,
        typer.Option(
            help="Public data bounds LO HI (needed by most statistics).", show_default=False
        ),
    ] = None,
    quantile: Annotated[
        float | None, typer.Option(help="Q in (0, 1) for --statistic quantile.")
    ] = None,
    trim: Annotated[
        float | None, typer.Option(help="Trimmed fraction per side (trimmed-mean).")
    ] = None,
    mechanism: Annotated[
        str | None,
        typer.Option(
            help="One of: smooth, ptr, exponential, laplace, gaussian, bounded-ls, ksw, naive."
        ),
    ] = None,
    noise: Annotated[
        str | None,
        typer.Option(
            help="Smooth-sensitivity noise, one of: polyplace, student_t, cauchy, laplace, "
            "laplace_log_normal, uniform_log_normal, arsinh_normal."
        ),
    ] = None,
    gamma: Annotated[
        float | None, typer.Option(help="Smoothness γ (default: public rule).")
    ] = None,
    ptr_bound: PtrBoundOpt = None,
    sql: Annotated[str | None, typer.Option(help="SQL (DuckDB) selecting the column.")] = None,
    drop_missing: Annotated[bool, typer.Option(help="Drop NULL/NaN instead of refusing.")] = False,
    ledger: LedgerOpt = None,
    budget_epsilon: BudgetEpsilonOpt = None,
    budget_delta: BudgetDeltaOpt = None,
    budget_rho: BudgetRhoOpt = None,
    zcdp_delta: ZcdpDeltaOpt = None,
    dataset_id: DatasetIdOpt = "default",
    json_out: JsonOpt = False,
    seed: Annotated[
        int | None,
        typer.Option(help="Seeded simulation randomness: NOT a secure release (demos only)."),
    ] = None,
    analyst: Annotated[
        bool,
        typer.Option(
            "--analyst/--owner",
            help="Analyst mode (the default): nothing shown depends on the rows except the "
            "charged release; needs the owner's existing ledger. --owner: the data owner's "
            "diagnostics (see docs/threat-model.md).",
        ),
    ] = True,
    neighbours: Annotated[
        str | None,
        typer.Option(help="Neighbour relation: add-remove or substitution."),
    ] = None,
    table: Annotated[
        str | None,
        typer.Option(help="Table of the SQLite file or PostgreSQL URL given as FILE."),
    ] = None,
    resolution: Annotated[
        float | None,
        typer.Option(
            help="Median/quantile from a database, Spark or Parquet: the public candidate "
            "grid's step (default: a 4,097-point log grid over the bounds)."
        ),
    ] = None,
    spark_table: Annotated[
        str | None,
        typer.Option(
            "--spark",
            help="Table name in the active (or a new default) SparkSession, instead of FILE.",
        ),
    ] = None,
) -> None:
    """Release one private statistic of a column, charged to a budget ledger."""
    from .session import build_mechanism

    recipe = dict(
        mechanism=mechanism,
        bounds=bounds,
        quantile=quantile,
        trim=trim,
        noise=noise,
        gamma=gamma,
        ptr_bound=ptr_bound,
    )
    _check_statistic(statistic, "release")
    relation = _relation(neighbours)
    # Validates every public parameter before anything is read or charged.
    mech = build_mechanism(statistic, epsilon, delta, **recipe)
    budget = _budget_from_flags(budget_epsilon, budget_delta, budget_rho)
    where = _where(file, table, spark_table, sql)
    if where:
        file = spark_table if spark_table is not None else file
        if "sql" in where:
            sql = None
    if file is None and sql is None:
        raise CLIError('no data: pass a FILE or --sql "SELECT ..."')
    if analyst:
        _analyst_flags(budget, ledger)
        if file is None:
            raise CLIError(
                'analyst mode reads the FILE given on the command line: pass FILE and query it '
                'as the table data (--sql "SELECT col FROM data WHERE ...")'
            )
    _run_release(
        file,
        lambda session, rng: session.release_statistic(
            statistic,
            column,
            epsilon=epsilon,
            delta=delta,
            sql=sql,
            rng=rng,
            convert_delta=zcdp_delta,
            drop_missing=drop_missing,
            **recipe,
            **({"resolution": resolution} if resolution is not None else {}),
        ),
        guarantee=mech.guarantee,
        budget=budget,
        ledger=ledger,
        dataset_id=dataset_id,
        seed=seed,
        as_json=json_out,
        zcdp_delta=zcdp_delta,
        analyst=analyst,
        neighbours=relation,
        where=where,
    )


def _where(
    file: str | None, table: str | None, spark_table: str | None, sql: str | None
) -> dict[str, Any]:
    """Session keywords for data that live in a database or in Spark (docs/backends.md)."""
    from .sources import input_kind

    if spark_table is not None:
        if file is not None or table is not None:
            raise CLIError("--spark TABLE replaces FILE and --table: give one of them")
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            raise CLIError("--spark needs pyspark: pip install 'instancedp[spark]'") from None
        spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        return {"spark": spark, **({"sql": sql} if sql is not None else {})}
    kind = None if file is None else input_kind(file)
    if kind in ("sqlite", "postgresql"):
        if (table is None) == (sql is None):
            raise CLIError(f"a {kind} FILE needs --table T or --sql \"SELECT ...\" (one of them)")
        return {"table": table} if table is not None else {"sql": sql}
    if table is not None:
        raise CLIError("--table applies to a SQLite file or a postgresql:// URL")
    return {}


def _analyst_flags(budget: Any, ledger: Path | None) -> None:
    """Analyst mode spends the owner's budget: it sets none and needs the owner's ledger."""
    if budget is not None:
        raise CLIError(
            "--budget-epsilon/--budget-delta/--budget-rho set a budget, which only the data "
            "owner does: drop them (analyst mode spends the ledger's budget) or pass --owner"
        )
    if ledger is None:
        raise CLIError(
            "analyst mode (the default) charges the data owner's ledger: pass --ledger PATH "
            "(created by the owner with `instancedp ledger init`), or --owner if you are the "
            "data owner"
        )


def _relation(neighbours: str | None) -> str | None:
    if neighbours is None:
        return None
    v = neighbours.strip().lower().replace("-", "_")
    if v not in ("add_remove", "substitution"):
        raise CLIError(
            f"--neighbours must be add-remove or substitution; got {neighbours!r}"
        )
    return v


def _check_statistic(statistic: str, command: str) -> None:
    """Point a statistic given to the wrong command at the right one; suggest spellings."""
    from .errors import did_you_mean
    from .session import GRAPH_STATISTICS, STATISTICS

    st = str(statistic).lower().replace("_", "-")
    mine, other = (
        (STATISTICS, GRAPH_STATISTICS) if command == "release" else (GRAPH_STATISTICS, STATISTICS)
    )
    if st in mine:
        return
    if st in other:
        right = "release-graph" if command == "release" else "release"
        raise CLIError(
            f"statistic {statistic!r} is computed by `instancedp {right}`, not `{command}`: "
            f"use instancedp {right} ... --statistic {st}"
        )
    raise CLIError(
        f"--statistic must be one of {', '.join(mine)}; got {statistic!r}"
        + did_you_mean(st, mine)
    )


@app.command("release-graph")
def release_graph(
    edges: Annotated[Path, typer.Argument(help="Edge-list file: one 'u v' pair per line.")],
    statistic: Annotated[str, typer.Option(help="triangles|kstars|two-triangles.")] = "triangles",
    epsilon: Annotated[float, typer.Option(help="Privacy parameter ε > 0.")] = ...,  # type: ignore[assignment]
    delta: Annotated[float | None, typer.Option(help="δ for (ε, δ) mechanisms.")] = None,
    k: Annotated[int | None, typer.Option(help="k for kstars (default 2).")] = None,
    vertices: Annotated[
        int | None,
        typer.Option(help="Public number of vertices (required: edge privacy fixes them)."),
    ] = None,
    mechanism: Annotated[str | None, typer.Option(help="smooth|ptr|laplace|bounded-ls.")] = None,
    noise: Annotated[str | None, typer.Option(help="Smooth-sensitivity noise family.")] = None,
    gamma: Annotated[float | None, typer.Option(help="Smoothness γ.")] = None,
    ptr_bound: PtrBoundOpt = None,
    normalise: Annotated[
        bool, typer.Option(help="Drop self-loops and merge repeated edges instead of refusing.")
    ] = False,
    ledger: LedgerOpt = None,
    budget_epsilon: BudgetEpsilonOpt = None,
    budget_delta: BudgetDeltaOpt = None,
    budget_rho: BudgetRhoOpt = None,
    zcdp_delta: ZcdpDeltaOpt = None,
    dataset_id: DatasetIdOpt = "default",
    json_out: JsonOpt = False,
    seed: Annotated[int | None, typer.Option(help="Seeded simulation (NOT secure).")] = None,
    analyst: Annotated[
        bool,
        typer.Option(
            "--analyst/--owner",
            help="Analyst mode (the default): lines that are not two ids in 0..N-1 are "
            "skipped, nothing shown depends on the edges except the release. --owner: the data "
            "owner's diagnostics.",
        ),
    ] = True,
) -> None:
    """Release a private subgraph count under edge privacy."""
    from . import io
    from .session import VERTICES_REQUIRED, build_mechanism

    st = statistic.lower().replace("_", "-")
    _check_statistic(st, "release-graph")
    if k is not None and st != "kstars":
        raise CLIError("--k applies to --statistic kstars only")
    if vertices is None:
        raise CLIError(VERTICES_REQUIRED)
    mech = build_mechanism(
        st,
        epsilon,
        delta,
        mechanism=mechanism,
        k=k,
        noise=noise,
        gamma=gamma,
        ptr_bound=ptr_bound,
        vertices=vertices,
    )
    budget = _budget_from_flags(budget_epsilon, budget_delta, budget_rho)
    if analyst:
        _analyst_flags(budget, ledger)
        graph: Any = edges  # read by the Session after the charge, under the public policy
    else:
        graph = _normalised_graph(io.read_edge_list(edges), normalise, vertices)
    _run_release(
        graph,
        lambda session, rng: session.release(mech, rng=rng, convert_delta=zcdp_delta),
        guarantee=mech.guarantee,
        budget=budget,
        ledger=ledger,
        dataset_id=dataset_id,
        seed=seed,
        as_json=json_out,
        zcdp_delta=zcdp_delta,
        analyst=analyst,
    )


def _normalised_graph(edges: Any, normalise: bool, vertices: int) -> Any:
    """Validate the graph (self-loops, duplicates, ids < vertices) before anything is charged."""
    from .queries import as_graph

    try:
        return as_graph(edges, vertices, normalise=normalise)
    except ValueError as exc:
        msg = str(exc).replace("normalise=True", "--normalise").replace("n_vertices", "--vertices")
        raise CLIError(msg) from None


# -- compare -------------------------------------------------------------------------
@app.command()
def compare(
    file: Annotated[
        Path | None,
        typer.Argument(
            help="Your data (planning only: the output is NOT private).", show_default=False
        ),
    ] = None,
    column: Annotated[str | None, typer.Option(help="Column to use.")] = None,
    sql: Annotated[str | None, typer.Option(help="SQL (DuckDB) selecting the column.")] = None,
    statistic: Annotated[str, typer.Option(help="median|quantile|mean|...")] = "median",
    bounds: Annotated[tuple[float, float] | None, typer.Option(help="Public bounds LO HI.")] = None,
    quantile: Annotated[float | None, typer.Option(help="Q for quantile.")] = None,
    epsilons: Annotated[str, typer.Option(help="Comma-separated ε values.")] = "0.1,0.25,0.5,1,2",
    delta: Annotated[float, typer.Option(help="δ for (ε, δ) mechanisms.")] = 1e-6,
    synthetic: Annotated[
        str, typer.Option(help="Synthetic data when no FILE: normal|lognormal|uniform|ties.")
    ] = "normal",
    n: Annotated[int, typer.Option(help="Synthetic sample size.")] = 1000,
    trials: Annotated[int | None, typer.Option(help="Releases per (mechanism, ε).")] = None,
    seed: Annotated[int, typer.Option(help="Simulation seed.")] = 0,
    drop_missing: Annotated[bool, typer.Option(help="Drop NULL/NaN.")] = False,
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("instancedp-compare"),
    quick: Annotated[bool, typer.Option(help="Fewer trials.")] = False,
) -> None:
    """Simulate every applicable mechanism over a range of ε; write a table and a plot."""
    from . import io
    from .experiments import compare as C

    eps = _parse_floats(epsilons, "epsilons")
    if file is not None or sql is not None:
        data = io.read_column(file, column, sql=sql, drop_missing=drop_missing)
        source = f"your data ({file if file is not None else 'SQL'}): planning only"
    else:
        data, source = None, None
    with _progress() as progress:
        result = C.compare(
            data,
            statistic=statistic,
            bounds=bounds,
            quantile=quantile,
            epsilons=eps,
            delta=delta,
            trials=trials,
            seed=seed,
            synthetic=synthetic,
            n=n,
            quick=quick,
            source=source,
            progress=progress,
        )
    paths = C.write(result, out)
    print(C.to_markdown(result))
    for p in paths:
        print(f"wrote {p}")


def _parse_floats(text: str, name: str) -> list[float]:
    try:
        vals = [float(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise CLIError(f"{name} must be comma-separated numbers, got {text!r}") from None
    if not vals:
        raise CLIError(f"{name} must list at least one number")
    return vals


class _spinner:
    """A rich spinner on stderr while a long step runs (only on a terminal)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._status: Any = None

    def __enter__(self) -> None:
        from rich.console import Console

        console = Console(stderr=True)
        if console.is_terminal:
            self._status = console.status(self.text)
            self._status.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)


class _progress:
    """A rich progress bar on stderr (silent when stderr is not a terminal)."""

    def __enter__(self) -> Any:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        self._p = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self._p.__enter__()
        return self._p

    def __exit__(self, *exc: Any) -> None:
        self._p.__exit__(*exc)


# -- audit ---------------------------------------------------------------------------
@app.command()
def audit(
    name: Annotated[str | None, typer.Argument(help="Catalogue mechanism (see --list).")] = None,
    epsilon: Annotated[float, typer.Option(help="Claimed ε.")] = 1.0,
    delta: Annotated[float | None, typer.Option(help="Claimed δ.")] = None,
    samples: Annotated[int, typer.Option(help="Samples per neighbour dataset.")] = 100_000,
    seed: Annotated[int, typer.Option(help="Audit seed.")] = 0,
    list_: Annotated[bool, typer.Option("--list", help="List the catalogue.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Audit a built-in mechanism: exact privacy profile and a black-box lower bound on ε."""
    from .audit import catalogue

    if list_ or name is None:
        for key, desc in catalogue.CATALOGUE.items():
            print(f"{key:28s} {desc}")
        if name is None and not list_:
            raise CLIError("name a mechanism to audit (the list is above)")
        return
    if name not in catalogue.CATALOGUE:
        raise CLIError(
            f"unknown mechanism {name!r} for audit: choose one of {', '.join(catalogue.CATALOGUE)}"
        )
    from . import _validate

    eps = _validate.epsilon(epsilon)
    dl = None if delta is None else _validate.delta(delta)
    if not (isinstance(samples, int) and samples >= 100):
        raise CLIError(f"samples must be an integer >= 100, got {samples!r}")
    result = catalogue.run_audit(name, eps, dl, samples, seed)
    if json_out:
        print(json.dumps(result, indent=2, default=_json_default))
    else:
        _print_audit(result)
    if _audit_failed(result):
        raise typer.Exit(1)


def _print_audit(result: dict[str, Any]) -> None:
    """A short human summary of ``run_audit``'s dict (all of it with --json)."""

    def num(v: Any) -> str:
        return f"{v:.6g}" if isinstance(v, float) else str(v)

    print(f"mechanism   {result.get('name', '?')} — {result.get('description', '')}")
    g = result.get("guarantee")
    if isinstance(g, dict):
        print("claimed     " + ", ".join(f"{k}={num(v)}" for k, v in g.items()))
    ex = result.get("exact")
    if isinstance(ex, dict):
        print(
            f"exact       {ex.get('verdict', '?')}: measured {num(ex.get('measured'))} vs "
            f"claimed {num(ex.get('claimed'))} (error bound {num(ex.get('error_bound'))}) "
            f"over {ex.get('pairs_checked', '?')} neighbour pairs"
        )
    elif ex is None:
        print("exact       (output law not known in closed form: empirical audit only)")
    em = result.get("empirical")
    if isinstance(em, dict):
        print(
            f"empirical   epsilon lower bound {num(em.get('epsilon_lower_bound'))} "
            f"({'VIOLATED' if em.get('violated') else 'not violated'}); "
            f"{em.get('samples', '?')} samples; false-alarm probability <= "
            f"{num(em.get('false_alarm_bound'))}"
        )
    print(f"verdict     {result.get('verdict', '?')}")
    for key, val in result.items():
        if key not in ("name", "description", "guarantee", "exact", "empirical", "verdict"):
            print(f"{key:11s} {num(val)}")


def _audit_failed(result: dict[str, Any]) -> bool:
    verdict = str(result.get("verdict", "")).lower()
    if verdict in ("fail", "failed", "violated", "violation"):
        return True
    return bool(result.get("violated", False))


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if hasattr(o, "as_dict"):
        return o.as_dict()
    return str(o)


# -- noise-table -------------------------------------------------------------------------
@app.command("noise-table")
def noise_table(
    epsilon: Annotated[float, typer.Option(help="ε (the table is per unit of SS).")] = 1.0,
    delta: Annotated[float, typer.Option(help="δ for the Laplace row.")] = 1e-5,
    out: Annotated[Path | None, typer.Option(help="Folder for noise_table.md/.json/.png.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Standard deviation of each smooth-sensitivity noise family per unit of smooth
    sensitivity (see docs/noise.md)."""
    from . import _validate
    from .experiments import noise_table as NT

    eps = _validate.epsilon(epsilon)
    dl = _validate.delta(delta, allow_zero=False)
    rows = NT.noise_std_table(epsilon=eps, delta=dl)
    note = (
        f"Noise std per unit of smooth sensitivity at epsilon={eps:g} (laplace at delta={dl:g}), "
        "each family at its best shape; — = gamma not admissible, ∞ = infinite variance."
    )
    if json_out:
        print(json.dumps(_finite_json(rows), indent=2, default=_json_default))
    else:
        print(note + "\n\n" + _markdown_rows(rows))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "noise_table.md").write_text(note + "\n\n" + _markdown_rows(rows) + "\n")
        (out / "noise_table.json").write_text(
            json.dumps(_finite_json(rows), indent=2, default=_json_default)
        )
        plot = getattr(NT, "plot_noise_std", None)
        if callable(plot):
            plot(rows, out / "noise_table.png")
        print(f"wrote {out}/noise_table.md", file=sys.stderr)


def _finite_json(obj: Any) -> Any:
    """Strict JSON: NaN → null (not applicable), ±inf → "inf"/"-inf"."""
    if isinstance(obj, float):
        if math.isnan(obj):
            return None
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, dict):
        return {k: _finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_json(v) for v in obj]
    return obj


def _markdown_rows(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no rows)"
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]

    def cell(v: Any) -> str:
        if isinstance(v, float):
            if math.isnan(v):
                return "—"  # not applicable (e.g. γ not admissible for that family)
            return "∞" if math.isinf(v) else f"{v:.4g}"
        if isinstance(v, dict):
            return ", ".join(f"{k}={cell(x)}" for k, x in v.items())
        return str(v)

    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(cell(r.get(k, "")) for k in keys) + " |")
    return "\n".join(lines)


# -- reproduce --------------------------------------------------------------------------
# name → (experiment module, benchmark script that renders it into docs/results)
EXPERIMENTS: dict[str, tuple[str, str | None]] = {
    "noise_table": ("noise_table", "noise_std.py"),
    "median": ("median", "median.py"),
    "ratio": ("ratio", "ratio.py"),
    "gamma_study": ("gamma_study", "gamma.py"),
    "levels": ("levels", "levels.py"),  # Example 22 and Example 23 (two_triangles)
    "gaussian": ("gaussian", "gaussian.py"),
    "smalldb": ("smalldb", "smalldb.py"),
    "compare": ("compare", None),
    "sensitivity": ("sensitivity", "sensitivity.py"),
    "safe_sampling": ("safe_sampling", "safe_sampling.py"),
}


def _benchmarks_dir() -> Path | None:
    d = Path(__file__).resolve().parents[2] / "benchmarks"
    return d if d.is_dir() else None


def _run_benchmark_script(script: Path, outdir: Path, quick: bool) -> None:
    """Run a benchmarks/ script's ``main`` with its docs/results folder pointed at ``outdir``."""
    import importlib.util
    import inspect

    spec = importlib.util.spec_from_file_location(f"_instancedp_bench_{script.stem}", script)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {script}")
    module = importlib.util.module_from_spec(spec)
    argv = sys.argv
    sys.argv = [str(script)] + (["--quick"] if quick else [])
    try:
        spec.loader.exec_module(module)
        results = (script.parents[1] / "docs" / "results").resolve()
        for attr, val in list(vars(module).items()):
            if isinstance(val, Path) and val.resolve() == results:
                setattr(module, attr, outdir)
        main = module.main
        if "quick" in inspect.signature(main).parameters:
            main(quick=quick)
        else:
            main()
    finally:
        sys.argv = argv


def run_experiment(name: str, outdir: Path, quick: bool = True) -> str:
    """Regenerate one experiment's tables/figures into ``outdir``; a one-line status.

    The module's own ``reproduce(outdir, quick=...)`` is used if it has one;
    else, from a source checkout, the matching ``benchmarks/`` script renders
    the experiment (its docs/results folder redirected to ``outdir``;
    ``--quick`` unless ``quick=False``); else every public function with a
    ``quick`` flag (all other arguments defaulted) is run and its rows are
    written as ``<name>[_<function>].md/.json``.
    """
    import contextlib
    import importlib
    import inspect
    import io as _stdio
    import warnings

    modname, script = EXPERIMENTS[name]
    t0 = time.perf_counter()
    try:
        module = importlib.import_module(f".experiments.{modname}", __package__)
    except ImportError as exc:
        return f"skipped (not available: {_one_line(str(exc))})"
    try:
        if name == "compare":
            module.write(module.compare(quick=quick), outdir, name="compare")
            return f"ok ({time.perf_counter() - t0:.1f} s)"
        fn = getattr(module, "reproduce", None)
        if callable(fn):
            fn(outdir, quick=quick)
            return f"ok ({time.perf_counter() - t0:.1f} s)"
        bdir = _benchmarks_dir()
        if script and bdir is not None and (bdir / script).is_file():
            # Quiet: the scripts print their tables, and numeric RuntimeWarnings
            # from far-tail evaluations are expected there.
            with contextlib.redirect_stdout(_stdio.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                _run_benchmark_script(bdir / script, outdir, quick)
            return f"ok (benchmarks/{script}, {time.perf_counter() - t0:.1f} s)"
        written = 0
        for fname, f in inspect.getmembers(module, inspect.isfunction):
            if fname.startswith("_") or f.__module__ != module.__name__:
                continue
            sig = inspect.signature(f)
            if "quick" not in sig.parameters or any(
                p.default is inspect.Parameter.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                for n, p in sig.parameters.items()
                if n != "quick"
            ):
                continue
            rows = f(quick=quick)
            stem = f"{name}_{fname}"
            (outdir / f"{stem}.json").write_text(json.dumps(rows, indent=2, default=_json_default))
            if isinstance(rows, list) and rows and isinstance(rows[0], dict):
                (outdir / f"{stem}.md").write_text(_markdown_rows(rows) + "\n")
            written += 1
        if not written:
            return "skipped (no benchmarks/ script, reproduce() or quick-flag function)"
        return f"ok ({written} table(s), {time.perf_counter() - t0:.1f} s)"
    except Exception as exc:  # keep going: report which experiment failed and why
        return f"FAILED: {type(exc).__name__}: {_one_line(str(exc))[:200]}"


@app.command()
def reproduce(
    outdir: Annotated[Path, typer.Argument(help="Folder for the figures and tables.")],
    full: Annotated[bool, typer.Option(help="Full runs (slow) instead of quick ones.")] = False,
    only: Annotated[
        list[str] | None, typer.Option(help="Only these experiments (repeatable).")
    ] = None,
) -> None:
    """Regenerate the papers' figures and tables (quick settings unless --full)."""
    names = list(EXPERIMENTS)
    if only:
        unknown = [x for x in only if x not in names]
        if unknown:
            raise CLIError(
                f"unknown experiment(s) {', '.join(unknown)}: choose from {', '.join(names)}"
            )
        names = [x for x in names if x in only]
    outdir.mkdir(parents=True, exist_ok=True)
    failures = 0
    with _progress() as progress:
        task = progress.add_task("reproduce", total=len(names))
        for name in names:
            progress.update(task, description=f"reproduce {name}")
            status = run_experiment(name, outdir, quick=not full)
            print(f"{name:16s} {status}")
            failures += status.startswith("FAILED")
            progress.advance(task)
    print(f"results in {outdir}")
    if failures:
        raise typer.Exit(1)


# -- ledger ------------------------------------------------------------------------------
def _ledger_label(ledger: Any) -> str:
    """A ledger's name for output: a URL without its password."""
    text = str(ledger)
    if "://" not in text:
        return text
    from urllib.parse import urlsplit, urlunsplit

    u = urlsplit(text)
    host = u.hostname or ""
    netloc = (f"{u.username}@" if u.username else "") + host + (f":{u.port}" if u.port else "")
    return urlunsplit((u.scheme, netloc, u.path, "", ""))


@ledger_app.command("init")
def ledger_init(
    path: Annotated[str, typer.Argument(help="Ledger file (or postgresql:// URL) to create.")],
    epsilon: Annotated[float | None, typer.Option(help="Total ε.")] = None,
    delta: Annotated[float | None, typer.Option(help="Total δ (default 0: pure DP).")] = None,
    rho: Annotated[float | None, typer.Option(help="Total zCDP ρ instead of ε, δ.")] = None,
    dataset_id: Annotated[str, typer.Option(help="Budget key.")] = "default",
) -> None:
    """Create a ledger with a total budget (or check an existing one holds the same)."""
    from .ledger import Ledger

    budget = _budget_from_flags(epsilon, delta, rho)
    if budget is None:
        raise CLIError("ledger init needs a budget: pass --epsilon E [--delta D] or --rho R")
    kwargs = {"init": True} if "://" in path else {}
    with Ledger(path, **kwargs) as led:
        amount = led.ensure_budget(dataset_id, budget)
        remaining = led.remaining(dataset_id)
    print(
        f"ledger {_ledger_label(path)}: dataset '{dataset_id}' budget {amount.describe()}, "
        f"remaining {remaining.describe()}"
    )


@ledger_app.command("show")
def ledger_show(
    path: Annotated[str, typer.Argument(help="Ledger file or postgresql:// URL.")],
    history: Annotated[bool, typer.Option(help="List every charge.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Budgets, spend and remaining budget per dataset."""
    from .ledger import Ledger

    with Ledger(path, create=False) as led:
        summary = led.summary()
        hist = led.history() if history else None
    if json_out:
        print(json.dumps({"datasets": summary, "history": hist}, indent=2))
        return
    if not summary:
        print(f"ledger {_ledger_label(path)}: no budgets yet")
    for row in summary:
        b, s, r = row["budget"], row["spent"], row["remaining"]
        keys = [k for k in b["exact"]]
        print(f"dataset '{row['dataset_id']}' ({b['type']} budget, {row['relation']} neighbours):")
        print("  budget     " + ", ".join(f"{k}={b['exact'][k]}" for k in keys))
        print("  spent      " + ", ".join(f"{k}={s['exact'][k]}" for k in keys))
        print("  remaining  " + ", ".join(f"{k}={r['exact'][k]}" for k in keys))
        print(f"  releases   {row['releases']}")
        for pr in row["principals"]:
            spent = ", ".join(f"{k}={pr['spent']['exact'][k]}" for k in keys)
            allow = pr["allowance"]
            cap = (
                " of allowance " + ", ".join(f"{k}={allow['exact'][k]}" for k in keys)
                if allow
                else ""
            )
            print(f"  by {pr['principal']}: {spent}{cap} ({pr['releases']} releases)")
        print(f"  composed   {row['composition']}")
    for h in hist or []:
        print(
            f"  #{h['id']} {h['created_at']} {h['dataset_id']} {h['principal']} "
            f"{h['mechanism']} {h['guarantee']} {h['status']}"
        )


@ledger_app.command("verify")
def ledger_verify(
    path: Annotated[str, typer.Argument(help="Ledger file or postgresql:// URL.")],
    json_out: JsonOpt = False,
) -> None:
    """Walk the whole hash chain: missing, edited or cut charges, totals, head, budgets."""
    from .ledger import Ledger

    with Ledger(path, create=False) as led:
        report = led.verify()
    if json_out:
        print(
            json.dumps(
                {
                    "path": _ledger_label(path),
                    "ok": report.ok,
                    "charges": report.charges,
                    "mode": report.mode,
                    "problems": list(report.problems),
                },
                indent=2,
            )
        )
    elif report.ok:
        print(f"ledger {_ledger_label(path)}: ok ({report.charges} charges, chain {report.mode})")
    else:
        for problem in report.problems:
            print(f"ledger {_ledger_label(path)}: {problem}", file=sys.stderr)
    if not report.ok:
        raise typer.Exit(EXIT_BAD_INPUT)


# -- entry point --------------------------------------------------------------------------
#: The one table from the library's Python spellings to the CLI's flags: library
#: messages name Python keywords (``bounds=(lo, hi)``), the CLI shows flags.
PYTHON_TO_FLAG: tuple[tuple[str, str], ...] = (
    ("bounds=(lo, hi)", "--bounds LO HI"),
    ("drop_missing=True", "--drop-missing"),
    ("column=NAME", "--column NAME"),
    ("column=", "--column"),
    ("vertices=N", "--vertices N"),
    ("n_vertices", "--vertices"),
    ("normalise=True", "--normalise"),
    ("ledger=PATH", "--ledger PATH"),
    ("leave budget=None", "drop --budget-epsilon/--budget-delta/--budget-rho"),
    ("quantile=q", "--quantile Q"),
    ("delta=d", "--delta D"),
    ("ptr_bound=b", "--ptr-bound B"),
    ("the sql query", "--sql"),
    ("an sql query", "--sql"),
    ("the data source", "FILE"),
    ("neighbours='add_remove'", "--neighbours add-remove"),
    ("neighbours='substitution'", "--neighbours substitution"),
)
#: Python keyword → flag, for errors that carry ``parameter``
PARAMETER_FLAGS: dict[str, str] = {
    "sql": "--sql",
    "table": "--table",
    "resolution": "--resolution",
    "column": "--column",
    "bounds": "--bounds",
    "epsilon": "--epsilon",
    "delta": "--delta",
    "quantile": "--quantile",
    "trim": "--trim",
    "gamma": "--gamma",
    "noise": "--noise",
    "mechanism": "--mechanism",
    "statistic": "--statistic",
    "ptr_bound": "--ptr-bound",
    "ledger": "--ledger",
    "budget": "--budget-epsilon",
    "vertices": "--vertices",
    "neighbours": "--neighbours",
    "data": "FILE",
}


def cli_message(exc: BaseException) -> str:
    """The library's message re-worded for the command line (one line)."""
    text = _one_line(str(exc))
    for python, flag in PYTHON_TO_FLAG:
        # messages that still give both spellings keep the flag only
        text = text.replace(f"{flag} (Python: {python})", flag).replace(python, flag)
    param = getattr(exc, "parameter", None)
    flag = PARAMETER_FLAGS.get(param) if param else None
    if flag and flag not in text and param not in ("data",):
        text = f"{flag}: {text}"
    return text


def _whole_words() -> None:
    """Help text wraps between words only (no "boun-/ded-ls", no "trimmed-/mean").

    Typer's bundled click wraps with a ``TextWrapper`` that breaks on hyphens and
    inside long words; its help formatter looks the class up at call time."""
    try:
        from typer._click import _textwrap
    except ImportError:  # another typer layout: keep its wrapping
        return
    base = _textwrap.TextWrapper
    if getattr(base, "whole_words", False):
        return

    class WholeWords(base):  # type: ignore[misc,valid-type]
        whole_words = True

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("break_on_hyphens", False)
            kwargs.setdefault("break_long_words", False)
            super().__init__(*args, **kwargs)

    _textwrap.TextWrapper = WholeWords  # type: ignore[misc]


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split())


def main(argv: list[str] | None = None) -> None:
    """Console entry point: runs the app and turns errors into one line + exit code."""
    from .ledger import BudgetExceeded

    _whole_words()
    command = typer.main.get_command(app)
    for sub in getattr(command, "commands", {}).values():
        # The command list shows each description whole (click would cut it with "…").
        if sub.help and not sub.short_help:
            sub.short_help = " ".join(sub.help.strip().split("\n\n")[0].split())
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        rv = command.main(args=args, prog_name="instancedp", standalone_mode=False)
    except BudgetExceeded as exc:
        print(f"error: {cli_message(exc)}", file=sys.stderr)
        sys.exit(EXIT_BUDGET)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except ValueError as exc:  # InstanceDPError subclasses and CLIError
        print(f"error: {cli_message(exc)}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # click usage errors and the like, or a bug
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `instancedp`: show the help
            print(exc.format_message())  # type: ignore[attr-defined]
            sys.exit(0)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            code = int(getattr(exc, "exit_code", 2))
            hint = _usage_hint(exc)
            print(f"error: {_one_line(exc.format_message())}{hint}", file=sys.stderr)
            sys.exit(code)
        if type(exc).__name__ == "Abort":
            print("aborted", file=sys.stderr)
            sys.exit(1)
        if os.environ.get("INSTANCEDP_DEBUG"):
            raise
        print(
            f"internal error: {type(exc).__name__}: {_one_line(str(exc))} "
            "(set INSTANCEDP_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        sys.exit(1)
    if isinstance(rv, int) and rv:
        sys.exit(rv)


def _usage_hint(exc: Any) -> str:
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) if ctx is not None else None
    return f" (see `{path} --help`)" if path else " (see `instancedp --help`)"


if __name__ == "__main__":  # pragma: no cover
    main()
