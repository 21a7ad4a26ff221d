"""Bot log file names: one to one with bot names, and a process's log never has the name
of another bot's."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from referee.jail.bots import LOG_NAME_CHARS, LOG_PART, log_name, process_log_name

#: Names as config files allow them (letters, digits, '-', '_', '.'), and any text at all
#: (``check-bot --name``).
config_names = st.text(
    alphabet=string.ascii_letters + string.digits + LOG_NAME_CHARS + "é", min_size=1, max_size=60
)
any_names = st.text(max_size=80)


def test_a_process_log_of_one_bot_is_not_the_log_of_a_bot_named_like_it() -> None:
    # Process 2 of bot "random" and process 1 of bot "random-2" used to read alike.
    assert process_log_name("random", 2) == "random+2.log"
    assert process_log_name("random-2", 1) == "random-2+1.log"
    assert process_log_name("random", 2) != process_log_name("random-2", 1)
    assert not any(process_log_name("random-2", n) == "random+2.log" for n in range(1, 100))


def test_safe_names_are_kept_and_others_are_made_safe() -> None:
    assert log_name("montecarlo") == "montecarlo"
    assert log_name("bot.v2_final-3") == "bot.v2_final-3"
    unsafe = log_name("my bot/../x")
    assert unsafe.startswith("my_bot_.._x~") and "/" not in unsafe and LOG_PART not in unsafe
    assert log_name("a" * 41) != log_name("a" * 42)
    assert log_name("a b") != log_name("a_b")


@given(st.one_of(config_names, any_names), st.one_of(config_names, any_names))
def test_log_names_are_one_to_one(a: str, b: str) -> None:
    if a != b:
        assert log_name(a) != log_name(b)


@given(
    st.one_of(config_names, any_names),
    st.integers(min_value=1, max_value=10**6),
    st.one_of(config_names, any_names),
    st.integers(min_value=1, max_value=10**6),
)
def test_process_logs_of_two_bots_never_share_a_name(a: str, n: int, b: str, m: int) -> None:
    if (a, n) != (b, m):
        assert process_log_name(a, n) != process_log_name(b, m)
    name = log_name(a)
    assert LOG_PART not in name and "/" not in name and name
    assert len(process_log_name(a, n).encode()) <= 255
