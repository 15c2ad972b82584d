"""A pure-Python wheel that pip installs offline, for the lab's staging and install tests."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path


def wheel(
    dest: Path, name: str = "fakepkg", version: str = "1.0", payload: int = 0, extra: dict[str, str] | None = None
) -> Path:
    """NAME-VERSION-py3-none-any.whl in dest; its package sets __version__ and VERSION, and with
    `payload` carries that many incompressible bytes (to fill parts of a given size); `extra`: more
    files, by their path in the wheel."""
    path = dest / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files: dict[str, str | bytes] = {
        f"{name}/__init__.py": f"__version__ = VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if payload:
        files[f"{name}/data.bin"] = os.urandom(payload)
    files |= extra or {}
    with zipfile.ZipFile(path, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
        z.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in files) + f"{info}/RECORD,,\n")
    return path
