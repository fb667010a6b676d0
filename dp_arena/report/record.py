"""A run's record: who ran what, on which data, under which guarantee, as MLflow tags and back.

One frozen :class:`RunRecord` per run, built once in the run's process
(:func:`dp_arena.run.record.build_record`, from the run's config, mechanism and dataset) and
read back from a stored run's tags (:meth:`RunRecord.from_tags`: the board's rows,
:func:`dp_arena.report.leaderboard.run_row`). Everything that names a run comes from it:

- :func:`setting_label`: THE label of a run's setting (the ``hyperparameters`` tag, the board's
  column, the n/a rows' column and the middle of the run's name): the accountant when not the
  default, the preset the mechanism option names, the settings that differ from that option,
  ``-`` for none (``accountant=zcdp,[quick],rounds=8``);
- :func:`run_name`: the run's readable name, the label between the mechanism and the budget
  (``aim accountant=zcdp,[quick],rounds=8 eps=1 trial=2``);
- :meth:`RunRecord.to_tags` / :meth:`RunRecord.from_tags`: the tag contract, in this file only
  (tag names and value formats as runs have always been tagged; a tag an older run lacks reads
  as its default, :data:`TAG_FIELDS`), so ``from_tags(to_tags(r)) == r``;
- :meth:`RunRecord.board_fields`: the board's columns of the run (the values as strings, as
  :func:`~dp_arena.report.leaderboard.build_leaderboard` groups them);
- :meth:`RunRecord.not_applicable`: the fields of the n/a row of a job that did not run
  (:class:`~dp_arena.report.leaderboard.NotApplicableRow`).

A record holds public facts only: the configuration, the keyed data fingerprint (an HMAC, see
:mod:`dp_arena.privacy.secret`), the schema's digest and provenance, the code's fingerprint; no
count or value of the private data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dp_arena.privacy.accounting import DEFAULT_ACCOUNTANT

#: Tags of the run's schema provenance (:func:`dp_arena.data.conform.schema_tags`).
SCHEMA_TAGS = ("schema_source", "epsilon_reported", "schema_note")
#: Prefix of a contestant's declared claim tags (:meth:`dp_arena.mechanisms.contestants.claims.Claim.tags`).
CLAIM_PREFIX = "claim."
METRIC_KEY_TAG = "metric_key/"
METRIC_SETTINGS_TAG = "metric_settings/"
NOISE_NOTE = ("replayable noise derived from the local secret key: not a DP release to anyone "
              "who holds the key")
#: Tag of a sample reference row: the share of the private rows it holds, as
#: :class:`dp_arena.mechanisms.reference.Subsample` writes it (a lower floor: the name is
#: repeated there, and a test holds the two equal); the board's "as good as a k% sample".
SAMPLE_FRACTION_TAG = "sample_fraction"
#: Longest tag value MLflow keeps (longer values are cut, as the runner always did).
TAG_LIMIT = 5000


def setting_label(settings: str, preset: str = "", accountant: str | None = None) -> str:
    """The one label of a run's setting: ``accountant=<name>`` when not the default
    accountant, ``[<preset>]`` when the mechanism option names a preset, then ``settings``
    (what differs from that option, or a selector's grid), joined by commas; ``-`` when all
    three are empty (``settings`` ``-`` counts as empty)."""
    parts = (f"accountant={accountant}" if accountant and accountant != DEFAULT_ACCOUNTANT else "",
             f"[{preset}]" if preset else "", "" if settings == "-" else settings)
    return ",".join(p for p in parts if p) or "-"


def number_text(value: float) -> str:
    """``epsilon``/``delta`` as tagged: ``%g`` (``1``, ``1e-09``), or the exact ``repr`` when
    ``%g`` would round the number (so a tag reads back as the number it was)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def run_name(mechanism: str, label: str, epsilon: float, trial: int, stage: str = "") -> str:
    """A run's readable, unique name: the mechanism, its :func:`setting_label` (left out when
    ``-``), epsilon, trial and the tuning stage (``mst [quick] eps=1 trial=2``,
    ``aim accountant=zcdp eps=1 trial=0 [public:search]``)."""
    middle = "" if label == "-" else f" {label}"
    return f"{mechanism}{middle} eps={number_text(epsilon)} trial={trial}{stage}"


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None  # type: ignore[arg-type]
    except ValueError:
        return None


def _flag(value: bool) -> str:
    return "true" if value else "false"


@dataclass(frozen=True)
class RunRecord:
    """One run's identity and provenance (module docstring). Build it with
    :func:`dp_arena.run.record.build_record`; read a stored run with :meth:`from_tags`."""

    mechanism: str
    #: the setting's label (:func:`setting_label`)
    hyperparameters: str = "-"
    epsilon: float = math.nan
    delta: float | None = None
    trial: int = 0
    accountant: str = ""
    privacy_unit: str = ""
    dataset: str = ""
    dataset_id: str = ""
    #: false for a non-private reference or an oracle-tuned run
    private: bool = True
    reference: str = ""
    accounting: str = "ledger"
    tuning: str = ""
    tuning_mode: str = ""
    tuning_stage: str = ""
    data_view: str = ""
    tuning_chosen: str = ""
    tuning_reason: str = ""
    non_private_note: str = ""
    sweep: str = ""
    competition: str = ""
    limits: str = ""
    noise: str = "secret"
    sampler: str = "numpy"
    private_tables: bool = False
    large_delta: bool = False
    data_fingerprint: str = ""
    code_version: str = ""
    code_hash: str = ""
    run_key: str = ""
    metrics_key: str = ""
    #: (metric family, key) and (metric family, settings text), sorted by family
    metric_keys: tuple[tuple[str, str], ...] = ()
    metric_settings: tuple[tuple[str, str], ...] = ()
    schema_digest: str = ""
    schema_quality: str = ""
    #: the schema's provenance tags (:data:`SCHEMA_TAGS`) and a contestant's claim tags
    schema: tuple[tuple[str, str], ...] = ()
    claim: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        """The run's name (:func:`run_name`)."""
        return run_name(self.mechanism, self.hyperparameters, self.epsilon, self.trial,
                        self.stage)

    @property
    def stage(self) -> str:
        """The tuning stage as the run's name shows it (`` [public:search]``; "" untuned)."""
        return stage_of(self.tuning_mode, self.tuning_stage)

    @property
    def schema_source(self) -> str:
        return dict(self.schema).get("schema_source", "")

    # ----- the tag contract ---------------------------------------------------------------
    def to_tags(self) -> dict[str, str]:
        """The run's MLflow tags (names and formats as runs have always been tagged; the
        optional ones only when they say something)."""
        tags = {
            "mechanism": self.mechanism, "hyperparameters": self.hyperparameters,
            "epsilon": number_text(self.epsilon),
            "delta": number_text(self.delta) if self.delta is not None else "",
            "trial": str(self.trial), "accountant": self.accountant,
            "privacy_unit": self.privacy_unit, "dataset": self.dataset,
            "data_fingerprint": self.data_fingerprint, "code_version": self.code_version,
            "code_hash": self.code_hash, "run_key": self.run_key,
            "private": _flag(self.private), "reference": self.reference, "sweep": self.sweep,
            "tuning": self.tuning, "tuning_mode": self.tuning_mode,
            "tuning_stage": self.tuning_stage, "data_view": self.data_view,
            "competition": self.competition, "limits": self.limits,
            "dataset_id": self.dataset_id, "schema_digest": self.schema_digest,
            "metrics_key": self.metrics_key,
            **{METRIC_KEY_TAG + name: key for name, key in self.metric_keys},
            **{METRIC_SETTINGS_TAG + name: text for name, text in self.metric_settings},
            "noise": self.noise, "sampler": self.sampler,
            "private_tables": _flag(self.private_tables), "accounting": self.accounting,
        }
        if self.noise == "replayable":
            tags["noise_note"] = NOISE_NOTE
        if self.large_delta:
            tags["large_delta"] = "true"
        optional = {"tuning_chosen": self.tuning_chosen, "tuning_reason": self.tuning_reason,
                    "non_private_note": self.non_private_note,
                    **dict(self.claim), **dict(self.schema),
                    "schema_quality": self.schema_quality}
        tags.update({k: v[:TAG_LIMIT] for k, v in optional.items() if v})
        return tags

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> RunRecord:
        """The record of a stored run from its tags; a tag the run lacks (an older run) reads
        as the default the board has always given it (:data:`TAG_FIELDS`)."""
        text = {name: str(tags.get(tag, default)) for name, tag, default in TAG_FIELDS}
        epsilon = _float(tags.get("epsilon"))
        return cls(
            **{k: v for k, v in text.items() if k not in FLAG_FIELDS},
            **{k: text[k] == "true" for k in FLAG_FIELDS},
            epsilon=math.nan if epsilon is None else epsilon,
            delta=_float(tags.get("delta")), trial=int(tags.get("trial", 0) or 0),
            metric_keys=_prefixed(tags, METRIC_KEY_TAG),
            metric_settings=_prefixed(tags, METRIC_SETTINGS_TAG),
            schema=tuple((k, str(tags[k])) for k in SCHEMA_TAGS if tags.get(k)),
            claim=tuple(sorted((k, str(v)) for k, v in tags.items()
                               if k.startswith(CLAIM_PREFIX))))

    # ----- what the board shows -----------------------------------------------------------
    def board_fields(self) -> dict[str, Any]:
        """The run's columns on the board (before scores): the tags' values as the board
        groups them (flags ``"true"``/``"false"``, delta as its tag text)."""
        return {
            "mechanism": self.mechanism, "hyperparameters": self.hyperparameters,
            "tuning": self.tuning, "private": _flag(self.private),
            "epsilon": self.epsilon, "trial": self.trial, "reference": self.reference,
            "run_key": self.run_key, "tuning_chosen": self.tuning_chosen,
            "schema_source": self.schema_source, "accounting": self.accounting,
            "delta": number_text(self.delta) if self.delta is not None else "",
            "accountant": self.accountant, "privacy_unit": self.privacy_unit,
            "dataset": self.dataset, "dataset_id": self.dataset_id, "noise": self.noise,
            "sampler": self.sampler, "private_tables": _flag(self.private_tables),
            "large_delta": _flag(self.large_delta), "metrics_key": self.metrics_key,
            "schema_digest": self.schema_digest, "schema_quality": self.schema_quality,
        }

    def not_applicable(self) -> dict[str, Any]:
        """The fields of the board's n/a row for this run's job (public facts only)."""
        return {"mechanism": self.mechanism, "epsilon": self.epsilon,
                "hyperparameters": self.hyperparameters, "delta": self.delta,
                "dataset": self.dataset, "accountant": self.accountant,
                "privacy_unit": self.privacy_unit, "trial": self.trial}


def stage_of(mode: str, stage: str) -> str:
    """The tuning stage as a run's name shows it (`` [public:search]``; "" untuned)."""
    return f" [{mode}:{stage}]" if mode and mode != "none" else ""


def _prefixed(tags: Mapping[str, str], prefix: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k[len(prefix):], str(v)) for k, v in tags.items()
                        if k.startswith(prefix)))


#: The record's text fields: (field, tag, value when the run lacks the tag).
TAG_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("mechanism", "mechanism", ""), ("hyperparameters", "hyperparameters", "-"),
    ("accountant", "accountant", ""), ("privacy_unit", "privacy_unit", ""),
    ("dataset", "dataset", ""), ("dataset_id", "dataset_id", ""),
    ("private", "private", "true"), ("reference", "reference", ""),
    ("accounting", "accounting", "ledger"), ("tuning", "tuning", ""),
    ("tuning_mode", "tuning_mode", ""), ("tuning_stage", "tuning_stage", ""),
    ("data_view", "data_view", ""), ("tuning_chosen", "tuning_chosen", ""),
    ("tuning_reason", "tuning_reason", ""), ("non_private_note", "non_private_note", ""),
    ("sweep", "sweep", ""), ("competition", "competition", ""), ("limits", "limits", ""),
    ("noise", "noise", "secret"), ("sampler", "sampler", "numpy"),
    ("private_tables", "private_tables", "false"), ("large_delta", "large_delta", "false"),
    ("data_fingerprint", "data_fingerprint", ""), ("code_version", "code_version", ""),
    ("code_hash", "code_hash", ""), ("run_key", "run_key", ""),
    ("metrics_key", "metrics_key", ""), ("schema_digest", "schema_digest", ""),
    ("schema_quality", "schema_quality", ""),
)
FLAG_FIELDS = ("private", "private_tables", "large_delta")
