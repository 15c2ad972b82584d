"""Whether a FlashInfer JIT module built under one flashinfer-python pin is the build another pin
would make, so that one artifact serves both: the same build.ninja once each install's own paths
are mapped onto the other's, and the same bytes in every file the compiler read from inside the
install (the headers ninja recorded for every object, and the generated sources).

    python3 fi_same_build.py REF_BUILD_DIR NEW_BUILD_DIR OLD=NEW [OLD=NEW ...]

REF_BUILD_DIR holds the finished build (build.ninja, .ninja_deps); NEW_BUILD_DIR the other pin's
build.ninja, written but not built (JitSpec.write_ninja()). Each OLD=NEW maps a path prefix of the
reference onto the other install (its venv, its workspace). Files outside every mapped prefix (the
CUDA toolkit, the system, Python's headers) are the same files for both and are not compared.
Exit 0 when the builds are the same, 1 with the differences otherwise, 2 on bad input.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path


def ninja_deps(build_dir: Path) -> list[str]:
    """Every file that ninja recorded as read for some output of the build in `build_dir`."""
    out = subprocess.run(["ninja", "-t", "deps"], cwd=build_dir, capture_output=True, text=True, check=True).stdout
    # `ninja -t deps` prints each output's line, then its inputs indented by four spaces
    return sorted({line.strip() for line in out.splitlines() if line.startswith("    ") and line.strip()})


def remap(text: str, mapping: list[tuple[str, str]]) -> str:
    """`text` with each OLD replaced by its NEW in one pass (a replacement is never mapped again),
    the longest OLD first where two start at one place."""
    table = dict(mapping)
    pattern = "|".join(re.escape(old) for old in sorted(table, key=len, reverse=True))
    return re.sub(pattern, lambda m: table[m.group(0)], text) if table else text


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def differences(ref_dir: Path, new_dir: Path, mapping: list[tuple[str, str]], deps: list[str]) -> tuple[list[str], int]:
    """What differs between the reference build and the other pin's, and how many inputs were compared."""
    found = []
    ref_ninja = remap((ref_dir / "build.ninja").read_text(), mapping)
    new_ninja = (new_dir / "build.ninja").read_text()
    if ref_ninja != new_ninja:
        ref_lines, new_lines = ref_ninja.splitlines(), new_ninja.splitlines()
        changed = [n for n, (a, b) in enumerate(zip(ref_lines, new_lines, strict=False)) if a != b]
        where = f"line {changed[0] + 1}" if changed else f"{len(ref_lines)} against {len(new_lines)} lines"
        found.append(f"build.ninja differs ({where})")
    compared = 0
    for dep in deps:
        # a depfile may name a path relative to the build directory (ninja runs there)
        dep = dep if Path(dep).is_absolute() else str(ref_dir / dep)
        mapped = remap(dep, mapping)
        if mapped == dep:
            continue  # outside both installs: the same file for either build
        compared += 1
        ref, new = digest(Path(dep)), digest(Path(mapped))
        if ref is None:
            found.append(f"{dep}: gone from the reference build")
        elif ref != new:
            found.append(f"{mapped}: {'missing' if new is None else 'differs'}")
    return found, compared


def main(argv: list[str]) -> int:
    if len(argv) < 3 or not all("=" in m for m in argv[2:]):
        print("usage: fi_same_build.py REF_BUILD_DIR NEW_BUILD_DIR OLD=NEW [OLD=NEW ...]", file=sys.stderr)
        return 2
    ref_dir, new_dir = Path(argv[0]), Path(argv[1])
    for d in (ref_dir, new_dir):
        if not (d / "build.ninja").is_file():
            print(f"no build.ninja under {d}", file=sys.stderr)
            return 2
    mapping = [(m.split("=", 1)[0], m.split("=", 1)[1]) for m in argv[2:]]
    try:
        deps = ninja_deps(ref_dir)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"ninja -t deps under {ref_dir} failed: {e}", file=sys.stderr)
        return 2
    if not deps:
        print(f"ninja recorded no inputs under {ref_dir}: is the reference built?", file=sys.stderr)
        return 2
    found, compared = differences(ref_dir, new_dir, mapping, deps)
    for line in found:
        print(line)
    print(f"{'same build' if not found else 'different build'}: build.ninja and {compared} inputs compared")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
