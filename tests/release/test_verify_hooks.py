"""What verify's run-time hooks (verify/drafts.py, verify/counts.py) take for granted about vLLM,
read off the real pristine files of every catalogued release: the names and order of the
arguments they receive, the attributes they read, and that what they return reaches the runner.
A release that moves any of these would make a scripted run silently exercise nothing, or fail
only on the GPU."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest

from tests.verify.test_drafts import running_block
from vllm_backports import pypi
from vllm_backports.record import parse_record
from vllm_backports.verify import counts, shifts

from .conftest import CATALOGUE

V1_PROPOSER = "vllm/v1/spec_decode/ngram_proposer.py"
V2_SPECULATOR = "vllm/v1/worker/gpu/spec_decode/ngram/speculator.py"
V2_CHOOSER = "vllm/v1/worker/gpu/spec_decode/__init__.py"
V2_STATES = "vllm/v1/worker/gpu/states.py"
V2_BATCH = "vllm/v1/worker/gpu/input_batch.py"
V2_RUNNER = "vllm/v1/worker/gpu/model_runner.py"
BUILDER = counts.BUILDER_MODULE.replace(".", "/") + ".py"


def _read(version: str, paths: list[str]) -> dict[str, ast.Module]:
    fetched = pypi.fetch(CATALOGUE.releases[version], paths)
    return {path: ast.parse(data) for path, data in fetched.files.items()}


def _shipped(version: str) -> set[str]:
    return set(parse_record(pypi.fetch(CATALOGUE.releases[version], [V1_PROPOSER]).record))


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    found = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name]
    assert len(found) == 1, f"class {name}: {len(found)} definitions"
    return found[0]


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    found = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert found, f"{cls.name}.{name} is gone"
    return found[-1]


def _self_attributes(fn: ast.FunctionDef) -> set[str]:
    """The attributes `fn` assigns on self."""
    out = set()
    for node in ast.walk(fn):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                out.add(t.attr)
    return out


def _fields(cls: ast.ClassDef) -> set[str]:
    return {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_the_v1_ngram_hook_receives_what_it_reads(version):
    tree = _read(version, [V1_PROPOSER])[V1_PROPOSER]
    proposer = _class(tree, "NgramProposer")
    params = [a.arg for a in _method(proposer, "batch_propose").args.args]
    # drafts.install's batch_propose(self, num_requests, valid_ngram_requests, num_tokens_no_spec,
    # token_ids_cpu, k=None)
    assert params[:5] == ["self", "num_requests", "valid_ngram_requests", "num_tokens_no_spec", "token_ids_cpu"]
    assert params[5:] in ([], ["k"])
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "batch_propose"
    ]
    assert calls, "propose no longer calls batch_propose: the hook would never run"
    for call in calls:
        assert len(call.args) == len(params) - 1 and not call.keywords


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_the_v2_ngram_hook_reads_what_the_speculator_and_its_kernels_read(version):
    if V2_SPECULATOR not in _shipped(version):
        # drafts._install_v2 then finds no module and hooks V1 alone; no V2 runner drafts ngram
        chooser = _shipped(version) & {V2_CHOOSER} and _read(version, [V2_CHOOSER])[V2_CHOOSER]
        assert not chooser or "ngram" not in ast.unparse(chooser)
        return
    trees = _read(version, [V2_SPECULATOR, V2_CHOOSER, V2_STATES, V2_BATCH, V2_RUNNER])
    # the V2 runner takes this class for ngram
    assert "NgramGPUSpeculator" in ast.unparse(trees[V2_CHOOSER])
    speculator = _class(trees[V2_SPECULATOR], "NgramGPUSpeculator")
    propose = _method(speculator, "propose")
    params = [a.arg for a in propose.args.args + propose.args.kwonlyargs]
    assert {"input_batch", "num_sampled", "dummy_run"} <= set(params)
    assert "req_states" in _self_attributes(_method(speculator, "__init__"))
    # what the hook writes reaches the runner: propose returns a view of self.drafts, and the
    # runner takes the drafts from what propose returns
    for ret in (n for n in ast.walk(propose) if isinstance(n, ast.Return)):
        assert ast.unparse(ret.value).startswith("self.drafts["), ast.unparse(ret)
    taken = [
        n
        for n in ast.walk(trees[V2_RUNNER])
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Call)
        and ast.unparse(n.value.func) == "self.speculator.propose"
    ]
    assert taken, "the V2 runner no longer takes its drafts from speculator.propose's result"
    # the kernels' own inputs, which the hook reads the same way
    body = ast.unparse(propose)
    for read in ("req_states.all_token_ids.gpu", "req_states.total_len.gpu", "input_batch.idx_mapping"):
        assert read in body, read
    state = _class(trees[V2_STATES], "RequestState")
    assert {"total_len", "all_token_ids"} <= _self_attributes(_method(state, "__init__"))
    assert {"num_reqs", "idx_mapping"} <= _fields(_class(trees[V2_BATCH], "InputBatch"))


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_the_accepted_count_hook_finds_its_builder_and_fields(version):
    if BUILDER not in _shipped(version):
        pytest.skip(f"{version} has no {BUILDER}: counts.install says so in the report")
    tree = _read(version, [BUILDER])[BUILDER]
    _method(_class(tree, counts.BUILDER_CLASS), "build")
    metadata = _class(tree, "GDNAttentionMetadata")
    assert {counts.ROWS_FIELD, counts.COUNTS_FIELD} <= _fields(metadata)


SAMPLER = "vllm/v1/sample/ops/topk_topp_sampler.py"


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_the_sampler_switch_verify_sets_is_the_one_the_release_reads(version):
    """verify/engine.py sets VLLM_USE_FLASHINFER_SAMPLER=0 so that no engine builds FlashInfer's
    sampling module: the release must define the switch and choose its torch sampler by it."""
    fetched = pypi.fetch(CATALOGUE.releases[version], [SAMPLER, "vllm/envs.py"]).files
    envs, sampler = fetched["vllm/envs.py"].decode(), ast.parse(fetched[SAMPLER])
    assert '"VLLM_USE_FLASHINFER_SAMPLER"' in envs
    reads = [
        n for n in ast.walk(sampler)
        if isinstance(n, ast.Attribute) and n.attr == "VLLM_USE_FLASHINFER_SAMPLER"
        and isinstance(n.value, ast.Name) and n.value.id == "envs"
    ]
    assert reads, f"{SAMPLER} no longer reads envs.VLLM_USE_FLASHINFER_SAMPLER"
    methods = {m.name for m in _class(sampler, "TopKTopPSampler").body if isinstance(m, ast.FunctionDef)}
    assert "forward_native" in methods


MAMBA_UTILS = shifts.MODULE.replace(".", "/") + ".py"
V1_RUNNER = "vllm/v1/worker/gpu_model_runner.py"
DECISION = ("num_tokens_running_state", "new_num_computed", "aligned_new_computed", "needs_copy",
            "accept_token_bias", "dest_block_idx")


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, f"{name}: {len(found)} definitions"
    return found[0]


def _runnable(statements: list[ast.stmt], name: str):
    """A release's statements as code to exec on chosen values (`x: T = v` run as `x = v`)."""
    plain = [ast.Assign(targets=[n.target], value=n.value) if isinstance(n, ast.AnnAssign) else n for n in statements]
    return compile(ast.fix_missing_locations(ast.Module(body=plain, type_ignores=[])), name, "exec")


def _kernel_decision(kernel: ast.FunctionDef):
    """The fused postprocess kernel's own decision statements as a Python function of one request's
    inputs: its assignments of DECISION, on the path where the runner stages scheduled, computed
    and draft counts (not PRECOMPUTED_NEW_COMPUTED); the inputs it loads are given as values."""
    statements: list[ast.stmt] = []

    def take(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "PRECOMPUTED_NEW_COMPUTED":
                take(node.orelse)
            elif isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets][0] in DECISION:
                statements.append(node)

    take(kernel.body)
    assigned = [n.targets[0].id for n in statements]
    assert sorted(assigned) == sorted(DECISION), f"the kernel's decision is not what shifts.decide mirrors: {assigned}"
    code = _runnable(statements, "kernel")

    def decision(block_size, src, scheduled, computed, drafts, accepted):
        names = {"block_size": block_size, "src_block_idx": src, "num_scheduled": scheduled,
                 "num_computed": computed, "num_draft": drafts, "num_accepted": accepted}
        exec(code, {}, names)
        return names
    return decision


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_the_align_shift_count_repeats_the_fused_postprocess_decision(version):
    """verify/shifts.py wraps postprocess_mamba_align_gpu, reads the context's staged inputs and
    decides as the fused kernel does: its decision here is the release's own kernel statements,
    run on a grid of inputs around two block ends."""
    if MAMBA_UTILS not in _shipped(version):
        pytest.skip(f"{version} has no {MAMBA_UTILS}")
    trees = _read(version, [MAMBA_UTILS, V1_RUNNER])
    utils = trees[MAMBA_UTILS]
    if not any(isinstance(n, ast.FunctionDef) and n.name == shifts.FUNCTION for n in utils.body):
        pytest.skip(f"{version} has no {shifts.FUNCTION}: shifts.install says so in the report")
    wrapped = _function(utils, shifts.FUNCTION)
    assert {"bufs", "num_reqs", "num_accepted_tokens_gpu"} <= {a.arg for a in wrapped.args.kwonlyargs}
    assert "ctx = bufs.postprocess_align" in ast.unparse(wrapped)
    assert {*shifts.INPUTS, "block_size"} <= _fields(_class(utils, "MambaSpecDecodeGPUContext"))
    calls = [n for n in ast.walk(trees[V1_RUNNER]) if isinstance(n, ast.Call)
             and ast.unparse(n.func) == f"mamba_utils.{shifts.FUNCTION}"]
    assert calls, "the runner no longer calls it through the module, where the hook replaces it"

    # the inputs the hook reads are the ones the V1 path hands the kernel, by request index, with
    # the counts computed here (not precomputed) and the context's block size
    staged = ast.unparse(wrapped)
    for name in ("mamba_state_idx", "num_scheduled_tokens", "num_computed_tokens", "num_draft_tokens"):
        assert f"{name}_gpu=ctx.{name}_buf.gpu" in staged, name
    assert "num_accepted_tokens_gpu=num_accepted_tokens_gpu" in staged
    launch = [n for n in ast.walk(_method(_class(utils, "MambaSpecDecodeGPUContext"), "run_fused_postprocess"))
              if isinstance(n, ast.Call) and ast.unparse(n.func).startswith("postprocess_mamba_fused_kernel[")]
    assert len(launch) == 1
    assert ast.unparse(launch[0].args[0]) == "num_accepted_tokens_gpu"
    keywords = {k.arg: ast.unparse(k.value) for k in launch[0].keywords}
    assert keywords["block_size"] == "self.block_size"
    assert keywords.get("PRECOMPUTED_NEW_COMPUTED", "False") == "False" and keywords.get("HAS_IDX_MAPPING", "False") == "False"

    kernel = _function(utils, "postprocess_mamba_fused_kernel")
    assert "src_block_idx == dest_block_idx and accept_token_bias == 0" in ast.unparse(kernel)  # the skipped self-copy
    decision = _kernel_decision(kernel)
    block = 8
    seen = set()
    for computed in range(block - 4, 2 * block + 1):
        for drafts in range(0, 4):
            for accepted in range(1, drafts + 2):
                for src in (0, 1, 2):
                    row = (block, src, drafts + 1, computed, drafts, accepted)
                    k = decision(*row)
                    kind, bias = shifts.decide(*row)
                    seen.add(kind)
                    if not k["needs_copy"]:
                        assert kind == "none", row
                        continue
                    assert bias == k["accept_token_bias"], row
                    if src != k["dest_block_idx"]:
                        assert kind == "cross", row
                    else:
                        assert kind == ("shift" if k["accept_token_bias"] else "in-place"), row
    assert seen == {"none", "cross", "in-place", "shift"}


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_the_landing_script_models_where_the_runner_keeps_the_running_state(version):
    """drafts.Script.land_on offers one draft at a landing because V1's preprocess_mamba keeps a
    row's running state in the block of the step's last scheduled token, as running_block (the
    model tests/verify/test_drafts.py walks landings with) has it: the release's own statements,
    run on a grid of inputs."""
    if MAMBA_UTILS not in _shipped(version):
        pytest.skip(f"{version} has no {MAMBA_UTILS}")
    utils = _read(version, [MAMBA_UTILS])[MAMBA_UTILS]
    if not any(isinstance(n, ast.FunctionDef) and n.name == shifts.FUNCTION for n in utils.body):
        pytest.skip(f"{version} has no {shifts.FUNCTION}: no landing to make")
    wanted = ("num_blocks", "curr_state_idx")
    assigned = [(getattr(n.targets[0] if isinstance(n, ast.Assign) else n.target, "id", None), n)
                for n in ast.walk(_function(utils, "preprocess_mamba")) if isinstance(n, ast.Assign | ast.AnnAssign)]
    statements = [n for name, n in assigned if name in wanted]
    assert [name for name, _ in assigned if name in wanted] == list(wanted)
    code = _runnable(statements, "preprocess")
    for computed in range(0, 20):
        for scheduled in range(1, 5):
            for speculative_blocks in (0, 1):
                request = SimpleNamespace(num_computed_tokens=computed)
                names = {"req_state": request, "num_scheduled_tokens": scheduled, "block_size": 8,
                         "num_speculative_blocks": speculative_blocks, "cdiv": lambda a, b: -(-a // b)}
                exec(code, {}, names)
                assert names["curr_state_idx"] == running_block(8, computed, scheduled), (computed, scheduled)
