"""What finished runs cost, read from the tracking store: the observations the cost model
(:mod:`dp_arena.sweep.cost_model`) is fitted on.

A stored run counts when it FINISHED and carries its CPU time (``cpu_seconds``), its peak
memory (``peak_memory_mb``) and its public sizes (the ``cost.*`` tags of
:mod:`dp_arena.run.cost_inputs`); runs logged before these existed are left out (counted in
:attr:`History.without_sizes`). The store is only read: a local SQLite store that does not
exist is an empty history, never created.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dp_arena.errors import DPArenaError
from dp_arena.run.cost_inputs import CostInputs, inputs_from_tags
from dp_arena.sweep.cost_model import Observation, Sizes

#: Runs read per page of the store's search.
PAGE = 1000


def cost_key(mechanism: str, setting: str) -> str:
    """What one model prices: a mechanism with its setting label (``mst [quick]``; the
    label ``-`` or none: the mechanism alone)."""
    return mechanism if setting in ("", "-") else f"{mechanism} {setting}"


def sizes_of(inputs: CostInputs, epsilon: float) -> Sizes:
    return Sizes(float(inputs.rows), float(inputs.columns), float(inputs.cells), float(epsilon))


@dataclass(frozen=True)
class History:
    """Observations of CPU seconds and of peak MB; ``without_sizes``: finished runs left out
    for lack of the figures."""

    cpu: tuple[Observation, ...] = ()
    memory: tuple[Observation, ...] = ()
    without_sizes: int = 0


def observations_of(tags: Mapping[str, str], metrics: Mapping[str, float]
                    ) -> tuple[Observation, Observation] | None:
    """A stored run's ``(cpu, memory)`` observations, ``None`` when it lacks a figure."""
    inputs = inputs_from_tags(tags)
    try:
        epsilon = float(tags["epsilon"])
        cpu, peak = float(metrics["cpu_seconds"]), float(metrics["peak_memory_mb"])
    except (KeyError, ValueError):
        return None
    if inputs is None or epsilon <= 0 or cpu <= 0 or peak <= 0:
        return None
    key = cost_key(tags.get("mechanism", ""), tags.get("hyperparameters", ""))
    sizes = sizes_of(inputs, epsilon)
    return Observation(key, sizes, cpu), Observation(key, sizes, peak)


def read_history(uri: str | None) -> History:
    """Every finished run's observations in the store at ``uri`` (module docstring)."""
    from mlflow.entities import ViewType

    from dp_arena.report.tracking import client_for

    try:
        client = client_for(uri, must_exist=True)
    except DPArenaError:  # no local store yet: nothing has run
        return History()
    experiments = [e.experiment_id for e in client.search_experiments(view_type=ViewType.ALL)]
    cpu, memory, missing = [], [], 0
    for start in range(0, len(experiments), 100):  # MLflow searches at most 100 at once
        token = None
        while True:
            page = client.search_runs(experiments[start:start + 100],
                                      filter_string="attributes.status = 'FINISHED'",
                                      max_results=PAGE, page_token=token)
            for run in page:
                if run.data.tags.get("kind", "run") != "run":  # a sweep's parent run
                    continue
                found = observations_of(run.data.tags, run.data.metrics)
                if found is None:
                    missing += 1
                    continue
                cpu.append(found[0])
                memory.append(found[1])
            token = page.token
            if not token:
                break
    return History(tuple(cpu), tuple(memory), missing)
