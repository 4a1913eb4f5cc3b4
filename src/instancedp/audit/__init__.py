"""Privacy verification: exact privacy profiles and a black-box auditor.

- :func:`privacy_profile`, :func:`max_privacy_loss`, :func:`check_mechanism`
  (module :mod:`.profile`): exact checks for mechanisms whose output law is known;
- :func:`empirical_audit` (module :mod:`.empirical`): a statistical lower bound
  on ε from samples, for any mechanism;
- :func:`in_distribution` (module :mod:`.in_distribution`): DP in distribution
  (Canard–Olivier, Def. 8);
- :func:`~.conformance.check_sampling` (module :mod:`.conformance`): does the
  release path (``mechanism.sample``) draw the declared law?
- :mod:`.catalogue`: the registry's examples as audit cases for ``instancedp audit``;
- :mod:`.harness`: the release-path harness over every registered mechanism ×
  statistic on adversarial neighbours.
"""

from __future__ import annotations

from .conformance import SamplingCheck, check_sampling
from .empirical import AuditResult, empirical_audit
from .in_distribution import in_distribution
from .profile import (
    MechanismCheck,
    PrivacyLoss,
    PrivacyProfile,
    check_distributions,
    check_mechanism,
    max_privacy_loss,
    neighbour_pairs_from_brute,
    privacy_profile,
    renyi_divergence,
)

__all__ = [
    "AuditResult",
    "MechanismCheck",
    "SamplingCheck",
    "PrivacyLoss",
    "PrivacyProfile",
    "check_distributions",
    "check_mechanism",
    "check_sampling",
    "empirical_audit",
    "in_distribution",
    "max_privacy_loss",
    "neighbour_pairs_from_brute",
    "privacy_profile",
    "renyi_divergence",
]
