"""Import a Python file that an alternative's patch creates, straight from the patch, so that what is
tested and timed is byte for byte what the patch would install."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from vllm_backports.patchfile import parse

HERE = Path(__file__).resolve().parent
MIGRATE_PATCH = HERE / "gdn-state-migrate" / "0.20.0" / "0002-gdn-state-migrate.patch"


def load_created(patch_path: Path, path: str, scratch: Path) -> ModuleType:
    patch = parse(patch_path.read_bytes(), patch_path.name)
    (created,) = [f for f in patch.files if f.creates and f.path == path]
    out = scratch / Path(path).name
    out.write_bytes(b"".join(created.hunks[0].new))
    spec = importlib.util.spec_from_file_location(out.stem, out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def migrate_kernel(scratch: Path):
    return load_created(MIGRATE_PATCH, "vllm/model_executor/layers/mamba/ops/gdn_state_migrate.py",
                        scratch).migrate_gdn_state
