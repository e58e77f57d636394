"""Closed-form bounds from the literature, each implemented once (Biswas et al. 2023, Table II, Chen
et al. 2024)."""
