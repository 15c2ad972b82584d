"""Verify sets TRITON_CACHE_DIR before vLLM starts (verify/engine.py) so that every engine shares
one Triton cache; left unset, torch's Inductor fills it in under the Inductor cache that vLLM
keys by its compile hash. That rests on each release's own sources: on vLLM's default compile
path (the standalone Inductor adaptor) no code of vllm/compilation overwrites a value already
set; the adaptor that does (InductorAdaptor, until 0.31) runs only with
VLLM_USE_STANDALONE_COMPILE=0."""

from __future__ import annotations

import ast
import re

import pytest

from vllm_backports.pypi import read_release

from .conftest import CATALOGUE

COMPILATION = "vllm/compilation/"
ENVS = "vllm/envs.py"


def _assigns_triton_cache(node: ast.AST) -> bool:
    """os.environ["TRITON_CACHE_DIR"] = ..."""
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Subscript)
        and isinstance(t.value, ast.Attribute)
        and t.value.attr == "environ"
        and isinstance(t.slice, ast.Constant)
        and t.slice.value == "TRITON_CACHE_DIR"
        for t in node.targets
    )


def _reads_triton_cache(node: ast.AST) -> bool:
    """os.environ.get("TRITON_CACHE_DIR") or os.getenv("TRITON_CACHE_DIR"): a caller's value is read."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("get", "getenv")
        and any(isinstance(a, ast.Constant) and a.value == "TRITON_CACHE_DIR" for a in n.args)
        for n in ast.walk(node)
    )


def overwrites(module: str) -> list[str]:
    """The functions that set TRITON_CACHE_DIR without reading it first, as Class.function."""
    found = []

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child.name)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                sets = any(_assigns_triton_cache(n) for n in ast.walk(child))
                if sets and not _reads_triton_cache(child):
                    found.append(f"{owner}.{child.name}" if owner else child.name)
                visit(child, owner)

    visit(ast.parse(module), "")
    return found


def test_the_walk_finds_an_unconditional_overwrite_and_spares_a_callers_value():
    src = (
        "import os\n"
        "class InductorAdaptor:\n"
        "    def initialize_cache(self, d):\n"
        "        os.environ['TRITON_CACHE_DIR'] = d\n"
        "def keeps(d):\n"
        "    t = os.environ.get('TRITON_CACHE_DIR')\n"
        "    os.environ['TRITON_CACHE_DIR'] = t or d\n"
    )
    assert overwrites(src) == ["InductorAdaptor.initialize_cache"]


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_on_the_default_compile_path_vllm_keeps_a_triton_cache_dir_already_set(version):
    record = read_release(version, []).hashes
    paths = sorted(p for p in record if p.startswith(COMPILATION) and p.endswith(".py"))
    files = read_release(version, [ENVS, *paths]).files
    envs = files[ENVS].decode()
    assert re.search(r'os\.environ\.get\(\s*"VLLM_USE_STANDALONE_COMPILE",\s*"1"\s*\)', envs), version
    found = {p: overwrites(files[p].decode()) for p in paths}
    found = {p: f for p, f in found.items() if f}
    # InductorAdaptor is the non-standalone adaptor, taken only with VLLM_USE_STANDALONE_COMPILE=0
    assert all(f == ["InductorAdaptor.initialize_cache"] for f in found.values()), (version, found)
    assert set(found) <= {COMPILATION + "compiler_interface.py"}, (version, found)
