from __future__ import annotations

from django.db import models

from armada.core.states import JobState, RunState

JOB_STATES = [(s.value, s.value.capitalize()) for s in JobState]
RUN_STATES = [(s.value, s.value.replace("_", " ").capitalize()) for s in RunState]


class Job(models.Model):
    """One piece of work: a pod spec in a queue and job set.

    ``requests`` holds the scheduling requests in milli-units (see ``core.quantity``);
    ``mutations`` holds what retries changed so far (memory bump, nodes to avoid).
    Invariant: ``state`` mirrors the state of the job's latest run while that run is active.
    """

    id = models.CharField(primary_key=True, max_length=26)
    # No index of its own: ``job_lookout_queue_idx`` (queue, id) answers every query on the
    # queue, and each index more is written by every lease (migration 0029).
    queue = models.ForeignKey(
        "armada.Queue",
        to_field="name",
        db_column="queue",
        on_delete=models.PROTECT,
        related_name="jobs",
        db_index=False,
    )
    job_set = models.CharField(max_length=1024)
    # The submitter's deduplication key (Armada's clientId): at most one job per key in a
    # queue and job set; "" when none was given (see services.submit).
    client_id = models.CharField(max_length=100, blank=True, default="")
    owner = models.CharField(max_length=150)
    namespace = models.CharField(max_length=63, default="default")
    priority = models.PositiveBigIntegerField(default=0)
    priority_class = models.CharField(max_length=63)
    pod_spec = models.JSONField()
    annotations = models.JSONField(default=dict, blank=True)
    # The job's network objects, in the job file's shape with every key present
    # (``core.job_network``): a Service per ``services`` item and an Ingress per ``ingress``
    # item, made with the pod. Empty lists for most jobs.
    services = models.JSONField(default=list, blank=True)
    ingress = models.JSONField(default=list, blank=True)
    requests = models.JSONField(default=dict)
    gang_id = models.CharField(max_length=255, blank=True)
    gang_cardinality = models.PositiveIntegerField(default=1)
    gang_uniformity_label = models.CharField(max_length=255, blank=True)
    fail_fast = models.BooleanField(default=False)
    state = models.CharField(max_length=16, choices=JOB_STATES, default=JobState.QUEUED)
    submitted_at = models.DateTimeField()
    last_transition_at = models.DateTimeField()
    # Every decided failure (retried or not) counts in failure_count, the spec's "retries
    # used" when the next failure is decided; retry_count counts only the failures that were
    # retried, which is what a person reading "retries" expects (a job failed at its first
    # attempt has failure_count 1 and retry_count 0).
    failure_count = models.PositiveIntegerField(default=0)
    retry_count = models.PositiveIntegerField(default=0)
    lease_return_count = models.PositiveIntegerField(default=0)
    run_count = models.PositiveIntegerField(default=0)
    mutations = models.JSONField(default=dict, blank=True)
    terminal_reason = models.CharField(max_length=255, blank=True)
    terminal_message = models.TextField(blank=True)
    failure_category = models.CharField(max_length=63, blank=True)
    failure_subcategory = models.CharField(max_length=63, blank=True)
    # What the job's latest run says, copied onto the job where that run is leased and
    # changed (``services.latest_run``), so that Lookout filters and groups on it read job
    # columns: the run (the one with the greatest id), its executor (Lookout's "cluster"),
    # node and pool, its exit code, whether it was retryable and its decision's label.
    # Empty / None until the job's first lease.
    latest_run_id = models.CharField(max_length=26, blank=True, default="")
    latest_executor = models.CharField(max_length=63, blank=True, default="")
    latest_node = models.CharField(max_length=253, blank=True, default="")
    latest_pool = models.CharField(max_length=63, blank=True, default="")
    latest_exit_code = models.IntegerField(null=True, blank=True)
    latest_retryable = models.BooleanField(null=True, blank=True)
    latest_decision = models.CharField(max_length=32, blank=True, default="")
    # A retried job whose rule asks for a delay (``backoff``) is not leased before this time;
    # None when it may be leased at once.
    retry_not_before = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # Two submits of the same clientId cannot both insert, however they interleave:
            # the second waits for the first and then fails, and looks the job up instead.
            models.UniqueConstraint(
                fields=["queue", "job_set", "client_id"],
                condition=~models.Q(client_id=""),
                name="job_client_id_uniq",
            ),
        ]
        indexes = [
            models.Index(fields=["queue", "job_set", "id"], name="job_jobset_idx"),
            models.Index(fields=["state", "id"], name="job_state_idx"),
            # Lookout's jobs table (newest first, keyset on id): by queue, by queue and
            # state, by failure category, and by job-set prefix (LIKE 'x%' needs the pattern
            # operator class where the collation is not C; other databases ignore it).
            models.Index(fields=["queue", "id"], name="job_lookout_queue_idx"),
            models.Index(fields=["queue", "state", "id"], name="job_lookout_queue_state_idx"),
            models.Index(fields=["failure_category", "id"], name="job_lookout_category_idx"),
            # Sorting by submission time, and a submission-time range of few jobs (the grid
            # reads its matches through this index; lookout.grid.pages).
            models.Index(fields=["submitted_at", "id"], name="job_lookout_submitted_idx"),
            # The same for a time-in-state range (the time of the last transition).
            models.Index(fields=["last_transition_at", "id"], name="job_lookout_transition_idx"),
            # It includes the id so that a page of a job-set prefix takes its ids from the
            # index alone and reads only its own rows.
            models.Index(
                fields=["job_set"],
                include=["id"],
                name="job_lookout_jobset_id_idx",
                opclasses=["varchar_pattern_ops"],
            ),
            # Lookout's filters and groups on the latest run. Partial: a job that was never
            # leased (or never failed) is in none of them, so a submit writes none of them.
            *(
                models.Index(fields=[name, "id"], name=f"job_{name}_idx", condition=condition)
                for name, condition in (
                    ("latest_node", ~models.Q(latest_node="")),
                    ("latest_executor", ~models.Q(latest_executor="")),
                    ("latest_pool", ~models.Q(latest_pool="")),
                    ("latest_exit_code", models.Q(latest_exit_code__isnull=False)),
                    ("latest_retryable", models.Q(latest_retryable__isnull=False)),
                    ("latest_decision", ~models.Q(latest_decision="")),
                )
            ),
            # Lookout's "retried jobs" (retries at least 1) and jobs run more than once, in
            # id order: few jobs are either, so a submit or a first lease writes neither.
            models.Index(
                fields=["id"], name="job_retried_idx", condition=models.Q(retry_count__gt=0)
            ),
            models.Index(fields=["id"], name="job_rerun_idx", condition=models.Q(run_count__gt=1)),
        ]

    def __str__(self) -> str:
        return self.id


class Run(models.Model):
    """One attempt at a job, on one node of one executor, with its outcome and decision trail."""

    id = models.CharField(primary_key=True, max_length=26)
    # No index of its own: ``run_lookout_latest_idx`` (job, id) answers every query on the
    # job (migration 0029).
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="runs", db_index=False)
    executor = models.CharField(max_length=63)
    node = models.CharField(max_length=253)
    pool = models.CharField(max_length=63)
    state = models.CharField(max_length=16, choices=RUN_STATES, default=RunState.LEASED)
    requests = models.JSONField(default=dict)
    pod_name = models.CharField(max_length=253, blank=True)
    leased_at = models.DateTimeField()
    pending_at = models.DateTimeField(null=True, blank=True)
    running_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    exit_codes = models.JSONField(default=dict, blank=True)
    reason = models.CharField(max_length=255, blank=True)
    message = models.TextField(blank=True)
    failure_category = models.CharField(max_length=63, blank=True)
    failure_subcategory = models.CharField(max_length=63, blank=True)
    hint = models.TextField(blank=True)
    retryable = models.BooleanField(null=True, blank=True)
    decision = models.JSONField(default=dict, blank=True)
    # Set when the scheduler has decided what a failed or expired run means for its job.
    decided_at = models.DateTimeField(null=True, blank=True)
    # Set when the run is to be stopped (preempted or cancelled); the executor stops its pod
    # with the pod's grace period and then reports the run preempted or cancelled.
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    stop_kind = models.CharField(max_length=16, blank=True)  # "preempt" or "cancel"
    stop_reason = models.CharField(max_length=255, blank=True)
    # A failed run whose pod the executor keeps (its category's action is Retain): until
    # when (the pod's end plus the executor's keptPodRetention). Set to the deletion time
    # when the executor deletes the pod sooner (a retry's pod needed the name); null when
    # the pod was never kept.
    pod_kept_until = models.DateTimeField(null=True, blank=True)
    # Set by the executor API when the run is active but its executor's round did not hold
    # it (a lease not taken yet, a pod the executor no longer has); cleared when it is held
    # again. A run missing for longer than executorTimeout is expired
    # (``services.executor_rounds``).
    missing_since = models.DateTimeField(null=True, blank=True)
    # The addresses of the job's ingresses for this run, by container port (JSON keys are
    # text: {"8080": "host:port"}), as the executor reported them once the pod ran; empty
    # until then, and for a job without ingress (``services.run_ingress``).
    ingress_addresses = models.JSONField(default=dict, blank=True)
    # The pod's Kubernetes UID, from the executor's first report that names it.
    kubernetes_id = models.CharField(max_length=64, blank=True)
    # The containers that ended, each as {"name", "exitCode", "reason", "message"}, and
    # Armada's cause of a failure (Error, OOM, Evicted, DeadlineExceeded), as reported.
    containers = models.JSONField(default=list, blank=True)
    cause = models.CharField(max_length=32, blank=True)
    # When the run's latest ``utilisation`` event was measured (``services.run_utilisation``).
    utilisation_at = models.DateTimeField(null=True, blank=True)
    # A run placed away from home (``core.away``): the node type(s) it went to, the priority
    # it runs at there (its preemption urgency) and the tolerations its pod is given for
    # them. Empty, null and empty for a run at home.
    away_node_type = models.CharField(max_length=253, blank=True, default="")
    scheduled_priority = models.IntegerField(null=True, blank=True)
    away_tolerations = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["leased_at", "id"]
        indexes = [
            models.Index(
                fields=["finished_at", "id"],
                name="run_undecided_idx",
                condition=models.Q(decided_at__isnull=True, state__in=["failed", "lease_expired"]),
            ),
            models.Index(fields=["executor", "state"], name="run_executor_state_idx"),
            models.Index(fields=["state", "leased_at"], name="run_state_idx"),
            # A job's latest run is its run with the greatest id (ids sort by creation).
            models.Index(fields=["job", "id"], name="run_lookout_latest_idx"),
        ]

    def __str__(self) -> str:
        return self.id
