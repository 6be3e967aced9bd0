"""The round's index of nodes: free space in the round's node order, first fit per job
shape, and the search for the node needing the fewest evictions.

Nodes are kept in the order of the round (fullest first at its start, ties by id) and named
by their position in it. Each node has a ``version`` that grows whenever its free space
changes; the searches below keep results per node and know from the version when one is
out of date.

First fit (:class:`ShapeScan`, one per job shape and node group): within a round free space
shrinks except where a job is evicted, so a node that cannot take a shape now cannot take
it later unless something is evicted from it. A scan keeps a cursor (every node before it
has been found full for the shape) and a small heap of nodes before the cursor that an
eviction gave room again; the next job of the shape looks at that heap, then resumes at the
cursor. A round so costs about (nodes x shapes + jobs + evictions x shapes), not nodes x
jobs.

Fewest evictions (:class:`FewestSearch`, one per job shape, node group and eviction rule):
the node on which a job needs the fewest evictions, ties by node order. The number a node
needs (its *count*) is kept in a heap of (count, position). Placing a job on a node can only
raise its count (less free space, the same running jobs), so a heap entry made before a
placement is a lower bound, and is recomputed when it comes to the top. Evicting from a
node may lower its count: such nodes are logged (:attr:`NodeIndex.lowered`) and each search
takes a lower-bound entry for them before it answers. A search asked only after the job
found no free room knows that no node needs fewer than one eviction, so it looks at nodes in
order and stops at the first that needs one; only when every node needs more does it look
at them all, once, and after that answers from the heap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from heapq import heapify, heappop, heappush

from armada.core.fairshare import dominant_share
from armada.core.quantity import Resources
from armada.core.snapshot import (
    REASON_NO_MATCH,
    REASON_NO_RESOURCES,
    REASON_TOO_BIG,
    NodeState,
    QueuedJob,
    node_matches,
)

# (resource, amount) pairs of a job's requests, as ``_shape`` gives them.
Wanted = tuple[tuple[str, int], ...]


def fits(wanted: Wanted, free: Mapping[str, int]) -> bool:
    # A plain loop: this runs for every node a scan passes, and is faster than all(...).
    for r, v in wanted:  # noqa: SIM110
        if v > free.get(r, 0):
            return False
    return True


class NodeView:
    """A node as the round sees it: free resources as a plain dict kept current during the
    round, and its place in the round's order."""

    __slots__ = ("node", "free", "allocatable", "position", "version", "start_free")

    def __init__(self, node: NodeState) -> None:
        self.node = node
        self.allocatable: dict[str, int] = node.allocatable.to_dict()
        self.free: dict[str, int] = dict(self.allocatable)
        for r, v in node.allocated.to_dict().items():
            self.free[r] = self.free.get(r, 0) - v
        self.position = 0
        self.version = 0
        # The free space at the start of the round, kept once the node changes, to write
        # the node's new ``allocated`` at the end.
        self.start_free: dict[str, int] | None = None


class NodeGroup:
    """The nodes a gang with a uniformity label may use together: those with one value of
    the label (``positions`` in the round's order)."""

    __slots__ = ("key", "positions", "index_of")

    def __init__(self, key: tuple[str, str], positions: list[int]) -> None:
        self.key = key
        self.positions = positions
        self.index_of = {p: k for k, p in enumerate(positions)}


class ShapeScan:
    """How far the search for one job shape (in one node group) has got in this round; see
    the module docstring. ``ok`` caches, per node, whether the shape may ever use it
    (selector, taints, avoided nodes, allocatable): 0 not known yet, 1 yes, 2 no."""

    __slots__ = (
        "job",
        "wanted",
        "group",
        "cursor",
        "matched",
        "big_enough",
        "revisit",
        "revisiting",
        "ok",
    )

    def __init__(self, job: QueuedJob, wanted: Wanted, group: NodeGroup | None, size: int):
        self.job = job
        self.wanted = wanted
        self.group = group
        self.cursor = 0  # an index into the group's nodes (the node's position if no group)
        self.matched = False
        self.big_enough = False
        self.revisit: list[int] = []  # a heap of indices before the cursor
        self.revisiting: set[int] = set()  # the same indices
        self.ok = bytearray(size)

    def usable(self, view: NodeView) -> bool:
        """Whether the shape may use the node at all (free space aside)."""
        p = view.position
        known = self.ok[p]
        if known:
            return known == 1
        ok = node_matches(self.job, view.node)
        if ok:
            self.matched = True
            ok = fits(self.wanted, view.allocatable)
            if ok:
                self.big_enough = True
        self.ok[p] = 1 if ok else 2
        return ok

    def reason(self) -> str:
        """Why no node took the shape, once the scan has looked at every node."""
        if not self.matched:
            return REASON_NO_MATCH
        if not self.big_enough:
            return REASON_TOO_BIG
        return REASON_NO_RESOURCES


FLOOR = 1  # the fewest evictions a job that found no free room can need
_NONE: Mapping[int, object] = {}


class FewestSearch:
    """The node needing the fewest evictions for one kind of job; see the module docstring.

    ``count(view)`` gives the evictions a usable node needs (None if it cannot make room),
    from the node's current state only."""

    __slots__ = ("scan", "count", "heap", "stamp", "log_at", "frontier")

    def __init__(self, scan: ShapeScan, count: Callable[[NodeView], int | None]) -> None:
        self.scan = scan
        self.count = count
        self.heap: list[tuple[int, int, int]] = []  # (count, position, node version)
        self.stamp: dict[int, int] = {}  # position -> node version its count was taken at
        self.log_at = 0  # how much of NodeIndex.lowered has been taken in
        self.frontier = 0  # an index into the group's nodes: the nodes before it are known

    def _compute(self, view: NodeView) -> None:
        p = view.position
        self.stamp[p] = view.version
        if self.scan.usable(view):
            c = self.count(view)
            if c is not None:
                heappush(self.heap, (c, p, view.version))

    def best(self, index: NodeIndex, skip: Mapping[int, object] = _NONE) -> tuple[int, int] | None:
        """(count, position) of the node needing the fewest evictions, ties by node order;
        None if no node can make room. Nodes at the positions in ``skip`` are left out.
        Only valid when no usable node (outside ``skip``) has free room for the job."""
        views = index.views
        heap = self.heap
        group = self.scan.group
        positions = group.positions if group is not None else None
        end = len(positions) if positions is not None else len(views)
        lowered = index.lowered
        if self.log_at < len(lowered):
            # Nodes the search has looked at (those in ``stamp``) whose count may have
            # dropped: a lower-bound entry makes the search look again when it matters.
            stamp = self.stamp
            for p in lowered[self.log_at :]:
                if p in stamp and stamp[p] != views[p].version:
                    heappush(heap, (FLOOR, p, -1))
            self.log_at = len(lowered)
        held: list[tuple[int, int, int]] = []
        try:
            while True:
                while heap:
                    c, p, v = heap[0]
                    view = views[p]
                    if v != view.version:
                        heappop(heap)
                        if self.stamp.get(p) != view.version:
                            self._compute(view)
                        continue
                    if p in skip:
                        held.append(heappop(heap))
                        continue
                    break
                if heap and (heap[0][0] <= FLOOR or self.frontier >= end):
                    return heap[0][0], heap[0][1]
                if self.frontier >= end:
                    return None
                k = self.frontier
                self.frontier += 1
                self._compute(views[positions[k] if positions is not None else k])
        finally:
            for entry in held:
                heappush(heap, entry)


class NodeIndex:
    """The nodes of a round in its order, with their free space; see the module docstring."""

    def __init__(self, nodes: Iterable[NodeState]) -> None:
        # Fullest nodes first (by dominant share of the node already allocated), so that jobs
        # pack onto busy nodes and leave whole nodes free for big jobs.
        views = [NodeView(n) for n in nodes]
        views.sort(key=lambda v: (-dominant_share(v.node.allocated, v.node.allocatable), v.node.id))
        for p, view in enumerate(views):
            view.position = p
        self.views = views
        self.by_id = {v.node.id: v for v in views}
        self.lowered: list[int] = []
        self.scans: dict[tuple, ShapeScan] = {}
        # Searches by (scan, rule, rule argument), made by the preemption that needs them.
        self.searches: dict[tuple, FewestSearch] = {}
        self._groups: dict[str, list[NodeGroup]] = {}

    # --- changes ---------------------------------------------------------------------------

    def take(self, view: NodeView, requests: Mapping[str, int]) -> None:
        """A job was placed on the node (``requests``: a plain dict)."""
        if view.start_free is None:
            view.start_free = dict(view.free)
        free = view.free
        for r, v in requests.items():
            free[r] = free.get(r, 0) - v
        view.version += 1

    def give(self, view: NodeView, requests: Mapping[str, int]) -> None:
        """Jobs were evicted from the node (``requests``: a plain dict of what they held): it
        has more room, for the scans that passed it and for the searches."""
        if view.start_free is None:
            view.start_free = dict(view.free)
        free = view.free
        for r, v in requests.items():
            free[r] = free.get(r, 0) + v
        view.version += 1
        p = view.position
        self.lowered.append(p)
        for scan in self.scans.values():
            group = scan.group
            k = p if group is None else group.index_of.get(p)
            if k is None or k >= scan.cursor or k in scan.revisiting:
                continue
            if scan.usable(view) and fits(scan.wanted, free):
                heappush(scan.revisit, k)
                scan.revisiting.add(k)

    def write_back(self) -> None:
        """Set ``allocated`` of every node the round changed."""
        for view in self.views:
            start = view.start_free
            if start is None:
                continue
            node = view.node
            allocated = node.allocated.to_dict()
            for r in set(start) | set(view.free):
                allocated[r] = allocated.get(r, 0) + start.get(r, 0) - view.free.get(r, 0)
            node.allocated = Resources(allocated)

    # --- groups, scans and first fit -------------------------------------------------------

    def groups(self, label: str) -> Sequence[NodeGroup | None]:
        """The node groups a gang may use: all nodes (None), or one group per value of its
        uniformity label, in sorted order of the values (nodes without the label are in
        none)."""
        if not label:
            return (None,)
        found = self._groups.get(label)
        if found is None:
            by_value: dict[str, list[int]] = {}
            for view in self.views:
                value = view.node.labels.get(label)
                if value is not None:
                    by_value.setdefault(value, []).append(view.position)
            found = [NodeGroup((label, v), by_value[v]) for v in sorted(by_value)]
            self._groups[label] = found
        return found

    def scan(self, job: QueuedJob, shape: tuple, group: NodeGroup | None = None) -> ShapeScan:
        key = (shape, group.key if group is not None else None)
        scan = self.scans.get(key)
        if scan is None:
            scan = self.scans[key] = ShapeScan(job, shape[0], group, len(self.views))
        return scan

    def first_fit(self, scan: ShapeScan) -> NodeView | None:
        """The first node in order with room for the shape (None: see ``scan.reason()``)."""
        views = self.views
        wanted = scan.wanted
        revisit = scan.revisit
        group = scan.group
        positions = group.positions if group is not None else None
        while revisit:
            k = revisit[0]
            view = views[k if positions is None else positions[k]]
            if fits(wanted, view.free):
                return view
            scan.revisiting.discard(heappop(revisit))
        end = len(views) if positions is None else len(positions)
        k = scan.cursor
        while k < end:
            view = views[k if positions is None else positions[k]]
            if scan.usable(view) and fits(wanted, view.free):
                scan.cursor = k
                return view
            k += 1
        scan.cursor = k
        return None

    def scratch_fit(
        self, scan: ShapeScan, scratch: Mapping[int, dict[str, int]], resume: dict[int, int]
    ) -> NodeView | None:
        """The first node in order with room for the shape, counting the free space in
        ``scratch`` (position -> free) for the nodes in it (a gang's trial placement).
        ``resume`` (per scan, for one trial) remembers how far the trial has looked: every
        node it passed had no room or is in ``scratch``."""
        views = self.views
        wanted = scan.wanted
        group = scan.group
        positions = group.positions if group is not None else None
        best: int | None = None  # an index into the group's nodes
        for p, free in scratch.items():
            k = p if group is None else group.index_of.get(p)
            if k is None or (best is not None and k >= best):
                continue
            if scan.usable(views[p]) and fits(wanted, free):
                best = k
        if scan.revisit:
            # Nodes that have no room as the round sees them leave the heap (an eviction
            # puts them back); the first of the others not in the trial is a candidate.
            kept = []
            for k in scan.revisit:
                p = k if positions is None else positions[k]
                if fits(wanted, views[p].free):
                    kept.append(k)
                    if p not in scratch and (best is None or k < best):
                        best = k
            if len(kept) < len(scan.revisit):
                heapify(kept)
                scan.revisit = kept
                scan.revisiting = set(kept)
        end = len(views) if positions is None else len(positions)
        key = id(scan)
        k = max(scan.cursor, resume.get(key, 0))
        while k < end and (best is None or k < best):
            p = k if positions is None else positions[k]
            view = views[p]
            room = scan.usable(view) and fits(wanted, view.free)
            if room and p not in scratch:
                best = k
                break
            if not room and k == scan.cursor:
                scan.cursor += 1
            k += 1
        resume[key] = k
        if best is None:
            return None
        return views[best if positions is None else positions[best]]
