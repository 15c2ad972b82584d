#!/usr/bin/env python3
"""The images' ENTRYPOINT: vllm_backports/entrypoint.py from /opt/vllm-backports (not installed,
so found beside this file), which runs `vllm serve` with the arguments given to the container."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vllm_backports.entrypoint import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
