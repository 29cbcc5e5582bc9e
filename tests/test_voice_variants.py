"""Style variants of a saved voice in the studio core (no model): the file and browser formats, the tag rule,
the limits, picking a variant from a description's words, and what renaming, exporting and importing carry."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from omnivoice_demo.storage.voice_file import Voice
from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded
from omnivoice_demo.studio import VoiceLibrary
from omnivoice_demo.studio.sharing import BrowserVoices
from omnivoice_demo.studio.variants import (add_variant, clean_tag, read_voice_description, remove_variant,
                                            split_variant_name)
from omnivoice_demo.studio.vocabulary import choose_voice, resolve_voice
from tests.test_vocabulary import a_voice


def clip(frames: int, transcript: str, offset: int = 0) -> Voice:
    codes = (np.arange(8 * frames, dtype=np.int64).reshape(8, frames) + offset) % 1024
    return Voice(codes=codes, transcript=transcript, rms=0.2)


def anna(*tags: str) -> Voice:
    voice = a_voice(12, "Anna's own words.")
    voice.name = "Anna"
    for number, tag in enumerate(tags):
        voice = add_variant(voice, tag, clip(5 + number, f"In a {tag} way.", offset=7 * (number + 1)), 8)
    return voice


def same(a: Voice, b: Voice) -> bool:
    return np.array_equal(a.codes, b.codes) and a.transcript == b.transcript and a.rms == b.rms


def test_variants_round_trip_through_the_file_and_the_browser_format(tmp_path):
    voice = anna("cheerful", "开心")
    loaded = Voice.load(voice.save(tmp_path / "anna.npz"))
    back = Voice.from_dict(json.loads(json.dumps(voice.to_dict())))
    for copy in (loaded, back):
        assert list(copy.variants) == ["cheerful", "开心"] and same(copy, voice)
        for tag in voice.variants:
            assert same(copy.variants[tag], voice.variants[tag]) and copy.variants[tag].name == tag
    assert Voice.load(a_voice().save(tmp_path / "plain.npz")).variants == {}   # a voice without variants as before


@pytest.mark.parametrize("tag, kept", [("cheerful", "cheerful"), ("  Whisper ", "Whisper"), ("very-sad", "very-sad"),
                                       ("开心", "开心"), ("ＣＡＬＭ", "CALM")])
def test_a_tag_is_one_clean_word(tag, kept):
    assert clean_tag(tag) == kept


@pytest.mark.parametrize("tag", ["", "   ", "two words", "a/b", "cheer_ful", "<b>", "x" * 33, "-sad", "\ud800", 7])
def test_a_bad_tag_is_refused_naming_the_rule(tag):
    with pytest.raises(InvalidInput, match="style tag") as caught:
        clean_tag(tag)
    assert caught.value.param == "tag"


def test_a_taken_tag_is_refused_case_folded_and_the_count_is_bounded():
    voice = anna("cheerful")
    with pytest.raises(InvalidInput, match="has a style 'cheerful' already"):
        add_variant(voice, "CHEERFUL", clip(4, "Again."), 8)
    two = add_variant(voice, "sad", clip(4, "Sad."), 2)
    with pytest.raises(ResourceLimitExceeded, match="max_voice_variants") as caught:
        add_variant(two, "calm", clip(4, "Calm."), 2)
    assert caught.value.param == "max_voice_variants"
    assert list(remove_variant(two, "SAD").variants) == ["cheerful"]
    with pytest.raises(InvalidInput, match="has no style 'angry'; its styles: cheerful, sad"):
        remove_variant(two, "angry")


def test_a_tag_word_of_the_description_picks_its_clip_and_the_rest_is_read_as_always():
    voice = anna("cheerful", "whisper", "开心")
    chosen, description = read_voice_description(voice, "Speak in a cheerful tone, a deep man.")
    assert same(chosen, voice.variants["cheerful"]) and chosen.name == "Anna (cheerful)"
    assert description.style == "cheerful" and "cheerful" not in description.ignored
    assert description.items == ("low pitch", "male")
    chosen, description = read_voice_description(voice, "Whisper")   # a tag wins over the design item
    assert same(chosen, voice.variants["whisper"]) and description.items == () and description.ignored == ()
    chosen, description = read_voice_description(voice, "开心的女声")
    assert description.style == "开心" and description.items == ("female",)
    chosen, description = read_voice_description(voice, "cheerful and whisper")   # one clip: the first word's
    assert description.style == "cheerful" and description.ignored == ("whisper",)
    assert any("one style at a time" in line for line in description.why)
    with pytest.raises(InvalidInput, match="more than one style"):
        read_voice_description(voice, "cheerful and whisper", strict=True)


def test_a_word_that_is_no_tag_keeps_the_main_clip_and_is_reported_with_the_styles():
    voice = anna("cheerful")
    chosen, description = read_voice_description(voice, "angry")
    assert chosen is voice and description.style is None and description.ignored == ("angry",)
    assert any("has the styles cheerful" in line for line in description.why)
    with pytest.raises(InvalidInput):
        read_voice_description(voice, "<b>cheerful</b>")   # the whole description is checked as before


def test_a_variant_is_named_as_a_voice_of_its_own():
    assert split_variant_name("Anna (cheerful)") == ("Anna", "cheerful")
    assert split_variant_name("Anna") is None
    chosen = choose_voice("anna (Cheerful)", ["Anna", "Bob"])
    assert (chosen.name, chosen.kind, chosen.variant) == ("Anna", "saved", "Cheerful")
    voice = anna("cheerful")
    found, design = resolve_voice("Anna (CHEERFUL)", ["Anna"], lambda name: voice)
    assert same(found, voice.variants["cheerful"]) and design is None
    with pytest.raises(InvalidInput, match="has no style 'sad'; its styles: cheerful"):
        resolve_voice("Anna (sad)", ["Anna"], lambda name: voice)
    with pytest.raises(InvalidInput, match="No saved voice"):
        choose_voice("Nobody (cheerful)", ["Anna"])


def test_rename_export_import_and_delete_carry_the_variants(tmp_path):
    library = VoiceLibrary(tmp_path / "voices")
    library.save(anna("cheerful", "sad"), "Anna")
    assert library.tags("Anna") == ["cheerful", "sad"]
    library.rename("Anna", "Anne")
    assert library.names() == ["Anne"] and library.tags("Anne") == ["cheerful", "sad"]
    files = library.export("Anne", tmp_path / "out")
    about = json.loads(files[1].read_text())
    assert [(v["tag"], v["id"]) for v in about["variants"]] == [("cheerful", "Anne (cheerful)"), ("sad", "Anne (sad)")]
    other = VoiceLibrary(tmp_path / "other")
    assert other.import_file(files[0]) == "Anne"
    imported = other.load("Anne")
    assert same(imported.variants["sad"], anna("cheerful", "sad").variants["sad"])
    changed = library.change("anne", lambda voice: remove_variant(voice, "cheerful"))
    assert changed.name == "Anne" and library.tags("Anne") == ["sad"]
    library.delete("Anne")
    assert library.names() == [] and list((tmp_path / "voices").iterdir()) == []


def test_an_import_over_the_variant_limit_or_with_a_bad_tag_is_refused_and_nothing_is_saved(tmp_path):
    voice = anna("cheerful", "sad", "calm")
    path = voice.save(tmp_path / "many.npz")
    strict = VoiceLibrary(tmp_path / "voices", max_variants=2)
    with pytest.raises(ResourceLimitExceeded, match="has 3 style variants; this server keeps at most 2"):
        strict.import_file(path)
    odd = anna()
    odd.variants = {"two words": clip(4, "Odd.")}
    with pytest.raises(InvalidInput, match="not a clean word"):
        strict.import_file(odd.save(tmp_path / "odd.npz"))
    with pytest.raises(ResourceLimitExceeded):
        BrowserVoices(max_frames=1500, max_variants=2).save({}, Voice.load(path), "Anna")
    assert strict.names() == []


def _member(archive: zipfile.ZipFile, name: str, shape: tuple) -> None:
    """A ``.npy`` member whose header declares ``shape`` and that holds no data (the header is what is checked)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False, "shape": shape})
    archive.writestr(name, header.getvalue())


def test_a_variant_member_over_the_limit_is_refused_before_it_is_read(tmp_path):
    """A zip bomb in a variant: its header declares 8 x 10^9 codes; the file is refused from the zip directory
    and the header, as the voice's own codes are."""
    good = anna("cheerful")
    path = good.save(tmp_path / "good.npz")
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(bomb, "w") as target:
        for item in source.infolist():
            if item.filename != "variant_0_codes.npy":
                target.writestr(item, source.read(item))
        _member(target, "variant_0_codes.npy", (8, 10**9))
    with pytest.raises(InvalidInput, match="variant_0_codes.*this server's limit"):
        Voice.load(bomb)
    with pytest.raises(InvalidInput, match="variant_0_codes"):
        VoiceLibrary(tmp_path / "voices").import_file(bomb)
    missing = tmp_path / "missing.npz"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(missing, "w") as target:
        for item in source.infolist():
            if not item.filename.startswith("variant_0_meta"):
                target.writestr(item, source.read(item))
    with pytest.raises(InvalidInput, match="no 'variant_0_meta' array"):
        Voice.load(missing)


def test_a_browser_keeps_variants_and_changes_them_under_the_voice_name():
    browser = BrowserVoices(max_frames=1500, max_variants=4)
    stored, name = browser.save({}, anna(), "Anna")
    stored, voice = browser.change(stored, "anna", lambda v: add_variant(v, "calm", clip(6, "Calmly."), 4))
    assert voice.name == "Anna" and list(browser.load(stored, "Anna").variants) == ["calm"]
    broken = {"Anna": dict(stored["Anna"], variants=["calm"])}
    with pytest.raises(InvalidInput, match="variants of type list"):
        browser.load(broken, "Anna")


def test_the_apps_description_note_names_the_style_clip_of_the_chosen_voice():
    from omnivoice_demo.ui.design import check_instruct

    note = check_instruct({"instruct": "cheerful, deep"}, voice=anna("cheerful"))
    assert "Style: **cheerful**" in note and "low pitch" in note and "Ignored" not in note
    plain = check_instruct({"instruct": "cheerful, deep"})
    assert "Style" not in plain and "Ignored: 'cheerful'" in plain
