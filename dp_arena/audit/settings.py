"""The typed schema of an audit's config (``dp-arena-audit``, dp_arena/conf/audit.yaml).

- :class:`AuditSettings`: the ``audit`` group (runs per world, confidence, what the test reads
  (``view``), the neighbouring pair (``neighbours``), canary, statistic, parallel batches,
  cache);
- :class:`AuditRunSettings`: the whole config: :class:`dp_arena.run.settings.RunSettings` plus
  ``audit``, registered with Hydra's ConfigStore by :mod:`dp_arena.audit.config_store`.

A light module: the command imports it at start (the canary and statistic names are checked
by their modules, imported when :meth:`AuditSettings.check` runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dp_arena.errors import ConfigError
from dp_arena.params import structured
from dp_arena.run.settings import RunSettings

#: Fewer runs per world than this cannot give a meaningful bound.
MIN_RUNS = 10
VIEWS: tuple[str, ...] = ("synthetic", "releases")


@dataclass  # not frozen: Hydra merges config files and overrides into it
class AuditSettings:
    """The ``audit`` config group."""

    runs: int = 20000
    confidence: float = 0.95
    #: ``synthetic`` (the synthetic table, black box) or ``releases`` (the noisy releases,
    #: exact likelihood ratio: :mod:`dp_arena.audit.releases`)
    view: str = "synthetic"
    #: ``canary`` (real data + a constructed person) or ``worst_case``
    #: (:mod:`dp_arena.audit.neighbours`)
    neighbours: str = "canary"
    #: ``worst_case`` only: persons in D, and whether the extra person ``differs`` from them on
    #: every attribute or is one more copy of them (``same``)
    worst_case_persons: int = 10
    worst_case_extra: str = "differs"
    canary: str = "rare_cell"
    statistic: str = "canary_cells"
    jobs: int = 2
    batch_seconds: float = 20.0
    cache_dir: str = "audits/cache"
    #: keep the cached runs after the audit (a re-run resumes). Off by default: averaged
    #: over many runs, a canary audit's cached statistics estimate the private data's exact
    #: counts; without it the cache is deleted when the audit ends, fails or is stopped
    keep_cache: bool = False

    @classmethod
    def from_config(cls, cfg: dict[str, Any] | None) -> AuditSettings:
        out = structured(cls, cfg, "audit")
        out.check()
        return out

    def check(self) -> None:
        """The ranges the schema's types cannot say (the types are checked by the schema)."""
        if self.runs < MIN_RUNS:
            raise ConfigError(f"audit.runs must be an integer >= {MIN_RUNS} (got {self.runs!r})",
                              "use audit.runs=20000 (the default) for power; fewer runs give "
                              "a weaker lower bound")
        if not 0.5 <= self.confidence < 1:
            raise ConfigError(f"audit.confidence must be in [0.5, 1) (got {self.confidence!r})",
                              "e.g. audit.confidence=0.95")
        if self.jobs < 1:
            raise ConfigError(f"audit.jobs must be an integer >= 1 (got {self.jobs!r})",
                              "e.g. audit.jobs=2")
        if self.batch_seconds <= 0:
            raise ConfigError(f"audit.batch_seconds must be a number > 0 "
                              f"(got {self.batch_seconds!r})", "e.g. audit.batch_seconds=20")
        if self.view not in VIEWS:
            raise ConfigError(f"audit.view must be one of {list(VIEWS)} (got {self.view!r})",
                              "use audit.view=synthetic (what a reader of the synthetic data "
                              "sees) or audit.view=releases (the mechanism's noisy releases)")
        from .canary import check_strategy
        from .neighbours import check_neighbours
        from .statistic import check_statistic

        check_strategy(self.canary)
        check_neighbours(self.neighbours, self.worst_case_persons, self.worst_case_extra)
        check_statistic(self.statistic)


@dataclass
class AuditRunSettings(RunSettings):
    """The schema of dp-arena-audit's config (dp_arena/conf/audit.yaml): dp-arena's groups plus
    ``audit`` (registered with Hydra's ConfigStore by :mod:`dp_arena.audit.config_store`)."""

    audit: AuditSettings = field(default_factory=AuditSettings)
