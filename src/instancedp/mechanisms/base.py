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
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..noise.base import NoiseDistribution
from ..privacy import Guarantee
from ..random import RandomSource


@dataclass(frozen=True)
class Release:
    """One private release.  ``value is None`` means the mechanism refused (⊥)."""

    value: Any
    guarantee: Guarantee
    mechanism: str
    parameters: Mapping[str, Any]
    secure: bool = True

    @property
    def refused(self) -> bool:
        return self.value is None

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        return {
            "value": value,
            "refused": self.refused,
            "guarantee": self.guarantee.as_dict(),
            "mechanism": self.mechanism,
            "parameters": dict(self.parameters),
            "secure": self.secure,
        }

    def __repr__(self) -> str:
        value = "refused" if self.refused else f"{self.to_dict()['value']!r}"
        secure = "" if self.secure else ", secure=False (seeded simulation)"
        return (
            f"Release(value={value}, guarantee={self.guarantee.describe()}, "
            f"mechanism={self.mechanism!r}{secure})"
        )

    def _repr_html_(self) -> str:
        import html

        rows = [
            ("value", "refused" if self.refused else self.to_dict()["value"]),
            ("guarantee", self.guarantee.describe()),
            ("mechanism", self.mechanism),
            ("secure", "yes" if self.secure else "no: seeded simulation"),
        ]
        rows += [(f"parameter {k}", v) for k, v in dict(self.parameters).items()]
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
            f"<td>{html.escape(str(v))}</td></tr>"
            for k, v in rows
        )
        return f"<table><caption>instancedp Release</caption>{body}</table>"


class Mechanism(ABC):
    """Base class: public parameters in, ``Release`` out."""

    name: ClassVar[str] = ""

    @property
    @abstractmethod
    def guarantee(self) -> Guarantee: ...

    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """Public parameters only."""

    @abstractmethod
    def release(self, data: Any, rng: Any = None) -> Release: ...

    def _record(self, value: Any, source: RandomSource) -> Release:
        return Release(value, self.guarantee, self.name, self.parameters(), source.secure)


def add_noise(value: float, scale: float, noise: NoiseDistribution, source: RandomSource) -> float:
    """value + scale·Z, Z ~ noise.

    Secure sources take the exact path (``instancedp.noise.exact``: the
    correctly rounded float64 of the real-number sum, Mironov-safe).  The
    scale (a smooth sensitivity or a data-free constant) and the noise's own
    scale were computed in floating point, so the scale is first raised by 16 ulps to an
    upper bound on its real value: more noise never hurts the guarantee.
    Seeded simulation sources take the fast float path.
    """
    if source.secure:
        from ..noise.exact import add_noise as exact_add_noise
        from ..noise.exact import scale_upper_bound

        return float(exact_add_noise(value, scale_upper_bound(scale), noise, size=None, rng=source))
    return float(value + scale * noise.sample(None, source))


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
        )
