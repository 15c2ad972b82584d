"""What verify's run-time hooks (verify/drafts.py, verify/counts.py) take for granted about vLLM,
read off the real pristine files of every catalogued release: the names and order of the
arguments they receive, the attributes they read, and that what they return reaches the runner.
A release that moves any of these would make a scripted run silently exercise nothing, or fail
only on the GPU."""

from __future__ import annotations

import ast

import pytest

from vllm_backports import pypi
from vllm_backports.record import parse_record
from vllm_backports.verify import counts

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
