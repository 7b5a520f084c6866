"""Content filters on bindings: the `x-filter` binding argument (issue 41, slice 4). A message goes
through a binding with a filter only when the exchange's own match and the filter both hold.

A filter is an expression over the message's headers and its body read as JSON:

    filter   = or
    or       = and { "or" and }
    and      = unary { "and" unary }
    unary    = { "not" } primary
    primary  = "(" or ")" | "exists" "(" path ")"
             | value ( ("=" | "!=" | "<" | "<=" | ">" | ">=") value
                     | "in" "(" literal { "," literal } ")"
                     | "matches" string )
    value    = path | literal
    path     = ("headers" | "body") { "." name | "[" (index | string) "]" }
    literal  = string | number | "true" | "false" | "null"

Strings are quoted with ' or ", the quote doubled inside ('it''s'); backslashes are kept as written, so
a regex reads as RE2 takes it. Numbers are JSON's. Keywords are lower case.

Values compare by their JSON type: a comparison holds only between two strings, two numbers, two
booleans or two nulls (`<` and the others between strings or numbers only), and never with a missing
field, an array or an object, so `!=` needs the field to be there. `matches` searches a string with an
RE2 regex (anchor it with ^ and $). A filter is parsed and bounded once (`compile_filter`), then
evaluated in time linear in its nodes (and, for `matches`, in the string searched: RE2 never
backtracks); evaluating it never raises.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import msgspec
import re2

from cluster.security.users import RE2_OPTIONS

FILTER = "x-filter"
MAX_FILTER_CHARS = 4096
MAX_FILTER_NODES = 256
MAX_NESTING = 32
MAX_REGEX_PROGRAM = 1000  # RE2 instructions, as a listing's `use_regex` (api.paging) is bounded
MAX_BODY_BYTES = 64 * 1024
ROOTS = ("headers", "body")


class FilterError(ValueError):
    """A filter that does not parse, is beyond the bounds, or holds a regex RE2 refuses."""


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()  # the value of a path the message does not have, of `body` when it is not JSON
_UNREAD: Any = _Missing()


def _json_body(body: bytes | memoryview) -> Any:
    """`body` decoded as JSON, or _MISSING when it is longer than MAX_BODY_BYTES or not JSON."""
    if len(body) > MAX_BODY_BYTES:
        return _MISSING
    try:
        return msgspec.json.decode(body)
    except Exception:  # not JSON, or nested beyond the decoder's depth
        return _MISSING


class MessageContent:
    """What filters read of one message: its headers, and its body decoded as JSON the first time a
    filter reads it, and only then."""

    __slots__ = ("_body", "_json", "headers")

    def __init__(self, headers: Mapping[str, Any], body: bytes | memoryview) -> None:
        self.headers = headers
        self._body = body
        self._json = _UNREAD

    def json_body(self) -> Any:
        """The body as JSON (_MISSING when it is not JSON or is longer than MAX_BODY_BYTES)."""
        if self._json is _UNREAD:
            self._json = _json_body(self._body)
        return self._json


_Test = Callable[[MessageContent], bool]
_Value = Callable[[MessageContent], Any]


class ContentFilter:
    """A compiled filter: its text, and the test `matches` runs."""

    __slots__ = ("_test", "text")

    def __init__(self, text: str, test: _Test) -> None:
        self.text = text
        self._test = test

    def matches(self, content: MessageContent) -> bool:
        """Whether the message passes the filter; False when evaluating it raised anything."""
        try:
            return self._test(content)
        except Exception:  # a regex on a lone surrogate, say: a non-match, never the publish's error
            return False

    def __repr__(self) -> str:
        return f"ContentFilter({self.text!r})"


def compile_filter(text: object) -> ContentFilter:
    """The filter `text` says, or FilterError when it is not text of at most MAX_FILTER_CHARS
    characters, does not parse, has more than MAX_FILTER_NODES nodes (its keywords, operators, names
    and literals), nests parentheses deeper than MAX_NESTING, or holds a regex RE2 refuses or compiles
    to more than MAX_REGEX_PROGRAM instructions."""
    if not isinstance(text, str):
        raise FilterError(f"a filter is text, got {text!r}")
    if len(text) > MAX_FILTER_CHARS:
        raise FilterError(f"the filter is {len(text)} characters long, more than {MAX_FILTER_CHARS}")
    tokens = _tokens(text)
    nodes = sum(token.kind != "punctuation" for token in tokens) - 1  # the end is no node
    if nodes > MAX_FILTER_NODES:
        raise FilterError(f"the filter has {nodes} nodes, more than {MAX_FILTER_NODES}")
    return ContentFilter(text, _Parser(tokens).parse())


class _Token(NamedTuple):
    kind: str  # number, string, name, operator, punctuation or end
    text: str
    at: int  # where it starts in the filter, from 0


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    | (?P<string>'(?:[^']|'')*'|"(?:[^"]|"")*")
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<operator><=|>=|!=|=|<|>)
    | (?P<punctuation>[()\[\],.])
    )""",
    re.VERBOSE,
)
_TRAILING_SPACE = re.compile(r"\s*\Z")


def _tokens(text: str) -> list[_Token]:
    tokens = []
    at = 0
    while not _TRAILING_SPACE.match(text, at):
        found = _TOKEN.match(text, at)
        if found is None or found.lastgroup is None:
            start = len(text) - len(text[at:].lstrip())
            if text[start] in "'\"":
                raise FilterError(f"the string at character {start + 1} is not closed")
            raise FilterError(f"unexpected character {text[start]!r} at character {start + 1}")
        tokens.append(_Token(found.lastgroup, found.group(found.lastgroup), found.start(found.lastgroup)))
        at = found.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_ORDERINGS = ("<", "<=", ">", ">=")
_CONSTANTS = {"true": True, "false": False, "null": None}
_JSON_TYPES: dict[type, str] = {
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
_ORDERED_TYPES = ("string", "number")


def _json_type(value: Any) -> str | None:
    """The JSON type comparisons see: None for a missing value, an array or an object."""
    return _JSON_TYPES.get(type(value))


class _Parser:
    """Recursive descent over the tokens, building the test as closures as it goes."""

    def __init__(self, tokens: list[_Token]) -> None:
        self._tokens = tokens
        self._at = 0
        self._depth = 0

    def parse(self) -> _Test:
        test = self._or()
        self._expect("end", "", "'and', 'or' or the end of the filter")
        return test

    def _or(self) -> _Test:
        tests = [self._and()]
        while self._take("name", "or"):
            tests.append(self._and())
        return tests[0] if len(tests) == 1 else lambda content: any(test(content) for test in tests)

    def _and(self) -> _Test:
        tests = [self._unary()]
        while self._take("name", "and"):
            tests.append(self._unary())
        return tests[0] if len(tests) == 1 else lambda content: all(test(content) for test in tests)

    def _unary(self) -> _Test:
        negations = 0
        while self._take("name", "not"):
            negations += 1
        test = self._primary()
        return (lambda content: not test(content)) if negations % 2 else test

    def _primary(self) -> _Test:
        opening = self._peek()
        if self._take("punctuation", "("):
            self._depth += 1
            if self._depth > MAX_NESTING:
                raise FilterError(f"parentheses nest deeper than {MAX_NESTING} at character {opening.at + 1}")
            test = self._or()
            self._expect("punctuation", ")", "')'")
            self._depth -= 1
            return test
        if self._take("name", "exists"):
            self._expect("punctuation", "(", "'(' after exists")
            value = self._path()
            self._expect("punctuation", ")", "')'")
            return lambda content: value(content) is not _MISSING
        left = self._value()
        if self._take("name", "in"):
            return _one_of(left, self._list())
        if self._take("name", "matches"):
            return _matches(left, self._regex())
        token = self._peek()
        if token.kind != "operator":
            raise self._unexpected(token, "a comparison, 'in' or 'matches'")
        self._at += 1
        return _comparison(token.text, left, self._value())

    def _value(self) -> _Value:
        token = self._peek()
        if token.kind == "name" and token.text in ROOTS:
            return self._path()
        literal = self._literal("a path (headers..., body...), a literal, 'not', 'exists' or '('")
        return lambda content: literal

    def _path(self) -> _Value:
        root = self._peek()
        if root.kind != "name" or root.text not in ROOTS:
            raise self._unexpected(root, "a path: headers... or body...")
        self._at += 1
        steps: list[str | int] = []
        while True:
            if self._take("punctuation", "."):
                steps.append(self._expect("name", None, "a field name after '.'").text)
            elif self._take("punctuation", "["):
                token = self._peek()
                if token.kind == "string":
                    steps.append(_unquoted(token.text))
                elif token.kind == "number" and token.text.isdigit():
                    steps.append(int(token.text))
                else:
                    raise self._unexpected(token, "an index (0, 1, ...) or a quoted field name")
                self._at += 1
                self._expect("punctuation", "]", "']'")
            else:
                break
        start = _headers if root.text == "headers" else MessageContent.json_body
        return lambda content: _walk(start(content), steps)

    def _list(self) -> list[Any]:
        self._expect("punctuation", "(", "'(' after in")
        items = [self._literal("a literal")]
        while self._take("punctuation", ","):
            items.append(self._literal("a literal"))
        self._expect("punctuation", ")", "',' or ')'")
        return items

    def _regex(self) -> re2._Regexp:
        token = self._expect("string", None, "a quoted regular expression after matches")
        try:
            pattern = re2.compile(_unquoted(token.text), options=RE2_OPTIONS)
        except re2.error as exc:
            reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            raise FilterError(
                f"the regex at character {token.at + 1} is not one RE2 accepts (no backreferences or "
                f"lookaround): {reason}"
            ) from None
        if pattern.programsize > MAX_REGEX_PROGRAM:
            raise FilterError(
                f"the regex at character {token.at + 1} is too large (at most {MAX_REGEX_PROGRAM} RE2 "
                "instructions)"
            )
        return pattern

    def _literal(self, expected: str) -> Any:
        token = self._peek()
        if token.kind == "string":
            value: Any = _unquoted(token.text)
        elif token.kind == "number":
            value = float(token.text) if any(c in token.text for c in ".eE") else int(token.text)
            if not math.isfinite(value):
                raise FilterError(f"the number at character {token.at + 1} is out of range")
        elif token.kind == "name" and token.text in _CONSTANTS:
            value = _CONSTANTS[token.text]
        else:
            raise self._unexpected(token, expected)
        self._at += 1
        return value

    def _peek(self) -> _Token:
        return self._tokens[self._at]

    def _take(self, kind: str, text: str) -> bool:
        token = self._tokens[self._at]
        if token.kind == kind and token.text == text:
            self._at += 1
            return True
        return False

    def _expect(self, kind: str, text: str | None, expected: str) -> _Token:
        token = self._tokens[self._at]
        if token.kind != kind or (text is not None and token.text != text):
            raise self._unexpected(token, expected)
        self._at += 1
        return token

    @staticmethod
    def _unexpected(token: _Token, expected: str) -> FilterError:
        found = "the end of the filter" if token.kind == "end" else repr(token.text)
        return FilterError(f"expected {expected} at character {token.at + 1}, found {found}")


def _unquoted(text: str) -> str:
    return text[1:-1].replace(text[0] * 2, text[0])


def _headers(content: MessageContent) -> Any:
    return content.headers


def _walk(value: Any, steps: list[str | int]) -> Any:
    """The value `steps` lead to from `value` (field names in objects, indexes in arrays), or _MISSING."""
    for step in steps:
        if isinstance(step, str):
            if not isinstance(value, Mapping) or step not in value:
                return _MISSING
        elif not isinstance(value, list) or step >= len(value):
            return _MISSING
        value = value[step]
    return value


def _comparison(symbol: str, left: _Value, right: _Value) -> _Test:
    compare = _COMPARISONS[symbol]
    ordering = symbol in _ORDERINGS

    def test(content: MessageContent) -> bool:
        a, b = left(content), right(content)
        kind = _json_type(a)
        if kind is None or kind != _json_type(b) or (ordering and kind not in _ORDERED_TYPES):
            return False
        return compare(a, b)

    return test


def _one_of(value: _Value, items: list[Any]) -> _Test:
    typed = [(_json_type(item), item) for item in items]

    def test(content: MessageContent) -> bool:
        got = value(content)
        kind = _json_type(got)
        return kind is not None and any(kind == item_kind and got == item for item_kind, item in typed)

    return test


def _matches(value: _Value, pattern: re2._Regexp) -> _Test:
    def test(content: MessageContent) -> bool:
        got = value(content)
        return isinstance(got, str) and pattern.search(got) is not None

    return test
