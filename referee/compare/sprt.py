"""The sequential test of ``referee compare``: is the mean paired difference at least ``upper``?

Pure: numpy and arithmetic only. The sample is one number per deal pair, the candidate's
match score minus the baseline's on the same deal in the same seat against the same
opponents (or the difference in the share of opponents beaten). H0: mean ≤ ``lower``;
H1: mean ≥ ``upper``.

The test is two betting (e-value) processes, one against each hypothesis, on the pairs
in deal order:

    W₁ₙ = Πᵢ (1 + λᵢ (dᵢ − μ₀))     grows when the mean is above μ₀ = lower
    W₀ₙ = Πᵢ (1 + κᵢ (μ₁ − dᵢ))     grows when the mean is below μ₁ = upper

Each stake is fixed before its pair is seen (from the earlier pairs only): the stake that
makes the wealth grow fastest against the other hypothesis, δ / (s² + δ²) with δ = μ₁ − μ₀
and s² the variance of the earlier pairs, capped so that no possible difference can take
the wealth to zero (``low`` and ``high``, the most a pair difference can be, come from the
rules). Under H0 every factor of W₁ has expectation at most 1, whatever the distribution
of the differences, so by Ville's inequality W₁ ever reaches 1/α with probability at most
α; likewise W₀ reaches 1/β under H1 with probability at most β. Accept H1 when
ln W₁ ≥ ln(1/α), H0 when ln W₀ ≥ ln(1/β).

Why not the normal likelihood ratio (Wald's SPRT with the variance estimated, as fastchess
and OpenBench do) or a generalised SPRT on the empirical distribution of the pairs (as
fishtest's pentanomial GSPRT does)? Both rest on a normal approximation of the evidence,
and Sticheln's differences are bounded integers with heavy tails on one side (a captured
pain-suit ace is −14): where a sample mean happens to run high its estimated variance runs
low, and both errors push the same way. In simulation (``benchmarks/compare.py``) the
normal ratio accepted H1 at ``lower`` in 10–15% of tests with α = 5% on differences of
skewness −2, the empirical one in 6–11%; the betting test stays at or below α for every
shape, at the price of somewhat more pairs on normal differences. The wealths are the
pentanomial GSPRT's log-likelihood ratio made honest: the GSPRT's ln Λ is the largest
ln W₁ − ln W₀ any constant stakes could have reached in hindsight.

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


@dataclass(frozen=True, slots=True)
class Sprt:
    """The test's parameters: H0 mean ``lower``, H1 mean ``upper`` (upper > lower), error
    rates ``alpha`` (accepting H1 when H0 holds) and ``beta`` (accepting H0 when H1 holds),
    no decision before ``min_pairs`` pairs, and the range [``low``, ``high``] every pair
    difference lies in (from the rules; infinite means unknown, and then the stakes are
    not capped and the error rates are no longer guaranteed)."""

    lower: float = 0.0
    upper: float = 5.0
    alpha: float = 0.05
    beta: float = 0.05
    min_pairs: int = 20
    low: float = -math.inf
    high: float = math.inf

    def __post_init__(self) -> None:
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
        """ln(1/α): the log wealth against H0 at which H1 is accepted."""
        return math.log(1.0 / self.alpha)

    @property
    def accept_h0_at(self) -> float:
        """ln(1/β): the log wealth against H1 at which H0 is accepted."""
        return math.log(1.0 / self.beta)

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
        """ln W₁ and ln W₀ after each pair, for differences ``d`` (last axis: the pairs in
        order; vectorised over the leading axes for simulations)."""
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
        """The long-run growth per pair of (ln W₁, ln W₀) when the differences have this
        mean and standard deviation (second order in the stake)."""
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
        """About how many pairs the test takes in all when the differences have this mean
        and standard deviation; None when neither wealth grows (a mean near the middle
        with a large spread: the cap decides)."""
        g1, g0 = self.drift(mean, sd)
        times = [b / g for b, g in ((self.accept_h1_at, g1), (self.accept_h0_at, g0)) if g > 0]
        if not times:
            return None
        return max(float(self.min_pairs), min(times))


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
    #: Estimated pairs to a bound at the current mean and spread; None when it cannot be
    #: estimated (no drift, or decided).
    pairs_to_go: int | None

    @property
    def llr(self) -> float:
        """ln W₁ − ln W₀: one number for where the test leans (positive: towards H1)."""
        return self.log_h1 - self.log_h0


def state(sprt: Sprt, diffs: Sequence[float]) -> State:
    """The test after the differences ``diffs`` (no verdict here: see :func:`first_verdict`)."""
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
    return State(n, mean, sd, ci, log_h1, log_h0, None, _pairs_to_go(sprt, n, mean, sd, data))


def _pairs_to_go(sprt: Sprt, n: int, mean: float, sd: float, data: FloatArray) -> int | None:
    """Pairs until a wealth reaches its bound if both grow at their long-run rates under a
    true mean and spread equal to today's estimates."""
    if n < 2 or not sd > 0:
        return None
    w1, w0 = sprt.wealth(data)
    g1, g0 = sprt.drift(mean, sd)
    steps = [
        (bound - float(w[-1])) / g
        for bound, w, g in ((sprt.accept_h1_at, w1, g1), (sprt.accept_h0_at, w0, g0))
        if g > 1e-12
    ]
    if not steps:
        return None
    return max(sprt.min_pairs - n, math.ceil(min(steps)), 0)


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
