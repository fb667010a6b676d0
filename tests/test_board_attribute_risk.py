"""The risk view's attribute-inference columns: shown beside membership when runs logged the
attribute-inference risk, alone when only it was logged, absent otherwise; each cell the mean
over trials of the risk and of its CI ends, read back from the Markdown board; the terminal's
compact table keeps within 120 columns."""

from __future__ import annotations

import pytest

from dp_arena.report.leaderboard import build_leaderboard
from dp_arena.report.render import render_markdown
from dp_arena.report.terminal import render_terminal
from tests.support.board import frame, md_rows, run
from tests.support.views import LEAK_TAGS, risk, sweep

#: Per mechanism: the largest risk and its CI ends in each of three trials.
RISKS = {"resample": [(0.27, 0.19, 0.35), (0.25, 0.18, 0.33), (0.29, 0.20, 0.36)],
         "mst": [(0.03, -0.06, 0.11), (0.01, -0.07, 0.09), (0.02, -0.05, 0.10)]}


def ai_scores(point: float, lo: float, hi: float) -> dict[str, float]:
    return {"attribute_inference/risk": point, "attribute_inference/risk_lo": lo,
            "attribute_inference/risk_hi": hi, "attribute_inference/risk_mean": point / 2,
            "attribute_inference/risk_mean_lo": lo / 2,
            "attribute_inference/risk_mean_hi": hi / 2}


def runs(with_membership: bool) -> list[dict]:
    rows = []
    for mech, trials in RISKS.items():
        extra = {"reference": "ceiling", "private": "false"} if mech == "resample" else {}
        for t, (point, lo, hi) in enumerate(trials):
            rows.append({**run(mech, 1.0, t, 900.0 + t, **LEAK_TAGS), **extra,
                         **ai_scores(point, lo, hi),
                         **(risk(0.6, 0.1, 0.05, 0.3, 0.25) if with_membership else {})})
    return rows


def plain(cell: str) -> str:
    """A Markdown cell without its escapes and the italics of reference rows."""
    return cell.replace("\\", "").strip("*")


def risk_table(md: str) -> dict[str, dict[str, str]]:
    """The first risk table of a Markdown board: mechanism -> header -> cell."""
    section = md[md.index("### risk view"):]
    rows = [[plain(c) for c in cells] for cells in md_rows(section)]
    header = rows[0]
    return {cells[0]: dict(zip(header, cells)) for cells in rows[1:]}


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


@pytest.mark.parametrize("with_membership", [True, False])
def test_the_risk_view_shows_the_residual_risk_with_its_interval(with_membership):
    md = render_markdown(build_leaderboard(frame(runs(with_membership))))
    table = risk_table(md)
    column = "attribute_inference/risk [95% CI]"
    for mech, trials in RISKS.items():
        cell = next(row for label, row in table.items() if label.startswith(mech))[column]
        point, lo, hi = (mean(t[i] for t in trials) for i in range(3))
        assert cell == f"{point:.3f} [{lo:.3f}, {hi:.3f}]"
    assert ("membership/auc" in next(iter(table.values()))) == with_membership
    assert "attribute inference: residual risk" in md
    # without membership the rows are in order of residual risk, highest first
    if not with_membership:
        assert list(table)[0].startswith("resample")


def test_no_attribute_inference_column_without_its_scores():
    md = render_markdown(build_leaderboard(frame(sweep(with_utility=False))))
    assert "attribute_inference/risk" not in md and "attribute inference" not in md


def test_the_terminal_risk_table_fits_120_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    text = render_terminal(build_leaderboard(frame(runs(True))), "t")
    assert "attr. risk" in text
    assert max(len(line) for line in text.splitlines()) <= 120
