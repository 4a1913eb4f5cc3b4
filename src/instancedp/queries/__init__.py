"""Queries and their sensitivities (global, local at distance k, smooth)."""
