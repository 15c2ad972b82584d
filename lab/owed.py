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
from .stage import MACHINE_CUDA

# What one 30-minute machine holds, in proofs: the machine runs SLOTS (8) at a time, a
# wave of them took 8 to 11 minutes on an H200 (2026-11-29, records/runs/), and about 19 parts of a
# torch 2.11 stage took 2.5 minutes to put: two waves. A release with a CUDA stack of its own
# (0.17 .. 0.19: about 100 parts, 10 minutes to put) leaves room for one. Three releases on two
# torch stacks of CUDA 13 (0.27.0, 0.32.0, 0.33.0: 62 parts, 384 s with the machine's start) left
# room for about one wave and a half.
WAVES = 2
WAVES_OWN_CUDA = 1


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
    """`due` cut into machines: releases of one torch together (their stage is shared), newest
    torch first, each machine filled up to its proofs in version order; a release with more
    proofs than a machine holds takes one alone."""
    groups: dict[str, list[Owed]] = {}
    for o in due:
        groups.setdefault(o.torch, []).append(o)
    out: list[list[Owed]] = []
    for torch in sorted(groups, key=Version, reverse=True):
        current: list[Owed] = []
        for o in groups[torch]:
            room = SLOTS * (WAVES_OWN_CUDA if o.own_cuda else WAVES)
            if current and sum(len(c.proofs) for c in current) + len(o.proofs) > room:
                out.append(current)
                current = []
            current.append(o)
        if current:
            out.append(current)
    return _pair_small(out)


def _pair_small(cut: list[list[Owed]]) -> list[list[Owed]]:
    """Machines of one wave at most, of the machine's CUDA, shared whatever their torch (two at
    most): a second torch stack costs a few minutes of parts, a machine of its own 30."""
    out: list[list[Owed]] = []
    for m in cut:
        host = next((x for x in out if _one_wave(x + m)), None) if _one_wave(m) else None
        if host is not None:
            host.extend(m)
        else:
            out.append(m)
    return out


def _one_wave(m: list[Owed]) -> bool:
    own_cuda = any(o.own_cuda for o in m)
    return not own_cuda and sum(len(o.proofs) for o in m) <= SLOTS and len({o.torch for o in m}) <= 2


def plan_line(machine: list[Owed]) -> str:
    return "python -m lab plan " + " ".join(f"{o.release}:{','.join(o.proofs)}" for o in machine)
