"""Whole boards of hand-made runs for the terminal board: DP rows, a public reference and a floor."""

from __future__ import annotations

from tests.support.board import NEW_TAGS, run

NOISE = [0.0, 1.0, -1.0]
LONG = "marginals=<list of 45 #1f2e>,rounds=24,iters=100,max_model_size=80,tol=1e-07,degree=3"


def rows(dp_scores: dict[str, float], public: float | None = None,
         floor: float | None = None, trials: int = 3, epsilons=(1.0, 10.0)) -> list[dict]:
    out = []
    for eps in epsilons:
        for t in range(trials):
            for mech, score in dp_scores.items():
                out.append(run(mech, eps, t, score + eps + NOISE[t], hp=LONG if mech == "aim"
                               else "-", **{**NEW_TAGS, "dataset": "taxi_sim"}))
            if public is not None:
                out.append(run("public_only", eps, t, public, reference="public",
                               private="false", **NEW_TAGS))
            if floor is not None:
                out.append(run("uniform", eps, t, floor, reference="floor", private="false",
                               **NEW_TAGS))
    return out
