"""The alternatives kept for comparison (benchmarks/alternatives) fit the real pristine files of the
release they are written for, on top of the shipped series minus the fix they stand in for: the
GPU runs apply them exactly so."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.alternatives.created import MIGRATE_PATCH
from cli_runner import run
from lab.sites import without
from vllm_backports.hunks import Mismatch, apply_file
from vllm_backports.patchfile import parse


def test_gdn_state_migrate_applies_after_the_0_20_0_series_without_gdn_spec_state(tmp_path):
    site = tmp_path / "site"
    # spec-prefill-decode-graph's hunk sits below gdn-spec-state's in the runner, at the line
    # numbers gdn-spec-state leaves, and gdn-draft-free-plain is written on its lines: both go too
    applied = run(
        "--vllm",
        "0.20.0",
        "--fetch",
        "--target",
        str(site),
        "--skip",
        "gdn-spec-state",
        "--skip",
        "spec-prefill-decode-graph",
        "--skip",
        "gdn-draft-free-plain",
        "--json",
    )
    assert applied.code == 0, applied.out + applied.err
    assert [b["id"] for b in applied.json["backports"] if b["state"] == "applied"] == [
        "turboquant-spec-decode",
        "gdn-mixed-batch-gates",
        "turboquant-prefill-fastpath",
    ]
    patch = parse(MIGRATE_PATCH.read_bytes(), MIGRATE_PATCH.name)
    assert patch.header["Origin"].startswith("other, https://github.com/vllm-project/vllm/pull/40738")
    for fpatch in patch.files:
        target = site / fpatch.path
        before = target.read_bytes() if target.exists() else None
        assert (before is None) == fpatch.creates, fpatch.path
        after = apply_file(before, fpatch)
        assert not isinstance(after, Mismatch), after
        tree = ast.parse(after)  # the result is valid Python
        if fpatch.path.endswith("gdn_linear_attn.py"):
            assert "migrate_gdn_state" in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


PREFIX_HIT_PATCH = Path(__file__).resolve().parents[2] / (
    "benchmarks/alternatives/prefix-cache-mtp-hit/0.20.0/0001-prefix-cache-mtp-hit.patch"
)
COORDINATOR = "vllm/v1/core/kv_cache_coordinator.py"


def _hybrid_hit(source: bytes) -> tuple[int, int]:
    """Run the hybrid coordinator's find_longest_cache_hit, as `source` defines it, for the
    consumer of docs/SIBLING-BUGS.md section 5: 160-token blocks, MTP (every group an EAGLE
    group), a 342-token request whose first two blocks an earlier 480-token request cached, full
    attention and Mamba state both. The managers stand in for vLLM's: full attention drops the
    look-ahead block under EAGLE, Mamba ignores the flag, as in 0.20.0. Returns the hit length
    and the attention blocks kept."""
    import __future__

    tree = ast.parse(source)
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "HybridKVCacheCoordinator"]
    (fn,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "find_longest_cache_hit"]
    code = compile(
        ast.Module(body=[fn], type_ignores=[]),
        COORDINATOR,
        "exec",
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    full, mamba = type("FullAttentionSpec", (), {}), type("MambaSpec", (), {})
    namespace = {"FullAttentionSpec": full, "MambaSpec": mamba, "BlockHashListWithBlockSize": None}
    exec(code, namespace)
    cached_blocks = 2  # tokens 0..319

    class FullAttention:
        @staticmethod
        def find_longest_cache_hit(
            block_hashes, max_length, kv_cache_group_ids, block_pool, kv_cache_spec, use_eagle, alignment_tokens
        ):
            blocks = ["kv"] * min(max_length // 160, cached_blocks)
            if use_eagle and blocks:
                blocks.pop()
            return (blocks,)

    class Mamba:
        @staticmethod
        def find_longest_cache_hit(
            block_hashes, max_length, kv_cache_group_ids, block_pool, kv_cache_spec, use_eagle, alignment_tokens
        ):
            n = min(max_length // 160, cached_blocks)  # a state at every cached block boundary
            return ([None] * (n - 1) + ["state"] if n else [],)

    def spec(kind):
        s = kind()
        s.block_size = 160
        return s

    coordinator = SimpleNamespace(
        kv_cache_config=SimpleNamespace(kv_cache_groups=[0, 1]),
        attention_groups=[(spec(full), [0], FullAttention), (spec(mamba), [1], Mamba)],
        eagle_attn_group_indices={0, 1},
        hash_block_size=160,
        lcm_block_size=160,
        block_pool=None,
    )
    (attention, _), hit = namespace["find_longest_cache_hit"](coordinator, ["h0", "h1"], 341)
    return hit, len(attention)


def test_prefix_cache_mtp_hit_candidate_keeps_the_hit_where_full_attention_has_blocks():
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.pypi import fetch

    root = Path(__file__).resolve().parents[2]
    pristine = fetch(Catalogue(root).releases["0.20.0"], [COORDINATOR]).files[COORDINATOR]
    # the release as it ships: a 320-token hit over one attention block (tokens 160..319 unwritten)
    assert _hybrid_hit(pristine) == (320, 1)
    patch = parse(PREFIX_HIT_PATCH.read_bytes(), PREFIX_HIT_PATCH.name)
    assert patch.header["Bug"] == "https://github.com/vllm-project/vllm/issues/53912"
    (fpatch,) = patch.files
    assert fpatch.path == COORDINATOR  # a file the 0.20.0 series leaves alone: it applies to the pristine one
    patched = apply_file(pristine, fpatch)
    assert not isinstance(patched, Mismatch), patched
    assert _hybrid_hit(patched) == (160, 1)


P65 = Path(__file__).resolve().parents[2] / "benchmarks/alternatives/turboquant-cudagraph"
BACKEND = "vllm/v1/attention/backends/turboquant_attn.py"


@pytest.mark.parametrize("version", sorted(p.name for p in P65.iterdir() if p.is_dir()))
def test_p65_fits_turboquant_as_released_and_keeps_verify_batches_out_of_full_graphs(version):
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.pypi import fetch

    catalogue = Catalogue(Path(__file__).resolve().parents[2])
    release = catalogue.releases[version]
    series = catalogue.series(release.series)
    # on the p65 site the backend is as released: only the fixes lab.sites leaves out there touch it
    touching = {p.backport_id for p in series.patches if BACKEND in p.paths}
    assert touching <= set(without(version, "turboquant-spec-decode", catalogue.home)[1::2]), touching
    patch_path = P65 / version / "0001-turboquant-cudagraph.patch"
    patch = parse(patch_path.read_bytes(), patch_path.name)
    assert patch.header["Bug"] == "https://github.com/vllm-project/vllm/issues/40880"
    (fpatch,) = patch.files
    assert fpatch.path == BACKEND
    pristine = fetch(release, [BACKEND]).files[BACKEND]
    patched = apply_file(pristine, fpatch)
    assert not isinstance(patched, Mismatch), patched
    cls = next(
        n for n in ast.parse(patched).body if isinstance(n, ast.ClassDef) and n.name == "TurboQuantMetadataBuilder"
    )
    support = [
        ast.unparse(s.value)
        for s in cls.body
        if isinstance(s, ast.AnnAssign) and ast.unparse(s.target) == "_cudagraph_support"
    ]
    assert support == ["AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE"]
    spec_as_decode = [
        ast.unparse(k.value)
        for n in ast.walk(cls)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "self._init_reorder_batch_threshold"
        for k in n.keywords
        if k.arg == "supports_spec_as_decode"
    ]
    assert spec_as_decode == ["False"]  # verify rows stay prefills: the graphs P65 keeps them out of
