"""Request bodies read into typed structs: each `RequestBody` struct says which fields a body may have,
of which types and within which bounds, and that one declaration both checks a request (`read_body_as`)
and gives the body's schema in the OpenAPI document (`api.openapi`).

A body that breaks it is a 400 naming the field and what it must be, as the hand-written checks of
`api.validation` say it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, TypeVar

import msgspec
from aiohttp import web

from api.validation import bad, is_utf8, json_object

B = TypeVar("B", bound="RequestBody")
Moment = (
    Annotated[int, msgspec.Meta(ge=0)]
    | Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]
)
"""A time a body gives: epoch milliseconds or ISO-8601 (read by `api.validation.moment_ms`)."""

_WHERE = re.compile(r"(?P<what>.*?)(?: - at (?P<key>`key` in )?`\$(?P<path>.*)`)?", re.DOTALL)
_EXPECTED = re.compile(r"Expected `(?P<types>[^`]+)`(?:, got `(?P<got>[^`]+)`)?(?P<bound>.*)", re.DOTALL)
_MISSING = re.compile(r"Object missing required field `(?P<name>[^`]+)`")
_INVALID_ENUM = re.compile(r"Invalid enum value (?P<value>.+)", re.DOTALL)
_UNKNOWN = re.compile(r"Object contains unknown field `(?P<name>[^`]+)`")
_KINDS = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "a boolean",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


class RequestBody(msgspec.Struct, forbid_unknown_fields=True):
    """Base of the request bodies read into structs. A body may have only the fields of its struct
    (unless the struct says `forbid_unknown_fields=False`: the endpoint ignores others); a request may
    leave the body out when the struct is `optional` (every field then has its default), and send it as
    msgpack when it is `packed`."""

    optional: ClassVar[bool] = False
    packed: ClassVar[bool] = False


async def read_body_as(request: web.Request, kind: type[B]) -> B:
    """The request's JSON body as a `kind` (`body_as`); 400 for a body that is no JSON object."""
    return body_as(await json_object(request, optional=kind.optional), kind)


def body_as(body: dict[Any, Any], kind: type[B], *, texts_checked: bool = False) -> B:
    """`body` (a JSON object, a msgpack map or a stream frame's fields) as a `kind`, a field given as null
    taken as left out (its default): 400 for fields `kind` does not have (all of them named), a field
    missing or of the wrong type or bounds, or text that is not valid UTF-8 (a lone surrogate; unless the
    caller checks its texts itself, `texts_checked`)."""
    if kind.__struct_config__.forbid_unknown_fields:
        unknown = body.keys() - set(kind.__struct_encode_fields__)
        if unknown:
            raise bad(f"unknown fields {sorted(unknown, key=str)}")
    if not texts_checked:
        not_text = _not_utf8(body, "")
        if not_text is not None:
            raise bad(f"{not_text or 'body'} must be valid UTF-8 text (no lone surrogates)")
    try:
        return msgspec.convert({k: v for k, v in body.items() if v is not None}, kind, strict=True)
    except msgspec.ValidationError as exc:
        raise bad(_reason(str(exc), kind)) from exc


def _not_utf8(value: Any, where: str) -> str | None:
    """Where in `value` (JSON) a string or key is not valid UTF-8 text, if anywhere."""
    if isinstance(value, str):
        return None if is_utf8(value) else where
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else key
            if not is_utf8(key):
                return inner
            if (found := _not_utf8(item, inner)) is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            if (found := _not_utf8(item, f"{where}[{index}]")) is not None:
                return found
    return None


def _reason(error: str, kind: type[RequestBody]) -> str:
    """msgspec's validation `error` said as the API's other 400s say theirs: "ttl_s must be an integer
    >= 1", "node is required"."""
    where = _WHERE.fullmatch(error)
    assert where is not None  # the pattern matches any text
    what, path = where["what"], (where["path"] or "").lstrip(".")
    if missing := _MISSING.fullmatch(what):
        return f"{path + '.' if path else ''}{missing['name']} is required"
    subject = path or "body"
    if where["key"]:
        return f"{subject} must have string keys"
    if unknown := _UNKNOWN.fullmatch(what):
        return f"{subject} has unknown fields [{unknown['name']!r}]"
    if expected := _EXPECTED.fullmatch(what):
        kinds = _either([_KINDS.get(t, t) for t in expected["types"].split(" | ")])
        got = f", got {_KINDS.get(expected['got'], expected['got'])}" if expected["got"] else ""
        return f"{subject} must be {kinds}{expected['bound']}{got}"
    if (invalid := _INVALID_ENUM.fullmatch(what)) and (values := _choices(kind, path)):
        return f"{subject} must be {_either([repr(v) for v in values])}, got {invalid['value']}"
    return f"{subject}: {what}"


def _either(choices: list[str]) -> str:
    """The choices as one phrase: a; a or b; a, b or c."""
    return " or ".join([", ".join(choices[:-1]), choices[-1]] if len(choices) > 2 else choices)


def _choices(kind: type[RequestBody], path: str) -> tuple[Any, ...]:
    """The values the field at `path` ("a", "a[0].b") of `kind` may take when it is a Literal, else none."""
    given: msgspec.inspect.Type = msgspec.inspect.type_info(kind)
    for name in re.sub(r"\[\d+\]", "", path).split("."):
        struct = _inner(given, msgspec.inspect.StructType)
        field = next((f for f in struct.fields if f.encode_name == name), None) if struct else None
        if field is None:
            return ()
        given = field.type
    literal = _inner(given, msgspec.inspect.LiteralType)
    return literal.values if literal is not None else ()


T = TypeVar("T", bound=msgspec.inspect.Type)


def _inner(given: msgspec.inspect.Type, wanted: type[T]) -> T | None:
    """The `wanted` kind of type `given` is, or holds as a list's items or a union's member."""
    if isinstance(given, msgspec.inspect.Metadata):
        given = given.type
    if isinstance(given, wanted):
        return given
    if isinstance(given, msgspec.inspect.ListType):
        return _inner(given.item_type, wanted)
    if isinstance(given, msgspec.inspect.UnionType):
        return next((t for t in (_inner(m, wanted) for m in given.types) if t is not None), None)
    return None
