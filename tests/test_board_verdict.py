"""The verdict across scores: a board names the winner under each headline score (marginals,
held-out utility, risk), the Pareto set when they disagree, the public-data and uniform-floor
line of every headline score, and never ranks or ties rows of different schemas together.

Hand-made runs: each row's three trials are its score plus (0, +0.01, -0.01), so every paired
difference between two rows is constant across trials and the board's paired test separates
any two rows whose scores differ (:func:`dp_arena.report.ranks.compare`, its constant-difference
branch); the means are the scores as written, the values below are those scores.

Tolerance: pytest.approx's default (1e-6 relative) compares a mean of three sums of decimals
with its exact value: far above float rounding (about 1e-16), far below any wrong formula.
"""

from __future__ import annotations

import pytest

from dp_arena.report.headline import headline, headline_lines
from dp_arena.report.leaderboard import build_leaderboard
from dp_arena.report.ranks import compare
from dp_arena.report.render import render_html, render_markdown
from dp_arena.report.terminal import render_terminal
from dp_arena.report.verdict import blocks, headline_scores, pareto_rows, scored_as
from tests.support.board import NEW_TAGS, frame, run

NOISE = (0.0, 0.01, -0.01)
TAGS = {**NEW_TAGS, "dataset": "diamonds", "dataset_id": "d1", "schema_digest": "aaaa1111bbbb2222"}
#: mechanism -> (kmarginal/score, ml_efficacy/score, membership/auc, extra tags). aim wins the
#: marginals, mst the held-out utility, independent the membership risk (lowest AUC); mst
#: beats independent on both utility scores, aim beats nobody on risk.
ROWS = {"aim": (0.95, 0.60, 0.62, {}),
        "mst": (0.90, 0.70, 0.55, {}),
        "independent": (0.80, 0.55, 0.51, {}),
        "public_only": (0.85, 0.91, 0.50, {"reference": "public", "private": "false"}),
        "uniform": (0.30, 0.50, 0.50, {"reference": "floor", "private": "false"})}


def runs(rows=ROWS, risk: bool = False, tags=TAGS, eps: float = 1.0) -> list[dict]:
    out = []
    for mech, (km, ml, auc, extra) in rows.items():
        for t, noise in enumerate(NOISE):
            scores = {"ml_efficacy/score": ml + noise,
                      **({"membership/auc": auc + noise} if risk else {})}
            out.append({**run(mech, eps, t, km + noise, **{**tags, **extra}), **scores})
    return out


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_headline_scores_are_the_ranking_score_then_the_logged_ones():
    board = build_leaderboard(frame(runs(risk=True)))
    scores = headline_scores(board)
    assert [(s.key, s.lower) for s in scores] == [
        ("kmarginal/score", False), ("ml_efficacy/score", False), ("membership/auc", True)]
    marginals_only = build_leaderboard(frame([{k: v for k, v in r.items()
                                               if k != "ml_efficacy/score"} for r in runs()]))
    assert [s.key for s in headline_scores(marginals_only)] == ["kmarginal/score"]


def test_when_marginals_and_utility_disagree_the_board_names_both_winners():
    board = build_leaderboard(frame(runs()))
    lines = headline_lines(board)
    assert "winner at epsilon 1 by kmarginal/score (marginals, higher is better): aim 0.950" \
        in lines[0]
    assert "winner at epsilon 1 by ml_efficacy/score (held-out utility, higher is better): " \
           "mst 0.700" in lines[1]
    assert "(tied)" not in " ".join(lines)


def test_each_score_has_its_public_data_and_floor_line():
    lines = headline_lines(build_leaderboard(frame(runs())))
    marginals, = [t for t in lines if t.startswith("epsilon 1, kmarginal/score:")]
    utility, = [t for t in lines if t.startswith("epsilon 1, ml_efficacy/score:")]
    # marginals: public_only 0.85 < aim 0.95; uniform 0.30 < 0.95
    assert "public_only (public data only) 0.850, worse than the best DP row (0.950)" \
        in marginals
    assert "uniform (floor) 0.300, worse than the best DP row" \
        in marginals
    assert "add nothing" not in marginals
    # held-out utility: public_only 0.91 > mst 0.70, the best DP row
    assert ("public_only (public data only) 0.910, better than every DP row (0.700): "
            "the mechanisms add nothing beyond the public data here") in utility
    assert "uniform (floor) 0.500, worse than the best DP row" in utility


def test_the_parent_run_tags_the_winner_under_each_headline_score():
    metrics, tags = headline(build_leaderboard(frame(runs(risk=True))))
    assert tags["winner/eps_1"] == "aim"
    assert tags["winner_by/ml_efficacy/score/eps_1"] == "mst"
    assert tags["winner_by/membership/auc/eps_1"] == "independent"
    assert metrics["winner/eps_1/mean"] == pytest.approx(0.95)  # 0.95 + mean(NOISE) = 0.95


def test_the_pareto_set_is_the_rows_no_other_row_matches_or_beats_on_every_score():
    board = build_leaderboard(frame(runs()))
    block, = blocks(board)
    scores = headline_scores(board)
    views = [scored_as(block.rows, board, s) for s in scores]
    front = {block.rows.at[i, "mechanism"] for i in pareto_rows(views, scores)}
    assert front == {"aim", "mst"}  # independent: below mst on both; references not DP rows
    line, = [t for t in headline_lines(board) if "Pareto set" in t]
    assert line.startswith("epsilon 1: the headline scores disagree on the winner; Pareto set")
    assert line.endswith(": aim, mst")
    with_risk = build_leaderboard(frame(runs(risk=True)))
    line, = [t for t in headline_lines(with_risk) if "Pareto set" in t]
    assert line.endswith(": aim, mst, independent")  # the lowest membership AUC is not dominated


def test_a_risk_score_names_the_lowest_risk_and_draws_no_utility_conclusion():
    lines = headline_lines(build_leaderboard(frame(runs(risk=True))))
    winner, = [t for t in lines if t.startswith("winner at epsilon 1 by membership/auc")]
    assert "(membership risk, lower is better): independent 0.510" in winner
    risk, = [t for t in lines if t.startswith("epsilon 1, membership/auc:")]
    assert "public_only (public data only) 0.500, better than every DP row (0.510)" \
        in risk and "add nothing" not in risk


def test_one_row_winning_every_score_is_said_and_no_pareto_set_shown():
    agree = {**ROWS, "mst": (0.96, 0.70, 0.55, {})}  # mst now wins the marginals too
    lines = headline_lines(build_leaderboard(frame(runs(agree))))
    assert "epsilon 1: mst wins under every headline score" in lines
    assert not any("Pareto" in t for t in lines)


def test_a_board_of_one_score_keeps_its_winner_line():
    data = [{k: v for k, v in r.items() if k != "ml_efficacy/score"} for r in runs()]
    lines = headline_lines(build_leaderboard(frame(data)))
    assert lines[0] == "winner at epsilon 1: aim 0.950 ± 0.025"
    assert not any("Pareto" in t or "by kmarginal" in t for t in lines)


def test_every_format_shows_the_verdict_and_the_terminal_fits_80_columns():
    board = build_leaderboard(frame(runs(risk=True)))
    text = render_terminal(board, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    # wrapped, never cut: every winner is named at 80 columns
    assert "winner at epsilon 1 by kmarginal/score (marginals, higher is better): aim" \
        in flat(text)
    assert "winner at epsilon 1 by ml_efficacy/score (held-out utility, higher is better): " \
           "mst 0.700" in flat(text)
    assert "(membership risk, lower is better): independent 0.510" in flat(text)
    assert "Pareto set" in text
    for key in ("kmarginal/score", "ml_efficacy/score", "membership/auc"):
        assert f"epsilon 1, {key}: public_only (public data only) 0." in flat(text)
    markdown = render_markdown(board).replace("\\", "")
    html = render_html(board, "t")
    for page in (markdown, html):
        assert "winner at epsilon 1 by ml_efficacy/score (held-out utility, higher is better): " \
               "mst 0.700" in page
        assert "the mechanisms add nothing beyond the public data here" in page
        assert "Pareto set" in page


def test_winners_under_another_score_come_best_mean_first_and_a_tie_is_named():
    """x leads the marginals, y the held-out utility by a margin no paired test confirms
    (x - y per trial: -0.005, +0.01, -0.02): both share rank 1 under utility, y named first."""
    ml = {"x": (0.70, 0.71, 0.69), "y": (0.705, 0.700, 0.710)}
    km = {"x": 0.9, "y": 0.8}
    data = [{**run(m, 1.0, t, km[m] + NOISE[t], **TAGS), "ml_efficacy/score": ml[m][t]}
            for m in ml for t in range(3)]
    assert compare(dict(enumerate(ml["x"])), dict(enumerate(ml["y"])), True) == 0
    lines = headline_lines(build_leaderboard(frame(data)))
    utility, = [t for t in lines if t.startswith("winner at epsilon 1 by ml_efficacy")]
    assert utility.endswith(": y 0.705 ± 0.012 = x 0.700 ± 0.025 (tied)")
    # y: std 0.005 -> 4.303 * 0.005 / sqrt(3) = 0.0124; x: std 0.01 -> 0.0248
    # x is rank 1 under both, shared under utility
    assert "epsilon 1: x wins under every headline score (tied under ml_efficacy/score)" in lines


def test_a_score_a_block_never_logged_gets_no_line_there():
    """Two datasets at one epsilon, only diamonds with a held-out score: the other dataset's
    block names its marginals winner alone, no held-out winner and no Pareto line."""
    other = {**TAGS, "dataset": "adult", "dataset_id": "a1"}
    data = runs() + [{k: v for k, v in r.items() if k != "ml_efficacy/score"}
                     for r in runs(tags=other)]
    lines = headline_lines(build_leaderboard(frame(data)))
    adult = [t for t in lines if "(dataset adult)" in t]
    diamonds = [t for t in lines if "(dataset diamonds)" in t]
    assert adult == [
        "winner at epsilon 1 (dataset adult) by kmarginal/score (marginals, higher is better): "
        "aim 0.950 ± 0.025",
        "epsilon 1 (dataset adult), kmarginal/score: public_only (public data only) 0.850, "
        "worse than the best DP row (0.950); uniform (floor) 0.300, worse than the best DP row"]
    assert any(t.startswith("winner at epsilon 1 (dataset diamonds) by ml_efficacy") and
               t.endswith(": mst 0.700 ± 0.025") for t in diamonds)
    assert sum("Pareto set" in t for t in diamonds) == 1


# ----- rows of different schemas ------------------------------------------------------------
COARSE = {**TAGS, "schema_digest": "cccc0000cccc0000"}
FINE = {**TAGS, "schema_digest": "ffff0000ffff0000"}


#: ``a`` on the fine schema, ``b`` on the coarse one, with per-trial scores no paired test
#: tells apart (a - b: -0.001, +0.002, +0.0005), and ``c`` on each schema.
SCHEMA_ROWS = (("a", FINE, (0.700, 0.701, 0.699)), ("b", COARSE, (0.701, 0.699, 0.6985)),
               ("c", FINE, (0.50, 0.51, 0.49)), ("c", COARSE, (0.80, 0.81, 0.79)))


def two_schemas() -> list[dict]:
    return [run(mech, 1.0, t, s, **tags) for mech, tags, scores in SCHEMA_ROWS
            for t, s in enumerate(scores)]


def test_rows_of_different_schemas_are_ranked_apart_never_tied():
    board = build_leaderboard(frame(two_schemas()))
    by_schema = {d: dict(zip(part["mechanism"], part["rank"]))
                 for d, part in board.groupby("schema_digest")}
    # one pool these would be: c(coarse) 1, then a and b tied at 2; apart, each schema ranks
    assert by_schema == {"ffff0000ffff0000": {"a": 1, "c": 2},
                         "cccc0000cccc0000": {"c": 1, "b": 2}}
    assert not board["tied"].any()
    # pooled, a and b would share a rank: no paired test tells them apart
    trials = {m: dict(enumerate(s)) for m, _, s in SCHEMA_ROWS[:2]}
    assert compare(trials["a"], trials["b"], True) == 0
    # the CIs: t(0.975, 2) * std / sqrt(3) = 4.303 * 0.01 / 1.732 = 0.0248 (c),
    # 4.303 * 0.001 / 1.732 = 0.00248 (a), shown with the column's 3 decimals
    lines = headline_lines(board)
    assert lines == ["winner at epsilon 1 (schema cccc0000): c 0.800 ± 0.025",
                     "winner at epsilon 1 (schema ffff0000): a 0.700 ± 0.002"]
    assert "tied" not in " ".join(lines)
    _, tags = headline(board)
    assert tags["winner/eps_1"] == "schema cccc0000: c | schema ffff0000: a"


def test_every_format_says_the_schemas_are_ranked_apart():
    board = build_leaderboard(frame(two_schemas()))
    text = render_terminal(board, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "epsilon = 1, schema cccc0000:" in text and "epsilon = 1, schema ffff0000:" in text
    assert "ranked within their schema" in flat(text)
    header = next(line for line in render_markdown(board).splitlines()
                  if line.startswith("| rank"))
    assert "| schema " in header  # the schema column: ranks restart per schema
    assert "ranked within their schema" in flat(render_html(board, "t"))


# ----- held-out scores read on the owner's side ---------------------------------------------
HELDOUT = ("ml_efficacy/", "membership/")


def test_the_owners_board_reads_heldout_scores_from_the_owner_files(tracking_uri, tmp_path,
                                                                    monkeypatch, capsys):
    """The default sweep's runs at epsilon 1 (three trials) stored without their held-out
    scores, which sit in the owner-only files instead: the board names them as kept on the
    owner's side; with --heldout-scores it reads them back, names the winner under held-out
    utility and labels itself the owner's, and the store still holds none of them."""
    from mlflow import MlflowClient

    from dp_arena.cli.board import main
    from dp_arena.run.heldout import write_heldout_scores
    from tests.support.default_board import EXPERIMENT, store_runs, stored_runs, with_trials

    runs = with_trials([r for r in stored_runs() if r["tags"]["epsilon"] == "1"])
    heldout = {r["tags"]["run_key"]: {k: v for k, v in r["metrics"].items()
                                      if k.startswith(HELDOUT)} for r in runs}
    store_runs(tracking_uri, [{**r, "metrics": {k: v for k, v in r["metrics"].items()
                                                if not k.startswith(HELDOUT)}} for r in runs])
    # asked for before any owner file exists: said once, the board as without the flag
    assert main(["--tracking-uri", tracking_uri, "--out", str(tmp_path / "none"),
                 "--heldout-scores"]) == 0
    assert capsys.readouterr().err.count("--heldout-scores: no held-out scores of these "
                                         "runs in") == 1
    client = MlflowClient(tracking_uri)
    stored = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id])
    for r in stored:
        write_heldout_scores(r.info.run_id, heldout[r.data.tags["run_key"]])
    monkeypatch.setenv("DP_ARENA_BOARD", "text")
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["--tracking-uri", tracking_uri, "--out", str(tmp_path / "lb")]) == 0
    plain = flat(capsys.readouterr().out)
    assert "held-out scores not in the store: membership, ml_efficacy" in plain
    assert "the winners above are by challenge/overall, kmarginal/score alone" in plain
    assert "by ml_efficacy/score" not in plain

    assert main(["--tracking-uri", tracking_uri, "--out", str(tmp_path / "lb"),
                 "--heldout-scores"]) == 0
    owner = capsys.readouterr().out
    assert max(len(line) for line in owner.splitlines()) <= 80
    owner = flat(owner)
    assert "winner at epsilon 1 by ml_efficacy/score (held-out utility, higher is better):" \
        in owner
    assert "epsilon 1, ml_efficacy/score: public_only (public data only)" in owner
    assert ("held-out scores shown: membership, ml_efficacy: exact statistics of held-out "
            "persons, read from this machine's owner-only files (dp-arena-board "
            "--heldout-scores); this board is for the data owner, not for publication") in owner
    assert "not for publication" in flat((tmp_path / "lb" / "leaderboard.md").read_text())
    assert not any(k.startswith(HELDOUT) for r in client.search_runs(
        [client.get_experiment_by_name(EXPERIMENT).experiment_id]) for k in r.data.metrics)


def test_the_overall_table_on_a_terminal_is_one_table_per_schema():
    data = two_schemas() + [{**r, "epsilon": 10.0, "run_id": r["run_id"] + "-10",
                             "run_key": r["run_key"] + "-10"} for r in two_schemas()]
    text = render_terminal(build_leaderboard(frame(data)), width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    for digest in ("cccc0000", "ffff0000"):
        assert f"overall (mean over epsilon 1, 10; schema {digest}):" in text
    caption = text.index("overall (mean over epsilon 1, 10; schema ffff0000):")
    fine = text[caption:].splitlines()[3:5]  # the two rows under the header and its rule
    assert [row.split()[:2] for row in fine] == [["1", "a"], ["2", "c"]]
