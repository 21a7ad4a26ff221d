"""The pages' main content as HTML, written by the server into the page it sends.

A reader without script (or a plain HTTP client) gets the standings table, the matches
list, a match's header, a bot's tables and the head-to-head matrix from the first
response; the scripts then redraw the same content with interaction and live updates on
top. Every text from the data goes through :func:`html.escape` (bot names and
descriptions are chosen by others), and nothing here is inline script or style: the
pages keep the strict Content-Security-Policy of :mod:`referee.web.server`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from html import escape
from typing import Any
from urllib.parse import quote

#: Where the static page shells leave the main content to the script.
PLACEHOLDER = b'<main id="main"><p class="muted">Loading\xe2\x80\xa6</p></main>'
NAV = (("/", "Standings"), ("/matches", "Matches"), ("/head-to-head", "Head to head"))
#: A comparison's pages: its verdict first (``/`` leads there).
COMPARE_NAV = (("/compare", "Comparison"), ("/matches", "Matches"))


def e(value: Any) -> str:
    """Text from the data, escaped for an element or an attribute."""
    return escape(str(value), quote=True)


def _fixed(x: float, digits: int) -> str:
    """``x`` with ``digits`` decimals, rounded as the pages' JavaScript rounds it
    (``toFixed``: a tie of the double's exact value goes away from zero, 12.5 is "13"),
    so that a page drawn here and redrawn live says the same. Python's own formatting
    takes a tie to the even digit ("12")."""
    if not math.isfinite(x):
        return f"{x:.{digits}f}"
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def fmt(x: Any, digits: int = 0) -> str:
    """A number as the pages write it ("–" when unknown)."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return _fixed(float(x), digits)


def signed(x: Any, digits: int = 0) -> str:
    """A score with its sign: ``+2``, ``0``, ``-3``."""
    if x is None:
        return "–"
    text = _fixed(float(x), digits)
    return f"+{text}" if float(x) > 0 else text


#: In place of an interval the bootstrap cannot measure (``unidentified``), and of the
#: anchor's, which is the scale's definition: words a reader understands, not a flag.
UNMEASURED = "not measurable"
ANCHOR = "none: the anchor"
#: What the standings' two numbers are, written beside them.
TERMS = (
    ("Rating", "fitted to every finished match at once (Bradley–Terry on the Elo scale), "
     "with its 95% interval; it ranks the bots."),
    ("Live Elo", "updated match by match in the order they finished: it follows recent "
     "form and ranks nothing."),
)  # fmt: skip
UNMEASURED_NOTE = (
    f"“{UNMEASURED}”: the bootstrap cannot measure this rating's spread (every resample "
    "gave the same order, or a match or two are all that link the bot to the others), so "
    "no interval is claimed."
)
ANCHOR_NOTE = "The anchor's rating is the scale's fixed point (1500), not an estimate."


def interval(r: Mapping[str, Any]) -> str:
    """A 95% interval; an end the data cannot bound is open ("> 1850")."""
    if r.get("anchor"):
        return ANCHOR
    if r.get("unidentified"):
        return UNMEASURED
    low, high = r.get("ci_low"), r.get("ci_high")
    if low is not None and high is not None:
        return f"{fmt(low)}–{fmt(high)}"
    if low is not None and r.get("ci_high_open"):
        return f"> {fmt(low)}"
    if high is not None and r.get("ci_low_open"):
        return f"< {fmt(high)}"
    return "open" if r.get("ci_low_open") or r.get("ci_high_open") else "–"


def bot_link(name: str) -> str:
    return f'<a class="bot" href="/bot?name={quote(name, safe="")}">{e(name)}</a>'


def match_link(match_id: str) -> str:
    return f'<a href="/match?id={quote(match_id, safe="")}">{e(match_id)}</a>'


def nav_links(path: str, items: Sequence[tuple[str, str]] = NAV) -> str:
    """The navigation bar's links, the current page's marked."""
    return "".join(
        f'<a href="{href}"{" aria-current=page" if href == path else ""}>{text}</a>'
        for href, text in items
    )


def header(path: str, where: str) -> str:
    """The navigation bar (the scripts keep it), after a skip link: on the match page to
    its first step button (the script moves the focus there; without script, to the
    content), elsewhere to the content."""
    links = nav_links(path)
    skip = "the step buttons" if path == "/match" else "the content"
    return (
        f'<header><a class="skip" href="#main" data-skip=".controls button">Skip to {skip}</a>'
        '<span class="brand">Sticheln referee</span>'
        f'<nav>{links}</nav><span class="where">{e(where)}</span></header>'
    )


def page(shell: bytes, path: str, where: str, main: str, attrs: Mapping[str, str] = {}) -> bytes:
    """A static page shell with the header and ``main`` written in."""
    extra = "".join(f' data-{k}="{e(v)}"' for k, v in attrs.items())
    body = f'{header(path, where)}<main id="main"{extra}>{main}</main>'.encode()
    return shell.replace(PLACEHOLDER, body, 1)


def progress(p: Mapping[str, Any]) -> str:
    """Finished and planned matches; running, rate and ETA only while something is left."""
    planned, done = p.get("planned"), p.get("finished", 0)
    if planned is None:
        parts = [f'<span id="progress-done">{done} matches finished</span>']
    else:
        parts = [
            f'<span id="progress-done">{done} / {planned} matches</span>',
            f'<progress max="{planned}" value="{done}"></progress>' if planned else "",
        ]
    over = planned is not None and done >= planned and not p.get("running")
    if over:
        parts.append('<span id="progress-over">all finished</span>')
    else:
        rate = p.get("matches_per_s")
        running = p.get("running", 0)
        parts.append(
            f'<a id="progress-running" href="/matches#running-now">running {running}</a>'
            if running
            else "<span>running 0</span>"
        )
        parts.append(f"<span>{'–' if rate is None else fmt(rate * 60, 1)} matches/min</span>")
        if planned is not None:
            parts.append(f"<span>ETA {duration(p.get('eta_s'))}</span>")
    return f'<div class="progress">{"".join(parts)}</div>'


def duration(seconds: Any) -> str:
    if seconds is None:
        return "–"
    s = round(float(seconds))
    h, m, r = s // 3600, (s % 3600) // 60, s % 60
    return f"{h}h{m:02d}m" if h else f"{m}m{r:02d}s"


def _table(
    table_id: str,
    heads: Sequence[str],
    rows: Iterable[str],
    text_cols: set[int],
    more_cols: frozenset[int] = frozenset(),
) -> str:
    def cls(i: int) -> str:
        names = " ".join(n for n, on in (("text", i in text_cols), ("more", i in more_cols)) if on)
        return f' class="{names}"' if names else ""

    th = "".join(f"<th{cls(i)}>{e(h)}</th>" for i, h in enumerate(heads))
    return (
        f'<div class="table-wrap"><table id="{table_id}"><thead><tr>{th}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def more_toggle(toggle_id: str, hidden: int) -> str:
    """On a phone the columns marked ``more`` wait behind this switch (a checkbox, so that
    it works without script); on a desk it is not shown and every column is."""
    return (
        f'<input type="checkbox" class="more-toggle" id="{toggle_id}">'
        f'<label class="more-label" for="{toggle_id}">Show {hidden} more columns</label>'
    )


def terms() -> str:
    """What Rating and Live Elo are, where the two stand."""
    items = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in TERMS)
    return f'<dl class="terms" id="terms">{items}</dl>'


def standings(doc: Mapping[str, Any], info_progress: Mapping[str, Any], bots: Sequence[str]) -> str:
    """The standings page: progress, the table (provisional bots marked, unranked), and
    the bots with no rated match yet."""
    rows = doc.get("standings", [])
    out = ["<h1>Standings</h1>", progress(info_progress)]
    out.append(
        f'<p class="muted" id="standings-meta" data-matches="{e(doc.get("matches", 0))}">'
        f"From {e(doc.get('matches', 0))} finished matches. "
        "Provisional bots (too few matches) are listed after the others, unranked.</p>"
    )
    out.append(terms())
    if rows:
        body = []
        for r in rows:
            provisional = (
                ' <span class="pill" title="too few matches to be ranked">provisional</span>'
            )
            body.append(
                f'<tr data-bot="{e(r.get("bot"))}"><td>{"–" if r.get("rank") is None else e(r["rank"])}</td>'
                f'<td class="text">{bot_link(str(r.get("bot")))}{provisional if r.get("provisional") else ""}</td>'
                f'<td>{fmt(r.get("rating"))}</td><td class="more">{e(interval(r))}</td>'
                f'<td class="live-elo">{fmt(r.get("live_elo"))}</td>'
                f'<td class="matches more">{fmt(r.get("matches"))}</td>'
                f'<td class="more">{signed(r.get("mean_score"), 1)}</td>'
                f'<td class="more">{fmt(r.get("mean_place"), 2)}</td>'
                f'<td class="more">{fmt(r.get("faults"))}</td></tr>'
            )
        heads = ["Rank", "Bot", "Rating", "95% interval", "Live Elo", "Matches", "Mean score",
                 "Mean place", "Strikes"]  # fmt: skip
        more = frozenset({3, 5, 6, 7, 8})
        out.append(more_toggle("all-columns", len(more)))
        out.append(_table("standings", heads, body, {1}, more))
        notes = [
            note
            for note, flag in ((UNMEASURED_NOTE, "unidentified"), (ANCHOR_NOTE, "anchor"))
            if any(r.get(flag) for r in rows)
        ]
        if notes:
            out.append(f'<p class="muted" id="interval-note">{e(" ".join(notes))}</p>')
    else:
        out.append('<p class="muted" id="no-standings">No finished match yet.</p>')
    unrated = sorted(set(bots) - {str(r.get("bot")) for r in rows})
    if unrated:
        out.append(
            '<h2>No rated match yet</h2><p id="unrated">'
            + ", ".join(bot_link(b) for b in unrated)
            + "</p>"
        )
    return "".join(out)


def _bot_seat_cells(bot: str, m: Mapping[str, Any]) -> str:
    """A bot page's match row after its first cell: the seating, and the bot's place and
    score (its first seat's, where it held none by name)."""
    seat = m["seating"].index(bot) if bot in m["seating"] else 0
    return (
        f'<td class="text">{_seats(m["seating"], None, None)}</td>'
        f"<td>{m['places'][seat]}</td><td>{signed(m['totals'][seat])}</td>"
    )


def _seats(
    seating: Sequence[str], places: Sequence[int] | None, totals: Sequence[int] | None
) -> str:
    """The seats in order, each kept on one line; with the result, each seat's place and
    score, and the winners (place 1) marked."""
    parts = []
    for s, bot in enumerate(seating):
        comma = "," if s < len(seating) - 1 else ""
        if places is None or totals is None:
            parts.append(f'<span class="seat-entry">{bot_link(bot)}{comma}</span>')
            continue
        won = places[s] == 1
        mark = '<span class="win-mark" aria-hidden="true">★</span> ' if won else ""
        parts.append(
            f'<span class="seat-entry{" winner" if won else ""}"'
            f"{' title=winner' if won else ''}>{mark}{bot_link(bot)}"
            f' <span class="result">({places[s]}. {signed(totals[s])})</span>'
            f"{'<span class=sr-only> (winner)</span>' if won else ''}{comma}</span>"
        )
    return " ".join(parts)


def matches(doc: Mapping[str, Any], before: str | None) -> str:
    """The matches page: progress, the running matches, the finished ones."""
    out = ["<h1>Matches</h1>", progress(doc["progress"]), '<h2 id="running-now">Running now</h2>']
    if doc["running"]:
        rows = (
            f'<tr data-match="{e(m["match_id"])}"><td class="text id">{match_link(m["match_id"])} '
            f'<span class="pill live">live</span></td><td class="text">{_seats(m["seating"], None, None)}</td></tr>'
            for m in doc["running"]
        )
        out.append(_table("running", ["Match", "Seating"], rows, {0, 1}))
    else:
        out.append('<p class="muted">No match is running.</p>')
    out.append("<h2>Finished, newest first</h2>")
    if doc["finished"]:
        rows = (
            f'<tr data-match="{e(m["match_id"])}"><td class="text id">{match_link(m["match_id"])}</td>'
            f'<td class="text">{_seats(m["seating"], m["places"], m["totals"])}</td>'
            f"<td>{sum(m['faults'])}</td></tr>"
            for m in doc["finished"]
        )
        out.append(_table("finished", ["Match", "Seating (place, score)", "Strikes"], rows, {0, 1}))
        out.append('<p class="muted" id="winner-key">★ the winner (place 1)</p>')
    else:
        out.append(
            f'<p class="muted">{"No older match." if before else "No finished match yet."}</p>'
        )
    links = []
    if before:
        links.append('<a href="/matches">← newest</a>')
    if doc.get("next_before"):
        links.append(f'<a id="older" href="/matches?before={e(doc["next_before"])}">older →</a>')
    out.append(f'<p id="pages">{" · ".join(links)}</p>')
    out.append(finals(doc.get("finals") or []))
    return "".join(out)


#: Why a final's matches wait: said on the pages that list matches.
FINAL_WAIT = (
    "its matches are listed once it has ended (the seatings of a duplicate deal share their hands)"
)
#: What a final's matches are, beside the ladder's.
FINAL_UNRATED = (
    "unrated: they change no rating on the ladder; the final's own standings are in the "
    "Seasons section of the standings page"
)


def final_state(f: Mapping[str, Any]) -> str:
    """A final's state in a line: ended, or being played and why its matches wait."""
    if f["status"] == "playing":
        return (
            f"The final of season {f['season']} is being played ({f['finished']} of "
            f"{f['planned']} matches): {FINAL_WAIT}."
        )
    if f["status"] == "cancelled":
        return (
            f"The final of season {f['season']}, cancelled by the organiser after "
            f"{f['finished']} of {f['planned']} matches: those matches, {FINAL_UNRATED}."
        )
    return f"The final of season {f['season']}: {f['finished']} matches, {FINAL_UNRATED}."


def finals(items: Sequence[Mapping[str, Any]]) -> str:
    """A league's seasons' finals under its matches: each one's state, and the matches of
    each that has ended, every one marked as its season's final."""
    if not items:
        return ""
    out = ['<h2 id="finals">Finals of the seasons</h2>']
    for f in items:
        n = int(f["season"])
        out.append(
            f'<section class="final" data-season="{n}" data-status="{e(f["status"])}">'
            f'<h3>Final of season {n}</h3><p class="muted">{e(final_state(f))}</p>'
        )
        if f["matches"]:
            rows = (
                f'<tr data-match="{e(m["match_id"])}"><td class="text id">'
                f'{match_link(m["match_id"])} <span class="pill final">final of season {n}'
                "</span></td>"
                f'<td class="text">{_seats(m["seating"], m["places"], m["totals"])}</td>'
                f"<td>{sum(m['faults'])}</td></tr>"
                for m in f["matches"]
            )
            out.append(
                _table(f"final-{n}", ["Match", "Seating (place, score)", "Strikes"], rows, {0, 1})
            )
        out.append("</section>")
    return "".join(out)


def match_head(
    match_id: str,
    seating: Sequence[str],
    running: bool,
    end: Mapping[str, Any] | None,
    challenge: str = "",
) -> str:
    """A match's header: its id, seats and (finished) result; the table is drawn by script.
    ``challenge``: the entry that asked for this match on demand (unrated)."""
    live = ' <span class="pill live" id="live-badge">live</span>' if running else ""
    seats = " · ".join(f"seat {s}: {bot_link(b)}" for s, b in enumerate(seating))
    out = [f"<h1>Match {e(match_id)}{live}</h1>"]
    if challenge:
        out.append(
            f'<p class="challenge" id="challenge">Challenge asked for by {bot_link(challenge)}: '
            "unrated, not in the standings</p>"
        )
    out.append(f'<p class="seating">{seats}</p>')
    if end and end.get("places"):
        order = sorted(range(len(seating)), key=lambda s: end["places"][s])
        out.append(
            '<p id="result">Result: '
            + ", ".join(
                f"{end['places'][s]}. {bot_link(seating[s])} {signed(end['totals'][s])}"
                for s in order
            )
            + "</p>"
        )
    out.append(
        '<p class="muted noscript-note">The card table needs JavaScript; '
        f'<a href="/api/matches/{quote(match_id, safe="")}/record.jsonl">the record</a> has every card.</p>'
        if not running
        else '<p class="muted noscript-note">The live table needs JavaScript.</p>'
    )
    return "".join(out)


def bot(doc: Mapping[str, Any]) -> str:
    """A bot's page: its entry and figures, faults and latest matches (charts by script)."""
    entry = doc.get("entry") or {}
    s = doc.get("standing")
    pairs = [
        ("Description", e(entry["description"]) if entry.get("description") else None),
        ("Rating", f"{fmt(s.get('rating'))} (95% interval {e(interval(s))}), "
         + ("provisional, not ranked" if s.get("rank") is None else f"rank {s['rank']}")
         if s else "not rated yet"),
        ("Matches", str(doc.get("matches", 0))),
        ("Mean score", signed(doc.get("mean_score"), 1)),
        ("Mean place", fmt(doc.get("mean_place"), 2)),
    ]  # fmt: skip
    rows = "".join(
        f'<tr><th class="text">{k}</th><td class="text">{v}</td></tr>' for k, v in pairs if v
    )
    out = [
        f'<h1 id="bot-name">{e(doc["bot"])}</h1>',
        f'<table class="entry"><tbody>{rows}</tbody></table>',
    ]
    if entry.get("hosted"):
        out.append(f'<p id="bot-status">hosted: {e(entry.get("status", ""))}</p>')
    subs = doc.get("submissions") or []
    if subs:
        heads = ["#", "Status", "SHA-256", "Refusal"]
        sub_rows = [
            "<tr>"
            + "".join(
                f'<td class="text" data-label="{h}">{v}</td>'
                for h, v in zip(
                    heads,
                    (u["number"], e(u["status"]), e(u["sha256"][:12]), e(u["refusal"])),
                    strict=True,
                )
            )
            + "</tr>"
            for u in subs
        ]
        th = "".join(f'<th class="text">{h}</th>' for h in heads)
        out.append("<h2>Submissions</h2>")
        # Rows become labelled blocks on a phone (app.css, table.stacked), as the script's.
        out.append(
            f'<table id="submissions" class="stacked"><thead><tr>{th}</tr></thead>'
            f"<tbody>{''.join(sub_rows)}</tbody></table>"
        )
    out.append("<h2>Faults by reason</h2>")
    faults = doc.get("faults") or {}
    if faults:
        body = "".join(
            f'<tr><th class="text">{e(r)}</th><td>{n}</td></tr>' for r, n in faults.items()
        )
        out.append(f'<table id="faults"><tbody>{body}</tbody></table>')
    else:
        out.append('<p class="muted">No fault.</p>')
    out.append(fairplay(doc.get("fairplay")))
    out.append("<h2>Latest matches</h2>")
    recent = doc.get("recent_matches") or []
    if recent:
        body_rows = []
        for m in recent:
            body_rows.append(
                f'<tr><td class="text id">{match_link(m["match_id"])}</td>'
                f"{_bot_seat_cells(doc['bot'], m)}</tr>"
            )
        out.append(_table("recent", ["Match", "Seating", "Place", "Score"], body_rows, {0, 1}))
    else:
        out.append('<p class="muted">None yet.</p>')
    finals_played = doc.get("finals") or []
    if finals_played:
        out.append(
            '<h2 id="finals">Its matches in the seasons\' finals</h2>'
            f'<p class="muted">{e(FINAL_UNRATED[0].upper() + FINAL_UNRATED[1:])}.</p>'
        )
        body_rows = []
        for m in finals_played:
            body_rows.append(
                f'<tr data-match="{e(m["match_id"])}" data-season="{int(m["season"])}">'
                f'<td class="text id">{match_link(m["match_id"])} <span class="pill final">'
                f"final of season {int(m['season'])}</span></td>"
                f"{_bot_seat_cells(doc['bot'], m)}</tr>"
            )
        out.append(
            _table("final-matches", ["Match", "Seating", "Place", "Score"], body_rows, {0, 1})
        )
    return "".join(out)


def fairplay(f: Mapping[str, Any] | None) -> str:
    """A bot page's fair-play section (docs/fairplay.md), as the script draws it."""
    out = ['<h2 id="fairplay">Fair play</h2>']
    if not f:
        out.append('<p class="muted" id="fairplay-figure">No fair-play figures here yet.</p>')
        return "".join(out)
    low, high = (f.get("interval") or [None, None])[:2]
    span = "" if low is None else f" (95% interval {signed(low, 2)} to {signed(high, 2)})"
    verdict = "Flagged: a question for the organiser. " if f.get("flagged") else "Not flagged. "
    out.append(
        f'<p id="fairplay-figure"><strong>{verdict}</strong>Its choices fit the real deal by '
        f"{signed(f.get('statistic'), 2)} points per decision more than deals its seat could "
        f"not tell from it{span}, over {f.get('decisions', 0)} decisions; p-value "
        f"{_p_value(f.get('p_value'))}. A flag is not a verdict.</p>"
    )
    shown = (f.get("weighing_most") or []) if f.get("flagged") else []
    rows = []
    for d in shown:
        where = (
            f"round {d['round']}, pain card"
            if d.get("kind") == "pain"
            else f"round {d['round']}, trick {d['trick']}"
        )
        href = f"/match?id={quote(str(d['match_id']), safe='')}#{e(d['moment'])}"
        rows.append(
            f'<tr><td class="text"><a href="{href}">{e(where)}</a></td>'
            f'<td class="text id">{match_link(d["match_id"])}</td>'
            f"<td>{signed(d.get('excess'), 2)}</td><td>{fmt(d.get('rank'), 2)}</td></tr>"
        )
    if rows:
        heads = ["Decision", "Match", "Fits the real deal by", "Rank among imagined deals"]
        out.append(_table("fairplay-decisions", heads, rows, {0, 1}))
    return "".join(out)


def _p_value(p: Any) -> str:
    """A p-value as the bot page writes it: three decimals, or "below 0.001"."""
    if p is None:
        return "–"
    return "below 0.001" if p < 0.001 else fmt(p, 3)


def head_to_head(doc: Mapping[str, Any]) -> str:
    """The head-to-head matrix (the script adds the colours), and on a phone each bot's
    row as a list, the matrix behind a switch."""
    bots = doc.get("bots") or []
    out = ["<h1>Head to head</h1>"]
    if not bots:
        out.append('<p class="muted">No finished match yet.</p>')
        return "".join(out)
    out.append(
        '<p class="muted">Each cell: how often the row bot placed better than the column bot '
        "when they sat at the same table (a shared place counts half), its mean score "
        "difference, and the matches they shared.</p>"
    )
    head = '<th class="text">row against column</th>' + "".join(
        f"<th>{bot_link(b)}</th>" for b in bots
    )
    rows, lists = [], []
    for i, a in enumerate(bots):
        cells, items = [], []
        for j, b in enumerate(bots):
            c = doc["cells"][i][j]
            if i == j:
                cells.append('<td class="self"></td>')
            elif not c:
                cells.append('<td class="none">–</td>')
            else:
                share = fmt(c["better_share"] * 100)
                diff = f"{signed(c['score_diff'], 1)} pts · {c['matches']}"
                cells.append(
                    f'<td data-share="{e(c["better_share"])}"><span class="share">{share}%</span>'
                    f'<span class="diff">{diff}</span></td>'
                )
                items.append(
                    f"<li>against {bot_link(b)}: "
                    f'<b class="share" data-share="{e(c["better_share"])}">{share}%</b> better places, '
                    f"{signed(c['score_diff'], 1)} points, {c['matches']} matches</li>"
                )
        rows.append(f'<tr><th class="text">{bot_link(a)}</th>{"".join(cells)}</tr>')
        lists.append(
            f'<details><summary>{e(a)} <span class="muted">against {len(items)} bots</span>'
            f"</summary><ul>{''.join(items) or '<li>met no other bot</li>'}</ul></details>"
        )
    out.append(f'<div class="h2h-list" id="h2h-list">{"".join(lists)}</div>')
    out.append(
        '<input type="checkbox" class="more-toggle" id="whole-matrix">'
        '<label class="more-label" for="whole-matrix">Show the whole table '
        "(it scrolls sideways)</label>"
        f'<div class="table-wrap matrix-wrap"><table class="matrix" id="matrix"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    return "".join(out)
