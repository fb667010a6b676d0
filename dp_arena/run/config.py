"""A run's configuration, in one shape: the typed settings Hydra composed, and what a sweep adds.

- :func:`settings_of`: the one conversion of a config to :class:`RunSettings`: Hydra's
  composed config (typed by the schema) through ``OmegaConf.to_object``, a config dict built
  in Python through the same schema (:func:`dp_arena.params.structured`); types and unknown keys
  are refused there, with one :class:`ConfigError`;
- :class:`RunConfig`: those settings (checked: :func:`check_settings`, the ranges the types
  cannot say) and what the sweep adds to a job (its folder, its parent runs, the preset the
  mechanism option names); everything else is read from the settings (its properties);
- :func:`experiment_for`: the MLflow experiment a run logs to;
- :func:`build_components`: the mechanism and metric objects (unknown names or settings are
  refused by their dataclasses), after importing ``plugins``; under ``tuning.mode=dp_select``
  the mechanism is wrapped by the selector (:class:`dp_arena.run.dp_select.DPSelect`);
- :func:`label_settings`: what a run's label says about its settings (those that differ from
  the mechanism option, or a selector's grid); with the preset and the accountant it makes
  the run's one label (:func:`dp_arena.report.record.setting_label`, :attr:`RunConfig.setting`)
  and name (:attr:`RunConfig.label`, as :class:`dp_arena.report.record.RunRecord` names it);
- :func:`tuning_of`: a config's ``tuning`` group as the typed :class:`Tuning` (what a sweep
  asks of a config before converting it whole: is it a search?).

The sweep checks every job with these before any job starts (:mod:`dp_arena.sweep.plan`); the
runner checks again in the worker, so a single run is refused the same way.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from operator import attrgetter
from typing import Any

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError
from dp_arena.params import config_problem, refuse_unknown_keys, structured
from dp_arena.privacy.accounting import Budget, check_accountant
from dp_arena.privacy.noise import check_noise_mode
from dp_arena.privacy.release import accountant_for, check_sampler
from dp_arena.report.record import run_name, setting_label
from dp_arena.run.settings import RunSettings, Tuning
from dp_arena.run.tuning import parse_space, space_label
from dp_arena.mechanisms import Mechanism, make_mechanism
from dp_arena.mechanisms.options import changed_settings
from dp_arena.metrics import Metric, make_metric

#: Keys a config dict may carry beside the settings (what a sweep adds to a job).
RUNTIME_KEYS = ("sweep", "parent_runs", "mechanism_preset")
#: The groups a config dict must have.
REQUIRED_GROUPS = ("dataset", "mechanism", "privacy")


def settings_of(cfg: Any) -> RunSettings:
    """``cfg`` as :class:`RunSettings`: a composed Hydra config typed by the schema
    (``OmegaConf.to_object``), a mapping checked against the schema, or settings as they
    are. Raises one :class:`ConfigError` (the setting, the problem, the fix)."""
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(cfg, RunSettings):
        return cfg
    if isinstance(cfg, DictConfig):
        if isinstance(OmegaConf.get_type(cfg), type) and \
                issubclass(OmegaConf.get_type(cfg), RunSettings):  # type: ignore[arg-type]
            refuse_added_keys(cfg, RunSettings)
            try:
                return OmegaConf.to_object(cfg)  # type: ignore[return-value]
            except OmegaConfBaseException as exc:
                raise config_problem(exc) from None
        cfg = OmegaConf.to_container(cfg, resolve=True)
    for key in REQUIRED_GROUPS:
        if not isinstance(cfg.get(key), Mapping):
            raise ConfigError(f"config has no '{key}' group", f"add {key}=... to the command")
    return structured(RunSettings, {k: v for k, v in cfg.items() if k not in RUNTIME_KEYS})


def refuse_added_keys(cfg: Any, schema: type, where: str = "") -> None:
    """One :class:`ConfigError` for a key of the composed ``cfg`` that its dataclass
    ``schema`` (or a nested dataclass of it) does not have: Hydra lets ``+key=value`` add
    keys to a typed config, and ``OmegaConf.to_object`` drops them silently. Open mappings
    (``dataset``, ``mechanism``, ``metrics``) are checked by their own loaders."""
    fields = {f.name: f for f in dataclasses.fields(schema)}
    refuse_unknown_keys(dict.fromkeys(k for k in cfg if where or k not in RUNTIME_KEYS),
                        fields, where)
    hints = typing.get_type_hints(schema)
    for name in fields:
        nested = next((t for t in (hints.get(name), *typing.get_args(hints.get(name)))
                       if isinstance(t, type) and dataclasses.is_dataclass(t)), None)
        value = cfg.get(name)
        if nested is not None and hasattr(value, "keys"):
            refuse_added_keys(value, nested, f"{where}.{name}" if where else name)


def check_settings(settings: RunSettings) -> None:
    """The checks the schema's types cannot make (ranges, names, combinations): one
    :class:`ConfigError` for the first problem."""
    if not settings.mechanism.get("name"):
        raise ConfigError("mechanism config has no 'name'", "use mechanism=NAME")
    privacy = settings.privacy
    Budget(privacy.epsilon, privacy.delta)
    check_accountant(privacy.accountant)
    check_noise_mode(privacy.noise)
    check_sampler(privacy.sampler)
    if privacy.sampler == "opendp" and privacy.noise == "replayable":
        raise ConfigError("privacy.sampler=opendp draws from the operating system's entropy and "
                          "cannot replay noise (privacy.noise=replayable)",
                          "drop privacy.noise=replayable, or use privacy.sampler=numpy")
    if not enabled_metrics(settings):
        raise ConfigError("no metrics configured", "use metrics=default")
    if settings.trial < 0 or settings.seed < 0:
        raise ConfigError(f"trial and seed must be non-negative integers (got {settings.trial!r}"
                          f", {settings.seed!r})", "e.g. trial=0 seed=0")
    settings.limits.check()
    settings.contestant.check()
    settings.tuning.check()


def enabled_metrics(settings: RunSettings) -> dict[str, dict[str, Any]]:
    """Metric name -> its settings, for every metric not switched off (``metrics.X=false``)."""
    return {k: dict(v or {}) for k, v in settings.metrics.items() if v is not False}


def setting(path: str) -> property:
    """A read-only view of ``settings.<path>`` (``privacy.noise``) on a :class:`RunConfig`."""
    return property(lambda rc: attrgetter(path)(rc.settings), doc=f"``{path}``")


@dataclass(frozen=True)
class RunConfig:
    """One run's configuration: the checked :class:`RunSettings` and what a sweep adds.
    Build it with :func:`parse_run_config`; read the settings through the properties."""

    settings: RunSettings
    #: the sweep's folder ("" outside a sweep)
    sweep: str = ""
    #: the sweep's parent run per experiment (runs are its children)
    parent_runs: Mapping[str, str] = field(default_factory=dict)
    #: the preset the mechanism option names (``aim_quick`` -> ``quick``); labels show it
    preset: str = ""

    @property
    def mechanism(self) -> str:
        return str(self.settings.mechanism["name"])

    @property
    def mechanism_params(self) -> dict[str, Any]:
        return {k: v for k, v in self.settings.mechanism.items() if k != "name"}

    @cached_property
    def budget(self) -> Budget:
        return Budget(self.settings.privacy.epsilon, self.settings.privacy.delta)

    @property
    def accountant(self) -> str:
        """The accountant the run composes with (the ``opendp`` sampler's is zCDP)."""
        privacy = self.settings.privacy
        return accountant_for(privacy.sampler, privacy.accountant)  # type: ignore[arg-type]

    trial = setting("trial")
    seed = setting("seed")
    noise = setting("privacy.noise")
    sampler = setting("privacy.sampler")
    allow_large_delta = setting("privacy.allow_large_delta")
    limits = setting("limits")
    isolation = setting("contestant.isolation")
    tuning = setting("tuning")
    resume = setting("resume")
    tracking_uri = setting("tracking.uri")
    log_private_synthetic = setting("tracking.log_private_synthetic")
    log_private_tables = setting("tracking.log_private_tables")
    log_heldout_scores = setting("tracking.log_heldout_scores")
    system_metrics = setting("tracking.system_metrics")

    @property
    def dataset(self) -> dict[str, Any]:
        return dict(self.settings.dataset)

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        return enabled_metrics(self.settings)

    @property
    def plugins(self) -> tuple[str, ...]:
        return tuple(self.settings.plugins)

    @property
    def competition(self) -> str:
        return self.settings.competition.name if self.settings.competition else ""

    @property
    def experiment(self) -> str:
        """``tracking.experiment`` ("": ``dp-arena/<competition or dataset>``, see
        :func:`experiment_for`)."""
        return self.settings.tracking.experiment or ""

    @property
    def setting(self) -> str:
        """The run's setting label (:func:`dp_arena.report.record.setting_label`): the tag
        ``hyperparameters``, the board's and the n/a rows' column."""
        return setting_label(label_settings(self), label_preset(self.preset, self.accountant),
                             self.accountant)

    @property
    def label(self) -> str:
        """The run's name (:func:`dp_arena.report.record.run_name`), unique within a sweep."""
        return run_name(self.mechanism, self.setting, self.settings.privacy.epsilon,
                        self.trial, self.tuning.stage_label)

    def replaced(self, **changes: Any) -> RunConfig:
        """This config with root settings replaced (``trial=2``,
        ``privacy=replace(rc.settings.privacy, delta=1e-9)``), checked again."""
        settings = replace(self.settings, **changes)
        check_settings(settings)
        return replace(self, settings=settings)

    def as_dict(self) -> dict[str, Any]:
        """The settings as plain containers, with what the sweep added (the run's params)."""
        from omegaconf import OmegaConf

        out: dict[str, Any] = OmegaConf.to_container(  # type: ignore[assignment]
            OmegaConf.structured(self.settings), resolve=True)
        if self.sweep:
            out["sweep"] = self.sweep
        if self.parent_runs:
            out["parent_runs"] = dict(self.parent_runs)
        if self.preset:
            out["mechanism_preset"] = self.preset
        return out


def parse_run_config(cfg: Any, *, sweep: str | None = None,
                     parent_runs: Mapping[str, str] | None = None,
                     preset: str | None = None, check: bool = True) -> RunConfig:
    """A run's config from Hydra's composed config, a config dict or :class:`RunSettings`
    (:func:`settings_of`), checked (:func:`check_settings`; ``check=False`` leaves that to
    the caller, as a sweep's plan does for each job). A config dict may carry what a sweep
    adds (:data:`RUNTIME_KEYS`); the keyword arguments take precedence."""
    settings = settings_of(cfg)
    if check:
        check_settings(settings)
    given = cfg if isinstance(cfg, Mapping) else {}
    return RunConfig(settings,
                     sweep=str(sweep if sweep is not None else given.get("sweep") or ""),
                     parent_runs=dict(parent_runs if parent_runs is not None
                                      else given.get("parent_runs") or {}),
                     preset=str(preset if preset is not None
                                else given.get("mechanism_preset") or ""))


def experiment_for(rc: RunConfig, data: Dataset) -> str:
    """``tracking.experiment``, else ``dp-arena/<competition or dataset>``; tuning search
    runs go to ``<that>/tuning`` so they never mix with scored runs."""
    base = rc.experiment or f"dp-arena/{rc.competition or data.name}"
    return f"{base}/tuning" if rc.tuning.searches else base


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
    """Instantiate the mechanism and metrics (unknown names/settings -> ConfigError); under
    ``tuning.mode=dp_select`` the mechanism is the selector wrapping it (every candidate
    setting built, so a bad one is refused now)."""
    from dp_arena.run.dp_select import DPSelect

    load_plugins(rc.plugins)
    mechanism = DPSelect.around(rc.mechanism, rc.mechanism_params, rc.tuning) \
        if rc.tuning.selects else make_mechanism(rc.mechanism, rc.mechanism_params)
    metrics = {name: make_metric(name, settings) for name, settings in rc.metrics.items()}
    if hasattr(mechanism, "isolation"):  # an external contestant: the run's sandbox policy
        mechanism.isolation = rc.isolation  # type: ignore[attr-defined]
    return mechanism, metrics


def label_settings(rc: RunConfig) -> str:
    """What the label says about a run's settings: under ``tuning.mode=dp_select`` the grid
    the selector chooses from (``select k∈{2,4}``), else the settings that differ from the
    mechanism option (:func:`dp_arena.mechanisms.options.changed_settings`); "-" for none."""
    if rc.tuning.selects:
        return space_label(parse_space(rc.tuning.space))
    return changed_settings(rc.mechanism, rc.mechanism_params,
                            label_preset(rc.preset, rc.accountant))


def run_label(mechanism: str, params: dict[str, Any], preset: str, accountant: str | None,
              epsilon: float, trial: int, tuning: str = "") -> str:
    """An untuned (or searched) run's name from its parts, as :attr:`RunConfig.label` names
    it: ``aim accountant=zcdp,[quick],rounds=8 eps=1 trial=2``."""
    shown = label_preset(preset, accountant)
    return run_name(mechanism, setting_label(changed_settings(mechanism, params, shown), shown,
                                             accountant), epsilon, trial, tuning)


def tuning_of(cfg: Any) -> Tuning:
    """The ``tuning`` group of ``cfg`` (Hydra's composed config, a config dict, a
    :class:`RunConfig` or :class:`RunSettings`) as the typed :class:`Tuning`; the defaults
    when the config has none. Raises one :class:`ConfigError` for a group the schema refuses."""
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(cfg, RunConfig):
        return cfg.tuning
    if isinstance(cfg, RunSettings):
        return cfg.tuning
    node = cfg.get("tuning") if hasattr(cfg, "get") else None
    if node is None:
        return Tuning()
    if isinstance(node, DictConfig):
        if OmegaConf.get_type(node) is Tuning:
            try:
                return OmegaConf.to_object(node)  # type: ignore[return-value]
            except OmegaConfBaseException as exc:
                raise config_problem(exc) from None
        node = OmegaConf.to_container(node, resolve=True)
    return structured(Tuning, dict(node), "tuning")


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
