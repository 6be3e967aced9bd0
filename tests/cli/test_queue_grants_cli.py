"""``armadactl grant queue`` and ``revoke queue`` against Django's live server: a user gets
watch on one queue and then lists its jobs; the queue's other grants stay; bad verbs and a
missing subject are usage errors; a server refusal names its reason."""

from __future__ import annotations

import pytest

from armada.models import Queue
from tests.cli.conftest import live_armadactl

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def root_ctl(live_server, admin_user, capsys):
    return live_armadactl(live_server.url, capsys, ("root", "root-password"))


def test_grant_watch_to_a_user_then_revoke_it(root_ctl, queue, outsider):
    as_otto = {"user": ("otto", "otto-password")}
    code, _, err = root_ctl("get", "job-sets", "demo", **as_otto)
    assert code == 1 and "may not watch" in err

    code, out, err = root_ctl("grant", "queue", "demo", "watch", "--user", "otto", "--group", "ml")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Granted watch on queue demo to user otto, group ml",
        "  user otto may now: watch",
        "  group ml may now: watch",
    ]
    assert Queue.objects.get(name="demo").permissions == [
        {"subjects": [{"kind": "Group", "name": "submitters"}], "verbs": ["submit"]},
        {
            "subjects": [{"kind": "User", "name": "otto"}, {"kind": "Group", "name": "ml"}],
            "verbs": ["watch"],
        },
    ]
    code, _, err = root_ctl("get", "job-sets", "demo", **as_otto)
    assert (code, err) == (0, "No job sets in queue demo.\n")

    code, out, _ = root_ctl("revoke", "queue", "demo", "--user", "otto")
    assert code == 0
    assert out.splitlines() == [
        "Revoked every verb on queue demo from user otto",
        "  user otto may now: nothing (through this queue)",
    ]
    assert root_ctl("get", "job-sets", "demo", **as_otto)[0] == 1
    assert Queue.objects.get(name="demo").permissions[1] == {
        "subjects": [{"kind": "Group", "name": "ml"}],
        "verbs": ["watch"],
    }


def test_usage_errors_and_refusals(root_ctl, queue, owner):
    code, _, err = root_ctl("grant", "queue", "demo", "peek", "--user", "otto")
    assert code == 2 and "argument VERBS: peek: verbs are submit" in err
    code, _, err = root_ctl("grant", "queue", "demo", "watch")
    assert code == 2 and "--user NAME or --group NAME" in err
    code, _, err = root_ctl(
        "grant", "queue", "demo", "watch", "--user", "otto", user=("olive", "olive-password")
    )
    assert code == 1 and "create_queue" in err
    code, _, err = root_ctl("grant", "queue", "nowhere", "watch", "--user", "otto")
    assert code == 1 and "does not exist" in err
