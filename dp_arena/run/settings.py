"""The typed schema of a run's config: one dataclass per config group, and the root.

- :class:`RunSettings`: the whole config of ``dp-arena`` (dp_arena/conf/config.yaml);
- :class:`PrivacySettings` (``privacy``: budget, accountant, noise source),
  :class:`TrackingSettings` (``tracking``: MLflow and the labelled private opt-ins),
  :class:`Limits` (``limits``: per-run time, memory, threads, isolation),
  :class:`ContestantSettings` (``contestant``: the sandbox external contestants run in),
  :class:`Tuning` (``tuning``: the tuning mode, :mod:`dp_arena.run.tuning`),
  :class:`CompetitionSettings` (``competition``: a named competition's facts).

Hydra checks every composed config against these (registered with its ConfigStore by
:mod:`dp_arena.run.config_store`): types converted or refused, unknown keys refused.
:func:`dp_arena.run.config.parse_run_config` checks a config dict with the same schema
(:func:`dp_arena.params.structured`) and then the ranges (each schema's ``check``), so a run
started from Python is refused the same way. ``dataset``, ``mechanism`` and ``metrics`` are
open mappings: their settings are checked by the dataset loader and by each mechanism's and
metric's own dataclass (their types, e.g. ``Literal``, are beyond OmegaConf).

A light module (no data or mechanism imports): the commands import it at start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import DEFAULT_ACCOUNTANT
from dp_arena.sandbox import ISOLATIONS

#: Tuning modes and stages (dp_arena/run/tuning.py).
MODES = ("none", "public", "oracle", "dp_select")
STAGES = ("search", "final")


@dataclass  # not frozen: Hydra merges config files and overrides into it
class Limits:
    """Per-run resource limits (``limits.*`` in the config)."""

    time_limit_s: float | None = None
    memory_limit_mb: float | None = None
    isolate: bool = True
    poll_s: float = 0.05
    threads: int | None = 1

    def check(self) -> None:
        """The ranges the schema's types cannot say (Hydra has checked the types)."""
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"limits.threads must be an integer >= 1 or null (got "
                              f"{self.threads!r})", "e.g. limits.threads=1")
        for key in ("time_limit_s", "memory_limit_mb", "poll_s"):
            value = getattr(self, key)
            if value is not None and value <= 0:
                raise ConfigError(f"limits.{key} must be a number > 0 or null (got {value!r})",
                                  f"e.g. limits.{key}=600, or limits.{key}=null for none")

    def describe(self) -> str:
        parts = [f"time {self.time_limit_s:g} s" if self.time_limit_s else "no time limit",
                 f"memory {self.memory_limit_mb:g} MB" if self.memory_limit_mb else
                 "no memory limit"]
        return ", ".join(parts)


@dataclass  # not frozen: Hydra merges config files and overrides into it
class ContestantSettings:
    """The ``contestant`` group: ``isolation`` of external contestants (``sandbox``: refused
    without one, :mod:`dp_arena.sandbox`; ``none``: knowingly unsandboxed, tagged on the run)."""

    isolation: str = "sandbox"

    def check(self) -> None:
        if self.isolation not in ISOLATIONS:
            raise ConfigError(f"contestant.isolation must be one of {list(ISOLATIONS)} (got "
                              f"{self.isolation!r})", "use contestant.isolation=sandbox")


@dataclass  # not frozen: Hydra merges config files and overrides into it
class Tuning:
    """The ``tuning`` config group."""

    mode: str = "none"
    stage: str = "final"
    allow_oracle: bool = False
    public_fraction: float = 0.5
    split_seed: int = 0
    space: dict[str, str] = field(default_factory=dict)
    select_share: float = 0.1
    objective: str | None = None
    final_trials: tuple[int, ...] = (0,)
    chosen: str = ""
    reason: str = ""

    def check(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"unknown tuning mode {self.mode!r}", f"use one of {list(MODES)}")
        if self.stage not in STAGES:
            raise ConfigError(f"tuning.stage must be one of {list(STAGES)} (got {self.stage!r})",
                              "leave tuning.stage alone: the tuning configs set it")
        if self.mode == "oracle" and not self.allow_oracle:
            raise ConfigError(
                "tuning.mode=oracle tunes on the private data: the result is not differentially "
                "private", "add tuning.allow_oracle=true to run it anyway (every resulting run "
                "and leaderboard row is marked non-private)")
        if not 0 <= self.public_fraction < 1:
            raise ConfigError(f"tuning.public_fraction must be in [0, 1) (got "
                              f"{self.public_fraction})", "e.g. tuning.public_fraction=0.5")
        if self.mode == "dp_select":
            if not 0 < self.select_share < 1:
                raise ConfigError(f"tuning.select_share must be in (0, 1) (got "
                                  f"{self.select_share})", "e.g. tuning.select_share=0.1")
            if not self.space:
                raise ConfigError("tuning.mode=dp_select needs candidate settings",
                                  "e.g. tuning.space={mechanism.k: 'choice(4,8,12)'} or "
                                  "tuning=dp_select_archetype")

    @property
    def tuned(self) -> bool:
        """False for an untuned run (``tuning.mode=none``)."""
        return self.mode != "none"

    @property
    def selects(self) -> bool:
        """True when the run chooses its setting privately (the dp_select wrapper)."""
        return self.mode == "dp_select"

    @property
    def searches(self) -> bool:
        """A search run of a tuning sweep (``public``/``oracle``): logged apart, its score is
        the search's objective, never a result."""
        return self.mode in ("public", "oracle") and self.stage == "search"

    @property
    def stage_label(self) -> str:
        """`` [public:search]`` for a tuned run's name ("" when untuned)."""
        return f" [{self.mode}:{self.stage}]" if self.tuned else ""

    def content(self) -> dict[str, Any]:
        """What of the tuning changes a run's computation (part of its content key)."""
        return {"mode": self.mode, "stage": self.stage, "view": self.view,
                "public_fraction": self.public_fraction, "split_seed": self.split_seed,
                "space": self.space if self.selects else {},
                "select_share": self.select_share if self.selects else None}

    @property
    def view(self) -> str:
        """Which data the run's mechanism sees and is scored against."""
        return "public" if self.mode == "public" and self.stage == "search" else "private"

    @property
    def is_private(self) -> bool:
        """False when the run's result depends on the private data outside the DP budget."""
        return self.mode != "oracle"

    @property
    def label(self) -> str:
        """Leaderboard label ('' for untuned runs)."""
        if self.mode == "none":
            return ""
        return "oracle (non-private)" if self.mode == "oracle" else self.mode


@dataclass
class PrivacySettings:
    """The ``privacy`` group (dp_arena/conf/privacy/): the budget, accountant, noise source and the
    sampler backend that draws the noise (:mod:`dp_arena.privacy.release`)."""

    epsilon: float = MISSING  # type: ignore[assignment]
    delta: float = 0.0
    accountant: str = DEFAULT_ACCOUNTANT
    noise: str = "secret"
    sampler: str = "numpy"
    allow_large_delta: bool = False


@dataclass
class TrackingSettings:
    """The ``tracking`` settings: where MLflow logs, and the labelled opt-ins for private
    outputs."""

    uri: str | None = None
    experiment: str | None = None
    log_private_synthetic: bool = False
    log_private_tables: bool = False
    log_heldout_scores: bool = False
    system_metrics: bool = False


@dataclass
class CompetitionSettings:
    """A named competition's facts (dp_arena/conf/competition/): its name, and the one source of its
    sweep: the mechanism options, epsilons and number of trials it runs (its
    ``hydra.sweeper.params`` read these, through ``${dp_arena_sweep:...}``)."""

    name: str = ""
    mechanisms: list[str] = field(default_factory=list)
    epsilons: list[float] = field(default_factory=list)
    trials: int = 1
    #: the dataset options a suite sweeps (competition=suite); empty: the one ``dataset``
    datasets: list[str] = field(default_factory=list)


@dataclass
class RunSettings:
    """The schema of dp-arena's config (dp_arena/conf/config.yaml), registered with Hydra's
    ConfigStore by :mod:`dp_arena.run.config_store`: Hydra checks every config file and override
    against it, and :func:`parse_run_config` checks a config dict with the same description.
    ``dataset``, ``mechanism`` and ``metrics`` are open mappings here: their settings are
    checked by the dataset loader and by the mechanism's and metrics' own dataclasses."""

    dataset: dict[str, Any] = MISSING  # type: ignore[assignment]
    privacy: PrivacySettings = field(default_factory=PrivacySettings)
    mechanism: dict[str, Any] = MISSING  # type: ignore[assignment]
    metrics: dict[str, Any] = field(default_factory=dict)
    trial: int = 0
    seed: int = 0
    resume: bool = True
    limits: Limits = field(default_factory=Limits)
    contestant: ContestantSettings = field(default_factory=ContestantSettings)
    plugins: list[str] = field(default_factory=list)
    tracking: TrackingSettings = field(default_factory=TrackingSettings)
    competition: CompetitionSettings | None = None
    tuning: Tuning = field(default_factory=Tuning)


