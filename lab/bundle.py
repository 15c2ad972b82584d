"""A release's stage as the runbook (lab/runbook/) takes it: `.stage-REL/pN/part.N`, a tar of the
stage's wheels cut into parts of at most `part_mb` MiB (one call's carry each, beside the working
tree), and `.stage-REL/install.sh`, which the runbook's `chain` runs on the GPU machine after
`lab.steps put pN` has copied every part to $HOME/vllm-stage: it joins the parts, checks the tar's
sha256, installs every wheel into $HOME/vllm-site and prints the vLLM it imports.

The tar holds the wheels as lab.stage keeps them: the release's own wheel verbatim (so vLLM's
FlashAttention 2 library, vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so, comes with it) and the
dependency wheels the GPU image lacks.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

from . import stage

MIB = 1 << 20


class _Parts:
    """A write-only file that cuts what is written into out/p0/part.0, out/p1/part.1, ... of at
    most `limit` bytes each, hashing the whole as it goes."""

    def __init__(self, out: Path, limit: int):
        self.out, self.limit = out, limit
        self.sha = hashlib.sha256()
        self.paths: list[Path] = []
        self.room = 0
        self.file = None

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        view = memoryview(data)
        while view:
            if self.room == 0:
                self._next()
            take = min(self.room, len(view))
            self.file.write(view[:take])
            self.room -= take
            view = view[take:]
        return len(data)

    def _next(self) -> None:
        if self.file:
            self.file.close()
        n = len(self.paths)
        (self.out / f"p{n}").mkdir(parents=True)
        self.paths.append(self.out / f"p{n}" / f"part.{n}")
        self.file = open(self.paths[-1], "wb")  # noqa: SIM115  (closed by _next and close)
        self.room = self.limit

    def close(self) -> None:
        if self.file:
            self.file.close()
            self.file = None


INSTALL = """#!/usr/bin/env bash
# vLLM {release}'s wheels for $HOME/vllm-site, from `python -m lab bundle {release}`: the parts
# `lab.steps put` copied to $HOME/vllm-stage, joined and checked, then installed without network.
set -euo pipefail
release={release}
stage=$HOME/vllm-stage
parts=({parts})
sha={sha}
for p in "${{parts[@]}}"; do
  [ -f "$stage/$p" ] || {{
    echo "install: $stage/$p missing: put every part of .stage-$release first (${{#parts[@]}} parts)" >&2
    exit 1
  }}
done
work=$(mktemp -d "$HOME/vllm-wheels.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$stage" && cat "${{parts[@]}}") > "$work/wheels.tar"
got=$(sha256sum "$work/wheels.tar" | cut -d' ' -f1)
[ "$got" = "$sha" ] || {{
  echo "install: the joined parts hash to $got, not the bundle's $sha: put them again" >&2
  exit 1
}}
mkdir -p "$work/w" && tar -xf "$work/wheels.tar" -C "$work/w" && rm -f "$work/wheels.tar"
rm -rf "$HOME/vllm-site"
python3 -m pip install -q --no-index --no-deps --no-compile --target "$HOME/vllm-site" "$work"/w/*.whl
PYTHONPATH=$HOME/vllm-site python3 -c 'import vllm; print("vllm", vllm.__version__, "from", vllm.__file__)'
"""


def bundle(release: str, root: Path, part_mb: int = 50, log: Callable[[str], None] = print) -> Path:
    """Write `root`/.stage-`release` from the release's lab stage; returns that folder."""
    if part_mb < 1:
        raise ValueError("a part holds at least 1 MiB")
    found = stage.stage(release, root, log)
    store = stage.cache() / "store"
    missing = [b.name for b in found.blobs if not (store / b.sha256).is_file()]
    if missing:
        raise SystemExit(f"bundle: the lab's store lacks {', '.join(missing)}: stage {release} again")
    out = root / f".stage-{release}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    sink = _Parts(out, part_mb * MIB)
    try:
        with tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for blob in found.blobs:
                tar.add(store / blob.sha256, arcname=blob.name, recursive=False)
    finally:
        sink.close()
    names = " ".join(p.name for p in sink.paths)
    text = INSTALL.format(release=shlex.quote(release), parts=names, sha=sink.sha.hexdigest())
    (out / "install.sh").write_text(text)
    size = sum(p.stat().st_size for p in sink.paths)
    log(f"{release}: {len(found.blobs)} wheels, {size / MIB:.1f} MiB in {len(sink.paths)} parts under {out.name}/")
    return out
