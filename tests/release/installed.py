"""One module of the installed vLLM release, pristine or with its series' hunks applied, loaded
from a temporary file so both can live in one process. Its `from vllm...` imports resolve to the
installed release: for builder tests that run on the CPU (no kernels), in a venv with vLLM.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

from vllm_backports.catalogue import Release
from vllm_backports.hunks import Mismatch, apply_file

from .conftest import CATALOGUE


def load(tmp_path: Path, release: Release, path: str, patched: bool, required: bool):
    import vllm

    package = Path(importlib.util.find_spec("vllm").submodule_search_locations[0])
    content = (package / path.removeprefix("vllm/")).read_bytes()
    if hashlib.sha256(content).hexdigest() != release.files[path]:
        message = f"the installed {path} is not vLLM {vllm.__version__}'s pristine file"
        if required:
            raise AssertionError(message)
        pytest.skip(message)
    if patched:
        for patch in CATALOGUE.series(release.series).patches:
            for fpatch in patch.files:
                if fpatch.path == path:
                    content = apply_file(content, fpatch)
                    assert not isinstance(content, Mismatch), content
    stem = f"{Path(path).stem}_{'patched' if patched else 'pristine'}"
    target = tmp_path / f"{stem}.py"
    target.write_bytes(content)
    spec = importlib.util.spec_from_file_location(stem, target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
