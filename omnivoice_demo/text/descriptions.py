"""A voice described in one's own words -> the model's voice-design items, and what was left out and why.

OmniVoice designs a voice from a fixed list of items (``text.voice_design``: gender, age, pitch,
whisper, an English accent or a Chinese dialect).  People write "a deep, calm British man" or
"温柔的年轻女声".  ``read_description`` reads such text, English or Chinese:

* the items themselves ("male", "low pitch", "男", "四川话"), in any case;
* synonyms ("deep"/"bass" -> low pitch, "old"/"senior" -> elderly, "kid" -> child, "whispering"/"hushed" ->
  whisper, "UK"/"English" -> British accent, "Aussie" -> Australian accent, "低沉" -> low pitch, "东北" -> 东北话);
* nouns that carry a gender, and sometimes an age ("man", "woman", "girl", "老人", "女声"); an age
  written out ("a young girl") wins over the noun's;
* degree words before a pitch ("very deep" -> very low pitch; "slightly high" -> high pitch, the mildest);
* negation ("not whispering", "不要耳语"): the item is left out, and said so;
* conflicts ("male, female"; an accent with a dialect): reported, and none of them applied (never guessed).

Words it does not understand, and words for things the model cannot design (tone, emotion: "cheerful",
"温柔"), are ignored and reported with the reason.  Every front end reads descriptions here: lenient
(apply what was understood, report the rest) by default, ``strict=True`` refuses anything not understood
and lists the known items.  A description made only of items gives the same items, in the same order, as
``resolve_instruct`` does today, so the prompt is token for token the same.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import unicodedata
from typing import Optional

from ..settings.limits import Limits
from ..errors import check_unicode
from .voice_design import INSTRUCT_CATEGORIES, INSTRUCT_ZH_TO_EN, VALID_EN, VALID_ZH
from ..errors import InvalidInput

__all__ = ["Description", "read_description", "known_items_text"]

#: item -> its category (English names; dialects by their Chinese name)
_CATEGORY: dict[str, str] = {item: name for name, items in INSTRUCT_CATEGORIES.items() for item in items}

# kinds of word
_ITEM, _FILLER, _UP, _NOT, _TONE = "item", "filler", "up", "not", "tone"

TONE_WHY = ("tone and emotion are not voice-design items (the model designs gender, age, pitch, whisper, "
            "accent and dialect; a saved voice's own clip carries its manner)")
UNKNOWN_WHY = "not a word the voice design knows"


@dataclasses.dataclass(frozen=True)
class _Entry:
    kind: str
    items: tuple[str, ...] = ()      # items the word states
    implied: tuple[str, ...] = ()    # items it suggests, unless stated otherwise ("girl": child)


def _lexicon() -> tuple[dict[str, _Entry], dict[str, _Entry]]:
    """(English phrases, Chinese phrases) -> what they mean."""
    en: dict[str, _Entry] = {}
    zh: dict[str, _Entry] = {}

    def add(table, words: str, kind: str = _ITEM, items=(), implied=()):
        for word in words.split("|"):
            table[word] = _Entry(kind, tuple(items), tuple(implied))

    for category, items in INSTRUCT_CATEGORIES.items():   # the items themselves, both languages
        for item in items:
            english = INSTRUCT_ZH_TO_EN.get(item, item)
            add(zh if re.search(r"[\u4e00-\u9fff]", item) else en, item, items=(english,))
            if isinstance(items, dict):
                add(zh, items[item], items=(item,))
    # English
    add(en, "man|men|guy|guys|gentleman|gentlemen|masculine|he|him|his|husband|father|dad|son|brother|"
            "baritone|tenor", items=("male",))
    add(en, "woman|women|lady|ladies|gal|feminine|she|her|wife|mother|mom|mum|daughter|sister|soprano|alto",
        items=("female",))
    add(en, "bloke|chap|dude|fella|fellow|lad|sir|mister|mr", items=("male",))
    add(en, "lass|madam|miss|ms|mrs", items=("female",))
    add(en, "boy|boys|schoolboy", items=("male",), implied=("child",))
    add(en, "girl|girls|schoolgirl", items=("female",), implied=("child",))
    add(en, "young boy|little boy", items=("male", "child"))
    add(en, "young girl|little girl", items=("female", "child"))
    add(en, "grandpa|grandfather|granddad|grandad|old-timer", items=("male",), implied=("elderly",))
    add(en, "grandma|grandmother|granny|grandmom", items=("female",), implied=("elderly",))
    add(en, "kid|kids|children|childlike|child-like|toddler|little kid|young child|childish", items=("child",))
    add(en, "teen|teens|teenage|teenaged|adolescent|adolescents|youth|youngster|teenage-sounding",
        items=("teenager",))
    add(en, "young|younger|youthful|twenties|twentysomething|young-adult", items=("young adult",))
    add(en, "middle aged|mid-aged|midlife|mature|forties|fifties|older adult", items=("middle-aged",))
    add(en, "old|older|senior|seniors|elder|elderly|aged|aging|ageing|geriatric|retired|old-aged",
        items=("elderly",))
    add(en, "deep|bass|low|lower|low-pitched|deep-voiced|deep-pitched|booming|gravelly", items=("low pitch",))
    add(en, "high|higher|high-pitched|squeaky|shrill|piping|falsetto", items=("high pitch",))
    add(en, "medium|moderate|mid|mid-pitched|medium-pitched|average pitch|normal pitch", items=("moderate pitch",))
    add(en, "whispering|whispered|whispers|whispery|hushed|whisper-quiet|in a whisper", items=("whisper",))
    for nationality, accent in (("american|us accent|usa|u.s|yankee", "american"),
                                ("british|uk|english|england|brit|scottish|welsh|londoner|cockney|posh",
                                 "british"),
                                ("australian|aussie|australia", "australian"),
                                ("chinese", "chinese"), ("canadian|canada", "canadian"), ("indian|india", "indian"),
                                ("korean|korea", "korean"), ("portuguese|portugal", "portuguese"),
                                ("russian|russia", "russian"), ("japanese|japan", "japanese")):
        add(en, nationality, items=(f"{accent} accent",))
    for place, dialect in (("henan", "河南话"), ("shaanxi", "陕西话"), ("sichuan|sichuanese", "四川话"),
                           ("guizhou", "贵州话"), ("yunnan", "云南话"), ("guilin", "桂林话"), ("jinan", "济南话"),
                           ("shijiazhuang", "石家庄话"), ("gansu", "甘肃话"), ("ningxia", "宁夏话"),
                           ("qingdao", "青岛话"), ("dongbei|northeastern|northeast", "东北话")):
        add(en, place, items=(dialect,))
    add(en, "very|extremely|really|super|quite|so|too|ultra|deeply|highly|incredibly|especially", _UP)
    # softening words give the mildest item of their kind ("slightly high": high pitch)
    add(en, "slightly|somewhat|a bit|a little|a little bit|bit|rather|fairly|mildly|kinda|kind of|sort of", _FILLER)
    add(en, "not|no|non|never|without|isn't|aren't|don't|doesn't|shouldn't|mustn't|nor|neither|avoid|avoiding",
        _NOT)
    add(en, "a|an|the|voice|voiced|voices|speaker|speakers|speaking|speak|speaks|spoken|say|says|saying|talk|"
            "talks|talking|tell|read|reads|reading|narrate|narrates|narrator|narration|in|on|with|of|to|for|as|by|"
            "from|at|and|or|but|also|plus|then|that|this|these|those|is|are|be|was|were|being|been|sound|sounds|"
            "sounding|like|person|people|someone|somebody|one|who|whose|which|has|have|having|use|using|please|it|"
            "its|it's|you|your|me|my|we|our|they|their|i|tone|toned|style|manner|type|sort|way|accent|"
            "accented|accents|pitch|pitched|dialect|age|aged-voice|gender|sex|character|adult|adults|human|"
            "should|must|can|could|would|will|just|little|native|speaker's|all|whole|entire|throughout|text|"
            "following|something|here|there|make|makes|made|let|lets|give|gives|sounds like|no accent|"
            "neutral accent|without an accent|standard", _FILLER)
    add(en, "cheerful|cheery|happy|happily|joyful|joyous|glad|sad|sadly|unhappy|sorrowful|melancholy|"
            "melancholic|gloomy|angry|angrily|mad|furious|annoyed|irritated|calm|calmly|serene|peaceful|relaxed|"
            "excited|excitedly|exciting|enthusiastic|enthusiastically|energetic|lively|upbeat|bubbly|serious|"
            "seriously|stern|solemn|positive|negative|optimistic|friendly|warm|warmly|kind|kindly|gentle|gently|"
            "soft|softly|tender|tenderly|sweet|sweetly|soothing|comforting|reassuring|confident|confidently|"
            "assertive|authoritative|professional|formal|casual|informal|conversational|playful|playfully|"
            "sarcastic|ironic|dramatic|dramatically|theatrical|emotional|expressive|monotone|flat|neutral|bored|"
            "tired|sleepy|scared|afraid|fearful|nervous|anxious|surprised|shocked|curious|sympathetic|"
            "empathetic|compassionate|caring|loving|romantic|sexy|seductive|sultry|husky|raspy|hoarse|breathy|"
            "smooth|silky|rich|bright|clear|crisp|loud|loudly|quiet|quietly|fast|quickly|quick|slow|slowly|"
            "measured|steady|cheerfully|positively|tone-deaf|mysterious|spooky|creepy|evil|villainous|heroic|"
            "epic|inspiring|motivational|pleasant|nice|beautiful|lovely|charming|elegant|polite|rude|"
            "grumpy|cranky|silly|funny|humorous|witty|wise|thoughtful|pensive|dreamy|whimsical|intimate|"
            "storytelling|newscaster|announcer|radio|broadcast|podcast|audiobook", _TONE)
    # Chinese
    add(zh, "男性|男声|男人|男生|男子|男士|男的|先生|小哥哥|爸爸|父亲|哥哥|弟弟|他|大叔|叔叔", items=("male",))
    add(zh, "女性|女声|女人|女生|女子|女士|女的|小姐|小姐姐|妈妈|母亲|姐姐|妹妹|她|阿姨|大妈", items=("female",))
    add(zh, "男孩|小男孩|男童|男孩子|小伙子|小伙", items=("male",), implied=("child",))
    add(zh, "女孩|小女孩|女童|女孩子|姑娘|小姑娘", items=("female",), implied=("child",))
    add(zh, "老爷爷|爷爷|老头|老大爷|大爷|外公|老先生", items=("male",), implied=("elderly",))
    add(zh, "老奶奶|奶奶|老太太|老婆婆|外婆|婆婆", items=("female",), implied=("elderly",))
    add(zh, "孩子|小孩|小孩子|孩童|童声|小朋友|幼儿|稚嫩", items=("child",))
    add(zh, "青少年|十几岁|少女", items=("teenager",))
    add(zh, "年轻|年轻人|青春|年青", items=("young adult",))
    add(zh, "中年人|成熟", items=("middle-aged",))
    add(zh, "老人|老年人|年老|年长|年迈|苍老|老迈|长者", items=("elderly",))
    add(zh, "低沉|低音|浑厚|厚重|深沉|低", items=("low pitch",))
    add(zh, "高音|尖细|高亢|尖|高", items=("high pitch",))
    add(zh, "中音|适中", items=("moderate pitch",))
    add(zh, "低语|悄悄话|悄声|气声|轻声细语|耳语般", items=("whisper",))
    for names, accent in (("英式|英国|英伦", "british"), ("美式|美国", "american"), ("澳洲|澳大利亚|澳式", "australian"),
                          ("加拿大", "canadian"), ("印度", "indian"), ("韩国", "korean"), ("日本|日式", "japanese"),
                          ("俄罗斯|俄式", "russian"), ("葡萄牙", "portuguese")):
        add(zh, "|".join(f"{n}口音|{n}腔" for n in names.split("|")) + "|" + names, items=(f"{accent} accent",))
    for dialect in INSTRUCT_CATEGORIES["dialect"]:
        place = dialect[:-1]
        add(zh, f"{place}|{place}口音|{place}方言|{place}腔", items=(dialect,))
    add(zh, "非常|特别|极其|极|超级|超|十分|格外|相当", _UP)
    add(zh, "有点|有点儿|有些|稍微|稍|略微|略|一点|一点儿|偏", _FILLER)
    add(zh, "不|不要|别|没有|无|非|不是|不用|勿", _NOT)
    add(zh, "的|地|得|声|音|声音|嗓音|嗓子|音色|音调|一个|一位|一名|个|位|名|用|以|说话|说|讲|讲话|朗读|念|读|带|带有|"
            "带着|有|口音|方言|腔调|语气|语调|风格|和|与|及|并且|而且|又|是|请|人|像|那种|样|般|感|感觉|很|比较|较|"
            "一种|种|点|来|地道|标准|普通话", _FILLER)
    add(zh, "温柔|开心|高兴|快乐|愉快|欢快|喜悦|悲伤|伤心|难过|忧伤|生气|愤怒|恼怒|平静|冷静|平和|激动|兴奋|严肃|"
            "认真|温暖|甜美|甜|可爱|活泼|热情|温和|沉稳|稳重|磁性|清脆|清亮|响亮|柔和|亲切|自信|专业|正式|随意|"
            "慵懒|性感|沙哑|嘶哑|干净|清澈|明亮|有力|威严|慈祥|轻快|缓慢|快速|慢|快|大声|小声|害怕|紧张|惊讶|"
            "悲痛|深情|抒情|播音|主持|新闻|讲故事|故事|正能量|积极|消极|乐观", _TONE)
    return en, zh


_EN, _ZH = _lexicon()
_EN_ITEM_WORDS = sorted(p for p, e in _EN.items() if e.kind == _ITEM and len(p) > 3)
_EN_LONGEST = max(len(p.split()) for p in _EN)
_ZH_LONGEST = max(map(len, _ZH))
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"(?P<zh>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+(?:[.'’-][^\W_{_CJK}]+)*)|(?P<stop>[,，;；.。!！?？、:：()（）\[\]/\n])")
_MARKUP = re.compile(r"<\s*/?\s*[A-Za-z!?][^<>]*>|&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);")
_WORD_COUNT = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


@dataclasses.dataclass(frozen=True)
class Description:
    """What a description gave: ``items`` applied (the model's items, English except dialects), in order;
    ``ignored``: the words left out, as written; ``why``: one line per reason (ignored words, conflicts,
    negations); ``style``: the tag of the saved voice's clip a word chose (``studio.variants``), if any."""

    text: Optional[str]
    items: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    why: tuple[str, ...] = ()
    style: Optional[str] = None      # the saved voice's style variant a word picked (``studio.variants``)

    @property
    def instruct(self) -> Optional[str]:
        """The items as an instruct for the engine (``resolve_instruct`` unifies their language); None: no item."""
        return ", ".join(self.items) or None

    def note(self) -> str:
        """One line: what was applied and what was ignored, and why (for the CLI's stderr and logs)."""
        applied = f"applied '{self.instruct}'" if self.items else "no item applied (the model chooses the voice)"
        if self.style:
            applied = f"spoke with the voice's {self.style!r} clip; " + (applied if self.items else "no item applied")
        return f"voice description: {applied}" + ("; " + "; ".join(self.why) if self.why else "")


@dataclasses.dataclass
class _Match:
    words: str                   # as written
    entry: _Entry
    position: int
    degree: Optional[str] = None
    negated: bool = False


def known_items_text() -> str:
    return ("Known items: " + ", ".join(sorted(VALID_EN)) + "; in Chinese: " + "，".join(sorted(VALID_ZH))
            + ". Synonyms such as deep, old, kid, whispering, UK, Aussie, 低沉, 老人 are read too.")


def check_description(text: str, limits: Limits, what: str = "The voice description", param=None) -> None:
    """A description is plain text within the text limits: valid Unicode, no control characters, no markup,
    at most ``max_text_chars`` characters and ``max_description_words`` words."""
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be text, not {type(text).__name__}.", param=param)
    check_unicode(text, what)
    control = next((i for i, c in enumerate(text) if unicodedata.category(c) == "Cc" and c not in "\t\n\r"), None)
    if control is not None:
        raise InvalidInput(f"{what} holds a control character (U+{ord(text[control]):04X} at position {control}); "
                           "write plain words.", param=param)
    markup = _MARKUP.search(text)
    if markup:
        raise InvalidInput(f"{what} holds markup ({markup.group()[:40]!r}); write plain words such as "
                           "'a deep British man' (SSML and HTML are not read).", param=param)
    limits.check(what, len(text), "max_text_chars", " characters")
    limits.check(what, len(_WORD_COUNT.findall(text)), "max_description_words", " words")


def read_description(text: Optional[str], *, strict: bool = False, limits: Optional[Limits] = None,
                     param: Optional[str] = None) -> Description:
    """Read a voice description (see the module).  ``strict``: ``InvalidInput`` (``param``) when any word is not
    understood or items conflict, with the known items.  ``limits`` (default: the public ``Limits()``) bound it."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return Description(text=None)
    check_description(text, limits or Limits(), param=param)
    matches, unknown = _scan(text)
    items, ignored, why = _resolve(matches, unknown)
    description = Description(text=text, items=tuple(items), ignored=tuple(ignored), why=tuple(why))
    if strict and ignored:
        raise InvalidInput("The voice description has words it cannot apply: " + "; ".join(why) + ". "
                           + known_items_text(), param=param)
    return description


def _scan(text: str) -> tuple[list[_Match], list[tuple[int, str, str]]]:
    """The phrases of ``text`` in order, and the words not understood: (position, words, why)."""
    matches: list[_Match] = []
    unknown: list[tuple[int, str, str]] = []
    pending: list[_Match] = []   # "very" and "not" waiting for the word they qualify
    words: list[tuple[str, int]] = []

    def take(written: str, entry: _Entry, position: int):
        if entry.kind == _FILLER:
            return
        if entry.kind == _TONE:
            miss(written, position, TONE_WHY)
            return
        match = _Match(written, entry, position)
        if entry.kind in (_UP, _NOT):
            pending.append(match)
            return
        if pending:
            match.negated = any(q.entry.kind == _NOT for q in pending)
            match.degree = _UP if any(q.entry.kind == _UP for q in pending) else None
            match.words, match.position = _join(*[q.words for q in pending], written), pending[0].position
        pending.clear()
        matches.append(match)

    def miss(written: str, position: int, why: str = UNKNOWN_WHY):
        negations = [q for q in pending if q.entry.kind == _NOT]
        pending.clear()
        if negations:
            written, position = _join(*[q.words for q in negations], written), negations[0].position
        unknown.append((position, written, why))

    def flush_words():
        i = 0
        while i < len(words):
            age = _age_in_years(words, i)
            if age:
                n, item = age
                take(" ".join(w for w, _ in words[i:i + n]), _Entry(_ITEM, (item,)), words[i][1])
                i += n
                continue
            for n in range(min(_EN_LONGEST, len(words) - i), 0, -1):
                phrase = " ".join(w.lower() for w, _ in words[i:i + n])
                entry = _EN.get(phrase) or _EN.get(re.sub(r"['’]s$", "", phrase))   # a woman's voice
                if entry:
                    take(" ".join(w for w, _ in words[i:i + n]), entry, words[i][1])
                    i += n
                    break
            else:
                word, position = words[i]
                parts = [p for p in re.split(r"[-’'.]", word.lower()) if p]
                if len(parts) > 1 and all(p in _EN for p in parts):
                    for part in parts:
                        take(part, _EN[part], position)
                else:
                    miss(word, position, TONE_WHY if _tone_adverb(word.lower()) else _unknown_why(word))
                i += 1
        words.clear()

    def end_clause():
        """A comma or a full stop: a negation with nothing after it was not understood."""
        unknown.extend((q.position, q.words, "a negation of nothing") for q in pending if q.entry.kind == _NOT)
        pending.clear()

    for token in _TOKEN.finditer(text):
        if token.group("word"):
            words.append((token.group("word"), token.start()))
            continue
        flush_words()
        if token.group("zh"):
            _scan_chinese(token.group("zh"), token.start(), take, miss)
        else:
            end_clause()
    flush_words()
    end_clause()
    return matches, unknown


def _join(*words: str) -> str:
    """Words as written: Chinese ones without spaces between them."""
    out = words[0]
    for word in words[1:]:
        out += word if re.match(f"[{_CJK}]", word) and re.search(f"[{_CJK}]$", out) else " " + word
    return out


def _scan_chinese(run: str, start: int, take, miss) -> None:
    """Longest phrases first; characters between known phrases are one word not understood."""
    i, missed = 0, ""
    while i < len(run):
        for n in range(min(_ZH_LONGEST, len(run) - i), 0, -1):
            entry = _ZH.get(run[i:i + n])
            if entry:
                if missed:
                    miss(missed, start + i - len(missed))
                    missed = ""
                take(run[i:i + n], entry, start + i)
                i += n
                break
        else:
            missed += run[i]
            i += 1
    if missed:
        miss(missed, start + len(run) - len(missed))


_YEARS = re.compile(r"(\d{1,3})(s|-year-old|-years-old)?$")


def _age_in_years(words: list[tuple[str, int]], i: int) -> Optional[tuple[int, str]]:
    """"30 years old", "a 70-year-old", "in her 40s": (words taken, the age item), or None."""
    found = _YEARS.match(words[i][0].lower())
    if not found:
        return None
    following = [w.lower() for w, _ in words[i + 1:i + 3]]
    if found.group(2):
        n = 1
    elif following[:2] in (["year", "old"], ["years", "old"]):
        n = 3
    elif following[:1] in (["yo"], ["y/o"]):
        n = 2
    else:
        return None
    years = int(found.group(1))
    bounds = ((12, "child"), (19, "teenager"), (35, "young adult"), (59, "middle-aged"))
    return n, next((item for top, item in bounds if years <= top), "elderly")


def _unknown_why(word: str) -> str:
    """Why a word is ignored, with the item it is closest to (a typo: 'femal')."""
    close = difflib.get_close_matches(word.lower(), _EN_ITEM_WORDS, n=1, cutoff=0.75)
    return f"{UNKNOWN_WHY} (did you mean '{close[0]}'?)" if close else UNKNOWN_WHY


def _tone_adverb(word: str) -> bool:
    """``cheerfully``, ``angrily``: an adverb of a tone word."""
    if not word.endswith("ly"):
        return False
    stem = word[:-2]
    stems = (stem, stem[:-1] + "y" if stem.endswith("i") else stem, stem + "le")
    return any(_EN.get(s) is not None and _EN[s].kind == _TONE for s in stems)


_DEGREE = {(_UP, "low pitch"): "very low pitch", (_UP, "high pitch"): "very high pitch"}


def _resolve(matches: list[_Match], unknown: list[tuple[int, str, str]]):
    """The items applied (in order of first mention), the words ignored (in order) and why."""
    stated: dict[str, list[tuple[str, _Match]]] = {}    # category -> (item, match)
    implied: dict[str, list[tuple[str, _Match]]] = {}   # items a noun suggests ("girl": child)
    excluded: dict[str, list[_Match]] = {}              # item -> the negations that leave it out
    for match in matches:
        for bucket, items in ((stated, match.entry.items), (implied, match.entry.implied)):
            for item in items:
                item = _DEGREE.get((match.degree, item), item)
                if match.negated:
                    if bucket is stated:
                        excluded.setdefault(item, []).append(match)
                else:
                    bucket.setdefault(_CATEGORY[item], []).append((item, match))
    chosen: dict[str, _Match] = {}                     # item -> its first mention
    dropped: list[tuple[int, str]] = []
    notes: list[str] = []

    def drop(found: list[_Match], reason: str):
        dropped.extend((m.position, m.words) for m in found)
        notes.append(f"{' and '.join(dict.fromkeys(repr(m.words) for m in found))}: {reason}")

    for category in INSTRUCT_CATEGORIES:
        candidates = stated.get(category) or implied.get(category) or []
        distinct = list(dict.fromkeys(item for item, _ in candidates))
        if len(distinct) > 1:
            drop([m for _, m in candidates], f"conflict ({category}: {' vs '.join(distinct)}), none is applied")
        elif distinct and distinct[0] in excluded:
            drop([candidates[0][1]] + excluded.pop(distinct[0]), f"contradict each other, '{distinct[0]}' is not applied")
        elif distinct:
            chosen[distinct[0]] = min((m for _, m in candidates), key=lambda m: m.position)
    for item, negations in excluded.items():
        notes.append(f"{' and '.join(repr(m.words) for m in negations)}: understood, '{item}' is left out")
    accent = next((i for i in chosen if _CATEGORY[i] == "accent"), None)
    dialect = next((i for i in chosen if _CATEGORY[i] == "dialect"), None)
    if accent and dialect:
        drop([chosen.pop(accent), chosen.pop(dialect)],
             "an English accent and a Chinese dialect cannot be mixed, neither is applied")
    items = sorted(chosen, key=lambda i: (chosen[i].position, list(chosen).index(i)))
    ignored = [w for _, w in sorted(set(dropped) | {(p, w) for p, w, _ in unknown})]
    by_reason: dict[str, list[str]] = {}
    for _, word, why in sorted(unknown):
        by_reason.setdefault(why, []).append(word)
    return items, ignored, [f"{', '.join(repr(w) for w in ws)}: {why}" for why, ws in by_reason.items()] + notes
