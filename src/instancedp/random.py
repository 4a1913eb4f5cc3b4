"""The one place randomness comes from.

Releases draw from :class:`SecureRandom` (the operating system's CSPRNG,
``os.urandom``) unless the caller explicitly passes a simulation source made by
:func:`simulation`; a release made with a simulation source is marked
``secure=False``.  Raw ``numpy.random.Generator`` objects are refused by
:func:`resolve` so that a seeded generator can never slip into a release by
accident.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from .errors import ParameterError

_TWO_M53 = 2.0**-53


class RandomSource(ABC):
    """Common face: ``random_bytes``, ``uniform``, ``generator``, ``secure``."""

    secure: bool = False

    @abstractmethod
    def random_bytes(self, n: int) -> bytes:
        """n uniformly random bytes."""

    def uniform(self, size: int | tuple | None = None) -> np.ndarray | float:
        """Uniform draws strictly inside (0, 1): the odd multiples of 2^−53.

        52 random bits k give (2k + 1)·2^−53, exact in a double (2k + 1 < 2^53),
        so 1.0 can never come out (with 53 bits, (k + ½)·2^−53 rounds to 1.0
        for the largest k).
        """
        count = int(np.prod(size)) if size is not None else 1
        words = np.frombuffer(self.random_bytes(8 * count), dtype=np.uint64)
        odd = (words >> np.uint64(12)) * np.uint64(2) + np.uint64(1)
        u = odd.astype(np.float64) * _TWO_M53
        return float(u[0]) if size is None else u.reshape(size)

    def integers(self, high: int) -> int:
        """Uniform integer in [0, high) by rejection (no modulo bias)."""
        if high <= 0:
            raise ParameterError(f"high must be >= 1, got {high}")
        nbytes = (int(high - 1).bit_length() + 7) // 8 or 1
        limit = (256**nbytes // high) * high
        while True:
            v = int.from_bytes(self.random_bytes(nbytes), "little")
            if v < limit:
                return v % high

    @property
    @abstractmethod
    def generator(self) -> np.random.Generator:
        """A numpy Generator for the fast vectorised (simulation) path."""


class SecureRandom(RandomSource):
    """OS-entropy CSPRNG (``os.urandom``): the default for every release."""

    secure = True

    def random_bytes(self, n: int) -> bytes:
        return os.urandom(n)

    @property
    def generator(self) -> np.random.Generator:
        # Only for vectorised simulation helpers: seeded from OS entropy, but
        # PCG64 is not a CSPRNG, so the release path never uses it.
        return np.random.default_rng(int.from_bytes(os.urandom(32), "little"))

    def __repr__(self) -> str:
        return "SecureRandom()"


class SimulationRandom(RandomSource):
    """A seeded, reproducible source for simulations, tests and benchmarks.

    Not secure: releases made with it say so (``Release.secure is False``).
    """

    secure = False

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        if isinstance(seed, np.random.Generator):
            self._gen = seed
        else:
            self._gen = np.random.default_rng(seed)

    def random_bytes(self, n: int) -> bytes:
        return self._gen.bytes(n)

    @property
    def generator(self) -> np.random.Generator:
        return self._gen

    def __repr__(self) -> str:
        return "SimulationRandom(...)"


def simulation(seed: int | np.random.Generator | None = None) -> SimulationRandom:
    """The explicit, non-secure path for seeded simulations."""
    return SimulationRandom(seed)


def resolve(rng: Any = None) -> RandomSource:
    """The source a release uses: secure by default, simulation only if asked."""
    if rng is None:
        return SecureRandom()
    if isinstance(rng, RandomSource):
        return rng
    raise TypeError(
        "rng must be None (secure OS randomness) or instancedp.random.simulation(seed); "
        f"got {type(rng).__name__}. Seeded numpy generators are accepted only through "
        "instancedp.random.simulation(seed), which marks releases as not secure"
    )


def as_generator(rng: Any = None) -> np.random.Generator:
    """A numpy Generator for fast vectorised sampling (simulations, benchmarks).

    Accepts None, an int seed, a numpy Generator or a :class:`RandomSource`.
    """
    if isinstance(rng, RandomSource):
        return rng.generator
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def sample_index_from_log_weights(log_weights: np.ndarray, source: RandomSource) -> int:
    """Index i with probability exactly ∝ exp(log_weights[i]) (the exponential mechanism).

    Entries that are not finite (−inf, and also NaN/+inf) get weight zero and
    are never returned.  The draw is exact whatever the weight ratios (no weight
    is absorbed by rounding): see :func:`instancedp.noise.exact.sample_index`.
    """
    from .noise.exact import sample_index

    return sample_index(log_weights, source)
