"""Text side of the engine against the reference ``omnivoice`` package.

Languages, voice-design instructs, text shaping and tokenisation, duration
estimation and chunking: each is compared with the reference functions on
many inputs.  The reference's model methods are called on a stand-in object
that has only the attributes they use, so no model is loaded.
"""

from __future__ import annotations

import json
import random
import types
import warnings

import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import torch
    from omnivoice.models import omnivoice as ref
    from omnivoice.utils import text as ref_text
    from omnivoice.utils.duration import RuleDurationEstimator
    from omnivoice.utils.lang_map import LANG_IDS, LANG_NAME_TO_ID, lang_display_name

from omnivoice_demo.engine import duration
from omnivoice_demo.text import languages, prompt as text, voice_design


class RefModel:
    """The reference methods this file calls, on an object without weights."""

    _ensure_list = ref.OmniVoice._ensure_list
    _estimate_target_tokens = ref.OmniVoice._estimate_target_tokens
    _preprocess_all = ref.OmniVoice._preprocess_all
    _prepare_inference_inputs = ref.OmniVoice._prepare_inference_inputs
    _generate_chunked = ref.OmniVoice._generate_chunked

    def __init__(self, tokenizer=None):
        self.text_tokenizer = tokenizer
        self.duration_estimator = RuleDurationEstimator()
        self.audio_tokenizer = types.SimpleNamespace(config=types.SimpleNamespace(frame_rate=25, hop_length=960))
        self.config = types.SimpleNamespace(num_audio_codebook=8, audio_mask_id=1024)
        self.device = torch.device("cpu")
        self.calls = []

    def _generate_iterative(self, task, gen_config):
        """Record what chunked generation asks for; return all-zero codes of the asked length."""
        self.calls.append((list(task.texts), list(task.target_lens), list(task.ref_texts),
                           [None if r is None else r.shape[-1] for r in task.ref_audio_tokens]))
        return [torch.zeros(8, n, dtype=torch.long) for n in task.target_lens]


MULTILINGUAL = [
    "Hello, world.",
    "Nice to meet you.",
    "The quick brown fox jumps over the lazy dog! Isn't it?",
    "你好，世界！今天天气很好。",
    "我们明天去北京 and then Shanghai（上海）.",
    "こんにちは、世界。カタカナもあります。",
    "안녕하세요, 세계!",
    "Привет, мир! Как дела?",
    "Γειά σου Κόσμε",
    "مَرْحَبًا بِالْعَالَم",
    "شكراـــ جزيلا",
    "שלום עולם",
    "नमस्ते दुनिया",
    "வணக்கம் உலகம்",
    "สวัสดีชาวโลก",
    "ສະບາຍດີ",
    "ជំរាបសួរ",
    "မင်္ဂလာပါ",
    "Chào thế giới, tôi là người Việt Nam.",
    "Բարեւ աշխարհ",
    "გამარჯობა მსოფლიო",
    "ሰላም ልዑል",
    "ꆈꌠꁱꂷ",
    "Hello 🌍! This is fun 🎉",
    "Call me at 555-0199 on 2024-01-02, ok?",
    "𠀀𠀁 upper-plane ideographs 𝐀𝐁",
    "Tab\tseparated\tand\nnew\r\nlines",
    "[laughter] That was funny [sigh] anyway.",
    "Ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ",
    "ᚠᚢᚦᚨᚱᚲ ᎣᏏᏲ ᠮᠣᠩᠭᠣᠯ",
    " ",
    ".",
    "a",
]


# ---------------------------------------------------------------------------
# Languages
# ---------------------------------------------------------------------------


def test_language_table_is_the_reference_table():
    assert languages.LANGUAGE_COUNT == len(LANG_IDS) == 646
    assert languages.supported_language_codes() == LANG_IDS
    assert languages.supported_language_names() == set(LANG_NAME_TO_ID)
    entries = json.loads(languages._DATA.read_text(encoding="utf-8"))["languages"]
    assert {e["name"]: e["code"] for e in entries} == LANG_NAME_TO_ID
    assert all(e["display"] == lang_display_name(e["name"]) for e in entries)


def test_every_name_and_code_resolves_as_the_reference():
    inputs = [None, "none", "None", "NONE"]
    for name, code in LANG_NAME_TO_ID.items():
        inputs += [name, name.upper(), lang_display_name(name), code]
    for value in inputs:
        assert languages.resolve_language(value) == ref._resolve_language(value), value


def test_language_extensions_and_choices():
    # Inputs the reference does not resolve (it warns and returns None): documented differences.
    assert languages.resolve_language("auto") is None
    assert languages.resolve_language("") is None
    assert languages.resolve_language("  English ") == "en"
    assert languages.resolve_language("EN") == "en"
    choices = languages.language_choices()
    assert len(choices) == 646
    assert [d.casefold() for d, _ in choices] == sorted(d.casefold() for d, _ in choices)
    assert ("English", "en") in choices and ("Chinese", "zh") in choices
    assert languages.language_display_name("yue") == lang_display_name(
        next(n for n, c in LANG_NAME_TO_ID.items() if c == "yue"))


@pytest.mark.parametrize("bad, expected", [("Englsh", "English (en)"), ("Chinse", "Chinese (zh)"),
                                            ("xx-unknown-xx", None)])
def test_unknown_language_raises_with_suggestions(bad, expected):
    with pytest.raises(ValueError) as err:
        languages.resolve_language(bad)
    message = str(err.value)
    assert repr(bad) in message and "omnivoice languages" in message
    if expected:
        assert expected in message
    else:
        assert "Did you mean" not in message


# ---------------------------------------------------------------------------
# Voice design
# ---------------------------------------------------------------------------


def _reference_instruct(instruct, use_zh):
    try:
        return "ok", ref._resolve_instruct(instruct, use_zh=use_zh)
    except ValueError as e:
        return "error", str(e)


def _our_instruct(instruct, use_zh):
    try:
        return "ok", voice_design.resolve_instruct(instruct, use_zh=use_zh)
    except ValueError as e:
        return "error", str(e)


def test_instruct_tables_are_the_reference_tables():
    from omnivoice.utils import voice_design as rvd

    assert voice_design.INSTRUCT_EN_TO_ZH == rvd._INSTRUCT_EN_TO_ZH
    assert voice_design.INSTRUCT_ZH_TO_EN == rvd._INSTRUCT_ZH_TO_EN
    assert voice_design._MUTUALLY_EXCLUSIVE == rvd._INSTRUCT_MUTUALLY_EXCLUSIVE
    assert voice_design.VALID_EN == rvd._INSTRUCT_VALID_EN
    assert voice_design.VALID_ZH == rvd._INSTRUCT_VALID_ZH
    cats = voice_design.instruct_categories()
    assert list(cats) == ["gender", "age", "pitch", "style", "accent", "dialect"]
    assert cats["gender"] == ["male", "female"] and "四川话" in cats["dialect"]
    assert voice_design.instruct_categories(chinese=True)["age"][0] == "儿童"


INSTRUCT_CASES = [
    None, "", "   ", "male", "Female", "MALE, Elderly", "male，elderly", ", male, ,",
    "female, young adult, high pitch, whisper", "male, british accent", "女，四川话",
    "男，青年，低音调，耳语", "male, 四川话", "female, 低音调", "男, indian accent",
    "whisper，very low pitch", "  child ,  teenager  ",  # same category
    "male, female", "男，女", "male, 女", "high pitch, very high pitch", "american accent, british accent",
    "河南话，东北话", "四川话, american accent",  # dialect + accent
    "mal", "femail, british acent", "Male, Indian Accnt", "robot voice", "四川", "低音",
    "male, child, low pitch, whisper, russian accent", "儿童，极高音调，青岛话",
]


@pytest.mark.parametrize("use_zh", [False, True])
def test_instruct_cases_match_reference(use_zh):
    for case in INSTRUCT_CASES:
        assert _our_instruct(case, use_zh) == _reference_instruct(case, use_zh), case


def test_instruct_random_combinations_match_reference():
    rng = random.Random(1)
    cats = list(voice_design.INSTRUCT_CATEGORIES.values())
    pool = [list(c.keys()) + list(c.values()) if isinstance(c, dict) else list(c) for c in cats]
    for _ in range(600):
        items = []
        for group in pool:
            for _ in range(rng.choice([0, 0, 1, 1, 2])):
                item = rng.choice(group)
                items.append(rng.choice([item, item.upper(), item.title(), f" {item} "]))
        rng.shuffle(items)
        sep = rng.choice([", ", ",", "，", " ， "])
        instruct = sep.join(items)
        if rng.random() < 0.2 and items:
            instruct = instruct.replace(items[0].strip()[:3], "xq")  # a misspelling
        use_zh = rng.random() < 0.5
        assert _our_instruct(instruct, use_zh) == _reference_instruct(instruct, use_zh), instruct


def test_chinese_text_switches_instruct_language():
    for t in ["你好", "Hello", "", None, "Hello 世界"]:
        assert voice_design.has_chinese(t) == bool(t and ref._ZH_RE.search(t))
    assert voice_design.resolve_instruct("male, low pitch", use_zh=voice_design.has_chinese("你好")) == "男，低音调"
    assert voice_design.resolve_instruct("男，低音调", use_zh=voice_design.has_chinese("Hi")) == "male, low pitch"
    with pytest.raises(ValueError, match="did you mean 'male'"):
        voice_design.resolve_instruct("mal")


# ---------------------------------------------------------------------------
# Text shaping
# ---------------------------------------------------------------------------

TEXTS = MULTILINGUAL + [
    "  leading and trailing  ",
    "Mr. Smith went to Washington. He met Dr. Brown at 5 p.m. on Jan. 3rd!",
    "“Quoted,” she said. ‘Single’ too… Done?!",
    "第一句。第二句！第三句？“引号”结束。",
    "no punctuation at all here just words and more words and more words",
    "e.g. this, i.e. that; vs. the other: fine.",
    "Short. A. B. C. Longer sentence here, with commas, and more; clauses: end.",
    ".,;Leading punctuation then text.",
    "括号（全角）和 spaces 之间 的 文本",
    "x" * 300,
]


def test_combine_text_and_add_punctuation_match_reference():
    refs = [None, "", "Reference text.", "参考文本", "  spaced ref  "]
    for t in TEXTS:
        for r in refs:
            assert text.combine_text(t, ref_text=r) == ref._combine_text(t, ref_text=r), (t, r)
        assert text.add_punctuation(t) == ref_text.add_punctuation(t), t


def test_chunk_text_matches_reference():
    long_text = " ".join(TEXTS)
    rng = random.Random(0)
    samples = TEXTS + [long_text] + [" ".join(rng.sample(TEXTS, 5)) for _ in range(30)]
    for t in samples:
        for chunk_len in (1, 3, 10, 25, 60, 200, 10_000):
            for min_len in (None, 3, 20):
                assert text.chunk_text_punctuation(t, chunk_len, min_len) == ref_text.chunk_text_punctuation(
                    t, chunk_len, min_len), (t, chunk_len, min_len)


@pytest.mark.parametrize("bad", ["", "   ", "\n\t", None])
def test_empty_text_is_rejected(bad):
    with pytest.raises(ValueError, match="is empty; type the text to speak"):
        text.validate_text(bad)


# ---------------------------------------------------------------------------
# Tokenisation
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizers_pair(tiny_checkpoint):
    from transformers import AutoTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf = AutoTokenizer.from_pretrained(str(tiny_checkpoint))
    return hf, text.load_text_tokenizer(tiny_checkpoint)


TAGGED = [
    "[laughter]",
    "Hello [laughter] world",
    "[sigh]开头和结尾[question-en]",
    "你好[laughter]世界[surprise-wa]！",
    "[laughter][sigh][dissatisfaction-hnn]",
    "Not a tag: [laugh] [Laughter] [ laughter ] [unknown-tag]",
    "<|text_start|>Mixed [confirmation-en] text 中文 [question-yi]<|text_end|>",
    "<|text_start|>[surprise-yo]<|text_end|>",
    "Emoji 🎉 and [question-ah] numbers 12345",
    "",
] + [f"<|text_start|>{t}<|text_end|>" for t in MULTILINGUAL]


def test_hf_tokenizer_adds_no_special_tokens(tokenizers_pair):
    hf, tok = tokenizers_pair
    for s in MULTILINGUAL + ["<|lang_start|>en<|lang_end|>", "<|denoise|><|instruct_start|>None<|instruct_end|>"]:
        assert hf(s).input_ids == tok.encode(s).ids == tok.encode(s, add_special_tokens=False).ids, s


def test_nonverbal_tag_tokenization_matches_reference(tokenizers_pair):
    hf, tok = tokenizers_pair
    for s in TAGGED:
        expected = ref._tokenize_with_nonverbal_tags(s, hf)[0].tolist()
        assert text.tokenize_with_nonverbal_tags(s, tok) == expected, s
    # a tag gets the same ids whatever surrounds it
    alone = tok.encode("[laughter]").ids
    ids = text.tokenize_with_nonverbal_tags("你好[laughter]世界", tok)
    assert any(ids[i:i + len(alone)] == alone for i in range(len(ids)))


def test_condition_ids_match_prepare_inference_inputs(tokenizers_pair):
    hf, tok = tokenizers_pair
    model = RefModel(hf)
    rng = random.Random(3)
    cases = []
    for target in ["Hello world.", "你好，世界！", "Say [laughter] this (twice)\nplease", MULTILINGUAL[5]]:
        for ref_text_ in [None, "This is the reference.", "参考 文本。"]:
            for lang in [None, "en", "zh", "yue"]:
                for instr in [None, "male, british accent", "女，四川话"]:
                    cases.append((target, ref_text_, lang, instr, rng.random() < 0.7))
    for target, ref_text_, lang, instr, denoise in cases:
        ref_codes = None if ref_text_ is None else torch.zeros(8, 5, dtype=torch.long)
        out = model._prepare_inference_inputs(target, 7, ref_text_, ref_codes, lang, instr, denoise)
        row = out["input_ids"][0]
        n_text = row.shape[1] - 7 - (0 if ref_codes is None else 5)
        assert (row[:, :n_text] == row[0, :n_text]).all()
        ours = text.build_condition_ids(target, tok, ref_text=ref_text_, language=lang, instruct=instr,
                                        denoise=denoise, has_reference=ref_codes is not None)
        assert ours.dtype == np.int64
        assert ours.tolist() == row[0, :n_text].tolist(), (target, ref_text_, lang, instr, denoise)
        assert int(out["audio_mask"][0].nonzero()[0]) == n_text  # audio starts right after the text
    with pytest.raises(ValueError, match="is empty"):
        text.build_condition_ids("  ", tok)


# ---------------------------------------------------------------------------
# Duration
# ---------------------------------------------------------------------------


def test_char_weights_match_reference():
    est = RuleDurationEstimator()
    codes = list(range(0x10000)) + list(range(0x10000, 0x110000, 97))
    for code in codes:
        if 0xD800 <= code <= 0xDFFF:
            continue
        ch = chr(code)
        assert duration.char_weight(ch) == est._get_char_weight(ch), hex(code)
    for t in TEXTS:
        assert duration.total_weight(t) == est.calculate_total_weight(t)


def test_estimates_match_reference():
    model = RefModel()
    rng = random.Random(5)
    refs = [(None, None), ("", 40), ("Nice to meet you.", 25), ("This is a longer reference sentence.", 90),
            ("参考音频的文本。", 60), ("Short", 3), ("x", 1), ("Some text", None), ("...", 10)]
    for target in TEXTS:
        for ref_t, ref_n in refs:
            for speed in [1.0, 0.5, 0.8, 1.25, 2.0, 3.7, 0.0, -1.0]:
                assert duration.estimate_target_frames(target, ref_t, ref_n, speed) == \
                    model._estimate_target_tokens(target, ref_t, ref_n, speed=speed), (target, ref_t, ref_n, speed)
    for _ in range(200):
        t = "".join(rng.choice(TEXTS) for _ in range(rng.randint(1, 20)))
        r, n = rng.choice(refs[2:7])
        est = RuleDurationEstimator().estimate_duration(t, r, n)
        assert duration.estimate_duration(t, r, n) == est


def _reference_plan(model, text_, speed, dur, prompt):
    task = model._preprocess_all(text=text_, speed=speed, duration=dur, voice_clone_prompt=prompt)
    return task.target_lens[0], (task.speed[0] if task.speed else 1.0)


def test_duration_and_speed_overrides_match_preprocess_all():
    model = RefModel()
    prompts = [None, ref.VoiceClonePrompt(torch.zeros(8, 80, dtype=torch.long), "A reference of some length.", 0.05)]
    for t in ["Hello there, how are you today?", "你好，世界！", "x" * 500]:
        for prompt in prompts:
            for speed in [None, 1.0, 0.7, 1.5]:
                for dur in [None, 0.0, 0.01, 1.0, 2.5, 7.3, 40.0]:
                    expected = _reference_plan(model, t, speed, dur, prompt)
                    ours = duration.plan_target_frames(
                        t, None if prompt is None else prompt.ref_text,
                        None if prompt is None else prompt.ref_audio_tokens.shape[-1], speed, dur)
                    assert ours == expected, (t, prompt is not None, speed, dur)


def test_chunking_matches_generate_chunked():
    """Chunk texts and per-chunk lengths equal what ``_generate_chunked`` asks for."""
    gen_config = ref.OmniVoiceGenerationConfig()
    long_texts = [" ".join(TEXTS[:-1]) * 3, "第一句话很长。" * 60 + "结束", "Mr. Smith said hello. " * 80]
    for t in long_texts:
        for prompt in [None, ("A reference transcript.", 75)]:
            for speed, dur in [(None, None), (1.3, None), (None, 70.0)]:
                model = RefModel()
                ref_t, ref_n = prompt if prompt else (None, None)
                target, sp = duration.plan_target_frames(t, ref_t, ref_n, speed, dur)
                assert duration.needs_chunking(target) == (target > 750)
                task = ref.GenerationTask(
                    batch_size=1, texts=[t], target_lens=[target], langs=[None], instructs=[None],
                    ref_texts=[ref_t], ref_audio_tokens=[None if ref_n is None else torch.zeros(8, ref_n)],
                    ref_rms=[None], speed=[sp])
                short, long_ = task.get_indices(gen_config, 25)
                assert (long_ == [0]) == duration.needs_chunking(target)
                model._generate_chunked(task, gen_config)
                chunks = duration.chunk_for_generation(t, target)
                assert [c[0][0] for c in model.calls] == chunks
                # our per-chunk lengths, with chunk 0 as the reference when there is no voice prompt
                lens = []
                for i, c in enumerate(chunks):
                    if prompt:
                        r, n = ref_t, ref_n
                    elif i == 0:
                        r, n = None, None
                    else:
                        r, n = chunks[0], lens[0]
                    lens.append(duration.estimate_target_frames(c, r, n, sp))
                assert [c[1][0] for c in model.calls] == lens


def test_text_audio_and_sampling_modules_do_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from omnivoice_demo.engine import duration, sampling\n"
        "from omnivoice_demo.text import languages, voice_design, prompt\n"
        "from omnivoice_demo.audio import files, processing, silence\n"
        "silence._pydub()\n"
        "bad = [m for m in ('torch', 'transformers', 'omnivoice', 'torchaudio') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
