"""Tar archives made in memory for the tests, member by member."""

from __future__ import annotations

import io
import tarfile

Member = tuple[str, str, bytes | str]  # (name, kind, content or link target)


def make_tar(*members: Member, mode: str = "w") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as tar:  # type: ignore[call-overload]
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                assert isinstance(payload, bytes)
                info.size = len(payload)
                info.mode = 0o4755 if name.endswith("suid") else 0o644
                tar.addfile(info, io.BytesIO(payload))
                continue
            info.type = {
                "dir": tarfile.DIRTYPE,
                "sym": tarfile.SYMTYPE,
                "hard": tarfile.LNKTYPE,
                "fifo": tarfile.FIFOTYPE,
                "chr": tarfile.CHRTYPE,
                "blk": tarfile.BLKTYPE,
            }[kind]
            info.mode = 0o555 if name.endswith("ro") else 0o755
            if kind in ("sym", "hard"):
                assert isinstance(payload, str)
                info.linkname = payload
            tar.addfile(info)
    return out.getvalue()
