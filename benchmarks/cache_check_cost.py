"""What checking a cached backbone build on load costs: its files' sha256 against the build's ``build.json``.

    python benchmarks/cache_check_cost.py --build /work/models/<cache>/backbones/<key>-int8-row [--rounds 3] [--threads 2]

Alternating rounds in one process of opening the build's session as the engine does it
(``runtime.sessions.open_session``): with the recorded digests (the check: the bytes read into memory for
the session are hashed) and without them (no check); and, alone, hashing the same bytes already in memory.
Prints each round, the medians and the ratio checked / unchecked from the same run, with the load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from omnivoice_demo.backbones.choice import build_record, recorded_digests  # noqa: E402
from omnivoice_demo.runtime.sessions import external_data_files, open_session, session_options  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, type=pathlib.Path, help="a cached build folder (has build.json)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    graphs = [g for g in args.build.glob("*.onnx")]
    if len(graphs) != 1 or not (args.build / "build.json").is_file():
        parser.error("--build must be a cached build folder: one .onnx graph and its build.json")
    graph = graphs[0]
    digests = recorded_digests(build_record(args.build))
    files = [graph] + [graph.parent / name for name in external_data_files(graph)]
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    times: dict[str, list[float]] = {"checked": [], "unchecked": [], "hash only": []}
    for round_ in range(args.rounds):
        for run, check in (("checked", digests), ("unchecked", None)):
            start = time.perf_counter()
            session = open_session(graph, ["CPUExecutionProvider"], session_options(args.threads), digests=check)
            times[run].append(time.perf_counter() - start)
            del session
            print(json.dumps({"round": round_, "run": run, "open_s": round(times[run][-1], 2),
                              "load": os.getloadavg()[0]}), flush=True)
        data = [f.read_bytes() for f in files]
        start = time.perf_counter()
        for blob in data:
            hashlib.sha256(blob).hexdigest()
        times["hash only"].append(time.perf_counter() - start)
        del data
    medians = {run: statistics.median(values) for run, values in times.items()}
    print(json.dumps({"megabytes": round(size_mb), "median_s": {k: round(v, 2) for k, v in medians.items()},
                      "checked / unchecked": round(medians["checked"] / medians["unchecked"], 3),
                      "hash MB/s": round(size_mb / medians["hash only"]), "load": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
