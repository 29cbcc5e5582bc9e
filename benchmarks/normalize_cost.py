"""What reading numbers as words costs: the normaliser's build, and its time per character of text.

    python -m benchmarks.normalize_cost [--chars 600] [--rounds 3]

One process: the English normaliser is built (timed), then, alternating, ``--rounds`` times each, a text of
``--chars`` characters of ordinary sentences with a few numbers, and one of the same length that is mostly
digits, dates and money, are normalised (the function's cache cleared before each, so each is the work of a
new text); the language detection that decides it (``text_language.detect_language``) is timed on the
sentences too.  Prints a JSON line per timing and a last line with the best milliseconds per character.
"""

from __future__ import annotations

import argparse
import json
import os
import time

SENTENCES = ("The meeting moved to the large room on the second floor, and everyone brought a notebook. "
             "We talked about the plan for the spring, then about the budget of 12 people. ")
DIGITS = "Call 555-0199 on 2025-12-01 at 7:30 pm; it costs $4.99, 15% off, 3/4 of 10 km. "


def text_of(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    from omnivoice_demo.text import normalize, text_language

    tick = time.perf_counter()
    normalize.normalize_text("It costs $1.", "en")
    build = time.perf_counter() - tick
    print(json.dumps({"build_s": round(build, 2), "load_before": round(os.getloadavg()[0], 2)}), flush=True)
    texts = {"sentences": text_of(SENTENCES, args.chars), "digits": text_of(DIGITS, args.chars)}
    best = {name: float("inf") for name in (*texts, "detection")}
    for round_ in range(args.rounds):
        for name, text in texts.items():
            normalize.read_as_words.cache_clear()  # where the reading is cached
            load = os.getloadavg()[0]
            tick = time.perf_counter()
            normalize.normalize_text(text, "en")
            spent = time.perf_counter() - tick
            best[name] = min(best[name], spent)
            print(json.dumps({"round": round_, "text": name, "chars": len(text), "seconds": round(spent, 3),
                              "load_before": round(load, 2)}), flush=True)
        text_language.detect_language.cache_clear()
        tick = time.perf_counter()
        text_language.detect_language(texts["sentences"])
        best["detection"] = min(best["detection"], time.perf_counter() - tick)
    print(json.dumps({"ms_per_char": {name: round(1000 * seconds / args.chars, 3) for name, seconds in best.items()},
                      "chars": args.chars, "build_s": round(build, 2)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
