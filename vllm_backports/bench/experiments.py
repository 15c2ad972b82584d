"""What each A/B run compares: two arms (a site and an engine configuration each) and the target
the ratio B/A of decode tokens/s is held to.

Sites are labels the run is given directories for (lab/sites.py: raw = pristine, fix = the
shipped series, p65 = TurboQuant's P65 alternative, less-ID = the shipped series less backport
ID). Dummy weights make ngram and MTP proposals meaningless, so ngram's drafts are scripted
(verify.drafts) to a set fraction of right draft tokens; MTP runs vLLM's own drafter on its dummy
layer and its acceptance is read back and reported: next to none as drawn (`mtp`), all with every
logit zeroed on both arms (`mtp-100`).
"""

from __future__ import annotations

from dataclasses import dataclass

K = 3  # draft tokens a step, ngram and MTP alike (verify.scenarios.PRESETS)

# Scripted ngram drafts, as (drafts offered, of which right) per step, which verify.drafts.Script
# runs per request at staggered phases. "0", "50", "90": every step offers K drafts and that
# percentage of them is right (the right ones come first: a wrong draft ends acceptance).
# "sparse": K right drafts one step in ten and none on the other nine, so most rows of a batch
# are draft-free, the rows the series routes differently from the pristine release (pristine:
# the plain path from a stale state slot; fixed: the speculative path), where the fix's own cost is.
SCRIPTS: dict[str, tuple[tuple[int, int], ...]] = {
    "0": ((K, 0),),
    "50": ((K, 2), (K, 1)),
    "90": ((K, K),) * 8 + ((K, 2), (K, 1)),
    "sparse": ((K, K),) + ((0, 0),) * 9,
}


def scripted_fraction(schedule: tuple[tuple[int, int], ...]) -> float:
    """Right draft tokens over offered ones, over one pass of the schedule."""
    return sum(c for _, c in schedule) / sum(o for o, _ in schedule)


def script_text(name: str) -> str:
    """What a script drafts, in words, from its schedule."""
    schedule = SCRIPTS[name]
    right = f"{round(100 * scripted_fraction(schedule))}% scripted"
    drafting = sum(1 for offered, _ in schedule if offered)
    return right if drafting == len(schedule) else f"drafts {drafting} step in {len(schedule)}, {right}"


@dataclass(frozen=True)
class Arm:
    site: str
    speculative: str | None = None  # verify.scenarios.PRESETS name
    script: str | None = None  # SCRIPTS name, scripted ngram only
    kv_cache: str = "auto"
    # every lm_head zeroed after load (bench.worker.zero_lm_heads): every logit 0, so greedy
    # decoding and the MTP drafter's argmax both pick token 0 and every draft is right; the
    # kernels, shapes and graphs are those of the same model with its weights
    constant_logits: bool = False

    def describe(self) -> str:
        spec = self.speculative or "no speculation"
        if self.script is not None:
            spec += f" ({script_text(self.script)})"
        kv = "" if self.kv_cache == "auto" else f", {self.kv_cache}"
        logits = ", logits all 0" if self.constant_logits else ""
        return f"{self.site}, {spec}{kv}{logits}"


@dataclass(frozen=True)
class Experiment:
    name: str
    a: Arm
    b: Arm
    at_least: float | None  # target for B/A of decode tokens/s; None: reported only
    half_width: float | None = None  # target for the interval's half-width, relative

    def sites(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.a.site, self.b.site)))


def _ngram(script: str) -> Experiment:
    return Experiment(f"ngram-{script}", Arm("fix"), Arm("fix", "ngram", script), None)


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        # the fix must cost nothing without speculation: its lines do not run there
        Experiment("nospec", Arm("raw"), Arm("fix"), at_least=0.99, half_width=0.005),
        *(_ngram(name) for name in SCRIPTS if name.isdigit()),
        # MTP's dummy layer never drafts the dummy model's token: acceptance 0, the cost floor
        Experiment("mtp", Arm("fix"), Arm("fix", "mtp"), None),
        # ... and with every logit 0 on both arms, every draft right: the ceiling
        Experiment("mtp-100", Arm("fix", constant_logits=True), Arm("fix", "mtp", constant_logits=True), None),
        # what the fix itself costs where its lines run, speculation on both arms (the pristine
        # arm decodes wrongly, the bug this series fixes; the acceptance read back says whether
        # its drafts still landed as scripted)
        Experiment("fixcost-ngram-90", Arm("raw", "ngram", "90"), Arm("fix", "ngram", "90"), None),
        Experiment("fixcost-ngram-sparse", Arm("raw", "ngram", "sparse"), Arm("fix", "ngram", "sparse"), None),
        Experiment("fixcost-mtp", Arm("raw", "mtp"), Arm("fix", "mtp"), None),
        # what gdn-draft-free-plain saves where gdn-spec-state's cost is (draft-free steps after
        # draft-free steps run the plain path again); fixcost-ngram-sparse gives what is left
        Experiment(
            "dfp-ngram-sparse",
            Arm("less-gdn-draft-free-plain", "ngram", "sparse"),
            Arm("fix", "ngram", "sparse"),
            None,
        ),
        # the candidate gdn-draft-free-lean (benchmarks/alternatives) against the pristine release,
        # as fixcost-ngram-sparse measures the series: its plain steps skip the series' host work
        Experiment(
            "leancost-ngram-sparse",
            Arm("raw", "ngram", "sparse"),
            Arm("alt-gdn-draft-free-lean", "ngram", "sparse"),
            None,
        ),
        # issue 4's aim: verify batches inside full graphs, twice P65's speed
        Experiment(
            "tq-mtp",
            Arm("p65", "mtp", kv_cache="turboquant_k8v4"),
            Arm("fix", "mtp", kv_cache="turboquant_k8v4"),
            at_least=2.0,
        ),
    )
}
