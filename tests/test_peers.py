"""benchmarks/peers.py runs end to end on the tiny model: ours and the PyTorch reference in their worker processes,
taking turns; the peers not installed are named and left out of the table; the port's log is read for its
synthesis time (a stand-in program printing the port's log lines: the port itself is built by hand, not here)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys
import textwrap
import types

from benchmarks import peers


def test_peers_runs_ours_and_pytorch_side_by_side_and_names_the_peers_not_installed(tiny_fp32_folder, tiny_checkpoint,
                                                                                    tmp_path, capsys):
    out = tmp_path / "peers.json"
    assert peers.main(["--model", str(tiny_fp32_folder), "--reference", str(tiny_checkpoint), "--threads", "1",
                       "--rounds", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    # a reader without the port is told how to get it: the build script, then the two flags
    assert "not installed: build it with `bash benchmarks/build_ggml_peer.sh --dest DIR" in result["not_run"]["ggml"]
    assert "--ggml-cli DIR/build/omnivoice-tts" in printed and "build_ggml_peer.sh" in printed
    # the log's first line and the JSON say what ran and on which commit of ours
    assert json.loads(printed.splitlines()[0])["command"] == result["command"]
    assert result["command"].endswith(f"python benchmarks/peers.py --model {tiny_fp32_folder} --reference "
                                      f"{tiny_checkpoint} --threads 1 --rounds 2 --json {out}")
    if (pathlib.Path(__file__).resolve().parent.parent / ".git").exists():
        assert result["facts"]["ours"]["commit"]
    assert result["facts"]["pytorch"]["omnivoice"] and "Versions: ours " in printed
    if importlib.util.find_spec("openvino") is None:
        assert "not installed" in result["not_run"]["openvino"] and "openvino" not in result["summary"]
    assert len(result["runs"]) == 2
    summary = result["summary"]
    assert {"ours-reference", "ours-fast", "pytorch-32"} <= set(summary)
    assert not {"ggml-32", "ggml-8"} & set(summary)
    for label in ("ours-reference", "ours-fast", "pytorch-32"):
        row = summary[label]
        assert row["synth_s"] > 0 and row["rtf"] > 0 and row["peak_rss_mb"] > 50 and len(row["loads"]) == 2
        assert row["audio_s"] > 4.5
    assert summary["ours-reference"]["x_ours"] == summary["ours-fast"]["x_ours"] == 1.0
    # PyTorch is paired with ours at the same steps and guidance: its ratio is its time over Reference's
    first = result["runs"][0]
    assert summary["pytorch-32"]["compared_with"] == "ours-reference"
    assert first["pytorch-32"]["synth_s"] / first["ours-reference"]["synth_s"] > 0
    assert "| PyTorch reference, fp32 |" in printed and "| ours (ONNX Runtime) |" in printed
    assert "(published) |" in printed and "not rerun here" in printed
    assert result["facts"]["ours"]["backbone"] and result["facts"]["pytorch"]["torch"]


def test_the_ports_synthesis_time_memory_and_threads_come_from_its_own_run(tmp_path):
    """The port's program (here a stand-in that prints its log line) gets the steps, the seed, the duration, the
    text on its standard input and the thread count in OMNIVOICE_CPP_THREADS; its [Perf] Total is the synthesis
    time, its own peak memory and CPU come from wait4, not from this process."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "omnivoice-base-Q8_0.gguf").write_bytes(b"")
    (models / "omnivoice-tokenizer-F32.gguf").write_bytes(b"")
    cli = tmp_path / "omnivoice-tts"
    cli.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import os, sys
        if "--help" in sys.argv:
            sys.exit(print("omnivoice.cpp abc1234", file=sys.stderr))
        args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
        text = sys.stdin.read()
        assert os.environ["OMNIVOICE_CPP_THREADS"] == "3" and args["--duration"] == "5" and args["--seed"] == "7"
        assert "quick brown fox" in text and args["--model"].endswith("base-Q8_0.gguf")
        hold = bytearray(200 * 1024 * 1024)  # a peak of its own
        steps = int(args["--steps"])
        print(f"[Perf] Total {{steps * 100.5:.1f}} ms (T=125, audio 5.00 s, RTF 0.1)", file=sys.stderr)
        """))
    cli.chmod(0o755)
    port = peers.GgmlPort(cli, models, "Q8_0", types.SimpleNamespace(threads=3, seed=7), tmp_path)
    assert port.facts["version"] == "omnivoice.cpp abc1234" and "build" not in port.facts
    assert "ggml unknown" in peers.versions({"ggml": port.facts})
    run = port.run("32")
    assert run["synth_s"] == 3.216 and run["audio_s"] == 5.0
    assert run["peak_rss_mb"] > 200 and run["cpu_s"] > 0


def test_a_port_that_fails_says_so_with_its_log(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "omnivoice-base-Q8_0.gguf").write_bytes(b"")
    (models / "omnivoice-tokenizer-F32.gguf").write_bytes(b"")
    cli = tmp_path / "omnivoice-tts"
    cli.write_text(f"#!{sys.executable}\nimport sys\nprint('omnivoice.cpp x', file=sys.stderr)\n"
                   "sys.exit(0 if '--help' in sys.argv else 3)\n")
    cli.chmod(0o755)
    try:
        peers.GgmlPort(cli, models, "Q8_0", types.SimpleNamespace(threads=1, seed=1), tmp_path)
    except RuntimeError as exc:
        assert "exited 3" in str(exc) and "omnivoice.cpp x" in str(exc)
    else:
        raise AssertionError("a port that exits 3 passed")


def test_ratios_are_paired_within_a_round():
    """The ratio to ours is the median of each round's own ratio, not a ratio of medians."""
    def run(synth):
        return {"wall_s": synth, "synth_s": synth, "rtf": synth / 5, "audio_s": 5.0, "peak_rss_mb": 1,
                "load": 0.0, "others_cores": 0.0}

    rounds = [{"ours-reference": run(10.0), "ggml-32": run(60.0)}, {"ours-reference": run(20.0), "ggml-32": run(80.0)},
              {"ours-reference": run(30.0), "ggml-32": run(30.0)}]
    summary = peers.summary(rounds)
    assert summary["ggml-32"]["x_ours"] == 4.0  # rounds: 6x, 4x, 1x
    assert summary["ggml-32"]["synth_s"] == 60.0 and summary["ours-reference"]["x_ours"] == 1.0


def test_the_build_record_beside_the_ports_build_folder_names_its_ggml(tmp_path):
    """build_ggml_peer.sh writes DIR/peer-build.json and the program is DIR/build/omnivoice-tts: the run reports
    which ggml the port was built with."""
    (tmp_path / "build").mkdir()
    models = tmp_path / "models"
    models.mkdir()
    (models / "omnivoice-base-Q8_0.gguf").write_bytes(b"")
    (models / "omnivoice-tokenizer-F32.gguf").write_bytes(b"")
    cli = tmp_path / "build" / "omnivoice-tts"
    cli.write_text(f"#!{sys.executable}\nimport sys\nprint('omnivoice.cpp 4f33af8 (2026-07-21)', file=sys.stderr)\n"
                   "print('[Perf] Total 10.0 ms (T=1, audio 5.00 s, RTF 0.1)', file=sys.stderr)\n")
    cli.chmod(0o755)
    record = {"port": {"source": "s", "commit": "4f33af8" + "0" * 33},
              "ggml": {"source": "https://github.com/ggml-org/ggml.git", "commit": "9be3133" + "1" * 33},
              "cmake": ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_BLAS=OFF", "-DGGML_LLAMAFILE=OFF"]}
    (tmp_path / "peer-build.json").write_text(json.dumps(record))
    port = peers.GgmlPort(cli, models, "Q8_0", types.SimpleNamespace(threads=2, seed=1), tmp_path)
    assert port.facts["build"] == record
    said = peers.versions({"ggml": port.facts})
    assert said.startswith("omnivoice.cpp 4f33af8 (2026-07-21), ggml 9be3133 from https://github.com/ggml-org/ggml.git")
    assert "-DGGML_LLAMAFILE=OFF" in said


BUILD_SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "build_ggml_peer.sh"


def test_the_build_scripts_patch_gives_the_port_the_thread_count_peers_sets():
    """The patch the build script applies reads the variable peers.py sets, in the port's one thread function."""
    patch = (BUILD_SCRIPT.parent / "ggml_peer_threads.patch").read_text()
    assert patch.startswith("diff --git a/src/backend.h b/src/backend.h")
    assert "static int backend_cpu_n_threads(void) {" in patch
    added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert any('getenv("OMNIVOICE_CPP_THREADS")' in line for line in added)
    assert "OMNIVOICE_CPP_THREADS" in (pathlib.Path(peers.__file__).read_text())
    assert "ggml_peer_threads.patch" in BUILD_SCRIPT.read_text()


def test_the_build_script_refuses_what_it_cannot_build_before_cloning(tmp_path):
    def build(*args):
        return subprocess.run(["bash", str(BUILD_SCRIPT), *args], capture_output=True, text=True, timeout=60)

    assert "unknown option --bogus" in build("--bogus").stderr
    assert "give --dest" in build().stderr
    dest = tmp_path / "port"
    no_checkpoint = build("--dest", str(dest), "--checkpoint", str(tmp_path / "missing"))
    assert no_checkpoint.returncode == 1 and "no checkpoint folder" in no_checkpoint.stderr
    (tmp_path / "ckpt").mkdir()
    not_hf = build("--dest", str(dest), "--checkpoint", str(tmp_path / "ckpt"))
    assert not_hf.returncode == 1 and "has no config.json" in not_hf.stderr
    assert not dest.exists()
    assert "--ggml-commit REV" in build("--help").stdout
