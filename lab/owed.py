"""What the GPU still owes: each release's core proofs (lab.proofs.core) that no evidence file of
today's series shows, as `lab plan` lines, one a machine.

A proof counts as made once a file of it recorded today's patches (evidence.CURRENT), whatever
its verdict: running a weak or not-exercised scenario again on the same bytes shows nothing new.
Releases whose patched files are byte-identical (Catalogue.twins) are proven once, on the first.
The upstream reports still "not yet run" (`reports`) are listed beside them, with their proofs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from packaging.version import Version

from vllm_backports.bench import driver
from vllm_backports.catalogue import Catalogue
from vllm_backports.errors import UsageError
from vllm_backports.evidence import CURRENT
from vllm_backports.maint.generated import judged_evidence

from .flashinfer import prebuilt
from .machine import SLOTS, known_proofs
from .proofs import core, gpus, takes_turns
from .stage import MACHINE_CUDA, MACHINE_TORCH

# A plan's device time, by the H100 runs of 2026-12-06 (records/runs/2026-12-06-h100-lab-*): a
# machine's start took 27 and 206 s, the slower one counted; a part put 3.3 to 4.5 s; an install
# and its sites 11 to 23 s there, 34 to 55 s for releases with their own torch (H200, 2026-11-29).
# With Triton's cache shared by every proof, the verifies of a first wave of 8 that ended took 4.5
# to 6.2 min, but 0.25.0's mtp, tq-mtp and tq-continuation were still running past 6.2 min (and an
# H200 took up to 7.7 on 2026-11-29), so a cold wave counts 7 min; each later wave 2.1 to 4.0 min
# on the H100 (3.8 to 6.3 on that H200), counted 4. An estimate, not a bound: on a slower card the
# last wave may not end, and collect brings back what did.
START_S, PUT_S, INSTALL_S, COLD_WAVE_S, WAVE_S = 210, 4.5, 55, 7 * 60, 4 * 60
ESTIMATED_BY = "the H100 runs of 2026-12-06"
MACHINE_S = 30 * 60  # a machine is given back after 30 minutes held
ROOM_S = 28 * 60  # what `owed` fills a machine to: the last `collect` must come back before that
# What a plan puts before anything is staged, counted in parts of 51 MiB on 2026-11-29: 27 for four
# releases of the machine's torch (FlashInfer's set among them), 62 for three releases on torch 2.13
# and 2.14, 88 for 0.19.0 with torch 2.10 and its CUDA 12 libraries; so 7 parts a release, 20 a
# torch stack, 81 a CUDA 12 stack. Kept in bytes: the parts shrink as the tree that travels with each
# call grows (34 MiB on 2026-12-07, when 0.27.0 and 0.29.0 took 49 parts, 0.28.0 alone 37, and these
# figures say 51 and 41).
PART_BYTES = 51 << 20  # the parts of the runs above; `owed` passes today's (lab part_room)
RELEASE_BYTES, TORCH_BYTES, CUDA12_BYTES = (n * PART_BYTES for n in (7, 20, 81))
# FlashInfer proofs of a release without a pre-built GDN prefill run one at a time
# (lab.proofs.takes_turns): gdn-ngram-flashinfer took 308 and 374 s beside other verifies on an H200 (2026-11-29),
# counted 6 min each. With the prefill pre-built they run in the waves like any other proof.
FLASHINFER_S = 6 * 60


# A/B benchmarks, by the Qwen3.5-9B runs on an H100 of 2026-12-06/07 (records/runs/2026-12-0[67]-h100-lab-*,
# timeline.jsonl): at 1 request alone two engine pairs took 391 s with 8 pairs and 411 s with 16,
# so 2.5 s a pair and 185 s an engine pair (its start, warm-up and profiles); pinned to half the
# cores, 16 pairs took 497 s (0.23.0), 514 s (0.31.0), 424 s and 459 s (0.27.0), so 220 s an
# engine pair, each within 15% of it; 40 pairs took 412 s on 0.29.0, whose engines start
# faster, and the estimate's 540 s is left long there: a plan that runs short of its machine
# loses results, one that runs long only leaves device time over. At 1,
# 16 and 64 requests one engine pair took 553 s with 16 pairs: about 10 s a pair more for each
# larger level. Larger shapes take longer; they have no such runs on the lab machine.
ENGINE_PAIR_S, PINNED_ENGINE_PAIR_S, PAIR_ONE_S, PAIR_LEVEL_S = 185, 220, 2.5, 10


@dataclass(frozen=True)
class BenchOptions:
    """What the estimate reads of benchmarks/bench_ab.py run's options (its defaults otherwise)."""

    restarts: int = driver.Plan.restarts
    levels: tuple[int, ...] = driver.LEVELS
    pairs: int | None = None  # --pairs in the options: it overrides each job's =PAIRS
    pinned: bool = False

    @classmethod
    def parse(cls, bench_args: list[str]) -> BenchOptions:
        """The options of `bench_args`; ValueError, in one line, where bench_ab.py would refuse them
        on the machine (after the parts were carried)."""
        given: dict[str, str] = {}
        for i, arg in enumerate(bench_args):
            flag, eq, value = arg.partition("=")
            if flag in ("--restarts", "--levels", "--pairs"):
                following = bench_args[i + 1] if i + 1 < len(bench_args) else ""
                given[flag] = value if eq else following
        try:
            options = cls(
                restarts=int(given.get("--restarts", cls.restarts)),
                levels=tuple(int(x) for x in given["--levels"].split(",")) if "--levels" in given else cls.levels,
                pairs=int(given["--pairs"]) if "--pairs" in given else None,
                pinned="--pin-cores" in bench_args,
            )
        except ValueError:
            shown = " ".join(bench_args)
            raise ValueError(f"--bench-args {shown!r}: --restarts, --levels and --pairs take numbers") from None
        if options.pinned:
            try:
                driver.check_pinned_restarts(options.restarts)
            except UsageError as e:
                raise ValueError(f"--bench-args: {e}") from None
        return options

    def seconds(self, pairs: int) -> int:
        """Device time one benchmark of `pairs` pairs (unless --pairs says otherwise) takes."""
        engine = PINNED_ENGINE_PAIR_S if self.pinned else ENGINE_PAIR_S
        per_pair = sum(PAIR_ONE_S if level == 1 else PAIR_LEVEL_S for level in self.levels)
        return round(self.restarts * engine + (self.pairs or pairs) * per_pair)


def prebuilt_prefill(release: str, root: Path) -> bool:
    """Whether `python -m lab flashinfer-jit` pre-built the release's GDN prefill under `root`
    (another module pre-built leaves the prefill to compile at engine start)."""
    return any(a.name == "fi-aot-gdn_prefill_sm90-sm90a.tar.xz" for a in prebuilt(release, root))


def serial(proofs, prefill_prebuilt: bool) -> int:
    """How many of `proofs` run one at a time on the GPU machine (lab.proofs.takes_turns)."""
    return sum(takes_turns(p, prefill_prebuilt) for p in proofs)


def serial_flashinfer(release: str, proofs, root: Path) -> int:
    """`serial` for a release whose pre-built modules lie under `root`."""
    return serial(proofs, prebuilt_prefill(release, root))


def estimate(n_parts: int, proofs: dict[str, int], flashinfer: int = 0, benches: int = 0) -> int:
    """Seconds of device time a plan of `n_parts` parts and `proofs` (per release) takes, the
    machine's start included; `flashinfer` of the proofs run on FlashInfer, one after another,
    while the rest run in waves beside them; `benches`, the seconds of its A/B benchmarks
    (BenchOptions.seconds), which run after every proof, one at a time."""
    waves = -(-sum(proofs.values()) // SLOTS)
    verifies = max(COLD_WAVE_S + (waves - 1) * WAVE_S if waves else 0, flashinfer * FLASHINFER_S)
    return round(START_S + n_parts * PUT_S + len(proofs) * INSTALL_S + verifies + benches)


@dataclass(frozen=True)
class Owed:
    release: str
    torch: str
    own_cuda: bool  # its torch brings CUDA libraries the machine's image lacks
    proofs: tuple[str, ...]
    fi_prebuilt: bool = False  # its GDN prefill is pre-built: its FlashInfer proofs run in waves


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
            fi_prebuilt = prebuilt_prefill(version, root)
            out.append(Owed(version, release.torch, release.cuda != MACHINE_CUDA, due, fi_prebuilt))
    return out


def earlier(root: Path, cat: Catalogue | None = None) -> tuple[list[Owed], list[str]]:
    """Per release, the proofs, core or not, whose every evidence file recorded an earlier series
    than today's and that `lab plan` still knows: those one GPU runs, and RELEASE:PROOF for those
    needing more. A run there shows today's series where only an earlier one was seen."""
    cat = cat or Catalogue(root)
    evidence = judged_evidence(root, cat)
    known = known_proofs()
    out, wide = [], []
    for version in cat.versions:
        release = cat.releases[version]
        files = evidence.get(version, ())
        if not release.series or not files:
            continue
        made = {s.name for s in files if s.digest == CURRENT}
        stale = sorted({s.name for s in files if s.digest != CURRENT} - made)
        stale = [p for p in stale if p in known]
        wide += [f"{version}:{p}" for p in stale if gpus(p) > 1]
        if one := tuple(p for p in stale if gpus(p) == 1):
            out.append(Owed(version, release.torch, release.cuda != MACHINE_CUDA, one, prebuilt_prefill(version, root)))
    return out, wide


def merged(first: list[Owed], then: list[Owed]) -> list[Owed]:
    """Two lists of owed proofs as one, a release's proofs in `first` before those `then` adds."""
    by_release = {o.release: o for o in first}
    for o in then:
        have = by_release.get(o.release)
        extra = tuple(p for p in o.proofs if not have or p not in have.proofs)
        by_release[o.release] = replace(have, proofs=have.proofs + extra) if have else o
    return list(by_release.values())


@dataclass(frozen=True)
class Report:
    known: str  # the [known.ID] entry still "not yet run"
    bug: str  # "#53180"
    present: str  # the releases whose code has it
    proofs: tuple[tuple[str, int], ...]  # the proofs naming it (verify.proofs' `known`), with their GPUs


def reports(cat: Catalogue) -> list[Report]:
    """The upstream reports no GPU has run yet ([known.*] status "not yet run"), with the proofs
    that would run them: which of the `present` releases to run them on is the report's to say
    (docs/VERIFICATION.md names them), so these are no plan lines."""
    from vllm_backports.verify.proofs import PROOFS

    from .proofs import gpus

    return [
        Report(k.id, k.number, k.present, tuple((n, gpus(n)) for n, p in PROOFS.items() if k.id in p.known))
        for k in cat.known.values()
        if k.status == "not yet run"
    ]


def pieces(o: Owed, part: int = PART_BYTES) -> list[Owed]:
    """`o` whole where it fits a machine alone, else its proofs cut, in order, into runs that each
    fit one (each machine stages the release again); a proof that fits none alone goes alone."""
    if fits([o], part):
        return [o]
    out: list[Owed] = []
    run: tuple[str, ...] = ()
    for proof in o.proofs:
        if run and not fits([replace(o, proofs=(*run, proof))], part):
            out.append(replace(o, proofs=run))
            run = ()
        run += (proof,)
    return [*out, replace(o, proofs=run)]


def machines(due: list[Owed], part: int = PART_BYTES) -> list[list[Owed]]:
    """`due` cut into machines by `estimate`: releases by torch, newest first, then by version, each
    into the first machine it fits (a torch stack is put once a machine, whichever releases share
    it); a release that fits no machine alone is cut into pieces that do (`pieces`). `part`: the
    bytes a part holds."""
    by_version = sorted(due, key=lambda o: Version(o.release))
    order = sorted(by_version, key=lambda o: Version(o.torch), reverse=True)  # stable: versions stay in order
    out: list[list[Owed]] = []
    for o in (piece for whole in order for piece in pieces(whole, part)):
        # a release's pieces go to machines of their own: each is as much as one machine holds
        host = next((m for m in out if o.release not in {x.release for x in m} and fits([*m, o], part)), None)
        if host is None:
            out.append([o])
        else:
            host.append(o)
    return out


def parts_of(machine: list[Owed], part: int = PART_BYTES) -> int:
    """The parts of `part` bytes a machine's releases take before staging, each torch stack other
    than the machine's once (parts are cut end to end, whatever blob they hold)."""
    stacks = {(o.torch, o.own_cuda) for o in machine if o.torch != MACHINE_TORCH or o.own_cuda}
    total = len(machine) * RELEASE_BYTES + sum(CUDA12_BYTES if own_cuda else TORCH_BYTES for _, own_cuda in stacks)
    return -(-total // part)


def fits(machine: list[Owed], part: int = PART_BYTES) -> bool:
    fi = sum(serial(o.proofs, o.fi_prebuilt) for o in machine)
    return estimate(parts_of(machine, part), {o.release: len(o.proofs) for o in machine}, fi) <= ROOM_S


def plan_line(machine: list[Owed]) -> str:
    return "python -m lab plan " + " ".join(f"{o.release}:{','.join(o.proofs)}" for o in machine)
