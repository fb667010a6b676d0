"""Hydra callback that closes a sweep (it runs in the parent process, not in the workers).

- ``on_multirun_end``: reads every job's ``outcome.json``, prints the summary (finished,
  skipped because already finished, failed with reasons); after a ``public``/``oracle`` tuning
  search it chooses the setting, says why, and scores it on the private data; then prints the
  leaderboard of this sweep's runs (including skipped ones) and writes it under
  ``<sweep dir>/leaderboard``. Exits 1 if a scored run failed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict

from harness.cli.main import OUTCOME_FILE, RANKING_PREFERENCE


class SweepSummary(Callback):
    """Summary, tuning final stage and leaderboard of a sweep (see the module docstring)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        records = read_records(sweep_dir)
        tuning_mode = OmegaConf.select(config, "tuning.mode") or "none"
        searched = tuning_mode in ("public", "oracle") and \
            OmegaConf.select(config, "tuning.stage") == "search"
        print_summary(records, sweep_dir, "tuning runs" if searched else "runs")
        scored = records
        if searched:
            scored = final_stage(config, records, sweep_dir)
            print_summary(scored, sweep_dir, "scored runs of the chosen setting")
        for experiment, uri in experiments_of(scored):
            ids = [r["run_id"] for r in scored if r.get("run_id") and r["experiment"] == experiment]
            print_leaderboard(experiment, uri, str(sweep_dir), ids)
        if any(r["status"] == "FAILED" for r in scored):
            sys.exit(1)


def read_records(sweep_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(sweep_dir.glob(f"*/{OUTCOME_FILE}"))]


def print_summary(records: list[dict[str, Any]], sweep_dir: Path, what: str = "runs") -> None:
    failed = [r for r in records if r["status"] == "FAILED"]
    skipped = [r for r in records if r["status"] == "SKIPPED"]
    ok = len(records) - len(failed)
    extra = [f"{len(skipped)} already finished earlier (skipped)"] if skipped else []
    if failed:
        extra.append(f"{len(failed)} failed")
    print(f"\nsweep finished: {ok} of {len(records)} {what} succeeded"
          f"{', ' + ', '.join(extra) if extra else ''}  ({sweep_dir})")
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for r in failed:
        by_reason.setdefault(r.get("message") or "(no reason recorded)", []).append(r)
    for reason, runs in by_reason.items():
        more = f" (+{len(runs) - 1} more)" if len(runs) > 1 else ""
        # a run that started printed its whole reason already: one line here; a run refused
        # before it started is explained here, once
        lines = reason.splitlines()[:1] if all(r.get("run_id") for r in runs) \
            else reason.splitlines()
        print(f"  failed: {runs[0]['label']}{more}:\n" + "\n".join("    " + line
                                                             for line in lines),
              file=sys.stderr)


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
    from harness.cli.main import execute_job
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
                      run_ids: list[str] | None = None) -> None:
    """This sweep's leaderboard on stdout, and its files under ``<sweep>/leaderboard``."""
    from harness.report.leaderboard import build_leaderboard, load_runs
    from harness.report.render import render_markdown, write_outputs

    runs = load_runs(experiment, tracking_uri, run_ids=run_ids)
    if runs.empty:
        return
    board = build_leaderboard(runs)
    print()
    print(render_markdown(board, title=f"Leaderboard: {experiment} (this sweep)"))
    out = write_outputs(board, runs, Path(sweep) / "leaderboard", title=f"dp-arena: {experiment}")
    print(f"\nwritten: {', '.join(str(p) for p in out)}")
    uri = tracking_uri or ""
    browse = ("mlflow ui --backend-store-uri sqlite:///mlflow.db" if not uri
              or uri.startswith("sqlite:") else uri)
    print(f"every run of the experiment: dp-arena-board --experiment '{experiment}'"
          f"{' --tracking-uri ' + uri if uri.startswith('http') else ''}    browse: {browse}")
