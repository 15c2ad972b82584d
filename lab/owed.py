"""What the GPU still owes: each release's core proofs (lab.proofs.core) that no evidence file of
today's series shows, as `lab plan` lines, one a machine.

A proof counts as made once a file of it recorded today's patches (evidence.CURRENT), whatever
its verdict: running a weak or not-exercised scenario again on the same bytes shows nothing new.
Releases whose patched files are byte-identical (Catalogue.twins) are proven once, on the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from vllm_backports.catalogue import Catalogue
from vllm_backports.evidence import CURRENT
from vllm_backports.maint.generated import judged_evidence

from .machine import SLOTS
from .proofs import core
from .stage import MACHINE_CUDA, MACHINE_TORCH

# A plan's device time, at the upper end of the H100 runs of 2026-12-06 (records/runs/2026-12-06-h100-lab-*):
# a part put took 3.3 to 4.5 s held, 7 s a part where a slow machine start (206 s) spreads over 30
# parts; an install and its sites 11 to 23 s there, 34 to 55 s for releases with their own torch
# (H200, 2026-11-29); with Triton's cache shared by every proof, the first wave of 8 verifies
# (every engine building the FLA kernels) 4.5 to 6.2 min, each later one 2.1 to 4.0 min. The
# H200 runs of 2026-11-29 were slower (5.4 to 7.7 and 3.8 to 6.3 min): there a full plan may
# leave its last wave unfinished, and collect brings back what ended.
PUT_S, INSTALL_S, COLD_WAVE_S, WAVE_S = 7, 55, 6.5 * 60, 4.5 * 60
ESTIMATED_BY = "the H100 runs of 2026-12-06"
MACHINE_S = 30 * 60  # a machine is given back after 30 minutes held
ROOM_S = 28 * 60  # what `owed` fills a machine to: the last `collect` must come back before that
# Parts (of about 51 MiB) before anything is staged: 27 for four releases of the machine's torch
# (FlashInfer's set among them); 62 for three releases on torch 2.13 and 2.14; 88 for 0.19.0 with
# torch 2.10 and its CUDA 12 libraries.
RELEASE_PARTS, TORCH_PARTS, CUDA12_PARTS = 7, 20, 81


def estimate(n_parts: int, proofs: dict[str, int]) -> int:
    """Seconds of device time a plan of `n_parts` parts and `proofs` (per release) takes, the
    machine's start included. Benchmarks are not counted."""
    waves = -(-sum(proofs.values()) // SLOTS)
    return round(n_parts * PUT_S + len(proofs) * INSTALL_S + (COLD_WAVE_S + (waves - 1) * WAVE_S if waves else 0))


@dataclass(frozen=True)
class Owed:
    release: str
    torch: str
    own_cuda: bool  # its torch brings CUDA libraries the machine's image lacks
    proofs: tuple[str, ...]


def owed(root: Path, cat: Catalogue | None = None) -> list[Owed]:
    """Per release still short of a proof of today's series, the core proofs it lacks."""
    cat = cat or Catalogue(root)
    evidence = judged_evidence(root, cat)
    out, seen = [], set()
    for version in cat.versions:
        release = cat.releases[version]
        if not release.series or version in seen:
            continue
        seen.update(cat.twins(version))
        made = {s.name for s in evidence.get(version, ()) if s.digest == CURRENT}
        due = tuple(p for p in core(cat, version) if p not in made)
        if due:
            out.append(Owed(version, release.torch, release.cuda != MACHINE_CUDA, due))
    return out


def machines(due: list[Owed]) -> list[list[Owed]]:
    """`due` cut into machines by `estimate`: releases by torch, newest first, then by version, each
    into the first machine it fits (a torch stack is put once a machine, whichever releases share
    it); a release that fits no machine alone takes one of its own."""
    by_version = sorted(due, key=lambda o: Version(o.release))
    order = sorted(by_version, key=lambda o: Version(o.torch), reverse=True)  # stable: versions stay in order
    out: list[list[Owed]] = []
    for o in order:
        host = next((m for m in out if fits([*m, o])), None)
        if host is None:
            out.append([o])
        else:
            host.append(o)
    return out


def parts_of(machine: list[Owed]) -> int:
    """The parts a machine's releases take before staging, each torch stack other than the
    machine's once."""
    stacks = {(o.torch, o.own_cuda) for o in machine if o.torch != MACHINE_TORCH or o.own_cuda}
    return len(machine) * RELEASE_PARTS + sum(CUDA12_PARTS if own_cuda else TORCH_PARTS for _, own_cuda in stacks)


def fits(machine: list[Owed]) -> bool:
    return estimate(parts_of(machine), {o.release: len(o.proofs) for o in machine}) <= ROOM_S


def plan_line(machine: list[Owed]) -> str:
    return "python -m lab plan " + " ".join(f"{o.release}:{','.join(o.proofs)}" for o in machine)
