"""Reading YAML files with libyaml's parser: the same data, dates as text, and the Python
parser's error messages (with the offending line quoted)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from armada.cli import yamltext
from armada.cli.jobfile import JobFileError, load_yaml, parse_job_text
from armada.cli.resourcefile import load_resources

TEXTS = [
    "queue: q1\njobSetId: 2024-01-01\njobs:\n- podSpec: {}\n  annotations: {day: 2024-05-06}\n",
    "a: 2024-01-01 10:00:00\nb: !!str 12\nc: 0x1F\nd: .inf\ne: yes\nf: ~\ng: 1_000\nh: 1:20\n",
    "base: &b {cpu: 1, memory: 1Gi}\njob:\n  <<: *b\n  cpu: 2\nlist: [*b, *b]\n",
    'text: |\n  line one\n  line\ttwo\nfolded: >-\n  a\n  b\nquoted: "tab\\there \\u263a"\n',
    '\'{"queue": "q", "jobs": [{"priority": 1.5e3}]}\': json-like key\nnone: null\n',
]


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_libyaml_does_the_parsing_where_installed() -> None:
    assert issubclass(yamltext.CLoader, yaml.CSafeLoader)


@pytest.mark.parametrize("text", TEXTS)
def test_both_parsers_read_the_same_data(text: str) -> None:
    assert load_yaml(text) == yaml.load(text, Loader=yamltext.PyLoader)


def test_both_parsers_refuse_a_duplicate_key_alike() -> None:
    """A key given twice is refused (``armada.yamlkeys``) by both, at the second key."""
    problems = set()
    for loader in (yamltext.CLoader, yamltext.PyLoader):
        with pytest.raises(yaml.YAMLError) as caught:
            yaml.load("a: 1\na: 2\n", Loader=loader)
        problems.add((caught.value.problem, caught.value.problem_mark.line))
    assert problems == {("found duplicate key 'a' (first given on line 1)", 1)}


def test_no_parser_turns_dates_into_datetimes() -> None:
    for loader in (yamltext.CLoader, yamltext.PyLoader):
        data = yaml.load("d: 2024-01-01\nt: 2024-01-01T10:00:00Z\n", Loader=loader)
        assert data == {"d": "2024-01-01", "t": "2024-01-01T10:00:00Z"}


@pytest.mark.parametrize(
    "text",
    [
        "queue: [oops\n",
        "jobs:\n- a: 1\n  b: [1, 2\n",
        "a: 1\x00\n",  # a character YAML does not allow
        "a: \ud800\n",  # a lone surrogate (standard input read in the C locale)
        "? [1, 2]\n: x\n",  # an unhashable key
        "a: !foo bar\n",  # an unknown tag
        "--- a\n--- b\n",  # two documents where one is expected
    ],
)
def test_errors_are_the_python_parsers_with_the_line_quoted(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as expected:
        yaml.load(text, Loader=yamltext.PyLoader)
    with pytest.raises(JobFileError) as info:
        parse_job_text(text, "jobs.yaml")
    assert info.value.message == f"jobs.yaml is not valid YAML: {expected.value}"


def test_a_text_only_the_python_parser_accepts_still_reads() -> None:
    # libyaml refuses a byte-order mark inside the stream; the Python parser reads it as
    # part of the key.
    text = "queue: q\n\ufeffjobSetId: s\n"
    with pytest.raises(yaml.YAMLError):
        yaml.load(text, Loader=yaml.CSafeLoader if yaml.__with_libyaml__ else yamltext.PyLoader)
    assert load_yaml(text) == {"queue": "q", "\ufeffjobSetId": "s"}


def test_a_big_job_file_reads_like_the_python_parser_reads_it() -> None:
    jobs = [
        {
            "priority": i % 10,
            "annotations": {"day": "2026-12-03", "index": str(i)},
            "podSpec": {"containers": [{"name": "main", "command": ["sh", "-c", f"echo {i}"]}]},
        }
        for i in range(300)
    ]
    text = yaml.safe_dump({"queue": "q", "jobSetId": "s", "jobs": jobs}, sort_keys=False)
    assert load_yaml(text) == yaml.load(text, Loader=yamltext.PyLoader)
    assert load_yaml(text)["jobs"] == jobs


def test_several_documents_read_alike_and_keep_dates_as_text(tmp_path: Path) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(
        "kind: Queue\nname: q1\nlabels: {since: 2024-01-01}\n---\n---\n"
        "kind: Queue\nname: q2\npriorityFactor: 2\n"
    )
    resources = load_resources(str(path))
    assert [(r.kind, r.name) for r in resources] == [("Queue", "q1"), ("Queue", "q2")]
    assert resources[0].body["labels"] == {"since": "2024-01-01"}


def test_a_broken_document_among_several_is_reported_with_the_python_parsers_message(
    tmp_path: Path,
) -> None:
    text = "kind: Queue\nname: q1\n---\nkind: [Queue\n"
    path = tmp_path / "all.yaml"
    path.write_text(text)
    with pytest.raises(yaml.YAMLError) as expected:
        list(yaml.load_all(text, Loader=yamltext.PyLoader))
    with pytest.raises(JobFileError) as info:
        load_resources(str(path))
    assert info.value.message == f"{path} is not valid YAML: {expected.value}"
    assert "kind: [Queue" in info.value.message  # the line is quoted
