"""The comparison with the exact run, read from the output folder: per item, per configuration, and summed up.

``EvalReport.rows``: one row per configuration, the exact one first, each score as
mean and worst item; ``items``: every item x seed x candidate; ``markdown``: the
table (and the per-codebook agreement) that ``report.md`` holds.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

from ..audio.metrics import log_mel_distance
from ..batch.store import OutputFolder
from .candidates import EXACT_NAME
from .scores import UNSPACED_LANGUAGES, codes_agreement, corpus_rates, error_rates

#: the format of every run's audio in the output folder
AUDIO_FORMAT = "wav"

#: the Markdown table's columns: (key in a summary row, header)
COLUMNS = (("agreement", "codes agreement ↑"), ("mel_distance", "log-mel distance ↓"),
           ("duration_ratio", "duration ratio"), ("wer", "WER % ↓"), ("cer", "CER % ↓"),
           ("similarity", "speaker sim ↑"), ("time_s", "time s"), ("rtf", "RTF ↓"))
NOTE = ("Each cell: mean over items (worst item). Agreement, log-mel distance and duration ratio compare each "
        "output with the exact configuration's at the same seed. WER/CER: summed edits over summed words/characters "
        "(worst: one item's rate), text normalised (NFKC, case folded, punctuation removed, numbers as written); "
        "read CER for Chinese and Japanese. WER and CER are shown as percentages (5.0% = 1 error in 20 words); "
        "report.json keeps them as ratios (0.05).")
#: the columns shown as percentages of a ratio (report.json keeps the ratios)
PERCENT = ("wer", "cer")


@dataclasses.dataclass
class EvalReport:
    rows: list[dict]
    items: list[dict]
    markdown: str
    notes: list[str]
    counts: dict

    def to_dict(self) -> dict:
        return {"summary": self.rows, "items": self.items, "notes": self.notes, "counts": self.counts,
                "normalisation": NOTE}

    def notes_markdown(self) -> str:
        return "\n\n".join([NOTE] + [f"Note: {note}" for note in self.notes])

    def table(self) -> tuple[list[str], list[list]]:
        """(headers, rows of text) of the summary, for a data frame."""
        headers = ["configuration", "settings"] + [header for _, header in COLUMNS]
        return headers, [[row["configuration"], row["describe"]] + [_cell(row, key) for key, _ in COLUMNS]
                         for row in self.rows]


def build_report(items, runs, configurations, top: OutputFolder, scorers, counts) -> EvalReport:
    per_item = []
    for item, seed in runs:
        folder = OutputFolder(top.path / f"{item.id}-s{seed}")
        exact = folder.read_sidecar(EXACT_NAME)
        exact_codes = np.asarray(exact["codes"])
        exact_audio = _audio(folder, EXACT_NAME)
        for configuration in configurations:
            sidecar = folder.read_sidecar(configuration.name)
            codes = np.asarray(sidecar["codes"])
            agreement, per_codebook = codes_agreement(exact_codes, codes)
            row = {"item": item.id, "seed": seed, "language": item.language, "configuration": configuration.name,
                   "folder": folder.path.name, "agreement": agreement, "per_codebook": per_codebook,
                   "mel_distance": (0.0 if configuration.name == EXACT_NAME
                                    else log_mel_distance(exact_audio, _audio(folder, configuration.name))),
                   "duration_ratio": sidecar["seconds"] / exact["seconds"] if exact["seconds"] else math.nan,
                   "seconds": sidecar["seconds"], "time_s": sidecar["time"], "rtf": sidecar["rtf"]}
            if sidecar.get("transcript"):
                row["transcript"] = sidecar["transcript"]["text"]
                row["errors"] = error_rates(item.text, row["transcript"]).to_dict()
            if sidecar.get("similarity"):
                row["similarity"] = sidecar["similarity"]["value"]
            per_item.append(row)
    rows = [_summary(configuration, [r for r in per_item if r["configuration"] == configuration.name])
            for configuration in configurations]
    notes = list(scorers.notes)
    count_dict = dataclasses.asdict(counts)
    return EvalReport(rows=rows, items=per_item, markdown=_markdown(rows, notes, count_dict, len(runs)),
                      notes=notes, counts=count_dict)


def _audio(folder: OutputFolder, name: str) -> np.ndarray:
    return read_run_audio(folder, name)[0]


def read_run_audio(folder: OutputFolder, name: str) -> tuple[np.ndarray, int]:
    import soundfile

    audio, rate = soundfile.read(str(folder.audio_path(name, AUDIO_FORMAT)), dtype="float32")
    return audio, rate



def _summary(configuration, rows: list[dict]) -> dict:
    from .scores import ErrorRates

    summary = {"configuration": configuration.name, "describe": configuration.describe(), "runs": len(rows),
               "per_codebook": np.mean([r["per_codebook"] for r in rows], axis=0).tolist()}
    summary["agreement"] = _mean_worst([r["agreement"] for r in rows], min)
    summary["mel_distance"] = _mean_worst([r["mel_distance"] for r in rows], max)
    summary["duration_ratio"] = _mean_worst([r["duration_ratio"] for r in rows], lambda v: max(v, key=_off_one))
    scored = [r for r in rows if "errors" in r]
    if scored:
        total = corpus_rates([ErrorRates(**{k: r["errors"][k] for k in ("word_errors", "words", "char_errors",
                                                                        "chars")}) for r in scored])
        spaced = [r for r in scored if r["language"] not in UNSPACED_LANGUAGES]
        summary["wer"] = {"mean": total.wer, "worst": max((r["errors"]["wer"] for r in spaced), default=None)}
        summary["cer"] = {"mean": total.cer, "worst": max(r["errors"]["cer"] for r in scored)}
    similar = [r["similarity"] for r in rows if "similarity" in r]
    if similar:
        summary["similarity"] = _mean_worst(similar, min)
    summary["time_s"] = {"mean": float(np.mean([r["time_s"] for r in rows])),
                         "worst": max(r["time_s"] for r in rows), "total": float(sum(r["time_s"] for r in rows))}
    audio = sum(r["seconds"] for r in rows)
    summary["rtf"] = {"mean": summary["time_s"]["total"] / audio if audio else math.nan,
                      "worst": max(r["rtf"] for r in rows)}
    return summary


def _off_one(ratio: float) -> float:
    return abs(math.log(ratio)) if ratio and ratio > 0 else math.inf


def _mean_worst(values: list[float], worst) -> dict:
    return {"mean": float(np.mean(values)), "worst": float(worst(values))}


def _cell(row: dict, key: str) -> str:
    if row["configuration"] == EXACT_NAME and key in ("agreement", "mel_distance", "duration_ratio"):
        return "exact"
    value = row.get(key)
    if not value:
        return "–"
    form = ("{:.1%}" if key in PERCENT else "{:.2f}" if key in ("time_s", "rtf") else "{:.3f}").format
    worst = value.get("worst")
    return form(value["mean"]) if worst is None else f"{form(value['mean'])} ({form(worst)})"


def _markdown(rows: list[dict], notes: list[str], counts: dict, runs: int) -> str:
    headers = ["configuration", "settings"] + [header for _, header in COLUMNS]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join([row["configuration"], row["describe"]]
                                       + [_cell(row, key) for key, _ in COLUMNS]) + " |")
    codebooks = len(rows[0]["per_codebook"])
    lines += ["", "Codes agreement per codebook (mean over items):", "",
              "| configuration | " + " | ".join(f"cb{k}" for k in range(codebooks)) + " |",
              "|" + "---|" * (codebooks + 1)]
    for row in rows[1:]:
        lines.append(f"| {row['configuration']} | " + " | ".join(f"{v:.3f}" for v in row["per_codebook"]) + " |")
    lines += ["", NOTE, "", f"{runs} item x seed runs per configuration; this run generated {counts['generated']}, "
              f"reused {counts['reused']}, transcribed {counts['transcribed']}, embedded {counts['embedded']}."]
    lines += [f"Note: {note}" for note in notes]
    return "\n".join(lines) + "\n"


def summary_row(report: EvalReport, name: str) -> Optional[dict]:
    return next((row for row in report.rows if row["configuration"] == name), None)
