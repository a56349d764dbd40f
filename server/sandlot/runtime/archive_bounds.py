"""Reading an untrusted tar stream in bounded memory.

:mod:`tarfile` trusts its input: its ``r|*`` mode inflates each compressed chunk whole, a long
name or an extended header is held whole while it is parsed, and a sparse file's map grows with
the input. :func:`check_archive <sandlot.runtime.archives.check_archive>` reads through the
pieces here instead, so an archive built to exhaust memory stops at a bound while it is read.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
from typing import IO, Any, Self, cast

from sandlot.domain.errors import InvalidInput, PayloadTooLarge

__all__ = ["MAX_HEADER", "BoundedInfo", "Budget", "WholeInfo", "decompressed", "open_bounded"]

MAX_HEADER = 64 << 10  # a long name or an extended (pax) header


class Budget(io.RawIOBase):
    """Every decompressed byte of the archive, headers included, counted against a budget."""

    def __init__(self, source: IO[bytes], budget: int) -> None:
        self._source = source
        self._left = budget
        self._budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._source.read(len(b))
        self._left -= len(data)
        if self._left < 0:
            raise PayloadTooLarge(
                f"the archive unpacks to more than {self._budget} bytes", limit=self._budget
            )
        b[: len(data)] = data
        return len(data)


class BoundedInfo(tarfile.TarInfo):
    """Headers read with bounds: a long name or an extended header is held in memory whole
    while it is parsed, so none may pass ``MAX_HEADER``; sparse files are not accepted (their
    maps grow with the input)."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _EXTENDED and self.size > MAX_HEADER:
            raise InvalidInput(
                f"an archive header of {self.size} bytes (at most {MAX_HEADER})", field="archive"
            )
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise InvalidInput("sparse files are not accepted in archives", field="archive")
        return super()._proc_member(tarfile_)  # type: ignore[misc]

    def _refuse_sparse(self, *_: Any) -> None:
        raise InvalidInput("sparse files are not accepted in archives", field="archive")

    _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _refuse_sparse


class WholeInfo(BoundedInfo):
    """:class:`BoundedInfo` for an archive that must be whole: one that ends where a header
    should be, without its end-of-archive blocks, was cut short (tarfile takes that for the
    end, and the members before the cut were kept: an upload unpacked in part, answered 200)."""

    @classmethod
    def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
        if len(buf) < tarfile.BLOCKSIZE:
            raise InvalidInput(
                "the archive ends before its end-of-archive blocks: it was cut short", field="archive"
            )
        return super().frombuf(buf, encoding, errors)


_EXTENDED = (
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
)


def decompressed(reader: IO[bytes]) -> IO[bytes]:
    """``reader``, decompressed when it starts like gzip, bzip2 or xz. These readers inflate
    at most what is asked of them at a time (tarfile's own ``r|*`` inflates each compressed
    chunk whole: 64 KiB of a bomb becomes 64 MiB at once)."""
    buffered: Any = reader if isinstance(reader, io.BufferedReader) else io.BufferedReader(reader)
    head = buffered.peek(6)[:6]
    opened: Any = buffered
    if head.startswith(b"\x1f\x8b"):
        opened = gzip.GzipFile(fileobj=buffered, mode="rb")
    elif head.startswith(b"BZh"):
        opened = bz2.BZ2File(buffered, mode="rb")
    elif head.startswith(b"\xfd7zXZ\x00"):
        opened = lzma.LZMAFile(buffered, mode="rb")  # noqa: SIM115 - the tar reading it closes it
    return cast(IO[bytes], opened)


def open_bounded(reader: IO[bytes], budget: int, *, ignore_zeros: bool = False) -> tarfile.TarFile:
    """A tar stream read from ``reader`` (any compression) through all the bounds above: at
    most ``budget`` decompressed bytes, headers bounded, no sparse files. ``ignore_zeros``:
    read on past end-of-archive blocks (several archives one after the other); otherwise an
    archive without them is refused (:class:`WholeInfo`). The caller closes it."""
    source = io.BufferedReader(Budget(decompressed(reader), budget), 1 << 16)
    info = BoundedInfo if ignore_zeros else WholeInfo  # read past zeros: it ends at the stream's end
    return tarfile.open(fileobj=source, mode="r|", tarinfo=info, ignore_zeros=ignore_zeros)
