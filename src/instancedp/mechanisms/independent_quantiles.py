"""m independent single-quantile exponential mechanisms at ε/m each, sorted.

What diffprivlib, OpenDP and Tumult release for several quantiles; here for
comparison.  Basic composition of m pure ε/m-DP releases is ε-DP under the
relation each one holds for (Dwork & Roth 2014, Thm. 3.16); sorting is
post-processing.
"""

from __future__ import annotations

import numpy as np

from ..random import RandomSource
from .quantiles import QuantilesMechanism, single_quantile


class IndependentQuantiles(QuantilesMechanism):
    """ε-DP: m exponential-mechanism quantiles (Smith 2011) at ε/m each, sorted."""

    name = "independent_quantiles"

    def _draw(self, state: np.ndarray, source: RandomSource) -> np.ndarray:
        q = self.query
        share = self.epsilon / q.m
        out = [single_quantile(state, level, q.lower, q.upper, share, source) for level in q.qs]
        return np.sort(np.array(out, dtype=np.float64))
