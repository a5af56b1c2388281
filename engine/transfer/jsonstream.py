"""Reading a JSON export as a stream: the top-level object's values one at a time, and the
rows of its lists one row at a time, so that an import checks each row's shape as it reads
it and never holds the file's text or its whole parsed tree (a 181 MB export read whole
peaked near 1 GB: bytes, text, tree and rows at once).

`read_object(stream, on_item)` reads ``{"key": value, ...}`` from a text stream. A list value
is handed over row by row: ``on_item(key, row)`` for each element, and nothing is kept here;
any other value is returned in the mapping of scalars. Errors are json's own message at the
line and column of the whole file, as ``json.loads`` of the file would give them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

CHUNK = 1 << 20  # characters read at a time
_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER_TAIL = re.compile(r"[0-9.eE+-]*")  # what could still follow a number or literal


class StreamError(ValueError):
    """Invalid JSON at a place in the file (message as json.loads would say it)."""


class _Buffer:
    def __init__(self, stream: IO[str], decoder: json.JSONDecoder) -> None:
        self.stream, self.decoder = stream, decoder
        self.text, self.pos, self.eof = "", 0, False
        self.line_base = 0  # newlines before self.text
        self.col_base = 0  # characters of the current line before self.text

    def more(self) -> bool:
        if self.eof:
            return False
        chunk = self.stream.read(CHUNK)
        if not chunk:
            self.eof = True
            return False
        consumed = self.text[: self.pos]  # drop what was read; count its lines
        newlines = consumed.count("\n")
        if newlines:
            self.line_base += newlines
            self.col_base = len(consumed) - consumed.rfind("\n") - 1
        else:
            self.col_base += len(consumed)
        self.text = self.text[self.pos :] + chunk
        self.pos = 0
        return True

    def skip_space(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def error(self, message: str, pos: int | None = None) -> StreamError:
        pos = self.pos if pos is None else pos
        before = self.text.rfind("\n", 0, pos)
        line = self.line_base + self.text.count("\n", 0, pos) + 1
        col = pos - before if before >= 0 else self.col_base + pos + 1
        return StreamError(f"invalid JSON at line {line} column {col}: {message}")

    def value(self) -> Any:
        """One JSON value at the current position (reading more text until it is whole)."""
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                # cut short by the end of the buffer (the decoder ran into it, or a string
                # is still open), or really invalid: only the first reads on
                cut = exc.pos >= len(self.text) - 16 or exc.msg.startswith("Unterminated string")
                if cut and len(self.text) - self.pos > MAX_VALUE_CHARS:
                    raise self.error(f"one value longer than {MAX_VALUE_CHARS >> 20} MB") from None
                if cut and self.more():
                    continue
                raise self.error(exc.msg, exc.pos) from None
            # a number may go on in the next chunk ("12" of "1234", "-2" of "-2.5e3")
            if (
                self.text[self.pos] not in '[{"'
                and _NUMBER_TAIL.fullmatch(self.text, end) is not None
                and self.more()
            ):
                continue
            self.pos = end
            return value

    def expect(self, char: str, what: str) -> None:
        if self.skip_space() != char:
            raise self.error(f"Expecting {what}")
        self.pos += 1


class Empty(StreamError):
    """The stream holds nothing but white space."""


STREAMED = object()  # the value of a key whose list went row by row to its consumer
MAX_VALUE_CHARS = 32 << 20  # one value (an export row is a few kB); past this: not an export


def read_object(
    stream: IO[str],
    rows: Callable[[str], Callable[[Any], None] | None],
    *,
    parse_constant: Callable[[str], Any] | None = None,
) -> dict[str, Any] | None:
    """Read the JSON object in ``stream``. For a key whose value is a list, ``rows(key)`` may
    return a consumer: each element then goes to it as it is read, and the key's value in
    the result is ``STREAMED``; other values are returned whole. None when the document is
    valid JSON but not an object. Raises Empty, StreamError for invalid JSON (message and
    place as json.loads of the whole file), ValueError/RecursionError as json.loads does (a
    constant refused by ``parse_constant``, a number too long, nesting too deep)."""
    decoder = json.JSONDecoder(parse_constant=parse_constant)
    buf = _Buffer(stream, decoder)
    first = buf.skip_space()
    if first == "":
        raise Empty("the file is empty")
    if first != "{":
        buf.value()  # json's own message, or valid JSON that is not an object
        if buf.skip_space():
            raise buf.error("Extra data")
        return None
    buf.pos += 1
    result: dict[str, Any] = {}
    if buf.skip_space() == "}":
        buf.pos += 1
    else:
        while True:
            if buf.skip_space() != '"':
                raise buf.error("Expecting property name enclosed in double quotes")
            key = buf.value()
            buf.expect(":", "':' delimiter")
            consumer = rows(key) if buf.skip_space() == "[" else None
            if consumer is not None:
                _read_list(buf, consumer)
                result[key] = STREAMED
            else:
                result[key] = buf.value()
            char = buf.skip_space()
            if char == ",":
                buf.pos += 1
                continue
            if char == "}":
                buf.pos += 1
                break
            raise buf.error("Expecting ',' delimiter")
    if buf.skip_space():
        raise buf.error("Extra data")
    return result


def _read_list(buf: _Buffer, consumer: Callable[[Any], None]) -> None:
    for item in _items(buf):
        consumer(item)


def _items(buf: _Buffer) -> Iterator[Any]:
    """The elements of the list at the current position ("[" next), one at a time."""
    buf.pos += 1  # "["
    if buf.skip_space() == "]":
        buf.pos += 1
        return
    while True:
        if buf.skip_space() == "":
            raise buf.error("Expecting value")
        yield buf.value()
        char = buf.skip_space()
        if char == ",":
            buf.pos += 1
            continue
        if char == "]":
            buf.pos += 1
            return
        raise buf.error("Expecting ',' delimiter")


def iter_list(
    stream: IO[str],
    key: str,
    occurrence: int = 1,
    *,
    parse_constant: Callable[[str], Any] | None = None,
) -> Iterator[Any]:
    """The elements of the list under ``key`` of the JSON object in ``stream`` (the
    ``occurrence``-th list under that key), one at a time: a second reading of a file
    ``read_object`` read before. Other lists are read on without being held; errors as
    read_object's."""
    buf = _Buffer(stream, json.JSONDecoder(parse_constant=parse_constant))
    buf.expect("{", "'{'")
    if buf.skip_space() == "}":
        return
    seen = 0
    while True:
        if buf.skip_space() != '"':
            raise buf.error("Expecting property name enclosed in double quotes")
        name = buf.value()
        buf.expect(":", "':' delimiter")
        if buf.skip_space() == "[":
            seen += name == key
            if name == key and seen == occurrence:
                yield from _items(buf)
                return
            for _ in _items(buf):
                pass
        else:
            buf.value()
        char = buf.skip_space()
        if char == ",":
            buf.pos += 1
            continue
        if char == "}":
            return
        raise buf.error("Expecting ',' delimiter")
