"""A small thread-safe LRU memo with an optional time to live: the one cache helper of spanqa.

Used for what one question computes again and again (a reader on the same windows while widening, the same
query's embedding) and for exact repeats of a question (the answer cache). ``get`` returns ``MISSING`` when
the key is absent or expired.

**Per asker.** Every key is taken within the asker's scope (``SCOPE``, a context variable the query runner sets to
the principal for the length of a question; ``None`` for a local user): one asker's question never finds another
asker's entry, so an answer's speed tells nobody what someone else asked (``with asker("alice"): ...``).

Usage::

    from components.core.memo import MISSING, Memo

    memo = Memo(maxsize=256, ttl_s=None)
    if (hit := memo.get(key)) is MISSING:
        hit = memo.put(key, compute())
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections import OrderedDict
from typing import Any, Hashable, Iterator

MISSING = object()
SCOPE: contextvars.ContextVar[Hashable] = contextvars.ContextVar("spanqa_memo_scope", default=None)


@contextlib.contextmanager
def asker(scope: Hashable) -> Iterator[None]:
    """Memo entries made and found inside this block belong to ``scope`` (the principal asking)."""
    token = SCOPE.set(scope)
    try:
        yield
    finally:
        SCOPE.reset(token)


class Memo:
    def __init__(self, maxsize: int = 256, ttl_s: float | None = None):
        self.maxsize, self.ttl_s = maxsize, ttl_s
        self._items: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: Hashable) -> Any:
        key = (SCOPE.get(), key)
        with self._lock:
            item = self._items.get(key)
            if item is None or (self.ttl_s is not None and time.monotonic() - item[0] > self.ttl_s):
                if item is not None:
                    del self._items[key]
                self.misses += 1
                return MISSING
            self._items.move_to_end(key)
            self.hits += 1
            return item[1]

    def put(self, key: Hashable, value: Any) -> Any:
        key = (SCOPE.get(), key)
        with self._lock:
            self._items[key] = (time.monotonic(), value)
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._items)
