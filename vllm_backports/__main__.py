"""`python -m vllm_backports`: the same command line as `python apply.py` and `vllm-backports`."""

from .deps import require

require()  # one line saying what to install, before the imports that need it

from .cli import main  # noqa: E402

if __name__ == "__main__":
    main()
