"""The backtest of a draft retry policy: its request and the document it answers."""

from __future__ import annotations

from rest_framework import serializers

from armada.services.backtest import MAX_SAMPLE


class BacktestRequestSerializer(serializers.Serializer):
    """Give ``draft`` (a policy file as JSON) or ``policy`` (a stored policy's name, with an
    optional ``version``), not both. The draft is checked as a save checks it; its field
    errors are the ones a save gives (``retryLimit``, ``rules[0].action``, ...)."""

    draft = serializers.JSONField(
        required=False, help_text="the draft policy file (apiVersion, kind, name, rules...)"
    )
    policy = serializers.CharField(required=False, help_text="a stored policy's name")
    version = serializers.IntegerField(
        required=False, min_value=1, help_text="a saved version of `policy` (default: its latest)"
    )
    since = serializers.CharField(
        help_text="how far back: a duration (7d, 36h) or a date and time (ISO 8601 with a "
        "time zone); at most 90 days before `until`"
    )
    until = serializers.DateTimeField(
        required=False, help_text="the end of the range (exclusive; default: now)"
    )
    queues = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="only these queues (default: every queue you may view)",
    )
    jobSets = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="only these job sets"
    )
    sampleSize = serializers.IntegerField(
        required=False, min_value=0, max_value=MAX_SAMPLE, default=20
    )


class CostSerializer(serializers.Serializer):
    coreHours = serializers.FloatField()
    memoryGibHours = serializers.FloatField()
    gpuHours = serializers.FloatField()


class BacktestSummarySerializer(serializers.Serializer):
    examined = serializers.IntegerField(help_text="recorded failures replayed")
    unchanged = serializers.IntegerField(help_text="the draft retries or fails as recorded")
    retryToFail = serializers.IntegerField()
    failToRetry = serializers.IntegerField()
    extraAttempts = serializers.IntegerField(help_text="runs the draft would add")
    savedAttempts = serializers.IntegerField(help_text="later runs the draft would not have had")
    extraCost = CostSerializer()
    savedCost = CostSerializer()
    estimatedSucceeded = serializers.FloatField(
        help_text="an estimate, from the retry yield, of the added attempts that would succeed"
    )


class BacktestQueueSerializer(BacktestSummarySerializer):
    queue = serializers.CharField()


class BacktestPolicySerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)
    source = serializers.ChoiceField(choices=["draft", "stored"])
    globalMaxRetries = serializers.IntegerField(
        allow_null=True, help_text="the scheduler's cap the draft was replayed under"
    )


class BacktestRangeSerializer(serializers.Serializer):
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()


class BacktestFlipSerializer(serializers.Serializer):
    # "from" is a Python keyword: declared below.
    to = serializers.CharField(help_text="retry or fail: the draft's decision")
    category = serializers.CharField()
    subcategory = serializers.CharField()
    recordedRule = serializers.IntegerField(allow_null=True, help_text="numbered from 1")
    draftRule = serializers.IntegerField(allow_null=True, help_text="numbered from 1")
    count = serializers.IntegerField()


BacktestFlipSerializer._declared_fields["from"] = serializers.CharField(
    help_text="retry or fail: the decision recorded"
)


class BacktestSampleSerializer(serializers.Serializer):
    jobId = serializers.CharField()
    runId = serializers.CharField()
    queue = serializers.CharField()
    jobSet = serializers.CharField()
    category = serializers.CharField()
    subcategory = serializers.CharField()
    exitCode = serializers.IntegerField(allow_null=True)
    condition = serializers.CharField(help_text="the run's reason (OOMKilled, Error, ...)")
    recorded = serializers.CharField(help_text="the decision label recorded at the time")
    draft = serializers.CharField(help_text="the draft's decision label")
    reason = serializers.CharField(help_text="the draft's reason")
    retryDelaySeconds = serializers.FloatField(allow_null=True)
    url = serializers.CharField(help_text="the job's Lookout page")


class BacktestYieldSerializer(serializers.Serializer):
    category = serializers.CharField()
    rule = serializers.IntegerField(allow_null=True)
    retriedJobs = serializers.IntegerField()
    succeededJobs = serializers.IntegerField()
    succeededAfter = serializers.DictField(child=serializers.IntegerField())


class BacktestReplayedSerializer(serializers.Serializer):
    basis = serializers.ChoiceField(
        choices=["named", "policy", "all"],
        help_text="named: the queues asked for; policy: the queues that use the policy (it is "
        "the first they name); all: no queue uses it yet, so every queue you may view",
    )
    queues = serializers.ListField(
        child=serializers.CharField(), allow_null=True, help_text="null: every queue"
    )
    notVisible = serializers.IntegerField(
        help_text="queues that use the policy but that you may not view (not replayed)"
    )


class BacktestSerializer(serializers.Serializer):
    policy = BacktestPolicySerializer()
    range = BacktestRangeSerializer()
    replayed = BacktestReplayedSerializer()
    overall = BacktestSummarySerializer()
    queues = BacktestQueueSerializer(many=True)
    flips = BacktestFlipSerializer(many=True)
    sample = BacktestSampleSerializer(many=True)
    # "yield" is a Python keyword: declared below.
    estimateNote = serializers.CharField()


BacktestSerializer._declared_fields["yield"] = BacktestYieldSerializer(many=True)
