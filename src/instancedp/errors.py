"""One hierarchy of errors, so callers catch by cause and the CLI maps each to a message.

``InstanceDPError`` is the root.  Its children say *whose* problem it is:

- :class:`ParameterError` — a public parameter is out of range or unknown;
  ``parameter`` names it (the library's own keyword name; the CLI maps it to a
  flag in one table), ``allowed`` states the admissible range when there is one.
- :class:`SchemaError` — the input's public shape is wrong (missing column,
  a file with no header, a column whose declared type is not numeric).
- :class:`DataError` — a problem in the protected rows themselves.  In analyst
  mode the library never raises it for data-dependent reasons: a release is a
  total function with a public policy for empty, missing or out-of-range rows.
- :class:`CompositionError` — a guarantee the budget cannot compose honestly.
- :class:`BudgetExceeded` — the release does not fit what is left.
- :class:`LedgerError` — the ledger cannot be used (damaged, foreign, locked…).

Every class also derives from ``ValueError`` (except ``BudgetExceeded``), so
code written against the earlier ``ValueError`` contract keeps working.  A bare
``ValueError`` escaping from numpy or another dependency is an internal error,
not "bad input".
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "did_you_mean",
    "BudgetExceeded",
    "CompositionError",
    "DataError",
    "InstanceDPError",
    "LedgerError",
    "ParameterError",
    "SchemaError",
]


class InstanceDPError(Exception):
    """Root of the errors instancedp raises on purpose."""


class ParameterError(InstanceDPError, ValueError):
    """A public parameter is wrong.  ``parameter`` names it; ``allowed`` gives its range."""

    def __init__(self, message: str, parameter: str | None = None, allowed: str | None = None):
        super().__init__(message)
        self.parameter = parameter
        self.allowed = allowed


class SchemaError(InstanceDPError, ValueError):
    """The input's public shape (columns, declared types, format) does not fit the request."""


class DataError(InstanceDPError, ValueError):
    """Bad input data: the message names the problem and the fix (owner mode only)."""


class CompositionError(InstanceDPError, ValueError):
    """A release whose guarantee cannot be composed honestly into this budget."""


class LedgerError(InstanceDPError, ValueError):
    """The ledger cannot be used: damaged, foreign, newer, locked, read-only, full."""


class BudgetExceeded(InstanceDPError):
    """The release would exceed the budget.  ``remaining`` says what is left."""

    def __init__(self, message: str, remaining: Any = None, requested: Any = None) -> None:
        super().__init__(message)
        self.remaining = remaining
        self.requested = requested


def did_you_mean(word: str, names: Any) -> str:
    """``"; did you mean 'x'?"`` from the public ``names``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(str(word), [str(n) for n in names], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
