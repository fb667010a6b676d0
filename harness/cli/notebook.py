"""The Python API's old address (a shim): ``from harness.cli.notebook import run_competition,
read_board`` keeps working. The API's front door is :mod:`harness.api`; the competition on a
DataFrame lives in :mod:`harness.sweep.dataframe`, reading a board in
:mod:`harness.report.experiments`."""

from __future__ import annotations

from harness.report.experiments import experiment_board, read_board
from harness.sweep.dataframe import (
    NAME_PATTERN,
    checked_epsilons,
    checked_frame,
    checked_mechanisms,
    checked_name,
    checked_trials,
    compose_jobs,
    job_worker,
    loaded_check,
    mechanism_options,
    metric_options,
    override_value,
    planned,
    private_base,
    private_folder,
    refuse_private_as_public,
    refuse_text_in_numbers,
    run_competition,
    run_planned,
    schema_of,
    setting_overrides,
    text_in_number_columns,
    write_inputs,
)

__all__ = [
    "NAME_PATTERN", "checked_epsilons", "checked_frame", "checked_mechanisms", "checked_name",
    "checked_trials", "compose_jobs", "experiment_board", "job_worker", "loaded_check",
    "mechanism_options", "metric_options", "override_value", "planned", "private_base",
    "private_folder", "read_board", "refuse_private_as_public", "refuse_text_in_numbers",
    "run_competition", "run_planned", "schema_of", "setting_overrides",
    "text_in_number_columns", "write_inputs",
]
