"""Writing the files a user names: whole or not at all, and nothing else touched.

``write_files({path: content, ...})`` first makes every file's new content in full, and only
then puts each one in place. How it is put in place depends on what the path is now:

- missing, or a regular file with one link: the content goes to a temporary file beside the
  target (same folder, so the same file system), is flushed to disk, given the old file's
  mode (or the mode ``open()`` would give a new file) and owner where we may, and renamed
  over the target: a reader sees the old file or the new one, never half of either.
- a regular file with more than one hard link: renaming would split the links (the other
  names would keep the old content), so the new content is written *into* the existing file,
  after it is complete in a temporary file and the space for it is reserved; only a crash in
  the middle of that copy can leave it partial. (Vim's ``backupcopy=auto`` and Emacs's
  ``backup-by-copying-when-linked`` make the same choice.) The same in-place write is used
  when the folder cannot take a temporary file but the file itself is writable.
- a symbolic link: followed; the file it points to is written as above and the link stays a
  link.
- a character device or a FIFO (``/dev/null``, a terminal, a pipe, ``/dev/stdout``): opened
  and written directly; nothing is created beside it and nothing is renamed over it.
- ``-``: standard output.
- a folder, a block device or a socket: refused with a ``WriteError``.

Temporary files are removed when a write fails, and on SIGINT, SIGTERM and SIGHUP during the
write (the signal then ends the process as it would have).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

STDOUT = "-"
"""Standard output, only as this exact string: a Path is never it (``Path("./-")`` is
``Path("-")``, and `-o ./-` names the file called -, as prep's own hint says)."""

Content = str | bytes | Callable[[Path], None]
"""Text (written as UTF-8), bytes, or a function that writes the file at the path it is given."""

# Names that mean one of this process's own file descriptors, however the path is spelled.
_OWN_FDS = {
    "/dev/stdout": 1,
    "/dev/fd/1": 1,
    "/proc/self/fd/1": 1,
    "/dev/stderr": 2,
    "/dev/fd/2": 2,
    "/proc/self/fd/2": 2,
}


def is_stdout_name(target: object) -> bool:
    """Whether ``target`` is the string ``-`` itself (a Path never is: see STDOUT)."""
    return isinstance(target, str) and target == STDOUT


def is_stdout(target: str | os.PathLike[str]) -> bool:
    """Whether ``target`` names this process's standard output (``-``, /dev/stdout, ...)."""
    name = os.fspath(target)
    return is_stdout_name(target) or _OWN_FDS.get(os.path.normpath(os.path.abspath(name))) == 1


class WriteError(Exception):
    """A file could not be written; the message is one line for the user."""


@dataclass
class _Plan:
    shown: str  # the name as the user gave it
    how: str  # "fd" | "direct" | "replace" | "inplace"
    path: str = ""  # the file written (a symlink's target), for direct/replace/inplace
    fd: int = -1  # for "fd"
    existing: os.stat_result | None = None
    tmp: str | None = None  # the complete new content, before it is put in place


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _plan(target: str | os.PathLike[str]) -> _Plan:
    shown = os.fspath(target)
    if is_stdout_name(target):
        return _Plan(shown, "fd", fd=1)
    absolute = os.path.normpath(os.path.abspath(shown))
    if absolute in _OWN_FDS:
        return _Plan(shown, "fd", fd=_OWN_FDS[absolute])
    try:
        info = os.stat(shown)  # follows symbolic links
    except FileNotFoundError:
        info = None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteError(f"cannot write {shown}: a symbolic link loop") from None
        raise WriteError(f"cannot write {shown}: {_why(exc)}") from None
    if info is None:
        path = os.path.realpath(shown)  # a dangling link: create the file it points to
        folder = os.path.dirname(path)
        if not os.path.isdir(folder):
            given = os.path.dirname(shown) or "."
            if os.path.isdir(given):  # a link on the way leads elsewhere: say where
                raise WriteError(
                    f"cannot write {shown}: it leads to {path}, and there is no folder {folder}"
                )
            raise WriteError(f"cannot write {shown}: no folder {given}")
        return _Plan(shown, "replace", path=path)
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise WriteError(f"cannot write {shown}: is a folder; give a file name")
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or absolute.startswith(("/dev/fd/", "/proc/")):
        return _Plan(shown, "direct", path=shown, existing=info)
    if not stat.S_ISREG(mode):
        what = "a block device" if stat.S_ISBLK(mode) else "a socket"
        raise WriteError(f"cannot write {shown}: is {what}, not a file")
    if not os.access(shown, os.W_OK):
        raise WriteError(f"cannot write {shown}: permission denied (the file is read-only)")
    path = os.path.realpath(shown)
    return _Plan(shown, "inplace" if info.st_nlink > 1 else "replace", path=path, existing=info)


def _make(plan: _Plan, content: Content, private_dir: Callable[[], str]) -> None:
    """Write the complete new content to ``plan.tmp``."""
    if plan.how == "replace":
        folder = os.path.dirname(plan.path)
        try:
            fd, plan.tmp = tempfile.mkstemp(
                prefix=f".{os.path.basename(plan.path)}.", suffix=".tmp", dir=folder
            )
        except PermissionError:
            if plan.existing is None:
                raise WriteError(f"cannot write {plan.shown}: permission denied") from None
            plan.how = "inplace"  # a writable file in a folder we may not add to
            fd, plan.tmp = tempfile.mkstemp(prefix="prep-", suffix=".tmp", dir=private_dir())
    else:
        fd, plan.tmp = tempfile.mkstemp(prefix="prep-", suffix=".tmp", dir=private_dir())
    if callable(content):
        os.close(fd)
        content(Path(plan.tmp))
        return
    data = content.encode("utf-8") if isinstance(content, str) else content
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        if plan.how == "replace":
            fh.flush()
            os.fsync(fh.fileno())


def _copy_into(src: str, fd: int, *, reserve: bool) -> None:
    size = os.path.getsize(src)
    if reserve and size and hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, size)  # ENOSPC here, before a byte is overwritten
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENODEV):
                raise
    with open(src, "rb") as fh:
        while chunk := fh.read(1 << 20):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]


def _put(plan: _Plan, stdout: BinaryIO | None) -> None:
    assert plan.tmp is not None
    if plan.how == "replace":
        if plan.existing is not None:
            uid, gid = plan.existing.st_uid, plan.existing.st_gid
            mine = os.stat(plan.tmp)
            if (mine.st_uid, mine.st_gid) != (uid, gid):
                with suppress(OSError):  # only root (or a group member) may; keep going
                    os.chown(plan.tmp, uid, gid)
            os.chmod(
                plan.tmp, stat.S_IMODE(plan.existing.st_mode)
            )  # after chown, which clears setuid
        else:
            os.chmod(plan.tmp, 0o666 & ~_umask())  # as open() would have made it
        os.replace(plan.tmp, plan.path)
        plan.tmp = None
        with suppress(OSError):  # the rename itself on disk, where the system allows it
            dir_fd = os.open(os.path.dirname(plan.path), os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        return
    if plan.how == "fd":
        if plan.fd == 1 and stdout is not None:
            with open(plan.tmp, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    stdout.write(chunk)
            stdout.flush()
        else:
            with suppress(AttributeError, ValueError):
                sys.stdout.flush() if plan.fd == 1 else sys.stderr.flush()
            _copy_into(plan.tmp, plan.fd, reserve=False)
        return
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(plan.path, flags)
    try:
        if plan.how == "inplace":
            _copy_into(plan.tmp, fd, reserve=True)
            os.ftruncate(fd, os.path.getsize(plan.tmp))
            os.fsync(fd)
        else:
            if stat.S_ISREG(os.fstat(fd).st_mode):  # /dev/fd/N naming a file: as `>` would
                os.ftruncate(fd, 0)
            _copy_into(plan.tmp, fd, reserve=False)
    finally:
        os.close(fd)


class _Interrupted(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_unwind() -> Iterator[None]:
    """While writing, SIGTERM and SIGHUP unwind the stack (so temporary files are removed)
    and then end the process as the signal would have. SIGINT already unwinds
    (KeyboardInterrupt). Handlers someone else installed are left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, object] = {}

    def unwind(signum: int, frame: object) -> None:
        raise _Interrupted(signum)

    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
            previous[signum] = signal.signal(signum, unwind)
    try:
        yield
    except _Interrupted as exc:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        previous.clear()
        os.kill(os.getpid(), exc.signum)  # now with the default action: the process ends
        raise SystemExit(128 + exc.signum) from None  # where the signal does not end it
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


def write_files(
    files: Mapping[str | os.PathLike[str], Content], *, stdout: BinaryIO | None = None
) -> None:
    """Write every file named in ``files`` (see the module docstring for how each kind of
    path is written). Every new content is complete before the first file is touched; a
    ``WriteError`` (one line) says what failed. ``stdout`` is where ``-`` goes (default: this
    process's standard output)."""
    plans: list[tuple[_Plan, Content]] = [(_plan(t), c) for t, c in files.items()]
    if stdout is None and any(p.how == "fd" and p.fd == 1 for p, _ in plans):
        stdout = getattr(sys.stdout, "buffer", None)
    private: list[str] = []

    def private_dir() -> str:
        if not private:
            private.append(tempfile.mkdtemp(prefix="prep-write-"))
        return private[0]

    with _signals_unwind():
        try:
            for plan, content in plans:
                try:
                    _make(plan, content, private_dir)
                except OSError as exc:
                    raise WriteError(f"cannot write {plan.shown}: {_why(exc)}") from None
            for plan, _ in plans:
                try:
                    _put(plan, stdout)
                except BrokenPipeError:
                    raise WriteError(f"cannot write {plan.shown}: the reader went away") from None
                except OSError as exc:
                    raise WriteError(f"cannot write {plan.shown}: {_why(exc)}") from None
        finally:
            for plan, _ in plans:
                if plan.tmp is not None:
                    with suppress(OSError):
                        os.unlink(plan.tmp)
            for folder in private:
                shutil.rmtree(folder, ignore_errors=True)
