"""Retry-policy documents shared by tests, as a person would write them."""

from __future__ import annotations

# Three rules: user errors fail, transient GPU errors and OOMs retry (OOMs with 1.5x memory).
POLICY = """apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: ml
retryLimit: 3
defaultAction: Fail
rules:
- action: Fail
  onCategory: user-error
- action: Retry
  onCategory: gpu
  onSubcategory: transient
- action: Retry
  onCategory: oom
  mutate:
    resources:
      memory:
        factor: 1.5
"""
