"""Executors and their nodes."""

from __future__ import annotations

from rest_framework import serializers


class NodeSerializer(serializers.Serializer):
    name = serializers.CharField()
    pool = serializers.CharField()
    labels = serializers.DictField(child=serializers.CharField(), help_text="tracked labels only")
    taints = serializers.ListField(child=serializers.DictField())
    allocatable = serializers.DictField(
        child=serializers.IntegerField(), help_text="milli-cpu, bytes, device counts"
    )
    unschedulable = serializers.BooleanField(help_text="as its executor reports it")
    cordoned = serializers.BooleanField(
        help_text="cordoned at the control plane: no new leases, whatever its executor reports"
    )
    cordonReason = serializers.CharField(allow_blank=True)
    nonArmadaAllocated = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="what pods Armada did not start use on the node (milli-units), left free",
    )
    lastSeen = serializers.DateTimeField()


class ExecutorSerializer(serializers.Serializer):
    id = serializers.CharField()
    pool = serializers.CharField()
    backend = serializers.CharField()
    cordoned = serializers.BooleanField(help_text="a cordoned executor gets no new leases")
    cordonReason = serializers.CharField(help_text="why it was cordoned; empty when it is not")
    alive = serializers.BooleanField(help_text="heartbeat within executorTimeout")
    registeredAt = serializers.DateTimeField()
    lastHeartbeat = serializers.DateTimeField()
    trackedNodeLabels = serializers.ListField(child=serializers.CharField())
    instance = serializers.CharField(
        help_text="the executor process of the newest session (host/pid); empty before one"
    )
    sessionOpenedAt = serializers.DateTimeField(allow_null=True)
    nodeCount = serializers.IntegerField()


class ExecutorDetailSerializer(ExecutorSerializer):
    nodes = NodeSerializer(many=True)
