"""Release records and the mechanism base class.

A mechanism holds only public parameters and states its guarantee before it
sees data.  ``release`` returns a :class:`Release` that carries the noisy
value, the guarantee, the mechanism's name and its public parameters — never
a data-dependent quantity (smooth or local sensitivity, a data-derived scale,
a data-derived choice).

Mechanisms whose output law on a given input is known also offer
``output_distribution(data) -> OutputDistribution`` for the exact privacy
checks in ``instancedp.audit``; that object is an analysis tool holding
data-dependent quantities and is never part of a release.

**Releases inside the public range.**  A mechanism that adds noise to a
query's value (Laplace, Gaussian, smooth sensitivity, PTR, bounded local
sensitivity, instance-based noise) can release a number the statistic can
never take: a mean below its lower bound, a negative count.  Such a
mechanism sets ``projects_to_range`` and every draw is projected onto the
query's public range (:func:`public_range`: [lower, upper] for means,
trimmed means and order statistics, [0, ∞) for counts and graph counts,
[0, 1] for ratios, the sign of a sum's bounds).  The true value lies in that
closed convex set, so the projection never moves the release farther from
it (|clip(y) − f| ≤ |y − f|), and it is post-processing: the guarantee is
unchanged (Dwork & Roth 2014, Prop. 2.1).  The record always states the
range (``parameters.post_processing``), whatever the draw, and the exact
law is the clamped one (:meth:`OutputDistribution.clamped`: the tails become
atoms at the ends).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import ParameterError
from ..noise.base import NoiseDistribution
from ..privacy import Guarantee
from ..random import RandomSource, resolve


@dataclass(frozen=True)
class Release:
    """One private release.  ``value is None`` means the mechanism refused (⊥).

    ``ci``: its private confidence interval (:class:`instancedp.intervals.Interval`),
    when one was asked for; its charge is part of ``guarantee``."""

    value: Any
    guarantee: Guarantee
    mechanism: str
    parameters: Mapping[str, Any]
    secure: bool = True
    ci: Any = None

    @property
    def refused(self) -> bool:
        return self.value is None

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        out = {
            "value": value,
            "refused": self.refused,
            "guarantee": self.guarantee.as_dict(),
            "mechanism": self.mechanism,
            "parameters": dict(self.parameters),
            "secure": self.secure,
        }
        if self.ci is not None:
            out["ci"] = self.ci.as_dict()
        return out

    def __repr__(self) -> str:
        value = "refused" if self.refused else f"{self.to_dict()['value']!r}"
        secure = "" if self.secure else ", secure=False (seeded simulation)"
        ci = "" if self.ci is None else f", ci={self.ci.describe()}"
        return (
            f"Release(value={value}, guarantee={self.guarantee.describe()}, "
            f"mechanism={self.mechanism!r}{ci}{secure})"
        )

    def _repr_html_(self) -> str:
        import html

        rows = [
            ("value", "refused" if self.refused else self.to_dict()["value"]),
            ("guarantee", self.guarantee.describe()),
            ("mechanism", self.mechanism),
            *([("confidence interval", self.ci.describe())] if self.ci is not None else []),
            ("secure", "yes" if self.secure else "no: seeded simulation"),
        ]
        rows += [(f"parameter {k}", v) for k, v in dict(self.parameters).items()]
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
            f"<td>{html.escape(str(v))}</td></tr>"
            for k, v in rows
        )
        return f"<table><caption>instancedp Release</caption>{body}</table>"


def public_range(query: Any) -> tuple[float, float] | None:
    """The closed interval the query's exact value always lies in, from its public
    parameters only (None: no useful range, or a query this function does not know).

    [lower, upper] for means, trimmed means and order statistics (their value is
    a function of the rows clamped to the bounds; the add/remove mean of the
    empty table is the midpoint); [0, ∞) for counts and graph counts; [0, 1] for
    the ratio; for a sum on [lower, upper], [0, ∞) when lower ≥ 0 and (−∞, 0]
    when upper ≤ 0 (any number of rows, the empty sum 0 included)."""
    from ..queries.counts import Count, Ratio, Sum
    from ..queries.graphs import _GraphQuery
    from ..queries.means import TrimmedMean
    from ..queries.order import _OrderStatistic

    if isinstance(query, Count | _GraphQuery):
        return (0.0, math.inf)
    if isinstance(query, Ratio):
        return (0.0, 1.0)
    if isinstance(query, Sum):
        lo = 0.0 if float(query.lower) >= 0 else -math.inf
        hi = 0.0 if float(query.upper) <= 0 else math.inf
        return None if (lo, hi) == (-math.inf, math.inf) else (lo, hi)
    if isinstance(query, TrimmedMean | _OrderStatistic):
        return (float(query.lower), float(query.upper))
    return None


def clip_to(value: Any, bounds: tuple[float, float] | None) -> Any:
    """``value`` (a float, None for a refusal, an array or a list of them) projected
    onto the closed interval ``bounds`` (None: unchanged).  −0.0 stays a float;
    NaN is left as it is."""
    if bounds is None or value is None:
        return value
    lo, hi = bounds
    if isinstance(value, np.ndarray):
        return np.clip(value, lo, hi) if value.dtype != object else np.array(
            [clip_to(v, bounds) for v in value.tolist()], dtype=object)
    if isinstance(value, list):
        return [clip_to(v, bounds) for v in value]
    v = float(value)
    return v if math.isnan(v) else min(max(v, lo), hi)


def range_record(bounds: tuple[float, float]) -> dict[str, Any]:
    """The record's statement of the projection (a function of public parameters
    only: the same whatever the draw); an infinite end is None (strict JSON)."""
    ends = [v if math.isfinite(v) else None for v in bounds]
    return {"clamp_to": ends, "why": "the statistic's public range (post-processing)"}


def split_epsilon(epsilon: float, share: float) -> tuple[float, float]:
    """(ε₀, ε₁) = (share·ε, the rest), ε₁ rounded down until ε₀ + ε₁ ≤ ε in floating
    point: a diagnostic's part and a release's part that never add above ε."""
    eps0 = epsilon * share
    eps1 = epsilon - eps0
    while eps0 + eps1 > epsilon:
        eps1 = math.nextafter(eps1, 0.0)
    return eps0, eps1


def query_name(query: Any) -> str:
    """The public name of a query object (its ``name``, else its class name)."""
    return str(getattr(query, "name", "") or type(query).__name__)


class Mechanism(ABC):
    """Base class: public parameters in, ``Release`` out.

    The one shape every mechanism has: ``Cls(query, epsilon, *, delta=None, …)``
    with ``epsilon`` the total it charges and ``query`` a query object.  A
    subclass supplies

    - ``guarantee`` — fixed at construction, before any data are seen;
    - ``mechanism_parameters()`` — its own public parameters (the base adds the
      query's name, its public parameters, the neighbour relation, ε and δ);
    - ``_state(data)`` — the data-dependent quantities a draw needs (centre,
      scale, pass probability …), computed once per input; private;
    - ``_draw(state, source, size)`` — one output (``size=None``) or ``size``
      outputs, from that state and a random source;
    - ``output_distribution(data)`` — the exact law of one output, where known,
      with its theorem in the docstring.

    ``release`` is ``_draw(state, source, None)`` plus the record and
    ``sample`` is ``_draw(state, source, size)``: the audits that sample a
    mechanism run the very code that releases, so the two cannot drift.
    """

    name: ClassVar[str] = ""
    #: noise added to the query's value: every draw is projected onto
    #: :func:`public_range` (module docstring)
    projects_to_range: ClassVar[bool] = False
    query: Any
    epsilon: float
    delta: float | None = None

    def output_range(self) -> tuple[float, float] | None:
        """The public interval every release is projected onto (None: none)."""
        if not self.projects_to_range:
            return None
        return public_range(getattr(self, "query", None))

    def _project(self, value: Any) -> Any:
        """A draw (or ``size`` draws) projected onto :meth:`output_range`."""
        return clip_to(value, self.output_range())

    def _project_law(self, law: OutputDistribution) -> OutputDistribution:
        """The law of :meth:`_project` applied to a draw of ``law``."""
        bounds = self.output_range()
        return law if bounds is None else law.clamped(*bounds)

    @property
    @abstractmethod
    def guarantee(self) -> Guarantee: ...

    def mechanism_parameters(self) -> dict[str, Any]:
        """The mechanism's own public parameters (beyond query, neighbours, ε, δ)."""
        return {}

    def parameters(self) -> dict[str, Any]:
        """Public parameters only: the query's, the relation, ε, δ and the mechanism's."""
        query = getattr(self, "query", None)
        params: dict[str, Any] = {}
        if query is not None:
            params["query"] = query_name(query)
            params["neighbours"] = getattr(query, "neighbours", None)
        params["epsilon"] = self.epsilon
        if self.delta is not None:
            params["delta"] = self.delta
        params.update(self.mechanism_parameters())
        bounds = self.output_range()
        if bounds is not None:
            params["post_processing"] = range_record(bounds)
        qp = getattr(query, "parameters", None)
        if callable(qp):
            query_params = qp()
            if query_params:
                params["query_parameters"] = dict(query_params)
        return params

    def _state(self, data: Any) -> Any:
        """Data-dependent quantities one draw needs (private; default: the data)."""
        return data

    def _draw(self, state: Any, source: RandomSource, size: int | None) -> Any:
        """One output (``size=None``) or a sequence of ``size`` outputs."""
        raise NotImplementedError(f"{type(self).__name__} does not define _draw")

    def _state_parameters(self, state: Any) -> dict[str, Any]:
        """The record's parameters for this draw (default: :meth:`parameters`).

        Overridden only where a public choice depends on public facts of the
        input (e.g. the smooth mechanism's default γ under substitution, where n
        is public)."""
        return self.parameters()

    def release(self, data: Any, rng: Any = None) -> Release:
        """One private release: ``sample`` of size one, recorded."""
        source = resolve(rng)
        state = self._state(data)
        value = self._draw(state, source, None)
        return Release(
            value, self.guarantee, self.name, self._state_parameters(state), source.secure
        )

    def sample(self, data: Any, size: int, rng: Any = None) -> Any:
        """``size`` outputs on one input through the release path (for audits).

        Same state, same draw code as :meth:`release`; with the default secure
        source every draw takes the exact noise path, with
        ``instancedp.random.simulation(seed)`` the fast float path, and with
        ``instancedp.audit.exact_simulation(seed)`` the exact path, seeded."""
        size = int(size)
        if size < 0:
            raise ParameterError(
                f"size must be an integer >= 0; got {size!r}", parameter="size", allowed=">= 0"
            )
        source = resolve(rng)
        if type(self)._draw is Mechanism._draw:
            # a subclass that overrides release only: sample its release
            return [self.release(data, source).value for _ in range(size)]
        return self._draw(self._state(data), source, size)

    def _record(self, value: Any, source: RandomSource) -> Release:
        return Release(value, self.guarantee, self.name, self.parameters(), source.secure)


def _legacy_positional(legacy: tuple, names: tuple[str, ...], *current: Any) -> tuple:
    """Map the old positional arguments after ε onto keyword parameters.

    Keeps pre-1.0 call sites such as ``GaussianMechanism(q, 1.0, 1e-6)``
    working while the documented shape is keyword-only after ε."""
    if len(legacy) > len(names):
        raise ParameterError(
            f"too many positional arguments: after (query, epsilon) pass {', '.join(names)} "
            "as keywords",
            parameter=names[0],
        )
    values = list(current)
    for i, v in enumerate(legacy):
        values[i] = v
    return tuple(values) if len(values) > 1 else values[0]


def repeat_draw(draw: Callable[[], Any], size: int | None) -> Any:
    """``draw()`` once (``size=None``) or a list of ``size`` draws."""
    if size is None:
        return draw()
    return [draw() for _ in range(size)]


def add_noise(
    value: float,
    scale: float,
    noise: NoiseDistribution,
    source: RandomSource,
    size: int | None = None,
) -> Any:
    """value + scale·Z, Z ~ noise (a float, or an array of ``size`` draws).

    Secure sources take the exact path (``instancedp.noise.exact``: the
    correctly rounded float64 of the real-number sum, Mironov-safe).  The
    scale (a smooth sensitivity or a data-free constant) and the noise's own
    scale were computed in floating point, so the scale is first raised by 16 ulps to an
    upper bound on its real value: more noise never hurts the guarantee.
    Seeded simulation sources take the fast float path, unless they carry
    ``exact = True`` (the audits' seeded stand-in for the secure path).
    """
    if source.secure or getattr(source, "exact", False):
        from ..noise.exact import add_noise as exact_add_noise
        from ..noise.exact import scale_upper_bound

        out = exact_add_noise(value, scale_upper_bound(scale), noise, size=size, rng=source)
    else:
        out = value + scale * np.asarray(noise.sample(size, source), dtype=np.float64)
    return float(out) if size is None else np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class OutputDistribution:
    """Exact law of a release on one input: a continuous part plus atoms.

    ``pdf`` integrates to ``1 − sum(atoms.values())``; ``cdf(y)`` is the
    continuous mass on (−∞, y]; ``logpdf`` (optional) keeps the far tails
    accurate; ``atoms`` maps discrete outputs (``None`` = refusal ⊥) to
    their probabilities; ``kinks`` lists points where the density is not smooth.
    """

    pdf: Callable[[np.ndarray], np.ndarray]
    cdf: Callable[[np.ndarray], np.ndarray]
    kinks: tuple[float, ...] = ()
    atoms: Mapping[Hashable, float] = field(default_factory=dict)
    logpdf: Callable[[np.ndarray], np.ndarray] | None = None
    #: the continuous mass on (y, ∞), where it is known more accurately than
    #: ``continuous_mass − cdf(y)`` (the far upper tail)
    sf: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def continuous_mass(self) -> float:
        return 1.0 - float(sum(self.atoms.values()))

    @classmethod
    def additive(
        cls,
        center: float,
        scale: float,
        noise: NoiseDistribution,
        atoms: Mapping[Hashable, float] | None = None,
    ) -> OutputDistribution:
        """Law of center + scale·Z, weighted by the mass not in ``atoms``."""
        atoms = dict(atoms or {})
        mass = 1.0 - float(sum(atoms.values()))
        logmass = math.log(mass) if mass > 0 else -math.inf
        c, s = float(center), float(scale)

        def logpdf(y: np.ndarray) -> np.ndarray:
            return noise.logpdf((np.asarray(y, dtype=float) - c) / s) - math.log(s) + logmass

        return cls(
            pdf=lambda y: np.exp(logpdf(y)),
            cdf=lambda y: mass * noise.cdf((np.asarray(y, dtype=float) - c) / s),
            kinks=tuple(c + s * k for k in noise.kinks),
            atoms=atoms,
            logpdf=logpdf,
            sf=lambda y: mass * noise.sf((np.asarray(y, dtype=float) - c) / s),
        )

    def clamped(self, lower: float, upper: float) -> OutputDistribution:
        """The law of clip(Y, lower, upper) for Y of this law.

        The continuous mass below ``lower`` (``cdf(lower)``) and above ``upper``
        (``sf(upper)``) become atoms at the ends; numeric atoms outside move to
        the nearer end; the refusal atom (None) stays; the density is kept on
        the open interval (lower, upper) and is 0 outside.  The ends are kinks
        (the density jumps there)."""
        lo, hi = float(lower), float(upper)
        one = lambda t: float(np.asarray(t, dtype=float).reshape(-1)[0])  # noqa: E731
        below = max(0.0, one(self.cdf(np.array([lo])))) if math.isfinite(lo) else 0.0
        if not math.isfinite(hi):
            above, top = 0.0, self.continuous_mass
        else:
            top = one(self.cdf(np.array([hi])))
            above = one(self.sf(np.array([hi]))) if self.sf is not None else (
                self.continuous_mass - top)
            above = max(0.0, above)
        inside = max(0.0, top - below)
        atoms: dict[Hashable, float] = {}
        for key, p in self.atoms.items():
            if isinstance(key, int | float | np.number) and not isinstance(key, bool):
                key = min(max(float(key), lo), hi)
            atoms[key] = atoms.get(key, 0.0) + float(p)
        for end, p in ((lo, below), (hi, above)):
            if p > 0:
                atoms[end] = atoms.get(end, 0.0) + p
        base_pdf, base_cdf, base_logpdf = self.pdf, self.cdf, self.logpdf

        def inner(y: Any) -> np.ndarray:
            y = np.asarray(y, dtype=float)
            return (y > lo) & (y < hi)

        def pdf(y: Any) -> np.ndarray:
            y = np.asarray(y, dtype=float)
            return np.where(inner(y), base_pdf(np.clip(y, lo, hi)), 0.0)

        def cdf(y: Any) -> np.ndarray:
            y = np.asarray(y, dtype=float)
            c = np.asarray(base_cdf(np.clip(y, lo, hi)), dtype=float) - below
            return np.where(y < lo, 0.0, np.clip(c, 0.0, inside))

        def sf(y: Any) -> np.ndarray:
            return inside - cdf(y)

        logpdf = None
        if base_logpdf is not None:

            def logpdf(y: Any) -> np.ndarray:
                y = np.asarray(y, dtype=float)
                return np.where(inner(y), base_logpdf(np.clip(y, lo, hi)), -np.inf)

        kinks = tuple(k for k in self.kinks if lo < k < hi)
        kinks += tuple(v for v in (lo, hi) if math.isfinite(v))
        return OutputDistribution(pdf=pdf, cdf=cdf, kinks=kinks, atoms=atoms, logpdf=logpdf,
                                  sf=sf)


def atoms_law(outcomes: Sequence[Hashable], probabilities: Any) -> OutputDistribution:
    """A purely discrete law: ``outcomes[i]`` with probability ``probabilities[i]``."""
    zero = lambda y: np.zeros_like(np.asarray(y, dtype=float))  # noqa: E731
    p = np.asarray(probabilities, dtype=np.float64)
    atoms: dict[Hashable, float] = {}
    for o, pi in zip(outcomes, p.tolist(), strict=True):
        atoms[o] = atoms.get(o, 0.0) + pi
    return OutputDistribution(pdf=zero, cdf=zero, atoms=atoms)
