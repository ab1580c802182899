"""`python -m kro`: the same command as the `kro` console script, for environments where the
script is not on PATH (a bare virtualenv, `pipx run`, a container with only the module)."""

from kro.cli.main import main

raise SystemExit(main())
