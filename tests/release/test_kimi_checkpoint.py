"""The tiny Kimi K3 checkpoint (vllm_backports/verify/kimi.py) is one the releases' vLLM builds and
loads as written: its config's fields are KimiLinearConfig's, it takes the KDA layer of the KDA
builder, and every tensor name maps onto a parameter the release's model declares, of the size
the release's own constructors give it (their size expressions evaluated on the config). Read from
the real files of the releases whose proofs use it; no torch, no vLLM."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from vllm_backports.catalogue import Catalogue
from vllm_backports.verify import kimi

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = Catalogue(ROOT)
RELEASES = ["0.29.0", "0.31.0"]  # kda-ngram's (vllm_backports/verify/proofs.py)
BASE = "vllm/models/kimi_k3/nvidia/"
CONFIG_FILE = "vllm/transformers_utils/configs/kimi_linear.py"
FILES = {
    "config": CONFIG_FILE,
    "registry": "vllm/transformers_utils/config.py",
    "models": "vllm/model_executor/models/registry.py",
    "model": BASE + "model.py",
    "kda": BASE + "kda.py",
    "mla": BASE + "mla.py",
}


@pytest.fixture(scope="module", params=RELEASES)
def src(request) -> dict[str, str]:
    from vllm_backports.pypi import fetch

    got = fetch(CATALOGUE.releases[request.param], list(FILES.values())).files
    return {key: got[path].decode() for key, path in FILES.items()}


def _class(source: str, name: str) -> ast.ClassDef:
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == name)


def _method(klass: ast.ClassDef, name: str) -> ast.FunctionDef:
    return next(n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == name)


def test_the_config_fields_are_kimi_linear_configs(src):
    init = _method(_class(src["config"], "KimiLinearConfig"), "__init__")
    params = {a.arg for a in init.args.args + init.args.kwonlyargs} - {"self"}
    fields = set(kimi.CONFIG) - {"architectures", "torch_dtype"}
    # bos/eos/pad and tie_word_embeddings are named parameters too; nothing falls into **kwargs
    assert fields <= params, fields - params


def test_the_release_registers_its_model_type_and_architecture(src):
    assert f'{kimi.CONFIG["model_type"]}="KimiLinearConfig"' in src["registry"]
    assert f'"{kimi.CONFIG["architectures"][0]}": (' in src["models"]


def test_linear_attn_config_holds_every_key_the_model_reads(src):
    read = set()
    for key in ("model", "kda", "config"):
        for n in ast.walk(ast.parse(src[key])):
            if (
                isinstance(n, ast.Subscript)
                and isinstance(n.slice, ast.Constant)
                and ast.unparse(n.value).endswith(("kda_config", "linear_attn_config"))
            ):
                read.add(n.slice.value)
    assert read and read <= set(kimi.LINEAR_ATTN), read - set(kimi.LINEAR_ATTN)


def test_its_kda_layer_is_the_kda_builders(src):
    """KimiK3DeltaAttention (backend KimiK3KDAAttentionBackend) only with the full-rank gate;
    without it the layer is Kimi Linear's GDN one, which the GDN builder routes."""
    assert (
        'if kda_config.get("use_full_rank_gate", False):\n                self.self_attn = KimiK3DeltaAttention('
        in (src["model"])
    )
    assert kimi.LINEAR_ATTN["use_full_rank_gate"] is True
    assert "return KimiK3KDAAttentionBackend" in src["kda"]
    assert kimi.layer_kinds() == ["kda", "mla"]
    # MLA asserts NoPE; a gate lower bound would pick FlashKDA's prefill, compiled only for some
    assert 'assert mla_use_nope, "Kimi-K3 MLA' in src["model"] and kimi.CONFIG["mla_use_nope"] is True
    assert "gate_lower_bound" not in kimi.LINEAR_ATTN


def stacked(src) -> list[tuple[str, str, int]]:
    """load_weights' stacked_params_mapping as the release writes it, for this config (full-rank gate
    on, no q LoRA)."""
    fn = _method(_class(src["model"], "KimiLinearModel"), "load_weights")
    words = ("stacked_params_mapping", "beta_shard_id", "use_full_rank_gate", "kda_config")
    body = [s for s in fn.body if any(w in ast.unparse(s) for w in words) and not isinstance(s, ast.For)]
    config = SimpleNamespace(linear_attn_config=kimi.LINEAR_ATTN, q_lora_rank=None, mla_use_output_gate=False)
    scope = {"self": SimpleNamespace(config=config)}
    exec(compile(ast.Module(body=body, type_ignores=[]), "load_weights", "exec"), scope)
    return scope["stacked_params_mapping"]


def test_names_map_onto_the_models_parameters(src):
    mapping = stacked(src)
    declared = {
        "kda": _attrs(_method(_class(src["kda"], "KimiK3DeltaAttention"), "__init__")),
        "mla": _attrs(_method(_class(src["mla"], "MultiHeadLatentAttention"), "__init__")),
    }
    kinds = kimi.layer_kinds()
    for name in kimi.tensors():
        if not name.startswith("model.layers."):
            continue
        layer, rest = int(name.split(".")[2]), name.split(".", 3)[3]
        for param, shard, _ in mapping:
            if shard in "." + rest and (kinds[layer] == "kda" or "mlp" in rest):
                rest = ("." + rest).replace(shard, param)[1:]
                break
        if rest.startswith("self_attn."):
            assert rest.split(".")[1] in declared[kinds[layer]], name
    # every parameter of the KDA layer is filled
    kda_names = {n.split(".")[4] for n in kimi.tensors() if n.startswith("model.layers.0.self_attn.")}
    filled = {dict((s.strip("."), p.strip(".")) for p, s, _ in mapping).get(n, n) for n in kda_names}
    assert filled == {"in_proj_qkvgfab", "f_b_proj", "conv1d", "A_log", "dt_bias", "o_norm", "o_proj"}
    assert filled <= declared["kda"]


def _attrs(init: ast.FunctionDef) -> set[str]:
    return {
        t.attr
        for n in ast.walk(init)
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }


def _sizes(init: ast.FunctionDef, attr: str, scope: dict) -> list:
    """The (input, output) size expressions of `self.attr = SomeLinear(...)` evaluated in `scope`."""
    for n in ast.walk(init):
        if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == f"self.{attr}" and isinstance(n.value, ast.Call):
            kw = {k.arg: k.value for k in n.value.keywords}
            args = [*n.value.args[:2], *(kw[k] for k in ("input_size", "output_size")[len(n.value.args) :] if k in kw)]
            return [eval(compile(ast.Expression(a), attr, "eval"), scope) for a in args]
    raise AssertionError(f"self.{attr} = ...(...) not found")


def test_shapes_are_the_sizes_the_release_constructs(src):
    la, c, t = kimi.LINEAR_ATTN, kimi.CONFIG, kimi.tensors()
    proj = la["num_heads"] * la["head_dim"]
    kda_init = _method(_class(src["kda"], "KimiK3DeltaAttention"), "__init__")
    kda = {
        "self": SimpleNamespace(
            hidden_size=c["hidden_size"],
            head_dim=la["head_dim"],
            num_heads=la["num_heads"],
            projection_size=proj,
            local_projection_size=proj,
            local_num_heads=la["num_heads"],
            conv_size=la["short_conv_kernel_size"],
        )
    }
    # the in_proj's shards, in order: q k v g, f_a, b (its padding is not loaded)
    fused = [stmt for stmt in ast.walk(kda_init) if isinstance(stmt, ast.Assign)]
    scope = dict(kda)
    for stmt in fused:
        if ast.unparse(stmt.targets[0]) in ("qkvg_output_sizes", "in_proj_output_sizes"):
            exec(compile(ast.Module(body=[stmt], type_ignores=[]), "kda", "exec"), scope)
    a = "model.layers.0.self_attn."
    shards = [t[a + n + ".weight"][0] for n in ("q_proj", "k_proj", "v_proj", "g_proj", "f_a_proj", "b_proj")]
    assert [s[0] for s in shards] == scope["in_proj_output_sizes"]
    assert {s[1] for s in shards} == {_sizes(kda_init, "in_proj_qkvgfab", scope)[0]}
    i, o = _sizes(kda_init, "f_b_proj", kda)
    assert t[a + "f_b_proj.weight"][0] == (o, i)
    i, o = _sizes(kda_init, "o_proj", kda)
    assert t[a + "o_proj.weight"][0] == (o, i)
    i, o = _sizes(kda_init, "conv1d", kda)  # a (3 * proj, kernel) linear, unsqueezed to (.., 1, kernel)
    assert [t[a + n + ".weight"][0] for n in ("q_conv1d", "k_conv1d", "v_conv1d")] == [(o // 3, 1, i)] * 3
    assert t[a + "A_log"][0] == (la["num_heads"],) and t[a + "dt_bias"][0] == (proj,)
    assert t[a + "A_log"][1] == t[a + "dt_bias"][1] == "float32"  # the parameters' own dtype

    mla_init = _method(_class(src["mla"], "MultiHeadLatentAttention"), "__init__")
    mla = {
        "self": SimpleNamespace(
            hidden_size=c["hidden_size"],
            num_heads=c["num_attention_heads"],
            kv_lora_rank=c["kv_lora_rank"],
            qk_head_dim=c["qk_nope_head_dim"] + c["qk_rope_head_dim"],
            qk_rope_head_dim=c["qk_rope_head_dim"],
            qk_nope_head_dim=c["qk_nope_head_dim"],
            v_head_dim=c["v_head_dim"],
        )
    }
    a = "model.layers.1.self_attn."
    for attr in ("q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"):
        i, o = _sizes(mla_init, attr, mla)
        assert t[a + attr + ".weight"][0] == (o, i), attr
