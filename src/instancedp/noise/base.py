"""The face every noise family shares (modelled on scipy.stats), and the family registry.

All families are symmetric about 0 with a positive ``scale``.  Methods are
vectorised over numpy arrays.  ``sample`` is the fast float path for
simulations and benchmarks; releases go through ``instancedp.noise.exact``.

A family class owns all of its mathematics through a few hooks (class
attributes and classmethods), which the generic code asks and never restates:

* **Smooth-sensitivity calibration** (used by ``noise.calibrate`` and the
  smooth mechanism): ``shape_name``, ``validate_shape``,
  ``smooth_unit_scale`` (scale of the unit-SS noise at (ε, γ[, δ], shape)),
  ``smooth_noise`` (the instance), ``smooth_log_std``,
  ``smooth_shape_interval``, ``smooth_max_gamma``, ``smooth_guarantee``,
  ``requires_delta`` and the default-γ constants ``default_gamma_fraction`` /
  ``default_gamma_ceiling``.  A class whose ``smooth_unit_scale`` is not
  overridden has no smooth calibration (e.g. the Gaussian).
* **Exact sampling** (used by ``noise.exact.add_noise``): ``exact_route``
  ("cdf" or "product"), ``exact_params`` and, for the CDF route,
  ``exact_sf`` (the unit survival function in ball arithmetic) and
  ``exact_ppf_guess`` (a float first guess); for the product route
  ``exact_abs_factor``.

The registry (:func:`register_family`, :func:`unregister_family`,
:func:`family_class`, :data:`FAMILIES`) maps each family name to its class;
adding a family is one module with one class and one ``register_family`` line.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import ParameterError
from ..random import as_generator


class NoiseDistribution(ABC):
    """A symmetric zero-centred distribution with ``logpdf, pdf, cdf, sf, ppf,
    isf, sample, var, std`` and ``kinks`` (points where the density is not smooth)."""

    family: ClassVar[str] = ""
    scale: float

    # ---- smooth-sensitivity calibration hooks (see the module docstring) ----
    #: name of the one free shape parameter (None: no free shape)
    shape_name: ClassVar[str | None] = None
    #: other spellings accepted for the shape keyword
    shape_aliases: ClassVar[dict[str, str]] = {}
    #: the calibration gives (ε, δ)-DP and needs a δ
    requires_delta: ClassVar[bool] = False
    #: default γ = fraction·min(ε, γ_max), raised for order statistics at most to ceiling·cap
    default_gamma_fraction: ClassVar[float] = math.nan
    default_gamma_ceiling: ClassVar[float] = math.nan

    @classmethod
    def has_smooth_calibration(cls) -> bool:
        return cls.smooth_unit_scale.__func__ is not NoiseDistribution.smooth_unit_scale.__func__

    @classmethod
    def validate_shape(cls, value: Any) -> float:
        """The shape parameter as a float, or a ParameterError/ValueError naming it."""
        from .. import _validate

        return _validate.finite_positive(value, cls.shape_name or "shape")

    @classmethod
    def smooth_unit_scale(
        cls, epsilon: float, gamma: float, delta: float | None, shape: float | None
    ) -> float:
        """Scale of the unit-SS noise at (ε, γ[, δ], shape); inf where not admissible."""
        raise NotImplementedError(f"{cls.__name__} has no smooth-sensitivity calibration")

    @classmethod
    def smooth_noise(
        cls, epsilon: float, gamma: float, delta: float | None, shape: float | None, scale: float
    ) -> NoiseDistribution:
        """The unit-SS noise instance (``scale`` from :meth:`smooth_unit_scale`)."""
        return cls(shape, scale) if cls.shape_name else cls(scale)  # type: ignore[call-arg]

    @classmethod
    def smooth_log_std(cls, scale: float, shape: float | None) -> float:
        """log std of the unit noise of ``scale`` at ``shape`` (inf where infinite)."""
        v = cls.smooth_noise(math.nan, math.nan, None, shape, scale).var()
        return 0.5 * math.log(v) if math.isfinite(v) and v > 0 else math.inf

    @classmethod
    def smooth_shape_interval(
        cls, epsilon: float, gamma: float, delta: float | None, finite_std: bool
    ) -> tuple[float, float]:
        """Open interval of admissible shapes (only those of finite std if asked)."""
        raise NotImplementedError(f"{cls.__name__} has no free shape")

    @classmethod
    def smooth_shape_closed_below(cls, epsilon: float, gamma: float, low: float) -> bool:
        """Is the lower end of the shape interval itself admissible?"""
        return False

    @classmethod
    def smooth_max_gamma(
        cls, epsilon: float, delta: float | None, shape: float | None, finite_std: bool
    ) -> float:
        """Supremum of the admissible γ (with finite std if ``finite_std``)."""
        raise NotImplementedError(f"{cls.__name__} has no smooth-sensitivity calibration")

    @classmethod
    def smooth_guarantee(cls, epsilon: float, delta: float | None) -> Any:
        """The guarantee of q(x) + SS_γ(x)·Z (pure ε-DP unless overridden)."""
        from ..privacy import PureDP

        return PureDP(epsilon)

    # ---- exact-sampling hooks (see ``noise.exact``) ----
    #: "cdf": invert the unit CDF in ball arithmetic; "product": Z = ±|X|·e^{σY}
    exact_route: ClassVar[str | None] = None

    def exact_params(self) -> tuple[float, ...]:
        """The unit-law shape parameters the exact hooks take."""
        return ()

    @classmethod
    def exact_sf(cls, t: Any, params: tuple[float, ...]) -> Any:
        """P(Z > t) for the unit law, Z at scale 1, t > 0 an ``arb`` ball (CDF route)."""
        raise NotImplementedError

    @classmethod
    def exact_ppf_guess(cls, params: tuple[float, ...], p: float, c: float) -> float:
        """Float guess of |F⁻¹(½ + c)| for the unit law (p = ½ − |c|); only a start."""
        raise NotImplementedError

    @classmethod
    def exact_abs_factor(cls, v_lower: Any, v_upper: Any) -> tuple[Any, Any]:
        """Product route: enclosure of |X| from the enclosure [v_lower, v_upper] of a uniform."""
        raise NotImplementedError

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

    def mean_abs(self) -> float:
        """E|Z| = 2∫₀^∞ P(Z > z) dz (symmetric about 0), by quadrature: the expected
        absolute error a release with this noise adds (inf when the tail integral
        diverges)."""
        from scipy import integrate

        scale = max(float(self.isf(0.25)), 1e-12)
        body, _ = integrate.quad(lambda z: float(self.sf(z)), 0, scale, limit=200)
        tail, _ = integrate.quad(lambda z: float(self.sf(z)), scale, np.inf, limit=400)
        return 2 * (body + tail)

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


# ---------------------------------------------------------------- registry
_REGISTRY: dict[str, type[NoiseDistribution]] = {}


def register_family(cls: type[NoiseDistribution]) -> type[NoiseDistribution]:
    """Add a family class under ``cls.family`` (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, NoiseDistribution)) or not cls.family:
        raise TypeError("register_family takes a NoiseDistribution subclass with a family name")
    if cls.family in _REGISTRY and _REGISTRY[cls.family] is not cls:
        raise ParameterError(f"a noise family named {cls.family!r} is already registered")
    _REGISTRY[cls.family] = cls
    return cls


def unregister_family(name: str) -> None:
    """Remove a family (for tests and plug-ins); unknown names are ignored."""
    _REGISTRY.pop(name, None)


def family_class(name: str) -> type[NoiseDistribution]:
    """The registered class of family ``name`` (KeyError when unknown)."""
    return _REGISTRY[name]


def registered_families() -> tuple[type[NoiseDistribution], ...]:
    """Every registered family class, in registration order."""
    return tuple(_REGISTRY.values())


class RegistryView(Sequence):
    """A live, read-only tuple-like view of the registry: ``item(cls)`` for every
    registered class with ``select(cls)``, in registration order."""

    def __init__(self, select: Any, item: Any) -> None:
        self._select, self._item = select, item

    def _items(self) -> tuple[Any, ...]:
        return tuple(self._item(c) for c in _REGISTRY.values() if self._select(c))

    def __getitem__(self, i: Any) -> Any:
        return self._items()[i]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())

    def __contains__(self, x: object) -> bool:
        return x in self._items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return self._items() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._items())

    def __repr__(self) -> str:
        return repr(self._items())


#: names of the registered families with a smooth-sensitivity calibration
FAMILIES: Sequence[str] = RegistryView(lambda c: c.has_smooth_calibration(), lambda c: c.family)
