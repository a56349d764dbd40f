"""The shell programs the runtimes run inside sandboxes, from their ``.sh`` files
(:mod:`sandlot.runtime.programs`): each is byte for byte what it was as a Python string before
the move (its digest), and each parses under the two shells sandboxes have (dash, Debian's
``/bin/sh``, and busybox's)."""

from __future__ import annotations

import hashlib
import importlib
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import pytest

from sandlot.runtime.programs import program

#: sha256 of every composed program as the Python strings made it (before the .sh files)
GOLDEN = {
    "scripts.BYTE_COPY": "6cdba82f99e80fd67bd50f71752d64ef9d9611979ebd972df0cf44c9d847f735",
    "scripts.REPORT_PID_AND_EXEC": "09296eaadd2d7e91c033f6dfe14d7bc91ec5c8d6ab6ba4f3d4929a01a5601433",
    "scripts.STAT_FUNCTION": "88b5a234b618e342ad0dbbca6b182a575e82e97a99b7e6ae1aa560d939ca02a1",
    "scripts.LIVE_FUNCTION": "65179120869b35be6ba6bdfafc9bcff11aeb96911a9fe13a0e72b2ecbc553dea",
    "scripts.KILL_SESSION": "dd4ae0c1677935dffea7290c4e930e089d64cc59598e33878758795b6ac59855",
    "scripts.KILL_TREE": "d28519b48d78209bb09323e710292a7fb7f17b7dd5e73965f573cb9cfab836b8",
    "scripts.FREEZE_SANDBOX": "958d4cf5778a2f9e42a0b9510e1d65442b9fd2e5ac857871a0c8f34913112392",
    "scripts.THAW_SANDBOX": "abce8b1a661eb8efea74b075e8df43e3988efb6f54f2898aa54eab324b1b4cce",
    "scripts.LIMIT_COUNTS": "2ec746bdafe50fbeb895d882efb7cbac93e668d8679a0d61fb598407027072ea",
    "scripts.WRITABLE_PLACES": "684190f4e3aaba711d295bc091d4e629094d79ae5114b0e84d65ae6ad0c79858",
    "scripts.RESET_SANDBOX": "d874648a5983d62fb9bb502520998f399d2daf30c2b5e4e092dfce5dde62e77a",
    "file_scripts.WALK": "790d829570f5c8f74284d7d3b27a79c0e0d8872d2e3e06856a3000c8e71dcc36",
    "file_scripts.FILE_READ": "9266629446c24e62e0941290ac46883d33af24410905ca7acb8fbdbd9e83a200",
    "file_scripts.FILE_WRITE": "e3148b9f6fee55001678e0422b17f7932f2258a81fe8c67529f6db4dfd59f570",
    "file_scripts.FS_LIST": "9450b80736db0c7fb172f02922dd8eac05225822a72394c52df7301d65a9de9d",
    "file_scripts.FS_STAT": "9173d85149d6055e1a3a042487330ff1b6772c04f413734fa229d4722641a0c4",
    "file_scripts.FS_MKDIR": "c731e1358fce1ad58584acc2494e1ebf752c342eb4ba387d63e73252d086b816",
    "file_scripts.FS_REMOVE": "35acf72f5599e4428ad9bdfdc873a0537b0c9231b56cc845d3db9122532c3ff7",
    "file_scripts.FS_MOVE": "41793240f10c9972abeb75c2ad277b58e83854d62cccbece05f36d10f232d905",
    "file_scripts.IMPORT_CHECK": "971ddc75f990442a9f794c7590302b41c7ad852eb5088bb0ee7f2a0c9a8adaf1",
    "file_scripts.FIX_MODES": "b20c6114cb67d9a3ed71e87db4f896b4c0ba1aa005be146a2ba38e4c15ab3325",
    "process_scripts.PROC_KILL": "0156db36a47014336e84c489d688f87769e5c60173f7bfb8b9b415705b46815c",
    "process_scripts.PROC_START": "a53cf27879e93574c0326b8db073716999a225ccc712602f96a1f3e9b097bb46",
    "process_scripts.PROC_STDIN": "53857f8c7ea12eb112315272be41355b4d1a4e0111431bf32fcc8351ca3bc31b",
    "process_scripts.PROC_STATUS": "1dea9d982ddeec310502b4d190aa42abd950cf897a7c01c24a986091889aa59b",
    "process_scripts.PROC_READ": "4f964e148ad1c15561e625d554c32d94cda975f11089fad8f76aa0600152e019",
    "process_scripts.PROC_FOLLOW": "0ba2cce4e310ac813811006ef86c4c934edada725f0fc83c51c28e0d677f1ed1",
    "listing.LIST_WORKSPACE": "c3ed289a9a96a7ca85d9e1cd71e9e8ef9d2e3cadab416433a2f5265acabb0ab8",
    "listing.EXPORT_NAMED": "12a098a76ee0fd4e947ccce582dd67e8d5ed97344390c15144cb26fbcf6d5d99",
    "listing.SCAN_WORKSPACE": "30187bded4ba7d93779063d90ab762afd2d17cf7674a01d1572f627ccc8a41e6",
    "shell_boot.BOOT": "9d2055753de7149f4fa5d3ac04dad4d205c68bc416e4c4e17a7dec7263e5d36b",
    "shell_boot.BIND": "4a36880e10db7237ae5faa68d77508e01ce3df3765d710e153bd0d667cb12ac3",
    "shell_boot.ONE_SHOT": "c2cd889e0814f033670d3f9d5074a5cb483c0e67d03e562302f78a0445e0ee45",
    "docker_reset.RESET_THEN_SHELL": "b596969a871304cb789c341df268b46674d150d1f770756cf1d336bfebb5c68e",
    "docker_guard._CLOSE": "dbb5f80d5542ab8148c6164132a9070790435dbec3403a8a1c4e04e392ffffc4",
    "docker_guard._FIREWALL": "2530a164a586f002a23d5ec23690b2238217e1bf0fe2bc0d48362b0e11bd34fc",
}
SHELLS = (["dash", "-n"], ["busybox", "sh", "-n"])
#: the file each program is composed from (BIND is a one-line template of shell_boot's own)
FILE_OF = {key: key.split(".")[1].lower().lstrip("_") + ".sh" for key in GOLDEN}
FILE_OF |= {"docker_guard._CLOSE": "guard_close.sh", "docker_guard._FIREWALL": "guard_firewall.sh"}
del FILE_OF["shell_boot.BIND"]
ROOT = Path(__file__).resolve().parents[2]


def composed(key: str) -> str:
    module, name = key.split(".")
    value = getattr(importlib.import_module(f"sandlot.runtime.{module}"), name)
    assert isinstance(value, str)
    return value


@pytest.mark.parametrize("key", sorted(GOLDEN))
def test_a_program_from_its_file_is_byte_for_byte_the_string_it_was(key: str) -> None:
    assert hashlib.sha256(composed(key).encode()).hexdigest() == GOLDEN[key]


@pytest.mark.parametrize("shell", SHELLS, ids=lambda argv: argv[0])
@pytest.mark.parametrize("key", sorted(GOLDEN))
def test_every_program_parses_under_dash_and_busybox(key: str, shell: list[str]) -> None:
    assert shutil.which(shell[0]), f"{shell[0]} is missing (scripts/test.sh installs it)"
    text = composed(key) % "/x" if key == "shell_boot.BIND" else composed(key)  # its session's dir
    parsed = subprocess.run([*shell, "-c", text], capture_output=True, text=True, timeout=10)
    assert parsed.returncode == 0, parsed.stderr


def test_every_file_has_its_header_and_no_program_carries_one() -> None:
    """Headers and include lines are the files' own: none reaches a sandbox."""
    sh = files("sandlot.runtime") / "sh"
    names = sorted(p.name for p in sh.iterdir() if p.name.endswith(".sh"))
    assert len(names) == 37
    included = "".join((sh / name).read_text(encoding="utf-8") for name in names)
    for name in names:
        text = program(name)
        assert "# shellcheck shell=sh" not in text and "#@include" not in text and "\n# ---\n" not in text
        if f"#@include {name}" in included:  # an include ends its lines: the next starts anew
            assert text.endswith("\n"), name


def directives(name: str) -> list[str]:
    """The shellcheck lines of a file's header and of those of every file it includes."""
    text = (files("sandlot.runtime") / "sh" / name).read_text(encoding="utf-8")
    header, _, body = text.partition("\n# ---\n")
    found = [line for line in header.splitlines() if line.startswith("# shellcheck disable=")]
    for line in body.splitlines():
        if line.startswith("#@include "):
            found += directives(line.removeprefix("#@include ").strip())
    return found


@pytest.mark.parametrize("key", sorted(FILE_OF))
def test_shellcheck_finds_nothing_in_a_composed_program(key: str, tmp_path: Path) -> None:
    """Over the program as a sandbox gets it; what a file's header suppresses says why there."""
    script = tmp_path / FILE_OF[key]
    script.write_text("\n".join(["# shellcheck shell=sh", *directives(FILE_OF[key]), composed(key)]))
    checked = subprocess.run(
        ["shellcheck", "-f", "gcc", str(script)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_shellcheck_finds_nothing_in_the_repositorys_scripts() -> None:
    scripts = [*sorted(str(p) for p in (ROOT / "scripts").glob("*.sh")), str(ROOT / ".ci/run")]
    checked = subprocess.run(
        ["shellcheck", "-f", "gcc", *scripts], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
