"""A/B profiles read back and set side by side: torch's table, the JSON rows, the comparison."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from vllm_backports.bench import profiles

# torch's key_averages().table() as the worker writes it, cut to four rows
TABLE = """\
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg     Self CUDA   Self CUDA %    CUDA total  CUDA time avg    # of Calls
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------
                                               aten::mm         1.38%      11.749ms         4.33%      36.953ms     115.478us     550.718ms        60.97%     625.574ms       1.955ms           320
         nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT         0.00%       0.000us         0.00%       0.000us       0.000us     447.624ms        49.56%     447.624ms       2.152ms           208
fused_recurrent_gated_delta_rule_packed_decode_kerne...         0.00%       0.000us         0.00%       0.000us       0.000us      11.627ms         1.29%      11.627ms      16.149us           720
                    vllm::unified_attention_with_output        16.45%        1.238s        16.45%        1.238s     954.082us       0.000us         0.00%       0.000us       0.000us           240
-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------
Self CPU time total: 852.471ms
Self CUDA time total: 903.198ms
"""


def test_torchs_table_is_read_op_by_op_with_its_units():
    ops = profiles.parse_table(TABLE)
    assert ops["aten::mm"] == profiles.Op(320, 550718.0, 11749.0)
    assert ops["nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT"].self_device_us == pytest.approx(447624.0)
    assert ops["fused_recurrent_gated_delta_rule_packed_decode_kerne..."].calls == 720
    assert ops["vllm::unified_attention_with_output"].self_cpu_us == pytest.approx(1.238e6)


def test_a_table_without_torchs_columns_is_refused():
    with pytest.raises(ValueError, match="no table header"):
        profiles.parse_table("nothing here\n")
    with pytest.raises(ValueError, match="not torch's"):
        profiles.parse_table("Name  Calls  Time\n----\nx  1  2us\n")


def event(key, on, count, self_cpu, self_device=None, cuda=None):
    e = SimpleNamespace(key=key, device_type=f"DeviceType.{on}", count=count, self_cpu_time_total=self_cpu)
    if self_device is not None:
        e.self_device_time_total = self_device
    if cuda is not None:  # torch before 2.4
        e.self_cuda_time_total = cuda
    return e


def test_json_rows_keep_every_op_whole_and_where_it_ran():
    got = profiles.rows(
        [event("aten::mm", "CPU", 320, 11749.0, 550718.0), event("nvjet_x", "CUDA", 208, 0.0, cuda=447624.0)]
    )
    assert got == [
        {"name": "aten::mm", "on": "host", "calls": 320, "self_device_us": 550718.0, "self_cpu_us": 11749.0},
        {"name": "nvjet_x", "on": "device", "calls": 208, "self_device_us": 447624.0, "self_cpu_us": 0.0},
    ]


def test_read_takes_the_json_and_sums_the_devices_rows_alone(tmp_path):
    stem = tmp_path / "profile-a-0-c16"
    (tmp_path / "profile-a-0-c16.txt").write_text(TABLE)
    ops, totals = profiles.read(stem)  # the table alone: its own total lines
    assert totals == {"self_cpu_us": pytest.approx(852471.0), "self_device_us": pytest.approx(903198.0)}
    rows = profiles.rows(
        [event("aten::mm", "CPU", 320, 11749.0, 550718.0), event("nvjet_x", "CUDA", 208, 1.0, 447624.0)]
    )
    (tmp_path / "profile-a-0-c16.json").write_text(json.dumps(rows))
    ops, totals = profiles.read(stem)
    # aten::mm's device time is its kernel's, counted once
    assert totals == {"self_device_us": 447624.0, "self_cpu_us": 11750.0}
    assert set(ops) == {"aten::mm", "nvjet_x"}
    with pytest.raises(FileNotFoundError, match="profile-b-0-c16.json or profile-b-0-c16.txt"):
        profiles.read(tmp_path / "profile-b-0-c16")


def test_compare_puts_the_largest_differences_first_and_marks_what_one_side_lacks():
    a = {"same": profiles.Op(10, 100.0, 5.0), "slower": profiles.Op(4, 50.0, 1.0), "a_only": profiles.Op(1, 3.0, 0.0)}
    b = {
        "same": profiles.Op(10, 101.0, 5.0),
        "slower": profiles.Op(40, 500.0, 90.0),
        "b_only": profiles.Op(7, 20.0, 0.0),
    }
    got = profiles.compare(a, b)
    assert [r["name"] for r in got] == ["slower", "b_only", "a_only", "same"]
    assert got[0]["calls"] == (4, 40) and got[0]["weight"] == pytest.approx(450.0 + 89.0)
    assert got[1]["calls"] == (None, 7) and got[1]["self_device_us"] == (None, 20.0)


def test_host_speed_is_the_median_factor_of_ops_launched_alike_and_rescales_bs_total():
    # B's process runs host code 1.5x as long; the series also adds an op and doubles the own
    # time of one op it changed (launched alike), which a sum over ops launched alike would
    # take for the process
    a = {f"op{i}": profiles.Op(10, 0.0, 2000.0 * (i + 1)) for i in range(6)}
    b = {f"op{i}": profiles.Op(10, 0.0, 1.5 * 2000.0 * (i + 1)) for i in range(6)}
    b["op5"] = profiles.Op(10, 0.0, 2 * 1.5 * 12000.0)  # the changed op
    b["added"] = profiles.Op(3, 0.0, 1.5 * 4000.0)
    a["tiny"], b["tiny"] = profiles.Op(5, 0.0, 10.0), profiles.Op(5, 0.0, 90.0)  # under SPEED_MIN_US
    got = profiles.host_speed(profiles.compare(a, b))
    assert got is not None
    assert got["speed"] == pytest.approx(1.5) and got["ops"] == 6
    assert got["host_a_us"] == pytest.approx(42000.0 + 10.0)
    # at A's speed B costs A's ops, op5 once more, the added op and tiny's 60 us
    assert got["host_b_at_a_us"] == pytest.approx(42000.0 + 12000.0 + 4000.0 + 60.0)


def test_host_speed_needs_five_ops_launched_alike_with_their_time_on_both_arms():
    a = {f"op{i}": profiles.Op(10, 0.0, 5000.0) for i in range(5)}
    b = {f"op{i}": profiles.Op(10, 0.0, 6000.0) for i in range(5)}
    assert profiles.host_speed(profiles.compare(a, b))["speed"] == pytest.approx(1.2)
    b["op0"] = profiles.Op(11, 0.0, 6000.0)  # launched a different number of times: not alike
    assert profiles.host_speed(profiles.compare(a, b)) is None
    b["op0"], a["op1"] = profiles.Op(10, 0.0, 6000.0), profiles.Op(10, 0.0, 999.0)  # under the floor on A
    assert profiles.host_speed(profiles.compare(a, b)) is None
