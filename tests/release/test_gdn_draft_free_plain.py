"""gdn-draft-free-plain fits the runner of each series that carries it, after the patches before
it, and routes steps as its header says: a step without drafts takes the plain GDN path only when
no request of it verified drafts at its last scheduled step. The runner's two methods are run as
the patched file defines them, on stand-ins for the runner's buffers. The candidate
benchmarks/alternatives/gdn-draft-free-lean, applied after the whole series, builds such a step as
the release does, with no draft counts for the GDN builder: the condition its metadata build
hands the builders those counts on is run the same way."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.sites import apply_candidate, candidate
from vllm_backports.catalogue import Catalogue
from vllm_backports.hunks import Mismatch, apply_file

# numpy comes with torch: CI runs this in its vLLM 0.26.0 venv (.ci/run), where it cannot skip
# (it reads the runner from PyPI's wheels, not from the venv's vLLM)
np = pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parents[2]
BACKPORT = "gdn-draft-free-plain"
LEAN = "gdn-draft-free-lean"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"
METHODS = ("_drafted_before", "_set_decode_draft_tokens")
CATALOGUE = Catalogue(ROOT)
CARRIERS = [n for n in CATALOGUE.series_names() if any(p.backport_id == BACKPORT for p in CATALOGUE.series(n).patches)]


def test_every_series_that_routes_draft_free_rows_speculatively_carries_it():
    # gdn-spec-state's routing is what costs a draft-free step its plain path: wherever it ships,
    # this ships after it (the cost it removes is measured in docs/BENCHMARKS.md)
    spec_state = [n for n in CATALOGUE.series_names() if any(p.backport_id == "gdn-spec-state" for p in CATALOGUE.series(n).patches)]
    assert spec_state and CARRIERS == spec_state
    for name in CARRIERS:
        ids = [p.backport_id for p in CATALOGUE.series(name).patches]
        assert ids.index(BACKPORT) > ids.index("gdn-spec-state"), name


@pytest.fixture(scope="module", params=CARRIERS)
def sources(request, tmp_path_factory) -> dict[str, bytes]:
    """The runner of the series' first release with the patches before this one, with the whole
    series, and with the candidate gdn-draft-free-lean after the series."""
    from vllm_backports.pypi import fetch

    series = CATALOGUE.series(request.param)
    content = fetch(CATALOGUE.releases[series.releases[0]], [RUNNER]).files[RUNNER]
    out = {}
    for patch in series.patches:
        if patch.backport_id == BACKPORT:
            assert patch.header["Bug"] == "https://github.com/vllm-project/vllm/issues/39273"
            assert [f.path for f in patch.files] == [RUNNER]
            out["without"] = content
        for fpatch in patch.files:
            if fpatch.path == RUNNER:
                content = apply_file(content, fpatch)
                assert not isinstance(content, Mismatch), content
    site = tmp_path_factory.mktemp("lean")
    (site / RUNNER).parent.mkdir(parents=True)
    (site / RUNNER).write_bytes(content)
    apply_candidate(site, candidate(LEAN, series.releases[0]))
    return {**out, "with": content, "lean": (site / RUNNER).read_bytes()}


def runner_class(source: bytes) -> ast.ClassDef:
    return next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "GPUModelRunner")


def method(source: bytes, name: str) -> ast.FunctionDef:
    (fn,) = [n for n in runner_class(source).body if isinstance(n, ast.FunctionDef) and n.name == name]
    return fn


def calls(fn: ast.FunctionDef, name: str) -> list[ast.Call]:
    """The calls of the runner's own method `name` in `fn`, in the order ast.walk meets them."""
    return [n for n in ast.walk(fn) if isinstance(n, ast.Call) and ast.unparse(n.func) == f"self.{name}"]


class Runner:
    """The two methods as `source` defines them, on a runner of `max_reqs` rows whose requests
    are all past their prompts (every row of one token is a decode)."""

    def __init__(self, source: bytes, max_reqs: int = 4):
        import __future__

        fns = [n for n in runner_class(source).body if isinstance(n, ast.FunctionDef) and n.name in METHODS]
        namespace: dict = {"np": np}
        code = compile(
            ast.Module(body=fns, type_ignores=[]),
            RUNNER,
            "exec",
            flags=__future__.annotations.compiler_flag,
            dont_inherit=True,
        )
        exec(code, namespace)
        self.methods = {n.name: namespace[n.name] for n in fns}
        buffer = np.full(max_reqs, 99, dtype=np.int32)
        self.state = SimpleNamespace(
            _drafted_last=set(),
            num_decode_draft_tokens=SimpleNamespace(np=buffer, copy_to_gpu=lambda *a: None),
            input_batch=SimpleNamespace(
                num_computed_tokens_cpu=np.full(max_reqs, 100), num_prompt_tokens=np.full(max_reqs, 10)
            ),
        )
        for name, fn in self.methods.items():
            setattr(self.state, name, fn.__get__(self.state))

    def step(self, scheduled: dict[str, int], drafts: dict[str, int], finished=()) -> list[int]:
        """One step as _prepare_inputs runs it, requests in row order: the builder's draft counts
        a row (-1: the plain path; 0 or more: the speculative path)."""
        out = SimpleNamespace(
            num_scheduled_tokens=scheduled,
            scheduled_spec_decode_tokens={r: [7] * k for r, k in drafts.items()},
            finished_req_ids=set(finished),
        )
        reqs = list(scheduled)
        num_scheduled = np.array([scheduled[r] for r in reqs], dtype=np.int32)
        decode = np.array([drafts.get(r, -1) for r in reqs], dtype=np.int32)
        s = self.state
        if "_drafted_before" not in self.methods:
            s._set_decode_draft_tokens(decode if drafts else np.full(len(reqs), -1, dtype=np.int32), num_scheduled)
        elif drafts:
            s._drafted_before(out)
            s._set_decode_draft_tokens(decode, num_scheduled)
        else:
            s._set_decode_draft_tokens(np.full(len(reqs), -1, dtype=np.int32), num_scheduled, s._drafted_before(out))
        return s.num_decode_draft_tokens.np[: len(reqs)].tolist()


def test_it_calls_the_check_in_both_branches_of_prepare_inputs(sources):
    checks = calls(method(sources["with"], "_prepare_inputs"), "_drafted_before")
    assert [ast.unparse(c.args[0]) for c in checks] == ["scheduler_output", "scheduler_output"]
    # the series without it has no such check: every draft-free decode row is speculative there
    assert "_drafted_before" not in sources["without"].decode()


def test_one_request_drafting_one_step_in_ten(sources):
    """fixcost-ngram-sparse at 1 request: 3 drafts, then nine steps without."""
    steps = [({"r0": 4}, {"r0": 3})] + [({"r0": 1}, {})] * 9
    without, with_it = Runner(sources["without"]), Runner(sources["with"])
    assert [without.step(*s) for s in steps] == [[3]] + [[0]] * 9
    # the step after the drafts reads slot k-1: speculative; the next eight are plain
    assert [with_it.step(*s) for s in steps] == [[3], [0]] + [[-1]] * 8


def test_mtp_drafting_every_step_is_routed_as_without_it(sources):
    """MTP proposes k drafts for every decode row at every step: no step is draft-free, so the
    port leaves every row where the series without it put it (the cost it removes is not MTP's)."""
    # Runner.step's branch with drafts calls _set_decode_draft_tokens as the series without the
    # port did (two arguments, no routing flag): the release's call sites say so
    sets = calls(method(sources["with"], "_prepare_inputs"), "_set_decode_draft_tokens")
    assert sorted(len(c.args) + len(c.keywords) for c in sets) == [2, 3]
    steps = [({"r0": 4, "r1": 4, "r2": 4}, {"r0": 3, "r1": 3, "r2": 3})] * 10
    without, with_it = Runner(sources["without"]), Runner(sources["with"])
    assert [with_it.step(*s) for s in steps] == [without.step(*s) for s in steps] == [[3, 3, 3]] * 10
    # a row the scheduler cut to fewer drafts beside the others stays speculative on both
    cut = ({"r0": 4, "r1": 1, "r2": 3}, {"r0": 3, "r2": 2})
    assert with_it.step(*cut) == without.step(*cut) == [3, 0, 2]
    # drafts dropped for a step (near the length limit): every state may sit past slot 0, so the
    # port keeps them speculative too
    dropped = ({"r0": 1, "r1": 1, "r2": 1}, {})
    assert with_it.step(*dropped) == without.step(*dropped) == [0, 0, 0]


def test_a_request_left_out_of_a_step_keeps_its_drafted_mark(sources):
    runner = Runner(sources["with"])
    assert runner.step({"r0": 4, "r1": 1}, {"r0": 3}) == [3, 0]
    assert runner.step({"r1": 1}, {}) == [-1]  # r0 not scheduled: r1's state is in slot 0
    assert runner.step({"r0": 1, "r1": 1}, {}) == [0, 0]  # r0's first step since its drafts
    assert runner.step({"r0": 1, "r1": 1}, {}) == [-1, -1]


def test_a_step_with_drafts_or_a_prompt_chunk_is_built_as_the_series_builds_it(sources):
    runner = Runner(sources["with"])
    runner.state.input_batch.num_computed_tokens_cpu[1] = 0  # r1: a prompt chunk
    assert runner.step({"r0": 1, "r1": 5, "r2": 3}, {"r2": 2}) == [0, -1, 2]
    assert runner.step({"r0": 1, "r1": 5, "r2": 1}, {}) == [0, -1, 0]  # r2 drafted last step
    assert runner.step({"r0": 1, "r1": 5, "r2": 1}, {}) == [-1, -1, -1]


def builder_gate(source: bytes) -> ast.expr:
    """The condition on which _build_attention_metadata hands a builder the accepted and draft
    counts (gdn-spec-state's `use_spec_decode or ...`), less the isinstance() of the builder."""
    (gate,) = [
        node.test.values[0]
        for node in ast.walk(method(source, "_build_attention_metadata"))
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.BoolOp)
        and isinstance(node.test.op, ast.And)
        and ast.unparse(node.test.values[-1]).startswith("isinstance(builder,")
    ]
    return gate


class GDNAttentionMetadataBuilder:
    pass


class KDABuilder(GDNAttentionMetadataBuilder):  # Kimi K3's, a subclass with its own routing
    pass


class Mamba2AttentionMetadataBuilder:
    pass


def handed(gate: ast.expr, runner: Runner, use_spec_decode: bool) -> dict[str, bool]:
    """Whether each kind of builder gets the counts, as the runner stands."""
    return {
        kind.__name__: eval(
            compile(ast.Expression(gate), RUNNER, "eval"),
            {
                "use_spec_decode": use_spec_decode,
                "self": runner.state,
                "builder": kind(),
                "GDNAttentionMetadataBuilder": GDNAttentionMetadataBuilder,
            },
        )
        for kind in (GDNAttentionMetadataBuilder, KDABuilder, Mamba2AttentionMetadataBuilder)
    }


def test_with_the_candidate_a_plain_step_hands_the_gdn_builder_no_draft_counts(sources):
    """The release's build on a step without drafts: the GDN builder gets no draft or accepted
    counts, so none of gdn-spec-state's routing runs on the host (its cost at 1 request). The
    other builders keep them on every step, as the series hands them."""
    gate = builder_gate(sources["lean"])
    runner = Runner(sources["lean"])
    runner.state.speculative_config = object()
    # before the first real step only dummy runs build, and they pass use_spec_decode
    init = method(sources["lean"], "__init__")
    assert "self._gdn_spec_rows = False" in [ast.unparse(n) for n in ast.walk(init) if isinstance(n, ast.Assign)]
    everyone = {"GDNAttentionMetadataBuilder": True, "KDABuilder": True, "Mamba2AttentionMetadataBuilder": True}
    assert handed(gate, runner, use_spec_decode=True) == everyone  # a dummy run
    # drafts, the step after them, then two plain steps
    steps = [({"r0": 4}, {"r0": 3})] + [({"r0": 1}, {})] * 3
    got = []
    for scheduled, drafts in steps:
        runner.step(scheduled, drafts)
        got.append(handed(gate, runner, use_spec_decode=bool(drafts)))
    assert got == [everyone] * 2 + [{**everyone, "GDNAttentionMetadataBuilder": False}] * 2
    # the shipped series hands them to every builder on every step of a speculative engine
    series = Runner(sources["with"])
    series.state.speculative_config = object()
    assert handed(builder_gate(sources["with"]), series, use_spec_decode=False) == everyone
    # and no builder gets them without a speculative config, as in the release
    runner.state.speculative_config = None
    runner.step({"r0": 1}, {})
    assert not any(handed(gate, runner, use_spec_decode=False).values())


def test_the_candidate_routes_rows_as_the_series_does(sources):
    steps = [({"r0": 4, "r1": 1}, {"r0": 3})] + [({"r0": 1, "r1": 1}, {})] * 3 + [({"r1": 3}, {"r1": 2})]
    series, lean = Runner(sources["with"]), Runner(sources["lean"])
    assert [lean.step(*s) for s in steps] == [series.step(*s) for s in steps]


def test_the_step_is_routed_before_its_metadata_is_built(sources):
    execute = method(sources["lean"], "execute_model")
    lines = {name: [c.lineno for c in calls(execute, name)] for name in ("_prepare_inputs", "_build_attention_metadata")}
    assert len(lines["_prepare_inputs"]) == 1 and lines["_build_attention_metadata"]
    assert lines["_prepare_inputs"][0] < min(lines["_build_attention_metadata"])


def test_finished_requests_leave_the_set(sources):
    runner = Runner(sources["with"])
    runner.step({"r0": 4}, {"r0": 3})
    runner.step({"r1": 1}, {}, finished=["r0"])
    assert runner.state._drafted_last == set()


# The series that also route the V2 runner (gdn-spec-state-v2-runner, 0.29 .. 0.31): their port
# changes the V1 runner alone, ngram's there; V2's draft-free rows keep the series' speculative
# routing, which its one-token decode graphs are captured on (the header).
V2_SERIES = [n for n in CARRIERS if any(p.backport_id == "gdn-spec-state-v2-runner" for p in CATALOGUE.series(n).patches)]


def test_the_v2_runner_series_carry_it():
    assert V2_SERIES == ["0.29.0", "0.30.0", "0.31.0"]


@pytest.mark.parametrize("name", V2_SERIES)
def test_on_the_v2_runner_series_only_the_v1_runner_changes(name):
    patch = next(p for p in CATALOGUE.series(name).patches if p.backport_id == BACKPORT)
    assert [f.path for f in patch.files] == [RUNNER]
    assert "Only the V1 runner changes" in patch.header["Description"]
