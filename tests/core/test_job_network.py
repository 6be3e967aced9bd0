"""armada.core.job_network through parse_job_file: a job's services and ingress items, and
the ports its containers declare, checked with the field named."""

from __future__ import annotations

import pytest

from tests.core.test_submission import container, errors_of, fields_of, job, job_file, parse

J = "jobs[0]"


def with_ports(*ports: int, name: str = "main") -> dict:
    return container(name, ports=[{"containerPort": p} for p in ports])


def network_job(**fields) -> dict:
    return job(with_ports(8080, 9090), **fields)


# --- accepted -------------------------------------------------------------------------------


def test_a_job_without_network_items_has_none():
    spec = parse(job_file(job())).jobs[0]
    assert (spec.services, spec.ingress) == ([], [])


@pytest.mark.parametrize(
    ("services", "expected"),
    [
        (
            [{"ports": [8080]}],
            [{"type": "NodePort", "ports": [8080], "name": ""}],
        ),
        (
            [{"type": "Headless", "ports": [8080, 9090], "name": "web"}],
            [{"type": "Headless", "ports": [8080, 9090], "name": "web"}],
        ),
        (
            [{"type": "NodePort", "ports": [8080.0], "name": None}],
            [{"type": "NodePort", "ports": [8080], "name": ""}],
        ),
        (
            [{"ports": [8080], "name": "a"}, {"ports": [8080], "name": "b"}],
            [
                {"type": "NodePort", "ports": [8080], "name": "a"},
                {"type": "NodePort", "ports": [8080], "name": "b"},
            ],
        ),
        # Armada does not ask a port to be declared by a container; neither do we.
        ([{"ports": [1, 65535]}], [{"type": "NodePort", "ports": [1, 65535], "name": ""}]),
    ],
    ids=["defaults", "complete", "whole-float-and-null-name", "two-services-one-port", "bounds"],
)
def test_services_accepted_complete(services, expected):
    assert parse(job_file(network_job(services=services))).jobs[0].services == expected


@pytest.mark.parametrize(
    ("ingress", "expected"),
    [
        (
            [{"ports": [8080]}],
            [
                {
                    "ports": [8080],
                    "annotations": {},
                    "tlsEnabled": False,
                    "certName": "",
                    "useClusterIP": False,
                }
            ],
        ),
        (
            [
                {
                    "type": "Ingress",
                    "ports": [8080, 9090],
                    "annotations": {"nginx.ingress.kubernetes.io/rewrite-target": "/"},
                    "tlsEnabled": True,
                    "certName": "team-a.web-cert",
                    "useClusterIP": True,
                }
            ],
            [
                {
                    "ports": [8080, 9090],
                    "annotations": {"nginx.ingress.kubernetes.io/rewrite-target": "/"},
                    "tlsEnabled": True,
                    "certName": "team-a.web-cert",
                    "useClusterIP": True,
                }
            ],
        ),
        (
            [{"ports": [8080]}, {"ports": [9090], "annotations": None, "certName": None}],
            [
                {
                    "ports": [8080],
                    "annotations": {},
                    "tlsEnabled": False,
                    "certName": "",
                    "useClusterIP": False,
                },
                {
                    "ports": [9090],
                    "annotations": {},
                    "tlsEnabled": False,
                    "certName": "",
                    "useClusterIP": False,
                },
            ],
        ),
    ],
    ids=["defaults", "complete-with-armada-type", "two-items-nulls"],
)
def test_ingress_accepted_complete(ingress, expected):
    assert parse(job_file(network_job(ingress=ingress))).jobs[0].ingress == expected


# --- refused --------------------------------------------------------------------------------

BAD = [
    # (id, job fields, the fields named)
    ("services-not-a-list", {"services": {"ports": [80]}}, [f"{J}.services"]),
    ("service-not-a-mapping", {"services": ["web"]}, [f"{J}.services[0]"]),
    ("service-unknown-key", {"services": [{"ports": [80], "port": 80}]}, [f"{J}.services[0].port"]),
    ("service-no-ports", {"services": [{"type": "NodePort"}]}, [f"{J}.services[0].ports"]),
    ("service-empty-ports", {"services": [{"ports": []}]}, [f"{J}.services[0].ports"]),
    ("service-ports-not-a-list", {"services": [{"ports": 80}]}, [f"{J}.services[0].ports"]),
    ("service-port-zero", {"services": [{"ports": [0]}]}, [f"{J}.services[0].ports[0]"]),
    ("service-port-too-big", {"services": [{"ports": [80, 65536]}]}, [f"{J}.services[0].ports[1]"]),
    ("service-port-text", {"services": [{"ports": ["80"]}]}, [f"{J}.services[0].ports[0]"]),
    ("service-port-bool", {"services": [{"ports": [True]}]}, [f"{J}.services[0].ports[0]"]),
    ("service-port-fraction", {"services": [{"ports": [80.5]}]}, [f"{J}.services[0].ports[0]"]),
    ("service-port-twice", {"services": [{"ports": [80, 81, 80]}]}, [f"{J}.services[0].ports[2]"]),
    (
        "service-type",
        {"services": [{"type": "LoadBalancer", "ports": [80]}]},
        [f"{J}.services[0].type"],
    ),
    (
        "service-type-case",
        {"services": [{"type": "nodeport", "ports": [80]}]},
        [f"{J}.services[0].type"],
    ),
    (
        "service-name-upper",
        {"services": [{"ports": [80], "name": "Web"}]},
        [f"{J}.services[0].name"],
    ),
    (
        "service-name-long",
        {"services": [{"ports": [80], "name": "a" * 64}]},
        [f"{J}.services[0].name"],
    ),
    (
        "service-name-dots",
        {"services": [{"ports": [80], "name": "a.b"}]},
        [f"{J}.services[0].name"],
    ),
    ("service-name-number", {"services": [{"ports": [80], "name": 7}]}, [f"{J}.services[0].name"]),
    (
        "service-name-twice",
        {"services": [{"ports": [80], "name": "web"}, {"ports": [81], "name": "web"}]},
        [f"{J}.services[1].name"],
    ),
    ("ingress-not-a-list", {"ingress": "yes"}, [f"{J}.ingress"]),
    ("ingress-no-ports", {"ingress": [{}]}, [f"{J}.ingress[0].ports"]),
    ("ingress-port-range", {"ingress": [{"ports": [-1]}]}, [f"{J}.ingress[0].ports[0]"]),
    ("ingress-port-twice", {"ingress": [{"ports": [80, 80]}]}, [f"{J}.ingress[0].ports[1]"]),
    (
        "ingress-port-in-two-items",
        {"ingress": [{"ports": [80, 81]}, {"ports": [82, 81]}]},
        [f"{J}.ingress[1].ports[1]"],
    ),
    ("ingress-unknown-key", {"ingress": [{"ports": [80], "host": "x"}]}, [f"{J}.ingress[0].host"]),
    ("ingress-type", {"ingress": [{"type": "Route", "ports": [80]}]}, [f"{J}.ingress[0].type"]),
    (
        "ingress-tls-text",
        {"ingress": [{"ports": [80], "tlsEnabled": "true"}]},
        [f"{J}.ingress[0].tlsEnabled"],
    ),
    (
        "ingress-cluster-ip-number",
        {"ingress": [{"ports": [80], "useClusterIP": 1}]},
        [f"{J}.ingress[0].useClusterIP"],
    ),
    (
        "ingress-cert-name",
        {"ingress": [{"ports": [80], "certName": "Web Cert"}]},
        [f"{J}.ingress[0].certName"],
    ),
    (
        "ingress-annotations-not-a-mapping",
        {"ingress": [{"ports": [80], "annotations": ["a"]}]},
        [f"{J}.ingress[0].annotations"],
    ),
    (
        "ingress-annotation-value-number",
        {"ingress": [{"ports": [80], "annotations": {"a": 1}}]},
        [f"{J}.ingress[0].annotations[a]"],
    ),
    (
        "ingress-annotation-bad-key",
        {"ingress": [{"ports": [80], "annotations": {"bad key": "x"}}]},
        [f"{J}.ingress[0].annotations[bad key]"],
    ),
]


@pytest.mark.parametrize(("fields", "named"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_network_items_are_named(fields, named):
    assert fields_of(job_file(network_job(**fields))) == named


def test_every_problem_of_the_items_is_named_at_once():
    data = job_file(
        network_job(
            services=[{"type": "Cluster", "ports": []}],
            ingress=[{"ports": [80]}, {"ports": [80], "tlsEnabled": "no"}],
        )
    )
    assert fields_of(data) == [
        f"{J}.services[0].type",
        f"{J}.services[0].ports",
        f"{J}.ingress[1].ports[0]",
        f"{J}.ingress[1].tlsEnabled",
    ]


def test_the_message_says_which_item_has_the_port_already():
    data = job_file(network_job(ingress=[{"ports": [8080]}, {"ports": [8080]}]))
    [(_, message)] = errors_of(data)
    assert "jobs[0].ingress[0]" in message and "8080" in message


# --- the ports a pod declares ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("containers", "named"),
    [
        ([with_ports(80, 81)], []),
        ([with_ports(80, name="a"), with_ports(81, name="b")], []),
        (
            [with_ports(80, 80)],
            [f"{J}.podSpec.containers[0].ports[1].containerPort"],
        ),
        (
            [with_ports(80, name="a"), with_ports(81, 80, name="b")],
            [f"{J}.podSpec.containers[1].ports[1].containerPort"],
        ),
    ],
    ids=["distinct", "distinct-in-two-containers", "twice-in-one", "once-in-each-of-two"],
)
def test_a_container_port_is_declared_once_in_a_pod(containers, named):
    data = job_file(job(*containers))
    if named:
        assert fields_of(data) == named
    else:
        parse(data)
