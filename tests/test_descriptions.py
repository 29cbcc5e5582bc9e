"""A voice described in one's own words (``text.descriptions``): what each description gives, that the
model's own items give today's prompt token for token, strict and lenient reading, bad input, and the
HTTP API's headers (the real router on a FastAPI test client, the tiny engine in process)."""

from __future__ import annotations

import random
import urllib.parse
import warnings

import pytest

from omnivoice_demo.text import voice_design
from omnivoice_demo.settings.limits import Limits
from omnivoice_demo.text.prompt import build_condition_ids
from omnivoice_demo.errors import InvalidInput, ResourceLimitExceeded
from omnivoice_demo.text.descriptions import TONE_WHY, read_description
from omnivoice_demo.studio.vocabulary import DESIGNS
from tests.test_malformed_requests import api, assert_4xx, speech  # noqa: F401 - fixtures and helpers

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from omnivoice.models import omnivoice as ref

#: description -> (items applied, in order; words ignored, as written)
TABLE = [
    # the model's own items, in either language and any case
    ("male, low pitch, british accent", ["male", "low pitch", "british accent"], []),
    ("Female, Young Adult, High Pitch", ["female", "young adult", "high pitch"], []),
    ("男，青年，低音调", ["male", "young adult", "low pitch"], []),
    ("女，四川话", ["female", "四川话"], []),
    # synonyms and gendered nouns
    ("a deep, calm British man", ["low pitch", "british accent", "male"], ["calm"]),
    ("deep voice", ["low pitch"], []),
    ("bass", ["low pitch"], []),
    ("mid pitch", ["moderate pitch"], []),
    ("an old man", ["elderly", "male"], []),
    ("a senior lady", ["elderly", "female"], []),
    ("the voice of a retired teacher", ["elderly"], ["teacher"]),
    ("a kid", ["child"], []),
    ("a boy", ["male", "child"], []),
    ("little girl", ["female", "child"], []),
    ("teenage girl", ["teenager", "female"], []),      # the age written out wins over the noun's
    ("young woman", ["young adult", "female"], []),
    ("a 30 year old man", ["young adult", "male"], []),
    ("a 70-year-old woman", ["elderly", "female"], []),
    ("grandpa", ["male", "elderly"], []),
    ("middle-aged man with a UK accent", ["middle-aged", "male", "british accent"], []),
    ("an English gentleman", ["british accent", "male"], []),
    ("Aussie woman", ["australian accent", "female"], []),
    ("American guy", ["american accent", "male"], []),
    ("deep-voiced Russian man", ["low pitch", "russian accent", "male"], []),
    ("low pitched female voice with australian accent", ["low pitch", "female", "australian accent"], []),
    ("Sichuan dialect, male", ["四川话", "male"], []),
    ("whispering", ["whisper"], []),
    ("hushed voice", ["whisper"], []),
    # degree words
    ("a very deep voice", ["very low pitch"], []),
    ("extremely high-pitched girl", ["very high pitch", "female", "child"], []),
    ("slightly high-pitched", ["high pitch"], []),
    # negation
    ("not whispering", [], []),
    ("a woman, not whispering", ["female"], []),
    ("not a child", [], []),
    ("not", [], ["not"]),
    # conflicts: reported, none applied
    ("male, female", [], ["male", "female"]),
    ("男，女", [], ["男", "女"]),
    ("boy and girl", ["child"], ["boy", "girl"]),
    ("young old man", ["male"], ["young", "old"]),
    ("high and low", [], ["high", "low"]),
    ("whisper, not whispering", [], ["whisper", "not whispering"]),
    ("british accent, 四川话", [], ["british accent", "四川话"]),
    # tone, typos and nonsense
    ("Speak in a cheerful and positive tone.", [], ["cheerful", "positive"]),
    ("speak cheerfully", [], ["cheerfully"]),
    ("a very old grandma speaking softly", ["elderly", "female"], ["softly"]),
    ("femal", [], ["femal"]),
    ("asdf qwerty", [], ["asdf", "qwerty"]),
    # Chinese
    ("温柔的年轻女声", ["young adult", "female"], ["温柔"]),
    ("低沉的男声", ["low pitch", "male"], []),
    ("老人", ["elderly"], []),
    ("非常低沉的东北老爷爷", ["very low pitch", "东北话", "male", "elderly"], []),
    ("一个小女孩", ["female", "child"], []),
    ("不要耳语的女声", ["female"], []),
    ("英式口音的男人", ["british accent", "male"], []),
    ("用四川话说", ["四川话"], []),
    ("悄悄话", ["whisper"], []),
    ("甜美的小姐姐", ["female"], ["甜美"]),
    ("嗯嗯啊啊", [], ["嗯嗯啊啊"]),
]


@pytest.mark.parametrize("text, items, ignored", TABLE, ids=[row[0] for row in TABLE])
def test_a_description_gives_its_items_and_the_words_it_ignores(text, items, ignored):
    description = read_description(text)
    assert list(description.items) == items
    assert list(description.ignored) == ignored
    assert description.instruct == (", ".join(items) or None)
    if ignored or text.startswith("not"):
        assert description.why, "every word left out (and every negation) is explained"


def test_the_reasons_say_why():
    why = read_description("Speak in a cheerful and positive tone.").why
    assert why == (f"'cheerful', 'positive': {TONE_WHY}",)
    assert "did you mean 'female'" in read_description("femal").why[0]
    assert "conflict (gender: male vs female)" in read_description("male, female").why[0]
    assert "'whisper' is left out" in read_description("not whispering").why[0]
    assert "cannot be mixed" in read_description("british accent, 四川话").why[0]
    note = read_description("a deep, calm British man").note()
    assert note.startswith("voice description: applied 'low pitch, british accent, male'") and "calm" in note
    assert "\n" not in note
    assert read_description("cheerful").note().startswith("voice description: no item applied")


def test_empty_is_no_description():
    for text in (None, "", "   "):
        assert read_description(text).text is None and read_description(text).instruct is None


def test_strict_refuses_what_it_does_not_understand_with_the_known_items():
    assert read_description("a deep, old British man", strict=True).items == ("low pitch", "elderly", "british accent",
                                                                               "male")
    for text in ("a cheerful man", "male, female", "femal"):
        with pytest.raises(InvalidInput, match="cannot apply") as caught:
            read_description(text, strict=True, param="instructions")
        assert "Known items: american accent" in str(caught.value) and "四川话" in str(caught.value)
        assert caught.value.param == "instructions"


# --- the model's own items: today's items, today's prompt -----------------------------------------------

def _exact_item_descriptions(count: int, seed: int = 5):
    """Random valid instructs made of the model's items (random case, order, separator and language)."""
    rng = random.Random(seed)
    pool = [list(c.keys()) + list(c.values()) if isinstance(c, dict) else list(c)
            for c in voice_design.INSTRUCT_CATEGORIES.values()]
    made = 0
    while made < count:
        items = [rng.choice(group) for group in pool if rng.random() < 0.5]
        items = [rng.choice([i, i.upper(), i.title(), f" {i} "]) for i in items]
        rng.shuffle(items)
        instruct = rng.choice([", ", ",", "，", " ， "]).join(items)
        use_zh = rng.random() < 0.5
        try:
            expected = ref._resolve_instruct(instruct, use_zh=use_zh)
        except ValueError:
            continue   # refused today (a dialect with an accent): not an exact-items description
        made += 1
        yield instruct, use_zh, expected


def test_exact_items_resolve_as_the_reference_does():
    for instruct, use_zh, expected in _exact_item_descriptions(600):
        description = read_description(instruct, strict=True)
        assert not description.ignored, instruct
        assert ref._resolve_instruct(description.instruct, use_zh=use_zh) == expected, instruct


@pytest.mark.parametrize("text", ["Good morning, everyone.", "今天天气很好。"])
def test_exact_items_give_todays_prompt_token_for_token(engine, text):
    for instruct, _, _ in _exact_item_descriptions(40, seed=11):
        today = engine.prepare(text, instruct=instruct, num_step=1, seed=1)
        read = engine.prepare(text, instruct=read_description(instruct).instruct, num_step=1, seed=1)
        assert read.instruct == today.instruct, instruct
        ids = [build_condition_ids(plan.chunks[0], engine.tokenizer, language=plan.language, instruct=plan.instruct,
                                   denoise=plan.config.denoise, has_reference=False) for plan in (today, read)]
        assert list(ids[0]) == list(ids[1]), instruct


# --- bad input ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, error, words", [
    ("word " * 10_000, ResourceLimitExceeded, "max_text_chars"),
    ("deep " * 100, ResourceLimitExceeded, "100 words; the limit is 60 words (max_description_words)"),
    ("<speak>a deep voice</speak>", InvalidInput, "markup ('<speak>')"),
    ("a deep &amp; calm voice", InvalidInput, "markup"),
    ("a deep \ud800 voice", InvalidInput, "not valid Unicode"),
    ("a deep\x00voice", InvalidInput, "control character (U+0000"),
    ("a deep\x1b[31m voice", InvalidInput, "control character (U+001B"),
])
def test_bad_descriptions_are_refused_with_a_reason(text, error, words):
    with pytest.raises(error) as caught:
        read_description(text)
    assert words in str(caught.value)


def test_a_description_counts_against_the_operators_limits():
    with pytest.raises(ResourceLimitExceeded, match="max_text_chars"):
        read_description("a deep voice " * 10, limits=Limits(max_text_chars=50))
    assert read_description("deep " * 100, limits=Limits.local()).items == ("low pitch",)


# --- the HTTP API: lenient by default, strict when asked, and the two headers --------------------------

def _speak(api, **fields):
    return speech(api, dict({"input": "Hello there.", "stream": False, "steps": 1, "seed": 3,
                             "response_format": "wav"}, **fields))


def test_openais_example_keeps_the_voice_and_reports_the_tone(api):
    response = _speak(api, voice="coral", instructions="Speak in a cheerful and positive tone.")
    assert response.status_code == 200, response.text
    assert response.headers["X-OmniVoice-Instruct"] == DESIGNS["coral"]
    assert response.headers["X-OmniVoice-Ignored"] == "cheerful, positive"
    assert response.content[:4] == b"RIFF"


def test_instructions_items_replace_the_voices_design(api):
    response = _speak(api, voice="coral", instructions="a deep, calm British man")
    assert response.headers["X-OmniVoice-Instruct"] == "low pitch, british accent, male"
    assert response.headers["X-OmniVoice-Ignored"] == "calm"
    plain = _speak(api, voice="auto", instructions="cheerful")   # no item, no voice: the model chooses
    assert plain.headers["X-OmniVoice-Instruct"] == "" and plain.headers["X-OmniVoice-Ignored"] == "cheerful"


def test_chinese_in_the_headers_is_percent_encoded(api):
    response = _speak(api, input="你好，欢迎。", instructions="温柔的年轻女声")
    assert response.status_code == 200, response.text
    raw = response.headers.raw
    values = {k.decode("latin-1").lower(): v for k, v in raw}
    assert values["x-omnivoice-instruct"].isascii() and values["x-omnivoice-ignored"].isascii()
    assert urllib.parse.unquote(response.headers["X-OmniVoice-Instruct"]) == "青年，女"
    assert urllib.parse.unquote(response.headers["X-OmniVoice-Ignored"]) == "温柔"


def test_strict_refuses_with_the_known_items(api):
    message = assert_4xx(_speak(api, voice="coral", instructions="Speak in a cheerful tone.", strict=True), 400,
                         "cannot apply")
    assert "Known items" in message and "british accent" in message
    assert _speak(api, instructions="a deep British man", strict=True).status_code == 200
    assert_4xx(_speak(api, instructions="male", strict="yes"), 400, "strict must be true or false")


@pytest.mark.parametrize("instructions, status, words", [
    ("word " * 10_000, 413, "max_text_chars"),
    ("<b>male</b>", 400, "markup"),
    ("male\x07", 400, "control character"),
])
def test_bad_instructions_are_a_4xx(api, instructions, status, words):
    assert_4xx(_speak(api, instructions=instructions), status, words)


def test_every_openai_voice_is_a_design_listed_in_the_docs_table():
    import pathlib
    import re

    openai_voices = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse",
                     "marin", "cedar")
    page = (pathlib.Path(__file__).parents[1] / "docs" / "http-api.md").read_text()
    table = dict(re.findall(r"^\| `(\w+)` \| ([a-z ,-]+) \|$", page, flags=re.M))
    assert table == DESIGNS and set(openai_voices) <= set(table)
    for design in DESIGNS.values():
        assert read_description(design, strict=True).instruct == voice_design.resolve_instruct(design)


def test_header_values_keep_printable_ascii_and_percent_encode_the_rest():
    from omnivoice_demo.api.speech import header_text

    for value, sent in (("cheerful, positive", "cheerful, positive"), ("50% \\ 'x'", "50%25 \\ 'x'"),
                        ("青年", "%E9%9D%92%E5%B9%B4"), ("é", "%C3%A9")):
        assert header_text(value) == sent and urllib.parse.unquote(sent) == value
        sent.encode("latin-1")
