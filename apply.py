#!/usr/bin/env python3
"""Apply verified backports to a pinned vLLM release: `python apply.py --vllm 0.20.0`."""

from vllm_backports.deps import require

require()  # one line saying what to install, before the imports that need it

from vllm_backports.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
