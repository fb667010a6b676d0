"""Where a run's noise comes from.

A DP release is only a release if its noise is secret: noise that a reader can regenerate from
logged values (a seed, a trial number) can be subtracted, and noise two runs share cancels when
their outputs are differenced. So:

``secret`` (default)
    Each run draws from a fresh :class:`numpy.random.SeedSequence` with no argument, i.e. 128
    bits from the operating system's entropy source. The entropy is never logged and never
    derived from anything logged; two runs (of one sweep or of two) share no noise.
``replayable`` (opt-in, for science)
    The generator is seeded from an HMAC of the run's content key under the local secret
    (:mod:`dp_arena.privacy.secret`), so re-running the same configuration reproduces the same
    noise on the same machine(s). Runs differing in anything (epsilon, mechanism, trial, ...)
    have different content keys and so independent noise. Anyone who holds the secret key can
    regenerate the noise: such outputs are **not DP releases to key holders**; their runs are
    tagged ``noise=replayable`` and the board labels them.

The dataset's own ``seed`` (simulation, public splits) is public and unaffected.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from dp_arena.errors import ConfigError

from .secret import keyed_digest

NoiseMode = Literal["secret", "replayable"]
NOISE_MODES: tuple[str, ...] = ("secret", "replayable")


def check_noise_mode(mode: str) -> None:
    if mode not in NOISE_MODES:
        raise ConfigError(f"privacy.noise must be one of {list(NOISE_MODES)} (got {mode!r})",
                          "use privacy.noise=secret (the default, a DP release) or "
                          "privacy.noise=replayable (reproducible, not private to key holders)")


def fresh_rng() -> np.random.Generator:
    """A generator seeded from 128 bits of fresh OS entropy (never logged)."""
    return np.random.default_rng(np.random.SeedSequence())


def replayable_rng(run_key: str, key: bytes | None = None) -> np.random.Generator:
    """A generator seeded from HMAC(secret, run key): the same run key gives the same noise
    to whoever holds the secret; different run keys give independent streams."""
    digest = keyed_digest(run_key.encode(), "noise-seed", key)
    return np.random.default_rng([int(digest[i:i + 8], 16) for i in range(0, 64, 8)])


def noise_rng(mode: NoiseMode, run_key: str) -> np.random.Generator:
    """The run's noise generator under ``privacy.noise=mode``."""
    check_noise_mode(mode)
    return fresh_rng() if mode == "secret" else replayable_rng(run_key)
