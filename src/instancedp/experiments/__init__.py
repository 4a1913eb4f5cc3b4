"""Reproductions of the papers' figures and comparisons.

One module per study, each a set of plain functions returning tables (lists of
dicts) that ``benchmarks/`` scripts write to ``docs/results/``.  Nothing here
imports from ``tests/``.
"""
