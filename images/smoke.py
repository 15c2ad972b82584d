"""Build-time smoke test of an image: every backport versions.toml promises for this release is
recorded as applied, every patched file is as written, and (in the image) vllm and every module
the series patches import.

    python3 images/smoke.py --vllm 0.20.0 --status status.json [--import-vllm]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vllm_backports.catalogue import Catalogue  # noqa: E402
from vllm_backports.resolve import local_build_of  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vllm", required=True)
    parser.add_argument("--status", type=Path, required=True)
    parser.add_argument("--import-vllm", action="store_true")
    args = parser.parse_args()
    cat = Catalogue(Path(__file__).resolve().parent.parent)
    release = cat.releases[args.vllm]

    def is_release(version: str | None) -> bool:
        # A -cu129 base image installs a local build, 0.20.0+cu129: the same release.
        return version == args.vllm or (version is not None and local_build_of(cat, version) == args.vllm)

    status = json.loads(args.status.read_text())
    problems = []
    if not is_release(status.get("vllm")):
        problems.append(f"status is for vLLM {status.get('vllm')}, not {args.vllm}")
    applied = {a["id"] for a in status.get("applied", [])}
    problems += [f"backport {b} is not applied" for b in release.backports if b not in applied]
    if not status.get("consistent"):
        problems.append("status is not consistent: " + json.dumps(status.get("files")))
    if args.import_vllm:
        import importlib.metadata

        import vllm  # noqa: F401  (importing is the test)

        if not is_release(importlib.metadata.version("vllm")):
            problems.append(f"vllm {importlib.metadata.version('vllm')} imported, not {args.vllm}")
        # `import vllm` loads none of the patched modules: a patch that breaks one must fail here.
        patched = cat.series(release.series).paths if release.series else ()
        for path in sorted(p for p in patched if p.endswith(".py")):
            name = path.removesuffix(".py").replace("/", ".")
            try:
                importlib.import_module(name)
            except Exception as exc:  # any failure to import is the finding
                problems.append(f"{name} does not import: {exc.__class__.__name__}: {exc}")
    for p in problems:
        print(f"smoke: {p}", file=sys.stderr)
    if not problems:
        print(f"smoke: vLLM {args.vllm} carries {', '.join(sorted(applied)) or 'no backports'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
