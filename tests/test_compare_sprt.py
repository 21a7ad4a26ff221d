"""The sequential test of ``referee compare``, checked as a statistician would: by its error
rates on simulated paired differences with a known truth, on skewed and coarse shapes and
on differences recorded from the sample bots (tests/vectors/compare_differences.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from referee.compare.config import difference_range
from referee.compare.sprt import (
    BETTING,
    CAP,
    H0,
    H1,
    METHODS,
    SPRT,
    WARMUP,
    Sprt,
    first_verdict,
    fixed_size_pairs,
    outlook,
    plain_wald,
    simulate,
    state,
)
from referee.rules import preset

RECORDED = Path(__file__).parent / "vectors" / "compare_differences.json"
TESTS = 1000
SD = 40.0
#: Synthetic differences lie within this many standard deviations of their mean (Sticheln's
#: differences are bounded; the rules' bound at three seats is about ten of them).
SPAN = 10.0


def gamma_shape(skew: float, mean: float, sd: float):  # type: ignore[no-untyped-def]
    """Differences of the given skewness (a shifted, scaled gamma; normal at 0), clipped to
    ±SPAN sd: the left tail at skew −2 is a pain-suit disaster now and then."""

    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        if skew == 0:
            x = rng.normal(0.0, 1.0, shape)
        else:
            k = 4.0 / skew**2
            x = np.sign(skew) * (rng.gamma(k, 1.0, shape) - k) / math.sqrt(k)
        return mean + sd * np.clip(x, -SPAN, SPAN)

    return draw


def lattice_shape(mean: float, sd: float):  # type: ignore[no-untyped-def]
    """A coarse lattice: three values, −sd·√(3/2), 0, +sd·√(3/2) around the mean."""
    step = sd * math.sqrt(1.5)

    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        return mean + step * rng.integers(-1, 2, shape).astype(np.float64)

    return draw


def recorded_shape(sample: np.ndarray, mean: float):  # type: ignore[no-untyped-def]
    """Pairs drawn from recorded differences, shifted to have mean ``mean``."""
    centred = sample - sample.mean() + mean

    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        return rng.choice(centred, size=shape)

    return draw


def spike_shape(equal: float, mean: float, sd: float):  # type: ignore[no-untyped-def]
    """A share ``equal`` of the pairs exactly at the mean, the rest normal: close versions of
    one bot with common random numbers, which play most deals identically."""
    wide = sd / math.sqrt(1.0 - equal)

    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        return mean + np.where(rng.random(shape) < equal, 0.0, rng.normal(0.0, wide, shape))

    return draw


def two_point_shape(rare: float, mean: float, sd: float):  # type: ignore[no-untyped-def]
    """Two values: a large loss with probability ``rare``, a small gain otherwise (skewness
    −(1 − 2·rare)/√(rare(1 − rare)), −4.1 at 0.05): a bot that now and then loses big."""
    s = math.sqrt(rare * (1.0 - rare))
    loss, gain = -(1.0 - rare) / s, rare / s

    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        return mean + sd * np.where(rng.random(shape) < rare, loss, gain)

    return draw


def _bounds(delta: float, method: str = SPRT) -> Sprt:
    return Sprt(
        0.0, delta, 0.05, 0.05, low=-SPAN * SD - delta, high=SPAN * SD + delta, method=method
    )


def _cap(ratio: float) -> int:
    """Enough pairs that nearly every test ends (a cap that cuts tests short costs power)."""
    return int(60 / ratio**2) + 100


SHAPES = [("skew -2", -2.0), ("skew -1", -1.0), ("normal", 0.0), ("skew +1", 1.0), ("skew +2", 2.0)]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("name", "skew"), SHAPES)
@pytest.mark.parametrize("ratio", [0.25, 0.5])
def test_error_rates_hold_on_skewed_differences(
    name: str, skew: float, ratio: float, method: str
) -> None:
    sprt = _bounds(ratio * SD, method)
    cap = _cap(ratio)
    low = simulate(sprt, gamma_shape(skew, sprt.lower, SD), tests=TESTS, max_pairs=cap, seed=1)
    high = simulate(sprt, gamma_shape(skew, sprt.upper, SD), tests=TESTS, max_pairs=cap, seed=2)
    assert low.accept_h1 <= sprt.alpha + 0.01, (name, low)
    assert high.accept_h1 >= 1 - sprt.beta - 0.01, (name, high)


#: Shapes whose skewness is large against the bounds, |g|·δ/σ of 2 or more: Hall's term
#: γ·t tends to 1.25·g·δ/σ at a true bound instead of to 0, and unheld it turned the
#: evidence for the true hypothesis down (power 0.30, 0.60 and 0.77; H0 at ``lower`` 0.55).
STEEP = [
    ("two-point, rare loss 0.05", lambda mean: two_point_shape(0.05, mean, SD), 0.5),
    ("skew -2", lambda mean: gamma_shape(-2.0, mean, SD), 1.0),
    ("skew +2", lambda mean: gamma_shape(2.0, mean, SD), 1.0),
    ("skew -3", lambda mean: gamma_shape(-3.0, mean, SD), 0.5),
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("name", "shape", "ratio"), STEEP, ids=[x[0] for x in STEEP])
def test_error_rates_hold_where_the_skewness_is_large_against_the_bounds(
    name: str,
    shape,
    ratio: float,
    method: str,  # type: ignore[no-untyped-def]
) -> None:
    sprt = _bounds(ratio * SD, method)
    cap = _cap(ratio)
    low = simulate(sprt, shape(sprt.lower), tests=TESTS, max_pairs=cap, seed=22)
    high = simulate(sprt, shape(sprt.upper), tests=TESTS, max_pairs=cap, seed=23)
    # Both hypotheses, both ways: the test must reach the true one, not stall at the cap.
    assert low.accept_h1 <= sprt.alpha + 0.01, (name, low)
    assert low.accept_h0 >= 1 - sprt.alpha - 0.01, (name, low)
    assert high.accept_h1 >= 1 - sprt.beta - 0.01, (name, high)
    assert high.accept_h0 <= sprt.beta + 0.01, (name, high)


@pytest.mark.parametrize(("name", "shape", "ratio"), STEEP, ids=[x[0] for x in STEEP])
def test_the_evidence_for_the_true_hypothesis_grows_without_limit(
    name: str,
    shape,
    ratio: float,  # type: ignore[no-untyped-def]
) -> None:
    # Consistency: at a true bound the evidence for it rises with the pairs, whatever the
    # shape, so that no cap is too far for the test to reach a verdict.
    sprt = _bounds(ratio * SD)
    rng = np.random.default_rng(24)
    up, _ = sprt.wealth(shape(sprt.upper)(rng, (200, 3000)))
    _, down = sprt.wealth(shape(sprt.lower)(rng, (200, 3000)))
    for w, bound in ((up, sprt.accept_h1_at), (down, sprt.accept_h0_at)):
        early, late = np.median(w[:, 999]), np.median(w[:, 2999])
        assert late > early > bound, (name, early, late)


@pytest.mark.parametrize("method", METHODS)
def test_error_rates_hold_on_a_coarse_lattice(method: str) -> None:
    sprt = _bounds(10.0, method)
    low = simulate(sprt, lattice_shape(sprt.lower, SD), tests=TESTS, max_pairs=1060, seed=3)
    high = simulate(sprt, lattice_shape(sprt.upper, SD), tests=TESTS, max_pairs=1060, seed=4)
    assert low.accept_h1 <= sprt.alpha + 0.01, low
    assert high.accept_h1 >= 1 - sprt.beta - 0.01, high


@pytest.mark.parametrize("equal", [0.5, 0.9])
@pytest.mark.parametrize("ratio", [0.25, 0.5])
def test_error_rates_hold_when_most_pairs_are_equal(equal: float, ratio: float) -> None:
    # Without the variance's margin the plain ratio test accepted H1 in 7-9% of these.
    sprt = _bounds(ratio * SD)
    cap = _cap(ratio)
    low = simulate(sprt, spike_shape(equal, sprt.lower, SD), tests=TESTS, max_pairs=cap, seed=12)
    high = simulate(sprt, spike_shape(equal, sprt.upper, SD), tests=TESTS, max_pairs=cap, seed=13)
    assert low.accept_h1 <= sprt.alpha + 0.01, low
    assert high.accept_h1 >= 1 - sprt.beta - 0.01, high


def _recorded() -> list[dict[str, object]]:
    data = json.loads(RECORDED.read_text())
    return list(data["lineups"])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("lineup", _recorded(), ids=lambda x: str(x["name"]))
def test_error_rates_hold_on_recorded_sticheln_differences(
    lineup: dict[str, object], method: str
) -> None:
    sample = np.asarray(lineup["independent"], dtype=np.float64)
    sd = float(sample.std(ddof=1))
    low, high = difference_range(preset(str(lineup["rules"])), int(str(lineup["table_size"])))
    # Bounds a quarter of a standard deviation apart: a test of about a hundred pairs.
    sprt = Sprt(0.0, round(sd / 4, 1), 0.05, 0.05, low=low, high=high, method=method)
    at_lower = simulate(
        sprt, recorded_shape(sample, sprt.lower), tests=TESTS, max_pairs=800, seed=5
    )
    at_upper = simulate(
        sprt, recorded_shape(sample, sprt.upper), tests=TESTS, max_pairs=800, seed=6
    )
    assert at_lower.accept_h1 <= sprt.alpha + 0.01, at_lower
    assert at_upper.accept_h1 >= 1 - sprt.beta - 0.01, at_upper


def test_no_stake_depends_on_its_own_pair() -> None:
    # Ville's inequality needs every stake fixed before its pair is seen: changing pair i
    # changes no factor before it, and its own factor only through the difference itself.
    sprt = Sprt(0.0, 5.0, low=-400.0, high=400.0, method=BETTING)
    rng = np.random.default_rng(7)
    d = rng.normal(2.0, 30.0, 40)
    w1, w0 = sprt.wealth(d)
    changed = d.copy()
    changed[25] = -350.0
    v1, v0 = sprt.wealth(changed)
    assert np.array_equal(w1[:25], v1[:25]) and np.array_equal(w0[:25], v0[:25])
    stake = (v1[25] - v1[24], w1[25] - w1[24])
    # The same stake λ in both: ln(1 + λ(d − lower)) at the two values of d.
    lam = math.expm1(stake[1]) / (d[25] - sprt.lower)
    assert stake[0] == pytest.approx(math.log1p(lam * (-350.0 - sprt.lower)))
    # No stake before the warm-up pairs.
    assert np.all(w1[:WARMUP] == 0.0) and np.all(w0[:WARMUP] == 0.0)


def test_the_worst_possible_difference_keeps_some_wealth() -> None:
    sprt = Sprt(0.0, 40.0, low=-450.0, high=450.0, method=BETTING)
    d = np.array([40.0, 41.0, 39.0, 40.0, -450.0])
    w1, _ = sprt.wealth(d)
    assert w1[-1] - w1[-2] >= math.log(1.0 - CAP) - 1e-12
    _, w0 = sprt.wealth(np.array([0.0, 1.0, -1.0, 0.0, 450.0]))
    assert w0[-1] - w0[-2] >= math.log(1.0 - CAP) - 1e-12


def test_the_rules_bound_every_difference() -> None:
    low, high = difference_range(preset("sticheln"), 3)
    # A round scores at least −(0 + 1 + … + 14) = −105 and at most 45 cards; three rounds.
    assert (low, high) == (-450.0, 450.0)
    assert difference_range(preset("sticheln"), 3, "share") == (-1.0, 1.0)


@pytest.mark.parametrize(("method", "share"), [(SPRT, 0.6), (BETTING, 0.75)])
def test_needs_fewer_pairs_on_average_than_a_fixed_size_test_of_the_same_power(
    method: str, share: float
) -> None:
    sprt = Sprt(0.0, 4.0, 0.05, 0.05, low=-450.0, high=450.0, method=method)
    fixed = fixed_size_pairs(sprt, 40.0)
    assert fixed == math.ceil(((1.6448536269514722 * 2) * 40.0 / 4.0) ** 2)
    for truth, seed in ((sprt.lower, 8), (sprt.upper, 9)):
        result = simulate(sprt, gamma_shape(0.0, truth, 40.0), tests=400, max_pairs=3000, seed=seed)
        assert result.mean_pairs < share * fixed
        assert result.p95_pairs >= result.mean_pairs


def test_the_default_test_needs_fewer_pairs_than_the_betting_one() -> None:
    # Where the bounds are a quarter of a standard deviation apart or more, the betting
    # test's stakes are held down by the rules' range (at a tenth, both take about as many).
    for ratio in (0.25, 0.5):
        fast, sure = _bounds(ratio * SD), _bounds(ratio * SD, BETTING)
        for truth, seed in ((0.0, 14), (ratio * SD, 15)):
            shape = gamma_shape(0.0, truth, SD)
            a = simulate(fast, shape, tests=300, max_pairs=_cap(ratio), seed=seed)
            b = simulate(sure, shape, tests=300, max_pairs=_cap(ratio), seed=seed)
            assert a.mean_pairs < 0.75 * b.mean_pairs, (ratio, truth, a, b)


def test_common_random_numbers_and_the_default_test_need_half_the_pairs_of_before() -> None:
    # The close lineup (the heuristic bot against itself playing a random card one time in
    # ten): its recorded differences with shared bot seeds under today's test, against its
    # differences with seeds of their own under Wald's test with the variance estimated
    # (what compare ran before), both at the recorded mean, bounds 0 / 5.
    lineup = next(x for x in _recorded() if x["name"] == "heuristic-eps-vs-heuristic-4")
    crn = np.asarray(lineup["crn"], dtype=np.float64)
    own = np.asarray(lineup["independent"], dtype=np.float64)
    mean = float(own.mean())
    sprt = Sprt(0.0, 5.0, low=-450.0, high=450.0)
    now = simulate(sprt, recorded_shape(crn, mean), tests=TESTS, max_pairs=3000, seed=16)
    before = _plain_wald_pairs(sprt, recorded_shape(own, mean), tests=TESTS, seed=17)
    assert now.undecided == 0.0
    assert now.mean_pairs <= 0.5 * before, (now.mean_pairs, before)


def _plain_wald_pairs(sprt: Sprt, draw, *, tests: int, seed: int) -> float:  # type: ignore[no-untyped-def]
    """Mean pairs of Wald's SPRT on the normal likelihood with the variance estimated under
    each hypothesis, ln Λ = (n/2) ln(S₀/S₁) (compare's test before the betting one)."""
    d = draw(np.random.default_rng(seed), (tests, 3000))
    n = np.arange(1, d.shape[1] + 1, dtype=np.float64)
    llr = plain_wald(sprt, d)
    a = math.log((1 - sprt.beta) / sprt.alpha)
    crossed = (n >= sprt.min_pairs) & ((llr >= a) | (llr <= -a))
    return float((crossed.argmax(axis=1) + 1).mean())


def test_a_test_with_bounds_too_close_for_the_cap_stays_undecided() -> None:
    for method in METHODS:
        sprt = Sprt(0.0, 1.0, low=-450.0, high=450.0, method=method)
        result = simulate(sprt, gamma_shape(0.0, 0.5, 40.0), tests=200, max_pairs=50, seed=4)
        assert result.undecided > 0.9
        assert result.mean_pairs == pytest.approx(50.0, abs=2.0)


@pytest.mark.parametrize("method", METHODS)
def test_expected_pairs_match_the_simulated_mean(method: str) -> None:
    sprt = Sprt(0.0, 8.0, low=-450.0, high=450.0, method=method)
    for truth, seed in ((sprt.lower, 10), (sprt.upper, 11), (4.0, 18), (20.0, 19)):
        expected = sprt.expected_pairs(truth, 40.0)
        assert expected is not None
        result = simulate(sprt, gamma_shape(0.0, truth, 40.0), tests=400, max_pairs=3000, seed=seed)
        if method == BETTING and truth == 4.0:
            continue  # the betting estimate is for the bounds, not the middle
        assert result.mean_pairs == pytest.approx(expected, rel=0.25), truth
    # Midway with a huge spread the wealths barely grow: far beyond any cap.
    midway = Sprt(0.0, 1.0, low=-450.0, high=450.0, method=method).expected_pairs(0.5, 400.0)
    assert midway is None or midway > 1e5


def test_first_verdict_is_the_first_crossing_in_deal_order() -> None:
    sprt = Sprt(0.0, 10.0, min_pairs=3, low=-100.0, high=100.0)
    strong = [30.0, 31.0, 29.0] * 8
    verdict, at = first_verdict(sprt, strong)
    assert verdict == H1
    assert at >= sprt.min_pairs
    for n in range(sprt.min_pairs, at):
        s = state(sprt, strong[:n])
        assert sprt.verdict(s.log_h1, s.log_h0, n) is None
    s = state(sprt, strong[:at])
    assert sprt.verdict(s.log_h1, s.log_h0, at) == H1
    # Later pairs do not change a verdict already reached.
    assert first_verdict(sprt, [*strong, -90.0, -90.0]) == (H1, at)
    weak = [-30.0, -31.0, -29.0] * 8
    assert first_verdict(sprt, weak)[0] == H0


def test_no_verdict_before_min_pairs_however_clear() -> None:
    sprt = Sprt(0.0, 5.0, min_pairs=10, low=-50.0, high=50.0)
    clear = [40.0 + (k % 2) for k in range(10)]
    verdict, at = first_verdict(sprt, clear[:9])
    assert (verdict, at) == (None, 9)
    assert state(sprt, clear[:9]).log_h1 > sprt.accept_h1_at
    assert first_verdict(sprt, clear) == (H1, 10)


def _pairs_left(sprt: Sprt, seen: list[float], *, tests: int, horizon: int, seed: int) -> float:
    """The test itself continued ``tests`` times after the pairs ``seen``, the next pairs
    drawn from them: the mean pairs it then took (at most ``horizon``)."""
    prefix = np.asarray(seen, dtype=np.float64)
    rng = np.random.default_rng(seed)
    later = rng.choice(prefix, size=(tests, horizon))
    w1, w0 = sprt.wealth(np.concatenate([np.tile(prefix, (tests, 1)), later], axis=1))
    n = np.arange(1, prefix.size + horizon + 1)
    crossed = (n >= sprt.min_pairs) & ((w1 >= sprt.accept_h1_at) | (w0 >= sprt.accept_h0_at))
    crossed = crossed[:, prefix.size :]
    took = np.where(crossed.any(axis=1), crossed.argmax(axis=1) + 1, horizon)
    return float(took.mean())


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "seen",
    [
        [0.0] * 36 + [40.0, -30.0, 25.0, -20.0],  # nine in ten pairs 0: the wait for 20
        [0.0] * 27 + [30.0, -25.0] * 3 + [0.0] * 7,
        [12.0] * 38 + [-150.0, -160.0],  # a rare large loss
    ],
    ids=["zeros", "zeros-2", "rare-loss"],
)
def test_pairs_to_go_agree_with_the_test(seen: list[float], method: str) -> None:
    # The live estimate is what the test itself does if the pairs to come are like the
    # ones so far: the wait for 20 pairs that differ from 0, the raised variance and
    # Hall's term count. Wald's approximation without them said 20 pairs where the test
    # took 168, 26 where it took 97.
    sprt = Sprt(0.0, 5.0, low=-450.0, high=450.0, method=method)
    cap = 1000
    s = state(sprt, seen, cap)
    truth = _pairs_left(sprt, seen, tests=TESTS, horizon=cap - len(seen), seed=25)
    assert s.pairs_to_go is not None
    assert s.pairs_to_go == pytest.approx(truth, rel=0.2), (s.pairs_to_go, truth)


def test_pairs_to_go_count_down_towards_the_nearer_bound() -> None:
    rng = np.random.default_rng(6)
    d = rng.normal(5.0, 40.0, 100)
    d = d - d.mean() + 5.0  # mean exactly upper
    for method in METHODS:
        sprt = Sprt(0.0, 5.0, low=-450.0, high=450.0, method=method)
        s = state(sprt, d.tolist())
        assert s.log_h1 < sprt.accept_h1_at and s.log_h0 < sprt.accept_h0_at
        # Nearer H1's bound, fewer pairs to go than from the start on pairs like these.
        start = outlook(sprt, np.zeros(0), d, 5.0, 3000)
        assert start is not None and s.pairs_to_go is not None
        assert s.pairs_to_go < start.pairs, (method, s.pairs_to_go, start)
        # The same pairs, the same estimate; at a bound already, none to go.
        assert state(sprt, d.tolist()).pairs_to_go == s.pairs_to_go
        _, at = first_verdict(sprt, [*d.tolist(), *([40.0] * 200)])
        assert state(sprt, [*d.tolist(), *([40.0] * 200)][:at]).pairs_to_go == 0


def test_pairs_that_are_all_equal_are_decided_by_the_betting_evidence() -> None:
    # A bot against a copy of itself with shared seeds: every pair 0. Their missing spread
    # is no certainty: a rare large gain may be yet to come. The betting test, whose stakes
    # the rules' range bounds, decides, after a few hundred pairs, not at min_pairs.
    sprt = Sprt(0.0, 5.0, low=-450.0, high=450.0)
    betting = Sprt(0.0, 5.0, low=-450.0, high=450.0, method=BETTING)
    verdict, at = first_verdict(sprt, [0.0] * 1000)
    assert verdict == H0 and at == first_verdict(betting, [0.0] * 1000)[1] > 200
    verdict, at = first_verdict(sprt, [9.0] * 1000)
    assert verdict == H1 and at > 3 * sprt.min_pairs
    s = state(sprt, [0.0] * 30)
    assert math.isfinite(s.log_h1) and math.isfinite(s.log_h0)


def zeros_shape(zeros: float, mean: float, sd: float):  # type: ignore[no-untyped-def]
    """A share ``zeros`` of the pairs exactly 0 (the two matches played alike), the rest
    normal with the mean that makes the whole ``mean``: a change that matters in a few
    deals, by much."""
    wide = sd / math.sqrt(1.0 - zeros)

    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        rest = rng.normal(mean / (1.0 - zeros), wide, shape)
        return np.where(rng.random(shape) < zeros, 0.0, rest)

    return draw


@pytest.mark.parametrize("zeros", [0.5, 0.8, 0.9])
@pytest.mark.parametrize(("lower", "upper"), [(0.0, 10.0), (-10.0, 0.0)])
def test_error_rates_hold_when_most_pairs_are_exactly_zero(
    zeros: float, lower: float, upper: float
) -> None:
    # Without waiting for 20 pairs that differ from 0, the ratio accepted H0 in 15-27% of
    # these at upper (and H1 in 17-27% at lower, bounds mirrored).
    sprt = Sprt(lower, upper, low=-450.0, high=450.0)
    low = simulate(sprt, zeros_shape(zeros, lower, SD), tests=TESTS, max_pairs=3000, seed=20)
    high = simulate(sprt, zeros_shape(zeros, upper, SD), tests=TESTS, max_pairs=3000, seed=21)
    assert low.accept_h1 <= sprt.alpha + 0.01, low
    assert high.accept_h1 >= 1 - sprt.beta - 0.01, high


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lower": 5.0, "upper": 5.0}, "upper = 5 is not above lower = 5"),
        ({"alpha": 0.0}, "alpha = 0.0 is not allowed"),
        ({"beta": 0.7}, "beta = 0.7 is not allowed"),
        ({"upper": math.inf}, "upper = inf is not allowed"),
        ({"min_pairs": 1}, "min_pairs = 1 is not allowed"),
        ({"upper": 500.0, "high": 450.0}, "outside the possible differences"),
        ({"method": "wald"}, "method = 'wald' is not allowed; allowed: sprt or betting"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message) as info:
        Sprt(**kwargs)
    assert "\n" not in str(info.value)
