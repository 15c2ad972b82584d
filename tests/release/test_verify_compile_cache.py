"""Verify turns vLLM's compile cache off (VLLM_DISABLE_COMPILE_CACHE=1, verify/engine.py) so
that every engine shares one Triton cache. That rests on each release's own sources: with the
cache on, vLLM points TRITON_CACHE_DIR into its compile-cache directory; with it off, Inductor's
adaptor returns before touching it."""

from __future__ import annotations

import ast

import pytest

from vllm_backports.pypi import read_release

from .conftest import CATALOGUE

INTERFACE = "vllm/compilation/compiler_interface.py"
ENVS = "vllm/envs.py"


def _sets_triton_cache(node: ast.AST, module: str) -> bool:
    text = ast.get_source_segment(module, node) or ""
    return "TRITON_CACHE_DIR" in text or "initialize_inductor_cache(" in text


def _returns_when_disabled(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "disable_cache"
        and isinstance(node.body[0], ast.Return)
    )


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_with_the_compile_cache_off_inductor_leaves_tritons_cache_alone(version):
    files = read_release(version, [INTERFACE, ENVS]).files
    assert "VLLM_DISABLE_COMPILE_CACHE" in files[ENVS].decode()
    module = files[INTERFACE].decode()
    tree = ast.parse(module)
    adaptor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "InductorAdaptor")
    init = next(n for n in adaptor.body if isinstance(n, ast.FunctionDef) and n.name == "initialize_cache")
    body = init.body
    setting = [i for i, stmt in enumerate(body) if _sets_triton_cache(stmt, module)]
    assert setting, f"{version}: InductorAdaptor.initialize_cache no longer moves TRITON_CACHE_DIR"
    guard = next((i for i, stmt in enumerate(body) if _returns_when_disabled(stmt)), None)
    assert guard is not None and guard < setting[0], version
