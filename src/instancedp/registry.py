"""The one table of mechanism names.

Each :class:`Entry` says, once, what a mechanism is called everywhere (the
release record's ``mechanism`` field, ``instancedp audit``, ``compare``, the
release-path harness and ``docs/mechanisms.md``), which class implements it, a
one-line description, the statistics it serves, whether it needs δ, and the
small worked examples (a mechanism plus neighbouring inputs) that the audit
catalogue and the harness run.  ``key`` is the class's ``name``.

Adding a mechanism = its module plus one :func:`register` call; nothing else
needs editing for it to appear in the audit catalogue, the harness and the
docs test (``tests/test_registry.py`` registers a toy one).

A mechanism with no exact law (``output_distribution``) must either carry a
harness case or a reviewed ``exemption`` (the reason), or the harness test fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ParameterError


@dataclass(frozen=True)
class Example:
    """A mechanism on a small domain with its neighbouring inputs (for audits).

    ``law``: an override of ``mechanism.output_distribution`` (e.g. a coarser
    quadrature); ``empirical_pair``: the pair the black-box audit samples
    (default: the exact check's worst pair); ``orders``: Rényi orders for zCDP.
    """

    mechanism: Any
    pairs: Sequence[tuple[Any, Any]]
    law: Callable[[Any], Any] | None = None
    empirical_pair: tuple[Any, Any] | None = None
    orders: Sequence[float] | None = None


ExampleBuilder = Callable[[float, "float | None"], Example]


@dataclass(frozen=True)
class Entry:
    """One registered mechanism.

    ``build(query, epsilon, delta)`` makes the mechanism for a statistic's
    query with public defaults for its other options (``None`` = the class's
    own constructor).  ``examples`` maps a variant name (``""`` for the main
    one) to a builder ``(epsilon, delta) -> Example``; the audit catalogue names
    them ``key`` and ``key/variant``.  ``exemption``: why the mechanism has no
    exact law in the harness (reviewed; ``None`` when it has one).
    """

    key: str
    cls: type
    description: str
    statistics: tuple[str, ...] = ()
    needs_delta: bool = False
    examples: Mapping[str, ExampleBuilder] = field(default_factory=dict)
    build: Callable[[Any, float, float | None], Any] | None = None
    exemption: str | None = None

    def make(self, query: Any, epsilon: float, delta: float | None = None) -> Any:
        """The mechanism for ``query`` at (ε, δ) with public defaults."""
        if self.build is not None:
            return self.build(query, epsilon, delta)
        if self.needs_delta:
            return self.cls(query, epsilon, delta=delta)
        return self.cls(query, epsilon)

    @property
    def has_exact_law(self) -> bool:
        return callable(getattr(self.cls, "output_distribution", None))


_REGISTRY: dict[str, Entry] = {}


#: Short spellings the recipes and the CLI accept for a registered key.  Records,
#: the audit catalogue and the docs use the key; this is the one table of aliases.
ALIASES: dict[str, str] = {
    "smooth": "smooth_sensitivity",
    "ptr": "propose_test_release",
    "bounded-ls": "bounded_local_sensitivity",
    "exponential": "exponential_quantile",
    "tie-adaptive": "tie_adaptive_quantile",
    "tail-choice": "tail_choice_quantile",
}


def short_name(name: str) -> str:
    """The recipes' spelling of a mechanism named by its registry key or an alias."""
    v = str(name).lower().replace("_", "-")
    for alias, key in ALIASES.items():
        if v in (alias, key.replace("_", "-")):
            return alias
    return v


def bound_free_keys(statistic: str = "median") -> list[str]:
    """The mechanisms that release ``statistic`` with no public bounds (their class
    says ``bounds_free``): the names a median or quantile with ``bounds=None`` takes,
    in memory (:func:`~instancedp.recipes.build_mechanism`) and out of core
    (:func:`~instancedp.sources.out_of_core_mechanism`) alike."""
    return [e.key for e in for_statistic(statistic) if getattr(e.cls, "bounds_free", False)]


def bound_free_key(name: str | None, statistic: str = "median") -> str | None:
    """The registry key of the bound-free mechanism ``name`` names (key or alias, any
    spelling :func:`short_name` accepts), or None."""
    if name is None:
        return None
    wanted = short_name(name)
    return next((k for k in bound_free_keys(statistic) if short_name(k) == wanted), None)


def register(entry: Entry, *, replace: bool = False) -> Entry:
    """Add ``entry`` (its ``key`` must equal ``entry.cls.name``)."""
    if not isinstance(entry, Entry):
        raise ParameterError("register takes a registry.Entry", parameter="entry")
    if getattr(entry.cls, "name", None) != entry.key:
        raise ParameterError(
            f"entry key {entry.key!r} must equal the class's record name "
            f"{getattr(entry.cls, 'name', None)!r}: one mechanism, one name",
            parameter="key",
        )
    if entry.key in _REGISTRY and not replace:
        raise ParameterError(f"mechanism {entry.key!r} is already registered", parameter="key")
    _REGISTRY[entry.key] = entry
    return entry


def unregister(key: str) -> None:
    """Remove ``key`` (tests that register toys clean up with this)."""
    _REGISTRY.pop(key, None)


def entries() -> list[Entry]:
    """Every registered mechanism, in registration order."""
    _load_builtins()
    return list(_REGISTRY.values())


def keys() -> list[str]:
    return [e.key for e in entries()]


def get(key: str) -> Entry:
    """The entry named ``key``; a clear error listing the names otherwise."""
    _load_builtins()
    entry = _REGISTRY.get(key)
    if entry is None:
        raise ParameterError(
            f"unknown mechanism {key!r}; choose one of {', '.join(_REGISTRY)}",
            parameter="mechanism",
            allowed=", ".join(_REGISTRY),
        )
    return entry


def for_statistic(statistic: str) -> list[Entry]:
    """The mechanisms that serve ``statistic``."""
    return [e for e in entries() if statistic in e.statistics]


def examples() -> Iterator[tuple[str, Entry, ExampleBuilder]]:
    """(catalogue name, entry, builder) for every example of every entry."""
    for entry in entries():
        for variant, builder in entry.examples.items():
            yield (entry.key if not variant else f"{entry.key}/{variant}"), entry, builder


def markdown_table() -> str:
    """The mechanism table of ``docs/mechanisms.md``."""
    rows = [
        "| key | class | statistics | needs δ | description |",
        "|---|---|---|---|---|",
    ]
    for e in entries():
        stats = ", ".join(e.statistics) or "(Python API)"
        rows.append(
            f"| `{e.key}` | `{e.cls.__name__}` | {stats} | "
            f"{'yes' if e.needs_delta else 'no'} | {e.description} |"
        )
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------------------
# Built-in mechanisms.  The examples live in ``instancedp.audit.catalogue``
# (small domains, brute-force neighbour pairs); they are looked up lazily so
# that importing the registry stays cheap.

_LOADED = False


def _ex(name: str) -> ExampleBuilder:
    def build(epsilon: float, delta: float | None) -> Example:
        from .audit import catalogue

        return getattr(catalogue, name)(epsilon, delta)

    build.__name__ = name
    return build


def _ex_arg(name: str, *args: Any) -> ExampleBuilder:
    def build(epsilon: float, delta: float | None) -> Example:
        from .audit import catalogue

        return getattr(catalogue, name)(*args)(epsilon, delta)

    return build


_SMOOTH_FAMILIES = (
    "polyplace",
    "student_t",
    "cauchy",
    "laplace",
    "laplace_log_normal",
    "uniform_log_normal",
    "arsinh_normal",
)
_NUMERIC = ("median", "quantile", "mean", "trimmed-mean", "min", "max")


def _ptr_build(query: Any, epsilon: float, delta: float | None) -> Any:
    from .mechanisms import ProposeTestRelease

    # A data-free proposal: a quarter of the query's global sensitivity.
    return ProposeTestRelease(
        query, epsilon, delta=delta, bound=_public_width(query) / 4
    )


def _public_width(query: Any) -> float:
    import math

    gs = float(getattr(query, "global_sensitivity", math.inf))
    if math.isfinite(gs) and gs > 0:
        return gs
    lo, hi = getattr(query, "lower", 0.0), getattr(query, "upper", 1.0)
    return float(hi - lo) or 1.0


def _exp_quantile_build(query: Any, epsilon: float, delta: float | None) -> Any:
    from .mechanisms import ExponentialQuantile

    # the release default (recipes): the log base with atoms, the query's own relation;
    # two atom levels here so that the exact law can list every atom (the release
    # default has seven: the same code with more atoms)
    return ExponentialQuantile(query, epsilon, base="log-atoms", atom_levels=2)


def _unbounded_build(query: Any, epsilon: float, delta: float | None) -> Any:
    from .mechanisms.unbounded import UnboundedQuantile

    return UnboundedQuantile(float(getattr(query, "q", 0.5)), epsilon, neighbours=query.neighbours)


def _loglog_build(query: Any, epsilon: float, delta: float | None) -> Any:
    from .mechanisms.loglog import LogLogQuantile

    return LogLogQuantile(float(getattr(query, "q", 0.5)), epsilon, neighbours=query.neighbours)


def _sum_over_count_build(query: Any, epsilon: float, delta: float | None) -> Any:
    from .mechanisms.sum_count import NoisySumOverCount

    if query.neighbours != "add_remove":
        raise ParameterError("noisy sum ÷ noisy count is the add/remove mean")
    return NoisySumOverCount(query.lower, query.upper, epsilon)


def _smooth_build(query: Any, epsilon: float, delta: float | None) -> Any:
    from .mechanisms import SmoothSensitivityMechanism

    return SmoothSensitivityMechanism(query, epsilon, delta=delta)


def _load_builtins() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from .mechanisms import (
        BoundedLocalSensitivity,
        ExponentialMechanism,
        ExponentialQuantile,
        GaussianMechanism,
        InstanceBasedNoise,
        LaplaceMechanism,
        PrivateRatio,
        ProposeTestRelease,
        SmallDB,
        SmoothSensitivityMechanism,
        StableRelease,
    )
    from .mechanisms.independent_quantiles import IndependentQuantiles
    from .mechanisms.inverse import InverseSensitivity
    from .mechanisms.joint_quantiles import JointQuantiles
    from .mechanisms.loglog import LogLogQuantile
    from .mechanisms.recursive_quantiles import RecursiveQuantiles
    from .mechanisms.sum_count import NoisySumOverCount
    from .mechanisms.tail_choice import TailChoiceQuantile
    from .mechanisms.tie_adaptive import TieAdaptiveQuantile
    from .mechanisms.unbounded import UnboundedQuantile
    from .mechanisms.unbounded_quantiles import UnboundedQuantiles
    from .sources import CandidateQuantile

    several = (
        "each part is the single-quantile exponential mechanism or Durfee's bound-free "
        "quantile, audited as such; the composition is tested in tests/test_mech_quantiles.py"
    )
    builtins = [
        Entry(
            JointQuantiles.name,
            JointQuantiles,
            "m quantiles at once: the joint exponential mechanism, exact sampler (pure ε-DP; "
            "Gillenwater, Joseph & Kulesza 2021)",
            ("quantiles",),
        ),
        Entry(
            RecursiveQuantiles.name,
            RecursiveQuantiles,
            "m quantiles by recursive median splits, error growing with log m (pure ε-DP; "
            "Kaplan, Schnapp & Stemmer 2022)",
            ("quantiles",),
            exemption=several,
        ),
        Entry(
            IndependentQuantiles.name,
            IndependentQuantiles,
            "m exponential-mechanism quantiles at ε/m each, sorted (pure ε-DP; the peers' way)",
            ("quantiles",),
            exemption=several,
        ),
        Entry(
            UnboundedQuantiles.name,
            UnboundedQuantiles,
            "m quantiles without bounds: m bound-free quantiles at ε/m each, sorted (pure ε-DP; "
            "Durfee 2023)",
            ("quantiles",),
            build=lambda q, e, d: UnboundedQuantiles(q.qs, e, neighbours=q.neighbours),
            exemption=several,
        ),
        Entry(
            UnboundedQuantile.name,
            UnboundedQuantile,
            "quantile without bounds: above-threshold over a geometric grid places a "
            "bracket, the exponential mechanism draws inside it (pure ε-DP; Durfee 2023, "
            "McSherry & Talwar 2007); the default bound-free median and quantile",
            ("median", "quantile"),
            build=_unbounded_build,
        ),
        Entry(
            LogLogQuantile.name,
            LogLogQuantile,
            "quantile without bounds in one step: the exponential mechanism on the whole "
            "line with a proper log-log base measure (pure ε-DP; McSherry & Talwar 2007); "
            "without bounds, by name",
            ("median", "quantile"),
            build=_loglog_build,
        ),
        Entry(
            NoisySumOverCount.name,
            NoisySumOverCount,
            "mean under add/remove: noisy exact sum ÷ noisy count, ε split in half (pure ε-DP)",
            ("mean",),
            build=_sum_over_count_build,
            exemption="a ratio of two Laplace releases: no closed-form density; each part is "
            "the Laplace mechanism, audited as such",
        ),
        Entry(
            InverseSensitivity.name,
            InverseSensitivity,
            "t with probability ∝ exp(−ε·len(x; t)/2), len = changes to reach t (pure ε-DP; "
            "Asi & Duchi 2020)",
            ("median", "quantile"),
        ),
        Entry(
            CandidateQuantile.name,
            CandidateQuantile,
            "quantile on a public candidate grid from counts per cell, for data in a database: "
            "permute-and-flip (pure ε-DP; McKenna & Sheldon 2020)",
            ("median", "quantile"),
        ),
        Entry(
            "laplace",
            LaplaceMechanism,
            "f(x) + Lap(GS/ε): global sensitivity (pure ε-DP; Dwork et al. 2006)",
            ("count", "sum", *_NUMERIC),
            examples={"": _ex("laplace_example"), "sum": _ex("laplace_sum_example")},
        ),
        Entry(
            "gaussian",
            GaussianMechanism,
            "f(x) + N(0, σ²), σ analytic/classic/Canard–Olivier ((ε, δ)-DP)",
            ("count", "sum", *_NUMERIC),
            needs_delta=True,
            examples={
                "": _ex_arg("gaussian_example", "analytic"),
                "classic": _ex_arg("gaussian_example", "classic"),
                "canard-olivier": _ex_arg("gaussian_example", "canard_olivier"),
            },
        ),
        Entry(
            SmoothSensitivityMechanism.name,
            SmoothSensitivityMechanism,
            "q(x) + SS_γ(x)·Z, Z from a calibrated family (NRS 2007; Hladík–Tětek 2024)",
            (*_NUMERIC, "triangles", "kstars", "two-triangles"),
            examples={
                **{f: _ex_arg("smooth_example", f) for f in _SMOOTH_FAMILIES},
                "triangles": _ex("smooth_triangles_example"),
            },
            build=_smooth_build,
        ),
        Entry(
            ProposeTestRelease.name,
            ProposeTestRelease,
            "propose a bound on LS, test it privately, release or ⊥ ((ε, δ)-DP; Dwork–Lei 2009)",
            _NUMERIC,
            needs_delta=True,
            examples={"": _ex("ptr_example")},
            build=_ptr_build,
        ),
        Entry(
            BoundedLocalSensitivity.name,
            BoundedLocalSensitivity,
            "q(x) + Lap(g/ε2), g a private upper bound on LS ((ε, δ)-DP; LS-bound note Thm. 1)",
            _NUMERIC,
            needs_delta=True,
            examples={"": _ex("bounded_ls_example")},
        ),
        Entry(
            ExponentialQuantile.name,
            ExponentialQuantile,
            "quantile by the exponential mechanism over the gaps (pure ε-DP; Smith 2011)",
            ("median", "quantile"),
            examples={"": _ex("exp_quantile_example")},
            build=_exp_quantile_build,
        ),
        Entry(
            TieAdaptiveQuantile.name,
            TieAdaptiveQuantile,
            "a charged tie diagnostic picks smooth sensitivity or the exponential quantile; "
            "the choice is in the record (pure ε-DP; docs/mechanisms.md)",
            ("median", "quantile"),
        ),
        Entry(
            TailChoiceQuantile.name,
            TailChoiceQuantile,
            "a charged noisy row count picks the bounded exponential quantile or the "
            "bound-free bracket (projected onto the bounds); the choice is in the record; "
            "the default for a tail quantile under add/remove (pure ε-DP; docs/mechanisms.md)",
            ("median", "quantile"),
        ),
        Entry(
            StableRelease.name,
            StableRelease,
            "release a stable value (the mode) or ⊥ by distance to instability ((ε, δ)-DP)",
            ("mode",),
            needs_delta=True,
            examples={"": _ex("stable_mode_example")},
        ),
        Entry(
            ExponentialMechanism.name,
            ExponentialMechanism,
            "choose among public candidates ∝ exp(ε·score/(2Δ)) (pure ε-DP; McSherry–Talwar)",
            examples={"": _ex("exponential_example")},
        ),
        Entry(
            SmallDB.name,
            SmallDB,
            "synthetic database by the exponential mechanism (pure ε-DP; Blum–Ligett–Roth 2008)",
            examples={"": _ex("smalldb_example")},
        ),
        Entry(
            InstanceBasedNoise.name,
            InstanceBasedNoise,
            "f(x) + Lap(1/λ_k), rates per sensitivity level ((ε, δ)-DP; Canard–Olivier Thm. 14)",
            examples={"": _ex("levels_example")},
        ),
        Entry(
            PrivateRatio.name,
            PrivateRatio,
            "share a/b of 0/1 flags: KSW, naive or bounded-LS ratio (add/remove)",
            ("ratio",),
            examples={
                "ksw": _ex_arg("ratio_example", "ksw"),
                "naive": _ex_arg("ratio_example", "naive"),
                "bounded-ls": _ex_arg("ratio_example", "bounded_ls"),
            },
            build=lambda q, e, d: PrivateRatio(q, e, delta=d, method="ksw"),
            exemption=(
                "no closed-form law (a ratio of noisy counts): the harness checks its "
                "public record on adversarial neighbours and the catalogue audits its "
                "release path empirically"
            ),
        ),
    ]
    for e in builtins:
        _REGISTRY.setdefault(e.key, e)
