"""The sequential test of ``referee compare``, checked as a statistician would: by its error
rates on simulated paired differences with a known truth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from referee.compare.sprt import (
    H0,
    H1,
    Sprt,
    first_verdict,
    fixed_size_pairs,
    simulate,
    state,
)

TESTS = 4000


def _tolerance(p: float, tests: int = TESTS) -> float:
    """Three binomial standard errors of a rate p estimated from ``tests`` simulated tests:
    a correct test fails this check about once in 700 runs (one-sided), a test whose true
    rate is off by more than that fails it most of the time."""
    return 3.0 * math.sqrt(p * (1.0 - p) / tests)


def _normal(mean: float, sd: float):  # type: ignore[no-untyped-def]
    return lambda rng, shape: rng.normal(mean, sd, shape)


def _skewed(mean: float, sd: float):  # type: ignore[no-untyped-def]
    # Exponential minus its mean: skewness 2, like a bot that now and then collects a big
    # pain-suit penalty. Mean ``mean``, standard deviation ``sd``.
    return lambda rng, shape: mean + sd * (rng.exponential(1.0, shape) - 1.0)


def _integer_scores(mean: float, sd: float):  # type: ignore[no-untyped-def]
    # Whole points, as match scores are: a rounded normal.
    return lambda rng, shape: np.round(rng.normal(mean, sd, shape))


CASES = [
    # (name, sprt, sd of a paired difference, draw, max pairs)
    ("small effect, normal", Sprt(0.0, 5.0, 0.05, 0.05), 40.0, _normal, 3000),
    ("wide bounds, normal", Sprt(0.0, 40.0, 0.05, 0.05), 40.0, _normal, 400),
    ("wide bounds, skewed", Sprt(0.0, 40.0, 0.05, 0.05), 40.0, _skewed, 400),
    ("alpha 0.1, beta 0.2, whole points", Sprt(-2.0, 8.0, 0.1, 0.2), 30.0, _integer_scores, 2000),
]


@pytest.mark.parametrize(("name", "sprt", "sd", "draw", "max_pairs"), CASES)
def test_accepts_h1_at_most_alpha_when_the_truth_is_lower(name, sprt, sd, draw, max_pairs):  # type: ignore[no-untyped-def]
    result = simulate(sprt, draw(sprt.lower, sd), tests=TESTS, max_pairs=max_pairs, seed=1)
    assert result.accept_h1 <= sprt.alpha + _tolerance(sprt.alpha), (name, result)
    assert result.undecided < 0.01, (name, result)


@pytest.mark.parametrize(("name", "sprt", "sd", "draw", "max_pairs"), CASES)
def test_accepts_h1_at_least_one_minus_beta_when_the_truth_is_upper(
    name, sprt, sd, draw, max_pairs
):  # type: ignore[no-untyped-def]
    result = simulate(sprt, draw(sprt.upper, sd), tests=TESTS, max_pairs=max_pairs, seed=2)
    power = 1.0 - sprt.beta
    assert result.accept_h1 >= power - _tolerance(power), (name, result)


def test_needs_fewer_pairs_on_average_than_a_fixed_size_test_of_the_same_power() -> None:
    sprt = Sprt(0.0, 5.0, 0.05, 0.05)
    fixed = fixed_size_pairs(sprt, 40.0)
    assert fixed == math.ceil(((1.6448536269514722 * 2) * 40.0 / 5.0) ** 2)
    for truth in (sprt.lower, sprt.upper):
        result = simulate(sprt, _normal(truth, 40.0), tests=2000, max_pairs=3000, seed=3)
        assert result.mean_pairs < 0.7 * fixed


def test_a_test_with_bounds_too_close_for_the_cap_stays_undecided() -> None:
    result = simulate(Sprt(0.0, 1.0), _normal(0.5, 40.0), tests=200, max_pairs=50, seed=4)
    assert result.undecided > 0.9
    assert result.mean_pairs == pytest.approx(50.0, abs=2.0)


def test_llr_is_the_profile_likelihood_ratio_of_the_normal_model() -> None:
    rng = np.random.default_rng(5)
    d = rng.normal(3.0, 10.0, 37)
    sprt = Sprt(0.0, 5.0)

    def profile_log_likelihood(mu: float) -> float:
        var = float(np.mean((d - mu) ** 2))  # the maximising variance at this mean
        return float(-0.5 * d.size * (math.log(2 * math.pi * var) + 1.0))

    expected = profile_log_likelihood(5.0) - profile_log_likelihood(0.0)
    assert state(sprt, d.tolist()).llr == pytest.approx(expected, rel=1e-12)
    # To first order it is fastchess's normalised SPRT: n δ (2x̄ − μ₀ − μ₁) / (2σ̂²).
    small = Sprt(0.0, 0.05)
    var = float(np.mean((d - d.mean()) ** 2))
    approx = d.size * 0.05 * (2 * d.mean() - 0.05) / (2 * var)
    assert state(small, d.tolist()).llr == pytest.approx(approx, rel=1e-2)


def test_first_verdict_is_the_first_crossing_in_deal_order() -> None:
    sprt = Sprt(0.0, 10.0, min_pairs=3)
    strong = [30.0, 31.0, 29.0] * 4
    verdict, at = first_verdict(sprt, strong)
    assert verdict == H1
    assert at >= sprt.min_pairs
    # Every shorter prefix is undecided, so the verdict came at the first crossing.
    for n in range(sprt.min_pairs, at):
        assert sprt.verdict(state(sprt, strong[:n]).llr, n) is None
    assert sprt.verdict(state(sprt, strong[:at]).llr, at) == H1
    # Later pairs do not change a verdict already reached.
    assert first_verdict(sprt, [*strong, -500.0, -500.0]) == (H1, at)
    weak = [-30.0, -31.0, -29.0] * 4
    assert first_verdict(sprt, weak)[0] == H0


def test_no_verdict_before_min_pairs_however_clear() -> None:
    sprt = Sprt(0.0, 5.0, min_pairs=10)
    clear = [10.0 + (k % 2) for k in range(10)]
    verdict, at = first_verdict(sprt, clear[:9])
    assert (verdict, at) == (None, 9)
    assert state(sprt, clear[:9]).llr > sprt.accept_h1_at
    assert first_verdict(sprt, clear) == (H1, 10)


def test_pairs_to_go_estimates_the_remaining_drift() -> None:
    sprt = Sprt(0.0, 5.0)
    rng = np.random.default_rng(6)
    d = rng.normal(5.0, 40.0, 100)
    d = d - d.mean() + 5.0  # mean exactly upper
    s = state(sprt, d.tolist())
    assert s.pairs_to_go is not None
    var = float(np.var(d, ddof=1))
    drift = 0.5 * math.log((var + 25.0) / var)
    assert s.pairs_to_go == math.ceil((sprt.accept_h1_at - s.llr) / drift)
    flat = state(sprt, [2.5 + x for x in (-1.0, 1.0) * 20])
    assert flat.pairs_to_go is None  # mean midway: no drift towards either bound


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lower": 5.0, "upper": 5.0}, "upper = 5 is not above lower = 5"),
        ({"alpha": 0.0}, "alpha = 0.0 is not allowed"),
        ({"beta": 0.7}, "beta = 0.7 is not allowed"),
        ({"upper": math.inf}, "upper = inf is not allowed"),
        ({"min_pairs": 1}, "min_pairs = 1 is not allowed"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message) as info:
        Sprt(**kwargs)
    assert "\n" not in str(info.value)
