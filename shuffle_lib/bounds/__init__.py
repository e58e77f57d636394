"""Closed-form bounds from the literature, each implemented once (seed 002 Table II, seed 003)."""
