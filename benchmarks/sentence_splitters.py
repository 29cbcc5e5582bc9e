"""Which sentence segmenter the text floor is built on: sentencex against pysbd, on held-out sentences.

Issue 50 asked for one splitter from a maintained multilingual segmenter, chosen by measured accuracy on
sentences of our own in several languages and by installed size (the size was measured and went the other way:
pysbd is the smaller; sentencex was chosen for its accuracy, speed and languages).  The cases below were written for this
benchmark (not taken from either library's tests): in each language, titles and Latin abbreviations, times
of day written with full stops, quoted questions the sentence goes on from, ordinal dates, decimals and
numbered headings, each case a few sentences as a reader cuts them.

Contenders, each scored by whole cases right and by cut precision/recall:

* ``before``: the text floor's own rule until issue 50 (a regular expression and an English abbreviation list);
* ``pysbd``, ``sentencex``: each library alone, the case's language given (pysbd's 23 languages; a language
  it lacks falls back to English);
* ``pysbd + rules``, ``sentencex + rules``: each with our three rules on top (``text.sentences``: a numbered
  heading stays with its title, no cut inside a ``[...]`` tag, white space stays with the sentence before);
  ``sentencex + rules`` is ``text.sentences.split_sentences``, what the project runs.

Speed is a ratio against ``before`` on the same text in the same run (all cases repeated), never a time alone.

    pip install --target /tmp/sbd pysbd==0.3.4      # pysbd is not a dependency: only to compare
    PYTHONPATH=$PWD:/tmp/sbd .venv-dev/bin/python benchmarks/sentence_splitters.py

Without pysbd importable its rows say so and the others run.
"""

from __future__ import annotations

import importlib.metadata
import pathlib
import platform
import re
import subprocess
import time
from typing import Callable, Optional

#: (language, the sentences a reader cuts); the text is them joined by a space (by nothing for zh and ja)
CASES: list[tuple[str, list[str]]] = [
    ("en", ["Prof. Smith arrived at 5 p.m. yesterday.", "Nobody expected him."]),
    ("en", ['"Why did you come?" she asked him quietly.', "He did not answer."]),
    ("en", ["Mr. and Mrs. Jones live on Baker St. in London.", "Dr. Watson visits them, e.g. on Sundays."]),
    ("en", ["The price rose by 3.5 percent in Jan. and fell again.", "That was expected."]),
    ("en", ["1. Source Code.", "The source code is the preferred form of the work for making changes."]),
    ("en", ["We met at 10 a.m. on Monday, i.e. before the vote.", "It went well!"]),
    ("en", ["The U.S. economy grew 2.1 percent last year.", "Analysts, cf. the report, were surprised."]),
    ("en", ["She works for Acme Inc. in Boston.", "Her manager, Gen. Lee, retired in 2019.", "Is it true?"]),
    ("de", ["Am 5. Juni kam Prof. Müller nach Berlin.", "Er blieb bis zum 12. Juli."]),
    ("de", ["Das kostet 3,50 Euro, d. h. nicht viel.", "Wir kaufen es."]),
    ("de", ["Der Zug fährt um 10.30 Uhr ab.", "Bitte seien Sie pünktlich!"]),
    ("de", ["„Kommst du mit?“, fragte sie leise.", "Er nickte."]),
    ("de", ["1. Einleitung.", "Dieses Kapitel beschreibt die Ziele des Projekts."]),
    ("de", ["Herr Dr. Schmidt wohnt in der Goethestr. 5 in Bonn.", "Er ist z. B. Mitglied im Verein."]),
    ("de", ["Es war der 3. Oktober 1990.", "Deutschland wurde wieder vereint."]),
    ("de", ["Bücher, Hefte usw. liegen auf dem Tisch.", "Nimm sie bitte mit."]),
    ("fr", ["M. Dupont est arrivé à 17 h 30.", "Il était en retard."]),
    ("fr", ["« Pourquoi pars-tu ? » demanda-t-elle doucement.", "Il ne répondit pas."]),
    ("fr", ["Mme Martin a rencontré le Dr. Leroy hier.", "Ils ont parlé longtemps."]),
    ("fr", ["1. Introduction.", "Ce chapitre présente le projet."]),
    ("fr", ["Il aime les fruits, p. ex. les pommes.", "Elle préfère les légumes."]),
    ("fr", ["La version 2.5 est sortie le 1er mars.", "Elle corrige plusieurs erreurs."]),
    ("fr", ["Est-ce vrai ?", "Oui, c'est vrai !"]),
    ("es", ["El Sr. García llegó a las 5 p. m. del lunes.", "Nadie lo esperaba."]),
    ("es", ["«¿Por qué viniste?», preguntó ella en voz baja.", "Él no respondió."]),
    ("es", ["La Dra. López trabaja en EE. UU. desde 2010.", "Le gusta su trabajo."]),
    ("es", ["1. Introducción.", "Este capítulo describe los objetivos."]),
    ("es", ["El precio subió un 3.5 por ciento.", "¡Qué sorpresa!"]),
    ("es", ["Compramos frutas, verduras, etc. en el mercado.", "Luego volvimos a casa."]),
    ("it", ["Il sig. Rossi è arrivato alle 17.30 in punto.", "Nessuno lo aspettava."]),
    ("it", ["«Perché sei venuto?» chiese lei sottovoce.", "Lui non rispose."]),
    ("it", ["Il dott. Bianchi lavora a Roma.", "Sua moglie insegna a Milano."]),
    ("it", ["1. Introduzione.", "Questo capitolo descrive gli obiettivi."]),
    ("it", ["Il prezzo è salito del 2.5 per cento.", "Che sorpresa!"]),
    ("it", ["Porta libri, quaderni ecc. a scuola.", "Non dimenticarli."]),
    ("ru", ["Проф. Иванов приехал в 5 ч. вечера.", "Его никто не ждал."]),
    ("ru", ["«Зачем ты пришёл?» — спросила она тихо.", "Он не ответил."]),
    ("ru", ["Цена выросла на 3.5 процента, т. е. немного.", "Это ожидалось."]),
    ("ru", ["1. Введение.", "В этой главе описаны цели."]),
    ("ru", ["Он живёт на ул. Ленина в г. Москве.", "Там очень шумно."]),
    ("ru", ["Мы купили хлеб, молоко и т. д. в магазине.", "Потом пошли домой."]),
    ("zh", ["你好。", "今天天气很好！"]),
    ("zh", ["他问：“你为什么来？”", "我没有回答。"]),
    ("zh", ["价格上涨了3.5%。", "大家都很惊讶。"]),
    ("zh", ["王先生下午5点到了。", "没人想到他会来。"]),
    ("ja", ["こんにちは。", "元気ですか？"]),
    ("ja", ["「どうして来たの？」と彼女は聞いた。", "彼は答えなかった。"]),
    ("ja", ["価格は3.5%上がった。", "みんな驚いた。"]),
]

_BEFORE_END = re.compile(r"[.!?…]+[\"'”’)\]»」』】）]*(?=\s)|[。！？]+[”’」』】）]*")
_BEFORE_ABBREVIATIONS = {"Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "Sr.", "Jr.", "St.", "No.", "Jan.", "Feb.", "Mar.",
                         "Apr.", "Aug.", "Sep.", "Sept.", "Oct.", "Nov.", "Dec.", "i.e.", "e.g.", "vs.", "Inc.",
                         "Gen.", "Co.", "Ltd.", "Etc.", "approx.", "fig."}


def text_of(language: str, gold: list[str]) -> str:
    return ("" if language in ("zh", "ja") else " ").join(gold)


def before(text: str, language: str) -> list[int]:
    """The text floor's rule before issue 50 (``normalize.sentences``): cut after an end mark and a space,
    unless the word is an English abbreviation."""
    ends, start = [], 0
    for match in _BEFORE_END.finditer(text):
        words = text[start:match.end()].split()
        if match.group().startswith(".") and words and words[-1] in _BEFORE_ABBREVIATIONS:
            continue
        ends.append(match.end())
        start = match.end()
    return ends


def sentencex_ends(text: str, language: str) -> list[int]:
    import sentencex

    return [int(span["end_index"]) for span in sentencex.get_sentence_boundaries(language, text)]


def pysbd_ends(text: str, language: str) -> list[int]:
    import pysbd

    code = language if language in pysbd.languages.LANGUAGE_CODES else "en"
    return [span.end for span in pysbd.Segmenter(language=code, clean=False, char_span=True).segment(text)]


def with_rules(ends_of: Callable[[str, str], list[int]]) -> Callable[[str, str], list[int]]:
    from omnivoice_demo.text.sentences import _mend

    return lambda text, language: _mend(text, ends_of(text, language))


def cuts(text: str, ends: list[int]) -> set[int]:
    """Cut offsets with the white space around them left out: comparable whoever keeps the space."""
    found = set()
    for end in ends:
        end = min(max(end, 0), len(text))
        while end > 0 and text[end - 1].isspace():
            end -= 1
        if 0 < end and text[end:].strip():
            found.add(end)
    return found


def gold_cuts(language: str, gold: list[str]) -> set[int]:
    text, found, offset = text_of(language, gold), set(), 0
    for sentence in gold[:-1]:
        offset = text.index(sentence, offset) + len(sentence)
        found.add(offset)
    return found


def score(ends_of) -> Optional[dict]:
    right = tp = fp = fn = 0
    wrong: list[str] = []
    for language, gold in CASES:
        text = text_of(language, gold)
        try:
            got = cuts(text, ends_of(text, language))
        except ImportError:
            return None
        want = gold_cuts(language, gold)
        tp, fp, fn = tp + len(got & want), fp + len(got - want), fn + len(want - got)
        if got == want:
            right += 1
        else:
            wrong.append(f"{language}: {text[:48]}")
    return {"right": right, "precision": tp / max(tp + fp, 1), "recall": tp / max(tp + fn, 1), "wrong": wrong}


def installed_kb(distribution: str) -> Optional[int]:
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return sum(f.size or 0 for f in files) // 1024


def seconds(ends_of, text: str, language: str, repeat: int = 3) -> float:
    """The best of ``repeat`` timed runs, after an untimed run on the text's first 2,000 characters (imports,
    caches)."""
    ends_of(text[:2000], language)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        ends_of(text, language)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    cpu = next((line.split(":", 1)[1].strip() for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    languages = sorted({language for language, _ in CASES})
    print(f"machine: {cpu}; {load}")
    print(f"{len(CASES)} cases, {sum(len(g) - 1 for _, g in CASES)} cuts, languages: {', '.join(languages)}")
    contenders = {"before": before, "pysbd": pysbd_ends, "sentencex": sentencex_ends,
                  "pysbd + rules": with_rules(pysbd_ends), "sentencex + rules": with_rules(sentencex_ends)}
    sizes = {"pysbd": installed_kb("pysbd"), "sentencex": installed_kb("sentencex")}
    english = " ".join(text_of(language, gold) for language, gold in CASES if language == "en") + " "
    long_text = english * 50   # a chapter's length (pysbd takes minutes on four times this on a busy 2-core VM)
    base = seconds(before, long_text, "en")
    print(f"\n| splitter | cases right | cut precision | cut recall | installed | time vs before ({len(long_text)} "
          "characters of English) |")
    print("|---|---|---|---|---|---|")
    results = {}
    for name, ends_of in contenders.items():
        result = score(ends_of)
        library = name.split(" ")[0]
        if result is None:
            print(f"| {name} | not installed (pip install {'pysbd==0.3.4' if library == 'pysbd' else library}) "
                  "| | | | |")
            continue
        results[name] = result
        size = f"{sizes[library]:,} KB" if library in sizes and sizes[library] is not None else "-"
        ratio = seconds(ends_of, long_text, "en") / base
        print(f"| {name} | {result['right']}/{len(CASES)} | {result['precision']:.3f} | {result['recall']:.3f} "
              f"| {size} | {ratio:.1f}x |")
    for name, result in results.items():
        if result["wrong"]:
            print(f"\n{name} gets wrong: " + "; ".join(result["wrong"]))


if __name__ == "__main__":
    main()
