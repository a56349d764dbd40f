"""Bounded output capture shared by the runtimes."""

from __future__ import annotations

import base64
import binascii

from sandlot.domain.errors import InvalidInput

__all__ = ["CappedBuffer", "Framed", "decode_input", "decode_output"]


class CappedBuffer:
    """Keeps the first ``limit`` bytes written and counts the rest.

    A command that floods gigabytes keeps the server's memory at ``limit`` per stream.
    """

    __slots__ = ("_chunks", "_kept", "dropped", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._chunks: list[bytes] = []
        self._kept = 0
        self.dropped = 0

    def write(self, data: bytes) -> None:
        room = self.limit - self._kept
        if room > 0:
            piece = data[:room]
            self._chunks.append(piece)
            self._kept += len(piece)
        self.dropped += max(0, len(data) - max(room, 0))

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def getvalue(self) -> bytes:
        return b"".join(self._chunks)


#: The most of what follows a frame's marker that is kept: its line (the exit code) is short;
#: a background process of the command writing on without a newline must not grow it.
_AFTER = 64


class Framed:
    """Collects one stream of one framed command (the persistent shell's) up to its end
    marker, keeping at most ``limit``; the marker is random per command, so nothing a command
    prints can fake it. What follows the marker is its line (:attr:`line`, the exit code on
    stdout); whatever comes after that line (a background process still writing) is dropped."""

    __slots__ = ("_pending", "after", "buf", "done", "marker")

    def __init__(self, marker: bytes, limit: int) -> None:
        self.marker = marker
        self.buf = CappedBuffer(limit)
        self._pending = b""
        self.done = False
        self.after = b""  # what followed the marker, at most _AFTER bytes

    @property
    def line(self) -> bytes | None:
        """The line that followed the marker, once it is whole (None before)."""
        head, found, _ = self.after.partition(b"\n")
        return head if found else None

    def so_far(self) -> bytes:
        """What came before the end marker, when the stream ended without it (held back bytes
        that might have begun the marker included)."""
        return self.buf.getvalue() + self._pending

    def feed(self, data: bytes) -> None:
        if self.done:
            if b"\n" not in self.after:
                self.after = (self.after + data)[:_AFTER]
            return
        if self._pending:
            data = self._pending + data
        idx = data.find(self.marker)
        if idx >= 0:
            self.buf.write(data[:idx])
            self.after = data[idx + len(self.marker) :][:_AFTER]
            self.done = True
            self._pending = b""
            return
        keep = len(self.marker) - 1
        if len(data) > keep:
            self.buf.write(data[:-keep])
            self._pending = data[-keep:]
        else:
            self._pending = data


def decode_output(stdout: bytes, stderr: bytes) -> dict[str, str]:
    """JSON-ready output: UTF-8 text, or base64 for both streams when either is not UTF-8."""
    try:
        return {"stdout": stdout.decode(), "stderr": stderr.decode(), "encoding": "utf-8"}
    except UnicodeDecodeError:
        return {
            "stdout": base64.b64encode(stdout).decode(),
            "stderr": base64.b64encode(stderr).decode(),
            "encoding": "base64",
        }


def decode_input(text: str, encoding: str, field: str) -> bytes:
    """The bytes of a JSON-carried input (``utf-8`` text or ``base64``); 422 naming ``field``
    when the base64 is not valid."""
    if encoding != "base64":
        return text.encode()
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise InvalidInput(f"{field} is not valid base64: {exc}", field=field) from exc
