"""kro.applyset.contest: takeovers read from managedFields, rounds, backoff, yield."""

from __future__ import annotations

from typing import Any

from kro.applyset.contest import (
    ContestPolicy,
    FieldContests,
    contested_paths,
    display_path,
    without_paths,
)

KRO = "kro.run/applyset"
KCM = "kube-controller-manager"
REVISION = "deployment.kubernetes.io/revision"
PATH = ("f:metadata", "f:annotations", f"f:{REVISION}")


def body(revision: str = "7", image: str = "nginx") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {REVISION: revision, "team": "a"}},
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "web", "image": image}]}},
        },
    }


def live(
    version: str, *, revision: str = "1", image: str = "nginx", image_owner: str = KRO
) -> dict[str, Any]:
    """A Deployment as the API server returns it after kube-controller-manager's update."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "uid": "u-1",
            "resourceVersion": version,
            "annotations": {REVISION: revision, "team": "a"},
            "managedFields": [
                {
                    "manager": KRO,
                    "operation": "Apply",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:annotations": {"f:team": {}}},
                        "f:spec": {"f:replicas": {}},
                    },
                },
                {
                    "manager": KCM,
                    "operation": "Update",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, f"f:{REVISION}": {}}}},
                },
                {
                    "manager": image_owner,
                    "operation": "Update",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:spec": {
                            "f:template": {
                                "f:spec": {
                                    "f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}
                                }
                            }
                        }
                    },
                },
            ],
        },
        "spec": {
            "replicas": 1,
            "template": {
                "spec": {
                    "containers": [{"name": "web", "image": image, "imagePullPolicy": "Always"}]
                }
            },
        },
    }


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_field_another_manager_owns_with_another_value_is_contested() -> None:
    assert contested_paths(live("1"), body(), KRO) == {PATH: KCM}


def test_the_same_value_owned_by_another_manager_is_no_contest() -> None:
    assert contested_paths(live("1", revision="7"), body(), KRO) == {}


def test_list_items_are_matched_by_their_keys() -> None:
    found = contested_paths(live("1", image="httpd", image_owner="kubectl-edit"), body(), KRO)
    image = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}', "f:image")
    assert found == {PATH: KCM, image: "kubectl-edit"}
    assert display_path(image) == 'spec.template.spec.containers[name="web"].image'
    assert display_path(PATH) == f'metadata.annotations["{REVISION}"]'


def test_round_one_is_reapplied_then_backoff_then_yield() -> None:
    clock = Clock()
    contests = FieldContests(KRO, ContestPolicy(limit=3, backoff_s=2.0), clock=clock)
    first = contests.review("deployment", body(), live("10"))
    assert first.omit == ()  # drift correction, as upstream
    assert [(c.rounds, c.yielded, c.fresh) for c in first.contests] == [(1, False, True)]
    again = contests.review("deployment", body(), live("10"))  # same version: no new round
    assert [(c.rounds, c.fresh) for c in again.contests] == [(1, False)]

    second = contests.review("deployment", body(), live("12"))
    assert second.omit == (PATH,)  # backing off for 2 s
    assert second.retry_after_s == 2.0
    clock.now += 2.0
    assert contests.review("deployment", body(), live("12")).omit == ()

    third = contests.review("deployment", body(), live("14"))
    assert third.omit == (PATH,)
    (contest,) = third.contests
    assert (contest.rounds, contest.yielded, contest.fresh, contest.manager) == (3, True, True, KCM)
    assert contest.path == f'metadata.annotations["{REVISION}"]'
    assert contest.resource_id == "deployment"
    # Yielded for good: no more rounds, whatever the other manager does.
    later = contests.review("deployment", body(), live("20"))
    assert later.omit == (PATH,)
    assert [(c.rounds, c.fresh) for c in later.contests] == [(3, False)]


def test_a_new_desired_value_starts_over() -> None:
    clock = Clock()
    contests = FieldContests(KRO, ContestPolicy(limit=2, backoff_s=0.0), clock=clock)
    contests.review("deployment", body(), live("1"))
    assert contests.review("deployment", body(), live("2")).omit == (PATH,)
    fresh = contests.review("deployment", body(revision="8"), live("3"))
    assert fresh.omit == ()
    assert [c.rounds for c in fresh.contests] == [1]


def test_rounds_far_apart_are_not_a_fight() -> None:
    clock = Clock()
    contests = FieldContests(KRO, ContestPolicy(limit=2, window_s=60, backoff_s=0), clock=clock)
    contests.review("deployment", body(), live("1"))
    clock.now += 120
    review = contests.review("deployment", body(), live("2"))
    assert review.omit == ()
    assert [c.rounds for c in review.contests] == [1]


def test_objects_without_contests_cost_no_state() -> None:
    contests = FieldContests(KRO)
    assert contests.review("deployment", body(), live("1", revision="7")).contests == ()
    assert not contests.tracks("u-1")  # the only object reviewed


def test_leaving_a_field_out_keeps_everything_else() -> None:
    out = without_paths(body(), [PATH])
    assert out["metadata"]["annotations"] == {"team": "a"}
    assert out["spec"] == body()["spec"]


def test_a_write_while_kro_backs_off_is_no_new_round() -> None:
    """While kro leaves a contested field out (backing off), the other manager still holds it:
    its next write (a Deployment's status update, say) is no round of the fight. Only once kro
    applied the field again does another takeover count."""
    clock = Clock()
    contests = FieldContests(KRO, ContestPolicy(limit=3, backoff_s=2.0), clock=clock)
    contests.review("deployment", body(), live("10"))
    second = contests.review("deployment", body(), live("12"))
    assert second.omit == (PATH,)  # round 2: backing off
    during = contests.review("deployment", body(), live("13"))  # kube-controller-manager again
    assert [(c.rounds, c.yielded, c.fresh) for c in during.contests] == [(2, False, False)]
    clock.now += 2.0
    assert contests.review("deployment", body(), live("13")).omit == ()  # kro takes it back
    third = contests.review("deployment", body(), live("15"))  # and loses it again: round 3
    assert [(c.rounds, c.yielded) for c in third.contests] == [(3, True)]
