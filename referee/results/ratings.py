"""Ratings from match places: a live Elo and published Bradley–Terry standings.

Pure: no I/O and no logging. The tournament builds a :class:`MatchOutcome` per match from
its database and hands them here.

Every match of N seats is read as N(N−1)/2 pairwise games: the better place wins, a shared
place is half a win each (forfeited seats already rank last in the places).

* :class:`LiveElo` updates after every match (pairwise Elo with K/(N−1)); it depends on the
  order of the matches and is shown for watching a tournament as it runs.
* :func:`fit_standings` is the published table: the maximum a-posteriori Bradley–Terry
  fit over all pairwise games, P(i beats j) = 1/(1+exp(θj−θi)), independent of the order
  of the matches, with 95% intervals from a bootstrap over whole matches, or, at a
  platform's scale, from the fit's information (see :func:`fit`'s ``intervals``).

The prior. Each θ has an independent Gaussian prior N(0, σ²) with σ = 1000 Elo
(≈ 5.76 in θ units). It makes the log-posterior strictly concave, so the fit has one finite
maximum even for an unbeaten bot or for groups of bots that never met; and it is weak
enough to move a bot with a few dozen games by only a few Elo (two bots, 3 wins of 4:
187.1 Elo instead of the maximum-likelihood 190.85). BayesElo's virtual draws were the
other choice; they shrink more and by an amount that depends on how many opponents a bot
has, which a referee cannot explain as simply. A centred Gaussian also makes the mean θ
exactly 0 at the optimum, so the mean anchor costs nothing.

Why the fit is written here with numpy rather than taken from a library: ``choix``
(0.4.1, the BT library on PyPI) does fit MAP BT with an L2 penalty (``opt_pairwise``), but it
takes a list of (winner, loser) games with no weights, so a shared place (half a win) can
only be entered by doubling every game, it loops over games in Python in every objective,
gradient and Hessian call (slow for 200 bootstrap refits of ~10⁴ games) and it pulls in
scipy for ``minimize``. Aggregating the games into one weighted win matrix makes Newton's
method a few lines of numpy on an n×n system, converging in a handful of steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import NDArray

#: Elo points per θ unit: Elo = θ · 400/ln 10.
ELO_PER_THETA = 400.0 / math.log(10.0)
#: The default prior's standard deviation, in Elo.
PRIOR_SIGMA_ELO = 1000.0
#: Bots with fewer matches than this are provisional by default: listed apart, unranked.
MIN_MATCHES = 5
#: Newton stops when no θ moves by more than this.
TOLERANCE = 1e-9
#: A bot cut off from its group's reference bots in more than this share of the bootstrap
#: resamples has an unidentified interval: its link to the others rests on a few matches.
BRIDGE_SHARE = 0.05
#: A resampled interval narrower than this share of the model's own (rating ± 1.96
#: standard errors) did not see the bot's spread: too few matches to resample. (With many
#: matches the two agree within a few tens of percent; a one-match bot's saw a twentieth.)
FEW_SHARE = 1.0 / 3.0
#: An interval narrower than this (Elo) comes from resamples that never differ (every game
#: a tie, say): the bootstrap cannot measure the spread, so it is unidentified.
DEGENERATE_WIDTH = 0.5

#: How :func:`fit` measures its intervals: refits of resampled matches, or the fit's
#: information (a sandwich), with resampling kept for the bots it cannot serve.
IntervalMethod = Literal["bootstrap", "information"]
#: Under ``intervals="information"``, bots with fewer matches than this (and bots with an
#: open interval end) keep intervals from resampling: their own matches are too few for
#: a variance read from them.
FEW_MATCHES = 10
#: The normal quantile of a two-sided 95% interval.
Z95 = NormalDist().inv_cdf(0.975)

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    """One finished match: the bot and the place (1 = best) of every seat.

    ``places`` is a competition ranking (1, 2, 2, 4), forfeited seats ranked last; only the
    order of the places matters here. ``key`` is a unique match key (e.g. the match id):
    matches are sorted by it before the bootstrap, so the intervals do not depend on the
    order the outcomes arrive in.
    """

    bots: tuple[str, ...]
    places: tuple[int, ...]
    key: str = ""
    #: Per seat, whether it forfeited (empty: none did). Forfeited seats share the last
    #: place: a forfeit is not a result between the forfeited seats.
    forfeited: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        # A frozen dataclass: normalise lists from a database row to tuples.
        object.__setattr__(self, "bots", tuple(self.bots))
        object.__setattr__(self, "places", tuple(self.places))
        object.__setattr__(self, "forfeited", tuple(bool(f) for f in self.forfeited))
        n = len(self.bots)
        if self.forfeited and len(self.forfeited) != n:
            raise ValueError(
                f"match {self.key!r}: {n} bots but {len(self.forfeited)} forfeited flags"
            )
        if n < 2:
            raise ValueError(f"match {self.key!r}: a match needs at least 2 seats, got {n}")
        if len(self.places) != n:
            raise ValueError(
                f"match {self.key!r}: {n} bots but {len(self.places)} places",
            )
        if len(set(self.bots)) != n:
            raise ValueError(f"match {self.key!r}: a bot holds two seats: {self.bots}")
        for place in self.places:
            if not isinstance(place, int) or isinstance(place, bool) or not 1 <= place <= n:
                raise ValueError(f"match {self.key!r}: place {place!r} is not in 1..{n}")
        gone = sum(self.forfeited)
        if gone:
            last = n - gone + 1
            shared = tuple(
                last if f else p for p, f in zip(self.places, self.forfeited, strict=True)
            )
            object.__setattr__(self, "places", shared)


def _score(place_i: int, place_j: int) -> float:
    """Seat i's result against seat j: 1 for a better place, ½ for the same, 0 for worse."""
    if place_i < place_j:
        return 1.0
    if place_i == place_j:
        return 0.5
    return 0.0


class LiveElo:
    """Multiplayer Elo updated after every match, pairwise with K/(N−1).

    For every ordered pair of seats (i, j): S = 1, ½ or 0 as i placed better, the same or
    worse, E = 1/(1+10^((Rj−Ri)/400)), and Ri += K/(N−1)·Σj (S − E), all from the ratings
    before the match. A bot starts at ``initial`` when first seen.
    """

    def __init__(self, k: float = 32.0, initial: float = 1500.0) -> None:
        self.k = k
        self.initial = initial
        self._ratings: dict[str, float] = {}

    def update(self, outcome: MatchOutcome) -> None:
        """Apply one match. A bot in two seats is refused with ValueError."""
        bots, places = outcome.bots, outcome.places
        if len(set(bots)) != len(bots):  # MatchOutcome refuses it too; kept for safety
            raise ValueError(f"match {outcome.key!r}: a bot holds two seats: {bots}")
        before = [self._ratings.get(b, self.initial) for b in bots]
        n = len(bots)
        k_pair = self.k / (n - 1)
        for i, bot in enumerate(bots):
            total = 0.0
            for j in range(n):
                if j != i:
                    expected = 1.0 / (1.0 + 10.0 ** ((before[j] - before[i]) / 400.0))
                    total += _score(places[i], places[j]) - expected
            self._ratings[bot] = before[i] + k_pair * total

    def ratings(self) -> dict[str, float]:
        """Every bot seen so far and its current rating (a copy)."""
        return dict(self._ratings)


@dataclass(frozen=True, slots=True)
class Standing:
    """One bot's published rating (Elo scale), its 95% interval and its pairwise games.

    ``ci_low``/``ci_high`` are NaN when no bootstrap was run, and infinite at an open end.
    """

    bot: str
    rating: float
    ci_low: float
    ci_high: float
    games: int
    #: Matches the bot played.
    matches: int = 0
    #: Fewer matches than the fit's ``min_matches``: listed apart, unranked.
    provisional: bool = False
    #: The group of bots connected by matches it belongs to (0 = the largest); ratings
    #: compare only within a group.
    group: int = 0
    #: The data do not bound this end of the interval (e.g. the bot never lost, resp. never
    #: won; see :func:`_open_ends`): ``ci_high`` is +inf, resp. ``ci_low`` is -inf, and the
    #: other end is a bound ("> 1900", "< 1400").
    low_open: bool = False
    high_open: bool = False
    #: The scale's reference (the tournament's ``anchor``): its rating is fixed by
    #: definition, so it has no interval of its own.
    anchor: bool = False
    #: The data cannot support a resampled interval (see :func:`fit`): the resamples never
    #: differ, the bot's link to its group was lost in more than :data:`BRIDGE_SHARE` of
    #: them (``ci_low``/``ci_high`` are then what the resamples that kept the link say),
    #: or it played too few matches for them to spread (the interval is then the model's
    #: own, the rating ± 1.96 standard errors).
    unidentified: bool = False
    #: The share of resamples in which the bot was cut off from its group's reference bots
    #: (its bridge to them was not drawn); those resamples are left out of its interval.
    cut_share: float = 0.0


def bradley_terry(
    wins: FloatArray,
    *,
    prior_sigma_elo: float = PRIOR_SIGMA_ELO,
    start: FloatArray | None = None,
    max_iter: int = 100,
) -> FloatArray:
    """The MAP Bradley–Terry strengths θ (natural units) for a win matrix.

    ``wins[a, b]`` is the (possibly half-integer) number of games a won against b. Newton's
    method with step halving on the log-posterior, from ``start`` (or 0), until no θ moves
    by more than 1e-9.
    """
    n = wins.shape[0]
    games = wins + wins.T
    precision = (ELO_PER_THETA / prior_sigma_elo) ** 2  # 1/σ² in θ units
    centre = _centring(games)
    theta = np.zeros(n) if start is None else centre(np.array(start, dtype=np.float64))

    def log_posterior(t: FloatArray) -> float:
        diff = t[:, None] - t[None, :]
        return float(-(wins * np.logaddexp(0.0, -diff)).sum() - 0.5 * precision * (t @ t))

    current = log_posterior(theta)
    for _ in range(max_iter):
        diff = theta[:, None] - theta[None, :]
        p = np.exp(-np.logaddexp(0.0, -diff))  # P(a beats b), without overflow
        gradient = (wins - games * p).sum(axis=1) - precision * theta
        v = games * p * (1.0 - p)
        neg_hessian = np.diag(v.sum(axis=1) + precision) - v
        step = centre(np.linalg.solve(neg_hessian, gradient))
        if float(np.abs(step).max(initial=0.0)) < TOLERANCE:
            return theta + step
        # The posterior is concave, so a full Newton step only overshoots far from the top.
        scale = 1.0
        while True:
            candidate = theta + scale * step
            value = log_posterior(candidate)
            if value >= current - 1e-12 * (1.0 + abs(current)) or scale < 1e-6:
                break
            scale /= 2.0
        theta, current = candidate, value
    raise RuntimeError(f"Bradley–Terry fit did not converge in {max_iter} Newton steps")


def _centring(games: FloatArray) -> Callable[[FloatArray], FloatArray]:
    """Subtracts from a vector its mean over each group of bots connected by games.

    At the optimum every such group has mean θ 0 (the likelihood's gradient sums to 0
    over a group, leaving only the centred prior), and an exact Newton step keeps the
    mean. Centring removes the rounding noise along that direction, which a weak prior
    barely pins down (with σ → ∞ the Hessian becomes singular there).
    """
    label = _groups(games)
    groups = int(label.max()) + 1 if label.size else 0
    size = np.bincount(label, minlength=groups).astype(np.float64)

    def centre(x: FloatArray) -> FloatArray:
        means = np.bincount(label, weights=x, minlength=groups) / size
        return x - means[label]

    return centre


class _Games:
    """Every pairwise game of a list of matches, flattened for fast re-weighting."""

    def __init__(self, outcomes: Sequence[MatchOutcome], index: dict[str, int]) -> None:
        n = len(index)
        match_of: list[int] = []
        cell_ab: list[int] = []
        credit: list[float] = []
        for m, outcome in enumerate(outcomes):
            ids = [index[b] for b in outcome.bots]
            for i in range(len(ids)):
                for j in range(i + 1, len(ids)):
                    match_of.append(m)
                    cell_ab.append(ids[i] * n + ids[j])
                    credit.append(_score(outcome.places[i], outcome.places[j]))
        self.n = n
        self.matches = len(outcomes)
        self.match_of = np.array(match_of, dtype=np.intp)
        ab = np.array(cell_ab, dtype=np.intp)
        self.cell_ab = ab
        self.cell_ba = (ab % n) * n + ab // n
        self.credit = np.array(credit, dtype=np.float64)

    def wins(self, match_weights: FloatArray | None = None) -> FloatArray:
        """The win matrix with each match counted ``match_weights[m]`` times (default 1)."""
        w = np.ones(len(self.credit)) if match_weights is None else match_weights[self.match_of]
        size = self.n * self.n
        won = np.bincount(self.cell_ab, weights=w * self.credit, minlength=size)
        lost = np.bincount(self.cell_ba, weights=w * (1.0 - self.credit), minlength=size)
        flat: FloatArray = (won + lost).astype(np.float64)
        return flat.reshape(self.n, self.n)


def _groups(games: FloatArray) -> NDArray[np.intp]:
    """The group of each bot: bots connected by games, directly or through common
    opponents. Numbered by size, largest first (then by first bot): 0, 1, ..."""
    n = games.shape[0]
    label = np.full(n, -1, dtype=np.intp)
    linked = games > 0
    count = 0
    for first in range(n):
        if label[first] >= 0:
            continue
        # Breadth first, a whole level at a time: a league's bots are a few levels apart.
        label[first] = count
        level = np.zeros(n, dtype=bool)
        level[first] = True
        while level.any():
            level = linked[level].any(axis=0) & (label < 0)
            label[level] = count
        count += 1
    sizes = np.bincount(label, minlength=count)
    order = sorted(range(count), key=lambda g: (-sizes[g], int(np.flatnonzero(label == g)[0])))
    renumber = np.empty(count, dtype=np.intp)
    renumber[order] = np.arange(count)
    out: NDArray[np.intp] = renumber[label]
    return out


def _open_ends(
    wins: FloatArray, group: NDArray[np.intp], played_on: NDArray[np.bool_] | None = None
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Which interval ends the data cannot bound: (low open, high open) per bot.

    Let a → b when a won (or shared a place) against b at least once, and call bots that
    reach each other along these arrows a circle. Within a circle every rating difference
    is bounded by the data. A group's main circle is its largest (then the one with the
    most even record); the ratings are read against it. A bot outside it that no bot of
    the main circle reaches (nobody there beat it, even through others) could be better by
    any amount: its high end is open. One that reaches no bot of the main circle could be
    worse by any amount: its low end is open. Only the prior holds such a rating.

    ``played_on`` marks the bots that finished at least one match without forfeiting; the
    main circle is taken among them when a group has any, so that bots that only ever
    forfeited (their games are no results) never become the reference of the scale.
    """
    n = wins.shape[0]
    reach = (wins > 0) | np.eye(n, dtype=bool)
    for k in range(n):  # transitive closure (Warshall)
        reach |= reach[:, k : k + 1] & reach[k : k + 1, :]
    circle = reach & reach.T
    won, lost = wins.sum(axis=1), wins.sum(axis=0)
    balance = np.abs(won - lost) / np.maximum(won + lost, 1e-12)
    low_open = np.zeros(n, dtype=bool)
    high_open = np.zeros(n, dtype=bool)
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        candidates = members
        if played_on is not None and played_on[members].any():
            candidates = members[played_on[members]]
        main = min(candidates, key=lambda i: (-int(circle[i].sum()), float(balance[i]), int(i)))
        for i in members:
            if not circle[main, i]:
                high_open[i] = not reach[main, i]
                low_open[i] = not reach[i, main]
    return low_open, high_open


def _anchored(
    elo: FloatArray,
    group: NDArray[np.intp],
    held: NDArray[np.bool_],
    core: NDArray[np.bool_],
    anchor_index: int | None,
    anchor_value: float,
) -> FloatArray:
    """Ratings shifted so that in each group the mean over the ``core`` bots ``held`` is
    ``anchor_value`` (over all held bots of a group without one), and in the anchor bot's
    group so that the anchor bot is exactly ``anchor_value``."""
    out = elo.copy()
    for g in np.unique(group):
        members = group == g
        if anchor_index is not None and members[anchor_index]:
            out[members] += anchor_value - elo[anchor_index]
            continue
        mine = members & held & core
        if not mine.any():
            mine = members & held
        if mine.any():
            out[members] += anchor_value - float(elo[mine].mean())
    return out


@dataclass(frozen=True, slots=True)
class Fit:
    """The published standings and what a reader must know about them.

    ``standings``: each group's bots that played at least ``min_matches`` best first,
    group after group, then the provisional bots (best first). ``warnings``: one line
    each, for every export (groups that never met, a fallback anchor, provisional bots).
    """

    standings: list[Standing]
    groups: int
    warnings: tuple[str, ...]
    min_matches: int = 0


def fit(
    outcomes: Iterable[MatchOutcome],
    *,
    anchor: str | None = None,
    anchor_value: float = 1500.0,
    bootstrap: int = 200,
    seed: int = 0,
    prior_sigma_elo: float = PRIOR_SIGMA_ELO,
    min_matches: int = 0,
    intervals: IntervalMethod = "bootstrap",
) -> Fit:
    """Bradley–Terry standings on the Elo scale with 95% bootstrap intervals.

    Each group of bots connected by matches is its own scale, anchored so that the mean
    rating of its firmly placed bots (no open interval end, not provisional; all of them if
    there are none) is ``anchor_value``; with ``anchor``, the anchor bot's group is anchored so that
    the anchor bot is exactly ``anchor_value`` (an anchor that played no match falls back
    to the mean, with a warning). The intervals are the 2.5 and 97.5 percentiles of
    ``bootstrap`` refits over whole matches resampled with replacement (seeded, so
    reproducible); each refit is anchored on the bots it holds, and a refit in which a bot
    (or the anchor bot) played no game says nothing about it and is left out of that bot's
    (or its group's) percentiles. An interval end the data cannot bound is open
    (:func:`_open_ends`). The result does not depend on the order of ``outcomes``.

    ``intervals="information"`` reads the intervals of the bots with at least
    :data:`FEW_MATCHES` matches and no open end from the fit itself (:func:`_sandwich`:
    its curvature, with the spread of each match's results, so that one match's pairwise
    games moving together count as they do in the bootstrap) and resamples only the other
    bots' matches, refitting those bots with everyone else held at the fit
    (:func:`_resampled`, which also checks every resample for bots cut off from their
    group's scale, so ``cut_share`` and ``unidentified`` mean what they mean under the
    bootstrap). It costs a few fits where the bootstrap costs ``bootstrap`` of them, and
    agrees with it in large samples.
    """
    if intervals not in ("bootstrap", "information"):
        raise ValueError(f"intervals must be 'bootstrap' or 'information', not {intervals!r}")
    ordered = sorted(outcomes, key=lambda o: (o.key, o.bots, o.places))
    bots = sorted({b for o in ordered for b in o.bots})
    if not bots:
        return Fit([], 0, (), min_matches)
    warnings: list[str] = []
    index = {b: i for i, b in enumerate(bots)}
    if anchor is not None and anchor not in index:
        warnings.append(
            f"the anchor bot {anchor!r} played no match: each group's mean rating is "
            f"{anchor_value:g} instead"
        )
        anchor = None
    anchor_index = None if anchor is None else index[anchor]

    games = _Games(ordered, index)
    wins = games.wins()
    theta = bradley_terry(wins, prior_sigma_elo=prior_sigma_elo)
    played = (wins + wins.T).sum(axis=1)
    group = _groups(wins + wins.T)
    matches = np.zeros(len(bots), dtype=np.intp)
    for o in ordered:
        for b in o.bots:
            matches[index[b]] += 1
    played_on = np.zeros(len(bots), dtype=bool)
    for o in ordered:
        for b, gone in zip(o.bots, o.forfeited or (False,) * len(o.bots), strict=True):
            played_on[index[b]] |= not gone
    low_open, high_open = _open_ends(wins, group, played_on)
    # The scale is set by the bots the data place firmly: neither an open end nor
    # provisional. A newcomer's rating swings from resample to resample; in the mean it
    # would move everybody's interval with it.
    core = ~low_open & ~high_open & (matches >= min_matches)
    everyone = np.ones(len(bots), dtype=bool)
    rating = _anchored(theta * ELO_PER_THETA, group, everyone, core, anchor_index, anchor_value)

    low = np.full(len(bots), math.nan)
    high = np.full(len(bots), math.nan)
    cut_share = np.zeros(len(bots))
    # The bots each group's scale is read against: the anchor bot, else its core.
    reference = np.zeros(len(bots), dtype=bool)
    for g in np.unique(group):
        members = group == g
        if anchor_index is not None and members[anchor_index]:
            reference[anchor_index] = True
        else:
            reference |= members & (core if (members & core).any() else members)
    if bootstrap > 0 and intervals == "information":
        spread = _sandwich(games, theta, wins, prior_sigma_elo, group, reference, anchor_index)
        low = rating - Z95 * spread
        high = rating + Z95 * spread
        flagged = low_open | high_open | (matches < FEW_MATCHES)
        low[flagged], high[flagged], cut_share = _resampled(
            games,
            theta,
            flagged,
            group,
            core,
            reference,
            anchor_index,
            anchor_value,
            bootstrap=bootstrap,
            seed=seed,
            prior_sigma_elo=prior_sigma_elo,
        )
    elif bootstrap > 0:
        rng = np.random.default_rng(seed)
        samples = np.full((bootstrap, len(bots)), math.nan)
        seen_count = np.zeros(len(bots))
        cut_count = np.zeros(len(bots))
        anchor_group = None if anchor_index is None else group == group[anchor_index]
        for r in range(bootstrap):
            picks = rng.integers(0, games.matches, size=games.matches)
            counts = np.bincount(picks, minlength=games.matches).astype(np.float64)
            w = games.wins(counts)
            refit = bradley_terry(w, prior_sigma_elo=prior_sigma_elo, start=theta)
            seen = (w + w.T).sum(axis=1) > 0
            # A bot whose only link to its group's reference bots was not drawn has no
            # common scale with them in this refit: its rating there is the prior's guess.
            cut = seen & _cut_off(w + w.T, group, reference & seen)
            seen_count += seen
            cut_count += cut
            held = seen & ~cut
            use = held.copy()
            this_anchor = anchor_index
            if anchor_index is not None and not seen[anchor_index]:
                assert anchor_group is not None
                use &= ~anchor_group  # no scale for the anchor's group in this refit
                this_anchor = None
            elo = _anchored(refit * ELO_PER_THETA, group, held, core, this_anchor, anchor_value)
            samples[r, use] = elo[use]
        cut_share = cut_count / np.maximum(seen_count, 1.0)
        has_sample = ~np.isnan(samples).all(axis=0)
        if has_sample.any():
            low[has_sample] = np.nanpercentile(samples[:, has_sample], 2.5, axis=0)
            high[has_sample] = np.nanpercentile(samples[:, has_sample], 97.5, axis=0)
    is_anchor = np.zeros(len(bots), dtype=bool)
    if anchor_index is not None:
        is_anchor[anchor_index] = True
    # Resamples that never differ (all games ties, one fixed order repeated) give an
    # interval of no width: not a measurement. Nor is one whose bridge was often lost.
    flat = (high - low) < DEGENERATE_WIDTH  # NaN compares False
    # Nor one the resamples of a bot's few matches cannot spread: a single match is drawn
    # with the same places or not at all. Where they saw less than a third of the width
    # the model's own standard errors give, the interval is the model's.
    half = _model_half_widths(wins, theta, prior_sigma_elo, group, reference, anchor_index)
    few = matches < FEW_MATCHES
    thin = few & ~is_anchor & ~flat & ((high - low) < FEW_SHARE * 2.0 * half)
    low[thin] = np.minimum(low[thin], rating[thin] - half[thin])
    high[thin] = np.maximum(high[thin], rating[thin] + half[thin])
    unidentified = ~is_anchor & ((cut_share > BRIDGE_SHARE) | flat | thin)
    unidentified &= ~(low_open | high_open)
    low[low_open] = -math.inf
    high[high_open] = math.inf

    standings = [
        Standing(
            bot=b,
            rating=float(rating[i]),
            ci_low=float(low[i]),
            ci_high=float(high[i]),
            games=round(float(played[i])),
            matches=int(matches[i]),
            provisional=bool(matches[i] < min_matches),
            group=int(group[i]),
            low_open=bool(low_open[i]),
            high_open=bool(high_open[i]),
            anchor=bool(is_anchor[i]),
            unidentified=bool(unidentified[i]),
            cut_share=float(cut_share[i]),
        )
        for i, b in enumerate(bots)
    ]
    standings.sort(key=lambda s: (s.provisional, s.group, -s.rating, s.bot))
    groups = int(group.max()) + 1
    if groups > 1:
        sizes = np.bincount(group)
        warnings.append(
            f"the bots form {groups} groups that never met, directly or through common "
            f"opponents ({', '.join(str(k) for k in sizes)} bots): ratings compare only "
            "within a group"
        )
    provisional = [s.bot for s in standings if s.provisional]
    if provisional:
        warnings.append(
            f"{len(provisional)} bot(s) played fewer than {min_matches} matches and are "
            f"listed apart as provisional: {', '.join(provisional)}"
        )
    # Each bot flagged unidentified is named in exactly one warning, for its reason, and
    # no other bot is (an open end is marked as such instead).
    marked = [s for s in standings if s.unidentified]
    bridged = [s for s in marked if s.cut_share > BRIDGE_SHARE]
    if bridged:
        worst = max(s.cut_share for s in bridged)
        warnings.append(
            f"{len(bridged)} bot(s) are linked to the rest of their group by so few matches "
            f"that up to {worst:.0%} of the resamples lost the link; their intervals are "
            f"unidentified: {', '.join(s.bot for s in bridged)}"
        )
    scant = [s.bot for s in marked if s.cut_share <= BRIDGE_SHARE and thin[index[s.bot]]]
    if scant:
        warnings.append(
            f"{len(scant)} bot(s) played too few matches for the resamples to measure their "
            f"spread (each resample repeats or drops the same few): their intervals are the "
            f"model's own, the rating ± 1.96 standard errors, and unidentified: "
            f"{', '.join(scant)}"
        )
    flat_bots = [s.bot for s in marked if s.cut_share <= BRIDGE_SHARE and not thin[index[s.bot]]]
    if flat_bots:
        warnings.append(
            f"{len(flat_bots)} bot(s) have intervals of no width: every resample gave the "
            f"same result (all games ties, or one order repeated), so the data cannot "
            f"measure their spread: {', '.join(flat_bots)}"
        )
    return Fit(standings, groups, tuple(warnings), min_matches)


def _model_half_widths(
    wins: FloatArray,
    theta: FloatArray,
    prior_sigma_elo: float,
    group: NDArray[np.intp],
    reference: NDArray[np.bool_],
    anchor_index: int | None,
) -> FloatArray:
    """Half the model's own 95% interval of each rating, in Elo: 1.96 standard errors from
    the posterior's curvature at the fit (the inverse of the negative Hessian, Laplace's
    approximation), of the rating as anchored: minus its group's mean over the
    ``reference`` bots, or minus the anchor bot's in the anchor's group. Unlike
    :func:`_sandwich` it does not read the spread of the matches' results, which a bot
    with one match does not show."""
    n = wins.shape[0]
    games = wins + wins.T
    p = np.exp(-np.logaddexp(0.0, -(theta[:, None] - theta[None, :])))
    v = games * p * (1.0 - p)
    precision = (ELO_PER_THETA / prior_sigma_elo) ** 2
    covariance = np.linalg.inv(np.diag(v.sum(axis=1) + precision) - v)
    reading = np.eye(n)  # rating = θ − (the weights of its group's reference) · θ
    for g in np.unique(group):
        members = group == g
        weights = np.zeros(n)
        if anchor_index is not None and members[anchor_index]:
            weights[anchor_index] = 1.0
        else:
            base = members & reference
            weights[base] = 1.0 / int(base.sum())
        reading[members] -= weights
    var = ((reading @ covariance) * reading).sum(axis=1)  # BLAS: 20× einsum's speed at 500
    half: FloatArray = Z95 * ELO_PER_THETA * np.sqrt(np.maximum(var, 0.0))
    return half


def _sandwich(
    games: _Games,
    theta: FloatArray,
    wins: FloatArray,
    prior_sigma_elo: float,
    group: NDArray[np.intp],
    reference: NDArray[np.bool_],
    anchor_index: int | None,
) -> FloatArray:
    """Each bot's standard error (Elo) as the fit's information says, against its
    group's scale (the anchor bot, else the mean of the group's ``reference`` bots).

    The pairwise games of one match are not independent: they are read off one order of
    places (a bot that finishes first wins all its games there). The posterior's
    curvature alone (the observed Fisher information H) treats them as independent and
    gives intervals about 15-20% narrower than the bootstrap's in four-seat matches. The
    sandwich H⁻¹ B H⁻¹, with B the sum over matches of the outer product of each match's
    score (its gradient of the log-likelihood), counts each match as one draw, as the
    bootstrap over whole matches does, and is what that bootstrap tends to as matches
    accumulate (the composite likelihood's Godambe information).
    """
    n = games.n
    precision = (ELO_PER_THETA / prior_sigma_elo) ** 2
    a, b = games.cell_ab // n, games.cell_ab % n
    residual = games.credit - np.exp(-np.logaddexp(0.0, theta[b] - theta[a]))
    # Each (match, bot) seat's score: the residuals of its games in that match.
    seat, where = np.unique(
        np.concatenate([games.match_of * n + a, games.match_of * n + b]), return_inverse=True
    )
    score = np.bincount(where, weights=np.concatenate([residual, -residual]))
    bot = seat % n
    pairs = len(residual)
    sa, sb = where[:pairs], where[pairs:]
    cross = score[sa] * score[sb]
    meat = (
        np.bincount(bot * (n + 1), weights=score * score, minlength=n * n)
        + np.bincount(a * n + b, weights=cross, minlength=n * n)
        + np.bincount(b * n + a, weights=cross, minlength=n * n)
    ).reshape(n, n)
    played = wins + wins.T
    p = np.exp(-np.logaddexp(0.0, theta[None, :] - theta[:, None]))
    v = played * p * (1.0 - p)
    neg_hessian = np.diag(v.sum(axis=1) + precision) - v
    inverse = np.linalg.inv(neg_hessian)
    cov = inverse @ meat @ inverse
    # Each group's scale: a contrast u per group (the anchor bot, or its reference's mean).
    labels = int(group.max()) + 1
    scale = np.zeros((n, labels))
    for g in range(labels):
        members = group == g
        if anchor_index is not None and members[anchor_index]:
            scale[anchor_index, g] = 1.0
        else:
            chosen = members & reference
            scale[chosen, g] = 1.0 / chosen.sum()
    spread = cov @ scale  # n × groups
    variance = (
        np.diag(cov)
        - 2.0 * spread[np.arange(n), group]
        + np.einsum("ig,ig->g", scale, spread)[group]
    )
    out: FloatArray = np.sqrt(np.maximum(variance, 0.0)) * ELO_PER_THETA
    if anchor_index is not None:
        out[anchor_index] = 0.0  # the scale's reference: fixed by definition
    return out


def _resampled(
    games: _Games,
    theta: FloatArray,
    flagged: NDArray[np.bool_],
    group: NDArray[np.intp],
    core: NDArray[np.bool_],
    reference: NDArray[np.bool_],
    anchor_index: int | None,
    anchor_value: float,
    *,
    bootstrap: int,
    seed: int,
    prior_sigma_elo: float,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """What resampling still says beside the sandwich: ``bootstrap`` resamples of the
    matches as :func:`fit` draws them, each checked for bots cut off from their group's
    reference bots (every bot's cut share, as the bootstrap's), and in each the
    ``flagged`` bots refitted with every other bot held at its fitted θ. Returns the
    flagged bots' (low, high) percentiles and every bot's cut share.

    Holding the others makes a refit cost the flagged bots' games, not the league's: the
    spread of a bot with a handful of matches (or an open end) comes from those matches,
    much less from the well-measured bots it met."""
    n = games.n
    precision = (ELO_PER_THETA / prior_sigma_elo) ** 2
    chosen = np.flatnonzero(flagged)
    k = len(chosen)
    local = np.full(n, -1, dtype=np.intp)
    local[chosen] = np.arange(k)
    a_all, b_all = games.cell_ab // n, games.cell_ab % n
    touch = flagged[a_all] | flagged[b_all]
    a, b = a_all[touch], b_all[touch]
    la, lb = local[a], local[b]
    credit = games.credit[touch]
    from_a, from_b = la >= 0, lb >= 0
    both = from_a & from_b
    la_f, lb_f = la[from_a], lb[from_b]
    inner = la[both] * k + lb[both]

    def refit(w: FloatArray) -> FloatArray:
        """θ with the flagged bots' MAP under game weights ``w``, the others held."""
        t = theta.copy()

        def log_posterior(x: FloatArray) -> float:
            d = x[a] - x[b]
            ll = credit * np.logaddexp(0.0, -d) + (1.0 - credit) * np.logaddexp(0.0, d)
            return float(-(w * ll).sum() - 0.5 * precision * (x[chosen] @ x[chosen]))

        current = log_posterior(t)
        for _ in range(100):
            p = np.exp(-np.logaddexp(0.0, t[b] - t[a]))
            r = w * (credit - p)
            h = w * p * (1.0 - p)
            gradient = (
                np.bincount(la_f, weights=r[from_a], minlength=k)
                - np.bincount(lb_f, weights=r[from_b], minlength=k)
                - precision * t[chosen]
            )
            diagonal = (
                np.bincount(la_f, weights=h[from_a], minlength=k)
                + np.bincount(lb_f, weights=h[from_b], minlength=k)
                + precision
            )
            off = np.bincount(inner, weights=h[both], minlength=k * k).reshape(k, k)
            step = np.linalg.solve(np.diag(diagonal) - off - off.T, gradient)
            if float(np.abs(step).max(initial=0.0)) < TOLERANCE:
                t[chosen] += step
                return t
            # Concave, as in bradley_terry: halve a step that overshoots.
            scale = 1.0
            while True:
                candidate = t.copy()
                candidate[chosen] += scale * step
                value = log_posterior(candidate)
                if value >= current - 1e-12 * (1.0 + abs(current)) or scale < 1e-6:
                    break
                scale /= 2.0
            t, current = candidate, value
        raise RuntimeError("Bradley–Terry refit did not converge in 100 Newton steps")

    rng = np.random.default_rng(seed)
    samples = np.full((bootstrap, k), math.nan)
    seen_count = np.zeros(n)
    cut_count = np.zeros(n)
    anchor_group = None if anchor_index is None else group == group[anchor_index]
    for r in range(bootstrap):
        picks = rng.integers(0, games.matches, size=games.matches)
        counts = np.bincount(picks, minlength=games.matches).astype(np.float64)
        w = counts[games.match_of]
        drawn: FloatArray = np.bincount(games.cell_ab, weights=w, minlength=n * n).astype(
            np.float64
        )
        drawn = drawn.reshape(n, n)
        drawn += drawn.T
        seen = drawn.sum(axis=1) > 0
        cut = seen & _cut_off(drawn, group, reference & seen)
        seen_count += seen
        cut_count += cut
        if k == 0:
            continue
        held = seen & ~cut
        use = held[chosen]
        this_anchor = anchor_index
        if anchor_index is not None and not seen[anchor_index]:
            assert anchor_group is not None
            use &= ~anchor_group[chosen]
            this_anchor = None
        elo = _anchored(
            refit(w[touch]) * ELO_PER_THETA, group, held, core, this_anchor, anchor_value
        )
        samples[r, use] = elo[chosen][use]
    low = np.full(k, math.nan)
    high = np.full(k, math.nan)
    has_sample = ~np.isnan(samples).all(axis=0)
    if has_sample.any():
        low[has_sample] = np.nanpercentile(samples[:, has_sample], 2.5, axis=0)
        high[has_sample] = np.nanpercentile(samples[:, has_sample], 97.5, axis=0)
    return low, high, cut_count / np.maximum(seen_count, 1.0)


def _cut_off(
    games: FloatArray, group: NDArray[np.intp], reference: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """Per bot, whether it is not connected (in ``games``) to its group's reference bots
    held in this resample: those in the part of the group holding the most of them."""
    parts = _groups(games)
    cut = np.zeros(games.shape[0], dtype=bool)
    for g in np.unique(group):
        members = group == g
        held = members & reference
        if not held.any():
            continue  # nothing to read this group against: the caller leaves it out
        main = int(np.bincount(parts[held]).argmax())
        cut |= members & (parts != main)
    return cut


def fit_standings(
    outcomes: Iterable[MatchOutcome],
    *,
    anchor: str | None = None,
    anchor_value: float = 1500.0,
    bootstrap: int = 200,
    seed: int = 0,
    prior_sigma_elo: float = PRIOR_SIGMA_ELO,
    min_matches: int = 0,
    intervals: IntervalMethod = "bootstrap",
) -> list[Standing]:
    """The standings of :func:`fit` alone (its warnings dropped)."""
    return fit(
        outcomes,
        anchor=anchor,
        anchor_value=anchor_value,
        bootstrap=bootstrap,
        seed=seed,
        prior_sigma_elo=prior_sigma_elo,
        min_matches=min_matches,
        intervals=intervals,
    ).standings


@dataclass(frozen=True, slots=True)
class BotStats:
    """Per-bot statistics shown beside the rating, computed by the tournament."""

    bot: str
    matches: int
    mean_score: float
    mean_place: float
    faults: int
    think_p50_ms: float
    think_p99_ms: float


def quantile(values: Iterable[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) with linear interpolation between order statistics.

    NaN for no values (a bot that never had to think).
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is not in [0, 1]")
    data = np.fromiter(values, dtype=np.float64)
    if data.size == 0:
        return math.nan
    return float(np.quantile(data, q))
