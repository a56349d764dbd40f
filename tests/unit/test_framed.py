"""The persistent shell's frame reader: a command's output up to its random end marker, then
the marker's line (the exit code), whatever a background process writes around them."""

from __future__ import annotations

from sandlot.runtime.output import Framed


def test_the_exit_line_is_read_apart_from_what_a_background_writer_sends_after_it() -> None:
    framed = Framed(b"\n__SL_tok ", limit=16)
    framed.feed(b"out\n__SL_t")
    assert framed.line is None
    framed.feed(b"ok 0")
    assert framed.done and framed.line is None  # the line is not whole yet
    framed.feed(b"\nyyyyyyyy")
    assert framed.line == b"0"
    for _ in range(10_000):  # a writer that never sends a newline after it
        framed.feed(b"y" * 4096)
    assert framed.line == b"0" and len(framed.after) <= 64
    assert framed.buf.getvalue() == b"out"


def test_a_line_that_never_ends_stays_bounded() -> None:
    framed = Framed(b"\nEND ", limit=16)
    framed.feed(b"\nEND " + b"1" * 10_000)
    framed.feed(b"2" * 10_000)
    assert framed.line is None and len(framed.after) <= 64
