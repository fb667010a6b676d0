"""The final stage of a tuning search sweep (``tuning=public`` or ``oracle``), in the launching
process after the search's jobs ended.

- :func:`summarize_search`: one row per setting tried (mean objective, runs, failures);
- :func:`choose_setting`: the setting with the best mean objective, and why;
- :func:`final_stage`: says the choice, writes ``<sweep>/tuning/`` (``search.csv``,
  ``choice.json``, ``final_outcomes.json``) and scores the chosen setting on the private data
  once per ``tuning.final_trials``, each a normal run (:func:`dp_arena.sweep.job.execute_job`)
  tagged with what was chosen and why, the search table attached.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, open_dict

from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.run.config import RunConfig, parse_run_config
from dp_arena.run.tuning import setting_label
from dp_arena.sweep.job import RANKING_PREFERENCE, execute_job, report_job
from dp_arena.sweep.records import Outcome, write_outcomes


def summarize_search(outcomes: list[Outcome]) -> pd.DataFrame:
    """One row per setting tried: mean objective, n runs, failures."""
    rows = []
    for o in outcomes:
        ok = o.status in ("FINISHED", "SKIPPED") and o.objective is not None \
            and math.isfinite(o.objective)
        rows.append({"setting": setting_label(dict(o.setting)),
                     "objective": o.objective if ok else math.nan, "ok": ok})
    frame = pd.DataFrame(rows, columns=["setting", "objective", "ok"])
    if frame.empty:
        return pd.DataFrame(columns=["setting", "mean", "n", "failed"])
    table = frame.groupby("setting").agg(mean=("objective", "mean"), n=("ok", "sum"),
                                         runs=("ok", "size")).reset_index()
    table["failed"] = table["runs"] - table["n"]
    return table.drop(columns="runs").sort_values("mean", ascending=False,
                                                  na_position="last").reset_index(drop=True)


def choose_setting(outcomes: list[Outcome], objective: str, view: str) -> tuple[
        dict[str, Any], str, pd.DataFrame]:
    """The setting with the best mean objective over its search runs, why, and the table."""
    table = summarize_search(outcomes)
    ok = table.dropna(subset=["mean"])
    if ok.empty:
        raise ConfigError("every tuning run failed: nothing to choose from",
                          "see the failures above")
    best = ok.iloc[0]
    setting = next(o.setting for o in outcomes if setting_label(dict(o.setting)) == best["setting"])
    others = "; ".join(f"{r.setting} {r.mean:.1f} (n={r.n})" for r in ok.iloc[1:6].itertuples())
    reason = (f"best mean {objective} on the {view} view: {best['setting']} "
              f"{best['mean']:.1f} over {int(best['n'])} run(s), out of {len(ok)} setting(s) "
              f"tried{'; next: ' + others if others else ''}")
    return dict(setting), reason, table


def base_config(config: DictConfig) -> RunConfig:
    """The search sweep's config (without the ``hydra`` node) as a run config."""
    copy = config.copy()
    with open_dict(copy):
        copy.pop("hydra", None)
    return parse_run_config(copy)


def final_stage(config: DictConfig, outcomes: list[Outcome], sweep_dir: Path) -> list[Outcome]:
    """Choose the best setting of a tuning search, say why, and score it on the private data
    once per ``tuning.final_trials``; returns those runs' outcomes."""
    base = base_config(config)
    tuning = base.tuning
    view = "public" if tuning.mode == "public" else "private (oracle: NOT private)"
    objective = tuning.objective or next(
        (k for k in RANKING_PREFERENCE for o in outcomes if k in o.scores), "the ranking score")
    try:
        setting, reason, table = choose_setting(outcomes, objective, view)
    except DPArenaError as exc:
        print(f"\ntuning: {exc}", file=sys.stderr)
        return [Outcome("FAILED", "tuning", message=str(exc))]
    out = sweep_dir / "tuning"
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "search.csv", index=False)
    chosen = setting_label(setting)
    (out / "choice.json").write_text(json.dumps({"mode": tuning.mode, "chosen": setting,
                                                 "reason": reason}, indent=1, default=str))
    print(f"\ntuning ({tuning.mode}): chose {chosen}\n  why: {reason}\n"
          f"  all settings: {out / 'search.csv'}\n")
    finals = []
    for trial in tuning.final_trials or [0]:
        rc = replace(base.replaced(
            mechanism={**base.settings.mechanism, **setting},
            tuning=replace(tuning, stage="final", chosen=chosen, reason=reason),
            trial=int(trial)), sweep=str(sweep_dir))
        outcome = execute_job(rc, swept=sorted(setting))
        report_job(outcome)
        finals.append(outcome)
        attach_search_table(outcome, out / "search.csv")
    write_outcomes(out / "final_outcomes.json", finals)
    return finals


def attach_search_table(outcome: Outcome, table: Path) -> None:
    """Log the search table next to a final run's own artifacts (best effort)."""
    if outcome.status != "FINISHED" or not outcome.run_id:
        return
    from dp_arena.report.tracking import client_for

    try:
        client_for(outcome.tracking_uri).log_artifact(outcome.run_id, str(table), "tuning")
    except Exception as exc:  # noqa: BLE001 - the tags already say what was chosen and why
        print(f"warning: could not attach the search table: {exc}", file=sys.stderr)
