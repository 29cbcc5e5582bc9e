"""The items of a batch: read from JSONL or plain text, every row checked before any work.

A JSONL row is an object with ``text`` and any of ``id``, ``voice`` (read as every
front end reads it: a voice saved in the app, or in ``--voices DIR``; a named design
such as ``alloy``; a ``.npz`` path relative to the input), ``language``,
``instruct`` (the voice in one's own words, read leniently: each item's sidecar lists the words
left out in ``instruct_ignored``) and the ``GenerationConfig`` fields (``seed``, ``num_step``,
``speed``, ...), ``pronunciations`` (a lexicon's JSON, over the batch's ``--lexicon`` word by word),
``script: true`` (``text`` is a dialogue script, ``text.script``, its names voices or given one by
``speakers``: ``{"Anna": "alloy"}``; its subtitles name the speakers).  A ``text`` that starts with
``<speak`` is SSML (``text/ssml.py``): its ``<voice name>``s are read as ``voice`` is, when the file is
read.  A ``.csv`` file has a header row naming its columns (``text`` and any of the JSONL keys), then one
item per row (a quoted cell may hold commas and line breaks; an empty cell is a key not given;
``pronunciations`` and ``speakers`` cells hold JSON; ``script`` is true/false).  A ``.txt`` file is one item per
non-empty line; a line starting with ``#`` is a comment (not spoken).  Items
without an ``id`` are named by their line number; items without a seed (in
the row or the batch's settings) get one from their id and text.  Every bad row is
collected with its line number: ``read_batch`` returns them beside the good
items (a batch run records each as failed and goes on: a bad row fails
alone), ``read_items`` and ``read_rows`` refuse the whole file with one
``BatchInputError`` listing them.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import logging
import pathlib
import re
from typing import Any, Optional

from ..settings.generation import GenerationConfig
from ..settings.limits import Limits
from ..text.ssml import looks_like_ssml, parse
from ..errors import InvalidInput
from ..errors import check_unicode
from ..text.lexicon import Lexicon, from_mapping
from ..text.script import Turn
from ..text.descriptions import read_description
from ..text.script import read_script
from ..storage.digests import file_sha256

log = logging.getLogger("omnivoice.batch")

#: the keys a row may have besides the GenerationConfig fields
ITEM_KEYS = ("id", "text", "voice", "language", "instruct", "pronunciations", "script", "speakers")
#: an item id becomes a file name: letters, digits, dot, dash, underscore; not starting with a dot
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$")
#: rows one batch file may hold (a bound on memory and on the validation pass)
MAX_ITEMS = 1_000_000
#: bytes of one row (a text at the local limit, in JSON, fits many times over); a longer line is refused unread
MAX_ROW_BYTES = 1024 * 1024
#: names the batch itself uses in the output folder (``--book`` writes book.wav, book.srt, ...)
RESERVED_IDS = ("book",)
MAX_LISTED_PROBLEMS = 20


class BatchInputError(InvalidInput):
    """Some rows of the input file are wrong; ``problems`` holds ``(line, message)`` for each."""

    def __init__(self, source: str, problems: list[tuple[int, str]]):
        shown = [f"  line {line}: {message}" for line, message in problems[:MAX_LISTED_PROBLEMS]]
        more = len(problems) - len(shown)
        super().__init__(f"{source}: {len(problems)} bad row(s); fix them and run again (nothing was done):\n"
                         + "\n".join(shown) + (f"\n  ... and {more} more" if more > 0 else ""), param="input")
        self.problems = problems

    def __str__(self) -> str:  # one_line() keeps the first paragraph: keep the listing in it
        return self.args[0].replace("\n", " ")


@dataclasses.dataclass(frozen=True)
class BatchItem:
    """One thing to say, with everything that decides its audio."""

    id: str
    line: int
    text: str
    language: Optional[str]
    instruct: Optional[str]
    voice: Optional[str]              # absolute path of a saved voice file
    config: GenerationConfig          # the batch's settings with the row's own on top; the seed always set
    ignored: tuple[str, ...] = ()     # words of the row's instruct that were not understood (its sidecar says)
    #: SSML: each ``<voice name>`` -> (a saved voice file's absolute path, None) or (None, its design)
    ssml_voices: tuple[tuple[str, Optional[str], Optional[str]], ...] = ()
    pronunciations: Optional[Lexicon] = None   # --lexicon with the row's own over it
    turns: tuple[Turn, ...] = ()      # a script row: its turns, each voice a file path or a design

    def generate_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``engine.prepare/stream/generate`` for this item."""
        voices = {name: (path, design) for name, path, design in self.ssml_voices}
        return dict(language=self.language, instruct=self.instruct, voice=self.voice, config=self.config,
                    ssml=None, voices=voices.__getitem__, pronunciations=self.pronunciations)

    def plan(self, engine):
        """The engine's plan of this item (a script's turns: ``engine.prepare_turns``)."""
        if self.turns:
            return engine.prepare_turns(self.turns, language=self.language, config=self.config,
                                        pronunciations=self.pronunciations)
        return engine.prepare(self.text, **self.generate_kwargs())

    def request_digest(self) -> str:
        """A fingerprint of what the item asks (its text, voices by file content, settings, lexicon, turns): a
        book names its sentences by it.  It never decides reuse: the render key of what the engine would run does
        (``engine.render_key``, ``runner.run_batch``)."""
        voice_hash = file_sha256(self.voice) if self.voice else None
        payload = {"text": self.text, "language": self.language, "instruct": self.instruct, "voice": voice_hash,
                   "config": self.config.to_dict()}
        if self.ssml_voices:   # the voices the SSML names, by content
            payload["ssml_voices"] = [[name, file_sha256(path) if path else design]
                                      for name, path, design in self.ssml_voices]
        if self.pronunciations:   # only when given: the keys of earlier runs stay the same
            payload["pronunciations"] = [dataclasses.astuple(entry) for entry in self.pronunciations.entries]
        if self.turns:
            payload["turns"] = [[turn.speaker, turn.text, file_sha256(turn.voice) if turn.voice else None,
                                 turn.instruct] for turn in self.turns]
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def read_items(path, base: Optional[GenerationConfig] = None, voices_dir=None,
               lexicon: Optional[Lexicon] = None) -> list[BatchItem]:
    """All items of a ``.jsonl``, ``.csv`` or ``.txt`` file, or a ``BatchInputError`` listing every bad row."""
    items, problems = read_batch(path, base, voices_dir, lexicon)
    if problems:
        raise BatchInputError(pathlib.Path(path).name, problems)
    return items


def read_batch(path, base: Optional[GenerationConfig] = None, voices_dir=None,
               lexicon: Optional[Lexicon] = None) -> tuple[list[BatchItem], list[tuple[int, str]]]:
    """(the good items, ``(line, message)`` of every bad row) of a ``.jsonl``, ``.csv`` or ``.txt`` file;
    ``InvalidInput`` only for the file as a whole (missing, of another kind, without a single row, too many rows,
    a CSV without a ``text`` column)."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise InvalidInput(f"The batch input {path} does not exist; give {INPUT_FORMATS}.", param="input")
    kind = path.suffix.lower()
    if kind not in (".jsonl", ".csv", ".txt"):
        raise InvalidInput(f"The batch input {path.name} is not a batch file; give {INPUT_FORMATS}.", param="input")
    base = base or GenerationConfig()
    from ..studio.voice_store import open_voice_store

    voices = open_voice_store(voices_dir)  # default: $OMNIVOICE_VOICE_STORE, else the app's saved voices

    def item_of(line, number: int) -> BatchItem:
        row = parse_json_row(line) if kind == ".jsonl" else csv_row(line) if kind == ".csv" else {"text": line.strip()}
        return _item_from_row(row, number, base, voices, path.parent, lexicon or Lexicon())

    items, problems = collect_rows(path, item_of, MAX_ITEMS, comments=kind == ".txt",
                                   entries=csv_entries(path) if kind == ".csv" else None)
    if not items and not problems:
        raise InvalidInput(f"The batch input {path.name} has no items.", param="input")
    return items, problems


def read_rows(path: pathlib.Path, item_of, max_items: int, comments: bool = False) -> list:
    """``collect_rows``, all good: a ``BatchInputError`` listing every bad row (with its line number) when any is
    wrong, so nothing starts on a bad file."""
    items, problems = collect_rows(path, item_of, max_items, comments)
    if problems:
        raise BatchInputError(str(path.name), problems)
    return items


def collect_rows(path: pathlib.Path, item_of, max_items: int, comments: bool = False,
                 entries=None) -> tuple[list, list[tuple[int, str]]]:
    """(``item_of(line, number)`` of every good non-empty line of ``path`` (and, with ``comments``, not a ``#``
    line), ``(line, message)`` of every bad one): ids unique; each row read on its own, so whatever is wrong
    with one (even an error of ours, logged) leaves the others.  Past ``max_items`` rows the whole file is
    refused (``BatchInputError``): the rows after it are not read.  ``entries``: ``(line number, row)`` pairs to
    read instead of the file's lines (a CSV's rows, ``csv_entries``)."""
    count_rows(path, max_items + (entries is not None), comments)   # the file's size first: nothing parsed for one too big
    items: list = []
    problems: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    # a byte that is not UTF-8 becomes a lone surrogate, which its row's checks refuse (the other rows are read)
    with open(path, encoding="utf-8-sig", errors="surrogateescape") as handle:
        for number, line in (entries if entries is not None else enumerate(handle, start=1)):
            if isinstance(line, str) and (not line.strip() or (comments and line.lstrip().startswith("#"))):
                continue
            if len(items) + len(problems) >= max_items:
                raise BatchInputError(str(path.name),
                                      problems + [(number, f"more than {max_items} items; split the file")])
            try:
                item = item_of(line, number)
            except InvalidInput as exc:
                problems.append((number, str(exc)))
                continue
            except Exception as exc:  # noqa: BLE001 - a row we failed to read fails alone
                log.exception("internal error reading line %d of %s", number, path.name)
                problems.append((number, f"this row could not be read (internal error, {type(exc).__name__}); "
                                         "please report it"))
                continue
            if item.id in seen:
                problems.append((number, f"id {item.id!r} is also the id of line {seen[item.id]}; ids must be unique"))
                continue
            seen[item.id] = number
            items.append(item)
    return items, problems


def count_rows(path: pathlib.Path, max_items: int, comments: bool = False) -> int:
    """The rows of ``path`` (non-empty lines; with ``comments``, not ``#`` lines), counted in bounded memory (a
    line at a time, each at most ``MAX_ROW_BYTES``): ``BatchInputError`` at the first row past ``max_items`` or
    the first line over ``MAX_ROW_BYTES``, before any row is parsed (issue 43: a 1,000,001-line file was
    refused only after 81 s and 702 MB)."""
    rows = 0
    with open(path, "rb") as handle:
        for number, line in enumerate(iter(lambda: handle.readline(MAX_ROW_BYTES + 1), b""), start=1):
            if len(line) > MAX_ROW_BYTES:
                raise BatchInputError(str(path.name), [(number, f"the line is over {MAX_ROW_BYTES} bytes; a row "
                                                                "holds one item")])
            stripped = line.strip().removeprefix(b"\xef\xbb\xbf") if number == 1 else line.strip()
            if not stripped or (comments and stripped.startswith(b"#")):
                continue
            rows += 1
            if rows > max_items:
                raise BatchInputError(str(path.name), [(number, f"more than {max_items} items; split the file")])
    return rows


#: what ``--input`` takes, for the messages that refuse another file
INPUT_FORMATS = ("a .jsonl file (one JSON object per line: text, id, voice, ...), a .csv file with a header row "
                 "(text, id, voice, ...: the same keys as columns) or a .txt file (one text per line)")


def csv_entries(path: pathlib.Path):
    """``(line number, {column: cell})`` of each row of a CSV file after its header (``csv``'s own reader: quoted
    cells with commas, quotes and line breaks); a file whose header has no ``text`` column is refused whole.  A
    row ``csv`` refuses (a cell over its field limit, 131,072 characters) is ``(line, {"error": why})``: it fails
    alone and the reading goes on after its end (issue 57: the batch ended with a traceback, every row lost)."""
    with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as handle:
        lines = _CsvLines(handle)
        reader = csv.reader(lines)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise InvalidInput(f"The batch input {path.name}'s header row cannot be read as CSV ({exc}).",
                               param="input") from None
        names = [name.strip() for name in header or []]
        if "text" not in names:
            raise InvalidInput(f"The batch input {path.name} needs a header row naming its columns, with at least "
                               f"\"text\" (and any of {', '.join(k for k in ITEM_KEYS if k != 'text')} and the "
                               "generation settings); got " + (", ".join(repr(n) for n in names[:8]) or "an empty "
                               "file") + ".", param="input")
        while True:
            start = lines.start_row()
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                lines.skip_rest_of_row()
                yield start, {"error": _csv_refusal(exc)}
                continue
            if any(cell.strip() for cell in cells):
                yield start, {"cells": cells, "names": names}


class _CsvLines:
    """A CSV file's lines for ``csv.reader``, numbered, with the quotes of the row being read counted: after
    ``csv`` refuses a row mid-way its end is the line where those quotes pair up (a quoted cell, ``""`` inside it
    included, holds an even number), so the next row is read from its own first line."""

    def __init__(self, handle):
        self.handle, self.number, self.quotes = handle, 0, 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = next(self.handle)
        self.number += 1
        self.quotes += line.count('"')
        return line

    def start_row(self) -> int:
        """The line number the next row starts on; its quotes counted from here."""
        self.quotes = 0
        return self.number + 1

    def skip_rest_of_row(self) -> None:
        while self.quotes % 2:
            if next(self, None) is None:
                return


def _csv_refusal(exc: csv.Error) -> str:
    if "field larger than field limit" in str(exc):
        return (f"a cell of this row is over {csv.field_size_limit():,} characters, far more than any cell takes "
                "(a text is held to the text limit); shorten it or split it into rows")
    return f"this row cannot be read as CSV ({exc}); check its quotes (a quote inside a quoted cell is written \"\")"


def csv_row(entry: dict) -> dict:
    """One CSV row as a JSONL row: empty cells left out, ``script`` read as true/false, ``pronunciations`` and
    ``speakers`` as JSON."""
    if "error" in entry:   # a row csv could not read (csv_entries)
        raise InvalidInput(entry["error"])
    cells, names = entry["cells"], entry["names"]
    if len(cells) > len(names):
        raise InvalidInput(f"the row has {len(cells)} cells but the header names {len(names)} columns (quote a "
                           "cell that holds a comma)")
    row = {name: cell for name, cell in zip(names, cells) if cell.strip()}
    if "script" in row:
        flag = row["script"].strip().lower()
        row["script"] = True if flag in ("true", "1", "yes") else False if flag in ("false", "0", "no") else row["script"]
    for key in ("pronunciations", "speakers"):
        if key in row:
            try:
                row[key] = json.loads(row[key])
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"the {key} cell is not valid JSON ({exc.msg}); write it as in a JSONL row, "
                                   "e.g. {\"bass\": \"[B EY1 S]\"}") from None
    return row


def parse_json_row(line: str) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise InvalidInput("not valid JSON here: nested too deeply") from None
    if not isinstance(row, dict):
        raise InvalidInput("a row must be a JSON object with at least \"text\"")
    try:  # a lone surrogate ("\ud800") is no character: nothing can encode it, not even its error message
        json.dumps(row, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("a string of the row holds a lone surrogate (a byte that is not UTF-8, or an escape "
                           "such as \\ud800 that is no character); write the text as UTF-8") from None
    return row


def _item_from_row(row: dict, line: int, base: GenerationConfig, voices, folder: pathlib.Path,
                   lexicon: Lexicon) -> BatchItem:
    unknown = sorted(set(row) - set(ITEM_KEYS) - set(GenerationConfig.names()))
    if unknown:
        raise InvalidInput(f"unknown key {unknown[0]!r}; a row may have {', '.join(ITEM_KEYS)} and the "
                           f"generation settings ({', '.join(GenerationConfig.names())})")
    text = row.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("\"text\" is missing or empty")
    check_unicode(text, "the text")
    item_id = row.get("id", f"{line:06d}")
    if isinstance(item_id, int) and not isinstance(item_id, bool):
        item_id = str(item_id)
    if not isinstance(item_id, str) or not ID_PATTERN.match(item_id):
        raise InvalidInput(f"id {item_id!r} cannot name a file: use up to 100 letters, digits, '.', '-' or '_'")
    if item_id in RESERVED_IDS:
        raise InvalidInput(f"id {item_id!r} is reserved for the whole batch's files; choose another")
    for key in ("language", "instruct", "voice"):
        if row.get(key) is not None and not isinstance(row[key], str):
            raise InvalidInput(f"{key!r} must be text, got {row[key]!r}")
    settings = {name: row[name] for name in GenerationConfig.names() if name in row}
    config = GenerationConfig.from_mapping(settings, base=base).validate()
    if config.seed is None:
        config = config.replace(seed=default_seed(item_id, text.strip()))
    pronunciations = lexicon.merged(from_mapping(row.get("pronunciations"))) or None
    script = row.get("script", False)
    if not isinstance(script, bool):
        raise InvalidInput(f"'script' must be true or false, got {script!r}")
    if script:
        if any(row.get(key) for key in ("voice", "instruct")):
            raise InvalidInput("a script row gives each name its voice (in the script or in 'speakers'); leave out "
                               "'voice' and 'instruct'")
        turns = read_script(text, lambda value: voice_of(value, voices, folder), row.get("speakers"))
        return BatchItem(id=item_id, line=line, text=text.strip(), language=row.get("language") or None,
                         instruct=None, voice=None, config=config, pronunciations=pronunciations, turns=tuple(turns))
    if row.get("speakers") is not None:
        raise InvalidInput("'speakers' maps the names of a script to voices: give \"script\": true with it")
    voice, design = voice_of(row.get("voice"), voices, folder)
    description = read_description(row.get("instruct"), param="instruct")   # lenient: the sidecar lists the rest
    return BatchItem(id=item_id, line=line, text=text.strip(), language=row.get("language") or None,
                     instruct=description.instruct or design, voice=voice, config=config,
                     ignored=description.ignored, ssml_voices=_ssml_voices(text, voices, folder),
                     pronunciations=pronunciations)


def default_seed(item_id: str, text: str) -> int:
    """The seed of an item that names none: from its id and text, so every rerun and every machine
    (a resumed run, a Ray actor) makes the same audio for it."""
    digest = hashlib.sha256(json.dumps([item_id, text], ensure_ascii=False).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _ssml_voices(text: str, voices, folder: pathlib.Path) -> tuple:
    """(name, path, design) of each ``<voice name>`` of an SSML text (none for plain text), read as ``voice``;
    the SSML is checked here (its line, column) and again, against the engine's limits, before the batch runs."""
    if not looks_like_ssml(text):
        return ()
    names = dict.fromkeys(s.voice for s in parse(text, Limits.local()).segments if s.voice is not None)
    return tuple((name, *voice_of(name, voices, folder)) for name in names)


def voice_of(voice: Optional[str], voices, folder: pathlib.Path) -> tuple[Optional[str], Optional[str]]:
    """(the voice file's absolute path, None) or (None, a named design) of a row's ``voice``, read as every
    front end reads it (``studio.vocabulary``): a saved voice in ``voices``, a named design, a ``.npz`` path
    (relative to the input's ``folder``)."""
    from ..studio.vocabulary import choose_voice

    if not voice:
        return None, None
    chosen = choose_voice(voice, voices.names(), listed_by=f"omnivoice voices --store {voices.describe()} list",
                          path_base=folder)
    if chosen.kind == "saved" and chosen.variant:
        raise InvalidInput(f"voice {voice!r} is a style variant; a batch row speaks with a saved voice's own clip "
                           f"(give {chosen.name!r}), or save the style's clip as a voice of its own")
    if chosen.kind == "saved":
        return str(voices.path(chosen.name).resolve()), None
    if chosen.kind == "path":
        return str(chosen.path), None
    return None, chosen.instruct
