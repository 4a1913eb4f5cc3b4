"""Built-in audit cases: mechanisms, neighbour pairs and fast samplers.

An :class:`AuditCase` bundles what both checks need: a claimed guarantee,
neighbouring datasets, the exact output law on a dataset (where known) and a
vectorised sampler on a dataset.  :func:`audit_case` runs

1. the **exact check** (:func:`~.profile.check_distributions`) over every pair,
   when the laws are known; and
2. the **empirical audit** (:func:`~.empirical.empirical_audit`) on the pair the
   exact check found worst (or on the case's designated pair).

``CATALOGUE`` maps the names accepted by ``instancedp audit NAME`` to a
one-line description; :func:`run_audit` builds a case at the requested
(ε, δ) and returns a JSON-ready dict.  Neighbour pairs come from the
brute-force engine ``instancedp.queries.brute`` on small domains.

The samplers use the mechanisms' public calibration (scale, family, threshold)
and the query's value and sensitivities on the dataset — the same quantities
``release`` uses — with numpy's fast generators; this is an analysis path,
never a release.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..privacy import ZCDP, ApproxDP, Guarantee, PureDP, zcdp_to_epsilon
from .empirical import empirical_audit
from .profile import check_distributions, neighbour_pairs_from_brute

Sampler = Callable[[int, np.random.Generator], Any]

#: δ at which a zCDP claim is audited empirically (ρ-zCDP ⇒ (ε(ρ, δ), δ)-DP for every δ).
ZCDP_AUDIT_DELTA = 1e-2
#: Rényi orders for the exact zCDP check in the catalogue (each is a quadrature).
ZCDP_ORDERS = (1.5, 2.0, 4.0, 8.0, 16.0)


@dataclass
class AuditCase:
    """One mechanism (or deliberately broken variant) ready to audit.

    ``law(data)`` returns an ``OutputDistribution`` or a mapping outcome →
    probability (None when the law is unknown); ``sampler(data)`` returns a
    callable ``(m, rng) -> m outputs``.  ``empirical_pair`` fixes the pair the
    black-box audit uses (default: the exact check's worst pair, else the first).
    """

    name: str
    description: str
    guarantee: Guarantee
    pairs: Sequence[tuple[Any, Any]]
    sampler: Callable[[Any], Sampler]
    law: Callable[[Any], Any] | None = None
    empirical_pair: tuple[Any, Any] | None = None
    orders: Sequence[float] = ZCDP_ORDERS
    mechanism: Any = None  # the package mechanism, when the case wraps one
    #: True when ``sampler`` reproduces the release's floating-point rounding
    #: (the exact path): the empirical audit then also tests low-bit and atom events.
    exact_rounding: bool = False


def audit_epsilon_delta(guarantee: Guarantee) -> tuple[float, float]:
    """(ε, δ) the empirical audit tests for a guarantee (zCDP via CKS 2020 at δ = 1e−2)."""
    if isinstance(guarantee, PureDP):
        return guarantee.epsilon, 0.0
    if isinstance(guarantee, ApproxDP):
        return guarantee.epsilon, guarantee.delta
    if isinstance(guarantee, ZCDP):
        return zcdp_to_epsilon(guarantee.rho, ZCDP_AUDIT_DELTA), ZCDP_AUDIT_DELTA
    raise TypeError(f"unknown guarantee {guarantee!r}")


def audit_case(
    case: AuditCase,
    samples: int = 200_000,
    seed: int = 0,
    exact: bool = True,
    empirical: bool = True,
) -> dict[str, Any]:
    """Run the exact check (if the law is known) and the empirical audit on a case.

    The verdict is ``"FAIL"`` if either check flags the case, ``"pass"`` if the
    exact check (where run) passes and the audit finds nothing, and
    ``"inconclusive"`` if the exact check's error bound straddles the claim.
    """
    t0 = time.perf_counter()
    out: dict[str, Any] = {
        "name": case.name,
        "description": case.description,
        "guarantee": case.guarantee.as_dict(),
        "pairs": len(case.pairs),
    }
    worst = None
    flagged, unsure = False, False
    if exact and case.law is not None:
        t1 = time.perf_counter()
        laws = [(case.law(x), case.law(xp)) for x, xp in case.pairs]
        chk = check_distributions(laws, case.guarantee, orders=case.orders)
        worst = case.pairs[chk.worst_pair] if chk.worst_pair is not None else None
        out["exact"] = {
            **chk.as_dict(),
            "worst_pair": _jsonable(worst),
            "worst_pair_index": chk.worst_pair,
            "seconds": time.perf_counter() - t1,
        }
        flagged |= chk.passed is False
        unsure |= chk.passed is None
    else:
        out["exact"] = None
    if empirical:
        pair = case.empirical_pair or worst or case.pairs[0]
        eps, dl = audit_epsilon_delta(case.guarantee)
        res = empirical_audit(
            case.sampler(pair[0]),
            case.sampler(pair[1]),
            eps,
            dl,
            samples=samples,
            seed=seed,
            low_bits=case.exact_rounding,
        )
        out["empirical"] = {**res.as_dict(), "pair": _jsonable(pair)}
        flagged |= res.violated
    else:
        out["empirical"] = None
    out["verdict"] = "FAIL" if flagged else ("inconclusive" if unsure else "pass")
    out["seconds"] = time.perf_counter() - t0
    return out


def _jsonable(x: Any) -> Any:
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if hasattr(x, "edge_set") and hasattr(x, "n_vertices"):  # a graph
        return {"n_vertices": int(x.n_vertices), "edges": sorted(map(list, x.edge_set()))}
    if isinstance(x, (tuple, list)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return repr(x)


# ---------------------------------------------------------------------------
# Samplers from public calibrations


def additive_sampler(center: float, scale: float, noise: Any) -> Sampler:
    """center + scale·Z, Z ~ noise (fast float path)."""
    c, s = float(center), float(scale)
    if s == 0:
        return lambda m, rng: np.full(m, c)
    return lambda m, rng: c + s * np.asarray(noise.sample(m, rng), dtype=float)


def atoms_sampler(atoms: Mapping[Hashable, float]) -> Sampler:
    """Draws from a finite law (refusal ``None`` included)."""
    keys = list(atoms)
    p = np.array([float(atoms[k]) for k in keys])
    p = p / p.sum()

    def sample(m: int, rng: np.random.Generator) -> list:
        idx = rng.choice(len(keys), size=m, p=p)
        return [keys[i] for i in idx]

    return sample


def refusal_sampler(p_pass: float, inner: Sampler) -> Sampler:
    """``inner`` with probability ``p_pass``, refusal ``None`` otherwise."""

    def sample(m: int, rng: np.random.Generator) -> list:
        passed = rng.random(m) < p_pass
        vals = inner(m, rng)
        return [float(v) if ok else None for v, ok in zip(vals, passed, strict=True)]

    return sample


def secure_release_sampler(mechanism: Any, data: Any) -> Sampler:
    """``mechanism.release(data)`` with the default secure source (OS entropy and
    the exact, Mironov-safe noise path): the real release path, not reproducible
    (``rng`` is ignored) and about a millisecond per output."""

    def sample(m: int, rng: np.random.Generator) -> list:
        return [mechanism.release(data).value for _ in range(m)]

    return sample


def release_sampler(mechanism: Any, data: Any) -> Sampler:
    """The true black box: ``mechanism.release`` in a loop with a simulation source."""
    from ..random import simulation

    def sample(m: int, rng: np.random.Generator) -> list:
        src = simulation(rng)
        return [mechanism.release(data, rng=src).value for _ in range(m)]

    return sample


def mechanism_sampler(mechanism: Any, exact: bool = False) -> Callable[[Any], Sampler]:
    """Sampler factory for a package mechanism: its own :meth:`sample`, i.e. the
    code that releases (seeded; ``exact=True`` takes the secure path's exact,
    correctly rounded noise with a seeded source)."""
    from ..random import simulation

    def factory(d: Any) -> Sampler:
        def sample(k: int, rng: np.random.Generator) -> Any:
            src = simulation(rng)
            if exact:
                src.exact = True  # type: ignore[attr-defined]
            return mechanism.sample(d, k, src)

        return sample

    return factory


def exact_simulation(seed: Any = None) -> Any:
    """A seeded source that takes the secure path's exact noise (audits only;
    releases made with it are marked ``secure=False``)."""
    from ..random import simulation

    src = simulation(seed)
    src.exact = True  # type: ignore[attr-defined]
    return src


def mechanism_case(
    name: str,
    description: str,
    mechanism: Any,
    pairs: Sequence[tuple[Any, Any]],
    exact: bool = True,
    **kw: Any,
) -> AuditCase:
    """An AuditCase for a package mechanism: law from ``output_distribution``
    (when ``exact``), samples from ``sample`` (the release path)."""
    law = getattr(mechanism, "output_distribution", None) if exact else None
    return AuditCase(
        name,
        description,
        mechanism.guarantee,
        pairs,
        mechanism_sampler(mechanism),
        law,
        mechanism=mechanism,
        **kw,
    )


def example_case(name: str, description: str, example: Any) -> AuditCase:
    """The AuditCase of a registry :class:`~instancedp.registry.Example`."""
    case = mechanism_case(name, description, example.mechanism, example.pairs)
    if example.law is not None:
        case.law = example.law
    if example.empirical_pair is not None:
        case.empirical_pair = example.empirical_pair
    if example.orders is not None:
        case.orders = example.orders
    return case


# ---------------------------------------------------------------------------
# The examples the registry names (small domains, brute-force neighbour pairs)

#: Domain and size of the order-statistic cases: datasets of 3 values from it.
MEDIAN_DOMAIN = (0.0, 1.0, 2.0, 4.0, 8.0)
MEDIAN_BOUNDS = (0.0, 8.0)
CATEGORIES = ("a", "b", "c")


def _example(*args: Any, **kw: Any) -> Any:
    from ..registry import Example

    return Example(*args, **kw)


def _median_pairs(small: bool = False) -> list[tuple[Any, Any]]:
    domain = (0.0, 1.0, 8.0) if small else MEDIAN_DOMAIN
    return neighbour_pairs_from_brute(domain, 3, "substitution")


def _median():
    from ..queries import Median

    return Median(*MEDIAN_BOUNDS, neighbours="substitution")


#: Families whose density is a numerical integral: the small domain keeps the checks fast.
_SLOW_FAMILIES = ("laplace_log_normal", "uniform_log_normal", "arsinh_normal")


def smooth_example(family: str):
    def build(eps: float, delta: float | None) -> Any:
        from ..mechanisms import SmoothSensitivityMechanism

        kw = {"delta": delta if delta is not None else 1e-5} if family == "laplace" else {}
        mech = SmoothSensitivityMechanism(_median(), eps, noise=family, **kw)
        return _example(mech, _median_pairs(family in _SLOW_FAMILIES))

    return build


def smooth_triangles_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import SmoothSensitivityMechanism
    from ..queries.graphs import TriangleCount

    mech = SmoothSensitivityMechanism(TriangleCount(n_vertices=4), eps, noise="polyplace")
    return _example(mech, neighbour_pairs_from_brute((), 4, "edge"))


def laplace_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import LaplaceMechanism

    return _example(LaplaceMechanism(_median(), eps), _median_pairs())


def laplace_sum_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import LaplaceMechanism
    from ..queries import Sum

    pairs = neighbour_pairs_from_brute((-1.0, 0.0, 1.0), 2, "add_remove")
    return _example(LaplaceMechanism(Sum(-1.0, 1.0), eps), pairs)


def gaussian_example(calibration: str):
    def build(eps: float, delta: float | None) -> Any:
        from ..mechanisms import GaussianMechanism

        mech = GaussianMechanism(_median(), eps, delta=delta or 1e-5, calibration=calibration)
        return _example(mech, _median_pairs())

    return build


def ptr_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import ProposeTestRelease

    mech = ProposeTestRelease(_median(), eps, delta=delta or 1e-3, bound=2.0)
    return _example(mech, _median_pairs())


def bounded_ls_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import BoundedLocalSensitivity

    mech = BoundedLocalSensitivity(_median(), eps, delta=delta or 1e-3)
    # The law is a Laplace mixture over a midpoint rule for the noisy bound;
    # 1001 nodes keep each check fast (the small domain keeps the pairs few).
    return _example(
        mech,
        _median_pairs(small=True),
        law=lambda d: mech.output_distribution(d, points=1001),
    )


def exp_quantile_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import ExponentialQuantile
    from ..registry import get

    mech = get("exponential_quantile").make(_median(), eps)
    assert isinstance(mech, ExponentialQuantile)
    return _example(mech, _median_pairs())


def _category_pairs(n: int = 4) -> list[tuple[Any, Any]]:
    return neighbour_pairs_from_brute(CATEGORIES, n, "substitution")


def stable_mode_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import StableRelease
    from ..mechanisms.stability import Mode

    mech = StableRelease(Mode(list(CATEGORIES)), eps, delta=delta or 1e-3)
    return _example(mech, _category_pairs(6))


def category_counts(data: Any, cands: Sequence[str]) -> np.ndarray:
    """Count of each candidate label in ``data`` (the exponential example's score)."""
    items = list(data)
    return np.array([items.count(c) for c in cands], dtype=float)


def exponential_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import ExponentialMechanism

    # Under substitution one changed record moves each count by at most 1.
    mech = ExponentialMechanism(list(CATEGORIES), category_counts, 1.0, eps)
    return _example(mech, _category_pairs())


def smalldb_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import SmallDB

    universe = [0, 1, 2]
    queries = [lambda x: x >= 1, lambda x: x == 2]
    mech = SmallDB(universe, queries, 0.5, eps, size=2)
    return _example(mech, neighbour_pairs_from_brute(universe, 3, "substitution"))


def median_levels() -> tuple[Callable[[Any], int], np.ndarray, dict[int, list[int]]]:
    """Sensitivity levels of the median on MEDIAN_DOMAIN (n = 3), by brute force.

    Level of x: its LS, floored at 0.5 (a valid upper bound, Canard–Olivier Remark 21;
    Algorithm 1 needs LS_k > 0); adjacency: levels joined by a neighbour pair.
    """
    q = _median()
    pairs = _median_pairs()
    ls_of: dict[tuple, float] = {}
    for x, xp in pairs:
        for d in (x, xp):
            if d not in ls_of:
                ls_of[d] = max(0.5, float(q.local_sensitivity(list(d), 0)))
    levels = np.array(sorted(set(ls_of.values())))
    index = {v: i for i, v in enumerate(levels)}
    adjacency: dict[int, set[int]] = {i: set() for i in range(levels.size)}
    for x, xp in pairs:
        a, b = index[ls_of[x]], index[ls_of[xp]]
        if a != b:
            adjacency[a].add(b)
            adjacency[b].add(a)

    def level_of(data: Any) -> int:
        key = tuple(sorted(float(v) for v in data))
        if key in ls_of:
            return index[ls_of[key]]
        ls = max(0.5, float(q.local_sensitivity(list(data), 0)))
        return int(np.searchsorted(levels, ls))

    return level_of, levels, {k: sorted(v) for k, v in adjacency.items()}


def levels_example(eps: float, delta: float | None) -> Any:
    from ..mechanisms import InstanceBasedNoise

    level_of, levels, adjacency = median_levels()
    mech = InstanceBasedNoise.from_levels(
        level_of, levels, adjacency, _median(), eps, delta or 1e-3
    )
    return _example(mech, _median_pairs())


def ratio_pairs() -> list[tuple[Any, Any]]:
    """Add/remove pairs of 0/1 flag datasets with small counts (a, b)."""
    pairs = []
    for a, b in ((1, 3), (2, 4), (3, 6), (5, 10)):
        x = [1] * a + [0] * (b - a)
        pairs.append((tuple(x), tuple([*x, 1])))
        pairs.append((tuple(x), tuple([*x, 0])))
    return pairs


def ratio_example(method: str):
    def build(eps: float, delta: float | None) -> Any:
        from ..mechanisms.ratio import PrivateRatio

        dl = (delta or 1e-3) if method == "bounded_ls" else None
        mech = PrivateRatio(None, eps, method=method, delta=dl)
        pairs = ratio_pairs()
        # No closed-form law: audited empirically on the smallest counts.
        return _example(mech, pairs, empirical_pair=pairs[0])

    return build


# ---------------------------------------------------------------------------
# The catalogue: generated from the registry


def _catalogue() -> dict[str, tuple[Any, Callable[[float, float | None], Any]]]:
    from ..registry import examples

    return {name: (entry, builder) for name, entry, builder in examples()}


def catalogue_names() -> dict[str, str]:
    """Names accepted by ``instancedp audit NAME`` → one-line description."""
    out = {}
    for name, (entry, _builder) in _catalogue().items():
        variant = name.partition("/")[2]
        out[name] = entry.description + (f" [{variant}]" if variant else "")
    return out


def __getattr__(name: str) -> Any:
    if name == "CATALOGUE":  # computed on access so registered toys appear
        return catalogue_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_case(name: str, epsilon: float = 1.0, delta: float | None = None) -> AuditCase:
    """The catalogue case ``name`` at (ε, δ) (δ defaults per mechanism when None)."""
    cat = _catalogue()
    if name not in cat:
        raise ParameterError(
            f"mechanism must be one of {', '.join(sorted(cat))}; got {name!r}",
            parameter="mechanism",
            allowed=", ".join(sorted(cat)),
        )
    eps = _validate.epsilon(epsilon)
    dl = None if delta is None else _validate.delta(delta, allow_zero=False)
    entry, builder = cat[name]
    variant = name.partition("/")[2]
    description = entry.description + (f" [{variant}]" if variant else "")
    return example_case(name, description, builder(eps, dl))


def run_audit(
    name: str,
    epsilon: float = 1.0,
    delta: float | None = None,
    samples: int = 200_000,
    seed: int = 0,
) -> dict[str, Any]:
    """Audit catalogue entry ``name`` at (ε, δ): exact check where the law is
    known, then the empirical audit; returns a JSON-ready dict with
    ``verdict`` ("pass" / "FAIL" / "inconclusive"), the exact check's measured
    quantity and error bound, and the empirical ε lower bound, event, samples
    and time."""
    case = build_case(name, epsilon, delta)
    return audit_case(case, samples=samples, seed=seed)


# ---------------------------------------------------------------------------
# The results table (benchmarks/audit.py, ``instancedp reproduce``)

SAMPLE_LADDER = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)


def _row(res: dict[str, Any], kind: str) -> dict[str, Any]:
    ex, em = res.get("exact"), res.get("empirical")
    return {
        "kind": kind,
        "name": res["name"],
        "description": res["description"],
        "guarantee": res["guarantee"],
        "verdict": res["verdict"],
        "exact_verdict": None if ex is None else ex["verdict"],
        "exact_measured": None if ex is None else ex["measured"],
        "exact_error_bound": None if ex is None else ex["error_bound"],
        "exact_claimed": None if ex is None else ex["claimed"],
        "exact_pairs": None if ex is None else ex["pairs_checked"],
        "exact_seconds": None if ex is None else ex["seconds"],
        "empirical_epsilon": None if em is None else em["epsilon"],
        "empirical_delta": None if em is None else em["delta"],
        "epsilon_lower_bound": None if em is None else em["epsilon_lower_bound"],
        "empirical_violated": None if em is None else em["violated"],
        "samples": None if em is None else em["samples"],
        "empirical_seconds": None if em is None else em["seconds"],
        "event": None if em is None else em["event"],
        "seconds": res["seconds"],
    }


def samples_to_flag(
    case: AuditCase,
    pair: tuple[Any, Any] | None = None,
    seed: int = 0,
    ladder: Sequence[int] = SAMPLE_LADDER,
) -> tuple[int | None, float]:
    """Smallest sample count on ``ladder`` at which the empirical audit of
    ``pair`` (default: the case's designated or first pair) flags ``case``
    (None if none does), and the time that run took."""
    if pair is not None:
        case = replace(case, empirical_pair=pair)
    for m in ladder:
        res = audit_case(case, samples=m, seed=seed, exact=False)
        if res["empirical"]["violated"]:
            return m, res["empirical"]["seconds"]
    return None, math.nan


def audit_table(
    samples: int = 200_000,
    seed: int = 0,
    quick: bool = False,
    epsilon: float = 1.0,
    broken: Sequence[AuditCase] = (),
    secure: Sequence[str] = (),
    secure_samples: int = 20_000,
) -> list[dict[str, Any]]:
    """One row per catalogue mechanism (at ε, the classic Gaussian at 0.9ε < 1)
    and per case in ``broken``: verdicts, exact measured value, empirical ε
    lower bound, samples and times.  For broken cases also the smallest number
    of samples (on :data:`SAMPLE_LADDER`) at which the empirical audit flags
    them.  For the catalogue names in ``secure``, one more row audits the real
    release path's rounding (``sample`` with a seeded source on the exact noise
    path, ``secure_samples`` outputs per input, low-bit and atom events on) on
    the exact check's worst pair.  ``quick`` uses
    20 000 samples, skips the ladder and the secure rows."""
    if quick:
        samples = min(samples, 20_000)
        secure = ()
    rows = []
    for name in catalogue_names():
        eps = min(epsilon, 0.9) if name == "gaussian/classic" else epsilon
        case = build_case(name, eps)
        res = audit_case(case, samples, seed)
        rows.append(_row(res, "shipped"))
        if name in secure and case.mechanism is not None:
            i = (res["exact"] or {}).get("worst_pair_index")
            pair = case.pairs[i] if i is not None else case.pairs[0]
            sec = replace(
                case,
                name=f"{name} (release rounding: exact path)",
                sampler=mechanism_sampler(case.mechanism, exact=True),
                empirical_pair=pair,
                exact_rounding=True,
            )
            rows.append(_row(audit_case(sec, secure_samples, seed, exact=False), "secure"))
    for case in broken:
        res = audit_case(case, samples, seed)
        row = _row(res, "broken")
        if not quick and row["empirical_violated"]:
            ladder = [m for m in SAMPLE_LADDER if m <= samples]
            i = (res["exact"] or {}).get("worst_pair_index")
            pair = case.empirical_pair or (case.pairs[i] if i is not None else None)
            row["samples_to_flag"], row["seconds_to_flag"] = samples_to_flag(
                case, pair, seed, ladder
            )
        rows.append(row)
    return rows
