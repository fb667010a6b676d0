"""What a run computes, described once, and every key derived from that description.

- :func:`mechanism_content`: what the mechanism's output depends on: the mechanism and its
  settings, the budget, the accountant, the noise sampler and the dataset config;
- :func:`run_content`: that, plus what the run adds: seed, trial, noise mode, metrics and the
  tuning (:meth:`dp_arena.run.settings.Tuning.content`), and ``contestant.isolation`` when it
  is not the default;
- :func:`run_key`: the resume key (the ``run_key`` tag; the leaderboard counts each once): the
  run content, the keyed data fingerprint and the source fingerprint of the code, hashed;
- :func:`job_key`: two jobs of one sweep with the same key are one computation (run once):
  the run content and where it is logged (experiment, competition, tracking URI); the data
  fingerprint and code are the same within a sweep;
- :func:`content_hash`: the hash the keys use (an audit's cache key is
  :func:`mechanism_content` plus the audit's own settings, :mod:`dp_arena.audit.driver`).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from dp_arena.run.config import RunConfig


def mechanism_content(rc: RunConfig) -> dict[str, Any]:
    """What the mechanism's output depends on (see the module docstring)."""
    return {"mechanism": rc.mechanism, "params": rc.mechanism_params,
            "epsilon": rc.budget.epsilon, "delta": rc.budget.delta, "accountant": rc.accountant,
            "dataset": rc.dataset, "sampler": rc.sampler}


def run_content(rc: RunConfig) -> dict[str, Any]:
    """What a run computes: :func:`mechanism_content` and what the run adds."""
    content = {**mechanism_content(rc), "seed": rc.seed, "trial": rc.trial,
               "metrics": rc.metrics, "noise": rc.noise, "tuning": rc.tuning.content()}
    if rc.isolation != "sandbox":  # an unsandboxed contestant's run is another run
        content["isolation"] = rc.isolation
    return content


def content_hash(content: dict[str, Any], digits: int = 20) -> str:
    """SHA-256 of ``content`` as canonical JSON, ``digits`` hex digits (public config only)."""
    text = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:digits]


def run_key(rc: RunConfig, fingerprint: str, code: str) -> str:
    """The resume key: same key = same computation on the same data with the same code."""
    return content_hash({**run_content(rc), "fingerprint": fingerprint, "code": code})


def job_key(rc: RunConfig) -> str:
    """A job's identity within a sweep (identical jobs run once)."""
    return content_hash({**run_content(rc), "experiment": rc.experiment,
                         "competition": rc.competition, "uri": rc.tracking_uri}, 64)
