"""The default delta (dp_arena/run/preflight.py ``default_delta``, ``persons_bound``,
``with_default_delta``; dp_arena/sweep/plan.py ``sets_delta``): data that is not a taxi
competition's gets ``1/(10 N)`` rounded down to a power of ten when the command sets no delta,
``N`` a public bound on persons; a chosen delta, a preset and the taxi data keep theirs."""

from __future__ import annotations


def record_table(tmp_path, n: int, max_records: int | None = None):
    """A record-level CSV of ``n`` rows and its schema (no id column)."""
    import json

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n)}).to_csv(
        tmp_path / "t.csv", index=False)
    runs = [{"epsilon": 1.0, "delta": 1e-9, "max_records": max_records}] if max_records else []
    (tmp_path / "t.json").write_text(json.dumps({"runs": runs, "schema": {
        "a": {"kind": "categorical", "dtype": "int64", "values": [0, 1, 2]},
        "b": {"kind": "categorical", "dtype": "int64", "values": [0, 1]}}}))
    # every row private (no held-out share): the delta rule's N is the table's
    return {"name": "csv", "path": str(tmp_path / "t.csv"), "schema": str(tmp_path / "t.json"),
            "holdout_fraction": 0.0}


def job_cfg(dataset, delta=2.5e-5):
    return {"mechanism": {"name": "independent"}, "metrics": {"kmarginal": {}},
            "privacy": {"epsilon": 1.0, "delta": delta}, "dataset": dataset}


def test_a_table_over_40000_rows_gets_the_documented_delta_not_a_refusal(tmp_path):
    from dp_arena.sweep.plan import plan_sweep

    dataset = record_table(tmp_path, 45_000, max_records=50_000)
    plan = plan_sweep([job_cfg(dataset)] * 2, delta_given=[False, False])
    assert [j.verdict for j in plan.jobs] == ["run", "duplicate"]
    assert plan.jobs[0].delta == 1e-6  # 1/(10 x 50,000) = 2e-6 -> 1e-6
    note, = [n for n in plan.notes if n.startswith("privacy.delta is not set")]
    assert "N = 50,000 (the schema's max_records)" in note and plan.notes[note] == 1
    # the same command with the delta given is refused as before (the user chose it)
    refused = plan_sweep([job_cfg(dataset)], delta_given=[True])
    assert refused.jobs[0].verdict == "invalid" and "at or above 1/(number of persons" in \
        refused.jobs[0].reason


def test_without_a_public_figure_the_bound_is_a_billion_persons(tmp_path):
    from dp_arena.sweep.plan import plan_sweep

    plan = plan_sweep([job_cfg(record_table(tmp_path, 45_000))], delta_given=[False])
    assert plan.jobs[0].verdict == "run" and plan.jobs[0].delta == 1e-10


def test_the_rule_uses_public_figures_only(small_dataset):
    from dp_arena.run.preflight import default_delta, persons_bound

    bound, source = persons_bound(small_dataset)  # the schema's max_records: 100,000
    assert (bound, source) == (100_000, "the schema's max_records")
    assert default_delta(small_dataset)[0] == 1e-6
    without_cap = type(small_dataset)(
        "s", type(small_dataset.schema)(small_dataset.schema.columns, ()),
        small_dataset.private, small_dataset.public, unit="user", id_column="pid",
        max_records_per_individual=5)
    people = small_dataset.public["pid"].nunique()
    assert persons_bound(without_cap) == (10 * people, "10 x the public part's persons")


def test_taxi_data_and_a_chosen_delta_keep_their_delta(small_dataset):
    from dp_arena.run.preflight import with_default_delta

    cfg = job_cfg({"name": "taxi_sim"})
    for name in ("taxi_sim", "taxi_sim_2020", "chicago_sample"):  # every scoring year
        taxi = type(small_dataset)(name, small_dataset.schema, small_dataset.private,
                                   small_dataset.public, unit="user", id_column="pid",
                                   max_records_per_individual=5)
        assert with_default_delta(cfg, taxi, False) == (cfg, ""), name
    assert with_default_delta(cfg, small_dataset, True) == (cfg, "")
    other = job_cfg({"name": "x"}, delta=1e-9)
    assert with_default_delta(other, small_dataset, False) == (other, "")
    changed, note = with_default_delta(cfg, small_dataset, False)
    assert changed["privacy"]["delta"] == 1e-6 and note


def test_which_overrides_choose_the_delta():
    from dp_arena.sweep.plan import sets_delta

    assert sets_delta(["privacy.delta=1e-9"]) and sets_delta(["privacy=zcdp"])
    assert sets_delta(["competition=sprint3"])
    assert not sets_delta(["mechanism=mst", "privacy.epsilon=1", "dataset=csv"])
