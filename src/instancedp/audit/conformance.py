"""Does the code that releases sample the law the exact check verified?

The exact checks in :mod:`.profile` verify a mechanism's *declared* law
(``output_distribution``).  A mechanism whose release path drifted from that
law — a wrong scale, a missing floor, a rare exact leak — would pass them.
:func:`check_sampling` closes the gap: it draws from ``mechanism.sample`` (the
very code ``release`` runs) and tests the draws against the declared law:

- **continuous part**: one-sample Kolmogorov–Smirnov test of the numeric
  outputs that are not declared atoms against ``cdf(y)/continuous_mass``;
- **declared atoms** (refusals ⊥, point masses): an exact two-sided binomial
  test of each atom's count;
- **undeclared atoms**: a finite value that the declared continuous part
  gives no mass repeats among m draws with probability at most
  m²/2 · max_y P(the float y) ≤ m²/2 · max_i pdf(y_i)·ulp(y_i)·(1 + 1e-3) on
  the sampled range; a repeat below that bound is a point mass the law lacks
  (a rare exact leak of probability p shows up once m ≳ 2/√p … 10/p draws).

``level`` is the total false-failure probability per input (Bonferroni over
the tests); the default 1e−6 makes a correct mechanism fail with probability
≤ 1e−6 per input at random seeds (the tests fix the seeds).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from .. import _validate
from ..errors import ParameterError


@dataclass(frozen=True)
class SamplingCheck:
    """Outcome of :func:`check_sampling` on one input."""

    passed: bool
    p_value: float  # smallest Bonferroni-adjusted p-value over the tests
    test: str  # which test gave it
    samples: int
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "p_value": self.p_value,
            "test": self.test,
            "samples": self.samples,
            **self.details,
        }


def _source(seed: int, exact: bool) -> Any:
    from ..random import simulation

    src = simulation(seed)
    if exact:
        src.exact = True  # type: ignore[attr-defined]
    return src


def _atoms(law: Any) -> Mapping[Any, float]:
    if isinstance(law, Mapping):
        return law
    return law.atoms


def check_sampling(
    mechanism: Any,
    data: Any,
    samples: int = 4000,
    seed: int = 0,
    level: float = 1e-6,
    exact: bool = False,
    law: Any = None,
) -> SamplingCheck:
    """Test ``mechanism.sample(data, samples)`` against ``output_distribution(data)``.

    ``exact=True`` draws through the secure path's exact noise (seeded);
    ``law`` overrides the declared law (e.g. a coarser quadrature)."""
    m = int(samples)
    if m < 20:
        raise ParameterError(f"samples must be an integer >= 20, got {samples!r}")
    level = _validate.in_open_interval(level, "level", 0.0, 1.0)
    law = mechanism.output_distribution(data) if law is None else law
    draws = mechanism.sample(data, m, _source(seed, exact))
    draws = list(draws.tolist() if isinstance(draws, np.ndarray) else draws)
    atoms = dict(_atoms(law))
    continuous_mass = 1.0 - float(sum(atoms.values()))

    def is_atom(v: Any) -> Any:
        for a in atoms:
            if (a is None and v is None) or (a is not None and v is not None and a == v):
                return True, a
        return False, None

    counts = {repr(a): 0 for a in atoms}
    keyed = {repr(a): a for a in atoms}
    rest: list[float] = []
    other: list[Any] = []
    for v in draws:
        hit, a = is_atom(v)
        if hit:
            counts[repr(a)] += 1
        elif isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool):
            rest.append(float(v))
        else:
            other.append(v)
    tests: list[tuple[str, float]] = []
    # outputs outside the declared support entirely (neither atom nor number)
    if other or (rest and continuous_mass <= 0):
        bad = other[:3] if other else rest[:3]
        return SamplingCheck(False, 0.0, f"outputs outside the declared law: {bad!r}", m)
    for key, k in counts.items():
        p = float(atoms[keyed[key]])
        tests.append((f"atom {key}", float(stats.binomtest(k, m, min(max(p, 0.0), 1.0)).pvalue)))
    details: dict[str, Any] = {}
    if rest:
        y = np.asarray(rest, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            return SamplingCheck(False, 0.0, "non-finite outputs the law does not declare", m)
        # undeclared atoms: repeated values of the continuous part
        vals, reps = np.unique(y, return_counts=True)
        repeated = vals[reps >= 2]
        pdf = np.asarray(law.pdf(y), dtype=np.float64) / max(continuous_mass, 1e-300)
        cell = float(np.max(pdf * np.spacing(np.abs(y)))) * (1 + 1e-3)
        collide = min(1.0, y.size * y.size / 2 * cell)
        details["undeclared_repeats"] = int(repeated.size)
        details["repeat_bound"] = collide
        if repeated.size:
            # r copies of one float value: probability ≤ C(m, r)·cell^(r−1) (union
            # bound over r-subsets, the first copy free, each further one ≤ cell).
            r = int(reps.max())
            top = float(vals[int(np.argmax(reps))])
            log_p = (
                math.lgamma(y.size + 1) - math.lgamma(r + 1) - math.lgamma(y.size - r + 1)
                + (r - 1) * math.log(max(cell, 1e-300))
            )
            p_rep = min(collide, math.exp(min(log_p, 0.0)))
            tests.append((f"value {top!r} repeated {r} times (an undeclared atom)", p_rep))
        cdf = law.cdf

        def normalised(t: np.ndarray) -> np.ndarray:
            return np.clip(np.asarray(cdf(t), dtype=np.float64) / continuous_mass, 0.0, 1.0)

        ks = stats.kstest(y, normalised)
        tests.append(("Kolmogorov-Smirnov of the continuous part", float(ks.pvalue)))
    k = max(len(tests), 1)
    name, p = min(tests, key=lambda t: t[1]) if tests else ("(none)", 1.0)
    adjusted = min(1.0, p * k)
    return SamplingCheck(bool(adjusted >= level), adjusted, name, m, details)


def check_mechanism_sampling(
    mechanism: Any,
    inputs: Any,
    samples: int = 4000,
    seed: int = 0,
    level: float = 1e-6,
    exact: bool = False,
) -> list[SamplingCheck]:
    """:func:`check_sampling` on each input (distinct seeds; ``level`` per input)."""
    return [
        check_sampling(mechanism, d, samples, seed + i, level, exact)
        for i, d in enumerate(inputs)
    ]
