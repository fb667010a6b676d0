"""A sweep's progress counts runs done / in flight / failed from the sweep folder, and
its ETA weights runs by their expected cost, so it never shows less than half the remaining
time after the first 10 runs, even when the fast mechanisms finish first and the prior costs
are off by a factor of 2.5 either way (a simulated sweep, two workers, Hydra's job order).

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

from __future__ import annotations

import heapq
import io
import json
import time

import numpy as np
import pytest

from dp_arena.sweep.progress import (
    RELATIVE_COST,
    ProgressMonitor,
    RunState,
    counts,
    eta_seconds,
    progress_line,
    run_group,
    sweep_state,
)
from dp_arena.sweep.records import SweepPlan, from_json

#: The default sweep's mechanisms in Hydra's order (mechanism-major: fast ones come first).
DEFAULT = ["independent", "archetype", "prefix_tree", "mst", "aim", "adaptive_grid",
           "adaptive_grid", "resample", "public_only", "uniform"]


def simulate(seconds: dict[str, float], order: list[str], workers: int, rng) -> list[tuple]:
    """Greedy dispatch in ``order`` over ``workers``; returns (start, end, mechanism) per run."""
    free = [(0.0, w) for w in range(workers)]
    out = []
    for mech in order:
        start, w = heapq.heappop(free)
        end = start + seconds[mech] * float(rng.uniform(0.7, 1.3))
        out.append((start, end, mech))
        heapq.heappush(free, (end, w))
    return out


def states_at(schedule: list[tuple], now: float) -> list[RunState]:
    return [RunState(m, "done", e - s) if e <= now else
            RunState(m, "running", now - s) if s <= now else RunState(m, "pending")
            for s, e, m in schedule]


def worst_ratio(seconds: dict[str, float], order: list[str], workers: int = 2,
                seed: int = 0) -> float:
    """The smallest ETA / true remaining time over every moment a run finishes, after 10."""
    schedule = simulate(seconds, order, workers, np.random.default_rng(seed))
    end = max(e for _, e, _ in schedule)
    ratios = []
    for k, finish in enumerate(sorted(e for _, e, _ in schedule)[:-1], start=1):
        if k < 10:
            continue
        eta = eta_seconds(states_at(schedule, finish), workers)
        ratios.append(eta / (end - finish))
    return min(ratios)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("off", [0.4, 1.0, 2.5])
def test_eta_is_never_below_half_the_remaining_time_after_ten_runs(seed, off):
    """True costs: the prior times a per-mechanism factor in [off/1.5, off*1.5] (the prior is
    wrong by up to ``off`` x 1.5), each run +-30%; 3 trials x 2 epsilons per mechanism."""
    rng = np.random.default_rng(100 + seed)
    seconds = {m: 0.8 * RELATIVE_COST[m] * off * float(rng.uniform(1 / 1.5, 1.5))
               for m in sorted(set(DEFAULT))}
    order = [m for m in DEFAULT for _ in range(6)]
    assert worst_ratio(seconds, order, seed=seed) >= 0.5


def test_the_mean_over_finished_runs_would_fail_this(monkeypatch):
    """The old ETA (elapsed / done x left) on the same sweep: far below half (so the test above
    measures something)."""
    seconds = {m: 0.8 * RELATIVE_COST[m] for m in sorted(set(DEFAULT))}
    seconds["adaptive_grid"] = 0.8 * 13.0  # its epsilon-10 cost (the slowest group)
    order = [m for m in DEFAULT for _ in range(6)]
    schedule = simulate(seconds, order, 2, np.random.default_rng(0))
    end = max(e for _, e, _ in schedule)
    finish = sorted(e for _, e, _ in schedule)[9]  # the 10th run
    old = finish / 10 * (len(order) - 10)
    assert old < 0.5 * (end - finish)


def test_eta_by_hand():
    prior = {"independent": 1.0, "mst": 40.0, "aim": 60.0}  # the hand figures' prior
    runs = [RunState("independent", "done", 2.0), RunState("independent", "pending"),
            RunState("mst", "done", 80.0), RunState("mst", "running", 30.0),
            RunState("aim", "pending")]
    # independent 2 s, mst 80 s (seen); aim unseen: 1.5 x 60 x max(2/1, 80/40) = 180 s
    # left: 2 + (80 - 30) + 180 = 232 over 2 workers = 116; the longest left is 180
    assert eta_seconds(runs, 2, prior) == pytest.approx(180.0)
    assert eta_seconds(runs, 1, prior) == pytest.approx(232.0)
    runs[2] = RunState("mst", "done", 200.0)  # mst 5 s/unit: aim 450 s, mst left 170 s
    assert eta_seconds(runs, 1, prior) == pytest.approx(2 + 170 + 450)
    assert eta_seconds([RunState("mst", "pending")], 2, prior) is None  # nothing to go by yet
    assert eta_seconds([RunState("mst", "done", 5.0)], 2, prior) == 0.0


def test_runs_of_one_mechanism_at_another_epsilon_cost_their_own_group():
    """The quickstart's last minute (measured: ETA 13 s with 31 s to go): adaptive_grid runs at
    epsilon 1 took 18 s and at epsilon 10 75 s; one epsilon-10 run has run 35 s. By the
    mechanism's mean (47 s) it had 12 s left; by its group, 40 s."""
    def ag(eps, status, seconds=0.0):
        return RunState("adaptive_grid", status, seconds, f"adaptive_grid eps={eps} trial=0",
                        run_group(f"adaptive_grid eps={eps} trial=0"))
    runs = [ag(1, "done", 18.0), ag(1, "done", 18.0), ag(10, "done", 75.0), ag(10, "done", 75.0),
            ag(10, "running", 35.0)]
    assert eta_seconds(runs, 2) == pytest.approx(40.0)
    # a group with nothing finished costs its mechanism's finished runs, each scaled to the
    # group's epsilon by EPSILON_EXPONENT (adaptive_grid: x 10 ** 0.46 = 2.884 from epsilon 1 to
    # 10): mean(18, 20) x 2.884 = 54.8 s (the quickstart's epsilon-10 runs took 75 s after
    # epsilon-1 runs of 18 s: 0.73 of it, where the mechanism's mean alone gave 0.25); the
    # prior and the other mechanisms no longer matter once the mechanism has run
    prior = {"independent": 1.0, "adaptive_grid": 20.0}
    runs = [ag(1, "done", 18.0), ag(1, "done", 20.0), ag(10, "pending"),
            RunState("independent", "done", 3.0)]
    assert eta_seconds(runs, 1, prior) == pytest.approx(19.0 * 10 ** 0.46)
    runs[-1] = RunState("independent", "done", 0.5)
    assert eta_seconds(runs, 1, prior) == pytest.approx(19.0 * 10 ** 0.46)
    assert run_group("mst[quick] eps=10 trial=2") == "mst[quick] eps=10"


def test_a_run_past_its_estimate_still_counts_as_work_left():
    runs = [RunState("independent", "done", 1.0), RunState("independent", "running", 50.0)]
    assert eta_seconds(runs, 2) == pytest.approx(12.5)  # a quarter of what it has run


def write(path, record):
    path.mkdir(parents=True, exist_ok=True)
    (path / ("outcome.json" if "status" in record else "started.json")).write_text(
        json.dumps(record))


def plan_of(n: int) -> SweepPlan:
    jobs = [{"index": i, "verdict": "run", "mechanism": "independent", "label": f"job{i}"}
            for i in range(n)]
    return from_json(SweepPlan, {"total": n, "jobs": jobs + [{"index": n, "verdict": "n/a",
                                                              "mechanism": "aim"}]})


def test_state_is_read_from_the_sweep_folder(tmp_path):
    now = time.time()
    write(tmp_path / "0", {"index": 0, "started": now - 10})
    write(tmp_path / "0", {"index": 0, "status": "FINISHED", "wall_seconds": 4.0})
    write(tmp_path / "1", {"index": 1, "status": "FAILED", "wall_seconds": 2.0})
    write(tmp_path / "2", {"index": 2, "started": now - 3})
    write(tmp_path / "4", {"index": 4, "status": "N/A"})
    runs = sweep_state(tmp_path, plan_of(4), now=now)
    assert [r.status for r in runs] == ["done", "failed", "running", "pending"]
    assert runs[2].seconds == pytest.approx(3.0)
    c = counts(runs)
    assert (c.done, c.running, c.failed, c.total) == (2, 1, 1, 4)
    line = progress_line(runs, 2)
    assert line.startswith("[2/4] 1 in flight (job2 3s), 1 failed  ETA ")


def test_the_monitor_prints_plain_lines_when_not_a_terminal(tmp_path):
    stream = io.StringIO()
    monitor = ProgressMonitor(tmp_path, plan_of(2), 2, stream=stream, poll_s=0.05,
                              heartbeat_s=0.0, echo_changes=True).start()
    write(tmp_path / "0", {"index": 0, "started": time.time()})
    deadline = time.time() + 10
    while "1 in flight" not in stream.getvalue() and time.time() < deadline:
        time.sleep(0.05)
    write(tmp_path / "0", {"index": 0, "status": "FINISHED", "wall_seconds": 1.0})
    while "[1/2]" not in stream.getvalue() and time.time() < deadline:
        time.sleep(0.05)
    monitor.stop()
    text = stream.getvalue()
    assert "progress [0/2] 1 in flight (job0" in text and "progress [1/2] 0 in flight" in text
    assert "\r" not in text and "\x1b" not in text  # plain lines, no terminal control


# ----- the default competition, labelled runs with a per-run overhead --------------
#: The default competition's mechanisms as (mechanism, label) in Hydra's order, and each one's
#: own seconds of work at epsilon 1 (adaptive_grid 2.9 times that at epsilon 10).
COMPETITION = [("independent", "independent", 0.5), ("archetype", "archetype", 5.0),
               ("prefix_tree", "prefix_tree", 2.5), ("mst", "mst[quick]", 2.0),
               ("aim", "aim[quick]", 2.3), ("adaptive_grid", "adaptive_grid", 10.0),
               ("adaptive_grid", "adaptive_grid[zcdp]", 10.0), ("resample", "resample", 0.5),
               ("public_only", "public_only", 0.5), ("uniform", "uniform", 0.3)]
SLOW = {"archetype", "prefix_tree", "mst", "aim", "adaptive_grid"}  # prior cost >= 2


def competition_schedule(overhead: float, jitter: float, seed: int) -> list[tuple]:
    """(start, end, mechanism, label) of the 60 runs on 2 workers: each run costs
    (overhead + work) x uniform(1 - jitter, 1 + jitter)."""
    rng = np.random.default_rng(seed)
    free = [(0.0, 0), (0.0, 1)]
    out = []
    for mech, name, work in COMPETITION:
        for eps in (1, 10):
            for trial in range(3):
                start, w = heapq.heappop(free)
                own = work * (2.9 if mech == "adaptive_grid" and eps == 10 else 1.0)
                end = start + (overhead + own) * float(rng.uniform(1 - jitter, 1 + jitter))
                out.append((start, end, mech, f"{name} eps={eps} trial={trial}"))
                heapq.heappush(free, (end, w))
    return out


def labelled_states(schedule: list[tuple], now: float) -> list[RunState]:
    def state(s, e, m, label):
        status, secs = ("done", e - s) if e <= now else ("running", now - s) if s <= now \
            else ("pending", 0.0)
        return RunState(m, status, secs, label, run_group(label))
    return [state(*run) for run in schedule]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("overhead", [1.0, 8.0])
def test_eta_stops_overestimating_once_every_slow_mechanism_has_run(seed, overhead):
    """Every moment a run finishes, from the first at which each slow mechanism has a finished
    run until the last runs (true time left at least the longest run): ETA / true time left
    within [1/3, 2.25]. Derivation: a group with finished runs is priced at their mean, within
    [0.8/1.2, 1.2/0.8] = [0.67, 1.5] of any of its runs (jitter 0.2); adaptive_grid at epsilon
    10 priced from its epsilon-1 runs x 2.884 is (overhead + 10) x 2.884 / (overhead + 29) =
    1.14 (overhead 1) or 1.46 (overhead 8) x its true cost, so within [0.67, 1.5 x 1.46 =
    2.19]; a mechanism with no run yet (resample, public_only, uniform) is priced 1.5 x the
    fitted cost, within [0.67, 1.5 x 1.5 = 2.25]. Every remaining run's price being within
    [a, b] = [0.67, 2.25] of its cost, the ETA (at least the work over two workers and the
    longest run) is at most b x the true time (which is at least both) and at least a / 2 of
    it (a greedy schedule ends within the work over two workers plus the longest run).
    The old rule (a group with no finished run priced at no less than 1.5 x prior x the
    largest seconds per unit, its mechanism seen or not) gave up to 4.2 x here with overhead 8
    (4.6 x in the first half)."""
    schedule = competition_schedule(overhead, 0.2, seed)
    end = max(e for _, e, _, _ in schedule)
    longest = max(e - s for s, e, _, _ in schedule)
    checked = 0
    for finish in sorted(e for _, e, _, _ in schedule):
        runs = labelled_states(schedule, finish)
        seen = {r.mechanism for r in runs if r.status == "done"}
        if not SLOW <= seen or end - finish < longest:
            continue
        ratio = eta_seconds(runs, 2) / (end - finish)
        assert 1 / 3 <= ratio <= 2.25, (finish, ratio)
        checked += 1
    assert checked >= 5  # the claim covers a good part of the sweep
