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
from decimal import ROUND_FLOOR
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
SeedOpt = Annotated[
    int | None,
    typer.Option(help="Seeded simulation randomness: NOT a secure release (demos only)."),
]


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
        return (
            "refused: the mechanism's private test declined to answer (the budget is "
            "still spent)"
        )
    if isinstance(v, float):
        return f"{v:.10g}"
    if getattr(v, "ndim", 0) == 1:  # several quantiles: the sorted vector
        return "[" + ", ".join(f"{float(x):.10g}" for x in v) + "]"
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


#: The mechanism names of release records, in words (with the paper that defines them).
MECHANISM_IN_WORDS: dict[str, str] = {
    "smooth_sensitivity": "smooth sensitivity (Nissim, Raskhodnikova and Smith 2007)",
    "exponential_quantile": "exponential mechanism for quantiles (Smith 2011)",
    "exponential": "exponential mechanism (McSherry and Talwar 2007)",
    "propose_test_release": "propose-test-release (Dwork and Lei 2009)",
    "bounded_local_sensitivity": "privately bounded local sensitivity, then Laplace noise",
    "laplace": "Laplace noise for the worst case",
    "gaussian": "Gaussian noise for the worst case",
    "sum_over_count": "noisy sum ÷ noisy count",
    "instance_based_noise": "noise per sensitivity level (Canard and Olivier)",
    "stable_release": "stability-based release (exact value or refusal)",
    "mode": "stability-based mode",
    "smalldb": "SmallDB synthetic data (Blum, Ligett and Roth 2008)",
    "joint_quantiles": "joint exponential mechanism for m quantiles (Gillenwater, Joseph "
    "and Kulesza 2021)",
    "recursive_quantiles": "recursive approximate quantiles (Kaplan, Schnapp and Stemmer 2022)",
    "independent_quantiles": "m exponential-mechanism quantiles at ε/m each",
    "unbounded_quantiles": "m bound-free quantiles at ε/m each (Durfee 2023)",
    "unbounded_quantile": "bound-free quantile: an above-threshold scan places a bracket, "
    "the exponential mechanism draws inside it (Durfee 2023)",
    "loglog_quantile": "bound-free quantile in one step: the exponential mechanism on the "
    "whole line with a log-log base measure",
    "candidate_quantile": "quantile on a public candidate grid, permute-and-flip "
    "(McKenna and Sheldon 2020)",
    "tie_adaptive_quantile": "tie-adaptive quantile: a private tie count picks smooth "
    "sensitivity or the exponential mechanism",
    "tail_choice_quantile": "tail choice: a private row count picks the bounded exponential "
    "quantile or the bound-free bracket",
    "inverse_sensitivity": "inverse sensitivity mechanism (Asi and Duchi 2020)",
    "private_ratio": "private ratio a/b",
    "ratio_ksw": "private ratio a/b (Kulesza, Suresh and Wang 2024, Alg. 3)",
    "ratio_naive": "private ratio: noisy a ÷ noisy b",
    "ratio_bounded_ls": "private ratio with privately bounded local sensitivity",
}

#: The neighbour relations in words: what one person's data changes.
NEIGHBOURS_IN_WORDS: dict[str, str] = {
    "add_remove": "add/remove one row (the row count stays private)",
    "substitution": "change one row (the row count is public)",
    "edge": "add/remove one edge (the vertex set is public)",
}


def mechanism_in_words(name: str) -> str:
    """``name`` in words with the record's name after it, e.g. for the release summary."""
    words = MECHANISM_IN_WORDS.get(name)
    return f"{words} [{name}]" if words else name.replace("_", " ")


def _bounds_of(params: dict[str, Any]) -> tuple[Any, Any] | None:
    for p in (params, params.get("query_parameters") or {}):
        if isinstance(p, dict) and "lower" in p and "upper" in p:
            return p["lower"], p["upper"]
    return None


def _num(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def summary_lines(release: Any, chosen: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """The few things a user chose, in words: (label, text) pairs for the release summary.

    ``chosen`` holds what the command line named (``statistic``, ``column``, ``sql``,
    ``vertices``); everything else is read from the public release record, whose
    whole content ``--json`` and ``Release.to_dict()`` give."""
    chosen = chosen or {}
    params = dict(release.parameters)
    qp = params.get("query_parameters") or {}
    lines: list[tuple[str, str]] = [("value", _fmt_value(release.value))]
    ci = getattr(release, "ci", None)
    if ci is not None:
        spent = (f"ε = {_num(ci.epsilon)} of the guarantee spent on it" if ci.epsilon
                 else "no extra ε: post-processing")
        if isinstance(ci, list):  # several quantiles: one interval per level, one noisy CDF
            ends = ", ".join(f"[{_num(i.lower)}, {_num(i.upper)}]" for i in ci)
            lines.append(("intervals", f"{ends} with {100 * ci.level:g}% confidence each, "
                          f"for each level's quantile on these data ({spent} for all "
                          "levels; --json for how)"))
        else:
            lines.append(("interval", f"[{_num(ci.lower)}, {_num(ci.upper)}] with "
                          f"{100 * ci.level:g}% confidence for the statistic on these data "
                          f"({spent}; --json for how)"))
    stat = chosen.get("statistic") or params.get("query")
    if stat is not None:
        what = str(stat)
        if "q" in params and str(stat) == "quantile":
            what += f" q={_num(params['q'])}"
        if "qs" in params:  # several quantiles: the levels of the sorted vector
            what += " at levels " + ", ".join(_num(q) for q in params["qs"])
        if chosen.get("column"):
            what += f" of column '{chosen['column']}'"
        elif chosen.get("sql"):
            what += " of the SQL selection"
        lines.append(("statistic", what))
    g = release.guarantee
    eps = getattr(g, "epsilon", None)
    delta = getattr(g, "delta", None)
    note = ""
    if eps is not None:
        note = f": ε = {_num(eps)}, δ = {_num(delta) if delta else 0} (smaller is more private)"
    elif getattr(g, "rho", None) is not None:
        note = f": zero-concentrated DP with ρ = {_num(g.rho)} (smaller is more private)"
    lines.append(("guarantee", f"{g.describe()}{note}"))
    b = _bounds_of(params)
    if b is not None:
        lines.append(("bounds", f"[{_num(b[0])}, {_num(b[1])}] (public)"))
    n_vertices = qp.get("n_vertices", chosen.get("vertices"))
    if n_vertices is not None:
        lines.append(("vertices", f"{n_vertices} (public)"))
    rel = params.get("neighbours", qp.get("neighbours", chosen.get("neighbours")))
    if rel is not None:
        lines.append(("neighbours", NEIGHBOURS_IN_WORDS.get(str(rel), str(rel))))
    mechanism = mechanism_in_words(str(release.mechanism))
    if release.mechanism == "private_ratio" and "method" in params:
        words = MECHANISM_IN_WORDS.get(f"ratio_{params['method']}")
        mechanism = f"{words} [private_ratio, method {params['method']}]" if words else mechanism
    lines.append(("mechanism", mechanism))
    if params.get("base") in ("grid", "log-grid") and "resolution" in params:
        # the public grid (a given resolution or the column's declared type)
        lines.append(("grid", f"lower + k·{_num(params['resolution'])} (public), "
                              f"{params.get('sampler', 'permute-and-flip')}"))
    if "noise" in params:
        shape = f"{params['noise']} noise"
        if "gamma" in params:
            shape += f", smoothness γ = {_num(params['gamma'])}"
        lines.append(("noise", shape))
    policy = params.get("input_policy")
    if isinstance(policy, dict):
        words = [
            "missing values dropped" if policy.get("missing") == "drop" else "",
            "values clamped to the bounds" if policy.get("out_of_range") == "clamp" else "",
            f"one public row ({_num(policy['added_public_row'])}) added"
            if policy.get("added_public_row") is not None
            else "",
        ]
        lines.append(("rows", "public policy: " + ", ".join(w for w in words if w)))
    return lines
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
    chosen: dict[str, Any] | None = None,
    where: dict[str, Any] | None = None,
) -> None:
    """Open the Session, let ``do_release(session, rng)`` release, print the record
    (a summary of what the user chose, in words, or the whole record with ``--json``)."""

    rng = _rng(seed)
    extra: dict[str, Any] = {"neighbours": neighbours} if neighbours is not None else {}
    extra.update(where or {})
    fresh = ledger is not None and not analyst and not Path(ledger).exists()
    try:
        _release_and_print(
            data, do_release, budget=budget, guarantee=guarantee, ledger=ledger,
            dataset_id=dataset_id, rng=rng, as_json=as_json, analyst=analyst, extra=extra,
            chosen=chosen,
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
    chosen: dict[str, Any] | None = None,
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
        # A spinner and the elapsed time only: rows read or selected are private.
        with _spinner("charging the ledger and computing the release", as_json=as_json):
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
    for label, text in summary_lines(release, chosen):
        print(f"{label:11s} {text}")
    if remaining is not None:
        print(
            f"remaining   {remaining.describe(ROUND_FLOOR)} of {total.describe()} "
            f"(ledger {_ledger_label(ledger)}, dataset '{dataset_id}')"
        )
    else:
        print("remaining   (no ledger: pass --ledger PATH --budget-epsilon E to track a budget)")
    if release.secure:
        print("secure      true")
    else:
        print("secure      false  <-- SEEDED SIMULATION, NOT A PRIVATE RELEASE")
    print("record      the full public record: add --json")


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
            help="One of: median, quantile, mean, trimmed-mean, count, sum, ratio, min, max, "
            "quantiles.",
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
    quantiles: Annotated[
        str | None,
        typer.Option(
            help="Levels for --statistic quantiles, e.g. --quantiles 0.25 0.5 0.75 (or "
            "0.25,0.5,0.75): one release, one charge, a sorted vector. --mechanism: joint, "
            "recursive, independent, unbounded (default: joint with --bounds, unbounded "
            "without)."
        ),
    ] = None,
    trim: Annotated[
        float | None, typer.Option(help="Trimmed fraction per side (trimmed-mean).")
    ] = None,
    mechanism: Annotated[
        str | None,
        typer.Option(
            help="A registered mechanism (its name in the record): exponential_quantile, "
            "smooth_sensitivity, propose_test_release, bounded_local_sensitivity, laplace, "
            "gaussian, sum-count, tie_adaptive_quantile, tail_choice_quantile; for ratio ksw, "
            "naive; for a median or quantile without --bounds unbounded_quantile (the "
            "default), loglog_quantile. Short aliases: exponential, smooth, ptr, bounded-ls, "
            "tie-adaptive, tail-choice."
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
    seed: SeedOpt = None,
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
    by: Annotated[
        str | None,
        typer.Option(help="Release per group of this column (--statistic may list several: "
                     "median,p90,mean,count)."),
    ] = None,
    keys: Annotated[
        Path | None,
        typer.Option(help="With --by: file of public keys, one per line (an optional first "
                     "line naming the --by column is skipped). Without it the keys are "
                     "chosen by private partition selection (needs --delta)."),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(help="With --by: fractions of ε per statistic, then the selection "
                     "(default: equal), e.g. 0.4,0.4,0.2."),
    ] = None,
    id_column: Annotated[
        str | None,
        typer.Option(help="With --by: the person column (each person then keeps one row per "
                     "group and at most --max-groups groups)."),
    ] = None,
    max_groups: Annotated[int, typer.Option(help="With --id-column: groups per person.")] = 1,
    csv_out: Annotated[bool, typer.Option("--csv", help="With --by: print CSV rows.")] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", help="With --by: also write the groups to FILE.csv "
                     "(CSV) or FILE.jsonl (JSON lines)."),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="With --by: a bar/point plot of the groups to FILE.png "
                     "(error bars where the releases carry intervals)."),
    ] = None,
    table: Annotated[
        str | None,
        typer.Option(help="Table of the SQLite file or PostgreSQL URL given as FILE."),
    ] = None,
    resolution: Annotated[
        float | None,
        typer.Option(
            help="Median/quantile/quantiles: the column's declared resolution (1 for an "
            "integer column), never read from the rows; the release lands on lower + "
            "k·resolution. "
            "From a database, Spark or Parquet it is the candidate grid's step (default: a "
            "4,097-point log grid over the bounds)."
        ),
    ] = None,
    ci: Annotated[
        float | None,
        typer.Option(
            "--ci",
            help="Attach a private confidence interval at this level (e.g. 0.95), paid "
            "inside --epsilon (instance-adaptive mechanisms spend a stated share on it).",
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

    if by is not None:
        _release_groups(
            file, column=column, statistic=statistic, epsilon=epsilon, delta=delta,
            bounds=bounds, mechanism=mechanism, by=by, keys=keys, split=split,
            id_column=id_column, max_groups=max_groups, drop_missing=drop_missing,
            ledger=ledger, budget=_budget_from_flags(budget_epsilon, budget_delta, budget_rho),
            zcdp_delta=zcdp_delta, dataset_id=dataset_id, json_out=json_out, csv_out=csv_out,
            seed=seed, analyst=analyst, neighbours=_relation(neighbours), sql=sql,
            other=dict(quantile=quantile, trim=trim, noise=noise, gamma=gamma,
                       ptr_bound=ptr_bound, resolution=resolution),
            output=output, plot=plot, table=table, spark_table=spark_table,
            ci=ci,
        )
        return
    for flag, path in (("--output", output), ("--plot", plot)):
        if path is not None:
            raise CLIError(f"{flag} applies to group-by releases: pass --by COLUMN")
    for flag, val in (("--keys", keys), ("--split", split), ("--id-column", id_column)):
        if val is not None:
            raise CLIError(f"{flag} applies to group-by releases: pass --by COLUMN")

    recipe = dict(
        mechanism=mechanism,
        bounds=bounds,
        quantile=quantile,
        trim=trim,
        noise=noise,
        gamma=gamma,
        ptr_bound=ptr_bound,
    )
    if quantiles is not None:
        recipe["quantiles"] = _parse_floats(quantiles, "--quantiles")
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
            **({"ci": ci} if ci is not None else {}),
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
        chosen={"statistic": statistic, "column": column, "sql": sql},
        where=where,
    )


def _read_keys(path: Path, by: str) -> list[str]:
    """Public keys: one per line; a first line equal to the --by column is a header."""
    try:
        lines = [ln.strip() for ln in Path(path).read_text(encoding="utf-8").splitlines()]
    except OSError as exc:
        raise CLIError(f"--keys: cannot read {path}: {exc.strerror or exc}") from None
    keys = [ln for ln in lines if ln]
    if keys and keys[0] == by:
        keys = keys[1:]
    return keys


def _release_groups(
    file: Path | None, *, column: str | None, statistic: str, epsilon: float,
    delta: float | None, bounds: Any, mechanism: str | None, by: str, keys: Path | None,
    split: str | None, id_column: str | None, max_groups: int, drop_missing: bool,
    ledger: Path | None, budget: Any, zcdp_delta: float | None, dataset_id: str,
    json_out: bool, csv_out: bool, seed: int | None, analyst: bool,
    neighbours: str | None, sql: str | None, other: dict[str, Any],
    output: Path | None = None, plot: Path | None = None, table: str | None = None,
    spark_table: str | None = None, ci: float | None = None,
) -> None:
    """``instancedp release FILE --by COL``: one charged release, a table per group.

    Output: a rich table (terminal), ``--json`` JSON lines (one object per
    group × statistic, then the guarantee), ``--csv`` CSV on stdout,
    ``--output FILE.csv|FILE.jsonl`` and ``--plot FILE.png``."""
    import sys

    from .groupby import plan
    from .session import Session

    for name, val in other.items():
        if val is not None:
            raise CLIError(f"--{name.replace('_', '-')} does not apply with --by")
    if sql is not None:
        raise CLIError("--sql does not apply with --by: pass the FILE (or --table)")
    where = _where(None if file is None else str(file), table, spark_table, None)
    if spark_table is not None:
        file = spark_table
    if file is None:
        raise CLIError("no data: pass a FILE")
    if json_out and csv_out:
        raise CLIError("--json and --csv exclude each other")
    if output is not None and output.suffix.lower() not in (".csv", ".jsonl", ".json"):
        raise CLIError(f"--output {output}: name a .csv or .jsonl file")
    if plot is not None and plot.suffix.lower() != ".png":
        raise CLIError(f"--plot {plot}: name a .png file")
    key_list = None if keys is None else _read_keys(keys, by)
    try:
        fractions = None if split is None else [float(x) for x in split.split(",")]
    except ValueError:
        raise CLIError(f"--split must be comma-separated numbers; got {split!r}") from None
    # Every public parameter checked before the ledger is opened.
    p = plan(statistic, epsilon=epsilon, delta=delta, keys=key_list, split=fractions,
             neighbours=neighbours or "add_remove", max_groups=max_groups, bounds=bounds,
             mechanism=mechanism, ci=ci)
    if analyst:
        _analyst_flags(budget, ledger)
    session = Session(
        file,
        None if analyst else (budget if (budget is not None or ledger is not None)
                              else p["guarantee"]),
        ledger=ledger, dataset_id=dataset_id, analyst=analyst,
        **({"neighbours": neighbours} if neighbours is not None else {}), **where,
    )
    with session:
        with _spinner("charging the ledger and computing the release"):
            rel = session.release_statistic(
                statistic, column, by=by, keys=key_list, split=fractions, epsilon=epsilon,
                delta=delta, bounds=bounds, rng=_rng(seed), convert_delta=zcdp_delta,
                drop_missing=drop_missing, id_column=id_column, max_groups=max_groups,
                **({"mechanism": mechanism} if mechanism is not None else {}),
                **({"ci": ci} if ci is not None else {}),
            )
        remaining = session.remaining if ledger is not None else None
        total = session.budget if ledger is not None else None
    if not rel.secure:
        _warn_seeded()
    title = f"{', '.join(rel.values)}{f' of {column}' if column is not None else ''} by {by}"
    left = {"remaining": remaining.as_dict() if remaining is not None else None}
    if output is not None:
        if output.suffix.lower() == ".csv":
            rel.write_csv(output)
        else:
            output.write_text("\n".join(rel.json_lines(left)) + "\n", encoding="utf-8")
    if plot is not None:
        rel.plot(plot, title=title)
    for path in (output, plot):
        if path is not None:
            print(f"wrote {path}", file=sys.stderr)
    if json_out:
        print("\n".join(rel.json_lines(left)))
        return
    stats = list(rel.values)
    if csv_out:
        rel.write_csv(sys.stdout)
        print(f"guarantee {rel.guarantee.describe()}", file=sys.stderr)
        return
    from rich.console import Console
    from rich.table import Table

    grid = Table()
    for name in (by, *stats):
        grid.add_column(str(name), justify="left" if name == by else "right")
    for row in rel.rows():
        grid.add_row(str(row[by]), *(
            _fmt_value(row[s]) + (f"  [{_fmt_value(row[s + '_ci'][0])}, "
                                  f"{_fmt_value(row[s + '_ci'][1])}]"
                                  if row.get(s + "_ci") else "")
            for s in stats))
    console = Console(width=100 if not sys.stdout.isatty() else None)
    console.print(title, soft_wrap=True)  # a table's own title wraps at its width
    console.print(grid)
    if not grid.row_count:
        print("groups      none: no key passed the private partition selection (a key needs "
              "enough rows to be released; --keys FILE answers public keys, empty ones too)"
              if rel.parameters["keys"] != "public" else "groups      none: the keys file "
              "lists no key")
    # the lines under the table as a single release prints them: never wrapped mid-line
    print(f"guarantee   {rel.guarantee.describe()}  (one charge for all groups)")
    print(f"keys        {rel.parameters['keys']}; {rel.parameters['contributions']}")
    if remaining is not None:
        print(f"remaining   {remaining.describe(ROUND_FLOOR)} of {total.describe()} "
              f"(ledger {_ledger_label(ledger)}, dataset '{dataset_id}')")
    print("secure      " + ("true" if rel.secure else
                            "false  <-- SEEDED SIMULATION, NOT A PRIVATE RELEASE"))


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
    import re

    pct = re.fullmatch(r"p(\d+(?:\.\d+)?)", st) if command == "release" else None
    if pct and 0 < float(pct.group(1)) < 100:  # the group-by spelling, outside --by
        level = f"{float(pct.group(1)) / 100:g}"
        raise CLIError(
            f"--statistic {statistic} is the per-group spelling (with --by): for one release "
            f"use --statistic quantile --quantile {level}"
        )
    raise CLIError(
        f"--statistic must be one of {', '.join(mine)}; got {statistic!r}"
        + did_you_mean(st, mine)
    )


def _describe_bounds(text: str | None) -> dict[str, tuple[float, float]] | None:
    """``col=lo:hi,col2=lo:hi`` → {col: (lo, hi)}."""
    if text is None:
        return None
    out: dict[str, tuple[float, float]] = {}
    for item in text.split(","):
        col, eq, rng = item.rpartition("=")
        lo, colon, hi = rng.partition(":")
        try:
            if not (eq and colon and col):
                raise ValueError
            out[col] = (float(lo), float(hi))
        except ValueError:
            raise CLIError(
                f"--bounds for describe takes COLUMN=LO:HI (one per column), got {item!r}"
            ) from None
    return out


@app.command("describe")
def describe_command(
    file: Annotated[
        str, typer.Argument(help="CSV/TSV or Parquet file.", show_default=False)
    ],
    epsilon: Annotated[float, typer.Option(help="Total ε > 0 for the whole summary.")] = ...,  # type: ignore[assignment]
    columns: Annotated[
        str | None,
        typer.Option(help="Columns to describe (default: every declared numeric column; "
                     "every column of a CSV), e.g. --columns age income."),
    ] = None,
    bounds: Annotated[
        str | None,
        typer.Option(help="Public bounds per column, COLUMN=LO:HI ... (bound-free quantiles "
                     "for the others)."),
    ] = None,
    ledger: LedgerOpt = None,
    budget_epsilon: BudgetEpsilonOpt = None,
    budget_delta: BudgetDeltaOpt = None,
    budget_rho: BudgetRhoOpt = None,
    dataset_id: DatasetIdOpt = "default",
    json_out: JsonOpt = False,
    seed: SeedOpt = None,
    analyst: Annotated[
        bool,
        typer.Option("--analyst/--owner", help="Analyst mode (the default; needs the owner's "
                     "existing ledger) or the data owner's mode."),
    ] = True,
    neighbours: Annotated[
        str | None, typer.Option(help="Neighbour relation (describe runs under add-remove).")
    ] = None,
    ci: Annotated[
        float,
        typer.Option("--ci", help="Confidence level of every statistic's error bar, inside "
                     "--epsilon; 0 for none."),
    ] = 0.95,
) -> None:
    """A private describe(): count, mean, quartiles, 5th and 95th percentiles of every
    numeric column, charged once."""
    from .describe import print_table
    from .privacy import PureDP
    from .session import Session

    cols = None if columns is None else [c for c in columns.split(",") if c]
    col_bounds = _describe_bounds(bounds)
    budget = _budget_from_flags(budget_epsilon, budget_delta, budget_rho)
    if analyst:
        _analyst_flags(budget, ledger)
    relation = _relation(neighbours)
    fresh = ledger is not None and not analyst and not Path(ledger).exists()
    rng = _rng(seed)
    try:
        session = Session(
            file,
            None if analyst else (budget if (budget is not None or ledger is not None)
                                  else PureDP(epsilon)),
            ledger=ledger, dataset_id=dataset_id, analyst=analyst,
            **({"neighbours": relation} if relation is not None else {}),
        )
        with session:
            with _spinner("charging the ledger and computing the summary", as_json=json_out):
                result = session.describe(epsilon, columns=cols, bounds=col_bounds, rng=rng,
                                          ci=ci or None)
            remaining = session.remaining if ledger is not None else None
            total = session.budget if ledger is not None else None
    except ValueError:
        if fresh and Path(ledger).exists():  # type: ignore[arg-type]
            Path(ledger).unlink()  # type: ignore[arg-type]
        raise
    if not result.secure:
        _warn_seeded()
    if json_out:
        out = result.to_dict()
        out["remaining"] = remaining.as_dict() if remaining is not None else None
        print(json.dumps(out, indent=2, default=str))
        return
    print_table(result)
    if remaining is not None:
        print(f"remaining  {remaining.describe(ROUND_FLOOR)} of {total.describe()} (ledger "
              f"{_ledger_label(ledger)}, dataset '{dataset_id}')")


@app.command("release-graph")
def release_graph(
    edges: Annotated[
        Path,
        typer.Argument(
            help="Edge-list file: one 'u v' pair per line; .csv/.tsv/.parquet files are read "
            "by DuckDB (integer ids in 0..N-1; nothing but small aggregates reaches Python)."
        ),
    ],
    statistic: Annotated[str, typer.Option(help="triangles|kstars|two-triangles.")] = "triangles",
    epsilon: Annotated[float, typer.Option(help="Privacy parameter ε > 0.")] = ...,  # type: ignore[assignment]
    delta: Annotated[float | None, typer.Option(help="δ for (ε, δ) mechanisms.")] = None,
    k: Annotated[int | None, typer.Option(help="k for kstars (default 2).")] = None,
    vertices: Annotated[
        int | None,
        typer.Option(help="Public number of vertices (required: edge privacy fixes them)."),
    ] = None,
    mechanism: Annotated[
        str | None,
        typer.Option(
            help="smooth_sensitivity (alias smooth), propose_test_release (ptr), laplace, "
            "bounded_local_sensitivity (bounded-ls)."
        ),
    ] = None,
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
    from .sources import input_kind

    if analyst:
        _analyst_flags(budget, ledger)
        graph: Any = edges  # read by the Session after the charge, under the public policy
    elif input_kind(edges) == "file":
        mech.query.normalise = normalise  # DuckDB checks the edges before the charge
        graph = edges
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
        chosen={"statistic": st, "vertices": vertices, "neighbours": "edge"},
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
        with _spinner("reading the data"):
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


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def show_progress(as_json: bool = False) -> bool:
    """Progress on a terminal only: never with ``--json``, in a pipe (stdout or stderr
    not a terminal) or under ``CI`` (set to anything but empty, 0 or false)."""
    if as_json or os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return False
    return _stdout_is_tty() and bool(_stderr_console().is_terminal)


def _stdout_is_tty() -> bool:
    try:
        return bool(sys.stdout.isatty())
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


class _spinner:
    """A spinner and the elapsed time on stderr while a long step runs (terminal only).

    It never counts rows: after a filter their number is private."""

    def __init__(self, text: str, as_json: bool = False) -> None:
        self.text = text
        self.as_json = as_json
        self._p: Any = None

    def __enter__(self) -> None:
        if not show_progress(self.as_json):
            return
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._p = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=_stderr_console(),
            transient=True,
        )
        self._p.__enter__()
        self._p.add_task(self.text, total=None)

    def __exit__(self, *exc: Any) -> None:
        if self._p is not None:
            self._p.__exit__(*exc)


class _progress:
    """A progress bar on stderr over public steps (mechanisms × ε, experiments): terminal
    only, as :func:`show_progress` decides; otherwise a disabled bar that prints nothing."""

    def __init__(self, as_json: bool = False) -> None:
        self.as_json = as_json

    def __enter__(self) -> Any:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._p = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=_stderr_console(),
            disable=not show_progress(self.as_json),
            transient=True,
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
    with _spinner(f"auditing {name}", as_json=json_out):
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
    with _spinner("computing the noise table", as_json=json_out):
        rows = NT.noise_std_table(epsilon=eps, delta=dl)
    note = (
        f"The noise's standard deviation at epsilon={eps:g} when the smooth sensitivity is 1 "
        "(multiply by yours; smaller is better). Each row is a smoothness gamma (how fast the "
        "noise scale may change between neighbouring datasets), each column a noise family at "
        f"its best shape (laplace at delta={dl:g}; student_t_df and cauchy_power are the chosen "
        "shapes, not deviations). —: the family cannot be used at that gamma; ∞: infinite "
        "variance."
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
def _reproduce_one(fn: Any, outdir: Path, quick: bool) -> str:
    """Run one experiment's ``reproduce``; a one-line status naming the files written."""
    t0 = time.perf_counter()
    try:
        paths = fn(outdir, quick=quick)
    except Exception as exc:  # keep going: report which experiment failed and why
        return f"FAILED: {type(exc).__name__}: {_one_line(str(exc))[:200]}"
    names = ", ".join(Path(p).name for p in paths)
    return f"ok ({time.perf_counter() - t0:.1f} s): {names}"


@app.command()
def reproduce(
    outdir: Annotated[Path, typer.Argument(help="Folder for the figures and tables.")],
    quick: Annotated[
        bool, typer.Option("--quick/--full", help="Quick settings (default) or full runs (slow).")
    ] = True,
    only: Annotated[
        list[str] | None, typer.Option(help="Only these experiments (repeatable).")
    ] = None,
) -> None:
    """Regenerate the papers' figures and tables (quick settings unless --full)."""
    from .experiments import EXPERIMENTS

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
            status = _reproduce_one(EXPERIMENTS[name], outdir, quick)
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
        print("  budget     " + ", ".join(f"{k}={b['shown'][k]}" for k in keys))
        print("  spent      " + ", ".join(f"{k}={s['shown'][k]}" for k in keys))
        print("  remaining  " + ", ".join(f"{k}={r['shown'][k]}" for k in keys))
        print(f"  releases   {row['releases']}")
        for pr in row["principals"]:
            spent = ", ".join(f"{k}={pr['spent']['shown'][k]}" for k in keys)
            allow = pr["allowance"]
            cap = (
                " of allowance " + ", ".join(f"{k}={allow['shown'][k]}" for k in keys)
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
    ("quantiles=[q1, ..., qm]", "--quantiles Q1 ... QM"),
    ("delta=d", "--delta D"),
    ("ptr_bound=b", "--ptr-bound B"),
    ("ptr_bound=B", "--ptr-bound B"),
    ("gamma=None for the default rule", "no --gamma for the default rule"),
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
    "ci": "--ci",
    "column": "--column",
    "bounds": "--bounds",
    "epsilon": "--epsilon",
    "delta": "--delta",
    "quantile": "--quantile",
    "quantiles": "--quantiles",
    "columns": "--columns",
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
    "by": "--by",
    "keys": "--keys",
    "split": "--split",
    "id_column": "--id-column",
    "max_groups": "--max-groups",
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


#: flags that take a space-separated list (click options take one value): the
#: values after the flag are joined with commas before parsing
_LIST_FLAGS = ("--quantiles", "--columns", "--bounds")


def _list_value(flag: str, token: str, command: str) -> bool:
    """Does ``token`` continue the list after ``flag``?  (public: the command line only)"""
    if token.startswith("--"):
        return False
    if flag == "--quantiles":
        try:
            float(token)
        except ValueError:
            return False
        return True
    if flag == "--bounds":  # describe's COL=LO:HI; release's --bounds LO HI is two numbers
        return command == "describe" and "=" in token
    # --columns (describe): names, never the FILE argument
    return command == "describe" and not Path(token).exists()


def _join_lists(args: list[str]) -> list[str]:
    """``--quantiles 0.25 0.5 0.75`` → ``--quantiles 0.25,0.5,0.75`` (and describe's lists)."""
    command = next((a for a in args if not a.startswith("-")), "")
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        out.append(a)
        i += 1
        if a in _LIST_FLAGS and (a != "--bounds" or command == "describe"):
            vals = []
            while i < len(args) and _list_value(a, args[i], command):
                vals.append(args[i])
                i += 1
            if vals:
                out.append(",".join(vals))
    return out


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split())


def main(argv: list[str] | None = None) -> None:
    """Console entry point: runs the app and turns errors into one line + exit code."""
    from .errors import InstanceDPError
    from .ledger import BudgetExceeded

    _whole_words()
    command = typer.main.get_command(app)
    for sub in getattr(command, "commands", {}).values():
        # The command list shows each description whole (click would cut it with "…").
        if sub.help and not sub.short_help:
            sub.short_help = " ".join(sub.help.strip().split("\n\n")[0].split())
    args = _join_lists(sys.argv[1:] if argv is None else list(argv))
    try:
        rv = command.main(args=args, prog_name="instancedp", standalone_mode=False)
    except BudgetExceeded as exc:
        print(f"error: {cli_message(exc)}", file=sys.stderr)
        sys.exit(EXIT_BUDGET)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (InstanceDPError, CLIError) as exc:  # the library's own errors: bad input
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
