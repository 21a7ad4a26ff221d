"""Intervals from the fit's information (``fit(intervals="information")``) against the
bootstrap's: the same widths where matches are many, coverage of the true ratings by
simulation, and the bots it leaves to resampling (few matches, open ends, a lost link)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_ratings import simulate

from referee.league.standings import BOOTSTRAP_BOTS, BOOTSTRAP_MATCHES, interval_method
from referee.results.ratings import FEW_MATCHES, MatchOutcome, fit

FIELD = {f"b{i:02d}": 1500.0 + 60.0 * (i - 5.5) for i in range(12)}


def test_information_intervals_agree_with_the_bootstrap_where_matches_are_many() -> None:
    # 12 bots, 600 four-seat matches: some 200 matches each.
    outcomes = simulate(FIELD, 600, 4, seed=3)
    boot = {s.bot: s for s in fit(outcomes, bootstrap=400, seed=1).standings}
    info = {s.bot: s for s in fit(outcomes, bootstrap=400, intervals="information").standings}
    assert boot.keys() == info.keys()
    for bot, b in boot.items():
        i = info[bot]
        assert i.rating == b.rating  # the fit is the same; only the intervals differ
        assert i.ci_low < i.rating < i.ci_high
        ratio = (i.ci_high - i.ci_low) / (b.ci_high - b.ci_low)
        assert 0.85 < ratio < 1.15, (bot, ratio)
        # Centred alike: each end within a fifth of the bootstrap's width.
        assert abs(i.ci_low - b.ci_low) < 0.2 * (b.ci_high - b.ci_low)
        assert abs(i.ci_high - b.ci_high) < 0.2 * (b.ci_high - b.ci_low)
        assert not i.unidentified and i.cut_share == 0.0


def test_information_intervals_hold_the_true_rating_about_95_percent_of_the_time() -> None:
    # 40 simulated leagues of 12 bots and 150 four-seat matches (50 each): 480 intervals.
    held = total = 0
    for seed in range(40):
        outcomes = simulate(FIELD, 150, 4, seed=100 + seed)
        # 50 resamples only check the links: no bot here is left to resampling.
        for s in fit(outcomes, bootstrap=50, intervals="information").standings:
            assert not (s.low_open or s.high_open)
            held += s.ci_low <= FIELD[s.bot] <= s.ci_high
            total += 1
    # Binomial(480, 0.95) has a standard deviation of 1%: 91-99% is four of them.
    assert 0.91 <= held / total <= 0.99, held / total


def test_the_plain_information_would_be_too_narrow_for_four_seat_matches() -> None:
    # One match's six pairwise games come from one order of places: counted as
    # independent games (the curvature alone), the intervals would be some 15-20%
    # narrower. The sandwich keeps the bootstrap's width (see the first test); here the
    # width is checked against the curvature's, computed by hand for two bots.
    outcomes = [
        MatchOutcome(("a", "b", "c", "d"), tuple(p), key=f"m{k:03d}")
        for k, p in enumerate(([1, 2, 3, 4], [2, 1, 4, 3], [3, 4, 1, 2], [4, 3, 2, 1]) * 30)
    ]
    info = fit(outcomes, intervals="information").standings
    # Every bot wins half its games: θ = 0, each of its 360 games has p(1-p) = 1/4. The
    # curvature alone says var(θa − mean) ≈ 3/4 · 1/(360/4 · 4/3) (four bots, all alike).
    naive = 1.96 * math.sqrt(0.75 / (360 / 4 * 4 / 3)) * 400 / math.log(10) * 2
    for s in info:
        assert s.ci_high - s.ci_low > 1.1 * naive


def test_bots_with_few_matches_or_an_open_end_keep_resampled_intervals() -> None:
    established = simulate(FIELD, 400, 4, seed=5)
    newcomer = [
        MatchOutcome(("new", "b00", "b01", "b02"), (1, 2, 3, 4), key="zz1"),
        MatchOutcome(("new", "b03", "b04", "b05"), (1, 3, 2, 4), key="zz2"),
        MatchOutcome(("new", "b06", "b07", "b08"), (1, 2, 4, 3), key="zz3"),
    ]
    one_match = [MatchOutcome(("once", "b09", "b10", "b11"), (2, 1, 3, 4), key="zz4")]
    outcomes = [*established, *newcomer, *one_match]
    boot = {s.bot: s for s in fit(outcomes, bootstrap=300, min_matches=5).standings}
    info = {
        s.bot: s
        for s in fit(outcomes, bootstrap=300, min_matches=5, intervals="information").standings
    }
    # "new" never lost: its high end is open under both, its low end resampled.
    assert info["new"].high_open and info["new"].ci_high == math.inf
    assert boot["new"].high_open
    assert info["new"].ci_low == pytest.approx(boot["new"].ci_low, abs=60)
    # "once" played one match: left out of about e⁻¹ of the resamples, linked to the
    # others by that match alone. Both methods say its interval cannot be measured.
    assert info["once"].matches < FEW_MATCHES
    assert info["once"].ci_low == pytest.approx(boot["once"].ci_low, abs=80)
    assert info["once"].ci_high == pytest.approx(boot["once"].ci_high, abs=80)
    assert info["once"].provisional and boot["once"].provisional


def test_a_group_linked_by_one_match_is_unidentified_under_both_methods() -> None:
    left = simulate({"a": 1400.0, "b": 1500.0, "c": 1600.0}, 60, 3, seed=46)
    right = [
        MatchOutcome(o.bots, o.places, key="r" + o.key)
        for o in simulate({"x": 1450.0, "y": 1550.0, "z": 1500.0}, 60, 3, seed=47)
    ]
    # One four-seat match, c ahead of x ahead of b: every end is bounded, and x, y and z
    # (60 matches each, not flagged) hang on that match alone.
    bridge = MatchOutcome(("c", "x", "b", "y"), (1, 2, 3, 4), key="bridge")
    outcomes = [*left, *right, bridge]
    boot = {s.bot: s for s in fit(outcomes, bootstrap=200).standings}
    result = fit(outcomes, bootstrap=200, intervals="information")
    info = {s.bot: s for s in result.standings}
    for bot in info:
        assert info[bot].unidentified == boot[bot].unidentified
        assert info[bot].cut_share == pytest.approx(boot[bot].cut_share, abs=0.1)
    # The side without most reference bots is cut off when the match is not drawn (e⁻¹).
    cut = {s.bot for s in result.standings if s.unidentified}
    assert cut in ({"a", "b", "c"}, {"x", "y", "z"})
    assert all(0.25 < info[b].cut_share < 0.5 for b in cut)
    assert any("lost the link" in w for w in result.warnings)


def test_the_anchor_bot_has_no_interval_and_the_others_are_read_against_it() -> None:
    outcomes = simulate(FIELD, 300, 4, seed=7)
    by_bot = {s.bot: s for s in fit(outcomes, anchor="b05", intervals="information").standings}
    assert by_bot["b05"].anchor and by_bot["b05"].ci_low == by_bot["b05"].ci_high == 1500.0
    assert not by_bot["b05"].unidentified
    mean = {s.bot: s for s in fit(outcomes, intervals="information").standings}
    # Read against one bot rather than the mean of twelve, an interval widens.
    assert by_bot["b00"].ci_high - by_bot["b00"].ci_low > mean["b00"].ci_high - mean["b00"].ci_low


def test_groups_that_never_met_each_get_their_own_scale() -> None:
    left = simulate({"a": 1300.0, "b": 1500.0, "c": 1700.0}, 80, 3, seed=41)
    right = [
        MatchOutcome(o.bots, o.places, key="r" + o.key)
        for o in simulate({"x": 1400.0, "y": 1600.0, "z": 1650.0, "w": 1350.0}, 80, 3, seed=42)
    ]
    boot = {s.bot: s for s in fit([*left, *right], bootstrap=300).standings}
    info = {
        s.bot: s for s in fit([*left, *right], bootstrap=300, intervals="information").standings
    }
    for bot, b in boot.items():
        ratio = (info[bot].ci_high - info[bot].ci_low) / (b.ci_high - b.ci_low)
        assert 0.75 < ratio < 1.3, (bot, ratio)


def test_an_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="intervals must be"):
        fit(simulate(FIELD, 10, 4, seed=1), intervals="laplace")  # type: ignore[arg-type]


def test_a_league_bootstraps_while_small_and_reads_the_information_when_large() -> None:
    assert interval_method(BOOTSTRAP_BOTS, BOOTSTRAP_MATCHES) == "bootstrap"
    assert interval_method(BOOTSTRAP_BOTS + 1, 10) == "information"
    assert interval_method(10, BOOTSTRAP_MATCHES + 1) == "information"
    assert np.isfinite(BOOTSTRAP_BOTS)
