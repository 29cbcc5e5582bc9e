"""What the book layer costs against synthesis: reading and planning, joining the chapters, writing the outputs.

    python benchmarks/book_cost.py --model /work/models/full-int4 --preset fast --chapters 3 --sentences 4

Writes an EPUB 3 (ebooklib) of ``--chapters`` chapters of ``--sentences`` English sentences each, then runs
``omnivoice book``'s own functions once, timing each stage: ``read`` (the EPUB read and checked), ``plan``
(sentences, voices, items and their keys), ``synthesis`` (the batch run: engine start-up and every
sentence), ``join`` (chapters joined and levelled, FLAC and subtitles written) and ``outputs`` (the M4B and
the read-along EPUB with its MP3s).  It prints each stage's wall and CPU seconds (this process's: the engine runs
in it), the book layer's share of synthesis by both, and seconds of audio per second of synthesis.  On a
shared, loaded machine the CPU figures are the steadier ones.  Random weights cost what the real model costs
(the length of each sentence comes from the duration estimate, not from the weights).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SENTENCES = ["The harbour was quiet in the early morning light.", "Anna walked along the stone wall to the boats.",
             "A gull cried somewhere above the water.", "She counted the masts, as her father used to do.",
             "The wind carried the smell of salt and tar.", "Nobody else was awake yet in the little town.",
             "At the end of the pier an old man mended a net.", "He nodded to her without a word."]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--preset", default="fast")
    parser.add_argument("--chapters", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=4, help="sentences per chapter")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    from omnivoice_demo.batch.local import InlineBackend
    from omnivoice_demo.batch.worker import ModelSpec
    from omnivoice_demo.book.project import BookSettings, plan_book, run_book
    from omnivoice_demo.book.reading import read_book
    from omnivoice_demo.book.voices import Voicing
    from omnivoice_demo.settings.generation import GenerationConfig
    from tests.support.books import write_epub3

    chapters = [(f"Chapter {c + 1}", [" ".join(SENTENCES[(c + s) % len(SENTENCES)] for s in range(args.sentences))])
                for c in range(args.chapters)]
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        epub = write_epub3(scratch / "bench.epub", chapters)
        tick, cpu = time.perf_counter(), time.process_time()
        book = read_book(epub)
        read, read_cpu = time.perf_counter() - tick, time.process_time() - cpu
        spec = ModelSpec(model=args.model).resolved()
        settings = BookSettings(config=GenerationConfig.preset(args.preset).replace(seed=1), narrator=Voicing("d"))
        tick, cpu = time.perf_counter(), time.process_time()
        plan = plan_book(book, settings)
        planned, planned_cpu = time.perf_counter() - tick, time.process_time() - cpu
        done = run_book(plan, settings, scratch / "out",
                        backend=lambda: InlineBackend(spec, args.threads), progress=False)
        audio = sum(c["samples"] / c["sample_rate"]
                    for c in json.loads((scratch / "out/report.json").read_text())["chapters"])
    wall = {"read": read, "plan": planned, **{k: v for k, v in done.timings.items() if not k.endswith("_cpu")}}
    cpu = {"read": read_cpu, "plan": planned_cpu,
           **{k[:-4]: v for k, v in done.timings.items() if k.endswith("_cpu")}}
    layer = {kind: sum(d[s] for s in ("read", "plan", "join", "outputs")) for kind, d in (("wall", wall), ("cpu", cpu))}
    print(f"{args.chapters} chapters, {len(plan.sentences)} sentences, {audio:.1f} s of audio, preset {args.preset}")
    print(f"  {'stage':<10} {'wall s':>9} {'cpu s':>9}")
    for name in wall:
        print(f"  {name:<10} {wall[name]:9.3f} {cpu[name]:9.3f}")
    for kind in ("wall", "cpu"):
        synthesis = (wall if kind == "wall" else cpu)["synthesis"]
        print(f"book layer (read + plan + join + outputs), {kind}: {layer[kind]:.3f} s = "
              f"{100 * layer[kind] / synthesis:.2f} % of synthesis")
    print(f"synthesis: {audio / wall['synthesis']:.3f} s of audio per wall second, {audio / cpu['synthesis']:.3f} per "
          f"CPU second (start-up included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
