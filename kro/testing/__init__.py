"""kro.testing: a real local Kubernetes control plane for tests and for people.

Lives here: the builder of etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
kubectl, kwok and helm from the committed wrapper Go modules (`gomod/`), the cluster harness
(`python -m kro.testing.cluster up|down|status`), a pytest plugin with one shared cluster
per test run and a fresh namespace per test, and what an operator's own tests need: an
in-process fake API server for unit tests (`kro.testing.fakeapi`) and `run_operator`, an
operator run in the test's process for the length of a `with` block (`kro.testing.operator`).

Importable by other projects. No production module imports it. Every component binds to
127.0.0.1 only.

Loading it as a pytest plugin by its short name (`pytest -p kro.testing`) loads the plugin proper,
kro.testing.pytest_plugin, through `pytest_plugins` below; plain imports of this package never
import pytest.
"""

pytest_plugins = ["kro.testing.pytest_plugin"]
