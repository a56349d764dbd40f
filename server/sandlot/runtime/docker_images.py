"""Images without a registry.

``sandlot images build-offline`` makes the two base images the tests and the quickstart use,
from Debian packages only: ``sandlot/busybox:latest`` (busybox-static) and ``sandlot/python:3``
(a minimal Debian with python3, by mmdebstrap). Both have a ``sandbox`` user (uid 1000) that
owns ``/workspace``, and sandboxes run as that user.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiodocker

from sandlot.domain.errors import InvalidInput, RuntimeUnavailable

__all__ = ["BUILTIN_IMAGES", "ImageService", "image_service"]

Progress = Callable[[str], None]

BUSYBOX_IMAGE = "sandlot/busybox:latest"
PYTHON_IMAGE = "sandlot/python:3"
BUILTIN_IMAGES = (BUSYBOX_IMAGE, PYTHON_IMAGE)

_PASSWD = "root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n"
_GROUP = "root:x:0:\nsandbox:x:1000:\n"
_CONFIG = {
    "User": "1000:1000",
    "WorkingDir": "/workspace",
    "Cmd": ["/bin/sh"],
    "Env": ["HOME=/workspace", "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"],
}


async def _run(argv: list[str], progress: Progress) -> None:
    """Run a build step, relaying its output lines as progress."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    assert proc.stdout is not None
    tail: list[str] = []
    async for raw in proc.stdout:
        line = raw.decode(errors="replace").rstrip()
        if line:
            tail = [*tail[-20:], line]
            progress(f"  {line}")
    if await proc.wait() != 0:
        raise RuntimeError(f"{argv[0]} failed:\n" + "\n".join(tail))


def _busybox_rootfs(tar_path: Path) -> None:
    """Write a busybox root filesystem as a tar file (runs in a worker thread)."""
    busybox = shutil.which("busybox")
    if busybox is None or not _is_static(busybox):
        raise InvalidInput("busybox-static is not installed: apt-get install busybox-static")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # the layer's root: a temporary directory is 0700
        for d in ("bin", "etc", "tmp", "proc", "sys", "dev", "root", "workspace", "usr/bin"):
            (root / d).mkdir(parents=True, exist_ok=True)
        shutil.copy2(busybox, root / "bin/busybox")
        (root / "etc/passwd").write_text(_PASSWD)
        (root / "etc/group").write_text(_GROUP)
        (root / "tmp").chmod(0o1777)

        def owner(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid = info.gid = 1000 if info.name.startswith("./workspace") else 0
            info.uname = info.gname = ""
            return info

        with tarfile.open(tar_path, "w") as tar:
            tar.add(root, arcname=".", filter=owner)
            applets = subprocess.run(
                [busybox, "--list"], capture_output=True, text=True, check=True
            ).stdout.split()
            for applet in applets:
                if applet == "busybox":
                    continue
                link = tarfile.TarInfo(f"./bin/{applet}")
                link.type, link.linkname, link.mode = tarfile.SYMTYPE, "busybox", 0o777
                tar.addfile(link)


def _image_archive(rootfs: Path, name: str, out: Path) -> None:
    """Write a ``docker load`` archive with ``rootfs`` as its only layer (worker thread)."""
    digest = hashlib.sha256()
    with rootfs.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    layer = digest.hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": _CONFIG,
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer}"]},
            "history": [{"created_by": "sandlot images build-offline"}],
        }
    ).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps(
        [{"Config": config_name, "RepoTags": [name], "Layers": [f"{layer}/layer.tar"]}]
    ).encode()
    with tarfile.open(out, "w") as tar:
        for member, data in ((config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        tar.add(rootfs, arcname=f"{layer}/layer.tar")


def _is_static(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    return b"ld-linux" not in head and b"/lib64/ld" not in head


@asynccontextmanager
async def image_service(docker_url: str | None) -> AsyncIterator[ImageService]:
    """An :class:`ImageService` on the engine at ``docker_url`` (None: the environment's),
    or :class:`RuntimeUnavailable` when no engine answers there."""
    docker = aiodocker.Docker(url=docker_url)
    try:
        try:
            await docker.version()
        except Exception as exc:
            raise RuntimeUnavailable(f"no Docker engine answers: {exc}") from exc
        yield ImageService(docker)
    finally:
        await docker.close()


class ImageService:
    """Lists, imports and builds images on a Docker engine."""

    def __init__(self, docker: aiodocker.Docker) -> None:
        self._docker = docker

    async def list_images(self) -> list[dict[str, Any]]:
        images = await self._docker.images.list()
        return [{"id": i["Id"], "tags": i.get("RepoTags") or [], "size": i.get("Size", 0)} for i in images]

    async def exists(self, name: str) -> bool:
        try:
            await self._docker.images.inspect(name)
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def pull(self, name: str) -> None:
        await self._docker.images.pull(name)

    async def import_rootfs(self, rootfs: Path, name: str) -> None:
        """Make image ``name`` from a root filesystem tar, like ``docker import``.

        The tar becomes the single layer of a ``docker load`` archive whose config sets the
        sandbox user, workspace and environment.
        """
        archive = rootfs.with_name("image.tar")
        await asyncio.to_thread(_image_archive, rootfs, name, archive)
        with archive.open("rb") as body:
            result = await self._docker.images.import_image(data=body)
        for item in result if isinstance(result, list) else [result]:
            if isinstance(item, dict) and item.get("error"):
                raise RuntimeError(f"import of {name} failed: {item['error']}")

    async def build_offline(
        self, which: tuple[str, ...] = BUILTIN_IMAGES, *, force: bool = False, progress: Progress
    ) -> list[str]:
        """Build the built-in images that are missing (all of ``which`` with ``force``)."""
        built: list[str] = []
        for name in which:
            if name not in BUILTIN_IMAGES:
                raise InvalidInput(f"unknown built-in image {name!r}; choose from {BUILTIN_IMAGES}")
            if not force and await self.exists(name):
                progress(f"{name}: already present")
                continue
            with tempfile.TemporaryDirectory(prefix="sandlot-image-") as tmp:
                tar_path = Path(tmp) / "rootfs.tar"
                progress(f"{name}: building root filesystem...")
                if name == BUSYBOX_IMAGE:
                    await asyncio.to_thread(_busybox_rootfs, tar_path)
                else:
                    await self._debian_rootfs(tar_path, progress)
                size_mb = (await asyncio.to_thread(os.path.getsize, tar_path)) / 1e6
                progress(f"{name}: importing {size_mb:.1f} MB into the engine...")
                await self.import_rootfs(tar_path, name)
            progress(f"{name}: done")
            built.append(name)
        return built

    async def _debian_rootfs(self, tar_path: Path, progress: Progress) -> None:
        if shutil.which("mmdebstrap") is None:
            raise InvalidInput("mmdebstrap is not installed: apt-get install mmdebstrap")
        suite = _debian_suite()
        hook = (
            'chroot "$1" useradd --uid 1000 --user-group --home-dir /workspace '
            '--no-create-home --shell /bin/sh sandbox && mkdir -p "$1/workspace" && '
            'chown 1000:1000 "$1/workspace" && rm -rf "$1/var/cache/apt/"* "$1/var/lib/apt/lists/"*'
        )
        await _run(
            [
                "mmdebstrap",
                "--variant=minbase",
                "--include=python3",
                "--format=tar",
                f"--customize-hook={hook}",
                suite,
                str(tar_path),
            ],
            progress,
        )


def _debian_suite() -> str:
    """The host's Debian release name (the mirror it can reach serves it)."""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME=") and line.split("=", 1)[1]:
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return "bookworm"
