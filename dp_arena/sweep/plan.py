"""A sweep's plan: every job composed and checked in the launching process before any starts.

- :func:`expand_jobs`: the jobs of a Hydra sweep, expanded as Hydra's basic sweeper does (the
  cartesian product of ``hydra.sweeper.params`` and the command line, in its order, so job
  number = index), through Hydra's public override parser;
- :func:`compose_job`: each job's config composed with Hydra's config loader and converted
  once to a :class:`~dp_arena.run.config.RunConfig`;
- :func:`plan_sweep`: every job through the checks a run makes
  (:func:`~dp_arena.run.config.build_components`, :func:`~dp_arena.run.preflight.check_run`),
  loading each distinct dataset once. Each job gets a verdict: ``run``, ``n/a`` (the mechanism
  does not apply to the dataset: listed with the reason, shown on the board, not a failure),
  ``duplicate`` (the same computation as an earlier job, by
  :func:`~dp_arena.run.content.job_key`, e.g. ``adaptive_grid`` and ``adaptive_grid_zcdp``
  under ``privacy=zcdp``: run once) or ``invalid``;
- :func:`report_load`: a dataset fitted to a proposed schema that lost more than
  ``dataset.max_loss`` of a column's values or of its rows makes its jobs invalid (one
  problem, with the counts and the fix); otherwise what loading cost is printed once per
  dataset on stderr. Those counts, and the warnings computed on the private table
  (:func:`say_private_warnings`), are the private facts said here: on the operator's console
  only, labelled, never in the plan file (:mod:`dp_arena.data.conform`,
  :mod:`dp_arena.data.guards`);
- :func:`plan_jobs`: :func:`plan_sweep` with the default delta rule for jobs whose overrides
  set no delta: the one entry of the command line and the Python API;
- :func:`plan_for`: the whole plan of a Hydra sweep (:class:`~dp_arena.sweep.records.SweepPlan`).
  Invalid jobs are grouped by their message, so a bad value swept over 20 jobs is one problem,
  reported once (:func:`report_problems`), and the sweep exits 2 before any job folder or
  MLflow run exists. The first job's settings are checked before the others are composed
  (:func:`refuse_first_job`: a bad value given once is refused in a second, not after
  composing every job). Sweepers that are not the basic one (Optuna's search spaces) are checked
  on the base config. :func:`announce` says up front what will not run, and why.

Only public facts leave these checks (see :mod:`dp_arena.run.preflight`).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from dp_arena.data.conform import loss_refusal, loss_report_lines
from dp_arena.data.datasets import Dataset, check_dataset_config, load_dataset
from dp_arena.data.guards import PRIVATE_VIEW, private_warnings, public_warnings
from dp_arena.errors import ConfigError, DPArenaError, NotApplicable
from dp_arena.params import config_problem
from dp_arena.redact import scrubbed_reason
from dp_arena.report.leaderboard import NotApplicableRow
from dp_arena.run.config import (
    RunConfig,
    build_components,
    check_settings,
    experiment_for,
    label_preset,
    parse_run_config,
    preset_of,
)
from dp_arena.run.content import job_key
from dp_arena.run.cost_inputs import cost_inputs
from dp_arena.run.preflight import check_data_size, check_run, with_default_delta
from dp_arena.run.record import build_record
from dp_arena.sweep.lines import say as say_line
from dp_arena.sweep.records import JobPlan, SweepPlan
from dp_arena.mechanisms import Mechanism


# ----- the jobs -------------------------------------------------------------------------------
def expand_jobs(config: DictConfig) -> list[list[str]] | None:
    """Every job's overrides, in the order Hydra's basic sweeper launches them (job number =
    index): for each key its values (a sweep's, else the one), the last override of a key
    replacing an earlier one in its place, then the cartesian product. ``None`` for another
    sweeper (Optuna's jobs are chosen as the study goes)."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if OmegaConf.select(config, "hydra.runtime.choices.hydra/sweeper") != "basic":
        return None
    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    arguments = [f"{k}={v}" for k, v in params.items()]
    arguments += list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
    parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
    values: dict[str, list[str]] = {}
    for override in parser.parse_overrides(arguments):
        key = override.get_key_element()
        if not override.is_sweep_override():
            values[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            values[key] = [f"{key}={v}" for v in override.sweep_string_iterator()]
        else:
            raise ConfigError(f"{override.input_line}: the basic sweeper runs lists and ranges, "
                              f"not {override.value_type.name if override.value_type else 'this'}",
                              "give the values (a,b,c) or range(start,stop,step), or use "
                              "tuning=public for a search")
    return [list(job) for job in itertools.product(*values.values())]


def compose_job(config: DictConfig, overrides: list[str]) -> RunConfig:
    """The config one job will run: composed by Hydra's config loader with the job's
    overrides, converted once (the preset comes from the mechanism option Hydra chose)."""
    from hydra.core.global_hydra import GlobalHydra

    loaded = GlobalHydra.instance().config_loader().load_sweep_config(config, overrides)
    return run_config_of(loaded)


#: Root settings a job may differ in without being composed again: plain integers that no
#: config interpolates (``tests/test_config_schema.py`` checks the configs are equal).
REUSABLE_KEYS = ("trial", "seed")


def compose_or_reuse(config: DictConfig, overrides: list[str],
                     composed: dict[tuple[str, ...], RunConfig]) -> RunConfig:
    """:func:`compose_job`, except that a job whose overrides differ from an already composed
    job's only in integer ``trial`` / ``seed`` values reuses that job's config with those
    replaced (composing a job takes about 0.2 s; the default competition's 60 jobs are 20
    configs x 3 trials)."""
    pairs = [o.partition("=") for o in overrides]
    fixed = tuple(o for o, (k, _, _) in zip(overrides, pairs) if k not in REUSABLE_KEYS)
    changes = {k: v for k, _, v in pairs if k in REUSABLE_KEYS}
    if fixed in composed and all(re.fullmatch(r"-?\d+", v) for v in changes.values()):
        return composed[fixed].replaced(**{k: int(v) for k, v in changes.items()})
    rc = compose_job(config, overrides)
    composed.setdefault(fixed, rc)
    return rc


def run_config_of(composed: DictConfig) -> RunConfig:
    """A composed config (with its ``hydra`` node) as a :class:`RunConfig`, converted to the
    typed settings but not yet checked (:func:`plan_sweep` checks it, naming the job)."""
    option = OmegaConf.select(composed, "hydra.runtime.choices.mechanism")
    composed = composed.copy()
    with open_dict(composed):
        composed.pop("hydra", None)
    return parse_run_config(composed, preset=preset_of(
        option, OmegaConf.select(composed, "mechanism.name")), check=False)


def sets_delta(overrides: list[str]) -> bool:
    """Whether a job's overrides choose its delta: ``privacy.delta=``, a ``privacy=`` option
    or a competition (whose preset is the challenge's)."""
    keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    return bool(keys & {"privacy.delta", "privacy", "competition"})


# ----- the verdicts ---------------------------------------------------------------------------
def plan_jobs(configs: Sequence[Any], labels: Sequence[str] | None,
              overrides: Sequence[Sequence[str]] | None,
              on_job: Callable[[int, int], None] | None = None) -> SweepPlan:
    """:func:`plan_sweep` for jobs given by their command-line overrides, the one entry both
    doors take (``dp-arena`` through :func:`plan_for`, the Python API through
    :func:`dp_arena.sweep.dataframe.run_planned`), so both apply the same checks and the same
    default delta: a job whose overrides do not set the delta (:func:`sets_delta`) gets the
    default delta rule (:func:`~dp_arena.run.preflight.with_default_delta`). ``overrides``
    ``None``: a search sweep's base config, whose delta counts as given."""
    given = [True] * len(configs) if overrides is None else \
        [sets_delta(list(job)) for job in overrides]
    return plan_sweep(configs, labels, on_job=on_job, delta_given=given)


def plan_sweep(configs: Sequence[Any], labels: Sequence[str] | None = None,
               on_job: Callable[[int, int], None] | None = None,
               delta_given: Sequence[bool] | None = None) -> SweepPlan:
    """A verdict for every job (see the module docstring). A job is a :class:`RunConfig`, a
    config dict (resolved, without the ``hydra`` node), or the :class:`DPArenaError` that
    composing it raised (invalid, with that message). ``labels``: how to name each job in
    messages (default: its run label); ``on_job(k, n)``: called before job ``k`` of ``n`` is
    checked (progress); ``delta_given``: per job, whether its command set the delta (default:
    all did); a job that did not gets :func:`with_default_delta` (its entry carries it)."""
    datasets: dict[str, Dataset | DPArenaError] = {}
    reported: set[int] = set()  # datasets whose load report was printed (by id)
    warned: set[int] = set()  # datasets whose private warnings were said (by id)
    seen: dict[str, int] = {}
    jobs: list[JobPlan] = []
    metrics_na: dict[str, str] = {}
    notes: dict[str, int] = {}
    for index, cfg in enumerate(configs):
        if on_job is not None:
            on_job(index, len(configs))
        label = labels[index] if labels else f"job {index}"
        rc = data = mechanism = None
        try:
            if isinstance(cfg, BaseException):
                raise cfg
            rc = cfg if isinstance(cfg, RunConfig) else parse_run_config(cfg, check=False)
            label = labels[index] if labels else rc.label
            check_settings(rc.settings)
            mechanism, metrics = build_components(rc)
            check_data_size(rc)
            data = cached_dataset(datasets, rc.dataset)
            report_load(data, reported)
            given = delta_given[index] if delta_given is not None else True
            rc, delta_note = with_default_delta(rc, data, given)
            if delta_note:
                notes[delta_note] = 1
            checked = check_run(rc, mechanism, metrics, data)
        except NotApplicable as exc:
            jobs.append(JobPlan(index, "n/a", label, exc.problem, row=na_row(rc, mechanism, data),
                                mechanism=rc.mechanism if rc else ""))
            continue
        except DPArenaError as exc:
            jobs.append(JobPlan(index, "invalid", label, str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a bug or library error: still one message
            jobs.append(JobPlan(index, "invalid", label, scrubbed_reason(exc)))
            continue
        metrics_na.update({f"{n} on {data.name}": r for n, r in checked.metrics_na.items()})
        for warning in public_warnings(data):  # once per sweep (a dict key), not per job
            notes[f"warning: {warning}"] = 1
        for note in data.setup_notes:  # the held-out share and target chosen for the user
            notes[note] = 1
        say_private_warnings(data, warned)  # once per dataset, on the console only
        preset = label_preset(rc.preset, rc.accountant)
        who = f"{mechanism.name}{f'[{preset}]' if preset else ''} on {data.name}"
        # once per job here, never in the run; on the data the mechanism will see
        for note in mechanism.notes(checked.view.training_view()):
            notes[f"{who}: {note}"] = notes.get(f"{who}: {note}", 0) + 1
        key = job_key(rc)
        if key in seen:
            jobs.append(JobPlan(index, "duplicate", label, same_as=seen[key],
                                mechanism=rc.mechanism))
            continue
        seen[key] = index
        jobs.append(JobPlan(index, "run", label, experiment=experiment_for(rc, data),
                            delta=rc.budget.delta if delta_note else None,
                            mechanism=rc.mechanism, setting=rc.setting,
                            epsilon=float(rc.budget.epsilon), dataset=data.name,
                            sizes=asdict(cost_inputs(rc.dataset, data,
                                                     float(rc.budget.epsilon)))))
    return SweepPlan(tuple(jobs), metrics_na, notes)


def cached_dataset(cache: dict[str, Dataset | DPArenaError], cfg: dict[str, Any]) -> Dataset:
    """Each distinct dataset config is loaded once per sweep (and a failure reported once)."""
    key = json.dumps(cfg, sort_keys=True, default=str)
    if key not in cache:
        try:
            cache[key] = load_dataset(cfg)
        except DPArenaError as exc:
            cache[key] = exc
    found = cache[key]
    if isinstance(found, DPArenaError):
        raise found
    return found


def report_load(data: Dataset, reported: set[int], stream: Any = None) -> None:
    """Refuse a dataset whose loading lost more than ``dataset.max_loss``
    (:func:`~dp_arena.data.conform.loss_refusal`: raised for every job on it, so the sweep
    reports it once as one problem); else print what loading cost, once per dataset, on
    stderr. The counts are exact counts of the private table: said on the operator's console
    only, never put in the plan's notes (which are written to ``plan.json``), MLflow or the
    board; an invalid job's message is printed, never stored."""
    refusal = loss_refusal(data.load_report, data.max_loss, data.name)
    if refusal is not None:
        raise refusal
    if id(data) not in reported:
        reported.add(id(data))
        for line in loss_report_lines(data.load_report, data.name):
            say_line(line, stream)


def say_private_warnings(data: Dataset, warned: set[int], stream: Any = None) -> None:
    """The warnings computed on the private table (:func:`~dp_arena.data.guards.private_warnings`:
    too few persons, one bin, one code, what loading changed), once per dataset of a job that
    will run, on stderr, labelled as the owner's private view: never in the plan's notes
    (``plan.json``), MLflow or the board."""
    if id(data) in warned:
        return
    warned.add(id(data))
    warnings = private_warnings(data)
    if warnings:
        lines = [f"dataset {data.name!r}: warnings ({PRIVATE_VIEW}):",
                 *[f"  warning: {w}" for w in warnings]]
        say_line("\n".join(lines), stream)


def na_row(rc: RunConfig | None, mechanism: Mechanism | None,
           data: Dataset | None) -> NotApplicableRow | None:
    """How an n/a job appears on the board: its run record's fields
    (:meth:`~dp_arena.report.record.RunRecord.not_applicable`: public facts only), so its label
    is the one its run would carry."""
    if rc is None or data is None:
        return None
    return NotApplicableRow.of(build_record(rc, mechanism, data).not_applicable())


# ----- a Hydra sweep's plan -------------------------------------------------------------------
def plan_for(config: DictConfig) -> SweepPlan:
    """The sweep's plan (see the module docstring); raises :class:`SystemExit` (2) after
    printing the problems when any job is invalid."""
    jobs = expand_jobs(config)
    overrides = jobs if jobs is not None else [[]]
    configs: list[RunConfig | DPArenaError] = []
    labels: list[str] = []
    with ticking(planning_reporter()) as say:  # a line every 5 s, even inside one job
        composed: dict[tuple[str, ...], RunConfig] = {}
        for index, job in enumerate(overrides):
            say("composing", index, len(overrides))
            try:
                rc = (compose_or_reuse(config, job, composed) if jobs is not None
                      else run_config_of(config))
                configs.append(rc)
                labels.append(rc.label)
            except Exception as exc:  # noqa: BLE001 - Hydra's composition error, said once
                configs.append(exc if isinstance(exc, DPArenaError) else config_problem(exc))
                labels.append(" ".join(job))
            if index == 0 and len(overrides) > 1:  # before composing the others
                refuse_first_job(configs[0], labels[0], len(overrides))
        planned = plan_jobs(configs, labels, jobs,
                            on_job=lambda k, n: say("checking", k, n, labels[k]))
    problems = planned.problems()
    if problems:
        report_problems(problems, len(overrides))
        raise SystemExit(2)
    first = next((c for c in configs if isinstance(c, RunConfig)), None)
    return replace(planned, started=time.time(), searched=jobs is None,
                   total=len(planned.of("run")) if jobs is not None else None,
                   jobs=tuple(replace(j, overrides=tuple(overrides[j.index]) if jobs else ())
                              for j in planned.jobs),
                   workers=workers_of(config),
                   tracking_uri=first.tracking_uri if first is not None else None)


def settings_problem(job: RunConfig | DPArenaError) -> DPArenaError | None:
    """What a job's settings alone show wrong, without loading data (seconds at most): its
    composition, the typed settings' ranges, the dataset's settings, the mechanism's and the
    metrics' declared constraints, a data file too large for the memory limit. ``None`` when
    these pass (or fail with a bug or an n/a, which the full plan reports)."""
    if isinstance(job, DPArenaError):
        return job
    try:
        check_settings(job.settings)
        check_dataset_config(job.dataset)
        build_components(job)
        check_data_size(job)
    except NotApplicable:
        return None
    except DPArenaError as exc:
        return exc
    except Exception:  # noqa: BLE001 - a bug or a library error: the plan says it per job
        return None
    return None


def refuse_first_job(job: RunConfig | DPArenaError, label: str, n_jobs: int) -> None:
    """Exit 2 with the first job's :func:`settings_problem`, if any, before the sweep's other
    jobs are composed: a bad value given once (``dataset.n_private=0``) is found in a second
    rather than after composing and checking every job."""
    problem = settings_problem(job)
    if problem is None:
        return
    say_line(f"dp-arena: the sweep was not started: a problem in the first of its {n_jobs} jobs "
        f"(the other {n_jobs - 1} were not checked):")
    report_problem_lines(str(problem), label)
    raise SystemExit(2)


def workers_of(config: DictConfig) -> int:
    """How many runs the launcher runs at once (joblib's n_jobs, SLURM's array parallelism)."""
    for key in ("hydra.launcher.n_jobs", "hydra.launcher.array_parallelism"):
        try:
            value = OmegaConf.select(config, key)
            if value is not None and int(value) > 0:
                return int(value)
        except Exception:  # noqa: BLE001, S112 - an unresolvable value: the default below
            continue
    return int(os.environ.get("DP_ARENA_JOBS", "2") or 2)


#: Seconds of planning before the first progress line, and between lines.
PLANNING_EVERY_S = 5.0


def planning_reporter(every_s: float = PLANNING_EVERY_S, stream: Any = None):
    """``say(step, k, n, what="")``: a ``planning: checking job k of n: WHAT (12s)`` line on
    stderr when planning has run ``every_s`` seconds since the last line (silent for quick
    plans). ``say.tick()`` says the step in progress again (after ``every_s``, then at doubling
    intervals up to 6 x ``every_s``): :func:`ticking` calls it from a thread, so one job whose
    check takes long (a wide table: ``aim_quick``'s notes on 110 columns took minutes) still
    shows the plan is alive."""
    began = time.monotonic()
    state: dict[str, Any] = {"last": began, "step": "", "wait": every_s}
    lock = threading.Lock()

    def line(now: float) -> None:
        from dp_arena.report.terminal import terminal_width, wrap_lines

        text = f"planning: {state['step']} ({now - began:.0f}s)"
        say_line("\n".join(wrap_lines([text], terminal_width())), stream)
        state["last"] = now

    def say(step: str, k: int, n: int, what: str = "") -> None:
        with lock:
            state["step"] = f"{step} job {k + 1} of {n}{f': {what}' if what else ''}"
            state["wait"] = every_s
            now = time.monotonic()
            if now - state["last"] >= every_s:
                line(now)

    def tick() -> None:
        """The same step again: after every_s, then twice as long each time (at most 6 x
        every_s), so a step of minutes says so in a few lines."""
        with lock:
            now = time.monotonic()
            if state["step"] and now - state["last"] >= state["wait"]:
                line(now)
                state["wait"] = min(2 * state["wait"], 6 * every_s)

    say.tick = tick  # type: ignore[attr-defined]
    return say


@contextmanager
def ticking(say: Any, period_s: float = 1.0) -> Iterator[Any]:
    """``say`` (:func:`planning_reporter`) with a daemon thread calling ``say.tick()`` every
    ``period_s`` while the block runs; stopped and joined when it ends."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(period_s):
            say.tick()

    thread = threading.Thread(target=run, name="dp-arena-planning", daemon=True)
    thread.start()
    try:
        yield say
    finally:
        stop.set()
        thread.join()


def report_problems(problems: dict[str, list[JobPlan]], n_jobs: int) -> None:
    """Each distinct problem once, with how many jobs it affects; nothing was started."""
    say_line(f"dp-arena: the sweep was not started: {len(problems)} problem"
        f"{'s' if len(problems) > 1 else ''} in its {n_jobs} job"
        f"{'s' if n_jobs > 1 else ''}:")
    for reason, jobs in problems.items():
        who = jobs[0].label if len(jobs) == 1 else f"{len(jobs)} jobs, e.g. {jobs[0].label}"
        report_problem_lines(reason, who)


def report_problem_lines(reason: str, who: str) -> None:
    """One problem as ``- first line``, its other lines indented, then ``(who)``."""
    lines = reason.splitlines()
    say_line(f"- {lines[0]}\n" + "".join(f"  {line.strip()}\n" for line in lines[1:])
        + f"  ({who})")


def announce(plan: SweepPlan) -> None:
    """Say up front what will not run, and why, within the terminal's width
    (:func:`dp_arena.sweep.summary.announce_lines`)."""
    from dp_arena.sweep.summary import announce_lines

    for line in announce_lines(plan):
        say_line(line, sys.stdout)
