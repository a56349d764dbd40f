"""Assets: uploaded files and archives placed into a session's workspace at start, and
``{{asset:NAME}}`` placeholders in activity and process arguments."""

from __future__ import annotations

import io
import secrets
import tarfile

from tests.integration.conftest import Api, NewTenant


def tarball(files: dict[str, bytes], *, gz: bool = False, evil: str | None = None) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz" if gz else "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid = len(data), 0o755 if name.endswith(".sh") else 0o644, 0
            tar.addfile(info, io.BytesIO(data))
        if evil is not None:
            info = tarfile.TarInfo(evil)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    return out.getvalue()


async def test_assets_are_placed_and_placeholders_resolve(api: Api, new_tenant: NewTenant) -> None:
    name = f"data-{secrets.token_hex(2)}.csv"
    up = await api.client.put(f"/v1/assets/{name}", content=b"a,b\n1,2\n", headers=api.h)
    assert up.status_code == 201, up.text
    assert up.json()["kind"] == "file" and up.json()["size_bytes"] == 8
    tools = f"tools-{secrets.token_hex(2)}"
    archive = tarball({"run.sh": b"#!/bin/sh\necho ran $1\n", "lib/x.txt": b"x\n"}, gz=True)
    assert (
        await api.client.put(f"/v1/assets/{tools}?archive=true", content=archive, headers=api.h)
    ).status_code == 201
    listed = {a["name"] for a in (await api.client.get("/v1/assets", headers=api.h)).json()}
    assert {name, tools} <= listed

    env = await api.env(pool_size=0)
    s = await api.session(env["name"], assets=[{"name": name}, {"name": tools, "path": "opt/tools"}])
    assert s["state"]["assets"] == {name: f"/workspace/{name}", tools: "/workspace/opt/tools"}
    out = await api.sh(
        s["id"],
        "cat {{asset:" + name + "}}; {{asset:" + tools + "}}/run.sh ok; ls -ln {{asset:" + tools + "}}/lib",
    )
    assert out["stdout"].startswith("a,b\n1,2\nran ok\n") and " 1000 " in out["stdout"]
    unknown = await api.call(s["id"], "shell", "run", command="cat {{asset:nope}}")
    assert unknown.status_code == 422 and "nope" in unknown.text
    proc = await api.client.post(
        f"/v1/sessions/{s['id']}/processes", json={"command": "wc -l < {{asset:" + name + "}}"}, headers=api.h
    )
    assert proc.status_code == 201

    other = await new_tenant()
    assert (await api.client.get(f"/v1/assets/{name}", headers=other)).status_code == 404
    theirs = await api.client.post(
        "/v1/sessions", json={"environment": env["name"], "assets": [{"name": name}]}, headers=other
    )
    assert theirs.status_code == 404
    await api.end(s["id"])


async def test_bad_assets_are_refused(api: Api) -> None:
    evil = tarball({"ok.txt": b"1"}, evil="../escape.txt")
    resp = await api.client.put("/v1/assets/evil?archive=true", content=evil, headers=api.h)
    assert resp.status_code == 422
    assert (
        await api.client.put("/v1/assets/notatar?archive=true", content=b"plain", headers=api.h)
    ).status_code == 422
    assert (await api.client.put("/v1/assets/..bad", content=b"x", headers=api.h)).status_code in (404, 422)
    name = f"dup-{secrets.token_hex(2)}"
    assert (await api.client.put(f"/v1/assets/{name}", content=b"1", headers=api.h)).status_code == 201
    assert (await api.client.put(f"/v1/assets/{name}", content=b"2", headers=api.h)).status_code == 409
    assert (await api.client.delete(f"/v1/assets/{name}", headers=api.h)).status_code == 204
    assert (await api.client.get(f"/v1/assets/{name}", headers=api.h)).status_code == 404
    env = await api.env(pool_size=0)
    missing = await api.client.post(
        "/v1/sessions", json={"environment": env["name"], "assets": [{"name": "none"}]}, headers=api.h
    )
    assert missing.status_code == 404
