"""Keep freed memory in a long-lived process instead of handing it back (issue 26).

glibc's malloc serves a large block (above a threshold that adapts up to 32 MiB) with its own
mmap and gives it back to the kernel when freed, and trims the heap's top once it holds more
than twice that threshold. A demo run frees and allocates the same few sizes thousands of times
((2352, 1536) float32 activations of a replay are 14 MiB each), so every fresh block was
zero-filled page by page by the kernel again: ~115,000 minor page faults and ~0.25 CPU-s of a
2.6 CPU-s real-importance run in the worker. With the thresholds raised the heap keeps what
it has and reuses it (faults a run: ~115,000 -> ~500): the worker's memory stays at its high-
water mark, which it reaches on the first run anyway. Only the demo worker (tui's one long-lived
process) calls this; results are unchanged (which memory a tensor sits in does not change its
numbers).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 * 1024 * 1024  # blocks below this come from the heap and are reused
TRIM_THRESHOLD = 1024 * 1024 * 1024  # the heap's free top is kept up to this much


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process; True when it took effect
    (False elsewhere: another libc, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl has no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mmap_ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) or mallopt(M_MMAP_THRESHOLD, 32 << 20)
    return bool(mmap_ok) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
