"""Rules-engine speed: random playouts of the default 4-player rule set.

Every decision goes through the engine's public API: ``to_act()``, ``legal_actions(seat)``,
a policy function that picks uniformly among the legal actions, and ``apply(seat, action)``.
A round includes its seeded deal. Prints rounds/s and µs per decision, the median of 5
runs.

In the same run it measures OpenSpiel's ``hearts`` driven from Python the same way (chance
outcomes and legal actions picked uniformly, hands/s), when ``pyspiel`` is importable.
OpenSpiel is never a dependency of this project; to include it, run this script from a
throwaway virtual environment that has both::

    python3 -m venv /tmp/os-venv
    /tmp/os-venv/bin/pip install open_spiel -e .
    /tmp/os-venv/bin/python benchmarks/engine.py

The last line is exactly:
``rounds_per_s=<n> openspiel_hearts_per_s=<m|na> ratio=<n/m|na>``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from referee.rules import Action, Round, preset


def _uniform(rng: random.Random) -> Callable[[Sequence[Any]], Any]:
    choice = rng.choice

    def policy(legal: Sequence[Any]) -> Any:
        return choice(legal)

    return policy


def sticheln_run(rounds: int, seed: int) -> tuple[float, float]:
    """Play ``rounds`` random rounds; return (rounds/s, µs per decision)."""
    rules = preset("sticheln")
    policy: Callable[[Sequence[Action]], Action] = _uniform(random.Random(seed))
    decisions = 0
    start = time.perf_counter()
    for i in range(rounds):
        rnd = Round.deal(rules, 4, seed=seed * 1_000_003 + i, dealer=i % 4)
        while not rnd.is_over:
            for seat in rnd.to_act():
                rnd.apply(seat, policy(rnd.legal_actions(seat)))
                decisions += 1
    elapsed = time.perf_counter() - start
    return rounds / elapsed, elapsed / decisions * 1e6


def openspiel_run(hands: int, seed: int) -> float | None:
    """Play ``hands`` random hands of OpenSpiel's hearts; return hands/s, or None."""
    try:
        import pyspiel  # type: ignore[import-not-found]
    except ImportError:
        return None
    game = pyspiel.load_game("hearts")
    policy = _uniform(random.Random(seed))
    start = time.perf_counter()
    for _ in range(hands):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(policy(state.chance_outcomes())[0])
            else:
                state.apply_action(policy(state.legal_actions()))
    return hands / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs to take the median of")
    parser.add_argument("--rounds", type=int, default=4000, help="rounds per run")
    args = parser.parse_args()

    import referee.rules.round as engine_round

    compiled = not engine_round.__file__.endswith(".py")
    print(
        f"engine: {'compiled with mypyc' if compiled else 'pure Python'} ({engine_round.__file__})"
    )
    ours: list[float] = []
    us: list[float] = []
    theirs: list[float] = []
    sticheln_run(200, 0)  # warm-up: caches, allocator
    for run in range(args.runs):
        # Interleaved so that machine noise hits both sides alike.
        rps, usd = sticheln_run(args.rounds, run + 1)
        ours.append(rps)
        us.append(usd)
        hps = openspiel_run(args.rounds // 2, run + 1)
        if hps is not None:
            theirs.append(hps)
        print(
            f"run {run + 1}: sticheln {rps:,.0f} rounds/s ({usd:.2f} µs/decision)"
            + (f", openspiel hearts {hps:,.0f} hands/s" if hps is not None else "")
        )
    rounds_per_s = statistics.median(ours)
    print(f"median: {rounds_per_s:,.0f} rounds/s, {statistics.median(us):.2f} µs per decision")
    if theirs:
        hearts = statistics.median(theirs)
        print(f"median: openspiel hearts {hearts:,.0f} hands/s")
        print(
            f"rounds_per_s={rounds_per_s:.0f} openspiel_hearts_per_s={hearts:.0f} ratio={rounds_per_s / hearts:.2f}"
        )
    else:
        print("openspiel not importable (see this script's docstring to include it)")
        print(f"rounds_per_s={rounds_per_s:.0f} openspiel_hearts_per_s=na ratio=na")


if __name__ == "__main__":
    main()
