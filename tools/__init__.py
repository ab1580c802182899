"""The repository's build and release tooling: `make run` (runlocal) and `make image` /
`make image-test` (image).

Not part of the kro package: these read the checkout itself (Dockerfile, charts/, examples/),
which an installed wheel does not have. They run from the repository root as
`python -m tools.runlocal` and `python -m tools.image`, and use kro.testing's local control
plane like any test does.
"""
