"""Voice-design instructs: the items the model knows, and their validation.

The tables are copied from ``omnivoice/utils/voice_design.py`` and
``resolve_instruct`` reproduces ``OmniVoice``'s ``_resolve_instruct``: same
normalised string, same ``ValueError`` cases and messages (unknown item with a
suggestion, English accent mixed with Chinese dialect, two items of one
category).
"""

from __future__ import annotations

import difflib
import re

from ..errors import InvalidInput

__all__ = [
    "INSTRUCT_CATEGORIES",
    "INSTRUCT_EN_TO_ZH",
    "INSTRUCT_ZH_TO_EN",
    "VALID_EN",
    "VALID_ZH",
    "has_chinese",
    "instruct_categories",
    "resolve_instruct",
]

#: CJK Unified Ideographs; the reference's ``_ZH_RE``.
_ZH_RE = re.compile(r"[\u4e00-\u9fff]")

#: Category name -> items.  Gender, age, pitch and style map English -> Chinese;
#: accents exist only in English, dialects only in Chinese.  At most one item
#: per category is allowed in an instruct.  (Reference: ``_INSTRUCT_CATEGORIES``.)
INSTRUCT_CATEGORIES: dict[str, dict[str, str] | tuple[str, ...]] = {
    "gender": {"male": "男", "female": "女"},
    "age": {
        "child": "儿童",
        "teenager": "少年",
        "young adult": "青年",
        "middle-aged": "中年",
        "elderly": "老年",
    },
    "pitch": {
        "very low pitch": "极低音调",
        "low pitch": "低音调",
        "moderate pitch": "中音调",
        "high pitch": "高音调",
        "very high pitch": "极高音调",
    },
    "style": {"whisper": "耳语"},
    "accent": (
        "american accent",
        "british accent",
        "australian accent",
        "chinese accent",
        "canadian accent",
        "indian accent",
        "korean accent",
        "portuguese accent",
        "russian accent",
        "japanese accent",
    ),
    "dialect": (
        "河南话",
        "陕西话",
        "四川话",
        "贵州话",
        "云南话",
        "桂林话",
        "济南话",
        "石家庄话",
        "甘肃话",
        "宁夏话",
        "青岛话",
        "东北话",
    ),
}

INSTRUCT_EN_TO_ZH: dict[str, str] = {}
INSTRUCT_ZH_TO_EN: dict[str, str] = {}
#: One set per category, in category order (reference: ``_INSTRUCT_MUTUALLY_EXCLUSIVE``).
_MUTUALLY_EXCLUSIVE: list[set[str]] = []
for _items in INSTRUCT_CATEGORIES.values():
    if isinstance(_items, dict):
        INSTRUCT_EN_TO_ZH.update(_items)
        INSTRUCT_ZH_TO_EN.update({zh: en for en, zh in _items.items()})
        _MUTUALLY_EXCLUSIVE.append(set(_items) | set(_items.values()))
    else:
        _MUTUALLY_EXCLUSIVE.append(set(_items))

_ALL_VALID: frozenset[str] = frozenset().union(*_MUTUALLY_EXCLUSIVE)
VALID_EN: frozenset[str] = frozenset(i for i in _ALL_VALID if not _ZH_RE.search(i))
VALID_ZH: frozenset[str] = frozenset(i for i in _ALL_VALID if _ZH_RE.search(i))
# Sorted once: difflib's result does not depend on the order, but a list reads better.
_ALL_VALID_SORTED = sorted(_ALL_VALID)


def has_chinese(text: str | None) -> bool:
    """True when ``text`` contains a CJK ideograph.

    ``_preprocess_all`` passes ``use_zh=bool(text and _ZH_RE.search(text))``
    to ``_resolve_instruct``: Chinese target text switches instructs to Chinese.
    """
    return bool(text and _ZH_RE.search(text))


def instruct_categories(chinese: bool = False) -> dict[str, list[str]]:
    """Category -> its items, for UI dropdowns.

    English items by default (``chinese=True``: the Chinese ones).  Accents
    exist only in English and dialects only in Chinese, so both are always
    listed; ``resolve_instruct`` translates the rest as the text requires.
    """
    out: dict[str, list[str]] = {}
    for name, items in INSTRUCT_CATEGORIES.items():
        if isinstance(items, dict):
            out[name] = list(items.values() if chinese else items.keys())
        else:
            out[name] = list(items)
    return out


def resolve_instruct(instruct: str | None, use_zh: bool = False) -> str | None:
    """Validate and normalise a voice-design instruct (reference: ``_resolve_instruct``).

    Items are separated by ``,`` or ``，``; English is matched case-insensitively.
    A dialect forces Chinese output and an accent forces English; otherwise
    ``use_zh`` (Chinese target text, see ``has_chinese``) decides.  Returns the
    items joined by ``", "`` (English) or ``"，"`` (any Chinese item), or
    ``None`` for ``None``/blank.  Raises ``ValueError`` for an unknown item
    (with a close match when there is one), a dialect with an accent, or two
    items of one category.
    """
    if instruct is None:
        return None

    instruct_str = instruct.strip()
    if not instruct_str:
        return None

    raw_items = [x for x in re.split(r"\s*[,，]\s*", instruct_str) if x]

    unknown = []
    normalised = []
    for raw in raw_items:
        n = raw.strip().lower()
        if n in _ALL_VALID:
            normalised.append(n)
        else:
            sug = difflib.get_close_matches(n, _ALL_VALID_SORTED, n=1, cutoff=0.6)
            unknown.append((raw, n, sug[0] if sug else None))

    if unknown:
        lines = []
        for raw, n, sug in unknown:
            if sug:
                lines.append(f"  '{raw}' -> '{n}' (unsupported; did you mean '{sug}'?)")
            else:
                lines.append(f"  '{raw}' -> '{n}' (unsupported)")
        raise InvalidInput(
            f"Unsupported instruct items found in {instruct_str}:\n"
            + "\n".join(lines)
            + "\n\nValid English items: "
            + ", ".join(sorted(VALID_EN))
            + "\nValid Chinese items: "
            + "，".join(sorted(VALID_ZH))
            + "\n\nTip: Use only English or only Chinese instructs. "
            "English instructs should use comma + space (e.g. "
            "'male, indian accent'),\nChinese instructs should use full-width "
            "comma (e.g. '男，河南话')."
        )

    # A dialect forces Chinese, an accent forces English.
    has_dialect = any(n.endswith("话") for n in normalised)
    has_accent = any(" accent" in n for n in normalised)
    if has_dialect and has_accent:
        raise InvalidInput(
            "Cannot mix Chinese dialect and English accent in a single instruct. "
            "Dialects are for Chinese speech, accents for English speech."
        )
    if has_dialect:
        use_zh = True
    elif has_accent:
        use_zh = False

    # Unify to one language.
    table = INSTRUCT_EN_TO_ZH if use_zh else INSTRUCT_ZH_TO_EN
    normalised = [table.get(n, n) for n in normalised]

    # At most one item per category.
    conflicts = []
    for category in _MUTUALLY_EXCLUSIVE:
        hits = [n for n in normalised if n in category]
        if len(hits) > 1:
            conflicts.append(hits)
    if conflicts:
        raise InvalidInput(
            "Conflicting instruct items within the same category: "
            + "; ".join(" vs ".join(f"'{x}'" for x in group) for group in conflicts)
            + ". Each category (gender, age, pitch, style, accent, dialect) "
            "allows at most one item."
        )

    has_zh = any(any("\u4e00" <= c <= "\u9fff" for c in n) for n in normalised)
    return ("，" if has_zh else ", ").join(normalised)
