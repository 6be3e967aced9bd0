"""Which queues a backtest replayed, in words (the REST answer's ``replayed``; see
``services.backtest``), for armadactl and Lookout alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def replayed_text(replayed: Mapping[str, Any]) -> str:
    """Which queues were replayed, and why, in a sentence."""
    names = replayed.get("queues")
    listed = ", ".join(names) if names else "none"
    basis = replayed.get("basis")
    if basis == "named":
        text = f"Queues replayed (as asked): {listed}."
    elif basis == "policy":
        text = f"Queues replayed (those that use the policy): {listed}."
    elif names is None:
        text = "Queues replayed: every queue (no queue uses the policy yet)."
    else:
        text = f"Queues replayed (no queue uses the policy yet; those you may view): {listed}."
    hidden = int(replayed.get("notVisible") or 0)
    if hidden:
        text += f" {hidden} more use it but you may not view them."
    return text
