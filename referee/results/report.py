"""Publishing the standings: a terminal table, JSON and CSV files, and a one-file HTML report.

Every writer takes the values computed elsewhere (:mod:`referee.results.ratings` and the
tournament's database) and only formats them. Bot names are user input: the terminal
table shows control characters escaped, and the HTML escapes all text.

Floats are written in full (``repr``) to JSON and CSV, so the files read back to the same
values; a missing value (NaN, e.g. no think times, no bootstrap) is ``null`` in JSON and an
empty cell in CSV.

Where the data cannot support a number, every export says so: an interval end the data do
not bound is open (``ci_high_open``/``ci_low_open`` true, the value ``null``; "> 1900" in
the table and the page), provisional bots (fewer matches than the minimum) are listed apart
with no rank, groups of bots that never met are ranked and shown separately, the anchor
bot's interval is shown as ``anchor`` (its rating is the scale's definition), an interval
the resamples cannot support (no width, or a link to the group often lost) is
``unidentified``, and the fit's warnings head the table, the page and the JSON's
``meta.warnings``.
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from referee.results.ratings import BotStats, Standing

#: Columns of the ratings JSON entries and of the ratings CSV, in order.
RATINGS_COLUMNS = (
    "rank",
    "bot",
    "rating",
    "ci_low",
    "ci_high",
    "games",
    "live_elo",
    "matches",
    "mean_score",
    "mean_place",
    "faults",
    "think_p50_ms",
    "think_p99_ms",
    "provisional",
    "group",
    "ci_low_open",
    "ci_high_open",
    "anchor",
    "unidentified",
    "cut_share",
)

RATINGS_FORMAT_VERSION = 1

#: In place of an interval the bootstrap cannot measure (``unidentified``): the words the
#: web pages use, not the flag's name.
UNMEASURED = "not measurable"


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One seat of one match, a line of the results CSV.

    Columns, in order: ``tournament`` (its name or id), ``match_index`` (0-based order of
    the match in the tournament), ``match_id``, ``seat`` (0-based), ``bot``, ``total``
    (the seat's match score), ``place`` (1 = best, competition ranking, forfeited seats
    last), ``forfeited`` (``true``/``false``), ``faults`` (the strikes the seat's faults
    cost: a late answer to a request already struck as a timeout costs none).
    """

    tournament: str
    match_index: int
    match_id: str
    seat: int
    bot: str
    total: int
    place: int
    forfeited: bool
    faults: int


RESULTS_COLUMNS = tuple(f.name for f in fields(ResultRow))


def _ranks(standings: Sequence[Standing]) -> list[int | None]:
    """Competition ranks (1, 2, 2, 4) of standings sorted best first, within each group;
    None for a provisional bot."""
    ranks: list[int | None] = []
    last: dict[int, tuple[float, int, int]] = {}  # group -> (rating, rank, count)
    for s in standings:
        if s.provisional:
            ranks.append(None)
            continue
        rating, rank, count = last.get(s.group, (math.nan, 0, 0))
        count += 1
        if s.rating != rating:
            rank = count
        last[s.group] = (s.rating, rank, count)
        ranks.append(rank)
    return ranks


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def interval_text(
    low: float | None,
    high: float | None,
    low_open: bool,
    high_open: bool,
    *,
    anchor: bool = False,
    unidentified: bool = False,
) -> str:
    """A 95% interval as text: ``1450–1620``, ``> 1900`` (no upper bound), ``< 1400`` (no
    lower bound), ``open`` (neither), ``anchor`` (the scale's reference), ``not measurable``
    (``unidentified``: the resamples cannot support one), ``–`` (none computed)."""
    if anchor:
        return "anchor"
    if unidentified:
        return UNMEASURED
    if low_open and high_open:
        return "open"
    if high_open:
        return "–" if low is None else f"> {_fmt(low)}"
    if low_open:
        return "–" if high is None else f"< {_fmt(high)}"
    if low is None or high is None:
        return "–"
    return f"{_fmt(low)}–{_fmt(high)}"


def _rows(
    standings: Sequence[Standing],
    stats: Mapping[str, BotStats] | None,
    live_elo: Mapping[str, float] | None,
) -> list[dict[str, Any]]:
    """One dict per bot with every RATINGS_COLUMNS value; missing values are None."""
    rows = []
    for rank, s in zip(_ranks(standings), standings, strict=True):
        st = (stats or {}).get(s.bot)
        rows.append(
            {
                "rank": rank,
                "bot": s.bot,
                "rating": s.rating,
                "ci_low": _finite(s.ci_low),
                "ci_high": _finite(s.ci_high),
                "games": s.games,
                "live_elo": _finite((live_elo or {}).get(s.bot)),
                "matches": st.matches if st else None,
                "mean_score": _finite(st.mean_score) if st else None,
                "mean_place": _finite(st.mean_place) if st else None,
                "faults": st.faults if st else None,
                "think_p50_ms": _finite(st.think_p50_ms) if st else None,
                "think_p99_ms": _finite(st.think_p99_ms) if st else None,
                "provisional": s.provisional,
                "group": s.group,
                "ci_low_open": s.low_open,
                "ci_high_open": s.high_open,
                "anchor": s.anchor,
                "unidentified": s.unidentified,
                "cut_share": s.cut_share,
            }
        )
    return rows


def row_interval(row: Mapping[str, Any]) -> str:
    """The interval text of one exported row (:func:`interval_text`)."""
    return interval_text(
        row["ci_low"],
        row["ci_high"],
        row["ci_low_open"],
        row["ci_high_open"],
        anchor=row["anchor"],
        unidentified=row["unidentified"],
    )


def _terminal_safe(text: str) -> str:
    """A bot name with control characters (escape sequences, newlines) shown escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _fmt(x: float | int | None, digits: int = 0) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}f}"


def standings_table(
    standings: Sequence[Standing],
    stats: Mapping[str, BotStats],
    live_elo: Mapping[str, float],
    warnings: Sequence[str] = (),
    min_matches: int = 0,
) -> str:
    """The standings as an aligned terminal table, best first (no trailing newline): a
    section per group of bots that never met the others, then the provisional bots, and
    the ``warnings`` first."""
    header = (
        "rank",
        "bot",
        "rating",
        "95% CI",
        "live Elo",
        "matches",
        "mean score",
        "mean place",
        "strikes",
        "think p50/p99 ms",
    )
    lines: list[tuple[str, ...]] = [header]
    titles: dict[int, str] = {}  # line number -> a section title printed before it
    rows = _rows(standings, stats, live_elo)
    several = len({r["group"] for r in rows}) > 1
    for row in rows:
        section = (
            f"provisional (fewer than {min_matches} matches; not ranked)"
            if row["provisional"]
            else f"group {row['group'] + 1}"
            if several
            else ""
        )
        if section and section not in titles.values():
            titles[len(lines)] = section
        ci = row_interval(row)
        lines.append(
            (
                "–" if row["rank"] is None else str(row["rank"]),
                _terminal_safe(row["bot"]),
                _fmt(row["rating"]),
                ci,
                _fmt(row["live_elo"]),
                _fmt(row["matches"]),
                _fmt(row["mean_score"], 1),
                _fmt(row["mean_place"], 2),
                _fmt(row["faults"]),
                f"{_fmt(row['think_p50_ms'], 1)}/{_fmt(row['think_p99_ms'], 1)}",
            )
        )
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    left = {1}  # the bot name; numbers are right-aligned
    out = [f"warning: {_terminal_safe(w)}" for w in warnings]
    for n, line in enumerate(lines):
        if n in titles:
            out.append(f"-- {titles[n]}")
        cells = [
            cell.ljust(widths[c]) if c in left else cell.rjust(widths[c])
            for c, cell in enumerate(line)
        ]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def write_ratings_json(
    path: Path,
    standings: Sequence[Standing],
    stats: Mapping[str, BotStats] | None = None,
    live_elo: Mapping[str, float] | None = None,
    *,
    meta: Mapping[str, Any] | None = None,
    warnings: Sequence[str] = (),
) -> None:
    """The standings as JSON: ``{"version": 1, "meta": {...}, "standings": [{...}, ...]}``.

    Each entry has the keys of :data:`RATINGS_COLUMNS`; ``meta`` is free-form (tournament,
    anchor, number of resamples, ...) and always holds ``warnings``, the fit's warnings
    (a list of lines, empty when there are none).
    """
    doc = {
        "version": RATINGS_FORMAT_VERSION,
        "meta": {**dict(meta or {}), "warnings": list(warnings)},
        "standings": _rows(standings, stats, live_elo),
    }
    text = json.dumps(doc, ensure_ascii=False, indent=2, allow_nan=False)
    Path(path).write_text(text + "\n", encoding="utf-8")


def _csv_value(x: object) -> str:
    """A CSV cell: floats in full, booleans as true/false, None as empty."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return repr(x)
    return str(x)


def write_ratings_csv(
    path: Path,
    standings: Sequence[Standing],
    stats: Mapping[str, BotStats] | None = None,
    live_elo: Mapping[str, float] | None = None,
) -> None:
    """The standings as CSV with a header line of :data:`RATINGS_COLUMNS`."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(RATINGS_COLUMNS)
        for row in _rows(standings, stats, live_elo):
            writer.writerow(_csv_value(row[c]) for c in RATINGS_COLUMNS)


def write_results_csv(path: Path, rows: Iterable[ResultRow | Mapping[str, Any]]) -> None:
    """Every seat of every match as CSV, with a header line of :data:`RESULTS_COLUMNS`.

    A row is a :class:`ResultRow` (its docstring describes the columns) or a mapping with
    those keys.
    """
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(RESULTS_COLUMNS)
        for r in rows:
            if isinstance(r, ResultRow):
                writer.writerow(_csv_value(getattr(r, c)) for c in RESULTS_COLUMNS)
            else:
                writer.writerow(_csv_value(r[c]) for c in RESULTS_COLUMNS)


# --- HTML ------------------------------------------------------------------------------

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 60em;
       color: #222; background: #fff; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; }
h3 { font-size: 1.05em; margin: 1.5em 0 .3em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: .25em .7em; border-bottom: 1px solid #ddd; text-align: right; }
th { background: #f4f4f4; } td.bot, th.bot { text-align: left; }
svg { display: block; margin: 1em 0; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
svg .grid { stroke: #e4e4e4; } svg .axis { stroke: #888; }
svg .errorbar line { stroke: #2a6fb0; stroke-width: 2; }
svg .errorbar.unidentified line { stroke-dasharray: 4 3; stroke: #999; }
svg .point { fill: #c0392b; }
.none { color: #888; }
details { margin: .4em 0; } summary { cursor: pointer; }
details table td, details table th { text-align: left; }
.c-H, .c-D { color: #c0392b; } .c-K { color: #7d3c98; } .c-W { color: #117a65; }
.c-P { color: #1f618d; } .c-R { color: #9a7d0a; } .won { font-weight: 700; }
.warning { background: #fff4d6; border-left: 4px solid #e0a800; padding: .4em .8em; }
"""

#: The report embeds the trick-by-trick account of at most this many matches (the latest);
#: every match links to its record file.
EMBEDDED_MATCHES = 50

_REASONS = {
    "off_suit_highest": "highest off-suit card",
    "off_suit_last_suit": "highest card of the last off-suit",
    "lead_suit_highest": "highest card of the lead suit",
    "all_zero": "only zeros: set aside",
}


@dataclass(frozen=True)
class ReportMatch:
    """One match in the report: its result, its record file (relative to the report) and,
    for the latest ones, the viewer document to embed (:func:`referee.results.documents.viewer_document`)."""

    match_id: str
    seating: Sequence[str]
    totals: Sequence[int]
    places: Sequence[int]
    record: str
    viewer: Mapping[str, Any] | None = None


def _cards_html(cards: Sequence[str], winner: int | None = None) -> str:
    return " ".join(
        f'<span class="c-{_e(c[:1])}{" won" if i == winner else ""}">{_e(c)}</span>'
        for i, c in enumerate(cards)
    )


def _match_html(m: ReportMatch) -> str:
    """A match's trick-by-trick account, folded in a ``<details>`` element."""
    result = ", ".join(
        f"{m.places[s]}. {_e(m.seating[s])} {m.totals[s]:+d}"
        for s in sorted(range(len(m.seating)), key=lambda s: m.places[s])
    )
    out = [
        f'<details id="m-{_e(m.match_id)}"><summary>{_e(m.match_id)}: {result}</summary>',
        f'<p><a href="{_e(m.record)}">the record</a> (re-check it with <code>referee replay</code>, '
        f"or step through it in <code>referee web</code>)</p>",
    ]
    doc = m.viewer or {}
    seating = list(doc.get("seating", m.seating))
    n = len(seating)
    for r in doc.get("rounds", []):
        out.append(
            f"<h4>Round {r['round'] + 1}, dealer {_e(seating[r['dealer']])}</h4>"
            "<table><thead><tr><th>Seat</th><th>Hand dealt</th><th>Pain</th><th>Score</th>"
            "</tr></thead><tbody>"
        )
        for s in range(n):
            score = "–" if r.get("scores") is None else f"{r['scores'][s]:+d}"
            out.append(
                f"<tr><td>{_e(seating[s])}</td><td>{_cards_html(r['hands'][s])}</td>"
                f"<td>{_cards_html(r['pain'][s])}</td><td>{score}</td></tr>"
            )
        out.append(
            "</tbody></table><table><thead><tr><th>Trick</th><th>Cards, from the leader</th>"
            "<th>Winner</th></tr></thead><tbody>"
        )
        for t, trick in enumerate(r["tricks"], 1):
            leader, winner = trick["leader"], trick["winner"]
            plays = ", ".join(
                f"{_e(seating[(leader + i) % n])} {_cards_html([c], 0 if (leader + i) % n == winner else None)}"
                for i, c in enumerate(trick["cards"])
            )
            who = "nobody" if winner < 0 else _e(seating[winner])
            why = _e(_REASONS.get(trick["reason"], trick["reason"]))
            out.append(f"<tr><td>{t}</td><td>{plays}</td><td>{who} ({why})</td></tr>")
        out.append("</tbody></table>")
    out.append("</details>")
    return "\n".join(out)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Round tick values from at or below ``lo`` to at or above ``hi``."""
    raw = max(hi - lo, 1.0) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first, last = math.floor(lo / step), math.ceil(hi / step)
    return [k * step for k in range(first, max(last, first + 1) + 1)]


def ratings_svg(standings: Sequence[Standing]) -> str:
    """An inline SVG chart: one row per bot, its rating as a dot and its 95% CI as a bar."""
    label_w, plot_w, row_h, top, bottom = 170, 520, 24, 10, 34
    values = [s.rating for s in standings]
    values += [v for s in standings for v in (s.ci_low, s.ci_high) if math.isfinite(v)]
    ticks = _nice_ticks(min(values), max(values)) if values else [1500.0]
    lo, hi = ticks[0], max(ticks[-1], ticks[0] + 1.0)

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    height = top + row_h * len(standings) + bottom
    width = label_w + plot_w + 20
    axis_y = top + row_h * len(standings)
    parts = [
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img" aria-label="ratings with 95% confidence intervals">'
    ]
    for t in ticks:
        parts.append(
            f'<line class="grid" x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{axis_y}"/>'
            f'<text x="{x(t):.1f}" y="{axis_y + 16}" text-anchor="middle">{t:g}</text>'
        )
    parts.append(
        f'<line class="axis" x1="{label_w}" y1="{axis_y}" x2="{label_w + plot_w}" y2="{axis_y}"/>'
    )
    for i, s in enumerate(standings):
        y = top + row_h * i + row_h / 2
        name = s.bot if len(s.bot) <= 24 else s.bot[:23] + "…"
        parts.append(f'<text x="{label_w - 8}" y="{y + 4:.1f}" text-anchor="end">{_e(name)}</text>')
        tip = f"{s.bot}: {s.rating:.0f}"
        if not (math.isnan(s.ci_low) or math.isnan(s.ci_high)):
            low = None if s.low_open else s.ci_low
            high = None if s.high_open else s.ci_high
            text = interval_text(
                low, high, s.low_open, s.high_open, anchor=s.anchor, unidentified=s.unidentified
            )
            tip += f" (95% CI {text})"
        if not (math.isnan(s.ci_low) or math.isnan(s.ci_high) or s.anchor):
            # An open end runs to the edge of the axis; an unidentified interval is dashed.
            x1 = label_w if s.low_open else x(s.ci_low)
            x2 = label_w + plot_w if s.high_open else x(s.ci_high)
            kind = "errorbar unidentified" if s.unidentified else "errorbar"
            parts.append(
                f'<g class="{kind}"><title>{_e(tip)}</title>'
                f'<line x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}"/>'
                f'<line x1="{x1:.1f}" y1="{y - 5:.1f}" x2="{x1:.1f}" y2="{y + 5:.1f}"/>'
                f'<line x1="{x2:.1f}" y1="{y - 5:.1f}" x2="{x2:.1f}" y2="{y + 5:.1f}"/></g>'
            )
        parts.append(
            f'<circle class="point" cx="{x(s.rating):.1f}" cy="{y:.1f}" r="4">'
            f"<title>{_e(tip)}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _cell(x: float | int | None, digits: int = 0) -> str:
    text = _fmt(x, digits)
    return '<td class="none">–</td>' if text == "–" else f"<td>{_e(text)}</td>"


def write_report_html(
    path: Path,
    title: str,
    standings: Sequence[Standing],
    stats: Mapping[str, BotStats],
    faults_by_reason: Mapping[str, Mapping[str, int]],
    think: Mapping[str, tuple[float, float]],
    *,
    live_elo: Mapping[str, float] | None = None,
    deal: Mapping[str, str] | None = None,
    matches: Sequence[ReportMatch] = (),
    sandbox: str = "",
    warnings: Sequence[str] = (),
    min_matches: int = 0,
) -> None:
    """A self-contained HTML report: standings table, ratings chart, a section per bot and
    the matches, each linked to its record, the latest with their tricks embedded.

    No external assets and no script: the CSS and the SVG chart are inline. ``faults_by_reason`` maps
    bot → fault reason → count; ``think`` maps bot → (p50, p99) think time in ms.
    ``deal`` holds the deal key's ``deal_key_commitment`` and, once the tournament is
    over, the ``deal_key`` itself: the report says how to check the deals with them;
    ``sandbox`` is how the bots were confined ("bubblewrap" or "none"). The
    ``warnings`` head the page; groups of bots that never met and the provisional bots
    get tables of their own.
    """
    rows = _rows(standings, stats, live_elo)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        *([f'<p class="sandbox">Bot sandbox: {_e(sandbox)}</p>'] if sandbox else []),
        *(f'<p class="warning">Warning: {_e(w)}</p>' for w in warnings),
        "<h2>Standings</h2>",
    ]
    several = len({r["group"] for r in rows}) > 1
    sections: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        section = (
            f"Provisional (fewer than {min_matches} matches; not ranked)"
            if row["provisional"]
            else f"Group {row['group'] + 1}"
            if several
            else ""
        )
        sections.setdefault(section, []).append(row)
    for section, members in sections.items():
        if section:
            out.append(f"<h3>{_e(section)}</h3>")
        out.append(
            '<table><thead><tr><th>Rank</th><th class="bot">Bot</th><th>Rating</th>'
            "<th>95% CI</th><th>Live Elo</th><th>Matches</th><th>Mean score</th>"
            "<th>Mean place</th><th>Strikes</th></tr></thead><tbody>"
        )
        for row in members:
            text = row_interval(row)
            ci = '<td class="none">–</td>' if text == "–" else f"<td>{_e(text)}</td>"
            rank = "–" if row["rank"] is None else row["rank"]
            out.append(
                f'<tr><td>{rank}</td><td class="bot">{_e(row["bot"])}</td>'
                f"{_cell(row['rating'])}{ci}{_cell(row['live_elo'])}{_cell(row['matches'])}"
                f"{_cell(row['mean_score'], 1)}{_cell(row['mean_place'], 2)}"
                f"{_cell(row['faults'])}</tr>"
            )
        out.append("</tbody></table>")
    out.append("<h2>Ratings with 95% confidence intervals</h2>")
    out.append(ratings_svg(standings))
    out.append("<h2>Bots</h2>")
    for s in standings:
        p50, p99 = think.get(s.bot, (math.nan, math.nan))
        out.append(f"<h3>{_e(s.bot)}</h3>")
        out.append(
            '<table class="bot-detail"><tbody>'
            f'<tr><th class="bot">Think p50 ms</th>{_cell(p50, 1)}</tr>'
            f'<tr><th class="bot">Think p99 ms</th>{_cell(p99, 1)}</tr>'
        )
        reasons = faults_by_reason.get(s.bot, {})
        if not reasons:
            out.append('<tr><th class="bot">Faults</th><td class="none">none</td></tr>')
        for reason, count in sorted(reasons.items(), key=lambda rc: (-rc[1], rc[0])):
            out.append(f'<tr><th class="bot">Fault: {_e(reason)}</th><td>{count}</td></tr>')
        out.append("</tbody></table>")
    if deal and deal.get("deal_key_commitment"):
        out.append("<h2>Deals</h2>")
        out.append(
            '<table class="bot-detail"><tbody>'
            f'<tr><th class="bot">Deal key commitment</th><td><code>{_e(deal["deal_key_commitment"])}</code></td></tr>'
        )
        if deal.get("deal_key"):
            out.append(
                f'<tr><th class="bot">Deal key</th><td><code>{_e(deal["deal_key"])}</code></td></tr>'
            )
        out.append("</tbody></table>")
        out.append(
            "<p>Every match seed follows from the deal key (docs/deal.md); "
            "<code>referee verify</code> re-checks every deal, record and result.</p>"
        )
    if matches:
        embedded = sum(1 for m in matches if m.viewer is not None)
        out.append("<h2>Matches</h2>")
        out.append(
            f"<p>{len(matches)} matches, newest first; the latest {embedded} unfold trick by "
            "trick. <code>referee web</code> on this folder steps through every one in a "
            "browser.</p>"
        )
        for m in matches:
            if m.viewer is not None:
                out.append(_match_html(m))
            else:
                result = ", ".join(
                    f"{m.places[s]}. {_e(m.seating[s])} {m.totals[s]:+d}"
                    for s in sorted(range(len(m.seating)), key=lambda s: m.places[s])
                )
                out.append(f'<p><a href="{_e(m.record)}">{_e(m.match_id)}</a>: {result}</p>')
    out.append("</body></html>")
    Path(path).write_text("\n".join(out) + "\n", encoding="utf-8")
