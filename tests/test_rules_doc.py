"""docs/rules.md: its tables and worked examples are what the engine does.

Every table the page calls checked is read here and replayed on the rules engine: the
decks per preset, the trick examples, the short round (played move by move through
``Round.apply``), the scoring piles and the places.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import cards

from referee.rules import (
    PRESETS,
    SUIT_NAMES,
    AllZeroTrick,
    MatchTies,
    Round,
    TrumpRule,
    card_str,
    deck_for,
    preset,
    ranking,
    score_cards,
    trick_winner,
)

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")


def section(heading: str) -> str:
    """The text under ``heading`` (a whole heading line) up to the next heading."""
    start = DOC.index(f"\n{heading}\n") + len(heading) + 2
    following = re.search(r"^#{2,3} ", DOC[start:], re.M)
    return DOC[start : start + following.start()] if following else DOC[start:]


def rows(text: str, table: int = 0) -> list[list[str]]:
    """The body rows of the ``table``-th table in ``text``, cells stripped of backticks."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]
            if current is None:
                current = []
                tables.append(current)
            current.append(cells)
        else:
            current = None
    body = tables[table][2:]  # header and the --- line
    assert body, f"table {table} is empty"
    return body


def number(text: str) -> int:
    """An integer as the page writes it (with a real minus sign)."""
    return int(text.replace("−", "-"))


def test_the_page_lists_every_preset_and_player_count_with_the_engines_deck() -> None:
    table = rows(section("## 1. The deck"), table=2)
    seen = {(r[0], int(r[1])): (int(r[2]), int(r[3]), int(r[4])) for r in table}
    expected = {}
    for name in PRESETS:
        rules = preset(name)
        lo, hi = rules.player_range()
        for players in range(lo, hi + 1):
            deck, hand = deck_for(rules, players)
            expected[(name, players)] = (len(deck), hand, len(deck) - hand * players)
    assert seen == expected


def test_the_preset_table_names_every_preset_and_what_it_overrides() -> None:
    table = rows(section("## Presets"))
    assert [r[0] for r in table] == list(PRESETS)
    for name, players, differs in ((r[0], r[1], r[2]) for r in table):
        rules = preset(name)
        lo, hi = rules.player_range()
        assert players == (str(lo) if lo == hi else f"{lo}–{hi}"), name
        overridden = {
            k: v for k, v in PRESETS[name].items() if k not in ("min_players", "max_players")
        }
        named = dict(re.findall(r"(\w+) = \"(\w+)\"", differs))
        assert named == {k: v.value for k, v in overridden.items()}, name


def test_every_rule_option_is_in_the_options_table() -> None:
    options = {r[0] for r in rows(section("## Rule options"))}
    table = preset("sticheln").to_table()
    assert options == set(table) - {"preset"}


@pytest.mark.parametrize("row", rows(section("### Tricks")), ids=lambda r: f"{r[0]}:{r[1]}")
def test_trick_example(row: list[str]) -> None:
    rule, played, wins = TrumpRule(row[0]), cards(row[1]), row[2]
    outcome = trick_winner(played, rule)
    if wins == "—":
        assert outcome.position == -1
    else:
        assert outcome.position >= 0 and card_str(played[outcome.position]) == wins


def short_round(all_zero_trick: AllZeroTrick) -> Round:
    """The page's short round, every pick and card applied through the engine."""
    text = section("### A short round")
    seats = rows(text, table=0)
    tricks = rows(text, table=1)
    dealer = int(re.search(r"seat (\d) deals", text).group(1))  # type: ignore[union-attr]
    players = len(seats)
    rules = preset("sticheln", all_zero_trick=all_zero_trick)
    rnd = Round(rules, players, dealer, [cards(r[1]) for r in seats], [])
    for seat, _hand, pain, suit in seats:
        assert SUIT_NAMES[cards(pain)[0] >> 4] == suit
        rnd.apply(int(seat), tuple(cards(pain)))
    assert rnd.leader == (dealer + 1) % players
    for _, leader, played, taken_by, _ in tricks:
        assert rnd.to_play == int(leader)
        for c in cards(played):
            rnd.apply(rnd.to_play, c)
        if all_zero_trick is AllZeroTrick.SET_ASIDE:
            assert rnd.tricks[-1].winner == (-1 if taken_by == "—" else int(taken_by))
    assert rnd.is_over
    return rnd


def test_the_short_round_plays_as_the_page_says() -> None:
    text = section("### A short round")
    rnd = short_round(AllZeroTrick.SET_ASIDE)
    scored = rows(text, table=2)
    for seat, pile, _score in scored:
        expected = sorted(rnd.captured[int(seat)] + list(rnd.pain[int(seat)] or ()))
        assert sorted(cards(pile)) == expected
    assert rnd.scores == [number(r[2]) for r in scored]
    assert sorted(rnd.discarded) == sorted(cards("S0 C0 H0"))


def test_the_short_round_under_leader_takes() -> None:
    text = section("### A short round")
    said = re.search(r"seat (\d) would score (−?\d+)", text)
    assert said is not None
    rnd = short_round(AllZeroTrick.LEADER_TAKES)
    assert rnd.scores is not None
    assert rnd.scores[int(said.group(1))] == number(said.group(2))


@pytest.mark.parametrize("row", rows(section("### Scoring piles")), ids=lambda r: r[0])
def test_scoring_example(row: list[str]) -> None:
    suits = {SUIT_NAMES.index(s.strip()) for s in row[0].split(",")}
    assert score_cards(cards(row[1]), suits) == number(row[2])


@pytest.mark.parametrize("row", rows(section("### Places")), ids=lambda r: r[0])
def test_places_example(row: list[str]) -> None:
    ties, totals, positive, places = row
    split = [[number(x) for x in cell.split(",")] for cell in (totals, positive, places)]
    assert ranking(split[0], split[1], MatchTies(ties)) == split[2]


def test_no_page_of_the_project_points_to_a_rules_file_it_does_not_have() -> None:
    # The rules live in docs/rules.md; a pointer to any other rules file is a dead link.
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "grep", "-l", "-I", "-F", "RULES" + ".md"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert tracked.stdout == ""


def test_the_web_rules_page_names_each_option_where_it_changes_a_step() -> None:
    """`/rules` of referee web (the viewer links each trick to it) says, as docs/rules.md
    does, where an option changes one of its rules (3, 6, 8, 10), and that a forfeited
    seat ranks last."""
    page = (ROOT / "referee" / "web" / "static" / "rules.html").read_text(encoding="utf-8")
    named = set(re.findall(r"<i>([^<]*)</i>", page))
    assert named >= {"pain card kept in hand", "secret", "leader takes", "trump rule: last suit",
                     "shared"}  # fmt: skip
    places = page[page.index('id="rule-10"') :]
    assert "forfeited" in places and "<i>shared</i>" in places
