"""A releaser whose noise is reproducible, for tests that compare two runs with one seed."""

from __future__ import annotations

import numpy as np

from dp_arena.privacy.accounting import Ledger
from dp_arena.privacy.release import NumpySampler, Releaser


def seeded(ledger: Ledger, seed: int) -> Releaser:
    """``ledger`` with numpy noise from ``default_rng([seed, 1])`` (a stream apart from the
    post-processing ``default_rng(seed)`` the tests pass beside it)."""
    return Releaser(ledger, NumpySampler(np.random.default_rng([seed, 1])))
