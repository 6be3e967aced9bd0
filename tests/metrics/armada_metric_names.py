"""Every metric Armada's scheduler, executor, server and ingesters define, as data: name, type,
label names (in Armada's order), histogram buckets, help text and where Armada defines it.

Types are Armada's: ``counter`` names are written as given (Armada's Go client adds no
``_total``). Buckets are the upper bounds Armada configures (``None`` for non-histograms).
"""

from __future__ import annotations

from typing import NamedTuple


class ArmadaMetric(NamedTuple):
    name: str
    type: str  # counter | gauge | histogram
    labels: tuple[str, ...]
    buckets: tuple[float, ...] | None
    help: str
    source: str


def exponential(start: float, factor: float, count: int) -> tuple[float, ...]:
    out, value = [], start
    for _ in range(count):
        out.append(value)
        value *= factor
    return tuple(out)


CYCLE = exponential(10.0, 1.1, 110)
DURATION = (60.0, 600.0, 1800.0, 3600.0, 10800.0, 43200.0, 86400.0, 172800.0, 604800.0)
PQ = ("pool", "queue")
PQT = ("pool", "queue", "priority_class", "type")
NODE = (
    "pool",
    "node",
    "cluster",
    "nodeType",
    "resource",
    "reservation",
    "schedulable",
    "overAllocated",
    "physical_pool",
    "capacity_class",
    "scalable_unit",
)
QRES = ("pool", "priorityClass", "queueName", "queue", "priceBand", "resourceType")
QDUR = ("pool", "priorityClass", "queueName", "queue", "accounting_role")
QRUN = ("pool", "priorityClass", "queueName", "queue")
CAP = (
    "cluster",
    "pool",
    "resourceType",
    "nodeType",
    "reservation",
    "physical_pool",
    "capacity_class",
    "scalable_unit",
)
SQ = ("queue", "pool", "state", "priorState")
SN = ("node", "pool", "cluster", "state", "priorState")

_CYCLE_SRC = "internal/scheduler/metrics/cycle_metrics.go"
_STATE_SRC = "internal/scheduler/metrics/state_metrics.go"
_COMMON_SRC = "internal/common/metrics/scheduler_metrics.go"
_EXEC_SRC = "internal/executor/metrics/metrics.go"
_POD_SRC = "internal/executor/metrics/pod_metrics/cluster_context.go"
_INGEST_SRC = "internal/common/ingest/metrics/metrics.go"
_LI = "armada_lookout_ingester_v2_"
_EI = "armada_event_ingester_"
_S = "armada_scheduler_"


def _m(name, type_, labels, help_, source, buckets=None) -> ArmadaMetric:
    return ArmadaMetric(name, type_, tuple(labels), buckets, help_, source)


ARMADA_METRICS: tuple[ArmadaMetric, ...] = (
    # --- the scheduler's per-cycle gauges --------------------------------------------------
    _m(_S + "considered_jobs", "gauge", PQ, "Number of jobs considered", _CYCLE_SRC),
    _m(_S + "fair_share", "gauge", PQ, "Fair share of each queue", _CYCLE_SRC),
    _m(_S + "adjusted_fair_share", "gauge", PQ, "Adjusted Fair share of each queue", _CYCLE_SRC),
    _m(
        _S + "uncapped_adjusted_fair_share",
        "gauge",
        PQ,
        "Adjusted Fair share of each queue, not capped by demand",
        _CYCLE_SRC,
    ),
    _m(_S + "actual_share", "gauge", PQ, "Actual Fair share of each queue", _CYCLE_SRC),
    _m(_S + "demand", "gauge", PQ, "Demand of each queue", _CYCLE_SRC),
    _m(_S + "constrained_demand", "gauge", PQ, "Constrained demand of each queue", _CYCLE_SRC),
    _m(_S + "short_job_penalty", "gauge", PQ, "Short job penalty for each queue", _CYCLE_SRC),
    _m(_S + "queue_weight", "gauge", PQ, "Weight of the queue after multipliers", _CYCLE_SRC),
    _m(_S + "raw_queue_weight", "gauge", PQ, "Weight of the queue before multipliers", _CYCLE_SRC),
    _m(_S + "fairness_error", "gauge", ("pool",), "Cumulative fair share deficit", _CYCLE_SRC),
    _m(_S + "gangs_considered", "gauge", PQ, "Gangs considered in this cycle", _CYCLE_SRC),
    _m(_S + "gangs_scheduled", "gauge", PQ, "Gangs scheduled in this cycle", _CYCLE_SRC),
    _m(_S + "first_gang_queue_position", "gauge", PQ, "First gang position", _CYCLE_SRC),
    _m(_S + "last_gang_queue_position", "gauge", PQ, "Last gang position", _CYCLE_SRC),
    _m(_S + "per_queue_schedule_cycle_times", "gauge", PQ, "Per queue cycle time", _CYCLE_SRC),
    _m(_S + "loop_number", "gauge", ("pool",), "Scheduling loops in this cycle", _CYCLE_SRC),
    _m(_S + "evicted_jobs", "gauge", PQ, "Number of jobs evicted in this cycle", _CYCLE_SRC),
    _m(
        _S + "evicted_resources",
        "gauge",
        ("pool", "queue", "resource"),
        "Resources evicted in this cycle",
        _CYCLE_SRC,
    ),
    _m(
        _S + "billable_resources",
        "gauge",
        ("pool", "queue", "resource"),
        "Resources billable for in this cycle",
        _CYCLE_SRC,
    ),
    _m(_S + "spot_price", "gauge", ("pool",), "spot price for given pool", _CYCLE_SRC),
    _m(_S + "spot_price_override", "gauge", PQ, "spot price override", _CYCLE_SRC),
    _m(_S + "indicative_share", "gauge", ("pool", "priority"), "indicative share", _CYCLE_SRC),
    _m(
        _S + "node_preemptibility",
        "gauge",
        ("pool", "node", "cluster", "nodeType", "isPreemptible", "reason"),
        "is it possible to clear this node by preempting any jobs on it?",
        _CYCLE_SRC,
    ),
    _m(
        _S + "protected_fraction_of_fair_share",
        "gauge",
        ("pool",),
        "config value protectedFractionOfFairShare",
        _CYCLE_SRC,
    ),
    _m(_S + "node_allocatable_resource", "gauge", NODE, "Allocatable on this node", _CYCLE_SRC),
    _m(_S + "node_allocated_resource", "gauge", NODE, "Allocated on this node", _CYCLE_SRC),
    _m(_S + "indicative_price", "gauge", ("pool", "job_shape"), "indicative price", _CYCLE_SRC),
    _m(
        _S + "indicative_price_is_schedulable",
        "gauge",
        ("pool", "job_shape", "unschedulable_reason"),
        "whether defined job is at all schedulable",
        _CYCLE_SRC,
    ),
    _m(_S + "idealised_scheduled_value", "gauge", PQ, "Idealised value", _CYCLE_SRC),
    _m(
        _S + "idealised_allocated_resource",
        "gauge",
        ("pool", "queue", "resource"),
        "Idealised value scheduled per queue",
        _CYCLE_SRC,
    ),
    _m(_S + "realised_scheduled_value", "gauge", PQ, "Realised value", _CYCLE_SRC),
    _m(_S + "node_pool_size", "gauge", ("pool",), "Number of nodes in each pool", _CYCLE_SRC),
    # --- the scheduler's cycle counters and histograms -------------------------------------
    _m(_S + "scheduled_jobs", "counter", PQT, "Number of events scheduled", _CYCLE_SRC),
    _m(_S + "preempted_jobs", "counter", PQT, "Number of jobs preempted", _CYCLE_SRC),
    _m(_S + "failed_jobs", "counter", PQT, "Number of jobs failed", _CYCLE_SRC),
    _m(
        _S + "schedule_cycle_times",
        "histogram",
        (),
        "Cycle time when in a scheduling round.",
        _CYCLE_SRC,
        CYCLE,
    ),
    _m(
        _S + "schedule_outcome",
        "counter",
        ("outcome",),
        "Count of scheduling cycles completed by outcome",
        _CYCLE_SRC,
    ),
    _m(
        _S + "reconciliation_cycle_times",
        "histogram",
        (),
        "Cycle time when in a scheduling round.",
        _CYCLE_SRC,
        CYCLE,
    ),
    _m(
        _S + "scheduling_cycle_times",
        "histogram",
        (),
        "Time taken for the scheduling algo to schedule on all pools, in milliseconds.",
        _CYCLE_SRC,
        CYCLE,
    ),
    _m(
        _S + "pool_scheduling_outcome",
        "counter",
        ("pool", "outcome", "termination_reason"),
        "Number of scheduling attempts per pool by outcome",
        _CYCLE_SRC,
    ),
    _m(
        _S + "pool_scheduling_cycle_times",
        "histogram",
        ("pool",),
        "Time taken to schedule on a given pool.",
        _CYCLE_SRC,
        CYCLE,
    ),
    _m(
        _S + "submit_check_times",
        "histogram",
        ("queue",),
        "Time spent in submit check per queue per scheduling cycle, in milliseconds.",
        _CYCLE_SRC,
        exponential(0.5, 1.5, 25),
    ),
    # --- the scheduler's job state metrics ---------------------------------------------------
    _m(
        _S + "job_run_completed_duration_seconds",
        "histogram",
        ("queue", "pool"),
        "Time",
        _STATE_SRC,
        exponential(2, 2, 20),
    ),
    _m(_S + "job_state_counter_by_queue", "counter", SQ, "Job states at queue level", _STATE_SRC),
    _m(_S + "job_state_counter_by_node", "counter", SN, "Job states at node level", _STATE_SRC),
    _m(_S + "job_state_seconds_by_queue", "counter", SQ, "time in states by queue", _STATE_SRC),
    _m(_S + "job_state_seconds_by_node", "counter", SN, "time in states by node", _STATE_SRC),
    _m(
        _S + "job_state_resource_seconds_by_queue",
        "counter",
        (*SQ, "resource"),
        "Resource-seconds spent in different states at the queue level",
        _STATE_SRC,
    ),
    _m(
        _S + "job_state_resource_seconds_by_node",
        "counter",
        (*SN, "resource"),
        "Resource-seconds spent in different states at the node level",
        _STATE_SRC,
    ),
    _m(
        _S + "job_error_classification_by_queue",
        "counter",
        ("queue", "pool", "category", "subcategory"),
        "Failed jobs by error classification at the queue level",
        _STATE_SRC,
    ),
    _m(
        _S + "job_error_classification_by_node",
        "counter",
        ("node", "pool", "cluster", "category", "subcategory"),
        "Failed jobs by error classification at the node level",
        _STATE_SRC,
    ),
    _m(
        _S + "job_resource_seconds_lost_to_preemption",
        "counter",
        ("queue", "pool", "checkpoint_interval", "resource"),
        "Resource seconds lost to preemption",
        _STATE_SRC,
    ),
    _m(
        _S + "retry_policy_decisions_total",
        "counter",
        ("queue", "pool", "policy", "decision"),
        "Retry policy engine decisions at the queue level",
        _STATE_SRC,
    ),
    _m(
        _S + "retry_policy_gang_skipped_total",
        "counter",
        ("policy",),
        "Retry policy gang skips by policy",
        "internal/scheduler/scheduler.go",
    ),
    # --- queue and cluster metrics (the scheduler's metrics collector) ----------------------
    _m(_S + "pool_info", "gauge", ("pool",), "The pools being scheduled", _COMMON_SRC),
    _m(
        "armada_queue_size",
        "gauge",
        ("queueName", "queue", "state"),
        "Jobs in a queue",
        _COMMON_SRC,
    ),
    _m(
        "armada_queue_distinct_scheduling_keys",
        "gauge",
        ("queueName", "queue"),
        "Number of distinct scheduling keys requested by a queue",
        _COMMON_SRC,
    ),
    *(
        _m(
            "armada_queue_resource_queued" + suffix,
            "gauge",
            (*QRES, "accounting_role"),
            f"Resource required by queued jobs ({suffix or 'sum'})",
            _COMMON_SRC,
        )
        for suffix in ("", "_min", "_max", "_median", "_count")
    ),
    _m("armada_job_queued_seconds", "histogram", QDUR, "Queued time", _COMMON_SRC, DURATION),
    *(
        _m("armada_job_queued_seconds" + s, "gauge", QDUR, "Queue time " + s, _COMMON_SRC)
        for s in ("_min", "_max", "_median")
    ),
    _m("armada_job_run_time_seconds", "histogram", QRUN, "Run time", _COMMON_SRC, DURATION),
    *(
        _m("armada_job_run_time_seconds" + s, "gauge", QRUN, "Run time " + s, _COMMON_SRC)
        for s in ("_min", "_max", "_median")
    ),
    _m(
        "armada_queue_resource_allocated",
        "gauge",
        (
            "cluster",
            "pool",
            "priorityClass",
            "queueName",
            "queue",
            "priceBand",
            "resourceType",
            "nodeType",
            "reservation",
            "physical_pool",
            "scalable_unit",
        ),
        "Resource allocated to running jobs of a queue",
        _COMMON_SRC,
    ),
    *(
        _m("armada_queue_resource_allocated" + s, "gauge", QRES, "Allocated " + s, _COMMON_SRC)
        for s in ("_min", "_max", "_median")
    ),
    _m(
        "armada_queue_resource_used",
        "gauge",
        (
            "cluster",
            "pool",
            "queueName",
            "queue",
            "resourceType",
            "nodeType",
            "reservation",
            "physical_pool",
            "scalable_unit",
        ),
        "Resource actually being used by running jobs of a queue",
        _COMMON_SRC,
    ),
    _m(
        "armada_queue_leased_pod_count",
        "gauge",
        ("cluster", "pool", "queueName", "queue", "phase", "nodeType", "reservation"),
        "Number of leased pods",
        _COMMON_SRC,
    ),
    _m(
        "armada_node_job_phase_count",
        "gauge",
        ("node", "cluster", "phase"),
        "Number of jobs in a given phase on a node",
        _COMMON_SRC,
    ),
    _m("armada_cluster_capacity", "gauge", CAP, "Cluster capacity", _COMMON_SRC),
    _m("armada_cluster_farm_capacity", "gauge", CAP, "Capacity less non-Armada", _COMMON_SRC),
    _m("armada_cluster_available_capacity", "gauge", CAP, "Capacity for Armada", _COMMON_SRC),
    _m(
        "armada_cluster_cordoned_status",
        "gauge",
        ("cluster", "reason", "setByUser"),
        "Cluster cordoned status",
        _COMMON_SRC,
    ),
    _m("armada_queue_priority", "gauge", ("queueName", "queue"), "Queue priority", _COMMON_SRC),
    *(
        _m(
            f"armada_queue_price_queued_{s}",
            "gauge",
            ("pool", "priorityClass", "queue", "accounting_role"),
            f"{s} price of queued jobs",
            _COMMON_SRC,
        )
        for s in ("min", "max", "median")
    ),
    *(
        _m(
            f"armada_queue_price_running_{s}",
            "gauge",
            ("pool", "priorityClass", "queue"),
            f"{s} price of running jobs",
            _COMMON_SRC,
        )
        for s in ("min", "max", "median")
    ),
    _m(
        "armada_queue_price_band_phase_bid",
        "gauge",
        ("pool", "queueName", "queue", "phase", "priceBand"),
        "Bid price for a queues price band",
        _COMMON_SRC,
    ),
    _m(_S + "interned_strings", "counter", (), "Cumulative interned strings", _COMMON_SRC),
    _m(
        _S + "bid_price_cache_last_refresh_timestamp_seconds",
        "gauge",
        (),
        "Unix timestamp of the most recent bid price snapshot",
        _COMMON_SRC,
    ),
    _m("armada_queue_labels", "gauge", ("queueName", "queue"), "Queue labels", _COMMON_SRC),
    # --- the executor ------------------------------------------------------------------------
    _m(
        "armada_executor_job_failure_category_total",
        "counter",
        ("failure_category", "failure_subcategory"),
        "Job run failures by failure category and subcategory",
        _EXEC_SRC,
    ),
    _m(
        "armada_executor_job_failure_rule_evaluation_duration_seconds",
        "histogram",
        ("failure_category", "failure_subcategory"),
        "Duration of evaluating a single classification rule against a pod",
        _EXEC_SRC,
        (0.00001, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25),
    ),
    _m(
        "armada_executor_pod_force_deleted_total",
        "counter",
        ("pool",),
        "Force delete escalations issued by the executor, by pool",
        _EXEC_SRC,
    ),
    _m(
        "armada_executor_pod_termination_overdue_seconds",
        "histogram",
        ("pool",),
        "How far past its deletion deadline a pod survived",
        _EXEC_SRC,
        (0, 10, 15, 20, 30, 45, 60, 75, 90, 120, 300),
    ),
    _m(
        "armada_executor_pod_terminated_within_grace_period_total",
        "counter",
        ("pool",),
        "Pods that disappeared before their deletion deadline, by pool",
        _EXEC_SRC,
    ),
    _m(
        "armada_executor_job_pod",
        "gauge",
        ("queue", "phase", "nodeType"),
        "Pods in different phases by queue",
        _POD_SRC,
    ),
    _m(
        "armada_executor_job_pod_resource_request",
        "gauge",
        ("queue", "phase", "resourceType", "nodeType"),
        "Pod resource requests in different phases by queue",
        _POD_SRC,
    ),
    _m(
        "armada_executor_job_pod_resource_usage",
        "gauge",
        ("queue", "phase", "resourceType", "nodeType"),
        "Pod resource usage in different phases by queue",
        _POD_SRC,
    ),
    _m(
        "armada_executor_available_node_count",
        "gauge",
        ("nodeType",),
        "Number of nodes available for Armada jobs",
        _POD_SRC,
    ),
    _m(
        "armada_executor_available_node_resource_allocatable",
        "gauge",
        ("resourceType", "nodeType"),
        "Resource allocatable on nodes available for Armada jobs",
        _POD_SRC,
    ),
    _m(
        "armada_executor_available_node_resource_total",
        "gauge",
        ("resourceType", "nodeType"),
        "Total resource on nodes available for Armada jobs",
        _POD_SRC,
    ),
    _m(
        "armada_executor_job_pod_total",
        "counter",
        ("queue", "phase"),
        "Counter for pods in different phases by queue",
        _POD_SRC,
    ),
    _m(
        "armada_executor_run_phase",
        "gauge",
        ("queue", "phase"),
        "Runs in different phases by queue",
        "internal/executor/metrics/runstate/job_run_state.go",
    ),
    *(
        _m(
            f"armada_executor_{kind}_job_cache_size",
            "gauge",
            (),
            "Number of pods in the pod cache",
            "internal/executor/util/cache.go",
        )
        for kind in ("submitted", "deleted")
    ),
    # --- the server --------------------------------------------------------------------------
    _m(
        "armada_event_api_active_subscriptions",
        "gauge",
        ("user",),
        "Active (long-lived) event API subscriptions, by user",
        "internal/server/event/metrics.go",
    ),
    # --- the ingesters (Pulsar to PostgreSQL and Redis) --------------------------------------
    *(
        _m(prefix + name, type_, labels, help_, _INGEST_SRC)
        for prefix in (_LI, _EI)
        for name, type_, labels, help_ in (
            ("db_errors", "counter", ("operation",), "Database errors by operation"),
            ("pulsar_message_errors", "counter", ("error",), "Pulsar message errors"),
            ("pulsar_connection_errors", "counter", (), "Pulsar connection errors"),
            ("pulsar_messages_processed", "counter", (), "Pulsar messages processed"),
            ("pulsar_message_publish_time", "gauge", (), "Publish time of message"),
            (
                "pulsar_message_processing_delay",
                "gauge",
                ("subscription", "partition"),
                "Delay in ms of pulsar messages",
            ),
            ("events_processed", "counter", (), "Number of events processed"),
            ("events_uncompressed_bytes_total", "counter", (), "Uncompressed event bytes"),
            ("events_estimated_compressed_bytes_total", "counter", (), "Compressed event bytes"),
        )
    ),
    _m(
        _LI + "average_row_change_time",
        "histogram",
        (),
        "Average time take in milliseconds to change one database row",
        "internal/lookoutingester/metrics/metrics.go",
        (0.1, 0.2, 0.5, 1, 2, 3, 5, 7, 10, 15, 25, 50, 100, 1000),
    ),
    _m(
        _LI + "rows_changed",
        "counter",
        ("table", "operation"),
        "Number of rows changed in the database",
        "internal/lookoutingester/metrics/metrics.go",
    ),
    _m(
        _LI + "state_updates",
        "counter",
        ("state",),
        "Number of job state updates, labelled by state",
        "internal/lookoutingester/metrics/metrics.go",
    ),
    _m(
        _EI + "write_duration_ms",
        "histogram",
        ("redis",),
        "Duration of write to redis in milliseconds",
        "internal/eventingester/metrics/metrics.go",
        (1, 10, 100, 1000, 10000, 100000, 1000000),
    ),
)

BY_NAME = {m.name: m for m in ARMADA_METRICS}
assert len(BY_NAME) == len(ARMADA_METRICS), "a name is listed twice"
