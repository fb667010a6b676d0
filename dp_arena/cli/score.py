"""``dp-arena-score``: score a Sprint 3 submission file like the challenge did.

    dp-arena-score GROUND_TRUTH.csv SUBMISSION.csv [--parameters parameters.json]
                   [--report out.json] [--epsilon E]

A ground truth or submission that is not a Sprint 3 taxi table (fewer than half of the
challenge's columns) is one message saying what this command scores and how to score other
tables (:func:`refuse_other_table`). The submission is validated first (every problem is reported at once, exit status 2): the
schema's columns with in-domain values and min/max respected, an ``epsilon`` column holding
exactly the epsilons of the parameters' ``runs``, and at most ``max_records`` rows per epsilon.
A file without an ``epsilon`` column (a synthetic table from another tool) is accepted with
``--epsilon E``; with an ``epsilon`` column, ``--epsilon E`` scores that epsilon only.
The ground truth may have an ``epsilon`` column (its rows of each epsilon are used) or not (the
same ground truth for every epsilon, as in the challenge). Each epsilon is scored with
:func:`dp_arena.metrics.challenge.score_challenge_detailed`; the final score is the mean over epsilons.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dp_arena.data.schema import Schema
from dp_arena.data.taxi.sprint3 import taxi_schema
from dp_arena.errors import DPArenaError, SchemaError
from dp_arena.redact import read_problem

EPSILON = "epsilon"
#: Exit status when an input is invalid (argparse uses 2 for usage errors too).
EXIT_INVALID = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dp-arena-score``; returns the process exit status."""
    args = _parser().parse_args(argv)
    try:
        return run(Path(args.ground_truth), Path(args.submission),
                   Path(args.parameters) if args.parameters else None,
                   Path(args.report) if args.report else None, args.epsilon)
    except DPArenaError as exc:
        print(f"dp-arena-score: {exc}", file=sys.stderr)
        return EXIT_INVALID


def run(ground_truth: Path, submission: Path, parameters: Path | None = None,
        report: Path | None = None, epsilon: float | None = None) -> int:
    """Validate, score every epsilon, print the table, write the report; the exit status."""
    from dp_arena.metrics.challenge import score_challenge_detailed

    schema = Schema.load(parameters) if parameters else taxi_schema()
    missing = [c for c in taxi_schema().names if c not in schema.names]
    if missing:
        raise DPArenaError(f"the challenge scorer needs the Sprint 3 taxi columns; the schema "
                           f"{'of ' + str(parameters) + ' ' if parameters else ''}lacks "
                           f"{', '.join(missing)}",
                           "score a Sprint 3 taxi table (see dp-arena-prepare), or score other "
                           "tables with dp-arena's kmarginal metric (metrics=kmarginal)")
    gt = read_csv(ground_truth, "ground truth")
    sub = read_csv(submission, "submission")
    for frame, what, path in ((gt, "ground truth", ground_truth), (sub, "submission", submission)):
        refuse_other_table(frame, schema, what, path)
    epsilons = epsilons_to_score(sub, epsilon)
    errors = [SchemaError(found, where=where) for found, where in (
        (submission_problems(sub, schema, epsilon), f"submission {submission}"),
        (ground_truth_problems(gt, schema, epsilons), f"ground truth {ground_truth}"),
    ) if found]
    if errors:
        print("\n".join(str(e) for e in errors), file=sys.stderr)
        return EXIT_INVALID

    results = []
    for eps in epsilons:
        scores, groups = score_challenge_detailed(rows_of_epsilon(gt, eps),
                                                  rows_of_epsilon(sub, eps))
        results.append((eps, scores, groups))
    overall = float(np.mean([scores["overall"] for _, scores, _ in results]))
    print(format_score_table([(eps, scores) for eps, scores, _ in results]))
    print(f"overall score: {overall:.4f}")
    if report is not None:
        report.write_text(json.dumps(score_report(results, overall), indent=1))
        print(f"report written to {report}")
    return 0


def refuse_other_table(df: pd.DataFrame, schema: Schema, what: str, path: Path) -> None:
    """One :class:`DPArenaError` saying what ``dp-arena-score`` scores, and how to score the
    table otherwise, when ``df`` holds fewer than half of the challenge's columns (not a taxi
    table with a few problems, which :func:`submission_problems` lists: another table). Says
    column names and counts of columns, never a value."""
    columns = [c for c in schema.names if c != EPSILON]
    have = [c for c in columns if c in df.columns]
    if 2 * len(have) >= len(columns):
        return
    raise DPArenaError(
        f"this command scores NIST 2020 Sprint 3 taxi tables with the challenge's metric "
        f"(columns {', '.join(columns[:4])}, ... : {len(columns)} in all); the {what} {path} "
        f"has {len(have)} of them, so it is another kind of table",
        "score another table with dp-arena itself: dp-arena dataset=csv "
        "dataset.path=PRIVATE.csv dataset.schema=parameters.json (dp-arena-schema PRIVATE.csv "
        "--out parameters.json proposes one) scores its synthetic tables with kmarginal and the "
        "other generic metrics; a Chicago taxi export becomes a Sprint 3 table with "
        "dp-arena-prepare chicago EXPORT.csv FOLDER")


def read_csv(path: Path, what: str) -> pd.DataFrame:
    """A CSV file as a DataFrame, or a :class:`DPArenaError` naming the file and the fix."""
    if not path.is_file():
        raise DPArenaError(f"{what} file not found: {path}", "check the path")
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DPArenaError(f"cannot read the {what} {path} as CSV: {read_problem(exc)}",
                           "pass a comma-separated file with a header row") from None


def epsilons_to_score(sub: pd.DataFrame, epsilon: float | None) -> list[float | None]:
    """The epsilons to score: ``--epsilon`` if given, else the submission's epsilons in order
    of first appearance (like the challenge), else ``[None]`` (the whole file, one run)."""
    if epsilon is not None:
        return [float(epsilon)]
    if EPSILON not in sub.columns:
        return [None]
    values = pd.to_numeric(sub[EPSILON], errors="coerce").dropna()
    return [float(v) for v in pd.unique(values)]


def rows_of_epsilon(df: pd.DataFrame, epsilon: float | None) -> pd.DataFrame:
    """The rows of one epsilon (all rows when there is no epsilon column or no epsilon)."""
    if epsilon is None or EPSILON not in df.columns:
        return df
    return df[pd.to_numeric(df[EPSILON], errors="coerce") == epsilon]


def submission_problems(sub: pd.DataFrame, schema: Schema, epsilon: float | None) -> list[str]:
    """Every way the submission breaks the challenge rules (empty when it is valid)."""
    return (schema.problems(sub.drop(columns=[EPSILON], errors="ignore"))
            + epsilon_problems(sub, schema, epsilon)
            + row_limit_problems(sub, schema, epsilon))


def ground_truth_problems(gt: pd.DataFrame, schema: Schema,
                          epsilons: Sequence[float | None]) -> list[str]:
    """Schema problems of the ground truth, and epsilons it has no rows for (when it has an
    ``epsilon`` column)."""
    found = schema.problems(gt.drop(columns=[EPSILON], errors="ignore"))
    if EPSILON in gt.columns:
        present = set(pd.to_numeric(gt[EPSILON], errors="coerce").dropna().astype(float))
        missing = [e for e in epsilons if e is not None and e not in present]
        if missing:
            found.append(f"{EPSILON}: no ground-truth rows for epsilon {_show(missing)}")
    return found


def epsilon_problems(sub: pd.DataFrame, schema: Schema, epsilon: float | None) -> list[str]:
    """Problems of the ``epsilon`` column: missing, non-numeric, not a run's epsilon, or a
    run's epsilon absent (unless ``--epsilon`` picks one run)."""
    run_epsilons = [float(r.epsilon) for r in schema.runs]
    if EPSILON not in sub.columns:
        if epsilon is None:
            return [(f"missing column '{EPSILON}' (one value per row, the run's epsilon); "
                    "for a single-run file pass --epsilon E")]
        if run_epsilons and float(epsilon) not in run_epsilons:
            return [f"--epsilon {epsilon:g} is not an epsilon of the runs {_show(run_epsilons)}"]
        return []
    found = []
    values = pd.to_numeric(sub[EPSILON], errors="coerce")
    if values.isna().any():
        found.append(f"{EPSILON}: {int(values.isna().sum())} missing or non-numeric value(s)")
    present = [float(v) for v in pd.unique(values.dropna())]
    if run_epsilons:
        unexpected = [e for e in present if e not in run_epsilons]
        if unexpected:
            found.append(f"{EPSILON}: value(s) {_show(unexpected)} are not epsilons of the runs "
                         f"{_show(run_epsilons)}")
        expected = run_epsilons if epsilon is None else [float(epsilon)]
        absent = [e for e in expected if e not in present]
        if absent:
            found.append(f"{EPSILON}: no rows for epsilon {_show(absent)} (expected every run: "
                         f"{_show(run_epsilons)})")
    elif epsilon is not None and float(epsilon) not in present:
        found.append(f"{EPSILON}: no rows for --epsilon {epsilon:g}")
    return found


def row_limit_problems(sub: pd.DataFrame, schema: Schema, epsilon: float | None) -> list[str]:
    """Runs whose submission has more rows than the run's ``max_records``."""
    found = []
    for run_spec in schema.runs:
        if run_spec.max_records is None:
            continue
        eps = float(run_spec.epsilon)
        if EPSILON in sub.columns:
            n_rows = int((pd.to_numeric(sub[EPSILON], errors="coerce") == eps).sum())
        else:
            n_rows = len(sub) if epsilon is not None and float(epsilon) == eps else 0
        if n_rows > run_spec.max_records:
            found.append(f"epsilon {eps:g}: {n_rows:,} rows, more than max_records "
                         f"{run_spec.max_records:,}")
    return found


def format_score_table(rows: Sequence[tuple[float | None, dict[str, float]]]) -> str:
    """A fixed-width table: epsilon, k_marginal, graph_edge, hoc, overall."""
    lines = [(f"{'epsilon':>8}  {'k_marginal':>10}  {'graph_edge':>10}  {'hoc':>10}  "
             f"{'overall':>10}")]
    for eps, s in rows:
        label = "-" if eps is None else f"{eps:g}"
        lines.append(f"{label:>8}  {s['k_marginal']:>10.6f}  {s['graph_edge']:>10.6f}  "
                     f"{s['hoc']:>10.6f}  {s['overall']:>10.4f}")
    return "\n".join(lines)


def score_report(results: Sequence[tuple[float | None, dict[str, float], pd.DataFrame]],
                 overall: float) -> dict[str, Any]:
    """The JSON report: the overall score, per-epsilon scores and per-group details."""
    details = []
    for eps, _, groups in results:
        for record in groups.to_dict(orient="records"):
            details.append({"epsilon": eps, **{k: _json_value(v) for k, v in record.items()}})
    return {
        "overall": overall,
        "per_epsilon": [{"epsilon": eps, **scores} for eps, scores, _ in results],
        "details": details,
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dp-arena-score",
        description="Validate and score a NIST Sprint 3 (Chicago taxi) submission with the "
                    "challenge metric (k-marginal, graph edge, higher-order conjunction).")
    parser.add_argument("ground_truth", help="ground-truth CSV (with or without 'epsilon')")
    parser.add_argument("submission", help="submission CSV (with an 'epsilon' column, or "
                                           "pass --epsilon)")
    parser.add_argument("--parameters", help="parameters.json (default: the Sprint 3 schema "
                                             "and runs built into dp-arena)")
    parser.add_argument("--report", help="write a JSON report (scores and per-group details)")
    parser.add_argument("--epsilon", type=float, help="score only this epsilon; required for a "
                                                      "submission without an 'epsilon' column")
    return parser


def _show(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def _json_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
