"""Hub repo ids and revisions checked before any path or URL is built from them.

A revision names a folder of our cache (``hub/<owner>--<name>/refs/<revision>``)
and of the Hugging Face cache, so ``someone/ours@../../x`` must be refused
before either is touched.  Repo ids are checked by ``huggingface_hub``'s own
``validate_repo_id``; revisions by the rules of git ref names (``git
check-ref-format``) that matter here, written out because no installed library
exposes them: branch and tag names, ``refs/pr/N`` and commit hashes pass,
``..``, absolute paths, backslashes and control characters do not.
"""

from __future__ import annotations

import re
from typing import Optional

from ..errors import ModelNotAvailable

__all__ = ["check_hub_spec", "check_repo_id", "check_revision"]

_REVISION_CHARS = re.compile(r"[A-Za-z0-9._\-/+]+")
MAX_REVISION_CHARS = 255


def check_repo_id(repo_id: str) -> str:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not isinstance(repo_id, str) or "/" not in repo_id:
        raise ModelNotAvailable(f"{repo_id!r} is not a Hub repo id (owner/name).")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise ModelNotAvailable(f"{repo_id!r} is not a valid Hub repo id: {exc}") from None
    return repo_id


def check_revision(revision: Optional[str]) -> Optional[str]:
    """``revision`` unchanged when it is a safe git ref name or commit (or None), else ``ModelNotAvailable``."""
    if revision is None:
        return None
    problem = None
    if not isinstance(revision, str) or not revision:
        problem = "it is empty"
    elif len(revision) > MAX_REVISION_CHARS:
        problem = f"it is longer than {MAX_REVISION_CHARS} characters"
    elif not _REVISION_CHARS.fullmatch(revision):
        problem = "it may hold only letters, digits and . _ - / +"
    elif ".." in revision or "//" in revision or revision.startswith(("/", ".", "-")) or revision.endswith(
            ("/", ".", ".lock")) or any(part.startswith(".") for part in revision.split("/")):
        problem = "it is not a valid git branch, tag or commit name"
    if problem:
        raise ModelNotAvailable(f"Revision {revision!r} is refused: {problem}.")
    return revision


def check_hub_spec(repo_id: str, revision: Optional[str]) -> tuple[str, Optional[str]]:
    return check_repo_id(repo_id), check_revision(revision)
