"""The kda-spec-consistent candidate (benchmarks/alternatives/kda-spec-consistent) fits the real files
of each release it is written for, after the release's whole series, and makes Kimi K3's KDA
metadata builder route a batch's rows as the series' GDN builder does: a decode row with 0 drafts
stays speculative, also when no row of the batch has drafts (upstream's own
tests/models/kimi_k3/test_kda_metadata.py, `no-scheduled-draft-tokens`, fails with the series and
without the candidate).

The builders' routing prelude (from the V1 query-length check to the choice of speculative rows)
is run as the files define it, on numpy stand-ins for the CPU tensors it reads; the kernels and
the metadata after the choice are not. So this runs without torch or vLLM.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from vllm_backports.catalogue import Catalogue
from vllm_backports.hunks import Mismatch, apply_file
from vllm_backports.patchfile import parse

np = pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parents[2]
NAME = "kda-spec-consistent"
CANDIDATES = ROOT / "benchmarks" / "alternatives" / NAME
RELEASES = sorted(d.name for d in CANDIDATES.iterdir() if (d / f"0001-{NAME}.patch").is_file())
KDA = "vllm/models/kimi_k3/nvidia/kda_metadata.py"
GDN = "vllm/v1/attention/backends/gdn_attn.py"
V2_STATE = "vllm/v1/worker/gpu/model_states/mamba_hybrid.py"
CATALOGUE = Catalogue(ROOT)
K = 3  # num_speculative_tokens
ROUTING_IF = "not self.use_spec_decode or num_decode_draft_tokens_cpu is None"


def test_candidates_for_every_release_whose_kda_builder_has_the_fallback():
    # 0.27.0 .. 0.31.0 carry the all-zero fallback in KimiK3KDAMetadataBuilder.build(); 0.32.0
    # dropped it upstream, 0.26.0 has no KDA builder of its own
    assert RELEASES == ["0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0"]


@pytest.fixture(scope="module", params=RELEASES)
def files(request) -> dict:
    """Each file the candidate or the routing reads: pristine, with the series, with the candidate."""
    from vllm_backports.pypi import fetch

    release = CATALOGUE.releases[request.param]
    series = CATALOGUE.series(release.series)
    candidate = parse((CANDIDATES / request.param / f"0001-{NAME}.patch").read_bytes(), f"0001-{NAME}.patch")
    paths = [KDA, GDN] + ([V2_STATE] if any(f.path == V2_STATE for f in candidate.files) else [])
    fetched = fetch(release, paths).files
    out: dict = {"release": request.param, "candidate": candidate}
    for path in paths:
        content = fetched[path]
        for patch in series.patches:
            for fpatch in patch.files:
                if fpatch.path == path:
                    content = apply_file(content, fpatch)
                    assert not isinstance(content, Mismatch), content
        with_it = content
        for fpatch in candidate.files:
            if fpatch.path == path:
                with_it = apply_file(with_it, fpatch)
                assert not isinstance(with_it, Mismatch), with_it
        out[path] = {"pristine": fetched[path], "series": content, "candidate": with_it}
    return out


class T(np.ndarray):
    """A CPU tensor as the routing prelude uses it."""

    device = SimpleNamespace(type="cpu")

    def diff(self):
        return np.diff(np.asarray(self)).view(T)


def t(values, dtype=np.int32) -> T:
    return np.array(values, dtype=dtype).view(T)


TORCH = SimpleNamespace(where=lambda c, a, b: np.where(c, a, b).view(T))


def _build(source: bytes, cls: str) -> ast.FunctionDef:
    tree = ast.parse(source)
    klass = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    return next(n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == "build")


def _mentions(stmt: ast.stmt, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt))


def prelude(source: bytes, cls: str):
    """build()'s statements that choose the speculative rows, compiled: the routing `if` and the
    statements right before it that read or set the draft counts or the mask."""
    body = _build(source, cls).body
    end = next(i for i, s in enumerate(body) if isinstance(s, ast.If) and ast.unparse(s.test).startswith(ROUTING_IF))
    start = end
    while start > 0 and (
        _mentions(body[start - 1], "num_decode_draft_tokens_cpu")
        or _mentions(body[start - 1], "spec_sequence_masks_cpu")
    ):
        start -= 1
    return compile(ast.Module(body=body[start : end + 1], type_ignores=[]), cls, "exec")


def route(code, query_lens, drafts, prefilling=None, recoverssm=False, v1=True):
    """What the prelude chooses: (number of speculative rows, their mask or None)."""
    q = t([0, *np.cumsum(query_lens)])
    builder = SimpleNamespace(
        use_spec_decode=True,
        num_spec=K,
        use_recoverssm=recoverssm,
        # as the series' GDN builder sets them for a speculative config (V1: both)
        route_zero_draft_rows=True,
        check_zero_draft_query_lens=v1,
    )
    prefilling = [False] * len(query_lens) if prefilling is None else prefilling
    scope = {
        "self": builder,
        "torch": TORCH,
        "m": SimpleNamespace(is_prefilling=t(prefilling, bool)),
        "query_start_loc": SimpleNamespace(device="cpu"),
        "query_start_loc_cpu": q,
        "num_decode_draft_tokens_cpu": t(drafts),
        "async_tensor_h2d": lambda x, **_: x,
    }
    exec(code, scope)
    mask = scope.get("spec_sequence_masks_cpu")
    return int(scope["num_spec_decodes"]), None if mask is None else np.asarray(mask).tolist()


KDA_CLASS, GDN_CLASS = "KimiK3KDAMetadataBuilder", "GDNAttentionMetadataBuilder"
# (query lengths, draft counts as the series' V1 runner hands them)
ALL_DRAFT_FREE = ([1, 1], [0, 0])  # upstream's no-scheduled-draft-tokens: every row 0 drafts
MIXED = ([K + 1, 1, 5], [K, 0, -1])  # drafts, a draft-free decode, a prompt chunk
BATCHES = {
    "all-draft-free": ALL_DRAFT_FREE,
    "mixed": MIXED,
    "prompts-only": ([5, 7], [-1, -1]),
    "draft-free-beside-prompt": ([1, 6], [0, -1]),
    "dummy-stale-buffer": ([K + 1, 2], [0, 0]),  # V1 dummy run: query lengths beside leftovers
    "dummy-partly-valid": ([K + 1, 2], [K, 0]),
    "padding-row": ([1, 1, 0], [0, 0, -1]),
}


def test_without_the_candidate_the_series_routes_kda_and_gdn_apart(files):
    """The upstream test's failure, on the release's files: a batch whose rows all have 0 drafts is
    speculative for the series' GDN builder and plain for the KDA builder."""
    gdn = prelude(files[GDN]["series"], GDN_CLASS)
    kda = prelude(files[KDA]["series"], KDA_CLASS)
    assert route(gdn, *ALL_DRAFT_FREE) == (2, [True, True])
    assert route(kda, *ALL_DRAFT_FREE) == (0, None)
    # a mixed batch's draft-free row is already speculative in both
    assert route(kda, *MIXED) == route(gdn, *MIXED) == (2, [True, True, False])


def test_with_the_candidate_a_batch_of_draft_free_rows_stays_speculative(files):
    kda = prelude(files[KDA]["candidate"], KDA_CLASS)
    assert route(kda, *ALL_DRAFT_FREE) == (2, [True, True])


@pytest.mark.parametrize("batch", list(BATCHES))
def test_with_the_candidate_kda_routes_every_batch_as_the_series_gdn_builder(files, batch):
    gdn = prelude(files[GDN]["series"], GDN_CLASS)
    kda = prelude(files[KDA]["candidate"], KDA_CLASS)
    assert route(kda, *BATCHES[batch]) == route(gdn, *BATCHES[batch])


def test_dummy_rows_whose_query_is_not_drafts_plus_one_stay_plain(files):
    kda = prelude(files[KDA]["candidate"], KDA_CLASS)
    assert route(kda, *BATCHES["dummy-stale-buffer"]) == (0, None)
    assert route(kda, *BATCHES["dummy-partly-valid"]) == (1, [True, False])
    # the series without the candidate takes the stale row of 2 tokens as a speculative one
    assert route(prelude(files[KDA]["series"], KDA_CLASS), *BATCHES["dummy-partly-valid"]) == (2, [True, True])


def test_recoverssm_routes_as_the_release_does(files):
    source = files[KDA]
    if b"use_kda_recoverssm" not in source["pristine"]:
        pytest.skip(f"{files['release']} has no RecoverSSM")
    pristine, candidate = prelude(source["pristine"], KDA_CLASS), prelude(source["candidate"], KDA_CLASS)
    for query_lens, drafts in BATCHES.values():
        prefilling = [d < 0 and n > 1 for n, d in zip(query_lens, drafts, strict=True)]
        assert route(candidate, query_lens, drafts, prefilling, recoverssm=True) == route(
            pristine, query_lens, drafts, prefilling, recoverssm=True
        )


def test_the_attributes_it_reads_are_set_by_the_series_gdn_builder(files):
    """The candidate reads route_zero_draft_rows (and, from 0.29, check_zero_draft_query_lens) off
    the GDN builder's __init__, which the KDA builder inherits: the series sets them there."""
    read = {
        n.attr
        for n in ast.walk(_build(files[KDA]["candidate"], KDA_CLASS))
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }
    klass = next(n for n in ast.parse(files[GDN]["series"]).body if isinstance(n, ast.ClassDef) and n.name == GDN_CLASS)
    init = next(n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    set_ = {
        n.target.attr if isinstance(n, ast.AnnAssign) else n.targets[0].attr
        for n in ast.walk(init)
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        and isinstance(n.target if isinstance(n, ast.AnnAssign) else n.targets[0], ast.Attribute)
    }
    wanted = {"route_zero_draft_rows", "check_zero_draft_query_lens"} & read
    assert "route_zero_draft_rows" in read or "check_zero_draft_query_lens" in read
    assert wanted <= set_


def _extra_attn_kwargs(source: bytes):
    """MambaHybrid's get_extra_attn_kwargs as the file defines it, on stand-in builder classes."""
    tree = ast.parse(source)
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_extra_attn_kwargs")
    scope: dict = {"Any": object}
    for name in (
        "Mamba2AttentionMetadataBuilder",
        "ShortConvAttentionMetadataBuilder",
        "PleShortConvAttentionMetadataBuilder",
        "GDNAttentionMetadataBuilder",
    ):
        scope[name] = type(name, (), {})
    exec(compile(ast.Module(body=[fn], type_ignores=[]), V2_STATE, "exec"), scope)
    return scope


def test_on_the_v2_runner_native_kda_builders_take_the_zero_draft_counts(files):
    if V2_STATE not in files:
        pytest.skip(f"{files['release']}'s series routes no V2 runner rows")
    state = SimpleNamespace(
        num_accepted_tokens=t([2, 1]),
        num_decode_draft_tokens_cpu=t([-1, -1]),
        gdn_num_decode_draft_tokens_cpu=t([0, 0]),
    )

    def counts(source: bytes, **attrs) -> list[int]:
        scope = _extra_attn_kwargs(source)
        kda = type("KimiK3KDAMetadataBuilder", (scope["GDNAttentionMetadataBuilder"],), attrs)()
        return np.asarray(scope["get_extra_attn_kwargs"](state, kda, 2)["num_decode_draft_tokens_cpu"]).tolist()

    assert counts(files[V2_STATE]["series"], takes_zero_draft_rows=True) == [-1, -1]
    assert counts(files[V2_STATE]["candidate"], takes_zero_draft_rows=True) == [0, 0]
    assert counts(files[V2_STATE]["candidate"], takes_zero_draft_rows=False) == [-1, -1]  # RecoverSSM
    assert b"self.takes_zero_draft_rows: bool = not self.use_recoverssm" in files[KDA]["candidate"]
