"""Controller at scale: N instances of a 3-resource RGD on the local control plane.

Measures, for one run: time until every instance is ACTIVE (`all_active_s`) and until the
controller's requests have stopped after that (`all_settled_s`: the last request before 3 s
without any), p50/p99 create-to-ACTIVE, API requests per instance until settled
(kube-apiserver's apiserver_request_total before/after; includes this script's own creates and
reads, reported separately), controller CPU seconds and peak RSS, and writes during a
steady-state window with no changes that starts once settled (every write to the
RGD's objects, seen through watches, per object and per field manager; the target is 0). With
`--fight` the
Deployment template also sets `deployment.kubernetes.io/revision`, which kube-controller-manager
owns: the window starts once kro reports FieldConflict on every instance, and must show 0 writes.
Results are printed and written to bench/results/controller-<scenario>-<N>-w<W>[-fight].json.

Scenarios (`--scenario`): `three` (ConfigMap, Deployment, Service: time to ACTIVE is set by
kube-controller-manager and the fake nodes), `configmaps` (five ConfigMaps, the second reading
the first: kro's own work decides the time), `fifty` (fifty ConfigMaps, the second reading the
first). `--floor` also runs, in a fresh namespace with kro
stopped, a plain client that creates the same objects with the same concurrency (floor 1), and
one that server-side-applies them and writes one status per instance (floor 2), and one that
sends exactly the writes upstream's controller makes for a new instance, replaying what kro
wrote for its first instance (floor 3: the instance's create, the labeller's and the
inventory's applies, the children's applies with kro's labels, kro's status), and prints the
ratios. `--restart` restarts the controller once everything is ACTIVE and settled, and reports
the time until its requests stop, its writes and its requests per instance. `--replicas N` runs
N `kro controller --shards=auto` replicas instead (kro.testing.kroprocess) over instances spread
across `--namespaces` namespaces with random names (FNV-1a needs diverse names to spread), waits
until they have settled on one view, and reports per replica its peak RSS, CPU seconds, watch
events received (`kro_informer_watch_events_total`, sharded parent informers apart), objects
cached once settled (`kro_informer_cached_objects`, the same way), both also as shares of the
`--replicas 1` run's figures when its result file is there, and reconciles, plus the time
until every instance is ACTIVE; results go to
bench/results/controller-<scenario>-<N>-w<W>-r<replicas>.json. The load average at the start is
recorded with every result.

    python bench/bench_controller.py --instances 200 --workers 16
    python bench/bench_controller.py --instances 1000 --workers 16 --steady-seconds 60
    python bench/bench_controller.py --scaling 50          # throughput per worker count
    python bench/bench_controller.py --instances 20 --fight --steady-seconds 60
    python bench/bench_controller.py --instances 1000 --no-state-gauges  # their CPU cost
    python bench/bench_controller.py --scenario configmaps --instances 200 --floor --restart
    python bench/bench_controller.py --scenario configmaps --instances 300 --replicas 3
    python bench/bench_controller.py --scenario configmaps --instances 1000 --floor --pin

`--scenario graph-decorator` runs one Graph over `--namespaces` labelled Namespaces (a
NetworkPolicy each), then `--more-namespaces` more labelled, then deletes the Graph; with
`--restart` it restarts the controller once the Graph converged and counts the writes that
reach its NetworkPolicies until the new controller is quiet (see bench/controller/scenarios/).

    python bench/bench_controller.py --scenario graph-decorator --namespaces 500
    python bench/bench_controller.py --scenario graph-decorator --namespaces 500 --restart

`--scenario spokes` starts member control planes next to the hub and compares a MultiCluster
controller serving `--instances-per-member` instances in each member with one serving as many
on one cluster: time to ACTIVE, requests, RSS per member, a quiet window (its module says how).

    python bench/bench_controller.py --scenario spokes --instances-per-member 300

Without KUBECONFIG it starts its own local control plane (with fake nodes, so Deployments
become Available and `readyWhen` passes). Each scenario is a module of bench/controller/
(scenarios/, over harness.py), registered in bench/controller/scenarios/__init__.py.
"""

from __future__ import annotations

from controller.cli import main

if __name__ == "__main__":
    main(description=__doc__)
