"""api.json_codec gives the standard library's results: every document parses to what `json.loads`
makes of it (or fails as it does), and an answer carries what `web.json_response` would."""

from __future__ import annotations

import json

import pytest
from aiohttp import web

from api.json_codec import json_answer, json_value

DOCUMENTS = [
    '{"messages": [{"body": "x", "headers": {"h": 1.5}}], "seq": 3}',
    '{"a": 1, "a": 2}',  # the last duplicate wins
    "[18446744073709551616, -9223372036854775809, 1e-320, -0.0]",  # beyond 64 bits: still integers
    '["\\ud800", "\\u0000", "\\u00e9"]',  # a lone surrogate msgspec refuses
    "[NaN, Infinity, -Infinity, 1e400]",  # accepted by json.loads only
    " [1] ",
]
INVALID = ["[1]x", "{", "", "\ufeff[1]", "{'a': 1}"]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_a_document_parses_to_what_json_loads_makes_of_it(text: str) -> None:
    expected = json.loads(text)
    assert repr(json_value(text)) == repr(expected)  # repr: NaN != NaN, and int is not float


@pytest.mark.parametrize("text", INVALID)
def test_an_invalid_document_fails_as_json_loads_fails(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        json_value(text)
    assert str(got.value) == str(expected.value)


def test_an_answer_carries_the_body_and_content_type_of_json_response() -> None:
    data = {"ids": [1, 2**63 - 1], "duplicate": False}
    answer, reference = json_answer(data, status=201), web.json_response(data, status=201)
    assert answer.status == reference.status == 201
    assert answer.headers["Content-Type"] == reference.headers["Content-Type"]
    assert isinstance(answer.body, bytes) and json.loads(answer.body) == data
