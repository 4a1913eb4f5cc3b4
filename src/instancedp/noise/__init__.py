"""Noise families with a scipy.stats-like face, and their privacy calibrations."""
