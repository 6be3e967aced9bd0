"""The executors of ``config/armada.yaml``: their nodes, namespaces and the error categories
their failures are labelled with (part of ``core.config``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from armada.core.categorizer import INTERNAL, INTERNAL_SUBCATEGORIES
from armada.core.config_kubernetes import KubernetesCluster
from armada.core.config_podchecks import PodChecks
from armada.core.config_types import RFC1123_LABEL, Duration, Quantities, Strict, compiled_regex


class Taint(Strict):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class NodeGroup(Strict):
    """One node, or ``count`` identical nodes named ``<name>-0`` .. ``<name>-<count-1>``."""

    name: str = Field(min_length=1)
    count: StrictInt = Field(1, ge=1, le=100000)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    allocatable: Quantities

    def node_names(self) -> list[str]:
        if self.count == 1:
            return [self.name]
        return [f"{self.name}-{i}" for i in range(self.count)]


class ExitCodeMatcher(Strict):
    operator: Literal["In", "NotIn"]
    values: list[StrictInt] = Field(min_length=1)


class PatternMatcher(Strict):
    pattern: str = Field(min_length=1)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        return compiled_regex(v)


class CategoryRule(Strict):
    on_exit_codes: ExitCodeMatcher | None = Field(None, alias="onExitCodes")
    on_conditions: list[Literal["OOMKilled", "Evicted", "DeadlineExceeded"]] | None = Field(
        None, alias="onConditions", min_length=1
    )
    on_termination_message: PatternMatcher | None = Field(None, alias="onTerminationMessage")
    on_pod_error: PatternMatcher | None = Field(None, alias="onPodError")
    container_name: str | None = Field(None, alias="containerName", min_length=1)
    subcategory: str | None = None
    hint: str | None = None

    @model_validator(mode="after")
    def _exactly_one_matcher(self) -> CategoryRule:
        present = [
            name
            for name, value in (
                ("onExitCodes", self.on_exit_codes),
                ("onConditions", self.on_conditions),
                ("onTerminationMessage", self.on_termination_message),
                ("onPodError", self.on_pod_error),
            )
            if value is not None
        ]
        if len(present) != 1:
            raise ValueError(
                "a rule needs exactly one of onExitCodes, onConditions, onTerminationMessage, "
                f"onPodError (found {', '.join(present) or 'none'})"
            )
        return self


class Category(Strict):
    name: str = Field(min_length=1)
    action: Literal["Retain", "Delete"] = "Retain"
    rules: list[CategoryRule] = Field(min_length=1)

    @model_validator(mode="after")
    def _no_reserved_subcategory(self) -> Category:
        if self.name == INTERNAL:
            for i, rule in enumerate(self.rules):
                if rule.subcategory in INTERNAL_SUBCATEGORIES:
                    raise ValueError(f"rules[{i}].subcategory: {_reserved(rule.subcategory)}")
        return self


def _reserved(subcategory: str) -> str:
    return (
        f"{INTERNAL} / {subcategory} is reserved for failures the control plane labels itself "
        f"(reserved: {', '.join(INTERNAL_SUBCATEGORIES)}); choose another subcategory"
    )


class ErrorCategories(Strict):
    enabled: StrictBool = False
    default_category: str = Field("", alias="defaultCategory")
    default_subcategory: str = Field("", alias="defaultSubcategory")
    categories: list[Category] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> ErrorCategories:
        first: dict[str, int] = {}
        for i, c in enumerate(self.categories):
            if c.name in first:
                raise ValueError(
                    f"categories[{i}].name: duplicate category name {c.name!r} "
                    f"(also categories[{first[c.name]}])"
                )
            first[c.name] = i
        if self.default_category == INTERNAL and self.default_subcategory in INTERNAL_SUBCATEGORIES:
            raise ValueError(f"defaultSubcategory: {_reserved(self.default_subcategory)}")
        return self


class Executor(Strict):
    id: str
    pool: str = "default"
    backend: Literal["fake", "local", "kubernetes"] = "fake"
    tick_period: Duration = Field(1.0, alias="tickPeriod", gt=0)
    # How long a failed pod may take to go after deletion was asked for; longer, and the run
    # is reported internal / stuck-terminating.
    pod_deletion_timeout: Duration = Field(30.0, alias="podDeletionTimeout", gt=0)
    # How long a failed pod of a Retain category is kept after it ended; then the executor
    # deletes it (and counts it in armada_executor_kept_pods_deleted_total).
    kept_pod_retention: Duration = Field(86400.0, alias="keptPodRetention", gt=0)
    # How often a running pod's utilisation (what it used over the period) is reported and
    # published as a ``utilisation`` event: at most one event per run per period.
    utilisation_period: Duration = Field(30.0, alias="utilisationPeriod", ge=1)
    # The local backend's pods (processes, logs, results); empty means var/executors/<id>.
    state_dir: str = Field("", alias="stateDir")
    tracked_node_labels: list[str] = Field(default_factory=list, alias="trackedNodeLabels")
    # The namespaces that exist on the executor's cluster. A pod in any other namespace is
    # refused at creation, as Kubernetes refuses it (namespaces "x" not found).
    namespaces: list[str] = Field(default_factory=lambda: ["default"], min_length=1)
    # The fake and local backends' nodes; a kubernetes executor reads its cluster's.
    nodes: list[NodeGroup] = Field(default_factory=list)
    # How a kubernetes executor reaches its cluster (``core.config_kubernetes``).
    kubernetes: KubernetesCluster = Field(default_factory=KubernetesCluster)
    # Stuck-pod checks of a kubernetes executor (``core.podchecks``), Armada's shape.
    pod_checks: PodChecks = Field(default_factory=PodChecks, alias="podChecks")
    error_categories: ErrorCategories = Field(
        default_factory=ErrorCategories, alias="errorCategories"
    )
    # Where the armada-executor process serves its own Prometheus metrics (host:port, such as
    # 127.0.0.1:9101; an empty host means every interface); empty: not served
    # (``executor.metrics``).
    metrics_address: str = Field("", alias="metricsAddress")

    @field_validator("id")
    @classmethod
    def _label(cls, v: str) -> str:
        if not RFC1123_LABEL.match(v) or len(v) > 63:
            raise ValueError(
                f"{v!r} must be a lower-case RFC 1123 label (a-z, 0-9 and '-', at most 63 characters)"
            )
        return v

    @field_validator("metrics_address")
    @classmethod
    def _metrics_host_and_port(cls, v: str) -> str:
        text = v.strip()
        if not text:
            return ""
        _, sep, port = text.rpartition(":")
        if not sep or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(
                f"{v!r} must be host:port (such as 127.0.0.1:9101), or empty to serve no metrics"
            )
        return text

    @model_validator(mode="after")
    def _namespace_labels(self) -> Executor:
        for i, name in enumerate(self.namespaces):
            if not RFC1123_LABEL.match(name) or len(name) > 63:
                raise ValueError(
                    f"namespaces[{i}]: {name!r} must be a lower-case RFC 1123 label (a-z, 0-9 "
                    "and '-', at most 63 characters), as Kubernetes names namespaces"
                )
            if name in self.namespaces[:i]:
                raise ValueError(f"namespaces[{i}]: duplicate namespace {name!r}")
        return self
