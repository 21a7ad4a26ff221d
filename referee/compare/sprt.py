"""The sequential test of ``referee compare``: is the mean paired difference at least ``upper``?

Pure: numpy and arithmetic only. The sample is one number per deal pair, the candidate's
match score minus the baseline's on the same deal in the same seat against the same
opponents (or the difference in the share of opponents beaten). H0: mean ≤ ``lower``;
H1: mean ≥ ``upper``. Two tests are offered (``method``):

``"sprt"`` (the default): Wald's sequential probability ratio test on the normal
likelihood, as fastchess, cutechess and OpenBench run it, with the two corrections that
keep its error rates on Sticheln's differences. After n pairs of mean x̄, variance s²,
skewness g and kurtosis κ (moments of the pairs so far):

    s'² = s² (1 + ½ √((κ − 1) / n))          the variance, raised by half its standard error
    t₁  = √n (x̄ − μ₀) / s',  t₀ = √n (μ₁ − x̄) / s'
    T(t, γ) = t + γ t² / 3 + γ² t³ / 27 + γ / 6,   γ = 1.25 g / √n   (Hall's transformation)
              with γt held to ±(1 + 3/√n): t (1 + u/3 + u²/27) + γ/6, u = γt held
    ln Λ₁ = (δ √n / s') T(t₁, γ) − n δ² / (2 s'²),   ln Λ₀ = (δ √n / s') T(t₀, −γ) − n δ² / (2 s'²)

with δ = μ₁ − μ₀, once ``SPREAD_PAIRS`` (20) pairs differ from 0 and not all pairs are
equal; before that, the betting evidence below stands in for both, scaled to these bounds
(ln W · bound / ln(1/α)). Without the corrections (s' = s, T(t) = t) ln Λ₁ is Wald's log-likelihood
ratio of H1 against H0 and ln Λ₀ = −ln Λ₁. Accept H1 when ln Λ₁ ≥ ln((1 − β)/α) + ``MARGIN``,
H0 when ln Λ₀ ≥ ln((1 − α)/β) + ``MARGIN``.

Why the corrections: Sticheln's differences are bounded integers whose tails can be long on
one side (a captured pain-suit ace is −14), and close versions of a bot with common random
numbers give many pairs of exactly 0. Where the sample mean of a left-skewed difference
runs high, its sample variance runs low, and both push the plain test towards H1: in
simulation it accepted H1 at ``lower`` in 10–15% of tests with α = 5% at skewness −2.
Hall's transformation (P. Hall, "On the removal of skewness by transformation", JRSS B 54,
1992) takes the skewness out of the t statistic to second order, monotonically in t; alone
it still accepted H1 in 7–9% of tests where half or nine tenths of the pairs are equal
(its skewness estimate is then noise), and the raised variance covers that: the variance's
own error grows with the kurtosis. Hall's term is held because γt does not shrink with n:
at a true bound t grows like √n δ/σ, so γt tends to 1.25 g δ/σ, and the cubic's factor
1 + u/3 + u²/27 falls below the ½ the ratio needs for u between −7 and −1.9. Unheld, a
rare large loss (one pair in twenty, skewness −4.1) with bounds half a standard deviation
apart left H1 accepted in 30% of tests at ``upper`` and 68% undecided at the cap, the
evidence drifting down as the pairs came in. Held to ±1 in the long run, the factor stays
at 0.70 or more and the evidence for a true bound grows without limit, for any shape; the
early allowance 3/√n keeps the correction where the first pairs need it. Where most pairs are exactly 0, as close versions of a
bot give with common random numbers, the first pairs can all be 0 while the truth is a
rare large gain; the ratio would read their missing spread as certainty (nine tenths 0:
H0 accepted in 26% of tests at ``upper``). So the ratio waits for 20 pairs that differ
from 0, and until then only the betting test, whose stakes the rules' range bounds, can
decide: pairs that are all 0 (a bot against a copy of itself) end in H0 after a few
hundred pairs. The constants (1.25, ½, ``MARGIN``,
``SPREAD_PAIRS`` and the hold's 1 and 3) were chosen by simulation (``benchmarks/compare.py``): false H1 ≤ α + 0.01
and power ≥ 1 − β − 0.01 on differences of skewness −2 … +2 clipped at ±10 standard
deviations (and ±3, a rare loss or gain of skewness ∓4.1, bounds up to a standard
deviation apart), coarse lattices, half of the pairs 0 or equal, Student's t with 5 degrees of
freedom and the differences recorded from the sample bots, for bounds 0.1 to 0.5 standard
deviations apart (with eight or nine tenths of the pairs 0, skewness about +3, the power
falls to 0.93 at 0.1 standard deviations).
It is an approximation checked on those shapes, not a guarantee for every distribution.

``"betting"``: two betting (e-value) processes, one against each hypothesis, whose error
rates hold for every distribution inside the rules' range of differences, at the price of
two to four times the pairs:

    W₁ₙ = Πᵢ (1 + λᵢ (dᵢ − μ₀))     grows when the mean is above μ₀ = lower
    W₀ₙ = Πᵢ (1 + κᵢ (μ₁ − dᵢ))     grows when the mean is below μ₁ = upper

Each stake is fixed before its pair is seen (from the earlier pairs only): the stake that
makes the wealth grow fastest against the other hypothesis, δ / (s² + δ²) with s² the
variance of the earlier pairs, capped so that no possible difference can take the wealth
to zero (``low`` and ``high``, the most a pair difference can be, come from the rules).
Under H0 every factor of W₁ has expectation at most 1, whatever the distribution of the
differences, so by Ville's inequality W₁ ever reaches 1/α with probability at most α;
likewise W₀ reaches 1/β under H1 with probability at most β. Accept H1 when
ln W₁ ≥ ln(1/α), H0 when ln W₀ ≥ ln(1/β). The cap is what costs: the rules allow a
difference of ±450 points at three seats, about ten standard deviations, so the stakes
stay at a fifth of the efficient ones.

For either method, ``wealth`` gives the two evidence processes (ln Λ₁, ln Λ₀ or ln W₁,
ln W₀) after each pair and ``accept_h1_at`` / ``accept_h0_at`` their bounds.
``tests/test_compare_sprt.py`` checks the error rates by simulation, and
``benchmarks/compare.py`` prints them for every shape beside the mean sample size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

#: Normal quantile of 0.975: the half-width of a 95% interval in standard errors.
Z95 = 1.959963984540054

H1 = "H1"
H0 = "H0"

#: The largest share of the distance to the worst possible difference a stake may risk:
#: a pair at the very bound keeps 1 − CAP of the wealth.
CAP = 0.99
#: Pairs seen before the first stake: the stake needs a variance.
WARMUP = 2

SPRT = "sprt"
BETTING = "betting"
METHODS = (SPRT, BETTING)
#: Hall's transformation is applied to this multiple of the sample skewness.
SKEW_WEIGHT = 1.25
#: Hall's correction γ·t is held to ±(``HALL_LIMIT`` + ``HALL_LIMIT_EARLY`` / √n): at most
#: a factor 1 − 1/3 + 1/27 ≈ 0.70 off t in the long run, where the ratio needs more than ½.
HALL_LIMIT = 1.0
HALL_LIMIT_EARLY = 3.0
#: The pilot notes a skewness g with |g|·δ/s above this: the correction is then held, and the
#: error rates were checked on few such shapes.
STEEP_SKEW = 1.0
#: The variance is raised by this many of its own standard errors (√((κ − 1)/n) of it).
VARIANCE_MARGIN = 0.5
#: Added to Wald's bounds ln((1 − β)/α) and ln((1 − α)/β) of the ``sprt`` method.
MARGIN = 0.2
#: The ``sprt`` method's error rates were checked with no decision before this many pairs.
CHECKED_FROM = 20
#: The ``sprt`` method's ratio counts once this many pairs differ from 0 (before, the
#: betting evidence decides).
SPREAD_PAIRS = 20


@dataclass(frozen=True, slots=True)
class Sprt:
    """The test's parameters: H0 mean ``lower``, H1 mean ``upper`` (upper > lower), error
    rates ``alpha`` (accepting H1 when H0 holds) and ``beta`` (accepting H0 when H1 holds),
    no decision before ``min_pairs`` pairs, the range [``low``, ``high``] every pair
    difference lies in (from the rules; the ``betting`` method's stakes are capped by it:
    infinite means unknown, and then they are not capped and its error rates are no longer
    guaranteed), and the ``method`` ("sprt" or "betting", see the module)."""

    lower: float = 0.0
    upper: float = 5.0
    alpha: float = 0.05
    beta: float = 0.05
    min_pairs: int = 20
    low: float = -math.inf
    high: float = math.inf
    method: str = SPRT

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(
                f"method = {self.method!r} is not allowed; allowed: {' or '.join(METHODS)}"
            )
        for name in ("lower", "upper"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ValueError(f"{name} = {value!r} is not allowed; allowed: a finite number")
        if not self.upper > self.lower:
            raise ValueError(
                f"upper = {self.upper:g} is not above lower = {self.lower:g}; "
                "allowed: upper > lower (points per match)"
            )
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not 0.0 < value < 0.5:
                raise ValueError(f"{name} = {value!r} is not allowed; allowed: 0 < {name} < 0.5")
        if type(self.min_pairs) is not int or self.min_pairs < 2:
            raise ValueError(
                f"min_pairs = {self.min_pairs!r} is not allowed; allowed: a whole number >= 2"
            )
        if not (self.low < self.lower and self.upper < self.high):
            raise ValueError(
                f"the bounds {self.lower:g} and {self.upper:g} lie outside the possible "
                f"differences [{self.low:g}, {self.high:g}]; allowed: low < lower < upper < high"
            )

    @property
    def accept_h1_at(self) -> float:
        """The evidence against H0 at which H1 is accepted: ln((1 − β)/α) + ``MARGIN``, or
        ln(1/α) for ``betting``."""
        if self.method == BETTING:
            return math.log(1.0 / self.alpha)
        return math.log((1.0 - self.beta) / self.alpha) + MARGIN

    @property
    def accept_h0_at(self) -> float:
        """The evidence against H1 at which H0 is accepted: ln((1 − α)/β) + ``MARGIN``, or
        ln(1/β) for ``betting``."""
        if self.method == BETTING:
            return math.log(1.0 / self.beta)
        return math.log((1.0 - self.alpha) / self.beta) + MARGIN

    @property
    def delta(self) -> float:
        """upper − lower."""
        return self.upper - self.lower

    def stake_caps(self) -> tuple[float, float]:
        """The largest stakes (against H0, against H1) no possible difference can ruin."""
        cap1 = CAP / (self.lower - self.low) if math.isfinite(self.low) else math.inf
        cap0 = CAP / (self.high - self.upper) if math.isfinite(self.high) else math.inf
        return cap1, cap0

    def wealth(self, d: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The evidence against H0 and against H1 after each pair (ln Λ₁ and ln Λ₀, or
        ln W₁ and ln W₀ for ``betting``), for differences ``d`` (last axis: the pairs in
        order; vectorised over the leading axes for simulations)."""
        if self.method == BETTING:
            return self._betting(d)
        # Until SPREAD_PAIRS pairs differ from 0 (and they are not all equal), the spread
        # of the pairs says too little for the ratio: the betting evidence stands in,
        # scaled to the ratio's bounds (see the module).
        d = np.asarray(d, dtype=np.float64)
        ratio1, ratio0, spread = self._ratio(d)
        bet1, bet0 = self._betting(d)
        ready = spread & (np.cumsum(d != 0.0, axis=-1) >= SPREAD_PAIRS)
        scale1 = self.accept_h1_at / math.log(1.0 / self.alpha)
        scale0 = self.accept_h0_at / math.log(1.0 / self.beta)
        return np.where(ready, ratio1, scale1 * bet1), np.where(ready, ratio0, scale0 * bet0)

    def _ratio(self, d: FloatArray) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]]:
        """ln Λ₁ and ln Λ₀ of the ``sprt`` method after each pair (0 before two pairs), and
        whether the pairs so far have any spread."""
        mid = 0.5 * (self.lower + self.upper)
        x = np.asarray(d, dtype=np.float64) - mid  # moments near the bounds: no cancellation
        n = np.arange(1, x.shape[-1] + 1, dtype=np.float64)
        m1 = np.cumsum(x, axis=-1) / n
        r2 = np.cumsum(x * x, axis=-1) / n
        r3 = np.cumsum(x**3, axis=-1) / n
        r4 = np.cumsum(x**4, axis=-1) / n
        m2 = np.maximum(r2 - m1 * m1, 0.0)  # central moments, biased
        m3 = r3 - 3.0 * m1 * r2 + 2.0 * m1**3
        m4 = r4 - 4.0 * m1 * r3 + 6.0 * m1 * m1 * r2 - 3.0 * m1**4
        delta = self.delta
        # Equal pairs have no spread: a variance floor far below any real one keeps the
        # ratio finite (:meth:`wealth` does not use it until the pairs have a spread).
        floor = 1e-9 * (1.0 + delta * delta)
        spread = m2 > floor
        safe = np.where(spread, m2, 1.0)
        skew = np.where(spread, m3 / safe**1.5, 0.0)
        kurtosis = np.where(spread, m4 / (safe * safe), 1.0)
        var = np.maximum(m2 * n / np.maximum(n - 1.0, 1.0), floor)
        var = var * (1.0 + VARIANCE_MARGIN * np.sqrt(np.maximum(kurtosis - 1.0, 0.0) / n))
        sd = np.sqrt(var)
        root = np.sqrt(n)
        gamma = SKEW_WEIGHT * skew / root
        t1 = root * (m1 + mid - self.lower) / sd
        t0 = root * (self.upper - mid - m1) / sd
        scale = delta * root / sd
        penalty = n * delta * delta / (2.0 * var)
        # γ·t₁ at a true bound tends to 1.25·g·δ/σ, not to 0: unheld, a skewness of −2 with
        # bounds a standard deviation apart made T(t₁) ≈ 0.4 t₁ and ln Λ₁ drift down at
        # the true ``upper`` (see the module).
        limit = HALL_LIMIT + HALL_LIMIT_EARLY / root
        log_h1 = scale * _hall(t1, gamma, limit) - penalty
        log_h0 = scale * _hall(t0, -gamma, limit) - penalty
        first = n < 2
        return np.where(first, 0.0, log_h1), np.where(first, 0.0, log_h0), spread

    def _betting(self, d: FloatArray) -> tuple[FloatArray, FloatArray]:
        """ln W₁ and ln W₀ of the ``betting`` method after each pair."""
        d = np.asarray(d, dtype=np.float64)
        n = d.shape[-1]
        k = np.arange(n, dtype=np.float64)  # pairs before this one
        total = np.cumsum(d, axis=-1)
        squares = np.cumsum(d * d, axis=-1)
        zero = np.zeros((*d.shape[:-1], 1))
        before_sum = np.concatenate([zero, total[..., :-1]], axis=-1)
        before_sq = np.concatenate([zero, squares[..., :-1]], axis=-1)
        mean = before_sum / np.maximum(k, 1.0)
        var = np.maximum(before_sq - k * mean * mean, 0.0) / np.maximum(k - 1.0, 1.0)
        delta = self.delta
        stake = np.where(k >= WARMUP, delta / (var + delta * delta), 0.0)
        cap1, cap0 = self.stake_caps()
        # A difference beyond the declared range (it cannot happen) must not make the
        # logarithm undefined: the floor keeps the wealth tiny instead.
        f1 = np.maximum(1.0 + np.minimum(stake, cap1) * (d - self.lower), 1e-12)
        f0 = np.maximum(1.0 + np.minimum(stake, cap0) * (self.upper - d), 1e-12)
        return np.cumsum(np.log(f1), axis=-1), np.cumsum(np.log(f0), axis=-1)

    def verdict(self, log_h1: float, log_h0: float, n: int) -> str | None:
        """``"H1"``, ``"H0"`` or None (keep going) for the wealths after ``n`` pairs."""
        if n < self.min_pairs:
            return None
        if log_h1 >= self.accept_h1_at:
            return H1
        if log_h0 >= self.accept_h0_at:
            return H0
        return None

    def drift(self, mean: float, sd: float) -> tuple[float, float]:
        """``betting``: the long-run growth per pair of (ln W₁, ln W₀) when the differences
        have this mean and standard deviation (second order in the stake)."""
        var = sd * sd
        delta = self.delta
        stake = delta / (var + delta * delta)
        cap1, cap0 = self.stake_caps()
        s1, s0 = min(stake, cap1), min(stake, cap0)
        up, down = mean - self.lower, self.upper - mean
        return (
            s1 * up - 0.5 * s1 * s1 * (var + up * up),
            s0 * down - 0.5 * s0 * s0 * (var + down * down),
        )

    def expected_pairs(self, mean: float, sd: float) -> float | None:
        """About how many pairs the test takes in all when the differences are normal with
        this mean and standard deviation, by the approximations below (the benchmarks'
        quick figure; compare's pilot and pairs to go run the test itself,
        :func:`outlook`, which counts its corrections and the shape); None when it cannot end (``betting``: neither wealth grows,
        a mean near the middle with a large spread, and the cap decides)."""
        if self.method == SPRT:
            steps = self.pairs_between(mean, sd, self.accept_h1_at, self.accept_h0_at)
            return None if steps is None else max(float(self.min_pairs), steps)
        g1, g0 = self.drift(mean, sd)
        times = [b / g for b, g in ((self.accept_h1_at, g1), (self.accept_h0_at, g0)) if g > 0]
        if not times:
            return None
        return max(float(self.min_pairs), min(times))

    def pairs_between(self, mean: float, sd: float, up: float, down: float) -> float | None:
        """``sprt``: the mean number of pairs until ln Λ₁ rises by ``up`` or ln Λ₀ by
        ``down``, for differences of this mean and standard deviation (Wald's approximation:
        the log-likelihood ratio as a Brownian motion with drift δ(m − mid)/σ² and variance
        δ²/σ² per pair, between two absorbing bounds)."""
        if not sd > 0 or up <= 0 or down <= 0:
            return None
        var = sd * sd
        v = self.delta * self.delta / var
        mu = self.delta * (mean - 0.5 * (self.lower + self.upper)) / var
        theta = 2.0 * mu / v
        if abs(theta) * max(up, down) < 1e-9:
            return up * down / v
        # The chance of reaching ``up`` first, (1 − e^(θ·down)) / (e^(−θ·up) − e^(θ·down)),
        # written to stay finite for large |θ|.
        if theta > 0:
            p_up = math.expm1(-theta * down) / math.expm1(-theta * (up + down))
        else:
            p_up = math.exp(theta * up) * math.expm1(theta * down) / math.expm1(theta * (up + down))
        return (up * p_up - down * (1.0 - p_up)) / mu


def plain_wald(sprt: Sprt, d: FloatArray) -> FloatArray:
    """ln Λ after each pair of Wald's SPRT on the normal likelihood with the variance
    estimated under each hypothesis, (n/2) ln(S₀/S₁) with Sₖ = Σ(dᵢ − μₖ)²: the test compare
    ran first, without corrections, kept to measure the others against (accept H1 at
    ln((1 − β)/α), H0 at ln(β/(1 − α)))."""
    d = np.asarray(d, dtype=np.float64)
    n = np.arange(1, d.shape[-1] + 1, dtype=np.float64)
    total, squares = np.cumsum(d, axis=-1), np.cumsum(d * d, axis=-1)
    s0 = np.maximum(squares - 2 * sprt.lower * total + n * sprt.lower**2, 1e-300)
    s1 = np.maximum(squares - 2 * sprt.upper * total + n * sprt.upper**2, 1e-300)
    llr: FloatArray = 0.5 * n * (np.log(s0) - np.log(s1))
    return llr


def _hall(t: FloatArray, gamma: FloatArray, limit: FloatArray) -> FloatArray:
    """Hall's monotone transformation of a t statistic for skewness (γ = skewness / √n
    times the weight), t + γt²/3 + γ²t³/27 + γ/6, with γt held to ±``limit``:
    t (1 + u/3 + u²/27) + γ/6, u = γt clipped. Still monotone in t: the cubic's slope is
    (1 + γt/3)² ≥ 0, and beyond the clip it is a line through the origin of positive slope."""
    u = np.clip(gamma * t, -limit, limit)
    return t * (1.0 + u / 3.0 + u * u / 27.0) + gamma / 6.0


@dataclass(frozen=True, slots=True)
class State:
    """Where a test stands after ``pairs`` pairs."""

    pairs: int
    mean: float
    sd: float
    #: Half-width of the 95% interval of the mean (normal approximation); NaN below 2 pairs.
    ci95: float
    #: ln W₁ (evidence against H0) and ln W₀ (evidence against H1).
    log_h1: float
    log_h0: float
    #: ``"H1"``, ``"H0"`` or None while undecided.
    verdict: str | None
    #: About how many more pairs the test takes, if the pairs to come are like the ones so
    #: far (:func:`outlook`); None without a spread to draw from, or when more than half of
    #: the simulated tests are still undecided at the cap.
    pairs_to_go: int | None

    @property
    def llr(self) -> float:
        """ln W₁ − ln W₀: one number for where the test leans (positive: towards H1)."""
        return self.log_h1 - self.log_h0


def state(sprt: Sprt, diffs: Sequence[float], cap: int | None = None) -> State:
    """The test after the differences ``diffs`` (no verdict here: see :func:`first_verdict`);
    ``cap`` is the most pairs the run may take (for the pairs to go)."""
    data = np.asarray(diffs, dtype=np.float64)
    n = int(data.size)
    mean = float(data.mean()) if n else math.nan
    sd = float(data.std(ddof=1)) if n >= 2 else math.nan
    ci = Z95 * sd / math.sqrt(n) if n >= 2 else math.nan
    if n:
        w1, w0 = sprt.wealth(data)
        log_h1, log_h0 = float(w1[-1]), float(w0[-1])
    else:
        log_h1 = log_h0 = 0.0
    togo = None
    if n and (log_h1 >= sprt.accept_h1_at or log_h0 >= sprt.accept_h0_at):
        togo = max(sprt.min_pairs - n, 0)  # at a bound already
    elif n >= 2 and sd > 0:
        left = LONGEST if cap is None else min(cap - n, LONGEST)
        ahead = outlook(sprt, data, data, mean, left) if left > 0 else None
        if ahead is not None and ahead.undecided <= 0.5:
            togo = max(sprt.min_pairs - n, math.ceil(ahead.pairs), 0)
    return State(n, mean, sd, ci, log_h1, log_h0, None, togo)


#: Simulated continuations behind an estimate of the pairs a test takes (:func:`outlook`).
PATHS = 100
#: The furthest such an estimate looks ahead, in pairs.
LONGEST = 20_000


@dataclass(frozen=True, slots=True)
class Outlook:
    """How the test goes on, by simulation: the mean further pairs to a verdict (a path
    still undecided at the horizon counted at it) and the share of paths undecided there."""

    pairs: float
    undecided: float


def outlook(
    sprt: Sprt,
    seen: FloatArray,
    sample: FloatArray,
    mean: float,
    horizon: int,
    *,
    paths: int = PATHS,
    seed: int = 0,
) -> Outlook | None:
    """The test itself run on: the pairs ``seen`` so far (empty for a test yet to begin),
    then up to ``horizon`` more drawn from ``sample`` moved to the mean ``mean`` (the pairs
    that differ from 0 carry the move where some are 0, so that the share of pairs of 0,
    which the test waits on, stays as observed); ``paths`` times, seeded, so that the same
    pairs give the same estimate. This is what the pilot and the live "pairs to go" say:
    every correction of the test (the raised variance, Hall's term, the wait for pairs
    that differ from 0) and the shape of the pairs count, as they do in the test. None
    when ``sample`` has no spread to draw from."""
    sample = np.asarray(sample, dtype=np.float64)
    if sample.size < 2 or not float(sample.std()) > 0 or horizon < 1:
        return None
    moved = _moved(sample, mean)
    seen = np.asarray(seen, dtype=np.float64)
    # Looking a few hundred pairs ahead first, four times as far while more than one path
    # in a hundred is undecided: as far as the test needs, not always to the horizon.
    ahead = min(horizon, 256)
    while True:
        result = _continue(sprt, seen, moved, ahead, paths, seed)
        if result.undecided <= 0.01 or ahead == horizon:
            return result
        ahead = min(horizon, 4 * ahead)


#: The most pair differences one :func:`outlook` round simulates (fewer paths when far).
BUDGET = 200_000


def _continue(
    sprt: Sprt, seen: FloatArray, draw: FloatArray, ahead: int, paths: int, seed: int
) -> Outlook:
    """The test after ``seen``, continued ``ahead`` pairs drawn from ``draw``."""
    paths = max(20, min(paths, BUDGET // (seen.size + ahead)))
    rng = np.random.default_rng(seed)
    later = rng.choice(draw, size=(paths, ahead))
    w1, w0 = sprt.wealth(np.concatenate([np.tile(seen, (paths, 1)), later], axis=1))
    w1, w0 = w1[:, seen.size :], w0[:, seen.size :]
    eligible = np.arange(seen.size + 1, seen.size + ahead + 1) >= sprt.min_pairs
    crossed = eligible & ((w1 >= sprt.accept_h1_at) | (w0 >= sprt.accept_h0_at))
    decided = crossed.any(axis=1)
    took = np.where(decided, crossed.argmax(axis=1) + 1, ahead)
    return Outlook(float(took.mean()), float(1.0 - decided.mean()))


def _moved(sample: FloatArray, mean: float) -> FloatArray:
    """``sample`` with mean ``mean``: where some pairs are 0 and some are not, only the
    ones that are not move (by as much more as they are fewer)."""
    shift = mean - float(sample.mean())
    nonzero = sample != 0.0
    if nonzero.all() or not nonzero.any():
        return sample + shift
    return np.where(nonzero, sample + shift * sample.size / int(nonzero.sum()), 0.0)


def first_verdict(sprt: Sprt, diffs: Sequence[float]) -> tuple[str | None, int]:
    """Walk the differences in order: the first verdict and the number of pairs it was
    reached at, or (None, len(diffs)) when no bound was crossed."""
    data = np.asarray(diffs, dtype=np.float64)
    if data.size == 0:
        return None, 0
    w1, w0 = sprt.wealth(data)
    n = np.arange(1, data.size + 1)
    eligible = n >= sprt.min_pairs
    h1 = eligible & (w1 >= sprt.accept_h1_at)
    h0 = eligible & (w0 >= sprt.accept_h0_at)
    crossed = np.flatnonzero(h1 | h0)
    if crossed.size == 0:
        return None, int(data.size)
    at = int(crossed[0])
    return (H1 if h1[at] else H0), at + 1


@dataclass(frozen=True, slots=True)
class Simulation:
    """Operating characteristics of a test measured on simulated tests."""

    tests: int
    accept_h1: float
    accept_h0: float
    undecided: float
    mean_pairs: float
    #: The 95th percentile of the pairs a test took.
    p95_pairs: float


def simulate(
    sprt: Sprt,
    draw: Callable[[np.random.Generator, tuple[int, int]], FloatArray],
    *,
    tests: int,
    max_pairs: int,
    seed: int = 0,
    chunk: int = 500,
) -> Simulation:
    """Run ``tests`` simulated sequential tests at once, each on up to ``max_pairs`` paired
    differences drawn by ``draw(rng, (rows, max_pairs))``; a test that crosses no bound by
    then counts as undecided (and as ``max_pairs`` pairs)."""
    rng = np.random.default_rng(seed)
    h1 = h0 = 0
    took: list[NDArray[np.int64]] = []
    n = np.arange(1, max_pairs + 1)
    eligible = n >= sprt.min_pairs
    for start in range(0, tests, chunk):
        rows = min(chunk, tests - start)
        w1, w0 = sprt.wealth(draw(rng, (rows, max_pairs)))
        up = eligible & (w1 >= sprt.accept_h1_at)
        down = eligible & (w0 >= sprt.accept_h0_at)
        crossed = up | down
        decided = crossed.any(axis=1)
        first = np.where(decided, crossed.argmax(axis=1), max_pairs - 1)
        took_h1 = decided & up[np.arange(rows), first]
        h1 += int(took_h1.sum())
        h0 += int((decided & ~took_h1).sum())
        took.append(first + 1)
    pairs = np.concatenate(took)
    return Simulation(
        tests=tests,
        accept_h1=h1 / tests,
        accept_h0=h0 / tests,
        undecided=(tests - h1 - h0) / tests,
        mean_pairs=float(pairs.mean()),
        p95_pairs=float(np.percentile(pairs, 95)),
    )


def fixed_size_pairs(sprt: Sprt, sd: float) -> int:
    """Pairs a fixed-size one-sided z-test needs for the same error rates: level ``alpha``
    at the mean ``lower`` and power 1 − ``beta`` at ``upper``, for differences of standard
    deviation ``sd``: n = ((z₁₋α + z₁₋β) σ / (upper − lower))²."""
    z = NormalDist().inv_cdf
    return math.ceil(
        ((z(1.0 - sprt.alpha) + z(1.0 - sprt.beta)) * sd / (sprt.upper - sprt.lower)) ** 2
    )
