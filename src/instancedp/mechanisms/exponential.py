"""The exponential mechanism (McSherry & Talwar 2007), computed in log space.

P(output = r) ∝ exp(ε·u(x, r) / (2Δu)) for a score u with sensitivity Δu
(exp(ε·u/Δu) when the score is monotone in the data: every neighbour moves all
scores in the same direction).  ε-DP.  Weights are normalised by log-sum-exp
after subtracting the largest log-weight, so neither 10^6 candidates nor ε in
the hundreds under- or overflows (a known failure of naive implementations
that exponentiate first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .. import _validate
from ..errors import ParameterError
from ..privacy import PureDP
from ..random import RandomSource, sample_index_from_log_weights
from .base import Mechanism, OutputDistribution, atoms_law, repeat_draw


def exponential_log_probabilities(
    scores: Any, sensitivity: float, epsilon: float, monotone: bool = False
) -> np.ndarray:
    """log P(r) = ε·u_r/(c·Δu) − logsumexp, c = 1 if monotone else 2."""
    u = np.asarray(scores, dtype=np.float64)
    if u.ndim != 1 or u.size == 0:
        raise ParameterError("scores must be a non-empty 1-D array, one per candidate")
    if not np.all(np.isfinite(u)):
        raise ParameterError("scores must be finite numbers (no NaN/inf)")
    lw = epsilon * u / ((1.0 if monotone else 2.0) * sensitivity)
    return lw - logsumexp(lw)


class ExponentialMechanism(Mechanism):
    """Select a candidate with probability ∝ exp(ε·score/(2·sensitivity)).

    ``candidates``: the public output range (any sequence).  ``score(data,
    candidates)`` returns one finite score per candidate (vectorised; pass
    ``vectorized=False`` for a per-candidate ``score(data, candidate)``).
    ``sensitivity``: max over neighbours and candidates of the score change.
    """

    name = "exponential"

    def __init__(
        self,
        candidates: Sequence[Any],
        score: Callable[..., Any],
        sensitivity: float,
        epsilon: float,
        *,
        monotone: bool = False,
        vectorized: bool = True,
    ) -> None:
        try:
            n_cand = len(candidates)
        except TypeError:
            raise ParameterError(
                "candidates must be a sequence (the public output range)"
            ) from None
        if n_cand == 0:
            raise ParameterError("candidates must be non-empty")
        if not callable(score):
            raise ParameterError("score must be a callable score(data, candidates)")
        self.candidates = candidates
        self.score = score
        self.sensitivity = _validate.finite_positive(sensitivity, "sensitivity")
        self.epsilon = _validate.epsilon(epsilon)
        self.monotone = bool(monotone)
        self.vectorized = bool(vectorized)

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def mechanism_parameters(self) -> dict[str, Any]:
        return {
            "sensitivity": self.sensitivity,
            "n_candidates": len(self.candidates),
            "monotone": self.monotone,
        }

    def _scores(self, data: Any) -> np.ndarray:
        if self.vectorized:
            u = np.asarray(self.score(data, self.candidates), dtype=np.float64)
        else:
            u = np.array([float(self.score(data, c)) for c in self.candidates])
        if u.shape != (len(self.candidates),):
            raise ParameterError(
                f"score must return one value per candidate: expected shape "
                f"({len(self.candidates)},), got {u.shape}"
            )
        return u

    def log_probabilities(self, data: Any) -> np.ndarray:
        """Exact log output probabilities on this input (analysis only)."""
        return exponential_log_probabilities(
            self._scores(data), self.sensitivity, self.epsilon, self.monotone
        )

    def output_probabilities(self, data: Any) -> np.ndarray:
        """Exact output probabilities, aligned with ``candidates`` (analysis only)."""
        return np.exp(self.log_probabilities(data))

    def _state(self, data: Any) -> np.ndarray:
        return self.log_probabilities(data)

    def _draw(self, state: np.ndarray, source: RandomSource, size: int | None) -> Any:
        return repeat_draw(
            lambda: self.candidates[sample_index_from_log_weights(state, source)], size
        )

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Exact law: P(c) ∝ exp(ε·u(x, c)/(2Δu)) (ε·u/Δu when ``monotone``).

        Theorem (McSherry & Talwar 2007, Thm. 6): a score change of ≤ Δu moves
        each numerator by ≤ e^{ε/2} and the normaliser by ≤ e^{ε/2}."""
        return atoms_law(self.candidates, self.output_probabilities(data))
