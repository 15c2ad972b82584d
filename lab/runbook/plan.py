#!/usr/bin/env python3
"""The calls that stage releases on the GPU machine and start their proofs, packed under what one
call may carry (64 MiB with the working tree): each release under its own HOME, its pieces put
with `lab.steps put`, the last call starting `lab.steps chain` with install.sh.

    python3 lab/runbook/plan.py 0.25.0:gdn-ngram-b1,tq-continuation 0.26.0:gdn-ngram-flashinfer
    python3 lab/runbook/plan.py --json 0.33.0:tq-continuation    # one object a call: command, carry
    python3 lab/runbook/plan.py 0.26.0:bench=qwen3_5-9b/ngram-90+mtp   # setup only, then A/B runs
    python3 lab/runbook/plan.py --gpus 2 0.26.0:bench=qwen3_5-9b/mtp 0.27.0:bench=qwen3_5-9b/mtp  # one GPU each
    python3 lab/runbook/plan.py 0.26.0:p65@tq-mtp   # a proof of an alternative's site (lab.sites p65)

`bench=SHAPE/EXPERIMENT+EXPERIMENT...[/PAIRS[/LAYOUT]]` (20 pairs, resident unless told; an
EXPERIMENT=PAIRS its own) queues A/B runs of benchmarks/bench_ab.py on the Triton GDN prefill
(`lab.steps bench-ab queue`, in the plan's last call, once every chain has started, or with
--early in the release's own chain call); they run once the machine's chains and verifies have
ended, one at a time over every release (one a GPU with --gpus). A release with only `bench=`
gets no proofs, and one `bench=` at most. The machine goes back 30 s after a call ends: keep a `bench-ab poll` (or
`collect`) call in flight meanwhile.

Run after `python -m lab bundle REL` (from the project root: .stage-REL/, the release's wheels
in parts and its install.sh; FA2 comes inside the release's own wheel) and, for FlashInfer
proofs, python -m lab flashinfer REL; for `upstream-gpu` (the release's own tests on the
GPU, beside its proofs), lab/runbook/stage-sdist.sh REL.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: its .stage-* folders and its package
sys.path.insert(0, str(ROOT))
from lab.parts import LIMIT, tree_size  # noqa: E402  (one call's carry, and the tree in it)
from lab.proofs import gpus as gpus_needed  # noqa: E402  (as lab.machine reads them; main's `gpus` is a count)
from vllm_backports.bench.experiments import EXPERIMENTS  # noqa: E402  (after the path, as a script)
from vllm_backports.bench.schedule import LAYOUTS  # noqa: E402
from vllm_backports.bench.shapes import SHAPES  # noqa: E402
from vllm_backports.catalogue import Catalogue  # noqa: E402
from vllm_backports.verify.proofs import PROOFS  # noqa: E402

# Not a proof: the release's own tests on the GPU (lab.chain upstream-gpu), run beside the proofs
UPSTREAM = "upstream-gpu"
MARGIN = 2**20  # what the tree may grow by between planning and the calls


@dataclass
class Piece:
    name: str  # as `lab.steps put` takes it
    paths: list[str]  # what the call carries for it
    size: int


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


BENCH = "bench="


# Sites that lab.sites builds from a kept alternative, and where: only for the releases it has a port for
ALTERNATIVE_SITES = {"p65": ROOT / "benchmarks/alternatives/turboquant-cudagraph"}
LESS = "less-"  # lab.sites' site of the series less one backport: only where the series carries it


def alternative_patch(ports: Path, release: str) -> Path:
    """The patch of the alternative kept at `ports` that lab.sites.alt_site applies for `release`."""
    return ports / release / f"0001-{ports.name}.patch"


def ported(ports: Path) -> str:
    """The releases the alternative kept at `ports` has a patch for, as a refusal names them."""
    return ", ".join(sorted(d.name for d in ports.iterdir() if alternative_patch(ports, d.name).is_file()))


@functools.cache
def carried(release: str) -> tuple[str, ...]:
    """The backports the series of `release` carries (versions.toml, read once a run of plan.py)."""
    return Catalogue(ROOT).releases[release].backports


def _positive(text: str) -> bool:
    return text.isdigit() and int(text) >= 1


def bench_queue(
    token: str, release: str, profile: int | None = None, order: str | None = None, levels: str | None = None
) -> list[str]:
    """`bench=SHAPE/EXP+EXP...[/PAIRS[/LAYOUT]]` as the arguments of `lab.steps bench-ab queue`;
    `profile`: each engine ends with a profiled generate at that many requests; `order`: the
    pairs' order of arms (bench_ab.py's default, abab, when None); `levels`: the concurrent
    requests each round times, comma-separated (bench_ab.py's default, 1,16,64, when None)."""
    fields = token.removeprefix(BENCH).split("/")
    if not 2 <= len(fields) <= 4:
        raise SystemExit(f"plan: {token}: write bench=SHAPE/EXPERIMENT+EXPERIMENT[/PAIRS[/LAYOUT]]")
    shape, exps = fields[0], fields[1].split("+")
    pairs = fields[2] if len(fields) > 2 else "20"
    layout = fields[3] if len(fields) > 3 else "resident"
    if shape not in SHAPES:
        raise SystemExit(f"plan: unknown shape {shape} ({', '.join(SHAPES)})")
    for token_e in exps:
        e, has_own, own = token_e.partition("=")  # EXP=PAIRS: its own number of pairs
        if has_own and not _positive(own):
            raise SystemExit(f"plan: {token_e}: write EXPERIMENT=PAIRS, PAIRS a positive number")
        if e not in EXPERIMENTS:
            raise SystemExit(f"plan: unknown experiment {e} ({', '.join(EXPERIMENTS)})")
        for site in EXPERIMENTS[e].sites():
            ports = ALTERNATIVE_SITES.get(site)
            if ports and not alternative_patch(ports, release).is_file():
                where, have = ports.relative_to(ROOT), ported(ports)
                raise SystemExit(f"plan: {e} needs the {site} site, which {where} has for {have}, not {release}")
            less = site.removeprefix(LESS)
            if less != site and less not in carried(release):
                raise SystemExit(f"plan: {e} needs the {site} site: the series of {release} does not carry {less}")
    if not _positive(pairs):
        raise SystemExit(f"plan: {token}: pairs must be a positive number, not {pairs}")
    if layout not in LAYOUTS:
        raise SystemExit(f"plan: unknown layout {layout} ({', '.join(LAYOUTS)})")
    options = ["--prefill-backend", "triton", *(["--profile", str(profile)] if profile else [])]
    options += ["--order", order] if order else []
    options += ["--levels", levels] if levels else []
    return [shape, pairs, layout, *exps, "--", *options]


def proof_of(token: str) -> str:
    """The proof a token names: SITE@PROOF runs PROOF on an alternative's site (lab.verifies.proofs)."""
    return token.partition("@")[2] or token


def check_site(token: str, release: str) -> None:
    """SITE@PROOF: refused unless SITE is an alternative's site with a port for `release`."""
    site, at, _ = token.partition("@")
    if not at:
        return
    ports = ALTERNATIVE_SITES.get(site)
    if ports is None:
        raise SystemExit(f"plan: {token}: {site} is no alternative's site ({', '.join(ALTERNATIVE_SITES)})")
    if not alternative_patch(ports, release).is_file():
        raise SystemExit(f"plan: {token}: {ports.relative_to(ROOT)} has no port for {release}")


def wants_flashinfer(proofs: list[str]) -> bool:
    """Whether a proof named runs FlashInfer's GDN prefill (its pieces are carried only then)."""
    named = [proof_of(p) for p in proofs if p != UPSTREAM and not p.startswith(BENCH)]
    unknown = [p for p in named if p not in PROOFS]
    if unknown:
        raise SystemExit(f"plan: unknown proof {unknown[0]} (vllm_backports/verify/proofs.py, or {UPSTREAM})")
    return any("flashinfer" in PROOFS[p].options for p in named)


def pieces(root: Path, release: str, flashinfer: bool, upstream: bool = False) -> tuple[list[Piece], Piece]:
    """A release's pieces, and its install.sh (which goes with the call that starts the chain)."""
    stage = root / f".stage-{release}"
    if not (stage / "install.sh").is_file():
        raise SystemExit(f"plan: .stage-{release}/install.sh missing: run python -m lab bundle {release}")
    found = []
    for d in sorted(stage.glob("p[0-9]*"), key=lambda p: int(p.name[1:])):
        found.append(Piece(d.name, [str(d.relative_to(root))], _size(d)))
    fi = root / f".stage-fi-{release}"
    if flashinfer and not fi.is_dir():
        raise SystemExit(f"plan: .stage-fi-{release} missing: run python -m lab flashinfer {release}")
    for d in sorted(fi.glob("p[0-9]*"), key=lambda p: int(p.name[1:])) if flashinfer else ():
        found.append(Piece(f"fi-{d.name}", [str(d.relative_to(root))], _size(d)))
    if upstream:
        sdist = root / f".stage-sdist-{release}"
        if not (sdist / "sdist.sha256").is_file():
            raise SystemExit(f"plan: .stage-sdist-{release} missing: run lab/runbook/stage-sdist.sh {release}")
        found.append(Piece("sdist", [str(sdist.relative_to(root))], _size(sdist)))
    install = Piece("", [str((stage / "install.sh").relative_to(root))], _size(stage / "install.sh"))
    return found, install


def pack(found: list[Piece], install: Piece, room: int) -> list[list[Piece]]:
    """First fit, largest first; install.sh then joins the emptiest call, which goes last (it
    starts the chain). Refuses a piece larger than a call."""
    bins: list[list[Piece]] = []
    for p in sorted(found, key=lambda p: -p.size):
        if p.size > room:
            # the room shrinks as the tree grows: the bundle's parts are 50 MiB unless told
            raise SystemExit(
                f"plan: {p.paths[0]} is {p.size / 2**20:.1f} MiB, over a call's {room / 2**20:.1f} MiB beside a "
                f"{(LIMIT - MARGIN - room) / 2**20:.1f} MiB tree: stage it again in smaller parts "
                f"(python -m lab bundle REL --part-mb {int(room // 2**20) - 1}; "
                f"python -m lab flashinfer REL --part-mb {int(room // 2**20) - 1})"
            )
        for b in bins:
            if sum(x.size for x in b) + p.size <= room:
                b.append(p)
                break
        else:
            bins.append([p])
    last = min(bins, key=lambda b: sum(x.size for x in b), default=[])
    if not bins or sum(x.size for x in last) + install.size > room:
        last = []
        bins.append(last)
    last.append(install)
    bins.remove(last)
    return bins + [last]


def plan(
    root: Path,
    runs: list[tuple[str, list[str]]],
    room: int,
    gpus: int = 1,
    profile: int | None = None,
    early: bool = False,
    levels: str | None = None,
) -> list[dict]:
    """The calls; with `gpus` over 1, the releases' A/B queues go to GPUs 0, 1, ... in turn, so that
    queues on different GPUs run side by side; `early`: each queue in its own release's chain call,
    not the last call."""
    calls, homes, queues = [], {}, []
    # beside another GPU's queue, whose engine starts load the host's CPUs for minutes, each pair
    # of arms is run AB then BA, so that a load that rises or falls over a pair weighs on both alike
    order = "abba" if gpus > 1 else None
    named = [release for release, _ in runs]
    twice = sorted({r for r in named if named.count(r) > 1})
    if twice:  # two HOMEs would build the release's shared sites (/tmp/site-*-REL) under each other
        raise SystemExit(f"plan: {twice[0]} named twice: give each release once, its proofs joined with commas")
    # every queue is checked before any release's staging is looked at: a refused run stages nothing
    queued = {
        release: [bench_queue(p, release, profile, order, levels) for p in proofs if p.startswith(BENCH)]
        for release, proofs in runs
    }
    for release, proofs in runs:
        for p in proofs:
            check_site(p, release)
    for i, (release, proofs) in enumerate(runs, 1):
        home = f"/root/h{i}"
        homes[release] = home
        found, install = pieces(root, release, wants_flashinfer(proofs), UPSTREAM in proofs)
        bins = pack(found, install, room)
        for n, b in enumerate(bins):
            names = [p.name for p in b if p.name]
            carry = [path for p in b for path in p.paths]
            put = f"HOME={home} REL={release} python3 -m lab.steps put {' '.join(names)}" if names else ""
            if n < len(bins) - 1:
                command = put
            else:
                env = f"HOME={home} REL={release} GPU_TESTS=0 RELEASE_TESTS=0"
                names = [p for p in proofs if not p.startswith(BENCH)] or ["none"]  # none: setup only
                chain = f"{env} python3 -m lab.steps chain {' '.join(names)}"
                mine = queued[release]
                if len(mine) > 1:  # lab.bench_queue keeps one queue a release and HOME
                    raise SystemExit(f"plan: {release}: one bench= a release; join its experiments with +")
                on = f"GPU={len(queues) % gpus} " if gpus > 1 else ""
                queues += [
                    f"{on}HOME={home} REL={release} python3 -m lab.steps bench-ab queue {' '.join(q)}" for q in mine
                ]
                command = f"{put} && {chain}" if put else chain
                if early:
                    command += "".join(f" && {q}" for q in queues[len(queues) - len(mine) :])
            calls.append(
                {
                    "release": release,
                    "home": home,
                    "command": command,
                    "carry": carry,
                    "mib": round(sum(p.size for p in b) / 2**20, 1),
                }
            )
    # every queue in the last call, after every chain has marked itself: an A/B run must not
    # start while a later release installs and sets up beside it
    if queues and not early:
        calls[-1]["command"] += "".join(f" && {q}" for q in queues)
    return calls


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="RELEASE:PROOF,...")
    parser.add_argument("--json", action="store_true", help="one JSON object a call")
    parser.add_argument(
        "--gpus", type=int, default=1, help="GPUs of the machine: the A/B queues go to them in turn, side by side"
    )
    parser.add_argument(
        "--early",
        action="store_true",
        help="each A/B queue in its release's chain call, so its runs begin while later releases are carried "
        "(their setup then runs beside them: for experiments a busy host does not move)",
    )
    parser.add_argument(
        "--bench-profile",
        type=int,
        metavar="REQUESTS",
        help="every A/B run ends each engine with a profiled generate at this many requests (bench-ab profiles)",
    )
    parser.add_argument(
        "--bench-levels",
        metavar="REQUESTS,...",
        help="the concurrent requests every A/B round times (default 1,16,64): 1 alone keeps the larger "
        "levels' power draw out of its rounds",
    )
    args = parser.parse_args(argv)
    root = ROOT
    runs = []
    for r in args.runs:
        release, _, proofs = r.partition(":")
        if not proofs:
            parser.error(f"{r}: name the proofs to start, RELEASE:PROOF,...")
        runs.append((release, proofs.split(",")))
    room = LIMIT - tree_size(root) - MARGIN
    if args.gpus < 1:
        parser.error(f"--gpus {args.gpus}: at least 1")
    if args.bench_profile is not None and args.bench_profile < 1:
        parser.error(f"--bench-profile {args.bench_profile}: at least 1 request")
    if args.bench_levels is not None:
        levels = args.bench_levels.split(",")
        if not all(_positive(lv) for lv in levels):
            parser.error(f"--bench-levels {args.bench_levels}: positive numbers of requests, comma-separated")
        if args.bench_profile is not None and str(args.bench_profile) not in levels:
            parser.error(f"--bench-profile {args.bench_profile}: not one of --bench-levels {args.bench_levels}")
    calls = plan(root, runs, room, args.gpus, args.bench_profile, args.early, args.bench_levels)
    for c in calls:
        print(json.dumps(c) if args.json else f"[{c['mib']:5.1f} MiB] carry={json.dumps(c['carry'])}\n  {c['command']}")
    print(
        f"plan: {len(calls)} calls for {len(runs)} releases, {room / 2**20:.1f} MiB of pieces a call", file=sys.stderr
    )
    gpus = max(args.gpus, *(gpus_needed(p) for _, proofs in runs for p in proofs))
    if gpus > 1:
        print(
            f"plan: the runs take {gpus} GPUs: make every call on a kind with at least {gpus} "
            "(status lists the kinds lent)",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
