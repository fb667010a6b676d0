"""Leaderboard: MLflow runs -> ranked tables (Markdown, CSV, HTML) and plots.

Runs are grouped by (epsilon, mechanism, hyperparameters, tuning mode). Runs with the same
content key (``run_key`` tag: same mechanism, settings, data, seed, trial and code) count once:
the latest finished one, else the latest attempt, so re-running or resuming a sweep never
inflates ``n`` and a failure later redone successfully is no longer shown as failed. Each group
reports the mean, standard deviation, 95% confidence interval (Student t) and ``n`` over trials
of the ranking metric, the means of every other score, seconds, peak memory and the epsilon
actually spent (from the ledger). Failed runs are failed rows with their reason, never a
silent gap.

**Ranks.** Only differentially private, untuned-or-honestly-tuned rows are ranked; reference
rows (``resample``, ``public_only``, ``uniform``) and ``oracle``-tuned rows are shown, set
apart, and never ranked. Within an epsilon, a row's rank is 1 + the number of rows that are
*significantly* better than it: a two-sided paired t-test over the trials both rows share
(Welch's t-test when they share fewer than two; plain comparison of means when either has a
single trial) at level ``alpha`` (0.05; no multiple-comparison correction). Rows that no test
separates share a rank and are marked tied (``2=``).

**Overall.** As the challenge ranked: the mean over the competition's epsilons (every epsilon
on the board) of each setting's score; its interval comes from the per-trial means across
epsilons (trials paired by index), and the same significance rule ranks it. A setting missing
an epsilon is listed as incomplete, unranked.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from harness.errors import DPArenaError
from harness.report.tracking import INF_THRESHOLD, client_for

GROUP = ["epsilon", "mechanism", "hyperparameters", "tuning"]
SETTING = ["mechanism", "hyperparameters", "tuning"]
RANKING_PREFERENCE = ("challenge/overall", "kmarginal/score")
LOWER_IS_BETTER_HINTS = ("relative_error", "tvd", "false_", "seconds", "memory", "rmse")
SHOWN_EXTRAS = ("epsilon_spent", "seconds", "peak_memory_mb", "n_synthetic_rows")
ALPHA = 0.05
REFERENCE_NOTES = {"ceiling": " (non-private ceiling)", "public": " (public data only)",
                   "floor": " (floor)"}


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
                    and (wanted is None or r.info.run_id in wanted))
        token = page.token
        if not token:
            break
    return pd.DataFrame(rows)


def run_row(r) -> dict[str, Any]:
    """The leaderboard's view of one MLflow run."""
    tags = r.data.tags
    return {
        "run_id": r.info.run_id, "status": r.info.status, "start_time": r.info.start_time,
        "mechanism": tags["mechanism"], "hyperparameters": tags.get("hyperparameters", "-"),
        "tuning": tags.get("tuning", ""), "private": tags.get("private", "true"),
        "epsilon": float(tags.get("epsilon", "nan")), "trial": int(tags.get("trial", 0)),
        "reference": tags.get("reference", ""), "run_key": tags.get("run_key", r.info.run_id),
        "failure_reason": tags.get("failure_reason", ""),
        "tuning_chosen": tags.get("tuning_chosen", ""),
        **{k: (math.inf if v > INF_THRESHOLD else v) for k, v in r.data.metrics.items()},
    }


# ----- helpers ------------------------------------------------------------------------------
def score_columns(runs: pd.DataFrame) -> list[str]:
    return sorted(c for c in runs.columns if "/" in c)


def ranking_metric(runs: pd.DataFrame, metric: str | None = None) -> str:
    cols = score_columns(runs)
    if metric:
        if metric not in cols:
            raise DPArenaError(f"metric {metric!r} was not logged by these runs",
                               f"use one of {cols}")
        return metric
    for preferred in RANKING_PREFERENCE:
        if preferred in cols:
            return preferred
    if not cols:
        raise DPArenaError("these runs logged no scores", "check that the runs finished")
    return cols[0]


def lower_is_better(metric: str) -> bool:
    return any(hint in metric for hint in LOWER_IS_BETTER_HINTS)


def with_defaults(runs: pd.DataFrame) -> pd.DataFrame:
    """Older runs lack some tags: fill them so grouping works."""
    runs = runs.copy()
    for col, default in (("tuning", ""), ("private", "true"), ("reference", ""),
                         ("failure_reason", ""), ("tuning_chosen", "")):
        if col not in runs:
            runs[col] = default
        runs[col] = runs[col].fillna(default)
    return runs


def resolve_keys(runs: pd.DataFrame) -> pd.DataFrame:
    """One run per content key: the latest FINISHED one if any, else the latest attempt."""
    ordered = runs.assign(_done=runs["status"] == "FINISHED").sort_values(["_done", "start_time"])
    return ordered.drop_duplicates("run_key", keep="last").drop(columns="_done")


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
    return mean, std, float(stats.t.ppf(0.975, n - 1) * std / math.sqrt(n))


def compare(a: dict[int, float], b: dict[int, float], higher_better: bool,
            alpha: float = ALPHA) -> int:
    """+1 if ``a`` is significantly better than ``b``, -1 if worse, 0 if no test separates
    them (see the module docstring for the tests)."""
    sign = 1.0 if higher_better else -1.0
    common = sorted(set(a) & set(b))
    if len(common) >= 2:
        d = sign * np.array([a[t] - b[t] for t in common])
        if np.allclose(d, d[0], rtol=0, atol=1e-12):
            return int(np.sign(d[0])) if abs(d[0]) > 1e-12 else 0
        p = float(stats.ttest_rel(sign * np.array([a[t] for t in common]),
                                  sign * np.array([b[t] for t in common])).pvalue)
        return int(np.sign(d.mean())) if p < alpha else 0
    va, vb = np.array(list(a.values())), np.array(list(b.values()))
    diff = sign * (va.mean() - vb.mean())
    if len(va) >= 2 and len(vb) >= 2:
        if va.std() == 0 and vb.std() == 0:
            return int(np.sign(diff)) if abs(diff) > 1e-12 else 0
        p = float(stats.ttest_ind(va, vb, equal_var=False).pvalue)
        return int(np.sign(diff)) if p < alpha else 0
    return int(np.sign(diff)) if abs(diff) > 1e-12 else 0


def significance_ranks(values: list[dict[int, float] | None], higher_better: bool,
                       alpha: float = ALPHA) -> tuple[list[float], list[bool]]:
    """Rank = 1 + number of rows significantly better (NaN for rows without values), and
    whether each row shares its rank with another."""
    idx = [i for i, v in enumerate(values) if v]
    ranks = [math.nan] * len(values)
    for i in idx:
        ranks[i] = 1 + sum(compare(values[j], values[i], higher_better, alpha) > 0  # type: ignore[arg-type]
                           for j in idx if j != i)
    tied = [bool(not math.isnan(r) and sum(ranks[j] == r for j in idx) > 1) for r in ranks]
    return ranks, tied


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
    """The ranked table: one row per (epsilon, mechanism, hyperparameters, tuning) group.
    ``board.attrs``: ``metric``, ``alpha`` and ``values`` (per group: trial -> score)."""
    if runs.empty:
        raise DPArenaError("no runs to rank", "run dp-arena first")
    runs = with_defaults(runs)
    keyed = resolve_keys(runs)
    done = keyed[keyed["status"] == "FINISHED"]
    key = ranking_metric(done if not done.empty else runs, metric)
    higher = not lower_is_better(key)
    rows, values = [], []
    for group_key, group in keyed.groupby(GROUP, sort=True, dropna=False):
        eps, mech, hp, tuning = group_key
        ok = group[group["status"] == "FINISHED"]
        failed = group[group["status"] == "FAILED"]
        unfinished = group[~group["status"].isin(["FINISHED", "FAILED"])]
        row: dict[str, Any] = {
            "epsilon": eps, "mechanism": mech, "hyperparameters": hp, "tuning": tuning,
            "kind": row_kind(group["reference"].iloc[0], group["private"].iloc[0], tuning),
            "reference": group["reference"].iloc[0],
            "chosen": "; ".join(sorted(set(group["tuning_chosen"]) - {""})),
            "n": len(ok), "failed": len(failed), "unfinished": len(unfinished),
            "failure_reason": "; ".join(sorted(set(failed["failure_reason"].astype(str))))[:300]}
        trial_values = None
        if len(ok) and key in ok and ok[key].notna().any():
            scored = ok.dropna(subset=[key])
            row["mean"], row["std"], row["ci95"] = mean_ci(scored[key].to_numpy())
            trial_values = dict(zip(scored["trial"].astype(int), scored[key].astype(float)))
            for col in score_columns(ok) + [c for c in SHOWN_EXTRAS if c in ok]:
                if col != key:
                    row[col] = float(ok[col].mean())
        else:
            row["mean"] = row["std"] = row["ci95"] = math.nan
        rows.append(row)
        values.append(trial_values)
    board = pd.DataFrame(rows)
    board["rank"], board["tied"] = math.nan, False
    for eps in board["epsilon"].unique():
        at = board.index[(board["epsilon"] == eps) & (board["kind"] == "dp")].tolist()
        ranks, tied = significance_ranks([values[i] for i in at], higher, alpha)
        board.loc[at, "rank"], board.loc[at, "tied"] = ranks, tied
    board["rank"] = board["rank"].astype("Int64")
    board["_values"] = values
    board = board.sort_values(["epsilon", "mean"], ascending=[True, not higher],
                              na_position="last").reset_index(drop=True)
    lead = ["epsilon", "rank", "tied", "mechanism", "hyperparameters", "tuning", "kind",
            "mean", "ci95", "std", "n", "failed", "unfinished"]
    rest = [c for c in board.columns if c not in lead and c != "_values"]
    out = board[lead + rest].copy()
    out.attrs.update(metric=key, alpha=alpha,
                     values={tuple(r[c] for c in GROUP): v
                             for r, v in zip(board.to_dict("records"), board["_values"])})
    return out


def overall_board(board: pd.DataFrame) -> pd.DataFrame:
    """Mean over the board's epsilons per setting, with CI over per-trial means, ranked."""
    key = board.attrs.get("metric", "score")
    values: dict = board.attrs.get("values", {})
    higher = not lower_is_better(key)
    epsilons = sorted(board["epsilon"].unique())
    rows, per_row_values = [], []
    for setting, part in board.groupby(SETTING, sort=True):
        mech, hp, tuning = setting
        have = {e: values.get((e, mech, hp, tuning)) for e in epsilons}
        complete = all(have.values())
        row = {"mechanism": mech, "hyperparameters": hp, "tuning": tuning,
               "kind": part["kind"].iloc[0], "reference": part["reference"].iloc[0],
               "epsilons": ",".join(f"{e:g}" for e in epsilons if have[e]),
               "failed": int(part["failed"].sum()), "mean": math.nan, "ci95": math.nan,
               "std": math.nan, "n": 0, "complete": complete}
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
        for col in ("epsilon_spent", "seconds", "peak_memory_mb"):
            if col in part:
                row[col] = float(part[col].mean())
        rows.append(row)
        per_row_values.append(trial_means if complete else None)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    ranked = out.index[out["kind"] == "dp"].tolist()
    ranks, tied = significance_ranks([per_row_values[i] for i in ranked], higher,
                                     board.attrs.get("alpha", ALPHA))
    out["rank"], out["tied"] = math.nan, False
    out.loc[ranked, "rank"], out.loc[ranked, "tied"] = ranks, tied
    out["rank"] = out["rank"].astype("Int64")
    out = out.sort_values("mean", ascending=not higher, na_position="last").reset_index(drop=True)
    lead = ["rank", "tied", "mechanism", "hyperparameters", "tuning", "kind", "mean", "ci95",
            "std", "n", "epsilons", "complete", "failed"]
    out = out[lead + [c for c in out.columns if c not in lead]]
    out.attrs.update(metric=key, epsilons=epsilons)
    return out


def tuning_gap(board: pd.DataFrame) -> pd.DataFrame:
    """Per mechanism and epsilon: the score of each tuning mode side by side (untuned = the
    default settings, else the best untuned row) and the gaps between modes."""
    if not (board["tuning"] != "").any():
        return pd.DataFrame()
    rows = []
    for (eps, mech), part in board.groupby(["epsilon", "mechanism"], sort=True):
        if not (part["tuning"] != "").any():
            continue
        row: dict[str, Any] = {"epsilon": eps, "mechanism": mech}
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


# ----- rendering ----------------------------------------------------------------------------
def shown_scores(board: pd.DataFrame, ranked_by: str) -> list[str]:
    """Columns for the Markdown table: the parts of the ranking score (for the challenge:
    its three components), then every other metric family's headline score."""
    from metrics import METRICS, metric_class

    family = ranked_by.split("/")[0]
    parts = [c for c in board.columns if c.startswith(f"{family}/") and c != ranked_by
             and family == "challenge"]
    headlines = []
    for name in METRICS:
        col = f"{name}/{metric_class(name).headline}" if name != family else None
        if col and col in board.columns:
            headlines.append(col)
    return parts + headlines


def _fmt(x: object, digits: int = 1) -> str:
    if isinstance(x, (float, np.floating)):
        if math.isnan(x):
            return ""
        if math.isinf(x):
            return "inf"
        return f"{x:.{digits}f}"
    if x is pd.NA:
        return ""
    return str(x)


def _label(row: pd.Series | dict) -> str:
    return f"{row['mechanism']}{REFERENCE_NOTES.get(row['reference'], '')}"


def rank_text(row: pd.Series | dict) -> str:
    if row["kind"] == "reference":
        return "ref"
    if row["kind"] == "non-private":
        return "n/p"
    if pd.isna(row["rank"]):
        return "-"
    return f"{int(row['rank'])}{'=' if row.get('tied') else ''}"


def status_text(row: pd.Series | dict) -> str:
    failed, n = int(row.get("failed", 0) or 0), int(row.get("n", 0) or 0)
    unfinished = int(row.get("unfinished", 0) or 0)
    if failed and n == 0:
        reason = (str(row.get("failure_reason", "")).splitlines() or [""])[0]
        return f"FAILED ({failed}): {reason[:120].replace('|', '/')}"
    parts = [f"{failed} failed" if failed else "",
             f"{unfinished} interrupted" if unfinished else ""]
    return ", ".join(p for p in parts if p) or "ok"


def _mark(row: pd.Series | dict, text: str) -> str:
    """Reference and non-private rows are set apart in italics."""
    return f"*{text}*" if row["kind"] != "dp" and text else text


def _md_table(header: list[str], body: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *["| " + " | ".join(cells) + " |" for cells in body], ""]


def render_markdown(board: pd.DataFrame, title: str = "Leaderboard") -> str:
    """Overall section (when there are several epsilons), one section per epsilon, and the
    tuning-mode comparison when tuned rows exist."""
    key = board.attrs.get("metric", "score")
    direction = "lower is better" if lower_is_better(key) else "higher is better"
    extras = shown_scores(board, key)
    lines = [f"## {title}",
             f"ranked by `{key}` ({direction}); mean ± 95% CI over n trials. Rank = 1 + rows "
             f"significantly better (paired t-test across trials, alpha "
             f"{board.attrs.get('alpha', ALPHA)}); `2=` marks a statistical tie. *Italic* rows are "
             "reference points (`ref`) or non-private (`n/p`, e.g. oracle tuning): shown, never "
             "ranked.", ""]
    if board["epsilon"].nunique() > 1:
        lines += render_overall(overall_board(board))
    for eps, part in board.groupby("epsilon", sort=True):
        lines += [f"### epsilon = {eps:g}", ""]
        header = ["rank", "mechanism", "hyperparameters", "tuning", key, "± CI", "n", *extras,
                  "eps spent", "seconds", "peak MB", "status"]
        body = []
        for _, r in part.iterrows():
            cells = [rank_text(r), _label(r), r["hyperparameters"], r["tuning"] or "-",
                     _fmt(r["mean"]), _fmt(r["ci95"]), str(r["n"]),
                     *[_fmt(r.get(c, math.nan), 3) for c in extras],
                     _fmt(r.get("epsilon_spent", math.nan), 3), _fmt(r.get("seconds", math.nan)),
                     _fmt(r.get("peak_memory_mb", math.nan), 0), status_text(r)]
            body.append([_mark(r, c) for c in cells])
        lines += _md_table(header, body)
    gap = tuning_gap(board)
    if not gap.empty:
        lines += render_gap(gap)
    return "\n".join(lines)


def render_overall(overall: pd.DataFrame) -> list[str]:
    if overall.empty:
        return []
    eps = ", ".join(f"{e:g}" for e in overall.attrs.get("epsilons", []))
    lines = [f"### overall (mean over epsilon {eps})", ""]
    header = ["rank", "mechanism", "hyperparameters", "tuning", "mean", "± CI", "n",
              "seconds", "status"]
    body = []
    for _, r in overall.iterrows():
        status = "ok" if r["complete"] else f"incomplete (only epsilon {r['epsilons'] or '-'})"
        if r["failed"]:
            status += f", {r['failed']} failed"
        cells = [rank_text(r), _label(r), r["hyperparameters"], r["tuning"] or "-",
                 _fmt(r["mean"]), _fmt(r["ci95"]), str(r["n"]), _fmt(r.get("seconds", math.nan)),
                 status]
        body.append([_mark(r, c) for c in cells])
    return lines + _md_table(header, body)


def render_gap(gap: pd.DataFrame) -> list[str]:
    lines = ["### tuning modes", "",
             "Score of each tuning mode (chosen setting in brackets) and the gaps; oracle is "
             "tuned on the private data and is not private.", ""]
    header = ["epsilon", "mechanism", "untuned", "public", "dp_select", "oracle (n/p)",
              "oracle − public", "oracle − dp_select"]
    body = [[f"{r.epsilon:g}", r.mechanism, _fmt(r.untuned),
             f"{_fmt(r.public)} ({r.public_setting})" if r.public_setting else _fmt(r.public),
             f"{_fmt(r.dp_select)} ({r.dp_select_setting})" if r.dp_select_setting
             else _fmt(r.dp_select),
             f"{_fmt(r.oracle)} ({r.oracle_setting})" if r.oracle_setting else _fmt(r.oracle),
             _fmt(r.oracle_minus_public), _fmt(r.oracle_minus_dp_select)]
            for r in gap.itertuples()]
    return lines + _md_table(header, body)


# ----- HTML ---------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table.board{border-collapse:collapse;margin-bottom:2em;font-size:14px}
table.board td,table.board th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:right}
table.board td.t,table.board th.t{text-align:left;white-space:nowrap}
div.scroll{overflow-x:auto;max-width:100%}
table.board th{cursor:pointer;background:#f4f4f4;user-select:none}
table.board th:after{content:" \\2195";color:#aaa}
tr.reference td{color:#666;font-style:italic;background:#f7f7f7}
tr.non-private td{color:#8a4b00;font-style:italic;background:#fff6e8}
tr.failed td{color:#b00020}
span.tie{color:#06c;font-weight:bold}
img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
"""
_JS = """
document.querySelectorAll('table.board').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var body=t.tBodies[0], rows=Array.from(body.rows), asc=th.dataset.asc!=='1';
      t.querySelectorAll('th').forEach(function(h){h.dataset.asc=''});
      th.dataset.asc=asc?'1':'0';
      rows.sort(function(a,b){
        var x=a.cells[i].dataset.v??a.cells[i].textContent, y=b.cells[i].dataset.v??b.cells[i].textContent;
        var fx=parseFloat(x), fy=parseFloat(y);
        if(!isNaN(fx)&&!isNaN(fy)) return asc?fx-fy:fy-fx;
        if(isNaN(fx)!==isNaN(fy)) return isNaN(fx)?1:-1;
        return asc?String(x).localeCompare(y):String(y).localeCompare(x);
      });
      rows.forEach(function(r){body.appendChild(r)});
    });
  });
});
"""


def _html_table(frame: pd.DataFrame, columns: list[str], caption: str) -> str:
    head = "".join(f"<th class='{'t' if c in ('mechanism', 'hyperparameters', 'tuning', 'status') else ''}'>"
                   f"{html.escape(c)}</th>" for c in columns)
    body = []
    for _, r in frame.iterrows():
        klass = r["kind"] if r["kind"] != "dp" else ""
        if r.get("n", 1) == 0 and r.get("failed", 0):
            klass += " failed"
        cells = []
        for c in columns:
            if c == "rank":
                text = rank_text(r)
                shown = (f"<span class='tie' title='statistically tied'>{html.escape(text)}</span>"
                         if r.get("tied") else html.escape(text))
                sort = "" if pd.isna(r["rank"]) else f" data-v='{int(r['rank'])}'"
                cells.append(f"<td{sort}>{shown}</td>")
                continue
            value = _label(r) if c == "mechanism" else (status_text(r) if c == "status"
                                                        else r.get(c, ""))
            text = _fmt(value, 1 if c in ("mean", "ci95", "std") else 3) \
                if isinstance(value, (float, np.floating)) else str(value)
            klass_c = " class='t'" if c in ("mechanism", "hyperparameters", "tuning", "status") else ""
            cells.append(f"<td{klass_c}>{html.escape(text)}</td>")
        body.append(f"<tr class='{klass.strip()}'>{''.join(cells)}</tr>")
    return (f"<h2>{html.escape(caption)}</h2><div class='scroll'><table class='board'><thead><tr>"
            f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def render_html(board: pd.DataFrame, title: str, plots: list[Path] | None = None) -> str:
    """A self-contained page: sortable tables (click a header) and the plots embedded."""
    key = board.attrs.get("metric", "")
    extras = shown_scores(board, key)
    cols = ["rank", "mechanism", "hyperparameters", "tuning", "mean", "ci95", "std", "n",
            *extras, *[c for c in SHOWN_EXTRAS if c in board.columns], "status"]
    parts = []
    if board["epsilon"].nunique() > 1:
        overall = overall_board(board)
        parts.append(_html_table(overall, ["rank", "mechanism", "hyperparameters", "tuning",
                                           "mean", "ci95", "std", "n", "epsilons", "seconds"],
                                 "Overall (mean over epsilons)"))
    for eps, part in board.groupby("epsilon", sort=True):
        parts.append(_html_table(part, [c for c in cols if c in part.columns or c in
                                        ("rank", "status")], f"epsilon = {eps:g}"))
    gap = tuning_gap(board)
    if not gap.empty:
        parts.append("<h2>Tuning modes</h2>" + gap.to_html(index=False, na_rep="",
                                                            float_format=lambda x: f"{x:.1f}",
                                                            classes="board", border=0))
    images = "".join(
        f"<h2>{html.escape(p.stem.replace('_', ' '))}</h2><img alt='{html.escape(p.stem)}' "
        f"src='data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}'>"
        for p in plots or [] if p.is_file())
    note = ("ranked by <code>{}</code>; mean ± 95% CI (Student t) over n trials; rank = 1 + rows "
            "significantly better (paired t-test); <span class='tie'>2=</span> marks a tie; grey "
            "italic rows are references, orange rows non-private; click a header to sort."
            ).format(html.escape(key))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1><p>{note}</p>"
            f"{''.join(parts)}{images}<script>{_JS}</script></body></html>")


# ----- plots --------------------------------------------------------------------------------
def _figure(width: float, height: float, ncols: int = 1):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def _style(kind: str) -> dict[str, Any]:
    if kind == "reference":
        return {"linestyle": "--", "alpha": 0.6}
    if kind == "non-private":
        return {"linestyle": ":", "alpha": 0.8}
    return {"linestyle": "-", "alpha": 1.0}


def plot_score_vs_epsilon(board: pd.DataFrame, path: Path) -> Path:
    """Mean score per setting against epsilon, with its 95% CI as a band."""
    fig, (ax,) = _figure(7.5, 4.8)
    for (mech, hp, tuning), part in board.dropna(subset=["mean"]).groupby(SETTING):
        part = part.sort_values("epsilon")
        label = _label(part.iloc[0]) + ("" if hp == "-" else f" ({hp})") + \
            (f" [{tuning}]" if tuning else "")
        style = _style(part["kind"].iloc[0])
        line, = ax.plot(part["epsilon"], part["mean"], marker="o", label=label, **style)
        ci = part["ci95"].fillna(0).to_numpy()
        ax.fill_between(part["epsilon"], part["mean"] - ci, part["mean"] + ci,
                        color=line.get_color(), alpha=0.15 * style["alpha"], linewidth=0)
        ax.errorbar(part["epsilon"], part["mean"], yerr=ci, fmt="none", capsize=3,
                    ecolor=line.get_color(), alpha=0.6 * style["alpha"])
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(board.attrs.get("metric", "score"))
    ax.set_title("score vs epsilon (band: 95% CI over trials)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def pareto_front(points: pd.DataFrame, higher_better: bool) -> pd.DataFrame:
    """Rows not dominated by another (at most as slow and at least as good, one strictly)."""
    pts = points.sort_values(["seconds", "mean"], ascending=[True, not higher_better])
    front, best = [], -math.inf
    for _, r in pts.iterrows():
        score = r["mean"] if higher_better else -r["mean"]
        if score > best:
            front.append(r)
            best = score
    return pd.DataFrame(front)


def plot_pareto(board: pd.DataFrame, path: Path) -> Path:
    """Score against fit seconds per epsilon; the line joins the Pareto-optimal settings."""
    data = board.dropna(subset=["mean"])
    if "seconds" in data:
        data = data.dropna(subset=["seconds"])
    epsilons = sorted(data["epsilon"].unique()) if "seconds" in data else []
    fig, axes = _figure(5.0 * max(len(epsilons), 1), 4.2, max(len(epsilons), 1))
    higher = not lower_is_better(board.attrs.get("metric", "score"))
    for ax, eps in zip(axes, epsilons):
        part = data[data["epsilon"] == eps].copy()
        part["seconds"] = part["seconds"].clip(lower=1e-3)
        for _, r in part.iterrows():
            ax.scatter(r["seconds"], r["mean"], marker="o" if r["kind"] == "dp" else "s",
                       alpha=_style(r["kind"])["alpha"])
            ax.annotate(r["mechanism"] + ("" if r["hyperparameters"] == "-" else
                                          f" ({r['hyperparameters']})"),
                        (r["seconds"], r["mean"]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        front = pareto_front(part[part["kind"] == "dp"], higher)
        if len(front):
            ax.step(front["seconds"], front["mean"], where="post", color="k", alpha=0.5,
                    label="Pareto front (private mechanisms)")
            ax.legend(fontsize=7)
        if part["seconds"].max() / part["seconds"].min() > 20:
            ax.set_xscale("log")
        ax.set_xlabel("fit seconds")
        ax.set_ylabel(board.attrs.get("metric", "score"))
        ax.set_title(f"epsilon = {eps:g}")
        ax.grid(alpha=0.3)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def write_outputs(board: pd.DataFrame, runs: pd.DataFrame, out_dir: Path | str,
                  title: str = "dp-arena leaderboard") -> list[Path]:
    """leaderboard.md/.csv/.html, leaderboard_overall.csv, score_vs_epsilon.png, pareto.png
    (and tuning_gap.csv when tuned rows exist) in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = [plot_score_vs_epsilon(board, out / "score_vs_epsilon.png"),
             plot_pareto(board, out / "pareto.png")]
    paths = [out / "leaderboard.md", out / "leaderboard.csv", out / "leaderboard_overall.csv",
             out / "leaderboard.html", *plots]
    paths[0].write_text(render_markdown(board, title))
    board.to_csv(paths[1], index=False)
    overall_board(board).to_csv(paths[2], index=False)
    paths[3].write_text(render_html(board, title, plots))
    gap = tuning_gap(board)
    if not gap.empty:
        gap.to_csv(out / "tuning_gap.csv", index=False)
        paths.append(out / "tuning_gap.csv")
    return paths
