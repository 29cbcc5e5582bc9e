"""Export the reference package's language table to ``omnivoice_demo/data/languages.json``.

The engine must not import ``omnivoice`` at run time, so the table of about
646 languages in ``omnivoice.utils.lang_map`` is copied once, as data, by this
script (it needs the development environment that has ``omnivoice``):

    python scripts/export_reference_tables.py           # write the file
    python scripts/export_reference_tables.py --check   # fail if it is stale

Each entry keeps the lowercase name the reference resolves (``LANG_NAME_TO_ID``
key), its code, and the display name from ``lang_display_name``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

OUTPUT = pathlib.Path(__file__).resolve().parent.parent / "omnivoice_demo" / "data" / "languages.json"


def build_table() -> dict:
    from importlib.metadata import version

    from omnivoice.utils.lang_map import LANG_NAME_TO_ID, lang_display_name

    languages = [
        {"name": name, "code": code, "display": lang_display_name(name)}
        for name, code in sorted(LANG_NAME_TO_ID.items())
    ]
    return {
        "source": f"omnivoice {version('omnivoice')} omnivoice/utils/lang_map.py",
        "languages": languages,
    }


def render(table: dict) -> str:
    """JSON with one language per line, so a diff of the file reads as a diff of the table."""
    rows = ",\n".join("  " + json.dumps(entry, ensure_ascii=False) for entry in table["languages"])
    return (
        "{\n"
        f' "source": {json.dumps(table["source"])},\n'
        ' "languages": [\n'
        f"{rows}\n"
        " ]\n"
        "}\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = render(build_table())
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is stale: rerun scripts/export_reference_tables.py", file=sys.stderr)
            return 1
        print(f"{OUTPUT} is up to date")
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(json.loads(text)['languages'])} languages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
