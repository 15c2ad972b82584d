"""versions.toml with one release's `owed` set by the test, so that tests about owed runs do not
depend on what the repository happens to owe today (its runs clear as the GPU shows them)."""

from __future__ import annotations

import json
import re


def with_owed(text: str, release: str, names: list[str]) -> str:
    """`text` (a versions.toml) with the owed line of [releases."<release>"] set to `names`."""
    head = f'[releases."{release}"]\n'
    start = text.index(head)
    end = text.find("\n[releases.", start + len(head))
    end = len(text) if end < 0 else end
    line = f"owed = {json.dumps(names)}\n"
    section, count = re.subn(r"^owed = \[.*?\]\n", line, text[start:end], count=1, flags=re.M | re.S)
    assert count == 1, f"no owed line in {head.strip()}"
    return text[:start] + section + text[end:]
