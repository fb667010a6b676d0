"""Mechanism conformance (the scikit-learn ``estimator_checks`` idea): every registered
mechanism, on small data, under both accountants.

For each DP mechanism:

1. **noise only through the release API**: the post-processing generator the mechanism gets
   records its calls, and none is a noise sampler (normal, Laplace, Gumbel, exponential, ...);
   every ledger charge was made by a release the observer saw, with the same name, kind and
   scale (a charge without one means noise was drawn elsewhere);
2. **spend <= budget** under ``gdp`` and ``zcdp``;
3. **schema-valid output**;
4. **output is post-processing of the releases**: the run repeated on the neighbouring data
   (one person removed), with the same public coins and the recorded releases handed back,
   gives the identical table. This is also what the audit's release view assumes
   (:mod:`dp_arena.audit.releases`). Mechanisms whose releases cannot be replayed
   (thresholded releases) skip it, by name;
5. ``check_applicable``: passes on the data the mechanism runs on, and raises
   ``NotApplicable`` (never anything else) on data it declares it cannot use.

External contestants (``accounting = "declared"``) draw their noise in their own process and
are covered by tests/test_external.py.

A test double that draws its noise outside the API fails (1) and (4).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tests.doubles  # noqa: F401  (registers the doubles)
from dp_arena.audit.releases import ReplaySampler
from dp_arena.data.datasets import Dataset, load_taxi_sim
from dp_arena.errors import NotApplicable
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser, ReleasesComplete
from dp_arena.mechanisms import MECHANISMS, make_mechanism, mechanism_class
from tests.support.people import people_data, without_one_person

NOISE_METHODS = ("normal", "standard_normal", "laplace", "gumbel", "exponential",
                 "standard_exponential", "binomial", "poisson", "geometric", "standard_gamma",
                 "standard_cauchy", "multivariate_normal")
#: Settings that keep the runs small (defaults otherwise).
FAST: dict[str, dict] = {
    "mst": {"iters": 50, "select_iters": 30},
    "aim": {"rounds": 4, "iters": 30, "final_iters": 30, "workload_degree": 2},
    "adaptive_grid": {"iters": 50},
    "archetype": {"k": 4, "gmm_n_init": 1, "gmm_max_iter": 20, "gmm_fit_rows": 2000},
}
#: Mechanisms whose releases the replay cannot follow (check 4 is skipped for them): none.
NOT_REPLAYABLE: dict[str, str] = {}
#: Mechanisms whose checks take more than a few seconds (JAX estimation, GMM fits).
SLOW = {"mst", "aim", "adaptive_grid", "archetype"}


class RecordingGenerator(np.random.Generator):
    """A generator that records which noise samplers were called (spawned ones too)."""

    def __init__(self, bit_generator, calls: list[str]):
        super().__init__(bit_generator)
        self.calls = calls

    def spawn(self, n_children: int):
        return [RecordingGenerator(bg, self.calls) for bg in self.bit_generator.spawn(n_children)]


def _recording(method: str):
    def call(self, *args, **kwargs):
        self.calls.append(method)
        return getattr(np.random.Generator, method)(self, *args, **kwargs)
    return call


for _name in NOISE_METHODS:
    setattr(RecordingGenerator, _name, _recording(_name))


@pytest.fixture(scope="module")
def datasets() -> dict[str, Dataset]:
    return {"people": people_data(0), "taxi": load_taxi_sim(n_private=2000, n_public=2000)}


def in_process(name: str) -> bool:
    """Mechanisms whose noise this process draws: not the test doubles, not external
    contestants (their noise is drawn by their own library in their own environment; one
    ``declared`` charge stands for it, tests/test_external.py covers them)."""
    return not name.startswith("test_") and getattr(mechanism_class(name), "accounting",
                                                    "ledger") != "declared"


def private_mechanisms() -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
            for n in MECHANISMS if in_process(n) and mechanism_class(n).reference is None]


def data_for(name: str, datasets: dict[str, Dataset]) -> Dataset:
    mech = make_mechanism(name, FAST.get(name, {}))
    for data in datasets.values():
        try:
            mech.check_applicable(data)
            return data
        except NotApplicable:
            continue
    raise AssertionError(f"{name} applies to none of the conformance datasets")


def run(name: str, data: Dataset, budget: Budget, accountant: str, seed: int,
        sampler=None, observer=None):
    """One run; returns (output or None when stopped, ledger, records, generator calls)."""
    calls: list[str] = []
    records = []
    ledger = Ledger(budget, accountant, unit=data.ledger_unit)  # type: ignore[arg-type]
    release = Releaser(ledger, sampler or NumpySampler(np.random.default_rng([seed, 1])),
                       observer or records.append)
    rng = RecordingGenerator(np.random.PCG64(seed), calls)
    out = make_mechanism(name, FAST.get(name, {})).fit_sample(data, budget, release, rng)
    return out, ledger, records, calls


#: (mechanism, dataset, accountant) -> the first run of :func:`conformance_problems`, which
#: the release-done test reads too (the runs are deterministic; a JAX mechanism's run takes
#: tens of seconds).
FIRST_RUNS: dict[tuple[str, str, str], tuple] = {}


def first_run(name: str, data: Dataset, accountant: str) -> tuple:
    key = (name, data.name, accountant)
    if key not in FIRST_RUNS:
        FIRST_RUNS[key] = run(name, data, Budget(2.0, 1e-6), accountant, seed=3)
    return FIRST_RUNS[key]


def conformance_problems(name: str, data: Dataset, accountant: str) -> list[str]:
    """Checks 1-4 of the module docstring; the problems found (empty: conforms)."""
    budget = Budget(2.0, 1e-6)
    problems = []
    out, ledger, records, calls = first_run(name, data, accountant)
    noise_calls = sorted(set(calls) & set(NOISE_METHODS))
    if noise_calls:
        problems.append(f"draws {noise_calls} from the post-processing generator, outside "
                        "the release API")
    seen = [(r.name, r.kind, r.scale) for r in records]
    charged = [(c.name, c.kind, c.scale) for c in ledger.charges]
    if charged != seen:
        problems.append(f"{len(charged)} ledger charges but {len(seen)} releases through the "
                        "API (or they differ): noise drawn outside the release API")
    eps, delta = ledger.spent()
    if eps > budget.epsilon or delta > budget.delta:
        problems.append(f"spent ({eps:g}, {delta:g}) over the budget")
    invalid = data.schema.problems(out)
    if invalid:
        problems.append(f"invalid output: {invalid[:2]}")
    if name not in NOT_REPLAYABLE:
        twin_records: list = []
        replay, *_ = run(name, without_one_person(data), budget, accountant, seed=3,
                         sampler=ReplaySampler(records), observer=twin_records.append)
        if not replay.reset_index(drop=True).equals(out.reset_index(drop=True)):
            problems.append("the output on neighbouring data with the same releases differs: "
                            "it reads the private data outside its releases")
    return problems


@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
@pytest.mark.parametrize("name", private_mechanisms())
def test_every_mechanism_conforms(name, accountant, datasets):
    data = data_for(name, datasets)
    assert conformance_problems(name, data, accountant) == []


@pytest.mark.parametrize("name", private_mechanisms())
def test_release_done_ends_the_run_after_its_last_release(name, datasets):
    """With ``stop_after_releases`` the run ends in ``done()``, having made every release
    the full run makes (same names, in order)."""
    data = data_for(name, datasets)
    budget = Budget(2.0, 1e-6)
    full = first_run(name, data, "gdp")[2]
    stopped = []
    release = Releaser(Ledger(budget, unit=data.ledger_unit),
                       NumpySampler(np.random.default_rng([3, 1])), stopped.append,
                       stop_after_releases=True)
    with pytest.raises(ReleasesComplete):
        make_mechanism(name, FAST.get(name, {})).fit_sample(
            data, budget, release, np.random.default_rng(3))
    assert [r.name for r in stopped] == [r.name for r in full]


@pytest.mark.parametrize("name", [n for n in MECHANISMS if in_process(n)])
def test_check_applicable_says_not_applicable_and_nothing_else(name, datasets):
    mech = make_mechanism(name, FAST.get(name, {}))
    verdicts = []
    for data in datasets.values():
        try:
            mech.check_applicable(data)
            verdicts.append(True)
        except NotApplicable as exc:
            assert str(exc)
            verdicts.append(False)
    assert any(verdicts), f"{name} applies to none of the conformance datasets"
    record_only = dataclasses.replace(datasets["taxi"], unit="record")
    try:
        mech.check_applicable(record_only)
    except NotApplicable:
        pass


def test_a_mechanism_drawing_noise_outside_the_api_fails(datasets):
    problems = conformance_problems("test_bypass_independent", datasets["people"], "gdp")
    assert any("outside the release API" in p for p in problems)
    assert any("reads the private data outside its releases" in p for p in problems)


def test_the_honest_twin_of_the_bypass_double_conforms(datasets):
    assert conformance_problems("independent", datasets["people"], "gdp") == []
