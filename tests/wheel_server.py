"""A fake PyPI for --fetch tests: a `requests.Session` stand-in that serves the vLLM index JSON
and wheels held in memory, with byte ranges as PyPI's file host serves them. No socket is opened."""

from __future__ import annotations

import io
import json
import re
import zipfile

import requests

from conftest import record_line, sha

INDEX = "https://pypi.example/pypi/vllm/json"


def make_wheel(version: str, files: dict[str, bytes], record_extra: dict[str, bytes] | None = None) -> bytes:
    """A wheel of `files` with a METADATA and a RECORD; record_extra: RECORD lines for other
    bytes than the member holds (a wheel whose RECORD lies)."""
    info = f"vllm-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\nRequires-Dist: torch==2.11.0\n".encode()
    rows = [record_line(p, (record_extra or {}).get(p, d)) for p, d in files.items()]
    rows += [f"{info}/METADATA,{record_line('', metadata).split(',', 1)[1]}", f"{info}/RECORD,,"]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr(f"{info}/METADATA", metadata)
        z.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return buf.getvalue()


class Response:
    def __init__(self, status: int, content: bytes = b"", headers: dict[str, str] | None = None):
        self.status_code = status
        self.content = content
        self.headers = headers or {}

    def json(self):
        return json.loads(self.content)

    def raise_for_status(self):
        if self.status_code >= 400:
            raise requests.HTTPError(f"HTTP {self.status_code}")


class FakePyPI:
    """Serves INDEX and each wheel at /files/<name>. `ranges=False` plays a host that ignores
    Range headers; `short=True` one that cuts range replies short; `status` forces a status."""

    def __init__(self, wheels: dict[str, dict[str, bytes]] | None = None, *, ranges: bool = True, short: bool = False):
        self.wheels = {name: data for files in (wheels or {}).values() for name, data in files.items()}
        self.versions = {v: list(files) for v, files in (wheels or {}).items()}
        self.ranges, self.short = ranges, short
        self.status: int | None = None
        self.gets: list[tuple[str, str | None]] = []  # (url, Range header)

    def index(self) -> dict:
        return {"releases": {v: [{"filename": n, "url": f"/files/{n}", "size": len(self.wheels[n]),
                                  "digests": {"sha256": sha(self.wheels[n])}} for n in names] + [
                                     {"filename": f"vllm-{v}.tar.gz", "url": "/files/sdist", "size": 1,
                                      "digests": {"sha256": "0"}}]
                             for v, names in self.versions.items()}}

    def get(self, url: str, headers: dict[str, str] | None = None, timeout: float | None = None) -> Response:
        wanted = (headers or {}).get("Range")
        self.gets.append((url, wanted))
        if self.status is not None:
            return Response(self.status)
        if url == INDEX:
            return Response(200, json.dumps(self.index()).encode())
        name = url.rsplit("/", 1)[1]
        if name not in self.wheels:
            return Response(404)
        data = self.wheels[name]
        if not self.ranges or wanted is None:
            return Response(200, data)
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted)
        assert m, wanted
        if not m.group(1):
            start, end = max(0, len(data) - int(m.group(2))), len(data) - 1
        else:
            start, end = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
        part = data[start : end + 1]
        if self.short:
            part = part[: len(part) // 2]
        return Response(206, part, {"Content-Range": f"bytes {start}-{end}/{len(data)}"})
