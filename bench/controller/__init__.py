"""The controller benchmark behind bench/bench_controller.py, one module per scenario.

- harness: what every scenario shares (the run's settings, kube-apiserver's and a process's
  figures, the local control plane, result files);
- process: one `kro controller` process (start, profile, metrics, quiet);
- rgd: the RGD scenarios' run (N instances, steady-state writes, --fight, --restart,
  --scaling), with floors (--floor) and replicas (--replicas) beside it;
- graphs: following a Graph and the objects it decorates;
- scenarios/: one module per `--scenario`, registered in scenarios/__init__.py;
- cli: the command line.

A new scenario is a module in scenarios/ with a `SCENARIO` (see scenario.Scenario) and one line
in the registry. Modules import each other relatively, so the package works both as
`controller` (bench/bench_controller.py puts bench/ first on sys.path) and as
`bench.controller` (the tests).
"""
