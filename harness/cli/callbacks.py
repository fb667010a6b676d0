"""The Hydra callback that opens and closes a sweep (in the launching process, not in the
workers).

- ``on_multirun_start``: checks every job before any starts (:mod:`harness.cli.sweep`: one
  message per distinct problem and exit 2; n/a and duplicate jobs listed), starts the sweep's
  MLflow parent run(s), writes the plan the jobs read, and installs the stop handlers
  (SIGTERM/SIGINT stop every worker and mark the in-flight runs KILLED). Before the parent
  run exists it checks the launcher, the tracking server and the sweep folder
  (:mod:`harness.cli.launch_checks`), and refuses (exit 2) a sweep in which nothing can run.
- ``on_multirun_end``: reads every job's ``outcome.json``, prints the summary (finished,
  skipped because already finished, redone after an interruption, failed with each reason
  once, n/a); after a ``public``/``oracle`` tuning search it chooses the setting, says why, and
  scores it on the private data; then prints the leaderboard of this sweep's runs (including
  skipped ones, and the n/a rows) and writes it under ``<sweep dir>/leaderboard``; attaches
  board and summary to the parent run and ends it. Exits 1 if any scored run failed or none
  ran, whatever else happened on the way.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict

from harness.cli.main import OUTCOME_FILE, RANKING_PREFERENCE
from harness.errors import DPArenaError
from harness.redact import without_credentials


class SweepSummary(Callback):
    """Checks a sweep before it starts, and closes it (see the module docstring)."""

    monitor: Any = None

    def __getstate__(self) -> dict[str, Any]:
        """Hydra hands the callbacks to the workers: the progress thread stays here."""
        return {k: v for k, v in self.__dict__.items() if k != "monitor"}

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            self.monitor = self.start(config)
        except DPArenaError as exc:  # Hydra would turn an exception here into a warning
            print(f"dp-arena: the sweep was not started: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        except Exception as exc:  # noqa: BLE001 - same: never start a sweep half-prepared
            print(f"dp-arena: the sweep was not started: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            raise SystemExit(2) from None

    @staticmethod
    def start(config: DictConfig) -> Any:
        """Check, plan and open the sweep; returns its progress monitor (running)."""
        from harness.cli.sweep import (
            announce,
            install_stop_handlers,
            plan_for,
            quiet_optuna,
            start_parent_runs,
            write_plan,
        )

        from harness.cli.launch_checks import (
            check_launcher,
            check_sweep_folder,
            check_tracking_server,
            nothing_runs,
        )
        from harness.report.tracking import resolve_tracking_uri

        quiet_optuna(config)

        plan = plan_for(config)  # exits 2, printing each problem once, before anything starts
        sweep_dir = Path(config.hydra.sweep.dir)
        # the surroundings, in seconds, before the parent run exists (one message with the fix)
        check_launcher(OmegaConf.select(config, "hydra.launcher._target_"))
        if plan["experiments"]:
            check_tracking_server(resolve_tracking_uri(plan["tracking_uri"]))
        announce(plan)
        nothing = nothing_runs(plan)
        if nothing:
            print(f"dp-arena: {nothing}", file=sys.stderr)
            raise SystemExit(2)
        check_sweep_folder(sweep_dir)
        command = list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
        plan["parents"] = start_parent_runs(plan, sweep_dir, command)
        write_plan(sweep_dir, plan)
        install_stop_handlers(sweep_dir, plan)
        from harness.cli.progress import ProgressMonitor

        launcher = str(OmegaConf.select(config, "hydra.launcher._target_") or "")
        return ProgressMonitor(sweep_dir, plan, int(plan.get("workers") or 2),
                               echo_changes="joblib" not in launcher).start()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from harness.cli.sweep import end_parent_runs, read_plan

        if self.monitor is not None:
            self.monitor.stop()
        sweep_dir = Path(config.hydra.sweep.dir)
        plan = read_plan(sweep_dir) or {}
        failed, files, summary = True, [], ""
        try:
            records = read_records(sweep_dir)
            tuning_mode = OmegaConf.select(config, "tuning.mode") or "none"
            searched = tuning_mode in ("public", "oracle") and \
                OmegaConf.select(config, "tuning.stage") == "search"
            summary = print_summary(records, sweep_dir, "tuning runs" if searched else "runs")
            scored = records
            if searched:
                scored = final_stage(config, records, sweep_dir)
                summary += print_summary(scored, sweep_dir, "scored runs of the chosen setting")
            not_applicable = [r for r in records if r["status"] == "N/A"]
            for experiment, uri in experiments_of(scored):
                ids = [r["run_id"] for r in scored
                       if r.get("run_id") and r["experiment"] == experiment]
                files += print_leaderboard(experiment, uri, str(sweep_dir), ids, not_applicable,
                                           (plan.get("parents") or {}).get(experiment))
            failed = any(r["status"] == "FAILED" for r in scored) or not any(
                r["status"] not in ("N/A", "DUPLICATE") for r in scored)  # nothing ran
        finally:
            end_parent_runs(plan, "FAILED" if failed else "FINISHED", files, summary)
            if failed:
                sys.exit(1)


def read_records(sweep_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(sweep_dir.glob(f"*/{OUTCOME_FILE}"))]


def print_summary(records: list[dict[str, Any]], sweep_dir: Path, what: str = "runs") -> str:
    """Print (and return) the sweep's summary: runs finished, skipped, redone, failed with
    each distinct reason once; n/a and duplicate jobs are not runs and are not counted."""
    runs = [r for r in records if r["status"] not in ("N/A", "DUPLICATE")]
    failed = [r for r in runs if r["status"] == "FAILED"]
    skipped = [r for r in runs if r["status"] == "SKIPPED"]
    redone = [r for r in runs if r.get("redone")]
    na = [r for r in records if r["status"] == "N/A"]
    ok = len(runs) - len(failed)
    extra = [f"{len(skipped)} already finished earlier (skipped)"] if skipped else []
    if redone:
        extra.append(f"{len(redone)} interrupted earlier and redone")
    if failed:
        extra.append(f"{len(failed)} failed")
    if na:
        extra.append(f"{len(na)} n/a (mechanism does not apply to the data)")
    lines = [f"\nsweep finished: {ok} of {len(runs)} {what} succeeded"
             f"{', ' + ', '.join(extra) if extra else ''}  ({sweep_dir})"]
    print(lines[0], flush=True)
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for r in failed:
        by_reason.setdefault(r.get("message") or "(no reason recorded)", []).append(r)
    for reason, group in by_reason.items():
        more = f" (+{len(group) - 1} more)" if len(group) > 1 else ""
        # a run that started printed its whole reason already: one line here; a run refused
        # before it started is explained here, once
        reason_lines = reason.splitlines()[:1] if all(r.get("run_id") for r in group) \
            else reason.splitlines()
        text = f"  failed: {group[0]['label']}{more}:\n" + "\n".join(
            "    " + line for line in reason_lines)
        print(text, file=sys.stderr, flush=True)
        lines.append(text)
    return "\n".join(lines) + "\n"


def experiments_of(records: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    seen: dict[str, str | None] = {}
    for r in records:
        if r.get("run_id") and r.get("experiment") and r["experiment"] not in seen:
            seen[r["experiment"]] = r.get("tracking_uri")
    return sorted(seen.items())


def base_config(config: DictConfig) -> dict[str, Any]:
    """The sweep's config without the ``hydra`` node, resolved, as plain containers."""
    copy = config.copy()
    with open_dict(copy):
        copy.pop("hydra", None)
    return OmegaConf.to_container(copy, resolve=True)  # type: ignore[return-value]


def final_stage(config: DictConfig, records: list[dict[str, Any]],
                sweep_dir: Path) -> list[dict[str, Any]]:
    """Choose the best setting of a tuning search, say why, and score it on the private data
    once per ``tuning.final_trials``; returns those runs' outcome records."""
    from harness.cli.main import execute_job, report_job
    from harness.errors import DPArenaError
    from harness.run.tuning import choose_setting, setting_label

    plain = base_config(config)
    tuning = plain["tuning"]
    view = "public" if tuning["mode"] == "public" else "private (oracle: NOT private)"
    objective = tuning.get("objective") or next(
        (k for k in RANKING_PREFERENCE for r in records if k in (r.get("scores") or {})),
        "the ranking score")
    try:
        setting, reason, table = choose_setting(records, objective, view)
    except DPArenaError as exc:
        print(f"\ntuning: {exc}", file=sys.stderr)
        return [{"status": "FAILED", "label": "tuning", "message": str(exc)}]
    out = sweep_dir / "tuning"
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "search.csv", index=False)
    chosen = setting_label(setting)
    (out / "choice.json").write_text(json.dumps({"mode": tuning["mode"], "chosen": setting,
                                                 "reason": reason}, indent=1, default=str))
    print(f"\ntuning ({tuning['mode']}): chose {chosen}\n  why: {reason}\n"
          f"  all settings: {out / 'search.csv'}\n")
    finals = []
    for trial in tuning.get("final_trials") or [0]:
        cfg = json.loads(json.dumps(plain))
        cfg["mechanism"].update(setting)
        cfg["tuning"].update({"stage": "final", "chosen": chosen, "reason": reason})
        cfg["trial"], cfg["sweep"] = int(trial), str(sweep_dir)
        record = execute_job(cfg, setting)
        report_job(record)
        finals.append(record)
        attach_search_table(record, out / "search.csv")
    (out / "final_outcomes.json").write_text(json.dumps(finals, indent=1, default=str))
    return finals


def attach_search_table(record: dict[str, Any], table: Path) -> None:
    """Log the search table next to a final run's own artifacts (best effort)."""
    if record.get("status") != "FINISHED" or not record.get("run_id"):
        return
    from harness.report.tracking import client_for

    try:
        client_for(record.get("tracking_uri")).log_artifact(record["run_id"], str(table), "tuning")
    except Exception as exc:  # noqa: BLE001 - the tags already say what was chosen and why
        print(f"warning: could not attach the search table: {exc}", file=sys.stderr)


def print_leaderboard(experiment: str, tracking_uri: str | None, sweep: str,
                      run_ids: list[str] | None = None,
                      not_applicable: list[dict[str, Any]] | None = None,
                      parent: str | None = None) -> list[Path]:
    """This sweep's leaderboard on stdout, and its files under ``<sweep>/leaderboard``;
    returns the files written. ``not_applicable``: the sweep's n/a records, shown as rows;
    ``parent``: the sweep's parent run, which gets the headline and the board as a table."""
    from harness.report.audits import attach_audits, load_audits
    from harness.report.leaderboard import (
        build_leaderboard,
        load_runs,
        with_not_applicable,
    )
    from harness.report.render import render_markdown, write_outputs
    from harness.report.terminal import board_format, render_terminal

    runs = load_runs(experiment, tracking_uri, run_ids=run_ids)
    if runs.empty:
        return []
    board = attach_audits(build_leaderboard(runs), load_audits(experiment, tracking_uri))
    board = with_not_applicable(board,
                                not_applicable_records(not_applicable or []))
    out = write_outputs(board, runs, Path(sweep) / "leaderboard", title=f"dp-arena: {experiment}")
    if parent:
        log_parent_headline(tracking_uri, parent, board)
    print()
    title = f"Leaderboard: {experiment} (this sweep)"
    if board_format() == "text":  # a terminal: plain text within 120 columns
        print(render_terminal(board, title, files=str(Path(sweep) / "leaderboard" /
                                                      "leaderboard.md")))
    else:
        print(render_markdown(board, title=title))
    print(f"\nwritten to {Path(sweep) / 'leaderboard'}: {', '.join(Path(p).name for p in out)}")
    uri = without_credentials(tracking_uri or "")
    browse = ("mlflow ui --backend-store-uri sqlite:///mlflow.db" if not uri
              or uri.startswith("sqlite:") else uri)
    print(f"every run of the experiment: dp-arena-board --experiment '{experiment}'"
          f"{' --tracking-uri ' + uri if uri.startswith('http') else ''}\nbrowse: {browse}")
    return [Path(p) for p in out]


def log_parent_headline(tracking_uri: str | None, parent: str, board: Any) -> None:
    """The winner per epsilon (metrics, tags) and the board as an MLflow table on the parent
    run (:mod:`harness.report.headline`); a failure is a warning, the board files remain."""
    from harness.report.headline import log_headline
    from harness.report.tracking import client_for

    try:
        log_headline(client_for(tracking_uri), parent, board)
    except Exception as exc:  # noqa: BLE001 - the board is printed and written regardless
        print(f"warning: could not log the headline on the sweep's parent run: "
              f"{type(exc).__name__}", file=sys.stderr)


def not_applicable_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One board record per distinct n/a (mechanism, settings, epsilon, delta, dataset): the
    trials of an n/a job are one row."""
    seen: dict[tuple, dict[str, Any]] = {}
    for r in records:
        row = dict(r.get("row") or {}, reason=r.get("message", ""))
        key = tuple(str(row.get(k)) for k in ("mechanism", "hyperparameters", "epsilon",
                                              "delta", "dataset", "accountant"))
        seen.setdefault(key, row)
    return list(seen.values())
