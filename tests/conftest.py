"""Shared fixtures: a synthetic catalogue (versions.toml + backports/) and vLLM trees built from
it, so unit tests run with no network and no vLLM. Release tests against PyPI's real files live
in tests/release/ and are marked `network`.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fake_checkpoint import checkpoint_dir, tokenizer_dir  # noqa: F401  (verify --model's fixtures)

HEADER = textwrap.dedent("""\
    Description: {desc}
    Origin: other, https://example.invalid/fix
    Bug: https://github.com/vllm-project/vllm/issues/1
    Forwarded: not-needed
    Applied-Upstream: no
    """)

MOD = "".join(f"line {i}\n" for i in range(1, 21)).encode()
MOD_FIXED = MOD.replace(b"line 10\n", b"line 10 fixed\n")
KERNEL = b"def kernel():\n    return 1\n"

FIX = HEADER.format(desc="fix line 10") + textwrap.dedent("""\
    --- a/vllm/mod.py
    +++ b/vllm/mod.py
    @@ -8,5 +8,5 @@
     line 8
     line 9
    -line 10
    +line 10 fixed
     line 11
     line 12
    """)
KERNEL_PATCH = HEADER.format(desc="add a kernel") + textwrap.dedent("""\
    --- /dev/null
    +++ b/vllm/kernels/new_kernel.py
    @@ -0,0 +1,2 @@
    +def kernel():
    +    return 1
    """)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


@dataclass
class Home:
    root: Path
    pristine: dict[str, dict[str, bytes]] = field(default_factory=dict)  # version -> path -> bytes

    def tree(self, version: str, dest: Path | None = None, files: dict[str, bytes] | None = None) -> Path:
        """A site-packages-like tree of `version` with its pristine files (or `files`)."""
        dest = dest or self.root.parent / f"site-{version}"
        files = self.pristine.get(version, {}) if files is None else files
        info = dest / f"vllm-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
        (dest / "vllm").mkdir(exist_ok=True)
        (dest / "vllm" / "__init__.py").write_text("")
        rows = []
        for rel, data in files.items():
            p = dest / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            rows.append(record_line(rel, data))
        (info / "RECORD").write_text("\n".join(rows) + "\n")
        return dest


def build_home(root: Path) -> Home:
    """Releases: 0.19.1 (nothing backported), 0.20.0 (series s1: fix + kernel), 0.21.0 (fix
    upstream already; series s2 carries the same patches), unpublished 0.19.2."""
    home = Home(root)
    series = {
        "s1": {"series": b"0001-fix-thing.patch\n0002-add-kernel.patch\n",
               "0001-fix-thing.patch": FIX.encode(), "0002-add-kernel.patch": KERNEL_PATCH.encode()},
        "s2": {"series": b"0001-fix-thing.patch\n", "0001-fix-thing.patch": FIX.encode()},
    }
    home.pristine = {
        "0.19.1": {"vllm/mod.py": MOD},
        "0.20.0": {"vllm/mod.py": MOD},
        "0.21.0": {"vllm/mod.py": MOD_FIXED},
    }
    for name, files in series.items():
        d = root / "backports" / name
        d.mkdir(parents=True)
        for fname, data in files.items():
            (d / fname).write_bytes(data)

    def release(v: str, series_name: str) -> str:
        # backports and upstream are derived: from the series file and from upstream_in
        lines = [f'[releases."{v}"]', 'torch = "2.11.0"', "cuda = 13", f'wheel = "vllm-{v}-x86_64.whl"',
                 'wheel_sha256 = "00"', 'record_sha256 = "00"', f'series = "{series_name}"',
                 *(['bugs = ["fix-thing"]'] if not series_name else [])]
        if series_name:
            lines += [f'[releases."{v}".files]', f'"vllm/mod.py" = "{sha(home.pristine[v]["vllm/mod.py"])}"']
        return "\n".join(lines) + "\n"

    parts = [
        "schema = 1\n",
        '[backports.fix-thing]\ntitle = "fix line 10"\nbug = "https://github.com/vllm-project/vllm/issues/1"\n'
        'upstream_in = "0.21.0"\n',
        '[backports.add-kernel]\ntitle = "a new kernel"\nbug = "https://github.com/vllm-project/vllm/issues/2"\n',
        '[known.lost-count]\ntitle = "a count read from a moved row"\n'
        'bug = "https://github.com/vllm-project/vllm/issues/3"\npresent = "<0.20.0"\nstatus = "not reproduced"\n'
        'evidence = "one run, clean"\nchecked = "2026-11-25"\n',
        '[unpublished."0.19.2"]\ndev_prefix = "0.19.2"\n'
        'message = "vLLM 0.19.2 was never published; use --vllm auto on a nightly, or 0.19.1 / 0.20.0"\n',
        release("0.19.1", ""),
        release("0.20.0", "s1"),
        release("0.21.0", "s2"),
    ]
    for name, files in series.items():
        parts.append(f'[series."{name}".files]\n' + "".join(f'"{f}" = "{sha(d)}"\n' for f, d in files.items()))
    (root / "versions.toml").write_text("\n".join(parts))
    return home


@pytest.fixture
def home(tmp_path, monkeypatch) -> Home:
    h = build_home(tmp_path / "home")
    monkeypatch.setattr("vllm_backports.cli.HOME", h.root)
    monkeypatch.setenv("VLLM_BACKPORTS_CACHE", str(tmp_path / "cache"))
    return h


@pytest.fixture(autouse=True)
def _no_network(request, monkeypatch):
    """Unit tests must not reach the network; release tests opt in with @pytest.mark.network."""
    if request.node.get_closest_marker("network"):
        return

    def refuse(*args, **kwargs):
        raise OSError("network access in a unit test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
