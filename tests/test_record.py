"""A wheel's RECORD read as path -> hex sha256."""

from __future__ import annotations

import base64
import hashlib

from vllm_backports.record import parse_record


def _entry(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_rows_with_a_sha256_map_to_hex_and_others_are_left_out():
    record = (
        f"vllm/a.py,{_entry(b'a')},1\n"
        f'"vllm/with,comma.py",{_entry(b"b")},1\n'  # csv quoting, as wheels write it
        "vllm-0.20.0.dist-info/RECORD,,\n"  # RECORD lists itself without a hash
        "vllm/old.py,md5=abc,3\n"
    ).encode()
    assert parse_record(record) == {
        "vllm/a.py": hashlib.sha256(b"a").hexdigest(),
        "vllm/with,comma.py": hashlib.sha256(b"b").hexdigest(),
    }
