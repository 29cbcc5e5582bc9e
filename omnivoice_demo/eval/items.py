"""What an evaluation speaks: the built-in set, a ``.txt`` / ``.jsonl`` file, or a published test list.

* ``builtin``: twenty sentences of our own (English, Chinese, German, French,
  Spanish, Japanese, Korean; ``omnivoice_demo/data/eval_items.jsonl``).  Rows
  marked ``"clone": true`` are also spoken in a cloned voice when a reference
  clip is given (``clone_clip``); without one they are spoken in the model's
  own voice only.
* ``.txt``: one sentence per line.
* ``.jsonl``: one object per line with ``text`` and any of ``id``, ``language``,
  ``instruct`` (voice design), ``ref_audio`` (a clip to clone, relative to the
  file's folder) with ``ref_text`` (its transcript; recognised when missing), ``seed``.
* ``.lst``: a published test list, read as it is downloaded:
  Seed-TTS eval (``meta.lst``: ``id|prompt text|prompt wav|text``, the wav
  relative to the list's folder; language from the folder name ``en``/``zh``),
  or LibriSpeech-PC cross-sentence (F5-TTS's tab-separated
  ``ref_utt ref_dur ref_text gen_utt gen_dur gen_text``; the clips are read from
  ``audio_root`` as ``speaker/chapter/utt.flac`` of LibriSpeech test-clean).

Every row is checked before any work; bad rows are listed together (``batch``'s
``BatchInputError``).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from importlib import resources
from typing import Optional

from ..batch.items import ID_PATTERN, default_seed, parse_json_row, read_rows
from ..errors import InvalidInput

BUILTIN = "builtin"
MAX_ITEMS = 100_000
ROW_KEYS = ("id", "text", "language", "instruct", "ref_audio", "ref_text", "seed", "clone")


@dataclasses.dataclass(frozen=True)
class EvalItem:
    """One sentence to speak with every configuration, at the same seeds."""

    id: str
    text: str
    language: Optional[str] = None
    instruct: Optional[str] = None
    ref_audio: Optional[str] = None   # absolute path of a clip to clone
    ref_text: Optional[str] = None    # its transcript (None: recognised)
    seed: Optional[int] = None        # the first seed (default: from the id and text)

    @property
    def cloned(self) -> bool:
        return self.ref_audio is not None

    def seeds(self, count: int) -> list[int]:
        first = self.seed if self.seed is not None else default_seed(self.id, self.text)
        return [first + k for k in range(count)]

    def fingerprint(self) -> dict:
        """What decides this item's audio (the clip by its bytes, not its path)."""
        from ..storage.digests import file_sha256

        return {"text": self.text, "language": self.language, "instruct": self.instruct,
                "ref_audio": file_sha256(self.ref_audio) if self.ref_audio else None, "ref_text": self.ref_text}


def read_eval_items(source: str | pathlib.Path = BUILTIN, clone_clip: Optional[str] = None,
                    clone_text: Optional[str] = None, audio_root: Optional[str] = None,
                    limit: Optional[int] = None) -> list[EvalItem]:
    """The items of ``source`` (``"builtin"`` or a file), checked, at most ``limit`` of them."""
    if str(source) == BUILTIN:
        items = _builtin(clone_clip, clone_text)
    else:
        path = pathlib.Path(source)
        if not path.is_file():
            raise InvalidInput(f"The eval items {path} do not exist; give 'builtin', a .txt, .jsonl or .lst file.",
                               param="items")
        kind = path.suffix.lower()
        if kind not in (".txt", ".jsonl", ".lst"):
            raise InvalidInput(f"The eval items {path.name} are not .txt, .jsonl or .lst.", param="items")
        items = _read_file(path, kind, pathlib.Path(audio_root) if audio_root else path.parent)
    if limit is not None:
        if limit < 1:
            raise InvalidInput("--limit must be at least 1.", param="limit")
        items = items[:limit]
    return items


def _builtin(clone_clip: Optional[str], clone_text: Optional[str]) -> list[EvalItem]:
    text = resources.files("omnivoice_demo").joinpath("data/eval_items.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    items = [EvalItem(id=r["id"], text=r["text"], language=r["language"]) for r in rows]
    if clone_clip:
        clip = _existing(clone_clip, pathlib.Path.cwd(), "the reference clip")
        items += [EvalItem(id=f"{r['id']}-clone", text=r["text"], language=r["language"], ref_audio=clip,
                           ref_text=clone_text or None) for r in rows if r.get("clone")]
    return items


def _read_file(path: pathlib.Path, kind: str, audio_root: pathlib.Path) -> list[EvalItem]:
    def item_of(line: str, number: int) -> EvalItem:
        if kind == ".jsonl":
            return _from_row(parse_json_row(line), number, path.parent)
        if kind == ".lst":
            return _from_list_line(line.rstrip("\r\n"), number, path, audio_root)
        return EvalItem(id=f"{number:06d}", text=line.strip())

    items = read_rows(path, item_of, MAX_ITEMS)
    if not items:
        raise InvalidInput(f"The eval items {path.name} hold no items.", param="items")
    return items


def _from_row(row: dict, line: int, base: pathlib.Path) -> EvalItem:
    unknown = sorted(set(row) - set(ROW_KEYS))
    if unknown:
        raise InvalidInput(f"unknown key {unknown[0]!r}; a row may have {', '.join(ROW_KEYS)}")
    for key in ("text", "id", "language", "instruct", "ref_audio", "ref_text"):
        if row.get(key) is not None and not isinstance(row[key], str):
            raise InvalidInput(f"{key!r} must be text, got {row[key]!r}")
    seed = row.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31):
        raise InvalidInput(f"'seed' must be a whole number from 0 to 2**31-1, got {seed!r}")
    clip = _existing(row["ref_audio"], base, "ref_audio") if row.get("ref_audio") else None
    return _item(row.get("id") or f"{line:06d}", row.get("text"), row.get("language"), row.get("instruct"),
                 clip, row.get("ref_text"), seed)


def _from_list_line(line: str, number: int, path: pathlib.Path, audio_root: pathlib.Path) -> EvalItem:
    if "\t" in line:  # LibriSpeech-PC cross-sentence (F5-TTS's list)
        fields = line.split("\t")
        if len(fields) != 6:
            raise InvalidInput("a LibriSpeech-PC line has 6 tab-separated fields: ref_utt ref_dur ref_text "
                               "gen_utt gen_dur gen_text")
        ref_utt, _, ref_text, gen_utt, _, gen_text = fields
        parts = ref_utt.split("-")
        if len(parts) != 3:
            raise InvalidInput(f"{ref_utt!r} is not a LibriSpeech utterance id (speaker-chapter-number)")
        clip = _existing(str(pathlib.Path(parts[0], parts[1], ref_utt + ".flac")), audio_root, "the reference clip")
        return _item(gen_utt, gen_text, "en", None, clip, ref_text, None)
    fields = line.split("|")  # Seed-TTS eval: id|prompt text|prompt wav|text[|ground-truth wav]
    if len(fields) not in (4, 5):
        raise InvalidInput("a Seed-TTS line has 4 or 5 '|'-separated fields: id|prompt text|prompt wav|text")
    language = next((p for p in reversed(path.resolve().parent.parts) if p in ("en", "zh")), None)
    clip = _existing(fields[2], path.parent, "the prompt wav")
    return _item(fields[0], fields[3], language, None, clip, fields[1], None)


def _item(item_id, text, language, instruct, clip, ref_text, seed) -> EvalItem:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput('"text" is missing or empty')
    item_id = str(item_id)
    if not ID_PATTERN.match(item_id):
        raise InvalidInput(f"id {item_id!r} cannot name a folder: use up to 100 letters, digits, '.', '-' or '_'")
    return EvalItem(id=item_id, text=text.strip(), language=language or None, instruct=instruct or None,
                    ref_audio=clip, ref_text=(ref_text or "").strip() or None, seed=seed)


def _existing(name: str, base: pathlib.Path, what: str) -> str:
    path = pathlib.Path(name).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise InvalidInput(f"{what} {name} does not exist (looked in {base.name or base}/)")
    return str(path.resolve())
