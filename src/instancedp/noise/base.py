"""The face every noise family shares (modelled on scipy.stats).

All families are symmetric about 0 with a positive ``scale``.  Methods are
vectorised over numpy arrays.  ``sample`` is the fast float path for
simulations and benchmarks; releases go through ``instancedp.noise.exact``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from ..random import as_generator


class NoiseDistribution(ABC):
    """A symmetric zero-centred distribution with ``logpdf, pdf, cdf, sf, ppf,
    isf, sample, var, std`` and ``kinks`` (points where the density is not smooth)."""

    family: ClassVar[str] = ""
    scale: float

    @abstractmethod
    def logpdf(self, x: Any) -> np.ndarray: ...

    def pdf(self, x: Any) -> np.ndarray:
        return np.exp(self.logpdf(x))

    @abstractmethod
    def cdf(self, x: Any) -> np.ndarray: ...

    def sf(self, x: Any) -> np.ndarray:
        """P(Z > x) = cdf(−x) by symmetry (accurate in the upper tail)."""
        return self.cdf(-np.asarray(x, dtype=np.float64))

    @abstractmethod
    def ppf(self, q: Any) -> np.ndarray: ...

    def isf(self, q: Any) -> np.ndarray:
        return -self.ppf(q)

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        """Fast float draws by inversion (override where numpy has a direct sampler)."""
        gen = as_generator(rng)
        u = gen.random(size)
        # Map u in [0, 1) to the open interval to keep ppf finite.
        u = np.where(u == 0.0, 0.5 * np.finfo(float).tiny, u)
        out = self.ppf(u)
        return float(out) if size is None else out

    @abstractmethod
    def var(self) -> float: ...

    def std(self) -> float:
        v = self.var()
        return math.sqrt(v) if math.isfinite(v) else math.inf

    @property
    def kinks(self) -> tuple[float, ...]:
        """Points where the density is not smooth (default: the centre)."""
        return (0.0,)

    @abstractmethod
    def parameters(self) -> dict[str, float]:
        """Public shape and scale parameters (for printing and Release records)."""

    @abstractmethod
    def with_scale(self, scale: float) -> NoiseDistribution:
        """The same family and shape with another scale."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v:g}" for k, v in self.parameters().items())
        return f"{type(self).__name__}({args})"
