"""Shared by the adversarial certification suites (tests/test_certified_edges.py,
tests/test_adversarial_krr.py, tests/test_adversarial_clones.py): the case-count scaling of the
deep hypothesis profile and the delta targets aimed at the edges."""

from hypothesis import settings

TARGETS = [1e-1, 1e-2, 1e-3, 1e-6, 1e-9, 1e-12, 1e-17, 1e-20, 1e-25, 1e-30]
"""delta targets from plain to far below the FFT's error floor."""


def examples(n):
    """``n`` cases in the default profile; under ``--hypothesis-profile=deep`` (max_examples
    5000, tests/conftest.py) 50 times as many."""
    return n * max(1, settings.default.max_examples // 100)
