"""The typed config schemas: Hydra composes every shipped config file against them, and a
config dict built in Python is checked by the same description, with one clear message for a
bad value (the setting, the problem, the fix)."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas
from dp_arena.audit.settings import AuditRunSettings, AuditSettings
from dp_arena.data.datasets import PROJECT_ROOT
from dp_arena.errors import ConfigError
from dp_arena.params import structured
from dp_arena.run.config import parse_run_config
from dp_arena.run.settings import Limits, PrivacySettings, RunSettings, Tuning

CONF = PROJECT_ROOT / "dp_arena" / "conf"
#: Config groups chosen in the defaults lists, with every option shipped for them.
GROUPS = ("dataset", "privacy", "mechanism", "metrics", "competition", "tuning", "space")


def test_a_config_dict_becomes_typed_dataclasses():
    settings = structured(RunSettings, {
        "dataset": {"name": "titanic"}, "mechanism": {"name": "independent"},
        "privacy": {"epsilon": 2, "delta": "1e-6"}, "limits": {"threads": 3},
        "tuning": {"final_trials": [0, 1]}, "plugins": ["a.b"]})
    assert isinstance(settings, RunSettings)
    assert isinstance(settings.privacy, PrivacySettings) and isinstance(settings.limits, Limits)
    assert isinstance(settings.tuning, Tuning)
    assert settings.privacy.epsilon == 2.0 and isinstance(settings.privacy.epsilon, float)
    assert settings.privacy.delta == 1e-6  # a string of a number is converted
    assert settings.limits.threads == 3 and settings.limits.time_limit_s is None  # default kept
    assert list(settings.tuning.final_trials) == [0, 1] and settings.plugins == ["a.b"]


@pytest.mark.parametrize(("schema", "values", "where", "message", "fix"), [
    (PrivacySettings, {"epsiln": 1}, "privacy",
     "unknown setting privacy.epsiln (did you mean privacy.epsilon?)",
     "valid settings of privacy are accountant, allow_large_delta, delta, epsilon, noise"),
    (RunSettings, {"dataset": {}, "mechanism": {}, "sead": 1}, "",
     "unknown setting sead (did you mean seed?)",
     "valid settings are competition, contestant, dataset"),
    (Limits, {"threads": "many"}, "limits", "limits.threads must be an integer (got 'many')",
     "e.g. limits.threads=1"),  # the example is the schema's default
    (AuditSettings, {"confidence": "high"}, "audit",
     "audit.confidence must be a number (got 'high')", "e.g. audit.confidence=0.95"),
    (RunSettings, {"dataset": {}, "mechanism": {}, "plugins": "my.module"}, "",
     "plugins must be a list", "e.g. plugins=[a,b]"),
    (RunSettings, {"mechanism": {"name": "independent"}, "privacy": {"epsilon": 1}}, "",
     "dataset is required but not set", "add dataset=... to the command"),
])
def test_a_bad_value_is_one_message_with_the_setting_and_the_fix(schema, values, where, message,
                                                                   fix):
    with pytest.raises(ConfigError) as caught:
        structured(schema, values, where)
    text = str(caught.value)
    assert text.splitlines()[0] == message
    assert fix in text
    assert len(text.splitlines()) == 2 and "full_key" not in text  # not OmegaConf's report


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.mark.parametrize(("group", "option"),
                         [(g, o) for g in GROUPS for o in options(g)])
def test_every_shipped_option_composes_against_the_schema(group, option):
    overrides = [f"{group}={option}"]
    if group == "space":  # a space fills tuning.space for the mechanism it names
        overrides += [f"mechanism={option}", "tuning=dp_select"]
    if (group, option) == ("tuning", "dp_select"):  # it needs candidates (refused without)
        overrides += ["space=independent", "mechanism=independent"]
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    plain = OmegaConf.to_container(cfg, resolve=True)
    settings = structured(RunSettings, plain)  # the composed config fits the schema as a dict
    assert settings.privacy.epsilon > 0 and settings.mechanism.get("name")
    if group != "tuning" or option != "oracle":  # oracle needs an explicit opt-in (refused)
        parse_run_config(plain)


def test_the_audit_config_composes_with_its_group_typed():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("audit", overrides=["dataset=titanic", "audit.runs=300"])
    settings = structured(AuditRunSettings, OmegaConf.to_container(cfg, resolve=True))
    assert isinstance(settings.audit, AuditSettings) and settings.audit.runs == 300


def test_hydra_refuses_an_override_that_does_not_fit_the_schema():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for bad in ("privacy.epsiln=1", "privacy.epsilon=abc", "limits.threads=1.5"):
            with pytest.raises(Exception) as caught:  # noqa: PT011 - Hydra's own exception type
                compose("config", overrides=[bad])
            assert bad.split("=")[0].split(".")[-1] in str(caught.value)


def test_unknown_dataset_mechanism_and_metric_settings_name_the_closest_key():
    """The open groups (checked by their loader and dataclasses, not by the schema) say an
    unknown key the same way, as the path a user writes."""
    from dp_arena.data.datasets import load_dataset
    from dp_arena.mechanisms import make_mechanism
    from dp_arena.metrics import make_metric

    cases = [
        (lambda: load_dataset({"name": "taxi_sim", "n_privte": 5000}),
         "unknown setting dataset.n_privte (did you mean dataset.n_private?)",
         "valid settings of dataset are drift, n_heldout, n_private, n_public, scoring_year, "
         "seed, target, unit"),
        (lambda: make_mechanism("independent", {"max_contirb": 5}),
         "unknown setting mechanism.max_contirb (did you mean mechanism.max_contrib?) "
         "(mechanism 'independent' has no such setting)",
         "the settings of mechanism 'independent' are max_contrib, noise"),
        (lambda: make_metric("kmarginal", {"kk": 3, "zz": 1}),
         "unknown settings metrics.kmarginal.kk (did you mean metrics.kmarginal.k?), "
         "metrics.kmarginal.zz", "valid settings of metrics.kmarginal are k, max_marginals, seed"),
    ]
    for build, message, fix in cases:
        with pytest.raises(ConfigError) as caught:
            build()
        assert str(caught.value).splitlines()[0] == message
        assert caught.value.fix == fix


def test_planning_reuses_a_composed_config_across_trials_and_seeds(monkeypatch):
    """Jobs that differ only in trial / seed are composed once; the reused configs equal
    the fully composed ones (label, settings, everything)."""
    from dp_arena.sweep import plan

    overrides = ["hydra.sweeper.params.mechanism='independent,mst_quick'",
                 "+hydra.sweeper.params.seed='0,7'", "hydra.sweeper.params.trial='0,2'"]
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
        jobs = plan.expand_jobs(cfg)
        full = [plan.compose_job(cfg, job) for job in jobs]
        calls: list[list[str]] = []
        compose_job = plan.compose_job
        monkeypatch.setattr(plan, "compose_job", lambda c, o: calls.append(o) or compose_job(c, o))
        cache: dict = {}
        reused = [plan.compose_or_reuse(cfg, job, cache) for job in jobs]
    assert len(jobs) == 16 and len(calls) == 4  # 2 mechanisms x 2 epsilons
    assert reused == full
    assert {(rc.trial, rc.seed) for rc in reused} == {(t, s) for t in (0, 2) for s in (0, 7)}
