"""The third-party packages the command line imports, checked before it imports them: a Python
without them gets one line saying what to install and exit code 2, not a traceback. Standard
library only."""

from __future__ import annotations

import importlib.util
import sys

# import name -> requirement, as pyproject.toml's dependencies pin them
REQUIRED = {"click": "click>=8.1", "rich": "rich>=13", "requests": "requests>=2.31", "packaging": "packaging>=23"}


def missing() -> list[str]:
    """The required packages this Python cannot import."""
    return [name for name in REQUIRED if importlib.util.find_spec(name) is None]


def require() -> None:
    """Exit 2 with one line on stderr when a required package is missing."""
    lacking = missing()
    if not lacking:
        return
    pins = " ".join(f"'{spec}'" for spec in REQUIRED.values())
    sys.stderr.write(
        f"error: vllm-backports needs click, rich, requests and packaging ({', '.join(lacking)} missing in "
        f"{sys.executable}): python -m pip install -e . in the repository, or python -m pip install {pins}\n"
    )
    sys.exit(2)
