"""Stage a vLLM release for a GPU machine that has no network: the release's own wheel from PyPI,
byte for byte (its sha256 is versions.toml's `wheel_sha256`), and the wheels of the dependencies
the machine's image lacks, resolved for CPython 3.12 on x86_64 Linux.

A stage is a list of blobs (each a wheel, kept once by its sha256 in the lab's store) written as
`<store>/../stages/<release>.json`. Releases share their dependencies' blobs, so staging several
for one machine carries each wheel once (lab.parts packs them for the transport). A plan with a
FlashInfer proof adds the release's FlashInfer set (`flashinfer`), kept apart from its own wheels:
lab.machine installs it into a site of its own, which only FlashInfer proofs put on their path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from vllm_backports.catalogue import Catalogue
from vllm_backports.digest import sha256_file

HERE = Path(__file__).resolve().parent
IMAGE = HERE / "data" / "gpu-image.txt"
MACHINE_TORCH = "2.11.0"  # the GPU machine's own torch (cu130): releases pinning it use the image's
MACHINE_CUDA = 13  # the CUDA major of the image's libraries
# Dropped whatever the image holds: CUDA's libraries come with the image's torch (the same CUDA 13
# major), FlashInfer is staged on its own where a proof runs it, and vLLM comes as its own wheel.
DROP_PREFIXES = ("nvidia-", "cuda-", "flashinfer")
# Optional at import and never run by verify's tiny models; heavy (z3-solver alone is ~30 MiB).
DROP = {"vllm", "tilelang", "quack-kernels", "z3-solver", "fastsafetensors"}
TORCH_STACK = {"torch", "triton", "torchvision", "torchaudio"}
MACHINE_TRITON = "3.6.0"  # the image's, the same PyPI wheel whichever torch pins it (no CUDA of torch's inside)
PACK_MIB = 16  # dependency wheels this large travel `parts.repack`ed (xz)
# pip's tags for CPython 3.12 on the machine (glibc 2.35): every glibc a wheel may name up to the
# machine's, since wheels pick odd ones (nvidia-nccl-cu13 2.30.7 is manylinux_2_18 only).
GLIBC_MINOR = 35
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in range(GLIBC_MINOR, 4, -1)] + [
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
    "any",
]


@dataclass(frozen=True)
class Blob:
    name: str  # the wheel's file name, as pip needs it to install
    sha256: str
    size: int
    role: str  # "vllm": the release's wheel; "wheel": a dependency; "flashinfer", "fi-aot": FlashInfer's
    packed_from: str = ""  # the sha256 of the wheel this blob `parts.repack`s, if it is one


@dataclass(frozen=True)
class Stage:
    release: str
    torch: str
    blobs: tuple[Blob, ...]
    flashinfer: tuple[Blob, ...] = ()  # FlashInfer's wheels and pre-built modules, apart from the release's

    def to_json(self) -> dict:
        out = {"release": self.release, "torch": self.torch, "blobs": [asdict(b) for b in self.blobs]}
        return out | ({"flashinfer": [asdict(b) for b in self.flashinfer]} if self.flashinfer else {})

    @classmethod
    def from_json(cls, data: dict) -> Stage:
        fi = tuple(Blob(**b) for b in data.get("flashinfer", ()))
        return cls(data["release"], data["torch"], tuple(Blob(**b) for b in data["blobs"]), fi)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n")


def cache() -> Path:
    return Path(os.environ.get("VLLM_BACKPORTS_LAB_CACHE", "~/.cache/vllm-backports-lab")).expanduser()


def image_packages(path: Path = IMAGE) -> set[str]:
    return {canonical(line) for line in path.read_text().split("\n") if line and not line.startswith("#")}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def parse_pins(text: str) -> dict[str, str]:
    """`name==version` lines (uv pip compile's output) as {canonical name: version}."""
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or ";" in version:
            raise ValueError(f"not a pin: {line!r}")
        pins[canonical(name)] = version.strip()
    return pins


def is_image_triton(name: str, version: str) -> bool:
    return name == "triton" and version == MACHINE_TRITON


def wheel_pin(filename: str) -> tuple[str, str]:
    """A wheel file's (canonical name, version)."""
    name, version = filename.split("-")[:2]
    return canonical(name), version


def needed(pins: dict[str, str], image: set[str], cuda: int = MACHINE_CUDA) -> dict[str, str]:
    """The pins the machine lacks. A release on the machine's torch uses the image's whole stack;
    one pinning another torch brings torch, triton (but the image's own version), torchvision
    and torchaudio as its pins say (the image's CUDA 13 libraries serve them), and NCCL, whose
    image build lacks symbols newer torch calls (ncclCommResume, seen with 2.13.0 on 2026-11-23).
    A release built for another CUDA major (0.17 .. 0.19: torch 2.10.0 on CUDA 12) brings every
    CUDA library its pins name: the image's are CUDA 13's, and which of its own a run never opens
    only a run can tell."""
    own_torch = pins.get("torch") not in (None, MACHINE_TORCH)
    own_cuda = cuda != MACHINE_CUDA
    out = {}
    for name, version in pins.items():
        cuda_lib = name.startswith(("nvidia-", "cuda-")) if own_cuda else name == "nvidia-nccl-cu13"
        if is_image_triton(name, version):
            continue
        if (own_torch or own_cuda) and (name in TORCH_STACK or cuda_lib):
            out[name] = version
        elif name in DROP or name.startswith(DROP_PREFIXES) or name in image:
            continue
        else:
            out[name] = version
    return out


def _tool(name: str) -> Path:
    """A command of the lab's own virtual environment (uv resolves for another platform; pip does
    not without installing)."""
    venv = cache() / "venv"
    exe = venv / "bin" / name
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "uv"], check=True)
    return exe


def resolve(release: str, run: Callable = subprocess.run) -> dict[str, str]:
    """vLLM `release` and everything it needs, pinned for CPython 3.12 on manylinux x86_64."""
    work = cache() / "resolve"
    work.mkdir(parents=True, exist_ok=True)
    req = work / f"{release}.in"
    req.write_text(f"vllm=={release}\n")
    out = work / f"{release}.txt"
    cmd = [str(_tool("uv")), "pip", "compile", str(req), "--python-version", "3.12"]
    cmd += ["--python-platform", "x86_64-manylinux_2_28", "--no-header", "--no-annotate", "-q", "-o", str(out)]
    run(cmd, check=True)
    return parse_pins(out.read_text())


def _linked(src: Path, dest: Path) -> bool:
    try:
        os.link(src, dest)
    except OSError:  # another disk, or links refused
        return False
    return True


def into_store(path: Path, role: str) -> Blob:
    digest = sha256_file(path)
    store = cache() / "store"
    store.mkdir(parents=True, exist_ok=True)
    if not (store / digest).exists():
        tmp = store / f"{digest}.tmp"
        tmp.unlink(missing_ok=True)
        # a download (never written again) is linked, not copied: a CUDA 12 stage is 4 GiB;
        # anything else is copied (flashinfer-jit rebuilds its archives in place)
        if not (path.parent == cache() / "wheels" and _linked(path, tmp)):
            shutil.copyfile(path, tmp)
        os.replace(tmp, store / digest)
    return Blob(path.name, digest, path.stat().st_size, role)


def download(pins: dict[str, str], dest: Path, run: Callable = subprocess.run) -> list[Path]:
    """The wheels of `pins` for the machine's Python, without their dependencies (resolved already)."""
    dest.mkdir(parents=True, exist_ok=True)
    if not pins:
        return []
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(dest)]
    cmd += ["--python-version", "3.12", "--implementation", "cp", "--abi", "cp312", "--abi", "abi3", "--abi", "none"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    run(cmd + [f"{name}=={version}" for name, version in sorted(pins.items())], check=True)
    found = {}
    for wheel in dest.glob("*.whl"):
        name, version = wheel_pin(wheel.name)
        if name in pins and version == pins[name]:
            found[name] = wheel
    missing = sorted(set(pins) - set(found))
    if missing:
        raise SystemExit(f"stage: no wheel downloaded for {', '.join(missing)}")
    return [found[name] for name in sorted(found)]


def vllm_wheel(release: str, home: Path) -> Path:
    """The release's wheel exactly as versions.toml pins it (file name and sha256), from PyPI."""
    import requests

    from vllm_backports import pypi
    from vllm_backports.pypi import WheelInfo

    entry = Catalogue(home).releases[release]
    dest = cache() / "wheels" / entry.wheel
    if dest.is_file() and sha256_file(dest) == entry.wheel_sha256:
        return dest
    with requests.Session() as session:
        files = {w.filename: w for w in pypi.release_files(session, release)}
        if entry.wheel not in files:
            raise SystemExit(f"stage: PyPI lists no {entry.wheel}")
        info = files[entry.wheel]
        if info.sha256 != entry.wheel_sha256:
            raise SystemExit(f"stage: {entry.wheel}: PyPI's sha256 is not versions.toml's")
        return pypi.download(session, WheelInfo(info.filename, info.url, info.sha256, info.size), dest)


def stage(release: str, home: Path, log: Callable[[str], None] = print) -> Stage:
    """Stage `release` (cached: a stage already written is read back)."""
    path = cache() / "stages" / f"{release}.json"
    if path.is_file():
        found = Stage.from_json(json.loads(path.read_text()))
        if all((cache() / "store" / b.sha256).is_file() for b in found.blobs):
            # stages written before the image's triton was left out (`needed`) still carry it
            return replace(found, blobs=tuple(b for b in found.blobs if not is_image_triton(*wheel_pin(b.name))))
    catalogue = Catalogue(home)
    if release not in catalogue.releases:
        raise SystemExit(f"stage: vLLM {release} is not in versions.toml")
    log(f"{release}: resolving")
    pins = resolve(release)
    torch = pins.get("torch", "")
    if torch != catalogue.releases[release].torch:
        raise SystemExit(
            f"stage: vLLM {release} resolves torch {torch}, versions.toml says {catalogue.releases[release].torch}"
        )
    wanted = needed(pins, image_packages(), catalogue.releases[release].cuda)
    log(f"{release}: torch {torch}; {len(wanted)} dependency wheels the machine lacks")
    wheels = download(wanted, cache() / "wheels")
    blobs = [into_store(vllm_wheel(release, home), "vllm")] + [into_store(w, "wheel") for w in wheels]
    found = Stage(release, torch, tuple(blobs))
    found.write(path)
    log(f"{release}: staged, {sum(b.size for b in blobs) >> 20} MiB in {len(blobs)} wheels")
    return found


def packed(found: Stage, log: Callable[[str], None] = print) -> Stage:
    """`found` with each wheel of the release's dependencies of PACK_MIB or more replaced by its
    `parts.repack`, made once and kept in the store. Slow: Python's lzma, one wheel a core (the
    first 0.8 GiB of the CUDA 12 stack took about 20 minutes on two busy cores). The release's
    own wheel travels as PyPI has it, byte for byte; FlashInfer's set as it is."""
    from .parts import repack, scratch

    store, index = cache() / "store", cache() / "packed"
    index.mkdir(parents=True, exist_ok=True)

    def made(b: Blob) -> Blob | None:
        try:
            blob = Blob(**json.loads((index / f"{b.sha256}.json").read_text()))
        except (OSError, ValueError, TypeError):  # none yet, or cut short: made again
            return None
        return blob if (store / blob.sha256).is_file() else None

    def make(b: Blob) -> Blob:
        log(f"{found.release}: xz {b.name} ({b.size >> 20} MiB)")
        tmp = scratch(store, ".xz.tmp")
        try:
            repack(store / b.sha256, tmp)
            digest = sha256_file(tmp)
            os.replace(tmp, store / digest)  # xz is deterministic: two plans at once make one blob
        finally:
            tmp.unlink(missing_ok=True)
        blob = Blob(b.name, digest, (store / digest).stat().st_size, b.role, b.sha256)
        entry = scratch(index, ".tmp")
        entry.write_text(json.dumps(asdict(blob)) + "\n")
        os.replace(entry, index / f"{b.sha256}.json")
        return blob

    big = [b for b in found.blobs if b.role == "wheel" and b.size >= PACK_MIB << 20]
    have = {b.sha256: made(b) for b in big}
    todo = [b for b in big if have[b.sha256] is None]
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:  # lzma lets go of the GIL while it compresses
        have |= dict(zip((b.sha256 for b in todo), pool.map(make, todo), strict=True))
    return replace(found, blobs=tuple(have.get(b.sha256) or b for b in found.blobs))


def flashinfer(pins: dict[str, str], archives: list[Path], run: Callable = subprocess.run) -> tuple[Blob, ...]:
    """A release's FlashInfer set (lab.flashinfer.lab_set picks it) as blobs: its wheels, downloaded
    as the release's are, and the modules `python -m lab flashinfer-jit` pre-built."""
    wheels = download(pins, cache() / "wheels", run)
    return tuple(into_store(w, "flashinfer") for w in wheels) + tuple(into_store(a, "fi-aot") for a in archives)
