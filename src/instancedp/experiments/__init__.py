"""Reproductions of the papers' figures and comparisons (functions returning tables)."""
