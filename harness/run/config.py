"""A run's configuration: the resolved Hydra config of one job, checked and pulled apart.

- :class:`RunConfig`: what a run needs (mechanism and settings, budget, accountant, trial,
  dataset config, metrics, tracking, limits, tuning, noise mode);
- :func:`parse_run_config`: the checks that need no data (types, ranges, unknown keys at the
  top level and in ``privacy``/``tracking``/``limits``), raising one :class:`ConfigError`;
- :func:`build_components`: the mechanism and metric objects (unknown names or settings are
  refused by their dataclasses), after importing ``plugins``.

The sweep checks every job with these before any job starts (:mod:`harness.run.preflight`);
the runner checks again in the worker, so a single run is refused the same way.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from mechanisms import Mechanism, make_mechanism
from metrics import Metric, make_metric

from harness.errors import ConfigError
from harness.privacy.accounting import DEFAULT_ACCOUNTANT, Budget, check_accountant
from harness.privacy.noise import NoiseMode, check_noise_mode
from harness.run.isolation import Limits
from harness.run.tuning import Tuning, candidates, parse_space

#: Keys a run config may have at the top level (``sweep`` and ``parent_runs`` are set by the
#: sweep, not by users).
TOP_LEVEL_KEYS = frozenset({"dataset", "mechanism", "privacy", "metrics", "trial", "seed",
                            "resume", "limits", "plugins", "tracking", "competition", "tuning",
                            "space", "sweep", "parent_runs", "mechanism_preset"})
PRIVACY_KEYS = frozenset({"epsilon", "delta", "accountant", "noise", "allow_large_delta"})
TRACKING_KEYS = frozenset({"uri", "experiment", "log_private_synthetic", "log_private_tables",
                           "system_metrics"})


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
    """Check a resolved config dict and pull out what a run needs (raises ConfigError)."""
    for key in ("dataset", "mechanism", "privacy"):
        if not isinstance(cfg.get(key), dict):
            raise ConfigError(f"config has no '{key}' group", f"add {key}=... to the command")
    check_known_keys(cfg, TOP_LEVEL_KEYS, "")
    check_known_keys(cfg["privacy"], PRIVACY_KEYS, "privacy.")
    check_known_keys(cfg.get("tracking") or {}, TRACKING_KEYS, "tracking.")
    mech = dict(cfg["mechanism"])
    name = mech.pop("name", None)
    if not name:
        raise ConfigError("mechanism config has no 'name'", "use mechanism=NAME")
    privacy = cfg["privacy"]
    try:
        epsilon = float(privacy.get("epsilon"))
        delta = float(privacy.get("delta", 0.0))
    except (TypeError, ValueError):
        raise ConfigError(f"privacy.epsilon/delta must be numbers (got {privacy.get('epsilon')!r},"
                          f" {privacy.get('delta')!r})", "e.g. privacy.epsilon=1") from None
    budget = Budget(epsilon, delta)
    accountant = privacy.get("accountant", DEFAULT_ACCOUNTANT)
    check_accountant(accountant)
    noise = privacy.get("noise") or "secret"
    check_noise_mode(noise)
    metrics_cfg = {k: dict(v or {}) for k, v in (cfg.get("metrics") or {}).items() if v is not False}
    if not metrics_cfg:
        raise ConfigError("no metrics configured", "use metrics=default")
    tracking = cfg.get("tracking") or {}
    trial, seed = cfg.get("trial", 0), cfg.get("seed", 0)
    if not isinstance(trial, int) or not isinstance(seed, int) or trial < 0 or seed < 0:
        raise ConfigError(f"trial and seed must be non-negative integers (got {trial!r}, {seed!r})",
                          "e.g. trial=0 seed=0")
    plugins = cfg.get("plugins") or ()
    if isinstance(plugins, str):
        plugins = (plugins,)
    competition = cfg.get("competition") or {}
    experiment = tracking.get("experiment") or ""
    return RunConfig(name, mech, budget, accountant, trial, seed, dict(cfg["dataset"]),
                     metrics_cfg, experiment, tracking.get("uri"),
                     bool(tracking.get("log_private_synthetic", False)),
                     str(cfg.get("sweep", "")), cfg,
                     limits=Limits.from_config(cfg.get("limits")),
                     tuning=Tuning.from_config(cfg.get("tuning")),
                     resume=bool(cfg.get("resume", True)), plugins=tuple(plugins),
                     competition=str(competition.get("name", "") if isinstance(competition, dict)
                                     else competition or ""),
                     noise=noise,
                     log_private_tables=bool(tracking.get("log_private_tables", False)),
                     allow_large_delta=bool(privacy.get("allow_large_delta", False)),
                     parent_runs=dict(cfg.get("parent_runs") or {}),
                     preset=str(cfg.get("mechanism_preset") or ""),
                     system_metrics=bool(tracking.get("system_metrics", False)))


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


def check_known_keys(group: dict[str, Any], known: frozenset[str], prefix: str) -> None:
    """Refuse keys a run would silently ignore (a typo added with ``+``), naming the closest
    known key."""
    unknown = sorted(set(group) - known)
    if not unknown:
        return
    hints = [f"{prefix}{k} (did you mean {prefix}{close[0]}?)" if (close := difflib.get_close_matches(
        k, sorted(known), n=1)) else f"{prefix}{k}" for k in unknown]
    raise ConfigError(f"unknown setting(s): {', '.join(hints)}",
                      f"valid settings{' of ' + prefix.rstrip('.') if prefix else ''} are "
                      f"{', '.join(sorted(known - {'sweep', 'parent_runs', 'mechanism_preset'}))}")
