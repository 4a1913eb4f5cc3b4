"""The release-path harness (instancedp.audit.harness), generated from the registry.

For every registered mechanism × statistic it serves × input family, the
public record of a release (everything but the value) must be identical on
adversarial neighbours (sizes 0, 1, 2; values at the bounds; all equal;
subnormal and ±1e300 magnitudes), and the value's law must pass the exact check
where the mechanism declares one.  Seeded; no statistical tests here.
"""

from __future__ import annotations

import pytest

from instancedp.audit.harness import coverage_gaps, harness_cases, run_case

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

#: Mechanisms whose exact law is a slow numerical quadrature: their exact
#: check runs in the audit catalogue (tests/test_audit_mechanisms.py) on a
#: small domain; here their public records are still checked on every pair.
SLOW_LAW = {"bounded_local_sensitivity"}

#: Known gaps, each a real finding of this harness, left to the owner of the
#: data policy (analyst mode: releases are total functions).  ``strict``:
#: when fixed, the xfail turns into a failure and the entry must go.
#: (The ratio of an empty table, refused by the mechanism, is covered by analyst
#: mode's public row: run_case counts such pairs as ``empty_refusals``.)
KNOWN_GAPS: dict[str, str] = {}

CASES = [
    pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_GAPS[c.name], strict=True))
    if c.name in KNOWN_GAPS
    else c
    for c in harness_cases()
]


def test_every_registered_mechanism_is_covered():
    # A mechanism with neither a harness case nor an exact law must carry a
    # reviewed exemption (Entry.exemption) — else this fails.
    assert coverage_gaps() == []


@pytest.mark.parametrize(
    "case", CASES, ids=[getattr(c, "name", None) or c.values[0].name for c in CASES]
)
def test_public_record_is_identical_on_neighbours(case):
    res = run_case(case, seed=1, exact_pairs=0 if case.key in SLOW_LAW else 4)
    assert not res.record_mismatches, res.record_mismatches[:3]
    assert res.released_pairs > 0  # the case releases something
    if res.exact is not None:
        assert res.exact["passed"] is not False, res.exact
