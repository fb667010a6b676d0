"""A competition on a pandas DataFrame, the board as a DataFrame: the Python API's
:func:`run_competition` (exported by :mod:`dp_arena.api`).

    from dp_arena.api import run_competition, read_board
    board = run_competition(df, "parameters.json", mechanisms=["independent", "mst_quick"],
                            epsilons=[1.0, 10.0], trials=3, metrics="kmarginal", name="my_table")
    again = read_board("dp-arena/my_table")

:func:`run_competition` is ``dp-arena dataset=csv ...`` without the shell, through the same
machinery, step by step:

1. **Arguments** are checked first (mechanism options, epsilons, trials, delta, the frames'
   type, text in a column the schema has numbers in): one
   :class:`~dp_arena.errors.ConfigError` naming the argument (or column) and the fix.
2. **The frames** (``data``, optional ``public``) and a :class:`Schema` object are written as
   CSV / ``parameters.json`` into a private folder (mode 0700) at a path fixed by ``name``
   (``<tmp>/dp-arena-<uid>/frames/<name>/``), so the same frame under the same name is the
   same dataset config, the same ``dataset_id`` and the same content keys on every call
   (resume and pooling work as for a CSV). A lock keeps two calls with one name apart. The
   folder is removed when the call ends, whatever happens. A schema path (``parameters.json``
   written by ``dp-arena-schema``, with its ``proposal`` block and ledger) is used where it is;
   a :class:`~dp_arena.data.propose.Proposal` is written as ``dp-arena-schema`` writes it.
3. **The data is loaded once** as ``dataset=csv`` loads a CSV (fitted to a proposed schema,
   validated): a frame that does not fit is one :class:`~dp_arena.errors.SchemaError` that
   names the frame, before any run.
4. **Each job's config** is composed by Hydra from ``dp_arena/conf/`` with the overrides the command line
   would carry (``mechanism=NAME privacy.epsilon=E trial=T dataset=csv dataset.path=...``), and
   the whole set goes through :func:`dp_arena.sweep.plan.plan_jobs`, the sweep's own check
   (the command line's plan calls it too: the same checks and the same default delta):
   every distinct problem once in one error, n/a and duplicate jobs listed; nothing starts
   while any job is invalid.
5. **Runs**: one MLflow parent run per experiment (``kind=sweep``, its ``command`` param the
   equivalent ``dp-arena`` overrides), then every job through
   :func:`dp_arena.sweep.job.execute_job` (:func:`dp_arena.run.runner.run_one`: the ledger and
   release API, the limits in a child process, the same params, tags, metrics and artifacts),
   one progress line per run (``[k/N] done ... ETA``), the sweep summary.
6. **The board** of this call's runs (plus the n/a rows) by
   :func:`dp_arena.report.leaderboard.build_leaderboard`, as the sweep prints it; its files are
   attached to the parent run; the DataFrame is returned.

Nothing is logged from the frames beyond what a CLI run on the same CSV logs: the params name
the (temporary) paths, the data is identified by its keyed fingerprint. :func:`read_board`
is ``dp-arena-board`` as a DataFrame (:mod:`dp_arena.report.experiments`).

Privacy: the frames are private; they are written only into the call's private folder (mode
0700, removed at the end), read by the runs through the release API as a CSV would be, and
compared with a public frame by keyed digests in memory (:mod:`dp_arena.data.overlap`).
Messages name columns, arguments and options, never a value or a count of private rows.
"""

from __future__ import annotations

import fcntl
import io
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
from hydra import compose, initialize_config_dir
from joblib.externals.loky import ProcessPoolExecutor
from joblib.externals.loky.backend.context import get_context

from dp_arena.data.datasets import load_dataset
from dp_arena.data.infer import present
from dp_arena.data.overlap import refuse_overlap, refuse_remembered_sample
from dp_arena.data.proposal_file import write_proposal
from dp_arena.data.propose import Proposal
from dp_arena.data.schema import Schema
from dp_arena.errors import ConfigError, DPArenaError, SchemaError
from dp_arena.params import config_problem
from dp_arena.report.experiments import experiment_board
from dp_arena.report.leaderboard import with_not_applicable
from dp_arena.report.render import write_outputs
from dp_arena.report.tracking import resolve_tracking_uri
from dp_arena.resources import config_dir
from dp_arena.run import config_store
from dp_arena.run.config import RunConfig
from dp_arena.sweep.environment import check_environment
from dp_arena.sweep.job import JobContext, execute_job, job_config, report_job
from dp_arena.sweep.launch_checks import check_tracking_server, check_tracking_store
from dp_arena.sweep.parents import end_parent_runs, start_parent_runs
from dp_arena.sweep.plan import (
    announce,
    plan_jobs,
    planning_reporter,
    run_config_of,
    ticking,
)
from dp_arena.sweep.progress import duration
from dp_arena.sweep.records import Outcome
from dp_arena.sweep.summary import not_applicable_records, print_summary

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


# ----- arguments ----------------------------------------------------------------------------
def mechanism_options() -> list[str]:
    """The ``mechanism=`` options ``dp_arena/conf/mechanism`` holds (presets included)."""
    return sorted(p.stem for p in (Path(config_dir()) / "mechanism").glob("*.yaml"))


def metric_options() -> list[str]:
    return sorted(p.stem for p in (Path(config_dir()) / "metrics").glob("*.yaml"))


def checked_mechanisms(mechanisms: Sequence[str]) -> list[str]:
    if isinstance(mechanisms, str) or not mechanisms:
        raise ConfigError("mechanisms must be a non-empty list of mechanism options",
                          "e.g. mechanisms=['independent', 'mst_quick']")
    options = mechanism_options()
    unknown = [m for m in mechanisms if m not in options]
    if unknown:
        raise ConfigError(f"mechanisms: no option named {', '.join(map(repr, unknown))}",
                          f"choose from {', '.join(options)}")
    return list(dict.fromkeys(mechanisms))


def checked_epsilons(epsilons: Sequence[float] | float) -> list[float]:
    values = [epsilons] if isinstance(epsilons, (int, float)) else list(epsilons)
    bad = [e for e in values if isinstance(e, bool) or not isinstance(e, (int, float))
           or not math.isfinite(e) or e <= 0]
    if not values or bad:
        raise ConfigError(f"epsilons must be finite numbers > 0 (got {bad or values!r})",
                          "e.g. epsilons=[1.0, 10.0]")
    return [float(e) for e in dict.fromkeys(values)]


def checked_trials(trials: int | Sequence[int]) -> list[int]:
    values = list(range(trials)) if isinstance(trials, int) and not isinstance(trials, bool) \
        else list(trials)
    if not values or any(isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in values):
        raise ConfigError(f"trials must be a count >= 1 or a list of trial indices >= 0 "
                          f"(got {trials!r})", "e.g. trials=3 (trials 0, 1, 2)")
    return list(dict.fromkeys(values))


def checked_frame(frame: Any, what: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise ConfigError(f"{what} must be a pandas DataFrame (got {type(frame).__name__})",
                          f"pass {what}=pd.read_csv(...) or another DataFrame")
    if frame.empty:
        raise ConfigError(f"the {what} DataFrame has no rows", f"pass a {what} table with rows")
    return frame


def checked_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ConfigError(f"name must be 1-64 letters, digits, '_', '.' or '-' (got {name!r})",
                          "e.g. name='my_table' (the board's dataset and experiment "
                          "dp-arena/my_table)")
    return name


def override_value(value: Any) -> str:
    """``value`` as a Hydra override value: numbers and booleans as such, text quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def setting_overrides(prefix: str, settings: Mapping[str, Any] | None) -> list[str]:
    return [f"{prefix}.{k}={override_value(v)}" for k, v in (settings or {}).items()]


# ----- the private folder -------------------------------------------------------------------
def private_base() -> Path:
    """``<tmp>/dp-arena-<uid>``, created with mode 0700; refused when another user owns it or
    others may read it."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    base = Path(tempfile.gettempdir()) / f"dp-arena-{uid}"
    base.mkdir(mode=0o700, exist_ok=True)
    st = os.lstat(base)
    if base.is_symlink() or (hasattr(os, "getuid") and st.st_uid != uid) or st.st_mode & 0o077:
        raise DPArenaError(f"{base} is not a private folder of this user (owner or mode)",
                           f"remove {base}, or set TMPDIR to a folder only you can read")
    return base


@contextmanager
def private_folder(name: str) -> Iterator[Path]:
    """The call's private folder ``<base>/frames/<name>`` (see the module docstring): locked
    while the call runs, removed afterwards."""
    frames = private_base() / "frames"
    frames.mkdir(mode=0o700, exist_ok=True)
    lock_path = frames / f".{name}.lock"
    with open(lock_path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"another run_competition with name={name!r} is running",
                              "wait for it to finish, or pass another name=") from None
        folder = frames / name
        shutil.rmtree(folder, ignore_errors=True)  # a folder a killed call left behind
        folder.mkdir(mode=0o700)
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            lock_path.unlink(missing_ok=True)
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_inputs(folder: Path, data: pd.DataFrame, public: pd.DataFrame | None,
                 schema: Schema | Proposal | str | os.PathLike) -> dict[str, str]:
    """The frames as CSV and the schema as a file; returns the ``dataset.*`` settings."""
    if isinstance(schema, Proposal):
        schema_path = str(write_proposal(schema, folder / "parameters.json")[0])
    elif isinstance(schema, Schema):
        schema_path = str(folder / "parameters.json")
        schema.save(schema_path)
    elif isinstance(schema, (str, os.PathLike)):
        path = Path(schema).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"schema file not found: {path}",
                              "pass a parameters.json path, a Schema or a Proposal")
        schema_path = str(path)
    else:
        raise ConfigError(f"schema must be a Schema, a Proposal or a parameters.json path "
                          f"(got {type(schema).__name__})",
                          "e.g. schema=Schema.load('parameters.json')")
    data.to_csv(folder / "private.csv", index=False)
    settings = {"path": str(folder / "private.csv"), "schema": schema_path}
    if public is not None:
        public.to_csv(folder / "public.csv", index=False)
        settings["public_path"] = str(folder / "public.csv")
    return settings


def loaded_check(dataset: dict[str, Any]) -> None:
    """Load the data as ``dataset=csv`` does; a frame that does not fit the schema is one
    error naming the frame (never the temporary path, never a value)."""
    try:
        load_dataset(dataset)
    except SchemaError as exc:
        which = "public" if "dataset.public_path" in str(exc) else "data"
        raise SchemaError(exc.problems, where=f"the {which} DataFrame",
                          fix="fix the frame (rename, drop or fill columns) or the schema") \
            from None


def refuse_private_as_public(data: pd.DataFrame, public: pd.DataFrame | None,
                             schema: Any) -> None:
    """One :class:`DPArenaError` when the ``public`` frame, or the sample a
    ``Proposal(source="public")`` was made from, is the ``data`` frame or (nearly) a subset of
    it (:mod:`dp_arena.data.overlap`: keyed row digests, in memory only)."""
    fix = ("pass a public sample of another population or period (or a part of the data set "
           "apart and never passed as data), or propose from the data itself: "
           "ProposalSettings('dp', epsilon=...) or ProposalSettings('private') (labelled not DP)")
    if public is not None:
        refuse_overlap(public, data, "the public DataFrame", "the data DataFrame", fix)
    if isinstance(schema, Proposal) and schema.source == "public":
        refuse_remembered_sample(getattr(schema, "sample_digests", None), data,
                                 schema.schema.names,
                                 "the sample the Proposal was made from", "the data DataFrame",
                                 fix)


def schema_of(schema: Any) -> Schema | None:
    """The :class:`Schema` a ``schema`` argument names (``None`` when it names none that
    loads: :func:`write_inputs` then says why)."""
    if isinstance(schema, Proposal):
        return schema.schema
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, (str, os.PathLike)) and Path(schema).expanduser().is_file():
        try:
            return Schema.load(Path(schema).expanduser())
        except DPArenaError:
            return None
    return None


def text_in_number_columns(frame: pd.DataFrame, schema: Schema) -> list[str]:
    """The columns ``schema`` holds numbers in (numeric, or categorical with numeric values)
    where ``frame`` holds a present value that is not a number (text in a column of dtype
    ``object``): names only, never a value or a count."""
    found = []
    for col in schema.columns:
        numbers = col.kind == "numeric" or (col.kind == "categorical" and col.dtype != "str")
        if not numbers or col.name not in frame.columns or \
                pd.api.types.is_numeric_dtype(frame[col.name].dtype):
            continue
        values = present(frame[col.name])
        if pd.to_numeric(values, errors="coerce").isna().any():
            found.append(col.name)
    return found


def refuse_text_in_numbers(frames: Mapping[str, pd.DataFrame | None], schema: Any) -> None:
    """One :class:`ConfigError` naming every column of a frame in which the schema has numbers
    but the frame holds text, and the fix (checked before anything is written or loaded: the
    loader would set such values missing, or drop the rows where the schema allows no missing
    value, and a frame of such rows is refused as having no rows, naming no column). What it
    says of the private frame: which columns hold text, on the caller's console only."""
    known = schema_of(schema)
    if known is None:
        return
    for what, frame in frames.items():
        columns = text_in_number_columns(frame, known) if frame is not None else []
        if columns:
            first = columns[0]
            raise ConfigError(
                f"the {what} DataFrame holds text in column"
                f"{'s' if len(columns) > 1 else ''} {', '.join(map(repr, columns))}, where the "
                f"schema has numbers",
                f"convert it to numbers, e.g. {what}[{first!r}] = pd.to_numeric({what}"
                f"[{first!r}], errors='coerce') (text becomes missing), or make the column "
                f"categorical in the schema (ProposalSettings(..., hints={{{first!r}: "
                "{'kind': 'categorical'}}) when proposing)")


# ----- composing the jobs -------------------------------------------------------------------
def compose_jobs(jobs: list[list[str]]) -> list[Any]:
    """Each job's config as the sweep composes it (a :class:`~dp_arena.run.config.RunConfig`),
    or the :class:`~dp_arena.errors.ConfigError` composing it raised (one message)."""
    config_store.register()  # the typed schema the config starts from, and its resolvers
    configs: list[Any] = []
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3",
                               job_name="notebook"):
        for overrides in jobs:
            try:
                configs.append(run_config_of(compose("config", overrides=overrides,
                                                     return_hydra_config=True)))
            except DPArenaError as exc:
                configs.append(exc)
            except Exception as exc:  # noqa: BLE001 - Hydra's composition error, said once
                configs.append(config_problem(exc))
    return configs


def planned(configs: list[Any], labels: list[str], jobs: list[list[str]],
            on_job: Any = None):
    """The sweep's plan (:func:`dp_arena.sweep.plan.plan_jobs`, as ``dp-arena`` plans: the
    same checks, the same default delta for jobs that set none); raises one
    :class:`DPArenaError` listing every distinct problem (with how many jobs it affects) when
    any job is invalid, or when no mechanism applies."""
    plan = plan_jobs(configs, labels, jobs, on_job=on_job)
    problems = plan.problems()
    if problems:
        lines = [(f"the competition was not started: {len(problems)} problem"
                  f"{'s' if len(problems) > 1 else ''} in its {len(configs)} jobs:")]
        for reason, group in problems.items():
            who = group[0].label if len(group) == 1 else f"{len(group)} jobs, e.g. " \
                                                          f"{group[0].label}"
            lines.append(f"- {reason}\n  ({who})")
        raise DPArenaError("\n".join(lines))
    if not plan.of("run"):
        reasons = sorted({j.reason for j in plan.of("n/a")})
        raise ConfigError("no mechanism applies to this data: " + "; ".join(reasons),
                          "choose mechanisms for record-level tabular data, e.g. independent, "
                          "mst_quick, aim_quick, uniform")
    return plan


# ----- running ------------------------------------------------------------------------------
def job_worker() -> Any:
    """The one-worker pool the jobs run in: a fresh interpreter (fork + exec), as the command
    line's joblib launcher starts its workers, through loky's ``loky`` start method, which does
    not re-import the caller's ``__main__``. So a plain script that calls
    :func:`run_competition` at top level (no ``if __name__ == "__main__":`` guard) works as
    well as a notebook: multiprocessing's ``spawn`` and ``forkserver`` re-run the caller's
    script in the worker, which calls the API again and breaks the pool. Not a fork of the
    caller: the run's isolated child is a fork, and forking a process that already runs
    threads (a notebook kernel, a process that has used JAX) can deadlock the child."""
    return ProcessPoolExecutor(max_workers=1, context=get_context("loky"))


def run_competition(data: pd.DataFrame, schema: Schema | Proposal | str | os.PathLike, *,
                    mechanisms: Sequence[str], epsilons: Sequence[float] | float = (1.0, 10.0),
                    trials: int | Sequence[int] = 3, delta: float | None = None,
                    metrics: str = "default", accountant: str | None = None,
                    public: pd.DataFrame | None = None, name: str = "dataframe",
                    tracking_uri: str | None = None, experiment: str | None = None,
                    mechanism_settings: Mapping[str, Mapping[str, Any]] | None = None,
                    limits: Mapping[str, Any] | None = None, metric: str | None = None,
                    progress: bool = True, holdout_fraction: float | None = None,
                    target: str | None = None,
                    log_heldout_scores: bool = False) -> pd.DataFrame:
    """Run mechanisms x epsilons x trials on ``data`` (the private table) with ``schema`` and
    return this call's board (one row per mechanism setting and epsilon: ``mean``, ``ci95``,
    ``n``, ``rank``, ``marks``, every score, ``epsilon_spent``, ...), as ``dp-arena`` prints it.
    See the module docstring for what happens, in order.

    ``mechanisms``: ``mechanism=`` options (``independent``, ``mst_quick``, ``uniform``, ...);
    ``metrics``: a ``metrics=`` option (``default``, ``kmarginal``, ``tabular``); ``delta`` /
    ``accountant``: ``privacy.delta`` / ``privacy.accountant`` (None: as ``dp-arena``
    chooses them; for ``delta`` the default rule of
    :func:`dp_arena.run.preflight.default_delta`, 1/(10 N) rounded down to a power of ten with
    N a public bound on persons, printed as a note);
    ``public``: a public table in the same schema; ``name``: the dataset's label (experiment
    ``dp-arena/<name>`` unless ``experiment``); ``mechanism_settings``: per option, settings
    such as ``{"mst_quick": {"iters": 200}}``; ``limits``: e.g. ``{"time_limit_s": 600}``;
    ``metric``: the board's ranking score (default as ``dp-arena-board``);
    ``holdout_fraction`` / ``target``: ``dataset.holdout_fraction`` / ``dataset.target``
    (None: as ``dataset=csv`` chooses them, :mod:`dp_arena.data.own_table`: 20% of the rows
    held out for the utility and risk views, the target inferred and said; ``target="none"``:
    no prediction task); ``log_heldout_scores``: ``tracking.log_heldout_scores`` (the held-out
    scores on the board, for a store only the data's owner reads; else an owner-only file)."""
    check_environment()  # the DP_ARENA_* variables, first, as dp-arena checks them
    data = checked_frame(data, "data")
    public = checked_frame(public, "public") if public is not None else None
    mechs, eps, trial_ids = (checked_mechanisms(mechanisms), checked_epsilons(epsilons),
                             checked_trials(trials))
    name = checked_name(name)
    if metrics not in metric_options():
        raise ConfigError(f"metrics: no option named {metrics!r}",
                          f"choose from {', '.join(metric_options())}")
    if holdout_fraction is not None:
        from dp_arena.data.holdout import checked_fraction

        checked_fraction(holdout_fraction, "holdout_fraction")
    if target is not None and not isinstance(target, str):
        raise ConfigError(f"target must be a column name (got {target!r})",
                          "e.g. target='income', or target='none' for no prediction task")
    if delta is not None and (isinstance(delta, bool) or not isinstance(delta, (int, float))
                              or not 0 <= delta < 1):
        raise ConfigError(f"delta must be a number in [0, 1) (got {delta!r})", "e.g. delta=1e-6")
    unknown = sorted(set(mechanism_settings or {}) - set(mechs))
    if unknown:
        raise ConfigError(f"mechanism_settings names {unknown}, not among mechanisms",
                          f"key it by the options given: {mechs}")
    refuse_private_as_public(data, public, schema)
    refuse_text_in_numbers({"data": data, "public": public}, schema)
    with private_folder(name) as folder:
        dataset = {"name": "csv", **write_inputs(folder, data, public, schema), "label": name,
                   **({"holdout_fraction": float(holdout_fraction)}
                      if holdout_fraction is not None else {}),
                   **({"target": target} if target is not None else {})}
        loaded_check(dataset)
        shared = [f"dataset.{k}={override_value(v)}" for k, v in dataset.items() if k != "name"]
        shared = ["dataset=csv", *shared, f"metrics={metrics}",
                  *([f"privacy.delta={override_value(float(delta))}"] if delta is not None
                    else []),
                  *([f"privacy.accountant={override_value(accountant)}"] if accountant else []),
                  *([f"tracking.uri={override_value(tracking_uri)}"] if tracking_uri else []),
                  *(["tracking.log_heldout_scores=true"] if log_heldout_scores is True else []),
                  *([f"tracking.experiment={override_value(experiment)}"] if experiment
                    else []),
                  *setting_overrides("limits", limits)]
        jobs = [[f"mechanism={m}", *setting_overrides("mechanism", (mechanism_settings or {})
                                                      .get(m)),
                 f"privacy.epsilon={e!r}", f"trial={t}", *shared]
                for m in mechs for e in eps for t in trial_ids]
        command = [f"mechanism={','.join(mechs)}", f"privacy.epsilon={','.join(map(repr, eps))}",
                   f"trial={','.join(map(str, trial_ids))}", *shared]
        return run_planned(jobs, len(shared), command, metric, progress)


def run_planned(jobs: list[list[str]], n_shared: int, command: list[str],
                metric: str | None, progress: bool) -> pd.DataFrame:
    """Compose, check, run and rank ``jobs`` (steps 4-6 of the module docstring); the last
    ``n_shared`` overrides of every job are the same (not repeated in messages)."""
    # "planning: checking job k of n (12s)" on stderr every 5 s of a long plan, as dp-arena
    with ticking(planning_reporter(stream=None if progress else io.StringIO())) as say:
        configs = compose_jobs(jobs)
        labels = [c.label if isinstance(c, RunConfig) else " ".join(j[:len(j) - n_shared])
                  for c, j in zip(configs, jobs)]
        plan = planned(configs, labels, jobs,
                       on_job=lambda k, n: say("checking", k, n, labels[k]))
    sweep = f"notebook/{time.strftime('%Y-%m-%d/%H-%M-%S')}"
    to_run = plan.of("run")
    experiment, = plan.experiments or [""]  # one dataset, one experiment
    plan = replace(plan, total=len(to_run), tracking_uri=configs[to_run[0].index].tracking_uri)
    uri = resolve_tracking_uri(plan.tracking_uri)  # checked as open_sweep checks it
    check_tracking_server(uri)
    check_tracking_store(uri)
    outcomes: list[Outcome] = []
    with redirect_stdout(sys.stdout if progress else io.StringIO()):
        announce(plan)
        plan = replace(plan, parents=start_parent_runs(plan, Path(sweep), command))
        worker = job_worker()
        try:
            started = time.time()
            for k, job in enumerate(to_run, start=1):
                rc = replace(job_config(configs[job.index], JobContext(delta=job.delta)),
                             sweep=sweep, parent_runs=dict(plan.parents))
                outcomes.append(worker.submit(execute_job, rc).result())
                left = (time.time() - started) / k * (len(to_run) - k)
                report_job(outcomes[-1], (f"[{k}/{len(to_run)}]",
                                          f"ETA {duration(left)}" if k < len(to_run) else ""))
            na = [Outcome("N/A", j.label, message=j.reason, row=j.row) for j in plan.of("n/a")]
            text = print_summary(outcomes + na, Path(sweep))
            runs, board = experiment_board(
                experiment, outcomes[0].tracking_uri, metric,
                run_ids=[o.run_id for o in outcomes if o.run_id])
            board = with_not_applicable(board, not_applicable_records(na))
            status = "FAILED" if any(o.failed for o in outcomes) else "FINISHED"
            with tempfile.TemporaryDirectory(prefix="dp-arena-board-") as tmp:
                files = write_outputs(board, runs, tmp, title=f"dp-arena: {experiment}")
                end_parent_runs(plan, status, [Path(f) for f in files], text)
        except BaseException as exc:
            stopped = isinstance(exc, (KeyboardInterrupt, SystemExit))
            end_parent_runs(plan, "KILLED" if stopped else "FAILED",
                            summary=f"stopped: {type(exc).__name__}")
            raise
        finally:
            worker.shutdown(wait=True, kill_workers=True)
        print(f"\nboard: {len(board)} rows of experiment {experiment!r}; read_board("
              f"{experiment!r}) reads every run of it")
    return board
