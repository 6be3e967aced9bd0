"""The shape of ``config/armada.yaml`` and its validation.

``parse_config(data)`` turns the loaded YAML into frozen objects or raises
:class:`~armada.core.errors.ValidationFailed` whose every error names the key
(``scheduling.retryPolicy.globalMaxRetries``), so that a wrong key or type stops start-up
with a message an operator can act on. Unknown keys are errors too: a typo must not be
silently ignored.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    Field,
    StrictBool,
    StrictInt,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from armada.core.away import WILDCARD, AwayEntry
from armada.core.config_auth import PERMISSION_CODENAMES, Auth  # noqa: F401 - this module's names
from armada.core.config_executors import (  # noqa: F401 - part of this module's names
    CategoryRule,
    ErrorCategories,
    Executor,
    NodeGroup,
    Taint,
)
from armada.core.config_limits import (
    AwayNodeType,
    Fractions,
    FractionsByPool,
    SchedulingLimits,
    unknown_pools,
)
from armada.core.config_types import Duration, Strict
from armada.core.errors import FieldError, ValidationFailed

_KEY_PREFIX = re.compile(r"^([A-Za-z][\w./\[\]-]*): ")


class PriorityClass(Strict):
    priority: StrictInt = Field(ge=0)
    preemptible: StrictBool = False
    # What one queue may hold of this class, as fractions of the pool (``core.limits``).
    maximum_resource_fraction_per_queue: Fractions = Field(
        default_factory=dict, alias="maximumResourceFractionPerQueue"
    )
    maximum_resource_fraction_per_queue_by_pool: FractionsByPool = Field(
        default_factory=dict, alias="maximumResourceFractionPerQueueByPool"
    )
    # Node types its jobs may use away from home, tried in order (``core.away``).
    away_node_types: list[AwayNodeType] = Field(default_factory=list, alias="awayNodeTypes")


class Pool(Strict):
    name: str = Field(min_length=1)
    short_job_penalty_cutoff: Duration = Field(0.0, alias="shortJobPenaltyCutoff")
    # The pool's own scheduling.protectedFractionOfFairShare, when set.
    protected_fraction_of_fair_share: float | None = Field(
        None, alias="protectedFractionOfFairShare", ge=0.0, allow_inf_nan=False
    )


class RetryPolicyConfig(Strict):
    enabled: StrictBool = False
    global_max_retries: StrictInt | None = Field(None, alias="globalMaxRetries", ge=0)
    default_policy_name: str = Field("", alias="defaultPolicyName")

    @model_validator(mode="after")
    def _limit_required_when_enabled(self) -> RetryPolicyConfig:
        if self.enabled and self.global_max_retries is None:
            raise ValueError(
                "globalMaxRetries is required when retry policies are enabled "
                "(0 turns every retry off)"
            )
        return self


class Scheduling(SchedulingLimits):
    cycle_period: Duration = Field(1.0, alias="cyclePeriod", gt=0)
    max_retries: StrictInt = Field(3, alias="maxRetries", ge=0)
    retry_policy: RetryPolicyConfig = Field(default_factory=RetryPolicyConfig, alias="retryPolicy")
    priority_classes: dict[str, PriorityClass] = Field(
        default_factory=lambda: {
            "armada-default": PriorityClass(priority=1000, preemptible=False),
            "armada-preemptible": PriorityClass(priority=1000, preemptible=True),
        },
        alias="priorityClasses",
    )
    default_priority_class_name: str = Field("armada-default", alias="defaultPriorityClassName")
    pools: list[Pool] = Field(default_factory=lambda: [Pool(name="default")], min_length=1)
    node_id_label: str = Field("kubernetes.io/hostname", alias="nodeIdLabel")
    # The node id label is indexed by default, so that retry policies (avoidSameNode) may be
    # turned on without more configuration; see ``_node_id_label_indexed``.
    indexed_node_labels: list[str] = Field(
        default_factory=lambda: ["kubernetes.io/hostname"], alias="indexedNodeLabels"
    )
    maximum_jobs_per_round: StrictInt = Field(10000, alias="maximumJobsPerRound", gt=0)
    max_queue_lookback: StrictInt = Field(10000, alias="maxQueueLookback", gt=0)
    maximum_scheduling_rate: float = Field(0.0, alias="maximumSchedulingRate", ge=0.0)
    maximum_scheduling_burst: StrictInt = Field(10000, alias="maximumSchedulingBurst", gt=0)
    fair_share_preemption: StrictBool = Field(True, alias="fairSharePreemption")
    # A cycle's writes run behind the next cycle's round (``services.lease_pipeline``; on
    # PostgreSQL only).
    write_behind: StrictBool = Field(True, alias="writeBehind")
    protected_fraction_of_fair_share: float = Field(
        0.5, alias="protectedFractionOfFairShare", ge=0.0
    )

    @model_validator(mode="after")
    def _default_class_exists(self) -> Scheduling:
        if self.default_priority_class_name not in self.priority_classes:
            raise ValueError(
                f"defaultPriorityClassName: {self.default_priority_class_name!r} is not one of "
                f"priorityClasses ({', '.join(sorted(self.priority_classes))})"
            )
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            raise ValueError("pools: pool names must be unique")
        return self

    @model_validator(mode="after")
    def _limits_name_pools(self) -> Scheduling:
        """Every pool a limit names is a configured pool; floating resources have one
        entry each."""
        pools = {p.name for p in self.pools}
        known = f"scheduling.pools: {', '.join(sorted(pools))}"
        for name, pc in self.priority_classes.items():
            bad = unknown_pools(pc.maximum_resource_fraction_per_queue_by_pool, pools)
            if bad:
                raise ValueError(
                    f"priorityClasses.{name}.maximumResourceFractionPerQueueByPool: unknown "
                    f"pool(s) {', '.join(bad)} ({known})"
                )
        bad = unknown_pools(self.maximum_resource_fraction_to_schedule_by_pool, pools)
        if bad:
            raise ValueError(
                f"maximumResourceFractionToScheduleByPool: unknown pool(s) {', '.join(bad)} ({known})"
            )
        seen: set[str] = set()
        for i, f in enumerate(self.floating_resources):
            if f.name in seen:
                raise ValueError(f"floatingResources[{i}].name: {f.name!r} is named twice")
            seen.add(f.name)
            bad = unknown_pools([p.name for p in f.pools], pools)
            if bad:
                raise ValueError(
                    f"floatingResources[{i}].pools: unknown pool(s) {', '.join(bad)} ({known})"
                )
        return self

    @model_validator(mode="after")
    def _away_node_types(self) -> Scheduling:
        """Well-known node types have one name each; a class with away node types is
        preemptible (its away jobs must be evictable) and names known types."""
        names = [t.name for t in self.well_known_node_types]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ValueError(f"wellKnownNodeTypes[{i}].name: {name!r} is named twice")
            if name == WILDCARD:
                raise ValueError(f"wellKnownNodeTypes[{i}].name: {WILDCARD!r} means every type")
        known = set(names)
        for pc_name, pc in self.priority_classes.items():
            where = f"priorityClasses.{pc_name}.awayNodeTypes"
            if pc.away_node_types and not pc.preemptible:
                raise ValueError(
                    f"{where}: a class with away node types must be preemptible"
                    " (its jobs are evicted first when the home jobs need the room)"
                )
            for i, away in enumerate(pc.away_node_types):
                for target in away.entry().targets:
                    if target.name != WILDCARD and target.name not in known:
                        raise ValueError(
                            f"{where}[{i}]: unknown node type {target.name!r}"
                            f" (wellKnownNodeTypes: {', '.join(sorted(known)) or 'none'})"
                        )
        return self

    def away_entries(self) -> dict[str, list[AwayEntry]]:
        """Each priority class's away entries, in order (classes without any left out)."""
        return {
            name: [a.entry() for a in pc.away_node_types]
            for name, pc in self.priority_classes.items()
            if pc.away_node_types
        }

    def protected_fraction(self, pool: str) -> float:
        """The pool's protectedFractionOfFairShare, or the scheduling-wide one."""
        for p in self.pools:
            if p.name == pool and p.protected_fraction_of_fair_share is not None:
                return p.protected_fraction_of_fair_share
        return self.protected_fraction_of_fair_share

    @model_validator(mode="after")
    def _node_id_label_indexed(self) -> Scheduling:
        """Armada's rule: with the retry-policy engine on, ``nodeIdLabel`` must be one of
        ``indexedNodeLabels``. An avoidSameNode retry keeps the job off the nodes it failed on
        by that label; unindexed, every such job would be matched node by node."""
        if self.retry_policy.enabled and self.node_id_label not in self.indexed_node_labels:
            raise ValueError(
                f"indexedNodeLabels: must include the node id label {self.node_id_label!r} "
                "(scheduling.nodeIdLabel) when retry policies are enabled "
                "(scheduling.retryPolicy.enabled), so that avoidSameNode retries find nodes "
                f"by an indexed label (indexedNodeLabels: "
                f"{', '.join(self.indexed_node_labels) or 'none'})"
            )
        return self


class Metrics(Strict):
    job_state_metrics_reset_interval: Duration = Field(
        43200.0, alias="jobStateMetricsResetInterval", ge=0
    )
    # How often the scheduler reckons the queued and run time histograms
    # (``services.duration_metrics``), as Armada's scheduler refreshes its metrics; 0: every
    # cycle.
    refresh_interval: Duration = Field(30.0, alias="refreshInterval", ge=0)


class ServerTls(Strict):
    """TLS of a listening port: both files, or neither (plaintext)."""

    cert_file: str = Field("", alias="certFile")
    key_file: str = Field("", alias="keyFile")

    @model_validator(mode="after")
    def _both_or_neither(self) -> ServerTls:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("certFile and keyFile go together: give both (TLS) or neither")
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file)


class Grpc(Strict):
    """The ``grpc`` process: Armada's public gRPC API (``armada.grpcserver``)."""

    port: StrictInt = Field(50051, ge=1, le=65535)
    # Unary calls (and authentication, which may hash a password) run on at most this many
    # threads; each holds a database connection only while it runs.
    worker_threads: StrictInt = Field(8, alias="workerThreads", ge=1, le=256)
    # On SIGTERM, calls in flight get this long to finish; event streams end at once.
    grace_period: Duration = Field(10.0, alias="gracePeriod", ge=0)
    tls: ServerTls = Field(default_factory=ServerTls)


class ExecutorApi(Strict):
    """The ``executor-api`` process: the API executors lease and report through
    (``armada.executorapiserver``), on a port of its own."""

    port: StrictInt = Field(50052, ge=1, le=65535)
    worker_threads: StrictInt = Field(8, alias="workerThreads", ge=1, le=256)
    grace_period: Duration = Field(10.0, alias="gracePeriod", ge=0)
    tls: ServerTls = Field(default_factory=ServerTls)


class Web(Strict):
    """The web process (REST API, gateway, Lookout, event streams); its address is given
    where it is started (``manage.py runall --host/--port``)."""

    tls: ServerTls = Field(default_factory=ServerTls)


class ArmadaConfig(Strict):
    scheduling: Scheduling = Field(default_factory=Scheduling)
    executor_timeout: Duration = Field(60.0, alias="executorTimeout", gt=0)
    queue_refresh_period: Duration = Field(10.0, alias="queueRefreshPeriod", gt=0)
    metrics: Metrics = Field(default_factory=Metrics)
    auth: Auth = Field(default_factory=Auth)
    grpc: Grpc = Field(default_factory=Grpc)
    web: Web = Field(default_factory=Web)
    executor_api: ExecutorApi = Field(default_factory=ExecutorApi, alias="executorApi")
    executors: list[Executor] = Field(default_factory=list)

    @model_validator(mode="after")
    def _executors_consistent(self) -> ArmadaConfig:
        ids = [e.id for e in self.executors]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"executors: duplicate id(s) {', '.join(dupes)}")
        pools = {p.name for p in self.scheduling.pools}
        for i, e in enumerate(self.executors):
            if e.pool not in pools:
                raise ValueError(
                    f"executors[{i}].pool: executor {e.id!r} names pool {e.pool!r}, which is not in "
                    f"scheduling.pools ({', '.join(sorted(pools))})"
                )
        return self

    def executor(self, executor_id: str) -> Executor:
        for e in self.executors:
            if e.id == executor_id:
                return e
        raise KeyError(executor_id)


def _location(loc: tuple[Any, ...], model: type[BaseModel]) -> str:
    """``('scheduling', 'retryPolicy', 'enabled')`` -> ``scheduling.retryPolicy.enabled``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def parse_config(data: Any) -> ArmadaConfig:
    """Validate loaded YAML into an :class:`ArmadaConfig`; errors name the key."""
    return validate_model(ArmadaConfig, data)


M = TypeVar("M", bound=BaseModel)


def validate_model(model: type[M], data: Any) -> M:
    """Validate loaded YAML into ``model``; every error names its key."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValidationFailed.one(
            "", "the configuration file must hold a mapping at the top level"
        )
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        errors = []
        for err in exc.errors():
            where = _location(err["loc"], model)
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown key"
            elif err["type"] == "value_error" and (key := _KEY_PREFIX.match(message)):
                # A validator that checks several keys names the one at fault first ("pools: ...").
                where = f"{where}.{key[1]}" if where else key[1]
                message = message[key.end() :]
            errors.append(FieldError(where, message))
        raise ValidationFailed(errors) from None
