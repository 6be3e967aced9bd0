"""Identifiers: lower-case ULIDs, sortable by creation time, valid in pod names.

Ids made by one process are strictly increasing, even within one millisecond (the random part
is incremented, as the ULID specification's monotonic mode does), so that jobs of one batch
keep their order. Encoding goes through the C base32 codec: a job or run id costs about two
microseconds, which matters when a cycle leases tens of thousands of runs."""

from __future__ import annotations

import base64
import os
import threading
import time

_RFC4648 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_CROCKFORD = b"0123456789abcdefghjkmnpqrstvwxyz"
_TO_CROCKFORD = bytes.maketrans(_RFC4648, _CROCKFORD)
_RANDOM_BITS = 80
_lock = threading.Lock()
_last = 0  # the last id's 128-bit value


def _encode(value: int) -> str:
    # 128 bits are 26 base-32 digits once two zero bits are put in front; shifted left by 6
    # bits they fill 17 bytes whose first 26 base-32 digits are exactly those.
    digits = base64.b32encode((value << 6).to_bytes(17, "big"))[:26]
    return digits.translate(_TO_CROCKFORD).decode("ascii")


def new_id() -> str:
    global _last
    millis = time.time_ns() // 1_000_000
    random = int.from_bytes(os.urandom(10), "big")
    value = (millis << _RANDOM_BITS) | random
    with _lock:
        if value <= _last:
            value = _last + 1
        _last = value
    return _encode(value)
