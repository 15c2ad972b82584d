"""`python -m vllm_backports`: the same command line as `python apply.py` and `vllm-backports`."""

from .cli import main

if __name__ == "__main__":
    main()
