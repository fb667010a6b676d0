"""Leaderboard statistics: MLflow runs -> ranked tables (rendered by :mod:`dp_arena.report.render`,
plotted by :mod:`dp_arena.report.plots`).

**Groups.** Runs are grouped by everything that changes the guarantee, the data or the score
(``GROUP``): epsilon, delta, the privacy unit, the dataset (``dataset_id``: config + keyed data
fingerprint, so two CSVs of one name are two datasets), the accountant, the mechanism, its
hyperparameters label, the tuning mode, the noise mode, the ``large_delta`` and
``private_tables`` flags, and the settings of the ranking metric (``metric_key/<family>``).
Older runs without a tag get its default ("" or ``secret``/``false``), so they still build a
board (never pooled with runs that carry the tag). Runs with the same content key
(``run_key``) count once, and then each (group, trial) counts once: the latest finished run,
else the latest attempt, so re-running a sweep, resuming it or re-running it with an extra
metric (which changes ``run_key``) never inflates ``n``, and a failure later redone
successfully is no longer shown as failed. Each group reports the mean, standard deviation, 95%
confidence interval (Student t) and ``n`` over trials of the ranking metric, the means of every
other score, seconds, peak memory and the epsilon actually spent (from the ledger). Failed runs
are failed rows with their reason, never a silent gap.

**Ranks.** Rows are ranked only against like rows: the same (epsilon, delta, privacy unit,
dataset_id, schema digest, ranking-metric settings) -- a *pool* (different accountants are
compared on purpose; rows of different schemas never are: a coarser schema can score higher). Only differentially private, untuned-or-honestly-tuned rows are ranked; reference
rows (``resample``, ``public_only``, ``uniform``), ``oracle``-tuned rows, ``noise=replayable``
rows (not a DP release to holders of the local key) and ``large_delta`` rows are shown, marked,
set apart and never ranked; ``private_tables`` rows are ranked but marked. Ranks follow the
means (:mod:`dp_arena.report.ranks`): in order of their mean, a row shares the rank of the rows
above it (``2=``) when no test separates it from any of them -- a two-sided paired t-test over
the trials both rows share (Welch's t-test when they share fewer than two) at level ``alpha``
(0.05; no multiple-comparison correction) -- else it starts a new rank (its place: 1, 1, 3).
A worse mean never ranks above a better one. A row with a single trial has no confidence
interval, so it is not ranked (and never called tied).

**Overall.** As the challenge ranked: per setting, the mean over its pool's epsilons (every
epsilon on the board with the same dataset, unit, delta and metric settings) of the score; its
interval comes from the per-trial means across epsilons (trials paired by index), and the same
significance rule ranks it within the pool. A setting missing an epsilon is incomplete,
unranked. The overall table carries no epsilon spent (a mean over epsilons is no spend; each
epsilon's table has its own).

**Order.** Within a pool, every row by its mean, best first, ranked or not
(:func:`rank_order`); so ranks never decrease down a pool.

**Schemas, utility and risk.** A row carries its runs' keyed schema digest
(``schema_digest``, part of its pool; ``schema_digests`` as the notes read it) and their
``schema_quality``, from which
:mod:`dp_arena.report.schema_notes` writes the board's notes about schemas; the mean over trials
of every score and, for ``CI_METRICS`` (:mod:`dp_arena.report.scores`: ``ml_efficacy/score``,
``membership/auc``, ...), the half-width of its 95% CI (``ci95:<metric>``); and, when runs
logged a membership attack, the bound its claimed budget implies on the attack's TPR and the
mark ``MARK_BEATS_BOUND`` where the attack beats it (:func:`dp_arena.report.risk.with_risk_bounds`:
empirical risk, not a DP guarantee). ``board.attrs`` keeps, per headline score other than the
ranking one (``HEADLINE_SCORES``: marginals, held-out utility, risks), each row's per-trial
values (``score_values``) and the score's direction (``score_lower``), from which
:mod:`dp_arena.report.verdict` names the winner under each score by the same rule.

**Output.** Columns that tell rows apart (dataset, data id, unit, delta, noise, metric
settings) are shown in Markdown/HTML only when they vary on the board, and a metric family
that applied to no row with a finished run (:func:`inapplicable_everywhere`: challenge and
frequent patterns on tabular data) has no column, only one line naming it; the CSV has them
all.
Every Markdown cell is escaped (``md_escape``); every CSV text cell that a spreadsheet could
read as a formula is prefixed with ``'`` (``csv_safe``, OWASP CSV-injection guidance); every
HTML cell is escaped by pandas Styler (``escape="html"``) and the page by jinja2 autoescaping.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from dp_arena.errors import DPArenaError
from dp_arena.report.direction import DIRECTION_COLUMN, ranks_lower, tagged_lower_keys, tagged_metrics
from dp_arena.report.marks import (  # noqa: F401 - the marks' names are read from here too
    CLAIM_READS_TAG,
    ISOLATION_TAG,
    MARK_DECLARED,
    MARK_LARGE_DELTA,
    MARK_LEGEND,
    MARK_PRIVATE_TABLES,
    MARK_REPLAYABLE,
    MARK_SCHEMA_PRIVATE,
    group_marks,
)
from dp_arena.report.ranks import ALPHA, compare, mean_order_ranks  # noqa: F401 - read from here too
from dp_arena.report.record import SAMPLE_FRACTION_TAG, TAG_FIELDS, RunRecord
from dp_arena.report.risk import with_risk_bounds
from dp_arena.report.scores import CI_METRICS, CI_PREFIX, HEADLINE_SCORES, owner_side_metrics
from dp_arena.report.tracking import INF_THRESHOLD, METRIC_NA_TAG, client_for

#: Rows ranked against each other share these (plus epsilon): rows of different schemas
#: (``schema_digest``) are never ranked or tied together.
POOL = ["dataset_id", "schema_digest", "privacy_unit", "delta", "metric_setting"]
#: One board row per distinct value of these; epsilon first, the rest is the setting.
GROUP = ["epsilon", *POOL, "dataset", "accountant", "mechanism", "hyperparameters", "tuning",
         "noise", "sampler", "large_delta", "private_tables"]
SETTING = GROUP[1:]
#: Tag columns the board fills on older runs that lack the tag: these record fields, with the
#: run record's defaults (:data:`~dp_arena.report.record.TAG_FIELDS`), and two columns that are
#: not text fields of the record (``delta``, ``failure_reason``: "" when absent).
FILLED_TAGS = ("tuning", "private", "reference", "tuning_chosen", "accountant", "privacy_unit",
               "dataset", "dataset_id", "noise", "sampler", "private_tables", "large_delta",
               "metrics_key", "schema_digest", "schema_quality")
TAG_DEFAULTS: tuple[tuple[str, str], ...] = (
    *((tag, default) for _, tag, default in TAG_FIELDS if tag in FILLED_TAGS),
    ("delta", ""), ("failure_reason", ""))
METRIC_KEY_PREFIX = "metric_key:"  # run frame column of the tag ``metric_key/<name>``
METRIC_SETTINGS_PREFIX = "metric_settings:"  # run frame column of ``metric_settings/<name>``
METRIC_NA_PREFIX = "na:"  # run frame / board column of the tag ``metric_na/<name>`` (reason)
#: Distinguishing columns shown in Markdown/HTML when they vary: (column, header).
#: (The noise mode needs no column: replayable rows carry a mark.)
VARYING = (("dataset", "dataset"), ("dataset_id", "data id"), ("schema_digest", "schema"),
           ("privacy_unit", "unit"),
           ("delta", "delta"), ("metric_setting", "metric settings"), ("sampler", "sampler"))
RANKING_PREFERENCE = ("challenge/overall", "kmarginal/score")
#: Numbers a run logs as a tag when infinite (``resample``'s spend; a schema proposed from the
#: private data, whose spend and total are infinite).
INFINITE_TAGS = ("epsilon_spent", "schema_epsilon", "epsilon_total", "schema_delta",
                 "delta_total")
SHOWN_EXTRAS = ("epsilon_spent", "schema_epsilon", "epsilon_total", "seconds", "peak_memory_mb",
                "n_synthetic_rows")
REFERENCE_NOTES = {"ceiling": " (non-private ceiling)", "public": " (public data only)",
                   "floor": " (floor)"}
#: reference mechanisms whose note is not their kind's (a sample is no ceiling)
MECHANISM_NOTES = {"subsample": " (non-private sample)"}


# ----- loading ------------------------------------------------------------------------------
def load_runs(experiment: str, tracking_uri: str | None = None, sweep: str | None = None,
              run_ids: list[str] | None = None) -> pd.DataFrame:
    """One row per MLflow run of ``experiment`` (optionally only one sweep's runs, or only
    the runs ``run_ids``)."""
    client = client_for(tracking_uri, must_exist=True)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = sorted(e.name for e in client.search_experiments())
        raise DPArenaError(f"no experiment named {experiment!r} in {client.tracking_uri}",
                           f"use one of {names}" if names else "run dp-arena first")
    filt = f"tags.sweep = '{sweep}'" if sweep else ""
    wanted = set(run_ids) if run_ids is not None else None
    rows, token = [], None
    while True:
        page = client.search_runs([exp.experiment_id], filter_string=filt, max_results=1000,
                                  page_token=token)
        rows.extend(run_row(r) for r in page if "mechanism" in r.data.tags
                    and r.data.tags.get("kind", "run") == "run"  # not a sweep or audit run
                    and (wanted is None or r.info.run_id in wanted))
        token = page.token
        if not token:
            break
    return pd.DataFrame(rows)


def run_row(r) -> dict[str, Any]:
    """The leaderboard's view of one MLflow run: its record read back from its tags
    (:meth:`dp_arena.report.record.RunRecord.from_tags`, older runs' missing tags as their
    defaults), what became of it (status, failure reason, metrics that did not apply) and its
    numbers."""
    tags = r.data.tags
    record = RunRecord.from_tags(tags)
    return {
        "run_id": r.info.run_id, "status": r.info.status, "start_time": r.info.start_time,
        **record.board_fields(),
        "run_key": record.run_key or r.info.run_id,
        "failure_reason": tags.get("failure_reason", ""),
        "claim_reads": tags.get(CLAIM_READS_TAG, ""),
        "contestant_isolation": tags.get(ISOLATION_TAG, ""),
        SAMPLE_FRACTION_TAG: tags.get(SAMPLE_FRACTION_TAG, ""),
        DIRECTION_COLUMN: tagged_lower_keys(tags), "direction_metrics": tagged_metrics(tags),
        **{METRIC_KEY_PREFIX + name: key for name, key in record.metric_keys},
        **{METRIC_SETTINGS_PREFIX + name: text for name, text in record.metric_settings},
        **{METRIC_NA_PREFIX + k[len(METRIC_NA_TAG):]: v for k, v in tags.items()
           if k.startswith(METRIC_NA_TAG)},
        **{k: (math.inf if v > INF_THRESHOLD else v) for k, v in r.data.metrics.items()},
        # an infinite number is logged as a tag (MLflow has no infinite metric)
        **{k: float(tags[k]) for k in INFINITE_TAGS if tags.get(k) in ("inf", "-inf")},
    }


# ----- helpers ------------------------------------------------------------------------------
def score_columns(runs: pd.DataFrame) -> list[str]:
    """The logged scores (``family/name`` columns; not the ``metric_key`` tags)."""
    return sorted(c for c in runs.columns
                  if "/" in c and not c.startswith(("metric_key", METRIC_KEY_PREFIX,
                                                    METRIC_NA_PREFIX, "metric_settings",
                                                    METRIC_SETTINGS_PREFIX)))


def metrics_not_applicable(runs: pd.DataFrame) -> dict[str, str]:
    """Metric -> why it did not apply (the runs' ``metric_na/<metric>`` tags; reasons of
    several runs joined)."""
    out = {}
    for col in (c for c in runs.columns if c.startswith(METRIC_NA_PREFIX)):
        reasons = sorted(set(runs[col].dropna().astype(str)) - {""})
        if reasons:
            out[col[len(METRIC_NA_PREFIX):]] = "; ".join(reasons)
    return out


def inapplicable_everywhere(board: pd.DataFrame) -> dict[str, str]:
    """Metric family -> why it did not apply, for the families that applied to no row of
    ``board`` with a finished run (e.g. ``challenge`` and ``frequent_patterns`` on tabular
    data): their columns say only ``n/a``, so the tables leave them out and one line names
    them. Rows without a finished run (failed, n/a) neither show nor hide a column."""
    finished = board[pd.to_numeric(board.get("n", pd.Series(0, index=board.index)),
                                   errors="coerce").fillna(0) > 0]
    if finished.empty:
        return {}
    out = {}
    for col in (c for c in finished.columns if c.startswith(METRIC_NA_PREFIX)):
        reasons = finished[col].fillna("").astype(str)
        if (reasons != "").all():
            out[col[len(METRIC_NA_PREFIX):]] = "; ".join(sorted(set(reasons)))
    return out


def ranking_metric(runs: pd.DataFrame, metric: str | None = None) -> str:
    """``metric`` if given, else the first of ``RANKING_PREFERENCE`` that every run scored
    (a board mixing data where the challenge metric does not apply ranks by k-marginal), else
    the first of them any run scored, else the first score column."""
    cols = score_columns(runs)
    if metric:
        if metric not in cols:
            what = ("is a run figure, not a score" if metric in runs.columns
                    else "was not logged by these runs")
            raise DPArenaError(f"metric {metric!r} {what}", f"use one of {cols}")
        return metric
    for preferred in RANKING_PREFERENCE:
        if preferred in cols and runs[preferred].notna().all():
            return preferred
    for preferred in RANKING_PREFERENCE:
        if preferred in cols:
            return preferred
    if not cols:
        raise DPArenaError("these runs logged no scores", "check that the runs finished")
    return cols[0]


def board_ranks_lower(board: pd.DataFrame) -> bool:
    """Whether the board's ranking score ranks lower-is-better (set when it was built)."""
    return bool(board.attrs.get("lower_is_better", False))


def delta_text(value: object) -> str:
    """The delta tag as one canonical string ("" when unknown), so 1e-05 and "1e-05" match."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    try:
        return f"{float(value):g}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


def with_defaults(runs: pd.DataFrame) -> pd.DataFrame:
    """Older runs lack some tags: fill them so grouping works. A ``metric_key/<name>`` column
    (a run frame built straight from tags) becomes ``metric_key:<name>``."""
    runs = runs.rename(columns={c: METRIC_KEY_PREFIX + c.split("/", 1)[1] for c in runs.columns
                                if c.startswith("metric_key/")}).copy()
    runs = runs.rename(columns={c: METRIC_SETTINGS_PREFIX + c.split("/", 1)[1]
                                for c in runs.columns if c.startswith("metric_settings/")})
    for col, default in TAG_DEFAULTS:
        if col not in runs:
            runs[col] = default
        runs[col] = runs[col].fillna(default).astype(str)
    runs["delta"] = runs["delta"].map(delta_text)
    for col in ("noise", "private_tables", "large_delta"):
        runs[col] = runs[col].str.lower()
    if "run_key" not in runs:
        runs["run_key"] = runs["run_id"]
    return runs


def with_metric_setting(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Add ``metric_setting``: the ranking metric family's settings as written
    (``metric_settings/<family>``, e.g. ``k=3``), else their hash (older runs), else ""."""
    family = metric.split("/", 1)[0]
    col = METRIC_KEY_PREFIX + family
    setting = runs[col].fillna("").astype(str) if col in runs else pd.Series("", runs.index)
    readable = METRIC_SETTINGS_PREFIX + family
    if readable in runs:
        text = runs[readable].fillna("").astype(str)
        setting = text.where(text != "", setting)
    return runs.assign(metric_setting=setting)


def resolve_keys(runs: pd.DataFrame) -> pd.DataFrame:
    """One run per content key: the latest FINISHED one if any, else the latest attempt."""
    ordered = runs.assign(_done=runs["status"] == "FINISHED").sort_values(["_done", "start_time"])
    return ordered.drop_duplicates("run_key", keep="last").drop(columns="_done")


def resolve_trials(runs: pd.DataFrame) -> pd.DataFrame:
    """One run per (group, trial): the latest FINISHED one if any, else the latest attempt.
    Needs ``metric_setting`` (``with_metric_setting``); ``run_key`` alone is not enough, as
    it changes when a metric is added to the run."""
    ordered = runs.assign(_done=runs["status"] == "FINISHED").sort_values(["_done", "start_time"])
    return ordered.drop_duplicates([*GROUP, "trial"], keep="last").drop(columns="_done")


def latest_per_key(runs: pd.DataFrame) -> pd.DataFrame:
    """Finished runs, one per content key (the most recent)."""
    done = runs[runs["status"] == "FINISHED"]
    return done.sort_values("start_time").drop_duplicates("run_key", keep="last")


def mean_ci(values: np.ndarray) -> tuple[float, float, float]:
    """(mean, std, half-width of the 95% Student-t interval; NaN for n < 2)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    mean = float(values.mean())
    if n < 2:
        return mean, math.nan, math.nan
    std = float(values.std(ddof=1))
    from scipy import stats  # on first use: scipy.stats is slow to import for every command

    return mean, std, float(stats.t.ppf(0.975, n - 1) * std / math.sqrt(n))


def rankable(kind: str, noise: str, large_delta: str) -> bool:
    """Only DP rows with secret noise and an ordinary delta are ranked."""
    return kind == "dp" and noise != "replayable" and large_delta != "true"


def row_kind(reference: str, private: str, tuning: str) -> str:
    """``dp`` (ranked), ``reference`` or ``non-private`` (shown, never ranked)."""
    if reference:
        return "reference"
    if str(private).lower() == "false" or tuning.startswith("oracle"):
        return "non-private"
    return "dp"


# ----- the board ----------------------------------------------------------------------------
def build_leaderboard(runs: pd.DataFrame, metric: str | None = None,
                      alpha: float = ALPHA) -> pd.DataFrame:
    """The ranked table: one row per ``GROUP`` (see the module docstring). ``board.attrs``:
    ``metric``, ``alpha`` and ``values`` (per group tuple: trial -> score)."""
    if runs.empty:
        raise DPArenaError("no runs to rank", "run dp-arena first")
    runs = with_defaults(runs)
    done = runs[runs["status"] == "FINISHED"]
    key = ranking_metric(done if not done.empty else runs, metric)
    lower = ranks_lower(key, runs)
    higher = not lower
    # (group, trial) is finer than run_key (same content key => same group and trial), and
    # never merges runs whose tags differ even if an older runner gave them one key
    keyed = resolve_trials(with_metric_setting(runs, key))
    headline = [s for s in HEADLINE_SCORES if s != key and s in keyed]
    rows, values = [], []
    score_values: dict[str, dict[tuple, dict[int, float]]] = {s: {} for s in headline}
    for group_key, group in keyed.groupby(GROUP, sort=True, dropna=False):
        row, trial_values = group_row(dict(zip(GROUP, group_key)), group, key)
        rows.append(row)
        values.append(trial_values)
        for score in headline:
            per_trial = trial_scores(group, score)
            if per_trial:
                score_values[score][tuple(group_key)] = per_trial
    board = pd.DataFrame(rows)
    board["rank"], board["tied"] = math.nan, False
    for _pool, part in board.groupby(["epsilon", *POOL], sort=False, dropna=False):
        at = part.index[part["ranked"]].tolist()
        ranks, tied = mean_order_ranks([values[i] for i in at], higher, alpha,
                                       board.loc[at, "mean"].tolist())
        board.loc[at, "rank"], board.loc[at, "tied"] = ranks, tied
    board["rank"] = board["rank"].astype("Int64")
    board["_values"] = values
    board = sort_pools(board, ["epsilon"], higher)
    lead = ["epsilon", "rank", "tied", "mechanism", "hyperparameters", "tuning", "kind",
            "marks", "mean", "ci95", "std", "n", "failed", "unfinished"]
    rest = [c for c in board.columns if c not in lead and c != "_values"]
    out = board[lead + rest].copy()
    out = with_risk_bounds(out)
    out.attrs.update(metric=key, alpha=alpha, lower_is_better=lower,
                     owner_side=owner_side_metrics(runs, METRIC_KEY_PREFIX),
                     score_values={s: v for s, v in score_values.items() if v},
                     score_lower={s: ranks_lower(s, runs) for s in headline
                                  if score_values[s]},
                     values={tuple(r[c] for c in GROUP): v
                             for r, v in zip(board.to_dict("records"), board["_values"])})
    return out


def sort_pools(frame: pd.DataFrame, first: list[str], higher: bool) -> pd.DataFrame:
    """Rows by ``first``, then pool (delta numerically, smallest first), then within a pool
    in ``rank_order``: ranked rows by rank (a ``1=`` row never below a ``2`` row), the unranked
    rows (references, set-apart rows) placed among them by their mean."""
    pool = [*first, "dataset_id", "schema_digest", "privacy_unit", "_delta", "metric_setting"]
    keyed = frame.assign(_delta=pd.to_numeric(frame["delta"], errors="coerce"))
    keyed = keyed.sort_values(pool, na_position="last", kind="stable")
    order = [i for _key, part in keyed.groupby(pool, sort=False, dropna=False)
             for i in rank_order(part, higher)]
    return keyed.loc[order].drop(columns="_delta").reset_index(drop=True)


def rank_order(part: pd.DataFrame, higher: bool) -> list[Any]:
    """The index of one pool's rows in display order: by mean, best first (ranked and
    unranked rows alike; rows of one mean by rank); rows without a mean last."""
    by = ["mean", "rank"] if "rank" in part else ["mean"]
    return list(part.sort_values(by, ascending=[not higher, True][:len(by)],
                                 na_position="last", kind="stable").index)


def failure_summary(reasons: Iterable[str]) -> str:
    """The failure reasons of a row's runs, most frequent first (ties in text order): one
    reason as it is; several as their first lines, each with how many runs gave it, e.g.
    ``time limit of 60 s exceeded (2 runs); MemoryError (1 run)``, so the status cell (which
    shows the first line) names the commonest reason."""
    counts = Counter(reason for reason in reasons if reason)
    if len(counts) <= 1:
        return next(iter(counts), "")
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return "; ".join(f"{(reason.strip().splitlines() or [''])[0]} "
                     f"({n} run{'s' if n > 1 else ''})" for reason, n in ordered)


def group_row(ident: dict[str, Any], group: pd.DataFrame,
              key: str) -> tuple[dict[str, Any], dict[int, float] | None]:
    """One board row (identity, kind, marks, counts, statistics) and its trial -> score."""
    ok = group[group["status"] == "FINISHED"]
    failed = group[group["status"] == "FAILED"]
    unfinished = group[~group["status"].isin(["FINISHED", "FAILED"])]
    kind = row_kind(group["reference"].iloc[0], group["private"].iloc[0], ident["tuning"])
    row: dict[str, Any] = {
        **ident, "kind": kind,
        "marks": "; ".join(group_marks(group, ident)),
        "ranked": rankable(kind, ident["noise"], ident["large_delta"]),
        "reference": group["reference"].iloc[0],
        "chosen": "; ".join(sorted(set(group["tuning_chosen"]) - {""})),
        "n": len(ok), "failed": len(failed), "unfinished": len(unfinished),
        "running": int((unfinished["status"] == "RUNNING").sum()),
        "failure_reason": failure_summary(failed["failure_reason"].astype(str))[:300],
        "schema_digests": digests_of(group),
        "schema_quality": first_text(group, "schema_quality"),
        SAMPLE_FRACTION_TAG: first_text(group, SAMPLE_FRACTION_TAG)}
    if not (len(ok) and key in ok and ok[key].notna().any()):
        row["mean"] = row["std"] = row["ci95"] = math.nan
        return row, None
    scored = ok.dropna(subset=[key])
    row["mean"], row["std"], row["ci95"] = mean_ci(scored[key].to_numpy())
    trial_values = dict(zip(scored["trial"].astype(int), scored[key].astype(float)))
    for col in score_columns(ok) + [c for c in SHOWN_EXTRAS if c in ok]:
        if col != key:
            row[col] = float(ok[col].mean())
    for col in (c for c in CI_METRICS if c in ok and c != key):
        row[CI_PREFIX + col] = mean_ci(ok[col].dropna().to_numpy())[2] \
            if ok[col].notna().any() else math.nan
    row.update({METRIC_NA_PREFIX + m: r for m, r in metrics_not_applicable(ok).items()})
    return row, trial_values


def trial_scores(group: pd.DataFrame, score: str) -> dict[int, float]:
    """Trial -> ``score`` of a row's finished runs that logged it ({} when none did)."""
    ok = group[(group["status"] == "FINISHED")]
    if score not in ok:
        return {}
    ok = ok.dropna(subset=[score])
    return dict(zip(ok["trial"].astype(int), ok[score].astype(float)))


def digests_of(group: pd.DataFrame) -> str:
    """The distinct ``schema_digest`` tags of a row's runs, comma-separated ("" for older runs
    without the tag)."""
    if "schema_digest" not in group:
        return ""
    return ",".join(sorted(set(group["schema_digest"].fillna("").astype(str)) - {""}))


def first_text(group: pd.DataFrame, column: str) -> str:
    """The first non-empty value of a text tag among a row's runs ("" when none has it)."""
    if column not in group:
        return ""
    values = [v for v in group[column].fillna("").astype(str) if v]
    return values[0] if values else ""


def overall_board(board: pd.DataFrame) -> pd.DataFrame:
    """Per setting, the mean over its pool's epsilons, with CI over per-trial means, ranked
    within the pool (same dataset, unit, delta and metric settings)."""
    key = board.attrs.get("metric", "score")
    values: dict = board.attrs.get("values", {})
    higher = not board_ranks_lower(board)
    pool_eps = {pool: sorted(part["epsilon"].unique())
                for pool, part in board.groupby(POOL, sort=True, dropna=False)}
    rows, per_row_values = [], []
    for setting, part in board.groupby(SETTING, sort=True, dropna=False):
        ident = dict(zip(SETTING, setting))
        epsilons = pool_eps[tuple(ident[c] for c in POOL)]
        have = {e: values.get((e, *setting)) for e in epsilons}
        complete = all(have.values())
        first = part.iloc[0]
        row = {**ident, "kind": first["kind"], "marks": first["marks"],
               "ranked": bool(first["ranked"]), "reference": first["reference"],
               "epsilons": ",".join(f"{e:g}" for e in epsilons if have[e]),
               "failed": int(part["failed"].sum()), "mean": math.nan, "ci95": math.nan,
               "std": math.nan, "n": 0, "complete": complete,
               # for the status column: runs not finished, still running, failure reasons
               "unfinished": int(part["unfinished"].sum()),
               "running": int(part["running"].sum()) if "running" in part else 0,
               "failure_reason": "; ".join(sorted(set(part["failure_reason"].astype(str))
                                                  - {""}))[:300]}
        trial_means = None
        if complete:
            row["mean"] = float(np.mean([part.loc[part["epsilon"] == e, "mean"].iloc[0]
                                         for e in epsilons]))
            trials = set.intersection(*(set(v) for v in have.values()))  # type: ignore[arg-type]
            trial_means = {t: float(np.mean([have[e][t] for e in epsilons]))  # type: ignore[index]
                           for t in sorted(trials)}
            if trial_means:
                _m, row["std"], row["ci95"] = mean_ci(np.array(list(trial_means.values())))
                row["n"] = len(trial_means)
        # not epsilon_spent: a mean of the spends at epsilon 1 and 10 is no spend at all
        for col in ("seconds", "peak_memory_mb"):
            if col in part:
                row[col] = float(part[col].mean())
        rows.append(row)
        per_row_values.append(trial_means if complete else None)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["rank"], out["tied"] = math.nan, False
    for _pool, part in out.groupby(POOL, sort=False, dropna=False):
        ranked = part.index[part["ranked"]].tolist()
        ranks, tied = mean_order_ranks([per_row_values[i] for i in ranked], higher,
                                       board.attrs.get("alpha", ALPHA),
                                       out.loc[ranked, "mean"].tolist())
        out.loc[ranked, "rank"], out.loc[ranked, "tied"] = ranks, tied
    out["rank"] = out["rank"].astype("Int64")
    out = sort_pools(out, [], higher)
    lead = ["rank", "tied", "mechanism", "hyperparameters", "tuning", "kind", "marks", "mean",
            "ci95", "std", "n", "epsilons", "complete", "failed"]
    out = out[lead + [c for c in out.columns if c not in lead]]
    out.attrs.update(metric=key, epsilons=sorted(board["epsilon"].unique()),
                     lower_is_better=not higher)
    return out


def tuning_gap(board: pd.DataFrame) -> pd.DataFrame:
    """Per mechanism and epsilon: the score of each tuning mode side by side (untuned = the
    default settings, else the best untuned row) and the gaps between modes."""
    if not (board["tuning"] != "").any():
        return pd.DataFrame()
    rows = []
    for (eps, *pool, mech), part in board.groupby(["epsilon", *POOL, "mechanism"], sort=True,
                                                  dropna=False):
        if not (part["tuning"] != "").any():
            continue
        row: dict[str, Any] = {"epsilon": eps, **dict(zip(POOL, pool)), "mechanism": mech}
        untuned = part[part["tuning"] == ""].dropna(subset=["mean"])
        default = untuned[untuned["hyperparameters"] == "-"]
        row["untuned"] = float((default if len(default) else untuned)["mean"].max()) \
            if len(untuned) else math.nan
        for mode, label in (("public", "public"), ("dp_select", "dp_select"),
                            ("oracle", "oracle (non-private)")):
            hit = part[part["tuning"] == label].dropna(subset=["mean"])
            row[mode] = float(hit["mean"].iloc[0]) if len(hit) else math.nan
            row[f"{mode}_setting"] = (hit["chosen"].iloc[0] or hit["hyperparameters"].iloc[0]) \
                if len(hit) else ""
        row["oracle_minus_public"] = row["oracle"] - row["public"]
        row["oracle_minus_dp_select"] = row["oracle"] - row["dp_select"]
        row["public_minus_untuned"] = row["public"] - row["untuned"]
        rows.append(row)
    return pd.DataFrame(rows)


#: Columns of a not-applicable row (``not_applicable_rows``); ``status`` is ``"n/a"``.
NOT_APPLICABLE_COLUMNS = ("epsilon", "rank", "tied", "mechanism", "hyperparameters", "tuning",
                          "kind", "marks", "mean", "ci95", "std", "n", "failed", "unfinished",
                          "ranked", "reference", "delta", "dataset", "status", "reason")


@dataclass(frozen=True)
class NotApplicableRow:
    """A mechanism that does not apply to a dataset, as the board shows it (public facts only:
    the setting, the budget, the dataset's name and unit, and why)."""

    mechanism: str
    epsilon: float
    hyperparameters: str = "-"
    delta: float | None = None
    dataset: str = ""
    accountant: str = ""
    privacy_unit: str = ""
    trial: int | None = None
    reason: str = ""

    @classmethod
    def of(cls, record: NotApplicableRow | Mapping[str, Any]) -> NotApplicableRow:
        """A row from itself or from a mapping with the same keys (missing ones defaulted)."""
        if isinstance(record, NotApplicableRow):
            return record
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in known})


def not_applicable_rows(records: Iterable[NotApplicableRow | Mapping[str, Any]]) -> pd.DataFrame:
    """Board rows for mechanisms that do not apply to a dataset (never run, never ranked).

    Each record is a :class:`NotApplicableRow` or a mapping with its keys (``mechanism``,
    ``hyperparameters``, ``epsilon``, ``delta``, ``dataset`` and ``reason``, e.g.
    ``{"mechanism": "archetype", "hyperparameters": "-", "epsilon": 1.0, "delta": 1e-9,
    "dataset": "adult", "reason": "needs user-level data"}``). The rows have the columns
    ``NOT_APPLICABLE_COLUMNS``: ``status`` ``"n/a"``, the ``reason``, ``kind`` ``"n/a"``, no
    scores (NaN), no rank (NA), ``n``/``failed``/``unfinished`` 0, ``delta`` as ``delta_text``.
    Append them with ``with_not_applicable``."""
    rows = [{"epsilon": float(r.epsilon), "rank": pd.NA, "tied": False,
             "mechanism": str(r.mechanism), "hyperparameters": str(r.hyperparameters),
             "tuning": "", "kind": "n/a", "marks": "", "mean": math.nan, "ci95": math.nan,
             "std": math.nan, "n": 0, "failed": 0, "unfinished": 0, "ranked": False,
             "reference": "", "delta": delta_text(r.delta),
             "dataset": str(r.dataset), "status": "n/a", "reason": str(r.reason)}
            for r in map(NotApplicableRow.of, records)]
    out = pd.DataFrame(rows, columns=list(NOT_APPLICABLE_COLUMNS))
    out["rank"] = out["rank"].astype("Int64")
    return out


def with_not_applicable(board: pd.DataFrame,
                        records: list[NotApplicableRow | Mapping[str, Any]]) -> pd.DataFrame:
    """``board`` with ``not_applicable_rows(records)`` after the rows of their epsilon (the
    board's ``attrs`` kept)."""
    return append_rows(board, not_applicable_rows(records)) if records else board


def append_rows(board: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``board`` with ``rows`` (e.g. ``not_applicable_rows``) after the rows of their epsilon,
    keeping the board's ``attrs`` (the ranking metric and per-trial values rendering needs)."""
    if rows.empty:
        return board
    out = pd.concat([board, rows], ignore_index=True)
    out = out.sort_values("epsilon", kind="stable").reset_index(drop=True)
    out.attrs.update(board.attrs)
    return out


def is_not_applicable(frame: pd.DataFrame) -> pd.Series:
    """Which rows of ``frame`` are not-applicable rows (``status == "n/a"``)."""
    if "status" not in frame:
        return pd.Series(False, index=frame.index)
    return frame["status"].eq("n/a").fillna(False).astype(bool)


def row_label(row: pd.Series | dict) -> str:
    note = REFERENCE_NOTES.get(row["reference"], "")
    return f"{row['mechanism']}{MECHANISM_NOTES.get(row['mechanism'], note) if note else ''}"


def varying_columns(frame: pd.DataFrame, metric: str) -> list[tuple[str, str]]:
    """The distinguishing columns (``VARYING``) whose value differs between rows of ``frame``:
    (column, header)."""
    family = metric.split("/")[0]
    return [(col, f"{family} settings" if col == "metric_setting" else head)
            for col, head in VARYING if col in frame and frame[col].nunique(dropna=False) > 1]
