"""The names, labels and units of the retry-cost counters (no database here, so that
``armada.metrics`` can read them at start-up). ``services.retry_cost`` counts them."""

from __future__ import annotations

FAILED_RUN, RETRIED_ATTEMPT = "failed_run", "retried_attempt"
KINDS = (FAILED_RUN, RETRIED_ATTEMPT)
CORE_COUNTER = "armada_scheduler_retry_cost_core_seconds_total"
MEMORY_COUNTER = "armada_scheduler_retry_cost_memory_byte_seconds_total"
GPU_COUNTER = "armada_scheduler_retry_cost_gpu_seconds_total"
RUNS_COUNTER = "armada_scheduler_retry_cost_runs_total"
LABELS = ("queue", "policy", "category", "decision", "kind")
# counter -> (help, factor from the stored whole number to the served value)
COUNTERS: dict[str, tuple[str, float]] = {
    CORE_COUNTER: (
        "CPU cores requested by failed runs and retried attempts times the seconds they held "
        "them (core-seconds; stored as millicore-seconds)",
        1e-3,
    ),
    MEMORY_COUNTER: (
        "Memory requested by failed runs and retried attempts times the seconds they held it "
        "(byte-seconds; stored as KiB-seconds)",
        1024.0,
    ),
    GPU_COUNTER: (
        "GPUs requested by failed runs and retried attempts times the seconds they held them "
        "(GPU-seconds; stored as milli-GPU-seconds)",
        1e-3,
    ),
    RUNS_COUNTER: ("Failed runs and retried attempts counted in the retry cost", 1.0),
}
