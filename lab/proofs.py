"""Which proofs a release runs, and against which site: the core set, read off the backports its
series carries, and the sites the GPU machine builds for the controls.

The proofs themselves (options, control kind) are vllm_backports/verify/proofs.py's table; this
module only chooses among them and names the apply.py options that build each control site.
"""

from __future__ import annotations

from vllm_backports.catalogue import Catalogue
from vllm_backports.verify.proofs import CONTROL_LEAVES_OUT, PROOFS, left_out, option
from vllm_backports.verify.scenarios import chooses_prefill

from .machine import proof_of

# The core set: for each backport a series carries, the proofs that show it on users' shape (16
# a batch under CUDA graphs unless the proof says otherwise). The GDN fix shows on ngram, on
# prompts of k+1 tokens, with prefix caching and on MTP (which takes the V2 runner from 0.29, so
# the same proof covers gdn-spec-state-v2-runner there; gdn-mixed-batch-gates is exercised by
# every 16-a-batch GDN proof's mixed rows).
CORE = {
    "gdn-spec-state": ("gdn-ngram", "gdn-ngram-kp1", "gdn-ngram-prefix", "mtp"),
    "turboquant-spec-decode": ("tq-mtp",),
    "spec-prefill-decode-graph": ("kp1-b1-fix",),
    "turboquant-prefill-fastpath": ("tq-continuation",),
    "turboquant-decode-workspace": ("qwen3_5-tq-mtp",),
    "gdn-draft-free-plain": ("gdn-ngram-b1",),
    "spec-pad-new-prompt": ("spec-pad-ngram",),
}
# TurboQuant KV cannot start on hybrid models before 0.21.0 (verify/scenarios.py): a TurboQuant
# proof there has no run to make.
# Proofs a reproduced upstream bug in code no series patches stops on both sites, on the releases
# that have it: with ngram and prefix caching the scheduler asserts in MambaManager when a
# request's drafts shrink (vLLM #39271, [known.align-allocate-shrink]; 0.20.0 and 0.22.0 on an
# H200, 2026-11-29).
BLOCKED_BY = {"gdn-ngram-prefix": "align-allocate-shrink"}
TURBOQUANT_FROM = (0, 21)
# FlashInfer's GDN prefill, vLLM's default on Hopper, where a series carries the GDN fix and the
# release's FlashInfer compiles its sm90 prefill in the engine (lab.flashinfer.DSL_FROM): earlier
# pins build it with nvcc, pre-built by `python -m lab flashinfer-jit` before a plan can stage it.
FLASHINFER_CORE = ("gdn-spec-state", "gdn-ngram-flashinfer")

# Backports written on another's lines, which leave the series with it (apply.py refuses them
# alone): turboquant-prefill-fastpath on turboquant-spec-decode's, turboquant-decode-workspace
# (0.21 .. 0.23) on both.
WRITTEN_ON = {
    "turboquant-spec-decode": ("turboquant-prefill-fastpath", "turboquant-decode-workspace"),
    "turboquant-prefill-fastpath": ("turboquant-decode-workspace",),
    # 0.25 and 0.26: turboquant-kv-shape's hunks in the runner sit below spec-prefill-decode-graph's;
    # its proof (kp1-b1-fix, ngram without TurboQuant) never reaches what kv-shape fixes
    "spec-prefill-decode-graph": ("turboquant-kv-shape",),
}


def _version(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split(".")[:2])


def core(catalogue: Catalogue, release: str) -> list[str]:
    """The core proofs of `release`, in the order they are started."""
    from .flashinfer import DSL_FROM

    carried = catalogue.releases[release].backports
    out: list[str] = []
    for backport, names in CORE.items():
        if backport not in carried:
            continue
        for name in names:
            if PROOFS[name].turboquant and _version(release) < TURBOQUANT_FROM:
                continue
            blocker = BLOCKED_BY.get(name)
            if blocker in catalogue.releases[release].known and catalogue.known[blocker].status == "reproduced":
                continue
            out.append(name)
    backport, name = FLASHINFER_CORE
    if not chooses_prefill(release):
        # the lab's GPUs are Hopper, where these releases run FlashInfer's prefill whatever verify
        # asks: each proof runs as its FlashInfer twin, and one without a twin has no run there
        return [f"{n}-flashinfer" for n in out if f"{n}-flashinfer" in PROOFS]
    if backport in carried and _version(release) >= _version(DSL_FROM):
        out.append(name)
    return out


def uses_flashinfer(item: str) -> bool:
    """Whether a job's proof (SITE@PROOF too) runs on FlashInfer's GDN prefill."""
    name = proof_of(item)
    return name in PROOFS and option(PROOFS[name].options, "--prefill-backend") == "flashinfer"


def gpus(item: str) -> int:
    """The GPUs a job's proof (SITE@PROOF too) needs: its verify's tensor parallel size, 1 where
    it names none (the served proofs run at TP=1)."""
    name = proof_of(item)
    return int(option(PROOFS[name].options, "--tp") or 1) if name in PROOFS else 1


def multi_gpu(jobs: list[dict]) -> dict[str, int]:
    """Each RELEASE:PROOF of the (parsed) jobs that needs more than one GPU, with how many: `plan`
    names a device kind from it and `lab.machine start` refuses a machine with fewer."""
    return {f"{j['release']}:{p}": n for j in jobs for p in j["proofs"] if (n := gpus(p)) > 1}


def takes_turns(item: str, prefill_prebuilt: bool) -> bool:
    """Whether a job's proof runs on the GPU machine only when no other such proof runs: one
    FlashInfer verify at a time where FlashInfer may build at engine start, since machines running
    several FlashInfer builds beside other verifies stopped answering (2026-11-25,
    docs/VERIFICATION.md). A release whose GDN prefill was pre-built (lab.flashinfer) builds
    nothing; a CuTe-DSL prefill (0.26.0 on) compiles in every engine, so those take turns."""
    return uses_flashinfer(item) and not prefill_prebuilt


# Kimi K3's NVIDIA model code on 0.31.0 imports the CuTe DSL (nvidia-cutlass-dsl, which lab.stage
# leaves out with every nvidia- package) as the engine loads it: there the KDA proofs' first engine
# died on "No module named 'cutlass'" (H100, 2026-12-06), where 0.29.0's loaded without it (0.30.0
# not tried). The release's FlashInfer set brings the DSL, so these proofs run with its site.
DSL_MODELS = {"tiny-kimi-k3": "0.31.0"}


def takes_fi_site(release: str, item: str) -> bool:
    """Whether a job's proof (SITE@PROOF too) runs with its release's FlashInfer site on the path:
    a FlashInfer proof, or one whose model's code on `release` imports the CuTe DSL."""
    name = proof_of(item)
    if name not in PROOFS:
        return False
    since = DSL_MODELS.get(option(PROOFS[name].options, "--model") or "")
    return uses_flashinfer(item) or (since is not None and _version(release) >= _version(since))


def control_site(name: str) -> str:
    """The site a proof's control runs on: raw, ctl or less-ID."""
    return PROOFS[name].control


def site_skips(site: str, carried: tuple[str, ...]) -> list[str] | None:
    """apply.py's --skip options that build `site` from the series carried; None for the pristine
    site (no apply at all). ctl is TurboQuant as released: the series less turboquant-spec-decode."""
    if site == "raw":
        return None
    if site == "fix":
        return []
    if site not in CONTROL_LEAVES_OUT and not site.startswith("less-"):
        raise ValueError(f"unknown site {site!r}")
    leaves = left_out(site)
    if leaves not in carried:
        raise ValueError(f"site {site}: the series does not carry {leaves}")
    return skips_without(leaves, carried)


def skips_without(backport: str, carried) -> list[str]:
    """apply.py's --skip options that leave `backport` out with what the series carries that is
    written on its lines (the runbook's lab.sites.without reads the same)."""
    skips = [backport] + [d for d in WRITTEN_ON.get(backport, ()) if d in carried]
    return [x for s in skips for x in ("--skip", s)]
