"""The secret deal key: derivation, commitment, and that the key never shows in its repr."""

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from referee.match.dealkey import DealKey, check_commitment

KEY = DealKey(bytes(range(32)))


def test_match_seed_is_hmac_of_the_domain_and_deal_number() -> None:
    expected = hmac.new(
        bytes(range(32)), b"sticheln/deal/v2" + (5).to_bytes(8, "big"), hashlib.sha256
    ).digest()
    assert KEY.match_seed(5) == int.from_bytes(expected[:8], "big")


def test_commitment_is_sha256_of_the_tagged_key() -> None:
    expected = hashlib.sha256(b"sticheln/deal-key/v1" + bytes(range(32))).hexdigest()
    assert KEY.commitment() == expected
    assert check_commitment(KEY.hex(), expected)
    assert not check_commitment(DealKey.new().hex(), expected)
    assert not check_commitment("not hex", expected)


def test_repr_shows_no_key() -> None:
    for text in (repr(KEY), str(KEY), f"{KEY}"):
        assert KEY.hex() not in text
        assert KEY.commitment()[:16] in text


def test_fresh_keys_differ_and_round_trip_through_hex() -> None:
    a, b = DealKey.new(), DealKey.new()
    assert a != b
    assert DealKey.from_hex(a.hex()) == a
    assert DealKey.from_hex(f"  {a.hex().upper()}\n") == a


@pytest.mark.parametrize(
    ("text", "words"),
    [("zz" * 32, "not hex"), ("ab" * 31, "not 62"), ("", "not 0")],
)
def test_bad_key_text_says_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        DealKey.from_hex(text)


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_distinct_deals_get_distinct_seeds_and_other_keys_other_seeds(a: int, b: int) -> None:
    if a != b:
        assert KEY.match_seed(a) != KEY.match_seed(b)
    assert KEY.match_seed(a) != DealKey(bytes(32)).match_seed(a)
