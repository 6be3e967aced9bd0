import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_PHASE_UNSPECIFIED: _ClassVar[RunPhase]
    PENDING: _ClassVar[RunPhase]
    RUNNING: _ClassVar[RunPhase]
    SUCCEEDED: _ClassVar[RunPhase]
    FAILED: _ClassVar[RunPhase]
    CANCELLED: _ClassVar[RunPhase]
    PREEMPTED: _ClassVar[RunPhase]
    LEASE_RETURNED: _ClassVar[RunPhase]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    APPLIED: _ClassVar[Outcome]
    DUPLICATE: _ClassVar[Outcome]
    REFUSED: _ClassVar[Outcome]
RUN_PHASE_UNSPECIFIED: RunPhase
PENDING: RunPhase
RUNNING: RunPhase
SUCCEEDED: RunPhase
FAILED: RunPhase
CANCELLED: RunPhase
PREEMPTED: RunPhase
LEASE_RETURNED: RunPhase
OUTCOME_UNSPECIFIED: Outcome
APPLIED: Outcome
DUPLICATE: Outcome
REFUSED: Outcome

class OpenSessionRequest(_message.Message):
    __slots__ = ("executor_id", "pool", "backend", "tracked_node_labels", "instance")
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    TRACKED_NODE_LABELS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    executor_id: str
    pool: str
    backend: str
    tracked_node_labels: _containers.RepeatedScalarFieldContainer[str]
    instance: str
    def __init__(self, executor_id: _Optional[str] = ..., pool: _Optional[str] = ..., backend: _Optional[str] = ..., tracked_node_labels: _Optional[_Iterable[str]] = ..., instance: _Optional[str] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ("session", "executor_timeout_seconds")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EXECUTOR_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    session: str
    executor_timeout_seconds: float
    def __init__(self, session: _Optional[str] = ..., executor_timeout_seconds: _Optional[float] = ...) -> None: ...

class Taint(_message.Message):
    __slots__ = ("key", "value", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ...) -> None: ...

class NodeInfo(_message.Message):
    __slots__ = ("name", "labels", "taints", "allocatable", "unschedulable", "non_armada_allocated")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatableEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class NonArmadaAllocatedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    UNSCHEDULABLE_FIELD_NUMBER: _ClassVar[int]
    NON_ARMADA_ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.ScalarMap[str, str]
    taints: _containers.RepeatedCompositeFieldContainer[Taint]
    allocatable: _containers.ScalarMap[str, str]
    unschedulable: bool
    non_armada_allocated: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., taints: _Optional[_Iterable[_Union[Taint, _Mapping]]] = ..., allocatable: _Optional[_Mapping[str, str]] = ..., unschedulable: _Optional[bool] = ..., non_armada_allocated: _Optional[_Mapping[str, str]] = ...) -> None: ...

class LeaseRequest(_message.Message):
    __slots__ = ("executor_id", "session", "pool", "nodes", "run_ids")
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    executor_id: str
    session: str
    pool: str
    nodes: _containers.RepeatedCompositeFieldContainer[NodeInfo]
    run_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, executor_id: _Optional[str] = ..., session: _Optional[str] = ..., pool: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[NodeInfo, _Mapping]]] = ..., run_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class JobRunLease(_message.Message):
    __slots__ = ("run_id", "job_id", "queue", "job_set", "owner", "node", "pod_name", "namespace", "annotations", "pod_spec_json", "mutations_json", "priority", "priority_class", "leased_at", "services_json", "ingress_json")
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    JOB_SET_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    POD_NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    POD_SPEC_JSON_FIELD_NUMBER: _ClassVar[int]
    MUTATIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_FIELD_NUMBER: _ClassVar[int]
    LEASED_AT_FIELD_NUMBER: _ClassVar[int]
    SERVICES_JSON_FIELD_NUMBER: _ClassVar[int]
    INGRESS_JSON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    job_id: str
    queue: str
    job_set: str
    owner: str
    node: str
    pod_name: str
    namespace: str
    annotations: _containers.ScalarMap[str, str]
    pod_spec_json: str
    mutations_json: str
    priority: int
    priority_class: str
    leased_at: _timestamp_pb2.Timestamp
    services_json: str
    ingress_json: str
    def __init__(self, run_id: _Optional[str] = ..., job_id: _Optional[str] = ..., queue: _Optional[str] = ..., job_set: _Optional[str] = ..., owner: _Optional[str] = ..., node: _Optional[str] = ..., pod_name: _Optional[str] = ..., namespace: _Optional[str] = ..., annotations: _Optional[_Mapping[str, str]] = ..., pod_spec_json: _Optional[str] = ..., mutations_json: _Optional[str] = ..., priority: _Optional[int] = ..., priority_class: _Optional[str] = ..., leased_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., services_json: _Optional[str] = ..., ingress_json: _Optional[str] = ...) -> None: ...

class JobRunLeases(_message.Message):
    __slots__ = ("leases",)
    LEASES_FIELD_NUMBER: _ClassVar[int]
    leases: _containers.RepeatedCompositeFieldContainer[JobRunLease]
    def __init__(self, leases: _Optional[_Iterable[_Union[JobRunLease, _Mapping]]] = ...) -> None: ...

class RunIds(_message.Message):
    __slots__ = ("run_ids",)
    RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    run_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, run_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class EndMarker(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LeaseStreamMessage(_message.Message):
    __slots__ = ("leases", "cancel_runs", "preempt_runs", "stop_runs", "end")
    LEASES_FIELD_NUMBER: _ClassVar[int]
    CANCEL_RUNS_FIELD_NUMBER: _ClassVar[int]
    PREEMPT_RUNS_FIELD_NUMBER: _ClassVar[int]
    STOP_RUNS_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    leases: JobRunLeases
    cancel_runs: RunIds
    preempt_runs: RunIds
    stop_runs: RunIds
    end: EndMarker
    def __init__(self, leases: _Optional[_Union[JobRunLeases, _Mapping]] = ..., cancel_runs: _Optional[_Union[RunIds, _Mapping]] = ..., preempt_runs: _Optional[_Union[RunIds, _Mapping]] = ..., stop_runs: _Optional[_Union[RunIds, _Mapping]] = ..., end: _Optional[_Union[EndMarker, _Mapping]] = ...) -> None: ...

class RunEvent(_message.Message):
    __slots__ = ("run_id", "phase", "at", "exit_code", "exit_codes", "reason", "message", "failure_category", "failure_subcategory", "hint", "log", "pod_kept_until", "ingress_addresses", "kubernetes_id", "containers", "conditions")
    class ExitCodesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class IngressAddressesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: str
        def __init__(self, key: _Optional[int] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    FAILURE_SUBCATEGORY_FIELD_NUMBER: _ClassVar[int]
    HINT_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    POD_KEPT_UNTIL_FIELD_NUMBER: _ClassVar[int]
    INGRESS_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    phase: RunPhase
    at: _timestamp_pb2.Timestamp
    exit_code: int
    exit_codes: _containers.ScalarMap[str, int]
    reason: str
    message: str
    failure_category: str
    failure_subcategory: str
    hint: str
    log: str
    pod_kept_until: _timestamp_pb2.Timestamp
    ingress_addresses: _containers.ScalarMap[int, str]
    kubernetes_id: str
    containers: _containers.RepeatedCompositeFieldContainer[ContainerEnd]
    conditions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, run_id: _Optional[str] = ..., phase: _Optional[_Union[RunPhase, str]] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., exit_code: _Optional[int] = ..., exit_codes: _Optional[_Mapping[str, int]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., failure_category: _Optional[str] = ..., failure_subcategory: _Optional[str] = ..., hint: _Optional[str] = ..., log: _Optional[str] = ..., pod_kept_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ingress_addresses: _Optional[_Mapping[int, str]] = ..., kubernetes_id: _Optional[str] = ..., containers: _Optional[_Iterable[_Union[ContainerEnd, _Mapping]]] = ..., conditions: _Optional[_Iterable[str]] = ...) -> None: ...

class ContainerEnd(_message.Message):
    __slots__ = ("name", "exit_code", "reason", "message")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    exit_code: int
    reason: str
    message: str
    def __init__(self, name: _Optional[str] = ..., exit_code: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class RunUtilisation(_message.Message):
    __slots__ = ("run_id", "at", "kubernetes_id", "max_resources_for_period", "avg_resources_for_period", "total_cumulative_usage")
    class MaxResourcesForPeriodEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AvgResourcesForPeriodEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class TotalCumulativeUsageEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    KUBERNETES_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_RESOURCES_FOR_PERIOD_FIELD_NUMBER: _ClassVar[int]
    AVG_RESOURCES_FOR_PERIOD_FIELD_NUMBER: _ClassVar[int]
    TOTAL_CUMULATIVE_USAGE_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    at: _timestamp_pb2.Timestamp
    kubernetes_id: str
    max_resources_for_period: _containers.ScalarMap[str, str]
    avg_resources_for_period: _containers.ScalarMap[str, str]
    total_cumulative_usage: _containers.ScalarMap[str, str]
    def __init__(self, run_id: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., kubernetes_id: _Optional[str] = ..., max_resources_for_period: _Optional[_Mapping[str, str]] = ..., avg_resources_for_period: _Optional[_Mapping[str, str]] = ..., total_cumulative_usage: _Optional[_Mapping[str, str]] = ...) -> None: ...

class LogChunk(_message.Message):
    __slots__ = ("run_id", "container", "offset", "data")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    container: str
    offset: int
    data: bytes
    def __init__(self, run_id: _Optional[str] = ..., container: _Optional[str] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class ReportRequest(_message.Message):
    __slots__ = ("executor_id", "session", "events", "kept_pods_deleted", "kept_pods_expired", "utilisation", "utilisation_period_seconds", "log_chunks")
    EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    KEPT_PODS_DELETED_FIELD_NUMBER: _ClassVar[int]
    KEPT_PODS_EXPIRED_FIELD_NUMBER: _ClassVar[int]
    UTILISATION_FIELD_NUMBER: _ClassVar[int]
    UTILISATION_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LOG_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    executor_id: str
    session: str
    events: _containers.RepeatedCompositeFieldContainer[RunEvent]
    kept_pods_deleted: _containers.RepeatedScalarFieldContainer[str]
    kept_pods_expired: int
    utilisation: _containers.RepeatedCompositeFieldContainer[RunUtilisation]
    utilisation_period_seconds: float
    log_chunks: _containers.RepeatedCompositeFieldContainer[LogChunk]
    def __init__(self, executor_id: _Optional[str] = ..., session: _Optional[str] = ..., events: _Optional[_Iterable[_Union[RunEvent, _Mapping]]] = ..., kept_pods_deleted: _Optional[_Iterable[str]] = ..., kept_pods_expired: _Optional[int] = ..., utilisation: _Optional[_Iterable[_Union[RunUtilisation, _Mapping]]] = ..., utilisation_period_seconds: _Optional[float] = ..., log_chunks: _Optional[_Iterable[_Union[LogChunk, _Mapping]]] = ...) -> None: ...

class EventResult(_message.Message):
    __slots__ = ("run_id", "outcome", "reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    outcome: Outcome
    reason: str
    def __init__(self, run_id: _Optional[str] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class ReportResponse(_message.Message):
    __slots__ = ("results", "utilisation_results", "log_chunk_results")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    UTILISATION_RESULTS_FIELD_NUMBER: _ClassVar[int]
    LOG_CHUNK_RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[EventResult]
    utilisation_results: _containers.RepeatedCompositeFieldContainer[EventResult]
    log_chunk_results: _containers.RepeatedCompositeFieldContainer[EventResult]
    def __init__(self, results: _Optional[_Iterable[_Union[EventResult, _Mapping]]] = ..., utilisation_results: _Optional[_Iterable[_Union[EventResult, _Mapping]]] = ..., log_chunk_results: _Optional[_Iterable[_Union[EventResult, _Mapping]]] = ...) -> None: ...
