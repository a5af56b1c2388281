"""SHA-256 of short texts (a card's content hash, the deck cache's format and state keys)
without loading OpenSSL.

``hashlib`` loads OpenSSL's libcrypto when it is imported (~2.5 ms of CPU, about a tenth of
what the TUI's first card costs beyond a minimal Textual app; issue 26), and the first card
only hashes a few short strings. CPython's own SHA-256 (the ``_sha2`` module; ``_sha256``
before 3.12) gives the same digest and loads in ~0.3 ms; hashlib's is used where neither is
there. Whole deck files are still hashed with hashlib (engine/decks/changed.py, when a file
is read): OpenSSL is the faster one on megabytes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Protocol


class Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...

    def digest(self) -> bytes: ...

    def hexdigest(self) -> str: ...


def _builtin_sha256() -> Callable[[bytes], Digest]:
    for name in ("_sha2", "_sha256"):  # CPython's built-in SHA-2 (3.12+, then 3.11)
        try:
            return importlib.import_module(name).sha256  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            pass
    import hashlib

    return hashlib.sha256


sha256: Callable[[bytes], Digest] = _builtin_sha256()
