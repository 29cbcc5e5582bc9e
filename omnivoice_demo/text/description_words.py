"""The words a voice description may use and what each means: the model's items in English and Chinese, their
synonyms, the nouns that carry a gender or an age, degree words, negations, fillers, tone words (which the
model cannot design), and the places of each accent (``ACCENT_PLACES``).  ``descriptions.read_description``
reads a description with them."""

from __future__ import annotations

import dataclasses
import re

from .voice_design import INSTRUCT_CATEGORIES, INSTRUCT_ZH_TO_EN

#: item -> its category (English names; dialects by their Chinese name)
CATEGORY: dict[str, str] = {item: name for name, items in INSTRUCT_CATEGORIES.items() for item in items}

# kinds of word
ITEM, FILLER, UP, NOT, TONE = "item", "filler", "up", "not", "tone"


@dataclasses.dataclass(frozen=True)
class Entry:
    kind: str
    items: tuple[str, ...] = ()      # items the word states
    implied: tuple[str, ...] = ()    # items it suggests, unless stated otherwise ("girl": child)


#: well-known places (and their people's names) of each English accent the model has: "a woman from Texas" is
#: read as "from America".  Only places that name one accent: "Georgia" (a state and a country) is not here; a
#: place that is not listed is ignored and reported, as any word not understood.  Chinese places that name a
#: dialect (Sichuan, Qingdao, ...) are the dialect's, below.
ACCENT_PLACES = {
    "american": "america|united states|the states|texas|texan|new york|new yorker|brooklyn|california|californian|"
                "los angeles|san francisco|chicago|boston|bostonian|seattle|florida|miami|atlanta|nashville|"
                "tennessee|kentucky|alabama|louisiana|new orleans|ohio|michigan|detroit|minnesota|wisconsin|"
                "midwest|midwestern|oklahoma|arizona|colorado|philadelphia|pennsylvania|new jersey|virginia|"
                "carolina|north carolina|south carolina|houston|dallas|las vegas|alaska|hawaii|appalachia|"
                "appalachian|southern us|deep south",
    "british": "britain|great britain|united kingdom|london|manchester|mancunian|liverpool|scouse|scouser|leeds|"
               "birmingham|brummie|yorkshire|newcastle|geordie|bristol|sheffield|oxford|cambridge|essex|kent|"
               "cornwall|devon|brighton|nottingham|scotland|glasgow|edinburgh|wales|cardiff|northern ireland|"
               "belfast",
    "australian": "sydney|melbourne|brisbane|perth|adelaide|canberra|queensland|tasmania|new south wales|"
                  "outback",
    "canadian": "toronto|vancouver|montreal|ottawa|calgary|edmonton|winnipeg|ontario|alberta|quebec|"
                "british columbia|nova scotia|manitoba",
    "indian": "mumbai|bombay|delhi|new delhi|bangalore|bengaluru|chennai|madras|kolkata|calcutta|hyderabad|pune|"
              "punjab|kerala|goa|gujarat|rajasthan",
    "chinese": "china|beijing|peking|shanghai|guangzhou|shenzhen|hangzhou|nanjing|wuhan",
    "korean": "seoul|busan|south korea",
    "japanese": "tokyo|osaka|kyoto|yokohama|hokkaido|okinawa",
    "russian": "moscow|st petersburg|saint petersburg|siberia|siberian",
    "portuguese": "lisbon|porto",
}
#: the same in Chinese ("来自伦敦")
ACCENT_PLACES_ZH = {"american": "纽约|加州|德州|得克萨斯|芝加哥|波士顿|洛杉矶", "british": "伦敦|曼彻斯特|利物浦|苏格兰|爱丁堡",
                    "australian": "悉尼|墨尔本|布里斯班", "canadian": "多伦多|温哥华|蒙特利尔",
                    "indian": "孟买|新德里|德里|班加罗尔", "japanese": "东京|大阪|京都", "korean": "首尔|釜山",
                    "russian": "莫斯科|圣彼得堡", "portuguese": "里斯本"}


def _lexicon() -> tuple[dict[str, Entry], dict[str, Entry]]:
    """(English phrases, Chinese phrases) -> what they mean."""
    en: dict[str, Entry] = {}
    zh: dict[str, Entry] = {}

    def add(table, words: str, kind: str = ITEM, items=(), implied=()):
        for word in words.split("|"):
            table[word] = Entry(kind, tuple(items), tuple(implied))

    for items in INSTRUCT_CATEGORIES.values():   # the items themselves, both languages
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
    for accent, places in ACCENT_PLACES.items():   # "from London": a place says the accent as its nationality does
        add(en, places, items=(f"{accent} accent",))
    for place, dialect in (("henan", "河南话"), ("shaanxi", "陕西话"), ("sichuan|sichuanese", "四川话"),
                           ("guizhou", "贵州话"), ("yunnan", "云南话"), ("guilin", "桂林话"), ("jinan", "济南话"),
                           ("shijiazhuang", "石家庄话"), ("gansu", "甘肃话"), ("ningxia", "宁夏话"),
                           ("qingdao", "青岛话"), ("dongbei|northeastern|northeast", "东北话")):
        add(en, place, items=(dialect,))
    add(en, "very|extremely|really|super|quite|so|too|ultra|deeply|highly|incredibly|especially", UP)
    # softening words give the mildest item of their kind ("slightly high": high pitch)
    add(en, "slightly|somewhat|a bit|a little|a little bit|bit|rather|fairly|mildly|kinda|kind of|sort of", FILLER)
    add(en, "not|no|non|never|without|isn't|aren't|don't|doesn't|shouldn't|mustn't|nor|neither|avoid|avoiding",
        NOT)
    add(en, "a|an|the|voice|voiced|voices|speaker|speakers|speaking|speak|speaks|spoken|say|says|saying|talk|"
            "talks|talking|tell|read|reads|reading|narrate|narrates|narrator|narration|in|on|with|of|to|for|as|by|"
            "from|at|and|or|but|also|plus|then|that|this|these|those|is|are|be|was|were|being|been|sound|sounds|"
            "sounding|like|person|people|someone|somebody|one|who|whose|which|has|have|having|use|using|please|it|"
            "its|it's|you|your|me|my|we|our|they|their|i|tone|toned|style|manner|type|sort|way|accent|"
            "accented|accents|pitch|pitched|dialect|age|aged-voice|gender|sex|character|adult|adults|human|"
            "should|must|can|could|would|will|just|little|native|speaker's|all|whole|entire|throughout|text|"
            "following|something|here|there|make|makes|made|let|lets|give|gives|sounds like|no accent|"
            "neutral accent|without an accent|standard|grew up|raised|born|based|lives|living|hails|hailing|"
            "originally", FILLER)
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
            "storytelling|newscaster|announcer|radio|broadcast|podcast|audiobook", TONE)
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
    for accent, places in ACCENT_PLACES_ZH.items():
        add(zh, places, items=(f"{accent} accent",))
    add(zh, "非常|特别|极其|极|超级|超|十分|格外|相当", UP)
    add(zh, "有点|有点儿|有些|稍微|稍|略微|略|一点|一点儿|偏", FILLER)
    add(zh, "不|不要|别|没有|无|非|不是|不用|勿", NOT)
    add(zh, "的|地|得|声|音|声音|嗓音|嗓子|音色|音调|一个|一位|一名|个|位|名|用|以|说话|说|讲|讲话|朗读|念|读|带|带有|"
            "带着|有|口音|方言|腔调|语气|语调|风格|和|与|及|并且|而且|又|是|请|人|像|那种|样|般|感|感觉|很|比较|较|"
            "一种|种|点|来|来自|地道|标准|普通话", FILLER)
    add(zh, "温柔|开心|高兴|快乐|愉快|欢快|喜悦|悲伤|伤心|难过|忧伤|生气|愤怒|恼怒|平静|冷静|平和|激动|兴奋|严肃|"
            "认真|温暖|甜美|甜|可爱|活泼|热情|温和|沉稳|稳重|磁性|清脆|清亮|响亮|柔和|亲切|自信|专业|正式|随意|"
            "慵懒|性感|沙哑|嘶哑|干净|清澈|明亮|有力|威严|慈祥|轻快|缓慢|快速|慢|快|大声|小声|害怕|紧张|惊讶|"
            "悲痛|深情|抒情|播音|主持|新闻|讲故事|故事|正能量|积极|消极|乐观", TONE)
    return en, zh


EN, ZH = _lexicon()
EN_ITEM_WORDS = sorted(p for p, e in EN.items() if e.kind == ITEM and len(p) > 3)
EN_LONGEST = max(len(p.split()) for p in EN)
ZH_LONGEST = max(map(len, ZH))
