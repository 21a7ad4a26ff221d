"""The sequential test of ``referee compare``: is the mean paired difference at least ``upper``?

Pure: numpy and arithmetic only. The sample is one number per deal pair, the candidate's
match score minus the baseline's on the same deal in the same seat against the same
opponents. The two hypotheses are H0: mean = ``lower`` and H1: mean = ``upper`` (points
per match); the test stops as soon as the evidence crosses one of Wald's bounds.

The evidence is the generalised log-likelihood ratio (GLR) of the normal model with the
variance unknown. After n pairs with differences d₁ … dₙ, write Sₖ = Σᵢ (dᵢ − μₖ)² for
μ₀ = lower and μ₁ = upper; maximising the normal likelihood over σ under each hypothesis
gives σ̂ₖ² = Sₖ/n and

    LLR = (n/2) · ln(S₀ / S₁)

Wald's bounds: accept H1 when LLR ≥ ln((1 − β)/α), accept H0 when LLR ≤ ln(β/(1 − α)).
To first order in (μ₁ − μ₀)/σ̂ this is n (μ₁ − μ₀)(2 x̄ − μ₀ − μ₁) / (2 σ̂²), the
"normalised" SPRT of fastchess and OpenBench, which puts one variance estimate (about x̄)
in Wald's normal log-likelihood ratio. The exact form is used here because it keeps the
error rates: in simulation (``benchmarks/compare.py``) the approximation accepted H1 at
the lower bound in 5.9–7.3% of tests with alpha = 5% when the bounds are a quarter of a
standard deviation apart, the exact GLR in 4.9–5.1%. When the truth lies far beyond a
bound the exact form needs more pairs (the variance under the wrong hypothesis absorbs
part of the misfit): about 44 instead of 14–20 for a difference of 54 ± 35 points with
bounds 0 and 5. With the variance estimated, the first few pairs can look more certain
than they are, so no decision is taken before ``min_pairs`` pairs.
``tests/test_compare_sprt.py`` checks the error rates by simulation, and
``benchmarks/compare.py`` prints them beside the mean sample size.
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


@dataclass(frozen=True, slots=True)
class Sprt:
    """The test's parameters: H0 mean ``lower``, H1 mean ``upper`` (points per match, upper >
    lower), error rates ``alpha`` (accepting H1 when H0 holds) and ``beta`` (accepting H0 when
    H1 holds), and no decision before ``min_pairs`` pairs."""

    lower: float = 0.0
    upper: float = 5.0
    alpha: float = 0.05
    beta: float = 0.05
    min_pairs: int = 20

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

    @property
    def accept_h0_at(self) -> float:
        """Wald's lower bound ln(β/(1 − α)): at or below it H0 is accepted."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def accept_h1_at(self) -> float:
        """Wald's upper bound ln((1 − β)/α): at or above it H1 is accepted."""
        return math.log((1.0 - self.beta) / self.alpha)

    def llr(self, n: FloatArray, total: FloatArray, squares: FloatArray) -> FloatArray:
        """The GLR of H1 against H0 from the count, sum and sum of squares of the differences
        (arrays of one shape; vectorised for simulations)."""
        mu0, mu1 = self.lower, self.upper
        s0 = squares - 2.0 * mu0 * total + n * mu0 * mu0
        s1 = squares - 2.0 * mu1 * total + n * mu1 * mu1
        # Sₖ is 0 only when every difference equals μₖ: the floor keeps the logarithm
        # finite there (a huge LLR of the right sign).
        floor = 1e-12 * (mu1 - mu0) ** 2 * np.maximum(n, 1.0)
        value = 0.5 * n * (np.log(np.maximum(s0, floor)) - np.log(np.maximum(s1, floor)))
        out: FloatArray = np.where(n > 0, value, 0.0)
        return out

    def verdict(self, llr: float, n: int) -> str | None:
        """``"H1"``, ``"H0"`` or None (keep going) for the LLR after ``n`` pairs."""
        if n < self.min_pairs:
            return None
        if llr >= self.accept_h1_at:
            return H1
        if llr <= self.accept_h0_at:
            return H0
        return None


@dataclass(frozen=True, slots=True)
class State:
    """Where a test stands after ``pairs`` pairs."""

    pairs: int
    mean: float
    sd: float
    #: Half-width of the 95% interval of the mean (normal approximation); NaN below 2 pairs.
    ci95: float
    llr: float
    #: ``"H1"``, ``"H0"`` or None while undecided.
    verdict: str | None
    #: Estimated pairs to a bound at the current mean and spread; None when it cannot be
    #: estimated (no drift, or decided).
    pairs_to_go: int | None


def state(sprt: Sprt, diffs: Sequence[float]) -> State:
    """The test after the differences ``diffs`` (no verdict here: see :func:`first_verdict`)."""
    data = np.asarray(diffs, dtype=np.float64)
    n = int(data.size)
    mean = float(data.mean()) if n else math.nan
    sd = float(data.std(ddof=1)) if n >= 2 else math.nan
    ci = Z95 * sd / math.sqrt(n) if n >= 2 else math.nan
    llr = float(sprt.llr(np.array(float(n)), np.array(data.sum()), np.array((data * data).sum())))
    return State(n, mean, sd, ci, llr, None, _pairs_to_go(sprt, n, mean, sd, llr))


def _pairs_to_go(sprt: Sprt, n: int, mean: float, sd: float, llr: float) -> int | None:
    """Pairs until the LLR reaches a bound if it drifts at its long-run rate per pair under
    a true mean and spread equal to today's estimates: (bound − LLR) / drift."""
    if n < 2 or not sd > 0:
        return None
    mu0, mu1 = sprt.lower, sprt.upper
    var = sd * sd
    # At a true mean m and variance σ², the LLR grows by ½ ln((σ² + (m − μ₀)²) /
    # (σ² + (m − μ₁)²)) per pair in the long run.
    drift = 0.5 * math.log((var + (mean - mu0) ** 2) / (var + (mean - mu1) ** 2))
    if abs(drift) < 1e-12:
        return None
    bound = sprt.accept_h1_at if drift > 0 else sprt.accept_h0_at
    return max(sprt.min_pairs - n, math.ceil((bound - llr) / drift), 0)


def first_verdict(sprt: Sprt, diffs: Sequence[float]) -> tuple[str | None, int]:
    """Walk the differences in order: the first verdict and the number of pairs it was
    reached at, or (None, len(diffs)) when no bound was crossed."""
    data = np.asarray(diffs, dtype=np.float64)
    if data.size == 0:
        return None, 0
    n = np.arange(1, data.size + 1, dtype=np.float64)
    llr = sprt.llr(n, np.cumsum(data), np.cumsum(data * data))
    eligible = n >= sprt.min_pairs
    h1 = eligible & (llr >= sprt.accept_h1_at)
    h0 = eligible & (llr <= sprt.accept_h0_at)
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
    pairs_total = 0.0
    n = np.arange(1, max_pairs + 1, dtype=np.float64)
    eligible = n >= sprt.min_pairs
    for start in range(0, tests, chunk):
        rows = min(chunk, tests - start)
        d = draw(rng, (rows, max_pairs))
        llr = sprt.llr(n, np.cumsum(d, axis=1), np.cumsum(d * d, axis=1))
        up = eligible & (llr >= sprt.accept_h1_at)
        down = eligible & (llr <= sprt.accept_h0_at)
        crossed = up | down
        decided = crossed.any(axis=1)
        first = np.where(decided, crossed.argmax(axis=1), max_pairs - 1)
        took_h1 = decided & up[np.arange(rows), first]
        h1 += int(took_h1.sum())
        h0 += int((decided & ~took_h1).sum())
        pairs_total += float((first + 1).sum())
    return Simulation(
        tests=tests,
        accept_h1=h1 / tests,
        accept_h0=h0 / tests,
        undecided=(tests - h1 - h0) / tests,
        mean_pairs=pairs_total / tests,
    )


def fixed_size_pairs(sprt: Sprt, sd: float) -> int:
    """Pairs a fixed-size one-sided z-test needs for the same error rates: level ``alpha``
    at the mean ``lower`` and power 1 − ``beta`` at ``upper``, for differences of standard
    deviation ``sd``: n = ((z₁₋α + z₁₋β) σ / (upper − lower))²."""
    z = NormalDist().inv_cdf
    return math.ceil(
        ((z(1.0 - sprt.alpha) + z(1.0 - sprt.beta)) * sd / (sprt.upper - sprt.lower)) ** 2
    )
