"""The one table of mechanism names (instancedp.registry)."""

from __future__ import annotations

from pathlib import Path

import pytest

from instancedp import registry
from instancedp.audit import catalogue
from instancedp.audit.harness import coverage_gaps, harness_cases
from instancedp.errors import ParameterError
from instancedp.mechanisms import Mechanism

DOCS = Path(__file__).resolve().parents[1] / "docs" / "mechanisms.md"


def test_keys_are_the_record_names_and_exported():
    import instancedp.mechanisms as m

    for e in registry.entries():
        assert e.key == e.cls.name
        assert getattr(m, e.cls.__name__) is e.cls


def test_docs_list_every_key():
    text = DOCS.read_text(encoding="utf-8")
    assert registry.markdown_table() in text, "regenerate the table: registry.markdown_table()"
    for key in registry.keys():
        assert f"`{key}`" in text


def test_unknown_name_is_a_parameter_error():
    with pytest.raises(ParameterError, match="unknown mechanism") as err:
        registry.get("ptr")
    assert err.value.parameter == "mechanism"


class _ToyQuery:
    name = "toy"
    neighbours = "add_remove"

    def value(self, data):
        return float(len(data))

    def parameters(self):
        return {}


class ToyMechanism(Mechanism):
    """Releases the count plus nothing: a deliberately non-private toy."""

    name = "toy_mechanism"

    def __init__(self, query, epsilon, *, delta=None):
        self.query, self.epsilon, self.delta = query, float(epsilon), delta

    @property
    def guarantee(self):
        from instancedp.privacy import PureDP

        return PureDP(self.epsilon)

    def _state(self, data):
        return self.query.value(data)

    def _draw(self, state, source, size):
        return state if size is None else [state] * size


@pytest.fixture
def toy():
    def example(eps, delta):
        mech = ToyMechanism(_ToyQuery(), eps)
        return registry.Example(mech, [((1.0,), (1.0, 1.0))])

    entry = registry.register(
        registry.Entry("toy_mechanism", ToyMechanism, "a toy", ("count",), examples={"": example})
    )
    yield entry
    registry.unregister("toy_mechanism")


def test_toy_mechanism_appears_everywhere_without_other_edits(toy):
    # registered from this test only: no other module was touched
    assert "toy_mechanism" in registry.keys()
    assert "toy_mechanism" in catalogue.CATALOGUE
    assert "`toy_mechanism`" in registry.markdown_table()
    cases = [c for c in harness_cases() if c.key == "toy_mechanism"]
    assert cases and all(c.statistic == "count" for c in cases)
    rel = cases[0].mechanism.release([1.0])
    assert rel.parameters["neighbours"] == "add_remove" and rel.parameters["query"] == "count"


def test_toy_without_law_case_or_exemption_is_a_coverage_gap(toy):
    # The toy serves "count", so it has a harness case: covered.
    assert "toy_mechanism" not in coverage_gaps()
    bare = registry.Entry("toy_mechanism", ToyMechanism, "a toy with nothing")
    registry.register(bare, replace=True)
    assert coverage_gaps() == ["toy_mechanism"]
    registry.register(
        registry.Entry("toy_mechanism", ToyMechanism, "reviewed", exemption="a reason"),
        replace=True,
    )
    assert coverage_gaps() == []


def test_register_checks_the_name():
    with pytest.raises(ParameterError, match="one mechanism, one name"):
        registry.register(registry.Entry("other_name", ToyMechanism, "x"))


def test_one_name_per_mechanism_aliases_resolve_to_the_registered_key():
    """The recipes accept a mechanism by its registry key (the name in every record)
    or by its one short alias, and the release names the key either way."""
    from instancedp.recipes import build_mechanism

    for alias, key in registry.ALIASES.items():
        assert registry.get(key).cls.name == key
        opts = {"bounds": (0.0, 1.0)}
        if key in ("propose_test_release", "bounded_local_sensitivity"):
            opts["delta"] = 1e-6
        if key == "propose_test_release":
            opts["ptr_bound"] = 1.0
        for spelling in (alias, key, key.replace("_", "-")):
            m = build_mechanism("median", 1.0, mechanism=spelling, **opts)
            assert m.name == key, (spelling, m.name)
