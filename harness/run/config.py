"""A run's configuration: the resolved Hydra config of one job, checked and pulled apart.

- :class:`RunConfig`: what a run needs (mechanism and settings, budget, accountant, trial,
  dataset config, metrics, tracking, limits, tuning, noise mode);
- :func:`parse_run_config`: the checks that need no data (types and unknown keys by the
  typed schema :class:`~harness.run.settings.RunSettings`, which Hydra also checks every
  composed config against; then the ranges), raising one :class:`ConfigError`;
- :func:`build_components`: the mechanism and metric objects (unknown names or settings are
  refused by their dataclasses), after importing ``plugins``.

The sweep checks every job with these before any job starts (:mod:`harness.run.preflight`);
the runner checks again in the worker, so a single run is refused the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from harness.errors import ConfigError
from harness.params import structured
from harness.privacy.accounting import DEFAULT_ACCOUNTANT, Budget, check_accountant
from harness.privacy.noise import NoiseMode, check_noise_mode
from harness.privacy.release import accountant_for, check_sampler
from harness.run.settings import Limits, RunSettings, Tuning
from harness.run.tuning import candidates, parse_space
from mechanisms import Mechanism, make_mechanism
from metrics import Metric, make_metric

#: Keys the harness adds to a job's config (not user settings): the sweep's folder, its
#: parent runs, and the mechanism preset the config option named.
RUNTIME_KEYS = ("sweep", "parent_runs", "mechanism_preset")


@dataclass(frozen=True)
class RunConfig:
    """The validated content of one run's config."""

    mechanism: str
    mechanism_params: dict[str, Any]
    budget: Budget
    accountant: str
    trial: int
    seed: int
    dataset: dict[str, Any]
    metrics: dict[str, dict[str, Any]]
    experiment: str  # "" = dp-arena/<dataset name>, known once the dataset is loaded
    tracking_uri: str | None
    log_private_synthetic: bool
    sweep: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    limits: Limits = field(default_factory=Limits)
    tuning: Tuning = field(default_factory=Tuning)
    resume: bool = True
    plugins: tuple[str, ...] = ()
    competition: str = ""
    noise: NoiseMode = "secret"
    #: the noise backend (``numpy`` or ``opendp``, :mod:`harness.privacy.release`)
    sampler: str = "numpy"
    log_private_tables: bool = False
    allow_large_delta: bool = False
    #: The sweep's parent run per experiment (set by the sweep; runs are its children).
    parent_runs: dict[str, str] = field(default_factory=dict)
    #: The config option chosen when it is a preset of the mechanism (``aim_quick`` ->
    #: ``quick``); labels show it as ``[quick]``.
    preset: str = ""
    #: MLflow system metrics (CPU, memory, disk, network) sampled during the run (opt-in).
    system_metrics: bool = False




def parse_run_config(cfg: dict[str, Any]) -> RunConfig:
    """Check a resolved config dict against :class:`RunSettings` (types, unknown keys) and the
    ranges, and pull out what a run needs (raises one ConfigError)."""
    for key in ("dataset", "mechanism", "privacy"):
        if not isinstance(cfg.get(key), dict):
            raise ConfigError(f"config has no '{key}' group", f"add {key}=... to the command")
    settings = structured(RunSettings, {k: v for k, v in cfg.items() if k not in RUNTIME_KEYS})
    mech = dict(settings.mechanism)
    name = mech.pop("name", None)
    if not name:
        raise ConfigError("mechanism config has no 'name'", "use mechanism=NAME")
    privacy = settings.privacy
    budget = Budget(privacy.epsilon, privacy.delta)
    check_accountant(privacy.accountant)
    check_noise_mode(privacy.noise)
    check_sampler(privacy.sampler)
    if privacy.sampler == "opendp" and privacy.noise == "replayable":
        raise ConfigError("privacy.sampler=opendp draws from the operating system's entropy and "
                          "cannot replay noise (privacy.noise=replayable)",
                          "drop privacy.noise=replayable, or use privacy.sampler=numpy")
    metrics_cfg = {k: dict(v or {}) for k, v in settings.metrics.items() if v is not False}
    if not metrics_cfg:
        raise ConfigError("no metrics configured", "use metrics=default")
    if settings.trial < 0 or settings.seed < 0:
        raise ConfigError(f"trial and seed must be non-negative integers (got {settings.trial!r}"
                          f", {settings.seed!r})", "e.g. trial=0 seed=0")
    settings.limits.check()
    tuning = replace(settings.tuning, final_trials=tuple(settings.tuning.final_trials))
    tuning.check()
    tracking = settings.tracking
    accountant = accountant_for(privacy.sampler, privacy.accountant)  # type: ignore[arg-type]
    return RunConfig(name, mech, budget, accountant, settings.trial, settings.seed,
                     dict(settings.dataset), metrics_cfg, tracking.experiment or "",
                     tracking.uri, tracking.log_private_synthetic,
                     str(cfg.get("sweep", "")), cfg,
                     limits=settings.limits, tuning=tuning, resume=settings.resume,
                     plugins=tuple(settings.plugins),
                     competition=settings.competition.name if settings.competition else "",
                     noise=privacy.noise,  # type: ignore[arg-type]
                     sampler=privacy.sampler,
                     log_private_tables=tracking.log_private_tables,
                     allow_large_delta=privacy.allow_large_delta,
                     parent_runs=dict(cfg.get("parent_runs") or {}),
                     preset=str(cfg.get("mechanism_preset") or ""),
                     system_metrics=tracking.system_metrics)


def load_plugins(modules: tuple[str, ...]) -> None:
    """Import the modules named in ``plugins`` (they register extra mechanisms or metrics;
    importing happens in every worker process, since the config travels with the job)."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"plugins: cannot import {module!r} ({exc})",
                              "check the module name and that it is on the Python path") from None


def build_components(rc: RunConfig) -> tuple[Mechanism, dict[str, Metric]]:
    """Instantiate the mechanism and metrics (unknown names/settings -> ConfigError)."""
    load_plugins(rc.plugins)
    mechanism = make_mechanism(rc.mechanism, rc.mechanism_params)
    if rc.tuning.mode == "dp_select":
        for setting in candidates(parse_space(rc.tuning.space)):
            make_mechanism(rc.mechanism, {**rc.mechanism_params, **setting})
    metrics = {name: make_metric(name, settings) for name, settings in rc.metrics.items()}
    return mechanism, metrics




def run_label(mechanism: str, params: dict[str, Any], preset: str, accountant: str | None,
              epsilon: Any, trial: Any, tuning: str = "") -> str:
    """A run's readable, unique name: mechanism, the settings that differ from its shipped
    config (abbreviated), the accountant when not the default, epsilon, trial and the tuning
    stage, e.g. ``aim[quick](rounds=8) zcdp eps=1 trial=2``."""
    from mechanisms import hyperparameter_label

    preset = label_preset(preset, accountant)
    lead = f"[{preset}]" if preset else ""
    rest = hyperparameter_label(mechanism, params, preset).removeprefix(lead).lstrip(",")
    settings = lead + (f"({rest})" if rest and rest != "-" else "")
    acc = f" {accountant}" if accountant and accountant != DEFAULT_ACCOUNTANT else ""
    eps = f"{epsilon:g}" if isinstance(epsilon, (int, float)) else str(epsilon)
    return f"{mechanism}{settings}{acc} eps={eps} trial={trial}{tuning}"


def label_preset(preset: str, accountant: str | None) -> str:
    """The preset as labels show it: none when it only names the accountant
    (``adaptive_grid_zcdp`` is adaptive_grid under zcdp, which the accountant already says)."""
    return "" if preset == accountant else preset


def preset_of(option: str | None, mechanism: str | None) -> str:
    """The preset a ``mechanism=OPTION`` choice names: ``aim_quick`` -> ``quick``; "" for the
    mechanism's own config."""
    if not option or not mechanism or option == mechanism:
        return ""
    return option.removeprefix(f"{mechanism}_")
