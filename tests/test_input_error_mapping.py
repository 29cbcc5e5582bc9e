"""One mapping from our errors to each front end's (issue 58, point 1): nothing a user types ends in a traceback.

``omnivoice synth --text '<speak>Hi<break time="5xx"/></speak>'`` ended in ``TypeError: SsmlError.__init__() got an
unexpected keyword argument 'param'`` and "internal error, please report it": the command line re-raised an input
error with its flag through a constructor that not every error class has.  Here, table-driven:

* every input error class the package defines (found by walking ``InvalidInput``'s subclasses once every module is
  imported, so a new class is covered without a new line), and every other error of ours: said with a flag as the
  same class, and by each front end in its shape (the command line: status 2 and one ``error:`` line; the HTTP
  API: a 4xx in OpenAI's shape; the page: a ``gr.Error`` with the message, never "Internal error");
* every command of the command line's parser that takes text, SSML or files (found from the parser, so a new
  command fails here until its inputs are listed), run with malformed inputs: one error line, never "internal
  error" or a traceback.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import zipfile

import pytest

import omnivoice_demo
from omnivoice_demo.errors import InvalidInput, OmniVoiceError, ResourceLimitExceeded, one_line, refusal_of, reworded


def _import_every_module() -> None:
    for found in pkgutil.walk_packages(omnivoice_demo.__path__, "omnivoice_demo."):
        importlib.import_module(found.name)


def _subclasses(base: type) -> list[type]:
    seen, stack = {base}, [base]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen and sub.__module__.startswith("omnivoice_demo"):
                seen.add(sub)
                stack.append(sub)
    return sorted(seen, key=lambda kind: f"{kind.__module__}.{kind.__qualname__}")


_import_every_module()
INPUT_ERRORS = _subclasses(InvalidInput)
OTHER_ERRORS = [kind for kind in _subclasses(OmniVoiceError) if not issubclass(kind, InvalidInput)]
MESSAGE = "The thing you gave is wrong; give another"


def _value_for(parameter: inspect.Parameter):
    """A value for a required constructor argument, by its annotation (``from __future__`` strings)."""
    annotation = str(parameter.annotation)
    if "list" in annotation or "tuple" in annotation:
        return [(3, "a bad row")]
    if annotation.startswith(("int", "Optional[int]")):
        return 1
    if annotation.startswith(("float", "Optional[float]")):
        return 1.0
    if annotation.startswith("bool"):
        return False
    return MESSAGE


def an_instance(kind: type) -> OmniVoiceError:
    """``kind`` made as its own constructor asks (its required arguments filled in by their annotations)."""
    signature = inspect.signature(kind.__init__)
    required = [p for name, p in signature.parameters.items() if name != "self" and p.default is p.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return kind(*[_value_for(p) for p in required])


def test_the_walk_finds_the_input_errors_of_every_layer():
    names = {kind.__name__ for kind in INPUT_ERRORS}
    assert {"InvalidInput", "ResourceLimitExceeded", "SsmlError", "BatchInputError", "MalformedEvent",
            "NormalizerMissing", "SuggestionsMissing", "FolderNotWritable"} <= names, names
    assert {"ModelNotAvailable", "StoreUnavailable", "Busy", "StorageNotWritable"} <= {k.__name__ for k in OTHER_ERRORS}


@pytest.mark.parametrize("kind", INPUT_ERRORS, ids=lambda kind: kind.__name__)
def test_every_input_error_said_with_a_flag_keeps_its_class_and_what_it_carries(kind):
    from omnivoice_demo.cli.refusals import flagged

    error = an_instance(kind)

    def check():
        raise error

    with pytest.raises(kind) as caught:
        flagged("--text", check)
    said = caught.value
    assert type(said) is kind and str(said).startswith("--text: ") and one_line(error) in one_line(said)
    assert said.__cause__ is error
    assert {k: v for k, v in vars(said).items()} == {k: v for k, v in vars(error).items()}   # param, line, ...


@pytest.mark.parametrize("kind", INPUT_ERRORS, ids=lambda kind: kind.__name__)
def test_every_input_error_is_a_4xx_one_line_and_a_message_in_each_front_end(kind, capsys):
    import gradio as gr

    from omnivoice_demo.api.openai_errors import api_error, error_response
    from omnivoice_demo.cli.refusals import run_command
    from omnivoice_demo.ui.error_mapping import ui_error

    error = reworded(an_instance(kind), "--text: " + str(an_instance(kind)))
    said = refusal_of(error)
    assert said is not None and said.exit_status == 2

    def command(args):
        raise error

    assert run_command(command, None) == 2   # the command line: one line, status 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: {one_line(error)}"] and "internal error" not in err

    response = error_response(api_error(error))   # the HTTP API: a 4xx in OpenAI's shape
    body = json.loads(response.body)
    assert response.status_code == (413 if issubclass(kind, ResourceLimitExceeded) else 400)
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["message"] == one_line(error) and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["param"] == getattr(error, "param", None)

    shown = ui_error(error)   # the page: the message, never "Internal error"
    assert isinstance(shown, gr.Error) and shown.title != "Internal error"
    assert MESSAGE.split(";")[0] in shown.message


@pytest.mark.parametrize("kind", OTHER_ERRORS, ids=lambda kind: kind.__name__)
def test_every_other_error_of_ours_is_said_not_an_internal_error(kind, capsys):
    from omnivoice_demo.api.openai_errors import api_error
    from omnivoice_demo.cli.refusals import run_command
    from omnivoice_demo.ui.error_mapping import ui_error

    error = an_instance(kind)

    def command(args):
        raise error

    assert run_command(command, None) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {one_line(error)}"]
    answer = api_error(error)
    # a server says the visitors' words where an error has them (a voice store that is down: not where it lives)
    said = refusal_of(error).public or one_line(error)
    assert answer.status != 500 and answer.code != "internal_error" and answer.message == said
    assert ui_error(error).title != "Internal error"


def test_anything_else_is_an_internal_error_in_every_front_end(capsys):
    from omnivoice_demo.api.openai_errors import api_error
    from omnivoice_demo.cli.refusals import run_command
    from omnivoice_demo.ui.error_mapping import ui_error

    def command(args):
        raise KeyError("a bug of ours")

    assert refusal_of(KeyError("x")) is None
    assert run_command(command, None) == 1 and "internal error" in capsys.readouterr().err
    assert api_error(KeyError("x")).status == 500
    assert ui_error(KeyError("x")).title == "Internal error"


# --- every command that takes text, SSML or files -----------------------------------------------------------

#: commands that take no text, SSML or file from the user (servers: their requests are the HTTP API's tests)
NO_USER_INPUT = {"serve", "wyoming", "languages"}


def commands_of_the_parser() -> dict:
    from omnivoice_demo.cli.main import build_parser

    parser = build_parser()
    found = {}
    for action in parser._subparsers._group_actions:   # the subcommands, as the parser holds them
        for name, sub in action.choices.items():
            nested = [a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"]
            if nested:   # voices list|delete|...|variant add|list|delete
                for inner_action in nested:
                    for inner, inner_parser in inner_action.choices.items():
                        deeper = [a for a in inner_parser._actions if a.__class__.__name__ == "_SubParsersAction"]
                        names = [f"{name} {inner} {leaf}" for a in deeper for leaf in a.choices] or [f"{name} {inner}"]
                        found.update({n: inner_parser for n in names})
            else:
                found[name] = sub
    return found


def _garbage_npz(path):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("codes.npy", b"not a numpy array")
    return path


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(data, bytes) else path.write_text)(data)
    return path


def malformed_inputs(tmp, model: str) -> dict[str, list[tuple[list[str], int, str]]]:
    """command -> [(arguments, exit status, a word the error line must hold)]: what a user types wrong.
    Status 3 (a batch's bad row): no error line; the word is on standard output, in the row's line."""
    missing_model = str(tmp / "no-such-model")
    not_audio = _write(tmp / "notes.wav", "these are words, not audio\n")
    not_utf8 = _write(tmp / "latin1.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"))
    synth = ["synth", "--model", missing_model, "--output", str(tmp / "out.wav")]
    speak = ["synth", "--model", model, "--output", str(tmp / "out.wav"), "--steps", "2"]
    return {
        "synth": [
            (synth + ["--text", '<speak>Hi<break time="5xx"/></speak>'], 2, "5xx"),   # the issue's
            (synth + ["--text", "<speak>Hi <prosody rate='fast'>there</speak>"], 2, "SSML"),
            (synth + ["--ssml", "--text", "<speak><audio src='x.wav'/>Hi</speak>"], 2, "SSML"),
            (synth + ["--text", "Say <|text_end|> now."], 2, "control token"),
            (synth + ["--text", "x" * 2001, "--limits", "public"], 2, "max_text_chars"),
            (synth + ["--text", "Hi", "--ref-audio", str(not_audio)], 2, "--ref-audio"),
            (synth + ["--text", "Hi", "--voice", str(tmp / "nobody.npz")], 2, "No saved voice"),
            (synth + ["--text", "Hi", "--voice", str(_garbage_npz(tmp / "garbage.npz"))], 2, "garbage"),
            (synth + ["--text", "Hi", "--lexicon", str(not_utf8)], 2, "latin1"),
            (synth + ["--script", str(tmp / "no-script.txt")], 2, "--script"),
            (synth + ["--script", str(not_utf8)], 2, "UTF-8"),
            (synth + ["--text", "Hi", "--output", str(tmp / "out.mp4")], 2, "out.mp4"),
            # every limit the request decides, before the model is loaded (the planner reads the tokenizer only)
            (speak + ["--text", "One. Two! Three? " * 40, "--max-chunks", "1"], 2, "max_chunks"),
            (speak + ["--text", "A sentence of a few words.", "--max-audio-seconds", "0.5"], 2, "max_audio_seconds"),
            (speak + ["--text", "A sentence of a few words.", "--max-prompt-tokens", "3"], 2, "max_prompt_tokens"),
            (speak + ["--text", "Hi", "--steps", "40", "--max-steps", "8"], 2, "max_steps"),
            (speak + ["--ssml", "--text", "<speak>" + "<s>Hi.</s>" * 30 + "</speak>", "--max-ssml-elements", "5"], 2,
             "max_ssml_elements"),
        ],
        "codec": [(["codec", "--model", model, "--input", str(not_audio), "--output", str(tmp / "rt.wav")], 2,
                   "notes.wav")],
        "batch": [
            (["batch", "--model", missing_model, "--input", str(tmp / "none.jsonl"), "--output", str(tmp / "b")], 2,
             "none.jsonl"),
            # a bad row fails alone (status 3), listed with its line on standard output
            (["batch", "--model", missing_model, "--input", str(not_utf8), "--output", str(tmp / "b")], 3, "UTF-8"),
            (["batch", "--model", missing_model, "--input", str(_write(tmp / "rows.csv", "id,voice\n1,alloy\n")),
              "--output", str(tmp / "b")], 2, "text"),
        ],
        "book": [
            (["book", "--model", missing_model, str(tmp / "none.md"), "--output", str(tmp / "bk")], 2,
             "none.md"),
            (["book", "--model", missing_model, str(_write(tmp / "broken.epub", b"PK\x03\x04 not a zip")),
              "--output", str(tmp / "bk")], 2, "broken.epub"),
            (["book", "--model", missing_model, str(_write(tmp / "empty.md", "\n\n")),
              "--output", str(tmp / "bk")], 2, "no chapter"),
        ],
        "eval": [
            (["eval", "--model", missing_model, "--output", str(tmp / "e"), "--candidate", "preset=fast",
              "--asr-model", "none", "--items", str(tmp / "none.jsonl")], 2, "none.jsonl"),
            (["eval", "--model", missing_model, "--output", str(tmp / "e"), "--candidate", "preset=fast",
              "--asr-model", "none", "--items", str(_write(tmp / "items.jsonl", "{not json\n"))], 2, "items.jsonl"),
            (["eval", "--model", missing_model, "--output", str(tmp / "e"), "--candidate", "preset=fast",
              "--asr-model", "none", "--ref-audio", str(not_audio)], 2, "notes.wav"),
        ],
        "voices import": [(["voices", "import", str(not_audio)], 2, "notes.wav"),
                          (["voices", "import", str(_garbage_npz(tmp / "bad.npz"))], 2, "bad.npz")],
        "voices variant add": [(["voices", "variant", "add", "Nobody", "cheerful", str(not_audio), "--consent"], 2,
                                "Nobody")],
        "voices delete": [(["voices", "delete", "Nobody"], 2, "Nobody")],
        "voices rename": [(["voices", "rename", "Nobody", "../../etc"], 2, "Nobody")],
        "voices export": [(["voices", "export", "Nobody", str(tmp / "exported")], 2, "Nobody")],
        "voices list": [],   # reads only the store
        "voices variant list": [(["voices", "variant", "list", "Nobody"], 2, "Nobody")],
        "voices variant delete": [(["voices", "variant", "delete", "Nobody", "sad"], 2, "Nobody")],
    }


def test_every_command_with_user_input_is_in_the_table(tmp_path):
    listed = set(malformed_inputs(tmp_path, "model"))
    assert set(commands_of_the_parser()) == listed | NO_USER_INPUT, "a command's malformed inputs are not listed"


@pytest.fixture
def a_home(tmp_path, monkeypatch):
    """The app's data, cache and Hub in ``tmp_path``, offline."""
    for name, value in {"OMNIVOICE_DATA": tmp_path / "data", "OMNIVOICE_CACHE": tmp_path / "cache",
                        "HF_HOME": tmp_path / "hf", "HF_HUB_OFFLINE": "1", "OMNIVOICE_ASR_MODEL": ""}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("OMNIVOICE_VOICE_STORE", raising=False)
    return tmp_path


def _refuse_to_load(patch):
    """The engine's graphs are never loaded: a check made after the load would fail the test as an internal
    error (the planner, ``engine.planner.TextPlanner``, reads only the tokenizer)."""
    from omnivoice_demo.engine import loop

    def no_load(self, *args, **kwargs):
        raise RuntimeError("the model was loaded before the input was checked")

    patch.setattr(loop.OmniVoiceEngine, "__init__", no_load)


def test_no_malformed_input_of_any_command_ends_in_an_internal_error(a_home, tiny_fp32_folder, capsys):
    from omnivoice_demo.cli.main import main

    table = malformed_inputs(a_home, str(tiny_fp32_folder))
    wrong = []
    for command, rows in table.items():
        for argv, status, word in rows:
            with pytest.MonkeyPatch.context() as patch:
                if argv[0] != "codec":   # codec reads its input only with the model loaded
                    _refuse_to_load(patch)
                try:
                    rc = main(argv)
                except SystemExit as stop:   # a flag's value refused while the arguments are read
                    rc = stop.code
            out, err = capsys.readouterr()
            errors = [line for line in err.splitlines() if line.startswith("error: ")]
            said = errors == [] and word in out if status == 3 else (
                len(errors) == 1 and err.strip().endswith(errors[0]) and word in errors[0])
            if "internal error" in out + err or "Traceback" in out + err or rc != status or not said:
                wrong.append(f"{command} {argv[-4:]} (status {rc}, wanted {status} and {word!r}): {err[-1000:]}")
    assert not wrong, "\n\n".join(wrong)


def test_the_issues_command_line_says_one_line_and_exits_2(a_home):
    """The command of issue 58, as a user runs it (a process of its own): no traceback, status 2, one line."""
    done = subprocess.run([sys.executable, "-m", "omnivoice_demo", "synth", "--model", str(a_home / "none"),
                           "--text", '<speak>Hi<break time="5xx"/></speak>'], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ))
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "error: --text: SSML (line 1, column 10): <break time> must be like 500ms or 1.5s, got '5xx'."]


def test_the_command_lines_limits_are_the_users_machines_and_the_servers_stay_public():
    from omnivoice_demo.cli.main import build_parser
    from omnivoice_demo.settings.limits import Limits, limits_from_arguments

    parser = build_parser()
    for argv in (["synth", "--text", "Hi"], ["codec", "--input", "a.wav"], ["eval", "--output", "o"],
                 ["batch", "--input", "i.jsonl", "--output", "o"], ["book", "b.md", "--output", "o"]):
        assert limits_from_arguments(parser.parse_args(argv)) == Limits.local(), argv
    assert limits_from_arguments(parser.parse_args(["synth", "--text", "Hi", "--limits", "public"])) == Limits()
    for argv in (["serve"], ["wyoming"], ["voices", "variant", "add", "Anna", "calm", "clip.wav"]):
        assert limits_from_arguments(parser.parse_args(argv)) == Limits(), argv
