"""One vLLM module of the installed release in three versions, loaded beside the installed
original so that its imports resolve there: as released, with the release's series up to
turboquant-prefill-fastpath (vLLM #46460), and with the same series through that fix.
Read from the installed file, which must be the release's pristine one (`not_pristine` decides
what then happens: a skip, or a failure)."""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable
from pathlib import Path

from vllm_backports.hunks import Mismatch, apply_file

FIX = "turboquant-prefill-fastpath"
# released: the pristine file; series: the shipped series up to FIX (what its users ran before FIX
# shipped); candidate: the same with FIX. Later backports are written on FIX's lines and left out
# of both (turboquant-decode-workspace on 0.21 .. 0.23).
SIDES = ("released", "series", "candidate")


def source(path: str, side: str, catalogue, release, not_pristine: Callable[[str], object]) -> bytes:
    package = Path(importlib.util.find_spec("vllm").submodule_search_locations[0])
    content = (package / path.removeprefix("vllm/")).read_bytes()
    if hashlib.sha256(content).hexdigest() != release.files[path]:
        not_pristine(path)
    shipped = list(catalogue.series(release.series).patches)
    at = [p.backport_id for p in shipped].index(FIX)
    patches = {"released": [], "series": shipped[:at], "candidate": shipped[: at + 1]}[side]
    for patch in patches:
        for fpatch in patch.files:
            if fpatch.path == path:
                content = apply_file(content, fpatch)
                assert not isinstance(content, Mismatch), content
    return content


def load(tmp: Path, path: str, side: str, catalogue, release, not_pristine: Callable[[str], object]):
    stem = f"{Path(path).stem}_fastpath_{side}"
    (tmp / f"{stem}.py").write_bytes(source(path, side, catalogue, release, not_pristine))
    package = ".".join(Path(path).with_suffix("").parts[:-1])
    spec = importlib.util.spec_from_file_location(f"{package}.{stem}", tmp / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
