"""A run's record built once, in the run's process, from its config, mechanism and dataset.

- :func:`build_record`: the :class:`~dp_arena.report.record.RunRecord` of a run (its name, its
  MLflow tags through :meth:`~dp_arena.report.record.RunRecord.to_tags`, the n/a row of a job
  that does not apply through :meth:`~dp_arena.report.record.RunRecord.not_applicable`). The
  record class and its tag contract live one floor down (:mod:`dp_arena.report.record`), where
  the board reads stored runs back with ``from_tags``; this module only fills it;
- :func:`private_output_reason`: why a reference mechanism's output is itself private;
- :func:`dataset_id`, :func:`short_hash`, :func:`settings_text`: the public hashes and
  texts a record carries for the dataset's and the metrics' configuration.

Only public facts enter a record: the configuration, the keyed data fingerprint, the schema's
digest and provenance, the code's fingerprint; never a count or value of the private data.
"""

from __future__ import annotations

import json
from typing import Any

from dp_arena.data.conform import schema_digest, schema_quality, schema_tags
from dp_arena.data.datasets import Dataset
from dp_arena.report.record import TAG_LIMIT, RunRecord
from dp_arena.run.config import RunConfig
from dp_arena.run.content import content_hash
from dp_arena.mechanisms import Mechanism

ORACLE_NOTE = "hyperparameters tuned on the private data (oracle mode)"
FLOOR_NOTE = "row count read from the private data (no public part)"


def build_record(rc: RunConfig, mechanism: Mechanism | None, data: Dataset, *,
                 fingerprint: str = "", key: str = "", code: str = "",
                 version: str = "") -> RunRecord:
    """The run's record. ``mechanism``: the built mechanism (``None`` when a job could not
    build it: the record then says what the config says); ``fingerprint``, ``key``, ``code``,
    ``version``: the keyed data fingerprint, the run's content key, the code's fingerprint
    and version (empty for a job that will not run, e.g. an n/a row's)."""
    tuning = rc.tuning
    private = tuning.is_private and (mechanism is None or mechanism.is_private)
    claim = getattr(mechanism, "declared_claim", None)  # contestants: what the row claims
    return RunRecord(
        mechanism=rc.mechanism, hyperparameters=rc.setting,
        epsilon=float(rc.budget.epsilon), delta=float(rc.budget.delta), trial=int(rc.trial),
        accountant=rc.accountant, privacy_unit=data.ledger_unit, dataset=data.name,
        dataset_id=dataset_id(rc.dataset, fingerprint), private=private,
        reference=(mechanism.reference if mechanism is not None else None) or "",
        accounting=mechanism.accounting if mechanism is not None else "ledger",
        tuning=tuning.label, tuning_mode=tuning.mode, tuning_stage=tuning.stage,
        data_view=tuning.view, tuning_chosen=tuning.chosen[:TAG_LIMIT],
        tuning_reason=tuning.reason[:TAG_LIMIT],
        non_private_note=non_private_note(rc, mechanism, data),
        sweep=rc.sweep, competition=rc.competition, limits=rc.limits.describe(),
        noise=rc.noise, sampler=rc.sampler, private_tables=bool(rc.log_private_tables),
        large_delta=bool(rc.allow_large_delta), data_fingerprint=fingerprint,
        code_version=version, code_hash=code, run_key=key,
        metrics_key=short_hash(rc.metrics),
        metric_keys=tuple((n, short_hash(s)) for n, s in sorted(rc.metrics.items())),
        metric_settings=tuple((n, settings_text(s))
                              for n, s in sorted(rc.metrics.items())),
        schema_digest=schema_digest(data.schema),  # a board notices mixed schemas
        schema_quality=schema_quality(data.schema_source)[:TAG_LIMIT],
        schema=tuple(schema_tags(data.schema_source).items()),
        claim=tuple(sorted(claim.tags().items())) if claim is not None else ())


def non_private_note(rc: RunConfig, mechanism: Mechanism | None, data: Dataset) -> str:
    """Why a run's result is not differentially private ("" when it is): oracle tuning, or a
    floor whose row count is the private row count."""
    if not rc.tuning.is_private:
        return ORACLE_NOTE
    if mechanism is not None and mechanism.reference == "floor" and \
            private_output_reason(mechanism, data):
        return FLOOR_NOTE
    return ""


def private_output_reason(mechanism: Mechanism, data: Dataset) -> str:
    """Why a reference mechanism's output is itself private ("" if it is not): ``resample``
    releases private rows; ``uniform`` without a public part or ``n_rows`` emits exactly the
    private row count. Such a table (and its row count) is logged only by opt-in."""
    if mechanism.reference == "ceiling":
        return f"{mechanism.name} output is private rows"
    if (mechanism.reference == "floor" and data.public is None
            and not getattr(mechanism, "n_rows", None)):
        return "uniform's row count is the private row count (no public part)"
    return ""


def settings_text(settings: dict[str, Any]) -> str:
    """A metric's settings as a person writes them (``k=3,max_marginals=50``; ``defaults``),
    for the board; the ``metric_key/<name>`` hash stays the identity."""
    if not settings:
        return "defaults"
    return ",".join(f"{k}={json.dumps(v, default=str) if isinstance(v, (dict, list)) else v}"
                    for k, v in sorted(settings.items()))[:500]


def short_hash(obj: Any) -> str:
    """16 hex digits of SHA-256 over ``obj`` as canonical JSON (for public configuration only)."""
    return content_hash(obj, 16)


def dataset_id(dataset_cfg: dict[str, Any], fingerprint: str) -> str:
    """What identifies a dataset on the board: its config and its keyed fingerprint (two CSVs of
    the same name are two datasets)."""
    return short_hash({"config": dataset_cfg, "fingerprint": fingerprint})
