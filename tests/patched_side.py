"""One vLLM module of the installed release in three versions, loaded beside the installed
original so that its imports resolve there: as released, with the release's series, and with
the series and a candidate patch on top. Read from the installed file, which must be the
release's pristine one (`not_pristine` decides what then happens: a skip, or a failure)."""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable
from pathlib import Path

from vllm_backports.hunks import Mismatch, apply_file
from vllm_backports.patchfile import parse

SIDES = ("released", "series", "candidate")


def source(path: str, side: str, catalogue, release, candidate: Path, not_pristine: Callable[[str], object]) -> bytes:
    package = Path(importlib.util.find_spec("vllm").submodule_search_locations[0])
    content = (package / path.removeprefix("vllm/")).read_bytes()
    if hashlib.sha256(content).hexdigest() != release.files[path]:
        not_pristine(path)
    patches = [] if side == "released" else list(catalogue.series(release.series).patches)
    if side == "candidate":
        patches.append(parse(candidate.read_bytes(), candidate.name))
    for patch in patches:
        for fpatch in patch.files:
            if fpatch.path == path:
                content = apply_file(content, fpatch)
                assert not isinstance(content, Mismatch), content
    return content


def load(tmp: Path, path: str, side: str, catalogue, release, candidate: Path, not_pristine: Callable[[str], object]):
    stem = f"{Path(path).stem}_fastpath_{side}"
    (tmp / f"{stem}.py").write_bytes(source(path, side, catalogue, release, candidate, not_pristine))
    package = ".".join(Path(path).with_suffix("").parts[:-1])
    spec = importlib.util.spec_from_file_location(f"{package}.{stem}", tmp / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
