"""Output files written whole or not at all.

:func:`write_text` writes into a temporary file beside the target (same folder, so the same
file system) and renames it over the target only once it is complete and flushed to disk. A
full disk, a permission error, a crash, Ctrl-C or a stop signal before that point leaves the
target as it was (the previous file, or no file) and removes the temporary one; a reader never
sees half a file. A symbolic link as target is written through: the file it points to is
replaced, the link stays. The new file gets the permissions a plain ``open(path, "w")`` would
give it (those of the file it replaces, else 0666 less the umask).

An error names the target, not the temporary file: ``out.json: No space left on device``.
A process that must leave at once, skipping the clean-up (``os._exit``), first calls
:func:`discard_partial`. Imports nothing of conformance: any command may use it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

_PARTIAL: set[str] = set()  # temporary files being written


def discard_partial() -> None:
    """Remove the temporary files of the writes in progress."""
    for temporary in list(_PARTIAL):
        try:
            os.unlink(temporary)
        except OSError:
            pass


def write_text(path: str | os.PathLike, text: str, *, make_parents: bool = False) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path``, whole or not at all."""
    target = Path(os.path.realpath(path))
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                         suffix=".partial")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    _PARTIAL.add(temporary)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
    finally:
        _PARTIAL.discard(temporary)
