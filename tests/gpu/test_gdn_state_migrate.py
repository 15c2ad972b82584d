"""The fused GDN state-migration kernel of the gdn-state-migrate alternative, on the GPU, against
a plain PyTorch reference. It reads the kernel file out of the patch that creates it, so what runs
is what the patch would install. Skips without CUDA and Triton (CI has neither)."""

from __future__ import annotations

import pytest

from benchmarks.alternatives.created import migrate_kernel

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)


@pytest.fixture(scope="module")
def migrate(tmp_path_factory):
    return migrate_kernel(tmp_path_factory.mktemp("kernel"))


def _reference(conv, ssm, src, dst, shift, window):
    conv, ssm = conv.clone(), ssm.clone()
    before_conv, before_ssm = conv.clone(), ssm.clone()
    for s, d, k in zip(src.tolist(), dst.tolist(), shift.tolist(), strict=True):
        if k > 0:
            ssm[d] = before_ssm[s]
            conv[d, :, :window] = before_conv[d, :, k:k + window]
    return conv, ssm


def _case(num_spec, dim, heads, dk, dv, dtype, dim_first, rows, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    window = 3  # conv kernel 4, as Qwen3-Next
    slots = rows * (num_spec + 1) + 1
    state_len = window + num_spec
    if dim_first:
        conv = torch.randn(slots, dim, state_len, generator=g, device="cuda").to(dtype)
    else:  # vLLM's SD layout: stored (slots, state_len, dim), handed to kernels transposed
        conv = torch.randn(slots, state_len, dim, generator=g, device="cuda").to(dtype).transpose(-1, -2)
    ssm = torch.randn(slots, heads, dv, dk, generator=g, device="cuda").to(dtype)
    blocks = torch.arange(1, slots, device="cuda", dtype=torch.int32).view(rows, num_spec + 1)
    accepted = torch.randint(0, num_spec + 2, (rows,), generator=g, device="cuda", dtype=torch.int32)
    shift = (accepted - 1).clamp(0, num_spec).to(torch.int32)
    src = blocks.gather(1, shift.long()[:, None])[:, 0].contiguous()
    dst = blocks[:, 0].contiguous()
    return conv, ssm, src, dst, shift, window


@pytest.mark.parametrize("dim_first", [True, False])
@pytest.mark.parametrize("num_spec", [1, 3, 5])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_kernel_matches_the_reference(migrate, dim_first, num_spec, dtype):
    dtype = getattr(torch, dtype)
    conv, ssm, src, dst, shift, window = _case(num_spec, dim=320, heads=4, dk=32, dv=48, dtype=dtype,
                                               dim_first=dim_first, rows=37, seed=num_spec)
    assert (shift > 0).any() and (shift == 0).any()
    want_conv, want_ssm = _reference(conv, ssm, src, dst, shift, window)
    migrate(conv, ssm, src, dst, shift, window)
    torch.cuda.synchronize()
    assert torch.equal(ssm, want_ssm)
    assert torch.equal(conv, want_conv)


def test_rows_without_a_shift_leave_every_byte_alone(migrate):
    conv, ssm, src, dst, shift, window = _case(3, dim=256, heads=2, dk=16, dv=16, dtype=torch.bfloat16,
                                               dim_first=True, rows=8, seed=7)
    shift.zero_()
    src = (dst + 1).contiguous()  # would be wrong to copy: nothing may happen
    conv0, ssm0 = conv.clone(), ssm.clone()
    migrate(conv, ssm, src, dst, shift, window)
    torch.cuda.synchronize()
    assert torch.equal(conv, conv0) and torch.equal(ssm, ssm0)


def test_real_model_shapes_under_a_cuda_graph(migrate):
    """Qwen3-Next-80B per layer at TP 1: 32 value heads of 128x128, conv dim 8192. The graph is
    captured once and replayed with new tables, as vLLM's full decode graphs do."""
    conv, ssm, src, dst, shift, window = _case(3, dim=8192, heads=32, dk=128, dv=128, dtype=torch.bfloat16,
                                               dim_first=True, rows=16, seed=3)
    tables = [t.clone() for t in (src, dst, shift)]
    graph = torch.cuda.CUDAGraph()
    scratch_conv, scratch_ssm = conv.clone(), ssm.clone()
    with torch.cuda.graph(graph):
        migrate(scratch_conv, scratch_ssm, *tables, window)
    for seed in (11, 12):
        _, _, src2, dst2, shift2, _ = _case(3, dim=8, heads=1, dk=1, dv=1, dtype=torch.bfloat16,
                                            dim_first=True, rows=16, seed=seed)
        scratch_conv.copy_(conv)
        scratch_ssm.copy_(ssm)
        for table, new in zip(tables, (src2, dst2, shift2), strict=True):
            table.copy_(new)
        want_conv, want_ssm = _reference(conv, ssm, src2, dst2, shift2, window)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(scratch_ssm, want_ssm)
        assert torch.equal(scratch_conv, want_conv)
