"""The align-mode shift count ([known.align-shift-copy-race], vLLM #50729): an opt-in hook, in the
engine's process, on the V1 runner's fused align postprocess.

With speculation and prefix caching in align mode, when a step's accepted tokens complete the
block its running state sits in, the postprocess copies that state to the block's aligned end. If
the source block is the destination (the state was already in it), the conv window is shifted in
place by `bias` rows (tokens accepted past the running state): rows bias.. go to rows 0... GDN's
window holds conv kernel - 1 + k rows (6 with a kernel of 4 and k=3), so a shift of b rows with
2b under that many overlaps its own source; 0.28.0's fused kernel gives such a copy no ordering,
which is the race. Whether a run met it is what this counts: the hook reads the per-request inputs
the runner staged for the kernel (host copies in `ctx.*_buf.np`) and the accepted counts (one host
sync a step: debug only), repeats the kernel's decision on the host, and reads the window's rows
from the context's conv widths once the kernel has bound them.

The V1 runner of 0.22.0 .. 0.33.0 calls `mamba_utils.postprocess_mamba_align_gpu`; the copy
can race on 0.28.0 only (versions.toml says why), so the other releases' counts are what a run
there met without the race. Earlier releases, and the V2 runner, lack it; the check says so in
its report instead of reporting nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .counts import hookable

MODULE = "vllm.v1.worker.mamba_utils"
FUNCTION = "postprocess_mamba_align_gpu"
INPUTS = ("mamba_state_idx_buf", "num_scheduled_tokens_buf", "num_computed_tokens_buf", "num_draft_tokens_buf")


def decide(block_size: int, src: int, scheduled: int, computed: int, drafts: int, accepted: int) -> tuple[str, int]:
    """What the fused postprocess does with one request, as its kernel decides it: ("none", 0) no
    copy, ("cross", bias) a copy to another block, ("in-place", 0) a skipped self-copy, ("shift",
    bias) a shift within the block by `bias` rows."""
    running = computed + scheduled - drafts  # tokens the running state has seen
    aligned = (running + accepted - 1) // block_size * block_size
    if aligned < running:
        return "none", 0
    bias = aligned - running
    if src != aligned // block_size - 1:
        return "cross", bias
    return ("shift", bias) if bias else ("in-place", 0)


@dataclass
class Tally:
    steps: int = 0  # postprocess calls with requests whose inputs were read
    rows: int = 0
    cross: int = 0
    in_place: int = 0
    shifts: dict[int, int] = field(default_factory=dict)  # rows shifted -> in-block shifts

    def observe(self, kind: str, bias: int) -> None:
        self.rows += 1
        if kind == "cross":
            self.cross += 1
        elif kind == "in-place":
            self.in_place += 1
        elif kind == "shift":
            self.shifts[bias] = self.shifts.get(bias, 0) + 1

    def as_dict(self, conv_rows: int | None = None) -> dict:
        overlapping = None if conv_rows is None else sum(n for b, n in self.shifts.items() if 2 * b < conv_rows)
        return {
            "overlapping": overlapping,
            "steps": self.steps,
            "rows": self.rows,
            "cross_block_copies": self.cross,
            "in_place": self.in_place,
            "in_block_shifts": {str(b): n for b, n in sorted(self.shifts.items())},
        }


@dataclass
class Record:
    """Start-up steps (dummy inputs) apart from the requests', which begin at serving()."""

    startup: Tally = field(default_factory=Tally)
    requests: Tally = field(default_factory=Tally)
    serving_from_now: bool = False
    unreadable: str | None = None
    conv_rows: int | None = None  # rows of the conv window, once the fused kernel has bound them

    def serving(self) -> None:
        self.serving_from_now = True

    def tally(self) -> Tally:
        return self.requests if self.serving_from_now else self.startup


def observe(record: Record, ctx, num_reqs: int, accepted_gpu) -> None:
    """Read one postprocess call's inputs into `record` (one host sync)."""
    missing = [name for name in (*INPUTS, "block_size") if getattr(ctx, name, None) is None]
    if missing:
        record.unreadable = record.unreadable or f"the align context has no {missing[0]}"
        return
    if num_reqs <= 0:
        return
    src, scheduled, computed, drafts = (getattr(ctx, name).np[:num_reqs].tolist() for name in INPUTS)
    rows = list(zip(src, scheduled, computed, drafts, accepted_gpu[:num_reqs].tolist(), strict=True))
    tally = record.tally()
    tally.steps += 1
    for row in rows:
        tally.observe(*decide(ctx.block_size, *row))
    widths = getattr(ctx, "state_conv_widths", None)
    if record.conv_rows is None and widths is not None and getattr(ctx, "is_initialized", False):
        record.conv_rows = max(widths.tolist()) or None  # 0 for temporal states


def summarise(record: Record | None, why_not: str | None = None) -> dict:
    """status "counted" (the requests' steps were read; `overlapping`: shifts whose source and
    destination overlap, given the window's `conv_rows`), "not seen" (no request's step reached
    the align postprocess: `why`) or "unavailable" (no hook: `why`). A step that could not be read
    is said in `unreadable` whatever the status."""
    if record is None:
        return {"status": "unavailable", "why": why_not or "the hook was not installed"}
    out = {
        **record.requests.as_dict(record.conv_rows),
        "conv_rows": record.conv_rows,
        "startup": record.startup.as_dict(record.conv_rows),
    }
    if record.unreadable:
        out["unreadable"] = record.unreadable
    if record.requests.steps == 0:
        why = record.unreadable or (
            "no request's step ran the V1 runner's align postprocess (speculation with prefix caching on)"
        )
        return {"status": "not seen", "why": why, **out}
    return {"status": "counted", **out}


def install(tp: int = 1) -> tuple[Record | None, str | None]:
    """Wrap the release's fused align postprocess. Returns the record it fills, or None and why not."""
    module, why = hookable(tp, "the postprocess runs", MODULE)
    if module is None:
        return None, why
    original = getattr(module, FUNCTION, None)
    if original is None:
        return None, f"{MODULE} has no {FUNCTION} in this release (its align postprocess is not the fused kernel)"
    record = Record()

    def postprocess(*, bufs, num_reqs, num_accepted_tokens_gpu, **kwargs):
        # the kernel first: its first call binds the context's conv widths; it changes none of
        # the inputs read here (its counts go to num_accepted_tokens_out)
        done = original(bufs=bufs, num_reqs=num_reqs, num_accepted_tokens_gpu=num_accepted_tokens_gpu, **kwargs)
        ctx = getattr(bufs, "postprocess_align", None)
        if ctx is None:
            record.unreadable = record.unreadable or "the runner's buffers have no postprocess_align"
            return done
        try:
            observe(record, ctx, num_reqs, num_accepted_tokens_gpu)
        except Exception as exc:  # a debug count must not be what fails the engine's step
            record.unreadable = record.unreadable or f"reading the step failed: {exc!r}"
        return done

    setattr(module, FUNCTION, postprocess)
    return record, None
