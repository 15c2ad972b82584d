"""`python -m vllm_backports.maint ...`: the maintainer commands under the command line's guard."""

from ..guard import main_guarded
from . import main

if __name__ == "__main__":
    main_guarded(main, prog_name="python -m vllm_backports.maint")
