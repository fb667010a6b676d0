"""Public hints free of budget, the budget split that follows the columns, types that
read real files under DP noise, and what a proposal reports per column.

Tolerances: (a) epsilon shares are a handful of products and quotients of the budget: rel=1e-6
(approx's default) is far above their rounding and far below any other split. (b) a share of
noisy counts with fresh noise: its floor is exact arithmetic on Chernoff bounds of the Laplace
sums (tests.support.tolerances.laplace_sum_tail) at probability 1e-9 each, from the scales the
budget split gives.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dp_arena.cli.schema import main as schema_main
from dp_arena.data.hints import ColumnHint, hints_of, parse_flow, parse_weight
from dp_arena.data.infer import CLASSES
from dp_arena.data.propose import TYPE_SHARE, ProposalSettings, propose
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from tests.support.tolerances import laplace_sum_tail


def table(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    company = rng.choice(["Taxi Affiliation Services", "Dispatch Taxi", "Blue Ribbon Taxi"], n)
    return pd.DataFrame({
        "fare": np.round(rng.lognormal(2.3, 0.6, n), 2),
        "company": company,
        "pay": rng.choice(["Cash", "Credit Card"], n),
        "day": (pd.Timestamp("2015-01-01") + pd.to_timedelta(rng.integers(0, 365, n), "D")
                ).strftime("%Y-%m-%d"),
    })


def releaser(eps: float, seed: int = 0) -> Releaser:
    return Releaser(Ledger(Budget(eps, 0.0)), NumpySampler(np.random.default_rng(seed)))


def spend_by_column(rel: Releaser) -> dict[str, float]:
    out: dict[str, float] = {}
    for charge in rel.ledger.charges:
        col = charge.name.split(":")[0]
        out[col] = out.get(col, 0.0) + charge.sensitivity / charge.scale
    return out


def test_a_complete_hint_spends_nothing_and_the_others_get_its_share():
    df, eps = table(), 1.0
    hint = {"fare": {"kind": "numeric", "min": 0, "max": 200, "bins": [5, 10, 20]}}
    rel = releaser(eps)
    prop = propose(df, ProposalSettings("dp", epsilon=eps, hints=hint), rel)
    spent = spend_by_column(rel)
    assert "fare" not in spent
    # three proposed columns share epsilon equally (every one needs a values release)
    for name in ("company", "pay", "day"):
        assert spent[name] == pytest.approx(eps / 3, rel=1e-6)
    col = prop.schema["fare"]
    assert (col.kind, col.min, col.max, col.bins) == ("numeric", 0.0, 200.0, (5.0, 10.0, 20.0))
    assert prop.origins() == {"fare": "hint", "company": "dp", "pay": "dp", "day": "dp"}
    without = releaser(eps)
    propose(df, ProposalSettings("dp", epsilon=eps), without)
    assert spend_by_column(without)["company"] == pytest.approx(eps / 4, rel=1e-6)


def test_weights_split_the_budget_in_proportion():
    df, eps = table(), 0.8
    rel = releaser(eps)
    propose(df, ProposalSettings("dp", epsilon=eps, hints={"company": {"weight": 3}}), rel)
    spent = spend_by_column(rel)
    assert spent["company"] == pytest.approx(3 * spent["pay"], rel=1e-6)
    assert sum(spent.values()) == pytest.approx(eps, rel=1e-6)


def test_a_hinted_kind_skips_the_type_release():
    df = table()
    rel = releaser(1.0)
    prop = propose(df, ProposalSettings("dp", epsilon=1.0, hints={
        "day": {"kind": "datetime", "format": "%Y-%m-%d"}}), rel)
    names = [c.name for c in rel.ledger.charges]
    assert "day: type" not in names and "fare: type" in names
    assert prop.schema["day"].kind == "datetime"
    # its type share goes to a present/missing count instead (whether it gets a missing code)
    assert "day: missing" in names
    # the values pool is epsilon less the four type-share releases, split evenly over 4
    day = [c for c in rel.ledger.charges if c.name.startswith("day")]
    assert sum(c.sensitivity / c.scale for c in day) == pytest.approx(
        TYPE_SHARE / 4 + (1.0 - TYPE_SHARE) / 4, rel=1e-6)


def test_a_hint_stating_allow_missing_skips_the_missing_count():
    df = table()
    rel = releaser(1.0)
    prop = propose(df, ProposalSettings("dp", epsilon=1.0, hints={
        "day": {"kind": "datetime", "format": "%Y-%m-%d", "allow_missing": True}}), rel)
    names = [c.name for c in rel.ledger.charges]
    assert "day: missing" not in names and "day: type" not in names
    assert prop.schema["day"].allow_missing
    # its whole share goes to its values
    day = [c for c in rel.ledger.charges if c.name.startswith("day")]
    assert sum(c.sensitivity / c.scale for c in day) == pytest.approx(
        (1.0 - 3 * TYPE_SHARE / 4) / 4, rel=1e-6)


def test_text_is_never_typed_as_a_time_under_dp_noise():
    """The issue's case: company names at --epsilon 0.1 on 7,501 rows were typed %H:%M:%S.
    The type histogram's noise at this share has scale 1 / (0.1 * 0.1 / 4) = 400; calling a
    text column a time needs noise of about 99% of 7,501 rows on the time class (18 scales:
    probability about exp(-18))."""
    df = table(n=7501)
    for seed in range(20):
        prop = propose(df, ProposalSettings("dp", epsilon=0.1), releaser(0.1, seed))
        if "company" in prop.schema.names:
            assert prop.schema["company"].kind == "categorical", seed
        assert not [c for c in prop.schema.columns
                    if c.name in ("company", "pay") and c.kind == "datetime"]


def test_dates_are_time_columns_with_bins_spanning_the_data():
    df = table(n=20000)
    prop = propose(df, ProposalSettings("dp", epsilon=1.0))
    col = prop.schema["day"]
    assert col.kind == "datetime" and col.resolution == "day" and col.bins
    assert len(col.bins) <= 9
    assert col.min <= "2015-01-01" and col.max >= "2015-12-31"
    assert col.min >= "2013-01-01" and col.max <= "2017-12-31"


def test_the_report_names_each_columns_share_and_what_it_keeps():
    # fresh noise: the share's floor is derived from the noise scales (tolerance (b))
    n, eps = 20_000, 1.0
    prop = propose(table(n=n), ProposalSettings("dp", epsilon=eps))
    assert len(prop.report) == 4
    for line in prop.report:
        assert "from dp" in line and "eps " in line
    company = next(r for r in prop.columns if r.name == "company")
    share = company.epsilon  # a quarter of eps (four columns, none hinted), as spent
    assert share == pytest.approx(eps / 4, rel=1e-6)
    over = laplace_sum_tail(len(CLASSES), 1 / (TYPE_SHARE * share), 1e-9)   # present count
    under = laplace_sum_tail(3, 1 / ((1 - TYPE_SHARE) * share), 1e-9)      # 3 values' mass
    floor = (n - under) / (n + over)
    assert 0.9 < floor  # the test can tell "every value kept" from "the largest one kept"
    assert company.kept_share is not None and floor <= company.kept_share <= 1.0


@pytest.mark.parametrize("raw, words", [
    ({"fare": {"kind": "money"}}, "kind"),
    ({"fare": {"min": 0, "colour": 1}}, "unknown keys"),
    ({"fare": {"weight": 0}}, "weight"),
    ({"fare": [1, 2]}, "mapping"),
])
def test_bad_hints_are_one_clear_error(raw, words):
    with pytest.raises(ConfigError) as exc:
        hints_of(raw)
    assert words in str(exc.value) and "fix:" in str(exc.value)


def test_hints_for_unknown_columns_are_refused():
    with pytest.raises(ConfigError) as exc:
        propose(table(), ProposalSettings("public", hints={"nope": {"kind": "numeric"}}))
    assert "'nope'" in str(exc.value)


def test_hint_and_weight_options_parse():
    assert parse_flow("fare={kind: numeric, min: 0, max: 9}") == {
        "fare": {"kind": "numeric", "min": 0, "max": 9}}
    assert parse_weight("company=2.5") == {"company": {"weight": 2.5}}
    for bad in ("fare", "fare={kind: [", "=1"):
        with pytest.raises(ConfigError):
            parse_flow(bad)
    with pytest.raises(ConfigError):
        parse_weight("company=-1")
    assert ColumnHint(kind="categorical", values=("a",)).complete
    assert not ColumnHint(kind="numeric", min=0).complete


def test_the_command_takes_hints_and_records_where_columns_came_from(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    table().to_csv(csv, index=False)
    hints = tmp_path / "hints.yaml"
    hints.write_text("columns:\n  pay: {kind: categorical, values: [Cash, Credit Card]}\n")
    out = tmp_path / "p.json"
    code = schema_main([str(csv), "--out", str(out), "--epsilon", "1", "--hints", str(hints),
                        "--hint", "fare={kind: numeric, min: 0, max: 300}",
                        "--weight", "company=2"])
    text = capsys.readouterr().out
    assert code == 0, text
    block = json.loads(out.read_text())["proposal"]
    assert block["columns"]["fare"] == {"from": "hint", "codes": 10}  # default equal bins
    assert block["columns"]["pay"] == {"from": "hint", "codes": 2}
    assert block["columns"]["company"]["from"] == "dp"
    assert block["columns"]["company"]["epsilon"] == pytest.approx(
        2 * block["columns"]["day"]["epsilon"], rel=1e-6)
    assert "fare: numeric" in text and "from hint" in text


def test_type_share_is_a_small_part():
    assert 0 < TYPE_SHARE <= 0.2


def test_a_from_private_schema_writes_no_shares_of_the_private_table(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    table().to_csv(csv, index=False)
    for flag, out in ((["--from-private"], tmp_path / "priv.json"),
                      (["--epsilon", "1"], tmp_path / "dp.json")):
        assert schema_main([str(csv), "--out", str(out), *flag]) == 0
    capsys.readouterr()
    private = json.loads((tmp_path / "priv.json").read_text())["proposal"]["columns"]
    dp = json.loads((tmp_path / "dp.json").read_text())["proposal"]["columns"]
    assert all(set(entry) == {"from", "codes"} for entry in private.values()), private
    assert all("keeps" in dp[n] for n in ("company", "pay"))
