"""`python -m kro.runtime operator.py [flags]`: run an operator's set-up function (kro.runtime.runner)."""

from .runner import main

if __name__ == "__main__":
    main()
