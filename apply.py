#!/usr/bin/env python3
"""Apply verified backports to a pinned vLLM release: `python apply.py --vllm 0.20.0`."""

from vllm_backports.cli import main

if __name__ == "__main__":
    main()
