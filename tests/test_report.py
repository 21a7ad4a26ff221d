"""Report writers: JSON and CSV read back to the same values; the HTML stands alone and escapes."""

from __future__ import annotations

import array
import csv
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from referee.results.ratings import BotStats, Standing
from referee.results.report import (
    RATINGS_COLUMNS,
    RESULTS_COLUMNS,
    ResultRow,
    standings_table,
    write_ratings_csv,
    write_ratings_json,
    write_report_html,
    write_results_csv,
)
from referee.results.stats import bot_stats
from referee.results.store import StoredResult

STANDINGS = [
    Standing("<script>", 1612.345678901234, 1580.1, 1650.9, 120),
    Standing("plain", 1500.0000000000002, 1470.25, 1531.5, 120),
    Standing('quo"te & amp', 1387.6543210987654, 1350.0, 1420.125, 120),
]
STATS = {
    "<script>": BotStats("<script>", 40, 5.25, 1.7, 0, 12.5, 80.125),
    "plain": BotStats("plain", 40, -1.0, 2.0, 3, 3.0, 9.0),
    'quo"te & amp': BotStats('quo"te & amp', 40, -4.25, 2.3, 1, math.nan, math.nan),
}
LIVE = {"<script>": 1620.5, "plain": 1499.0, 'quo"te & amp': 1380.5}
FAULTS = {"plain": {"timeout": 2, "illegal_card_not_in_hand": 1}, 'quo"te & amp': {"crash": 1}}
THINK = {"<script>": (12.5, 80.125), "plain": (3.0, 9.0)}


def test_ratings_json_round_trips_the_values(tmp_path: Path) -> None:
    path = tmp_path / "ratings.json"
    write_ratings_json(path, STANDINGS, STATS, LIVE, meta={"tournament": "t1", "anchor": None})
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["version"] == 1
    assert doc["meta"] == {"tournament": "t1", "anchor": None, "warnings": []}
    rows = doc["standings"]
    assert [list(r) for r in rows] == [list(RATINGS_COLUMNS)] * 3
    for row, s in zip(rows, STANDINGS, strict=True):
        assert (row["bot"], row["rating"], row["ci_low"], row["ci_high"], row["games"]) == (
            s.bot,
            s.rating,
            s.ci_low,
            s.ci_high,
            s.games,
        )
        st = STATS[s.bot]
        assert row["live_elo"] == LIVE[s.bot]
        assert (row["matches"], row["mean_score"], row["mean_place"], row["faults"]) == (
            st.matches,
            st.mean_score,
            st.mean_place,
            st.faults,
        )
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[0]["think_p99_ms"] == 80.125
    assert rows[2]["think_p50_ms"] is None  # NaN is written as null


def test_ratings_csv_round_trips_the_values(tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    write_ratings_csv(path, STANDINGS, STATS, LIVE)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == RATINGS_COLUMNS
        rows = list(reader)
    for row, s in zip(rows, STANDINGS, strict=True):
        assert row["bot"] == s.bot
        assert float(row["rating"]) == s.rating  # written in full
        assert float(row["ci_low"]) == s.ci_low and float(row["ci_high"]) == s.ci_high
        assert int(row["games"]) == s.games
        assert float(row["live_elo"]) == LIVE[s.bot]
        assert float(row["mean_score"]) == STATS[s.bot].mean_score
        assert int(row["faults"]) == STATS[s.bot].faults
    assert rows[2]["think_p50_ms"] == ""


def test_results_csv_round_trips_the_values(tmp_path: Path) -> None:
    results = [
        ResultRow("t1", 0, "m-0", seat, bot, total, place, forfeited, faults)
        for seat, (bot, total, place, forfeited, faults) in enumerate(
            [("a,b", 12, 1, False, 0), ('q"x', -3, 2, False, 1), ("c\nd", -20, 3, True, 3)]
        )
    ]
    path = tmp_path / "results.csv"
    write_results_csv(path, results)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == RESULTS_COLUMNS
        rows = list(reader)
    back = [
        ResultRow(
            r["tournament"],
            int(r["match_index"]),
            r["match_id"],
            int(r["seat"]),
            r["bot"],
            int(r["total"]),
            int(r["place"]),
            {"true": True, "false": False}[r["forfeited"]],
            int(r["faults"]),
        )
        for r in rows
    ]
    assert back == results


def write_html(tmp_path: Path) -> str:
    path = tmp_path / "report.html"
    write_report_html(path, "Cup <1> & co", STANDINGS, STATS, FAULTS, THINK, live_elo=LIVE)
    return path.read_text(encoding="utf-8")


def test_html_has_no_external_references(tmp_path: Path) -> None:
    text = write_html(tmp_path)
    assert "http" not in text
    assert "<link" not in text
    assert "@import" not in text and "url(" not in text
    for src in re.findall(r"""src\s*=\s*["']?([^"'\s>]*)""", text):
        assert src.startswith("data:")


def test_html_escapes_bot_names_and_title(tmp_path: Path) -> None:
    text = write_html(tmp_path)
    assert "<script" not in text.lower()
    assert "&lt;script&gt;" in text
    assert "quo&quot;te &amp; amp" in text
    assert "Cup &lt;1&gt; &amp; co" in text


def test_html_has_one_error_bar_per_bot(tmp_path: Path) -> None:
    text = write_html(tmp_path)
    assert text.count("<svg") == 1
    assert text.count('<g class="errorbar">') == len(STANDINGS)
    assert text.count('<circle class="point"') == len(STANDINGS)


def test_html_shows_faults_by_reason_and_think_times(tmp_path: Path) -> None:
    text = write_html(tmp_path)
    assert "illegal_card_not_in_hand" in text and "timeout" in text and "crash" in text
    assert "80.1" in text  # <script>'s think p99
    assert text.count('<table class="bot-detail">') == len(STANDINGS)  # one table per bot
    assert text.count('<td class="none">none</td>') == 1  # only <script> has no faults


def test_standings_table_lists_every_bot_in_rank_order() -> None:
    table = standings_table(STANDINGS, STATS, LIVE)
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["rank", "bot", "rating"]
    body = lines[2:]
    assert len(body) == 3
    assert body[0].split()[:2] == ["1", "<script>"]
    assert "1612" in body[0] and "1580–1651" in body[0] and "1620" in body[0]
    assert "12.5/80.1" in body[0]
    assert "–/–" in body[2]  # no think times
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule line up


def test_the_page_and_the_terminal_both_count_strikes(tmp_path: Path) -> None:
    """The standings' last column is the strikes a bot's faults cost (a late answer to a
    request already struck costs none), and says so on the page as on the terminal; the
    per-bot table below counts its faults by reason, which may be more."""
    assert "strikes" in standings_table(STANDINGS, STATS, LIVE).splitlines()[0].split()
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", write_html(tmp_path))
    assert head is not None
    assert re.findall(r"<th[^>]*>([^<]*)</th>", head.group(1))[-1] == "Strikes"


def test_standings_table_escapes_control_characters() -> None:
    evil = Standing("x\x1b[31mred\nnext", 1500.0, math.nan, math.nan, 0)
    table = standings_table([evil], {}, {})
    assert "\x1b" not in table and "\n" not in table.splitlines()[-1]
    assert len(table.splitlines()) == 3
    assert r"x\x1b[31mred\nnext" in table


def test_equal_ratings_share_a_rank(tmp_path: Path) -> None:
    tied = [Standing("a", 1500.0, 1, 2, 4), Standing("b", 1500.0, 1, 2, 4)]
    tied.append(Standing("c", 1400.0, 1, 2, 4))
    path = tmp_path / "r.json"
    write_ratings_json(path, tied)
    ranks = [r["rank"] for r in json.loads(path.read_text())["standings"]]
    assert ranks == [1, 1, 3]


@pytest.mark.parametrize("writer", [write_ratings_json, write_ratings_csv])
def test_writers_accept_missing_stats(tmp_path: Path, writer: Callable[..., None]) -> None:
    path = tmp_path / "out"
    writer(path, STANDINGS)
    assert path.read_text(encoding="utf-8")


def test_html_chart_draws_every_bar_inside_its_axis(tmp_path: Path) -> None:
    text = write_html(tmp_path)
    grid = [float(x) for x in re.findall(r'<line class="grid" x1="([\d.]+)"', text)]
    bars = re.findall(r'<g class="errorbar">(.*?)</g>', text)
    xs = [float(x) for bar in bars for x in re.findall(r'x[12]="([\d.]+)"', bar)]
    xs += [float(x) for x in re.findall(r'<circle class="point" cx="([\d.]+)"', text)]
    assert grid and xs
    assert min(grid) <= min(xs) and max(xs) <= max(grid)


def test_results_csv_takes_mappings_too(tmp_path: Path) -> None:
    row = ResultRow("t1", 3, "m-3", 1, "b", -2, 2, True, 4)
    as_dict = {c: getattr(row, c) for c in RESULTS_COLUMNS}
    write_results_csv(tmp_path / "a.csv", [row])
    write_results_csv(tmp_path / "b.csv", [as_dict])
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()


# --- Standings that say what the data cannot support --------------------------------------

UNSURE = [
    Standing("unbeaten", 1900.0, 1850.0, math.inf, 40, matches=20, high_open=True),
    Standing("steady", 1500.0, 1450.0, 1550.0, 40, matches=20),
    Standing("winless", 1100.0, -math.inf, 1160.0, 40, matches=20, low_open=True),
    Standing("far", 1520.0, 1400.0, 1640.0, 8, matches=4, group=1),
    Standing("away", 1480.0, 1360.0, 1600.0, 8, matches=4, group=1),
    Standing("newcomer", 2100.0, 1950.0, math.inf, 3, matches=1, provisional=True, high_open=True),
]
WARNINGS = ("the bots form 2 groups that never met", "1 bot(s) played fewer than 5 matches")


def test_open_intervals_provisional_bots_and_groups_in_the_json(tmp_path: Path) -> None:
    path = tmp_path / "ratings.json"
    write_ratings_json(path, UNSURE, warnings=WARNINGS)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["meta"]["warnings"] == list(WARNINGS)
    rows = {r["bot"]: r for r in doc["standings"]}
    assert (rows["unbeaten"]["ci_low"], rows["unbeaten"]["ci_high"]) == (1850.0, None)
    assert rows["unbeaten"]["ci_high_open"] and not rows["unbeaten"]["ci_low_open"]
    assert (rows["winless"]["ci_low"], rows["winless"]["ci_low_open"]) == (None, True)
    # Ranks count within a group; a provisional bot has none.
    assert [r["rank"] for r in doc["standings"]] == [1, 2, 3, 1, 2, None]
    assert [r["group"] for r in doc["standings"]] == [0, 0, 0, 1, 1, 0]
    assert rows["newcomer"]["provisional"] and not rows["steady"]["provisional"]


def test_open_intervals_in_the_csv(tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    write_ratings_csv(path, UNSURE)
    with open(path, encoding="utf-8", newline="") as f:
        rows = {r["bot"]: r for r in csv.DictReader(f)}
    assert (rows["unbeaten"]["ci_high"], rows["unbeaten"]["ci_high_open"]) == ("", "true")
    assert (rows["newcomer"]["rank"], rows["newcomer"]["provisional"]) == ("", "true")


def test_the_table_shows_open_ends_groups_provisional_bots_and_warnings() -> None:
    text = standings_table(UNSURE, {}, {}, WARNINGS, min_matches=5)
    lines = text.splitlines()
    assert lines[:2] == [f"warning: {w}" for w in WARNINGS]
    assert "> 1850" in next(x for x in lines if "unbeaten" in x)
    assert "< 1160" in next(x for x in lines if "winless" in x)
    assert "1450–1550" in next(x for x in lines if "steady" in x)
    titles = [x for x in lines if x.startswith("-- ")]
    assert titles == [
        "-- group 1",
        "-- group 2",
        "-- provisional (fewer than 5 matches; not ranked)",
    ]
    assert lines.index(titles[2]) < next(i for i, x in enumerate(lines) if "newcomer" in x)


def test_the_page_shows_open_ends_groups_provisional_bots_and_warnings(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    write_report_html(path, "t", UNSURE, {}, {}, {}, warnings=WARNINGS, min_matches=5)
    page = path.read_text(encoding="utf-8")
    for w in WARNINGS:
        assert f'<p class="warning">Warning: {w}</p>' in page
    assert "<td>&gt; 1850</td>" in page and "<td>&lt; 1160</td>" in page
    assert "<h3>Group 2</h3>" in page
    assert "<h3>Provisional (fewer than 5 matches; not ranked)</h3>" in page
    # An open end's bar runs to the edge of the chart.
    assert "95% CI &gt; 1850" in page


FLAGGED = [
    Standing("ref", 1500.0, 1500.0, 1500.0, 40, matches=20, anchor=True),
    Standing("tied", 1500.0, 1500.0, 1500.0, 40, matches=20, unidentified=True),
    Standing("bridged", 1530.0, 1400.0, 1700.0, 40, matches=20, unidentified=True, cut_share=0.37),
    Standing("measured", 1470.0, 1420.0, 1520.0, 40, matches=20),
]


def test_anchor_and_unidentified_intervals_are_flagged_in_every_export(tmp_path: Path) -> None:
    write_ratings_json(tmp_path / "r.json", FLAGGED)
    rows = {r["bot"]: r for r in json.loads((tmp_path / "r.json").read_text())["standings"]}
    assert rows["ref"]["anchor"] and not rows["ref"]["unidentified"]
    assert rows["tied"]["unidentified"] and rows["bridged"]["cut_share"] == 0.37
    assert not rows["measured"]["anchor"] and not rows["measured"]["unidentified"]
    write_ratings_csv(tmp_path / "r.csv", FLAGGED)
    with open(tmp_path / "r.csv", encoding="utf-8", newline="") as f:
        cells = {r["bot"]: r for r in csv.DictReader(f)}
    assert (cells["ref"]["anchor"], cells["tied"]["unidentified"]) == ("true", "true")
    assert cells["measured"]["unidentified"] == "false"
    lines = standings_table(FLAGGED, {}, {}).splitlines()
    assert "anchor" in next(x for x in lines if x.split()[1:2] == ["ref"])
    # The words the web pages use, not the flag's name.
    assert "not measurable" in next(x for x in lines if "tied" in x)
    assert "not measurable" in next(x for x in lines if "bridged" in x)
    assert "unidentified" not in "\n".join(lines)
    assert "1420–1520" in next(x for x in lines if "measured" in x)
    write_report_html(tmp_path / "r.html", "t", FLAGGED, {}, {}, {})
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<td>anchor</td>" in page and page.count("<td>not measurable</td>") == 2
    # The anchor has no bar; an unidentified one is drawn dashed.
    assert page.count('class="errorbar unidentified"') == 2
    assert page.count('class="errorbar"') == 1


def test_a_bot_with_no_think_time_shows_none_not_zero() -> None:
    # A seat that made no decision at all (it never started) has no think time: "–", not 0.
    rows = [
        StoredResult(0, "m-0", 0, "absent", -30, 2, True, 0, 1, array.array("I")),
        StoredResult(0, "m-0", 1, "plain", 30, 1, False, 1, 0, array.array("I", [2000, 4000])),
    ]
    stats = bot_stats(rows)
    assert math.isnan(stats["absent"].think_p50_ms) and math.isnan(stats["absent"].think_p99_ms)
    standings = [
        Standing("plain", 1510.0, 1400.0, 1600.0, 1),
        Standing("absent", 1490.0, 1400.0, 1600.0, 1),
    ]
    table = standings_table(standings, stats, {})
    assert table.splitlines()[0].split()[-4:] == ["strikes", "think", "p50/p99", "ms"]
    absent = next(line for line in table.splitlines() if " absent " in line)
    assert absent.rstrip().endswith("–/–")
