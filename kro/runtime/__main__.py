"""`python -m kro.runtime operator.py [flags]`: run an operator's set-up function.

The runner (kro.runtime.runner) documents the flags and the environment it reads."""

from .runner import main

if __name__ == "__main__":
    main()
