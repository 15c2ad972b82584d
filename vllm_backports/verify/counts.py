"""The accepted-count range check (docs/SIBLING-BUGS.md section 4): an opt-in hook, in the engine's
process, on the GDN attention metadata builder.

The speculative GDN kernels read a request's starting state slot at `num_accepted - 1` and shift
the conv window by it, without a bound: a count of 0, or one above k+1, points at another row's
state. The hook wraps the builder's `build` and, for every build with speculative rows, reads the
minimum and maximum count those rows carry and how many fall outside 1..k+1 (one host sync per
build: debug only). The engine spec's `check_accepted_counts` turns it on; the engine marks
when its start-up runs end (Record.serving), and only the requests' builds are judged.

Across 0.20.0 .. 0.33.0 the builder is `GDNAttentionMetadataBuilder` in
`vllm/v1/attention/backends/gdn_attn.py`; its metadata names the speculative rows'
count `num_spec_decodes` and their counts the first entries of `num_accepted_tokens` (a CUDA-graph
step pads the rest with 1). Both model runners build through it (V2: `model_states/mamba_hybrid.py`).
Where a release lacks any of these, the check says so in its report instead of reporting nothing.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from types import ModuleType

BUILDER_MODULE = "vllm.v1.attention.backends.gdn_attn"
BUILDER_CLASS = "GDNAttentionMetadataBuilder"
ROWS_FIELD, COUNTS_FIELD = "num_spec_decodes", "num_accepted_tokens"
EXAMPLES = 5  # out-of-range builds kept in the report, the first ones met


@dataclass
class Tally:
    """Counts read over some builds; plain numbers, so that summarise() runs without torch."""

    builds: int = 0  # builds with speculative rows whose counts were read
    rows: int = 0
    low: int | None = None
    high: int | None = None
    outside: int = 0  # rows whose count is outside 1..k+1
    examples: list[dict] = field(default_factory=list)

    def observe(self, num_rows: int, low: int, high: int, outside: int) -> None:
        self.builds += 1
        self.rows += num_rows
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)
        self.outside += outside
        if outside and len(self.examples) < EXAMPLES:
            self.examples.append({"build": self.builds, "rows": num_rows, "min": low, "max": high, "outside": outside})

    def as_dict(self) -> dict:
        return {
            "builds": self.builds,
            "rows": self.rows,
            "min": self.low,
            "max": self.high,
            "outside": self.outside,
            "examples": self.examples,
        }


@dataclass
class Record:
    """What the hook saw: builds of the engine's start (profiling and warm-up runs on dummy
    inputs) apart from those of requests, which begin at serving()."""

    k: int
    startup: Tally = field(default_factory=Tally)
    requests: Tally = field(default_factory=Tally)
    serving_from_now: bool = False
    in_capture: int = 0  # builds during CUDA-graph capture: reading a count there would break it
    unreadable: str | None = None  # the first build whose metadata lacked a field, and what

    def serving(self) -> None:
        """Builds from here on are the requests' (the engine has started)."""
        self.serving_from_now = True

    def observe(self, num_rows: int, low: int, high: int, outside: int) -> None:
        (self.requests if self.serving_from_now else self.startup).observe(num_rows, low, high, outside)


def summarise(record: Record | None, why_not: str | None = None) -> dict:
    """The JSON of the check, on the requests' builds. status: "checked" (counts read; `in_range`
    says whether every one was within 1..k+1), "not seen" (the hook was in place but no request's
    build had speculative rows, or their counts could not be read: `why`), or "unavailable" (no
    hook: `why`). `startup`: the same numbers for the engine's own start-up runs, kept apart
    (dummy inputs; not judged)."""
    if record is None:
        return {"status": "unavailable", "why": why_not or "the hook was not installed", "in_range": None}
    out: dict = {
        "k": record.k,
        "range": [1, record.k + 1],
        **record.requests.as_dict(),
        "builds_in_capture": record.in_capture,
        "startup": record.startup.as_dict(),
    }
    if record.requests.builds == 0:
        why = record.unreadable or why_not or "the builder never built a request's step with speculative rows"
        return {"status": "not seen", "why": why, "in_range": None, **out}
    return {"status": "checked", "in_range": record.requests.outside == 0, **out}


def observe_metadata(record: Record, metadata) -> None:
    """Read one build's speculative counts into `record` (one host sync)."""
    if not hasattr(metadata, ROWS_FIELD) or not hasattr(metadata, COUNTS_FIELD):
        if record.unreadable is None:
            record.unreadable = (
                f"{type(metadata).__name__} has no {ROWS_FIELD if not hasattr(metadata, ROWS_FIELD) else COUNTS_FIELD}"
            )
        return
    n = int(getattr(metadata, ROWS_FIELD) or 0)
    counts = getattr(metadata, COUNTS_FIELD)
    if n == 0 or counts is None:
        return
    import torch

    if counts.is_cuda and torch.cuda.is_current_stream_capturing():
        record.in_capture += 1
        return
    x = counts[:n]
    wrong = ((x < 1) | (x > record.k + 1)).sum()
    low, high, outside = torch.stack([x.min().long(), x.max().long(), wrong.long()]).tolist()
    record.observe(n, int(low), int(high), int(outside))


def hookable(tp: int, what: str, name: str) -> tuple[ModuleType | None, str | None]:
    """The release's module `name`, whose `what` (the runner's part a debug hook wraps, with its
    verb) the hook reads, or None and why not: the debug hooks (this one, verify/shifts.py) read
    back in the engine's process only."""
    if tp > 1:
        return None, f"at TP > 1 {what} in worker processes, which this hook cannot read back"
    if os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "0") != "0":
        return None, "VLLM_ENABLE_V1_MULTIPROCESSING is on: the engine core runs in another process"
    try:
        return importlib.import_module(name), None
    except ImportError as exc:
        return None, f"no {name} in this release ({exc})"


def install(k: int, tp: int = 1) -> tuple[Record | None, str | None]:
    """Wrap the release's GDN builder. Returns the record the hook fills, or None and why not."""
    module, why = hookable(tp, "the builders run", BUILDER_MODULE)
    if module is None:
        return None, why
    builder = getattr(module, BUILDER_CLASS, None)
    if builder is None or not callable(getattr(builder, "build", None)):
        return None, f"{BUILDER_MODULE} has no {BUILDER_CLASS}.build in this release"
    record = Record(k=k)
    original = builder.build

    def build(self, *args, **kwargs):
        metadata = original(self, *args, **kwargs)
        observe_metadata(record, metadata)
        return metadata

    builder.build = build
    return record, None
