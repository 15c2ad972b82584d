"""spec-prefill-decode-graph on every series that carries it: the argument the patched V1 runner
passes to its CUDA-graph dispatch, read back from the patched execute_model and evaluated on the
batches that matter (no GPU, no vLLM import: the runner's source is parsed)."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest

from cli_runner import run

from .conftest import CATALOGUE

RUNNER = "vllm/v1/worker/gpu_model_runner.py"
CARRIED = [v for v in CATALOGUE.versions
           if CATALOGUE.releases[v].series and "spec-prefill-decode-graph" in CATALOGUE.releases[v].backports]
# one release a series: the series' files are what is checked
BY_SERIES = {CATALOGUE.releases[v].series: v for v in reversed(CARRIED)}


def _force_uniform_decode(source: bytes) -> ast.expr | None:
    """The force_uniform_decode argument of execute_model's dispatch call, or None without one."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "execute_model":
            for call in ast.walk(node):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr == "_determine_batch_execution_and_padding"):
                    return next((k.value for k in call.keywords if k.arg == "force_uniform_decode"), None)
    raise AssertionError("execute_model no longer dispatches through _determine_batch_execution_and_padding")


def _dispatch_parameters(source: bytes) -> list[str]:
    """The parameters of the runner's own _determine_batch_execution_and_padding: the keyword the
    patch passes must be one it takes, or the call would raise on the first step."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "_determine_batch_execution_and_padding":
            a = node.args
            return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    raise AssertionError("the runner no longer defines _determine_batch_execution_and_padding")


def _evaluate(expr: ast.expr, speculative: bool, drafted_rows: int, num_reqs: int):
    scope = {
        "self": SimpleNamespace(speculative_config=object() if speculative else None),
        "scheduler_output": SimpleNamespace(
            scheduled_spec_decode_tokens={f"r{i}": [7, 7, 7] for i in range(drafted_rows)}),
        "num_reqs": num_reqs,
    }
    # eval of an expression parsed from the release's own runner, nothing from outside
    return eval(compile(ast.Expression(expr), RUNNER, "eval"), scope)


@pytest.mark.parametrize("version", sorted(BY_SERIES.values()))
def test_a_batch_with_a_row_without_drafts_is_never_a_uniform_decode(version, tmp_path):
    site = tmp_path / "site"
    fetched = run("check", "--vllm", version, "--fetch", "--target", str(site), "--json")
    assert fetched.code == 0, fetched.out + fetched.err
    # as released: the shape test alone decides
    assert _force_uniform_decode((site / RUNNER).read_bytes()) is None

    applied = run("--vllm", version, "--target", str(site), "--json")
    assert applied.code == 0, applied.out + applied.err
    expr = _force_uniform_decode((site / RUNNER).read_bytes())
    assert expr is not None
    assert "force_uniform_decode" in _dispatch_parameters((site / RUNNER).read_bytes())
    # a speculative batch of 4 rows, one of them a prompt chunk without drafts: never uniform
    assert _evaluate(expr, speculative=True, drafted_rows=3, num_reqs=4) is False
    assert _evaluate(expr, speculative=True, drafted_rows=0, num_reqs=1) is False
    # every row drafted (placeholders under async scheduling count): the shape test decides
    assert _evaluate(expr, speculative=True, drafted_rows=4, num_reqs=4) is None
    # no speculation: plain one-token decodes stay uniform decodes
    assert _evaluate(expr, speculative=False, drafted_rows=0, num_reqs=4) is None
