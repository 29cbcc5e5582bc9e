"""What a finished generation was, in the same words for every front end (/speak's details, the HTTP headers)."""

from __future__ import annotations

import json

from ..storage.digests import codes_sha256


def details(result, model_label: str) -> dict:
    """What a finished generation was: seed, settings, sizes, timings, codes digest (for headers and /speak)."""
    return {"seed": int(result.seed), "model": model_label, "duration_s": round(result.duration, 3),
            "frames": result.frames, "chunks": len(result.chunks), "rtf": round(result.rtf, 4),
            "timings": {k: round(v, 4) for k, v in result.timings.items()},
            "settings": {k: v for k, v in result.settings.items()}, "codes_sha256": codes_sha256(result.codes),
            **({"checks": checks_of(result)} if result.checks else {}),
            **({"turns": [dict(turn) for turn in result.turns]} if getattr(result, "turns", None) else {})}


def checks_of(result) -> list[dict]:
    """The sentence check of each chunk (guard on): its CER, its takes and the kept one; [] with the check off."""
    return [check.to_dict() for check in result.checks]


def checks_header(checks: list[dict]) -> str:
    """The checks as one HTTP header value: per chunk its CER, the kept take, whether it passed and each take's
    score (no transcripts, so the header stays short); compact JSON, non-ASCII escaped (headers are latin-1)."""
    short = [{"chunk": c["chunk"], "cer": c["cer"], "kept": c["kept"], "passed": c["passed"],
              "takes": [t["score"] for t in c["takes"]]} for c in checks]
    return json.dumps(short, ensure_ascii=True, separators=(",", ":"))
