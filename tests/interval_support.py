"""Shared checks of the interval tests: neighbouring releases' records."""


def assert_same_but_moving(ra: dict, rb: dict, moving: set[str]) -> None:
    """Two release records (``to_dict``) equal except for the value and the interval's
    fields and parameters named in ``moving`` (ends, released scales)."""
    ca, cb = dict(ra.pop("ci")), dict(rb.pop("ci"))
    ra.pop("value"), rb.pop("value")
    assert ra == rb
    pa, pb = ca.pop("parameters"), cb.pop("parameters")
    assert {k: v for k, v in ca.items() if k not in moving} == {
        k: v for k, v in cb.items() if k not in moving}
    assert {k: v for k, v in pa.items() if k not in moving} == {
        k: v for k, v in pb.items() if k not in moving}


def structure(obj):
    """A record's shape: its keys and the type name of every leaf."""
    if isinstance(obj, dict):
        return {k: structure(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [structure(v) for v in obj]
    return type(obj).__name__
