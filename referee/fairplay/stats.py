"""The anytime-valid test: a betting e-process over rounds.

The decisions of one round share its deal, so they are not independent of each other;
rounds are (each is dealt afresh from the match seed). The unit of the test is therefore
one round of one bot (or of one pair of bots): its score ``y`` is the mean over the unit's
decisions of ``rank - 1/2`` (:class:`~referee.fairplay.value.Fit`), a number in
[-1/2, 1/2] whose mean is 0 for an honest bot (given everything before the round).

:class:`Monitor` bets against the hypothesis "mean ``y`` at most ``margin``": its wealth
starts at 1 and after each unit is multiplied by ``1 + lambda * (y - margin)``, where the
stake ``lambda`` is chosen from the units before (aGRAPA: the growth-optimal stake for the
mean and variance seen so far, at most 0.9 of the largest safe stake). Under the
hypothesis the wealth is a nonnegative supermartingale, so by Ville's inequality it ever
reaches ``1/alpha`` with probability at most ``alpha``, however often it is looked at: a
league may look after every match and the false-alarm rate stays at most ``alpha``. The
wealth is the e-value; ``1 / (the highest wealth so far)`` is an anytime-valid p-value.

Beside the test, the monitor keeps the effect in points: the mean ``excess`` per
decision, its standard error from the units' sums (so the decisions of one round are not
counted as independent) and a 95 % normal interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The score of a unit is the mean of ``rank - 1/2``: within [-LOW, LOW].
LOW = 0.5
#: The largest stake, as a share of the largest safe one (which could lose everything).
STAKE_SHARE = 0.9


@dataclass
class Monitor:
    """The running test and effect estimate of one bot or one pair."""

    alpha: float = 0.01
    margin: float = 0.0
    #: Units (rounds) and decisions seen.
    units: int = 0
    decisions: int = 0
    #: log of the current wealth, and of the highest wealth so far.
    log_wealth: float = 0.0
    log_peak: float = 0.0
    # Sums over units of y and y^2 (the stake), and of the excess sums (the effect).
    _y: float = 0.0
    _yy: float = 0.0
    _x: float = 0.0
    _xx: float = 0.0
    _xn: float = 0.0
    _nn: float = 0.0

    def add(self, y: float, excess_sum: float, count: int) -> None:
        """One unit: its score ``y`` (mean of rank - 1/2 over its ``count`` decisions) and
        the sum of their ``excess``."""
        if count <= 0:
            return
        y = min(LOW, max(-LOW, y))
        stake = self.stake()
        self.log_wealth += math.log1p(stake * (y - self.margin))
        self.log_peak = max(self.log_peak, self.log_wealth)
        self.units += 1
        self.decisions += count
        self._y += y
        self._yy += y * y
        self._x += excess_sum
        self._xx += excess_sum * excess_sum
        self._xn += excess_sum * count
        self._nn += count * count

    def stake(self) -> float:
        """The next stake (aGRAPA), from the units seen so far only."""
        t = self.units
        # A weak prior (two units at the margin, variance of a uniform rank) steadies it.
        mean = (self._y + 2 * self.margin) / (t + 2)
        var = max((self._yy + 2 * (self.margin**2 + 1 / 12)) / (t + 2) - mean * mean, 1e-6)
        excess = mean - self.margin
        if excess <= 0:
            return 0.0
        # A unit's score is a mean of many ranks, never near -1/2: most of the safe range
        # can be staked without risk of ruin.
        limit = STAKE_SHARE / (LOW + self.margin)
        return min(limit, excess / (var + excess * excess))

    @property
    def e_value(self) -> float:
        """The current wealth: an e-value for "honest" (large: evidence of clairvoyance)."""
        return math.exp(min(self.log_wealth, 700.0))

    @property
    def p_value(self) -> float:
        """An anytime-valid p-value: 1 / the highest wealth so far, at most 1."""
        return min(1.0, math.exp(-min(self.log_peak, 700.0)))

    @property
    def flagged(self) -> bool:
        """Whether the wealth ever reached 1/alpha."""
        return self.log_peak >= math.log(1 / self.alpha)

    @property
    def statistic(self) -> float:
        """The mean excess per decision, in points of the round score."""
        return self._x / self.decisions if self.decisions else 0.0

    @property
    def standard_error(self) -> float:
        """The standard error of :attr:`statistic`, with the rounds as clusters (a ratio
        estimator's delta-method variance)."""
        if self.units < 2 or not self.decisions:
            return math.nan
        mean = self.statistic
        # sum over units of (x_u - mean * n_u)^2
        ss = self._xx - 2 * mean * self._xn + mean * mean * self._nn
        ss = max(ss, 0.0)
        scale = self.units / (self.units - 1)
        return math.sqrt(scale * ss) / self.decisions

    @property
    def interval(self) -> tuple[float, float]:
        """A 95 % normal interval for the mean excess."""
        se = self.standard_error
        if math.isnan(se):
            return (math.nan, math.nan)
        return (self.statistic - 1.96 * se, self.statistic + 1.96 * se)

    @property
    def mean_rank(self) -> float:
        """The mean over units of the mean rank (0.5 for an honest bot)."""
        return 0.5 + self._y / self.units if self.units else 0.5
