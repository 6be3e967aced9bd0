"""armada.yamlkeys: a YAML mapping with the same key twice is refused, naming the line of
the second; through every reader of documents (the API, the policy editor, armadactl's job
and resource files, the configuration file), nothing is changed by such a document."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from armada import yamlkeys
from armada.cli import yamltext

DUPLICATES = [
    # (name, text, the duplicate key, its line, the line of the first)
    ("top level", "a: 1\nb: 2\na: 3\n", "a", 3, 1),
    ("nested", "rules:\n  - action: Fail\n    on: x\n    action: Retry\n", "action", 4, 2),
    ("flow mapping", "x: {k: 1, k: 2}\n", "k", 1, 1),
    ("number keys", "1: a\n1: b\n", "1", 2, 1),
    ("a later document's", "a: 1\n---\nb: 1\nb: 2\n", "b", 4, 3),
]


@pytest.mark.parametrize(
    "text,key,line,first", [d[1:] for d in DUPLICATES], ids=[d[0] for d in DUPLICATES]
)
@pytest.mark.parametrize("loader", ["python", "libyaml", "armadactl", "armadactl-many"])
def test_a_duplicate_key_is_refused_with_its_line(loader, text, key, line, first) -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        if loader == "python":
            list(yaml.load_all(text, Loader=yamlkeys.SafeLoader))  # noqa: S506 - a safe loader
        elif loader == "libyaml":
            list(yaml.load_all(text, Loader=yamlkeys.CSafeLoader))  # noqa: S506
        else:
            yamltext.load_yaml(text, many=True)
    error = caught.value
    assert f"found duplicate key {key if key != '1' else 1!r}" in error.problem
    assert f"(first given on line {first})" in error.problem
    assert error.problem_mark.line + 1 == line


ACCEPTED = [
    (
        "merge keys repeat on purpose",
        "base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n",
        {"base": {"x": 1}, "c": {"x": 1, "y": 2}},
    ),
    ("the same key in two mappings", "- a: 1\n- a: 2\n", [{"a": 1}, {"a": 2}]),
    ("keys differing only in case", "a: 1\nA: 2\n", {"a": 1, "A": 2}),
]


@pytest.mark.parametrize("text,data", [a[1:] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_what_is_not_a_duplicate_reads_as_before(text, data) -> None:
    assert yamlkeys.safe_load(text) == data
    assert yamltext.load_yaml(text) == data


def test_the_configuration_file_refuses_duplicates(tmp_path: Path) -> None:
    from armada.conf import ConfigError, load_config_file

    path = tmp_path / "armada.yaml"
    path.write_text("scheduling:\n  maxRetries: 1\n  maxRetries: 5\n")
    with pytest.raises(ConfigError) as caught:
        load_config_file(path)
    assert "found duplicate key 'maxRetries' (first given on line 2)" in str(caught.value)
    assert "line 3" in str(caught.value)


@pytest.mark.django_db
def test_the_api_refuses_a_body_with_a_duplicate_key_and_changes_nothing(client, admin_user):
    from armada.models import RetryPolicy

    client.force_login(admin_user)
    body = (
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 2\n"
        "defaultAction: Fail\nrules:\n  - action: Fail\n    onCategory: oom\n    action: Retry\n"
    )
    response = client.post("/api/v1/retry-policies", data=body, content_type="application/yaml")
    assert response.status_code == 400, response.content
    message = response.json()["message"]
    assert "found duplicate key 'action' (first given on line 7)" in message
    assert "line 9" in message
    assert not RetryPolicy.objects.exists()
