"""The named verify runs: the proofs that lab.verifies starts on the GPU machine (each with
its control site), the scenarios a release may owe (catalogue.SCENARIOS) and the runs of the
images' GPU smoke test, all from this one table.

    python -m vllm_backports.verify.proofs NAME   # its control site (raw, ctl or less-<backport
                                                  # id), then verify's options with the defaults
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Proof:
    options: tuple[str, ...]
    # The site that is its control on the GPU machine: raw (pristine), ctl (the series without
    # turboquant-spec-decode: TurboQuant as released) or less-ID (the series less backport ID).
    control: str
    # Run by the images' GPU smoke test too, on the image's own patched site: each is either a
    # proof of a fix or a sibling bug's positive control, and the patched release must decode
    # clean in both.
    smoke: bool = False
    # The backport whose absence makes its control fail (a backport id of versions.toml); None
    # for a sibling bug's positive control, which both sites carry. A release that has this fix
    # upstream ships none to prove, and its clean pristine run is the fix holding there.
    fix: str | None = None
    # The [known.ID] entries of versions.toml whose conditions it runs (docs/SIBLING-BUGS.md): the
    # bugs the series leave alone that its result speaks to, whatever its control.
    known: tuple[str, ...] = ()

    @property
    def turboquant(self) -> bool:
        return any(o.startswith("turboquant_") for o in self.options)


GDN = "gdn-spec-state"  # what a GDN proof against the pristine release shows
# The backport a control site leaves out: ctl is TurboQuant as released, less-ID names its own
CONTROL_LEAVES_OUT = {"ctl": "turboquant-spec-decode"}


def left_out(control: str) -> str:
    """The backport the control site `control` (ctl or less-ID) leaves out of the series."""
    return CONTROL_LEAVES_OUT.get(control) or control.removeprefix("less-")


def _p(
    options: str, control: str = "raw", smoke: bool = False, fix: str | None = None, known: tuple[str, ...] = ()
) -> Proof:
    if control == "raw":
        return Proof(tuple(options.split()), control, smoke, fix, known)
    if fix is not None:
        raise ValueError(f"a {control} control is for the backport it leaves out, not {fix}")
    # a control made by leaving one backport out is for that backport; ctl leaves out this one
    return Proof(tuple(options.split()), control, smoke, left_out(control), known)


SPEC_PREFILL = "less-spec-prefill-decode-graph"
FASTPATH = "less-turboquant-prefill-fastpath"
DECODE_WORKSPACE = "less-turboquant-decode-workspace"
# #51565's and #51562's prompts: every 4th prompt one token, in a KV pool small enough that freed
# state slots are handed out again (scenarios.py)
ONE_TOKEN = "--prompts one-token --kv-cache-gib 0.02"
PROOFS = {
    "gdn-ngram": _p("--preset ngram", smoke=True, fix=GDN),
    # its decodes cross an align block's end with drafts accepted: #50729's in-block shift (0.28.0),
    # counted where the release has the fused postprocess (0.22.0 .. 0.33.0, V1 runner)
    "gdn-ngram-prefix": _p(
        "--preset ngram --prompts shared-prefix --prefix-caching on --count-align-shifts",
        smoke=True,
        fix=GDN,
        known=("align-shift-copy-race",),
    ),
    "gdn-ngram-kp1": _p("--preset ngram --prompts k-plus-1", smoke=True, fix=GDN),
    "mtp": _p("--preset mtp", smoke=True, fix=GDN),
    "gdn-ngram-b1": _p("--preset ngram --batch 1", fix=GDN),
    "gdn-ngram-eager": _p("--preset ngram --mode eager", fix=GDN),
    # users' ngram on 0.32.0 and 0.33.0 (V2, prefix caching on): a hit one token short of the
    # prompt's end leaves a tail that V2 runs as a speculative decode row (scenarios.py)
    "tail-ngram-v2": _p("--preset ngram --model-runner v2 --prompts prompt-tail --prefix-caching on"),
    # users' ngram runner on 0.33.0, through verify's V2 hook of the scripted drafts
    "gdn-ngram-v2": _p("--preset ngram --model-runner v2", fix=GDN),
    # FlashInfer's GDN prefill takes heads of 128 only, Qwen3.5's (the Qwen3-Next tiny model has 64)
    "gdn-ngram-flashinfer": _p("--model-class qwen3_5 --preset ngram --prefill-backend flashinfer", fix=GDN),
    # the same on (k+1) prompts, 1 a batch and MTP: the core proofs of vLLM 0.17.x on Hopper, where
    # the release runs FlashInfer's prefill whatever verify asks (scenarios.PREFILL_CHOICE_FROM)
    "gdn-ngram-kp1-flashinfer": _p(
        "--model-class qwen3_5 --preset ngram --prompts k-plus-1 --prefill-backend flashinfer", fix=GDN
    ),
    "gdn-ngram-b1-flashinfer": _p(
        "--model-class qwen3_5 --preset ngram --batch 1 --prefill-backend flashinfer", fix=GDN
    ),
    "mtp-flashinfer": _p("--model-class qwen3_5 --preset mtp --prefill-backend flashinfer", fix=GDN),
    "kp1-b1-fix-flashinfer": _p(
        "--model-class qwen3_5 --preset ngram --prompts k-plus-1 --batch 1 --prefill-backend flashinfer", SPEC_PREFILL
    ),
    "tq-mtp": _p("--preset mtp --kv-cache turboquant_k8v4", "ctl", smoke=True),
    "tq-mtp-b1": _p("--preset mtp --kv-cache turboquant_k8v4 --batch 1", "ctl"),
    # the TurboQuant presets other than k8v4
    "tq-mtp-4bit_nc": _p("--preset mtp --kv-cache turboquant_4bit_nc", "ctl"),
    "tq-mtp-k3v4_nc": _p("--preset mtp --kv-cache turboquant_k3v4_nc", "ctl"),
    "tq-mtp-3bit_nc": _p("--preset mtp --kv-cache turboquant_3bit_nc", "ctl"),
    # a dense hybrid (no MoE kernels size the workspace in the profile run) with TurboQuant and
    # MTP: the first draft step's decode asserts on 0.21 .. 0.23 without the reservation
    "qwen3_5-tq-mtp": _p("--model-class qwen3_5 --preset mtp --kv-cache turboquant_k8v4", DECODE_WORKSPACE),
    "qwen3_5-gdn-ngram": _p("--model-class qwen3_5 --preset ngram", fix=GDN),
    "qwen3_5-mtp": _p("--model-class qwen3_5 --preset mtp", fix=GDN),
    "qwen3_5_moe-gdn-ngram": _p("--model-class qwen3_5_moe --preset ngram", fix=GDN),
    # users' 2x RTX 3090 / A5000 shape: the GDN proof at tensor parallel 2, on the two-GPU kind
    "tp2": _p("--preset ngram --tp 2", fix=GDN),
    # #46460 (docs/SIBLING-BUGS.md section 3): the bug is the release's own and the rest of the
    # series moves its exposure, so the control is the series less turboquant-prefill-fastpath;
    # verify judges the plain TurboQuant engine of both too (bf16 calibration)
    "tq-continuation": _p(
        "--preset ngram --kv-cache turboquant_k8v4 --prompts tq-continuation --prefix-caching on", FASTPATH, smoke=True
    ),
    # Sibling bugs the series leaves alone (docs/SIBLING-BUGS.md): an affected release fails on
    # both sites; each is a positive control to look for, not a proof of the series.
    # section 1, async count read at moved rows; the async-off run attributes it
    "churn-mtp-async": _p(
        "--preset mtp --prompts churn --prefix-caching on --async-scheduling on",
        known=("async-count-moved-rows", "gdn-mtp-async-illegal-address"),
    ),
    "churn-mtp-sync": _p(
        "--preset mtp --prompts churn --prefix-caching on --async-scheduling off", known=("async-count-moved-rows",)
    ),
    # section 5, a Mamba prefix hit past full attention's with MTP (0.20 .. 0.25)
    "pc-mtp": _p("--preset mtp --prompts producer-consumer --prefix-caching on", known=("prefix-cache-mtp-hit",)),
    # the same, judged by output logprobs too: 0.20.0's over-hit moved 23 of 24 outputs with every
    # token's regret under the threshold (2026-11-27)
    "pc-mtp-lp": _p(
        "--preset mtp --prompts producer-consumer --prefix-caching on --output-logprobs",
        known=("prefix-cache-mtp-hit",),
    ),
    # the same in a KV pool small enough that later requests take blocks earlier ones freed: with
    # 2 GiB no block is handed out twice in a run, so by the code the block the over-hit leaves
    # unwritten holds zeros (0.20.0, 2026-11-27: drift doubled, under its bound; the same drift
    # in 0.04 and 0.02 GiB, the latter handing freed blocks out again)
    "pc-mtp-lp-kv02": _p(
        "--preset mtp --prompts producer-consumer --prefix-caching on --output-logprobs --kv-cache-gib 0.02",
        known=("prefix-cache-mtp-hit",),
    ),
    "pc-mtp-lp-kv04": _p(
        "--preset mtp --prompts producer-consumer --prefix-caching on --output-logprobs --kv-cache-gib 0.04",
        known=("prefix-cache-mtp-hit",),
    ),
    # section 2, a k+1-token prefill replayed in a FULL decode graph
    "kp1-b1": _p("--preset ngram --prompts k-plus-1 --batch 1", smoke=True),
    "kp1-mtp": _p("--preset mtp --prompts k-plus-1"),
    # the same two against the series less its fix for section 2 (spec-prefill-decode-graph)
    "kp1-b1-fix": _p("--preset ngram --prompts k-plus-1 --batch 1", SPEC_PREFILL),
    "kp1-mtp-fix": _p("--preset mtp --prompts k-plus-1", SPEC_PREFILL),
    # section 7, MTP output degrading across requests: three rounds on each warm engine, every
    # one judged (a clean round 1 and failing later ones is the signature). producer-consumer
    # shares 330 tokens, two of MTP's 160-token align blocks, so round 2 hits the prefix cache
    # past MTP's one-block back-off (shared-prefix's 312-token prompts hold one block, no hit)
    "rounds-mtp-prefix": _p(
        "--preset mtp --prompts producer-consumer --prefix-caching on --rounds 3 --check-accepted-counts",
        smoke=True,
        known=("mtp-degrades-across-requests", "accepted-count-index"),
    ),
    "rounds-mtp": _p("--preset mtp --prefix-caching off --rounds 3", known=("mtp-degrades-across-requests",)),
    # section 8, prompt_logprobs with MTP: one 40-token prompt a step runs its prefill in a
    # PIECEWISE graph (captures up to 64 tokens); eager is the negative control
    "plogprobs-mtp-b1": _p("--preset mtp --batch 1 --prompt-logprobs", smoke=True, known=("prompt-logprobs-mtp",)),
    "plogprobs-mtp-b1-eager": _p(
        "--preset mtp --batch 1 --mode eager --prompt-logprobs", known=("prompt-logprobs-mtp",)
    ),
    # section 4, accepted counts outside 1..k+1, in section 1's MTP + async churn
    "counts-mtp-async-churn": _p(
        "--preset mtp --prompts churn --prefix-caching on --async-scheduling on --check-accepted-counts",
        smoke=True,
        known=("accepted-count-index",),
    ),
    # docs/SIBLING-BUGS.md section 11, the reports read on 2026-11-29, none run yet.
    # #53726 (0.27.1): churn-mtp-async above runs it in align mode; this one with prefix caching
    # off, hybrids' default before 0.28.0
    "churn-mtp-async-nopc": _p(
        "--preset mtp --prompts churn --prefix-caching off --async-scheduling on",
        known=("gdn-mtp-async-illegal-address",),
    ),
    # #52475: MTP on TurboQuant KV with prompts of 2,000 to 3,936 tokens, prefilled in chunks; the
    # control is TurboQuant as released (its verify path is #53180's)
    "tq-mtp-long": _p(
        "--preset mtp --kv-cache turboquant_k8v4 --prompts long-chunked", "ctl", known=("tq-mtp-long-repetition",)
    ),
    # #53180: tq-mtp at tensor parallel 2, on the two-GPU kind
    "tq-mtp-tp2": _p("--preset mtp --kv-cache turboquant_k8v4 --tp 2", "ctl", known=("tq-mtp-repetition",)),
    # #51565 (fixed upstream in 0.31.0): one-token prompts into freed rows beside ngram rows;
    # both sites carry it
    "one-token-ngram": _p(
        f"--preset ngram {ONE_TOKEN}", known=("gdn-one-token-first-chunk", "spec-pad-one-token-prompt")
    ),
    # the same with prefix caching off on releases whose default is on (0.29.0 and 0.31.0 failed
    # the series in Mamba align, 0.26.0 with prefix caching off, H100, 2026-12-06)
    "one-token-ngram-nopc": _p(
        f"--preset ngram {ONE_TOKEN} --prefix-caching off", known=("spec-pad-one-token-prompt",)
    ),
    # spec-pad-new-prompt's proof, the same one-token prompts against the series less it: the
    # series' own GDN fix then acts on both sites, so only the scheduler's padding differs
    "spec-pad-ngram": _p(f"--preset ngram {ONE_TOKEN}", "less-spec-pad-new-prompt"),
    # the same under MTP, which drafts every step (the V2 runner from 0.29.0)
    "spec-pad-mtp": _p(f"--preset mtp {ONE_TOKEN}", "less-spec-pad-new-prompt"),
    # #40875 / #56077: vLLM's own ngram proposer on tool-call-shaped prompts, at the release's
    # lookup and at the reports' workaround (prompt_lookup_min 8)
    "ngram-tool-calls": _p(
        "--preset ngram-vllm --preset ngram-vllm-min8 --prompts tool-calls", known=("ngram-tool-calls",)
    ),
    # #50729: the scripted drafts stop each row one token short of every align block's end and
    # offer one draft there; accepted, the postprocess shifts its conv window one row within the
    # block (the overlapping copy, unordered on 0.28.0): 24 rows crossing 3 block ends, 3 rounds
    # judged, the later two drafting from the engine's own output
    "align-shift-ngram": _p(
        "--preset ngram --prompts align-shifts --prefix-caching on --rounds 3 --count-align-shifts",
        fix=GDN,
        known=("align-shift-copy-race",),
    ),
    # #41190: MTP at tensor parallel 2 on the Qwen3.5 class (Qwen3.6's), on the two-GPU kind
    "qwen3_5-mtp-tp2": _p("--model-class qwen3_5 --preset mtp --tp 2", known=("spec-tp2-illegal-address",)),
    # docs/SIBLING-BUGS.md §9: Kimi K3's KDA builder, ngram on the tiny Kimi K3 checkpoint
    # (verify/kimi.py, written on the GPU machine: WRITTEN_MODELS), judged by vLLM's own
    # teacher-forced reference; its candidate fix runs as alt-kda-spec-consistent@kda-ngram
    "kda-ngram": _p("--model tiny-kimi-k3 --preset ngram", known=("kda-builder-routing",)),
}
# The checkpoints a proof's --model names that the GPU machine writes before the proof starts:
# the name, and the module whose `python -m MODULE DIR` writes it (with the proof's own site).
WRITTEN_MODELS = {"tiny-kimi-k3": "vllm_backports.verify.kimi"}
# Prompt sets whose lengths are counted in the Qwen3-Next tiny model's Mamba align blocks
# (verify/scenarios.py): on a class of larger GDN heads the block is longer, the prompts fill no
# block and the run shows nothing. On FlashInfer, which runs only those larger heads, the smoke
# test runs them on the Triton prefill instead.
BLOCK_TUNED = ("shared-prefix", "tq-continuation", "producer-consumer", "prompt-tail")
# What a proof runs unless it says otherwise: 16 a batch under CUDA graphs, users' shape.
DEFAULTS = {"--batch": "16", "--mode": "graphs"}


def option(options: tuple[str, ...], flag: str) -> str | None:
    """The value `options` give `flag`, None where they do not give it."""
    return options[options.index(flag) + 1] if flag in options else None


def with_defaults(options: tuple[str, ...]) -> tuple[str, ...]:
    extra = [x for flag, value in DEFAULTS.items() if flag not in options for x in (flag, value)]
    # ngram on V1, the runner whose uniform-decode test spec-prefill-decode-graph fixes, where
    # 0.32.0 and 0.33.0 take V2 (no longer listed V2-unsupported). The option holds for every engine
    # of the run: from 0.29 the plain baseline, V2 by default, runs on V1 with it. The proofs of
    # V2 itself name it.
    # verify --model keeps the release's runner choice (ngram's is V1 up to 0.31.0).
    if option(options, "--preset") == "ngram" and "--model-runner" not in options and "--model" not in options:
        extra += ["--model-runner", "v1"]
    return options + tuple(extra)


def smoke_runs(version: str, prefill_backend: str) -> dict[str, tuple[str, ...]]:
    """The smoke test's verify runs for a release on an arch's GDN prefill backend: each smoke
    proof's options with the defaults, less TurboQuant where the release refuses it on hybrids;
    on FlashInfer, whose GDN prefill runs heads of 128 only, on the Qwen3.5 class, but for the
    proofs of BLOCK_TUNED prompts, which keep their class and run on the Triton prefill where the
    release lets them (from PREFILL_CHOICE_FROM; before it they have no run on FlashInfer's arch)."""
    # here, not at the top: the GPU machine reads the table with the GPU machine's bare python3
    from packaging.version import Version

    from .scenarios import TURBOQUANT_ON_HYBRIDS_FROM, chooses_prefill

    runs = {}
    for name, proof in PROOFS.items():
        if not proof.smoke or (proof.turboquant and Version(version) < Version(TURBOQUANT_ON_HYBRIDS_FROM)):
            continue
        options = with_defaults(proof.options)
        if prefill_backend == "flashinfer" and option(options, "--prompts") in BLOCK_TUNED:
            if not chooses_prefill(version):
                continue
            options += ("--prefill-backend", "triton")
        else:
            options += ("--prefill-backend", prefill_backend)
            if prefill_backend == "flashinfer" and "--model-class" not in options:
                options += ("--model-class", "qwen3_5")
        runs[name] = options
    return runs


def main(argv: list[str]) -> int:
    if len(argv) == 1 and argv[0] in PROOFS:
        proof = PROOFS[argv[0]]
        print(proof.control, *with_defaults(proof.options))
        return 0
    print(f"usage: python -m vllm_backports.verify.proofs NAME (one of: {' '.join(PROOFS)})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
