"""Wheel RECORD files: the pristine sha256 of every file a release installs."""

from __future__ import annotations

import base64
import csv
import io


def parse_record(data: bytes) -> dict[str, str]:
    """Map path -> hex sha256 for every RECORD row that carries a sha256."""
    out: dict[str, str] = {}
    for row in csv.reader(io.StringIO(data.decode("utf-8"))):
        if len(row) >= 2 and row[1].startswith("sha256="):
            digest = row[1][len("sha256=") :]
            out[row[0]] = base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()
    return out
