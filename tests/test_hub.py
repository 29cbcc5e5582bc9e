"""resolve_model against a real local HTTP server that answers like the Hub.

``tests/support/hub_server.py`` serves folders on 127.0.0.1 the way ``huggingface_hub``
reads the Hub (repo info, tree listing, resolve with ETag / X-Repo-Commit /
sizes / Range).  The served repo has the published layout (fp16 backbone at
the root, ``int4/``, ``cuda/``, a shared ``audio_tokenizer/``, a manifest of a
foreign format in each backbone folder) made of tiny converted folders whose
backbone is causal, as the published export's is.  HF_ENDPOINT points at the
server and HF_HOME / OMNIVOICE_CACHE at per-test folders.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import re
import shutil

import onnx
import pytest

from omnivoice_demo import hub
from omnivoice_demo.errors import ModelFolderError, ModelNotAvailable, OmniVoiceError
from omnivoice_demo.hub import (BuildExtrasMissingError, ModelDownloadError, ProgressEvent, ResolvedModel,
                                add_model_arguments, resolve_from_args, resolve_model)
from omnivoice_demo.hub import build as hub_build
from omnivoice_demo.storage.manifest import MANIFEST_NAME, load_manifest, verify_files, write_manifest
from omnivoice_demo.backbones.repair import is_causal_graph, make_bidirectional
from tests.support.hub_server import HubServer

REPO = "onnx-community/OmniVoice-Onnx"
OURS_REPO = "someone/omnivoice-ours"
BIG = "int4/llm_decoder.onnx.data"


def foreign_manifest(precision: str, files: list[str]) -> dict:
    """A manifest of some other tool's format (the published one is not ours)."""
    return {"model": "OmniVoice", "exporter": "community onnx export", "precision": precision,
            "files": sorted(files)}


def backbone_files(folder: pathlib.Path) -> list[pathlib.Path]:
    return [p for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST_NAME]


def distinct_copy(source: pathlib.Path, dest: pathlib.Path, tag: str) -> None:
    """Copy a file so that its bytes differ from every other copy but it stays valid
    (the Hub cache stores blobs by checksum: identical copies would never be fetched twice)."""
    if not tag:
        os.link(source, dest)
    elif source.suffix == ".onnx":
        model = onnx.load(str(source), load_external_data=False)
        model.doc_string = f"copy {tag}"
        onnx.save(model, str(dest))
    elif source.suffix == ".json":  # trailing whitespace, a different pattern per tag
        dest.write_bytes(source.read_bytes() + "".join(" \t"[b & 1] for b in tag.encode()).encode() + b"\n")
    else:  # external weights: trailing bytes are never read
        dest.write_bytes(source.read_bytes() + b"\0" + tag.encode())


@pytest.fixture(scope="module")
def codec_folder(tiny_checkpoint, tiny_causal_folder, tmp_path_factory) -> pathlib.Path:
    """A folder with the tiny checkpoint's audio_tokenizer/ graphs (convert's codec-only run if the
    causal folder has none)."""
    from convert.pipeline import convert_checkpoint

    if (tiny_causal_folder / "audio_tokenizer").is_dir():
        return tiny_causal_folder
    out = tmp_path_factory.mktemp("codec") / "codec"
    convert_checkpoint(tiny_checkpoint, out, profile="cpu_fp32", codec_only=True, progress=lambda line: None)
    return out


@pytest.fixture(scope="module")
def published_repo(tiny_causal_folder, codec_folder, tmp_path_factory) -> pathlib.Path:
    """The published layout: fp16 at the root, int4/, cuda/, audio_tokenizer/ shared; causal backbones."""
    root = tmp_path_factory.mktemp("published") / "repo"
    for sub, precision, tag in (("", "fp16", "fp16"), ("int4", "int4", ""), ("cuda", "fp16-cuda", "cuda")):
        folder = root / sub
        folder.mkdir(parents=True, exist_ok=True)
        for path in backbone_files(tiny_causal_folder):
            distinct_copy(path, folder / path.name, tag)
        names = [p.name for p in backbone_files(tiny_causal_folder)]
        (folder / MANIFEST_NAME).write_text(json.dumps(foreign_manifest(precision, names), indent=1))
    shutil.copytree(codec_folder / "audio_tokenizer", root / "audio_tokenizer", copy_function=os.link)
    (root / "README.md").write_text("# OmniVoice ONNX (test copy)\n")
    (root / ".gitattributes").write_text("*.onnx filter=lfs diff=lfs merge=lfs -text\n")
    return root


@pytest.fixture(scope="module")
def ours_repo(tiny_causal_folder, codec_folder, tmp_path_factory) -> pathlib.Path:
    """A repo of our own format: folders not named after a precision, our manifests say which is which."""
    root = tmp_path_factory.mktemp("ours") / "repo"
    (root / "variant-a").mkdir(parents=True)  # cpu_fp32, causal, no codec of its own
    for path in backbone_files(tiny_causal_folder):
        os.link(path, root / "variant-a" / path.name)
    manifest = load_manifest(tiny_causal_folder)
    write_manifest(root / "variant-a", {k: v for k, v in manifest.items()
                                        if k not in ("format", "format_version", "files")})
    # variant-b: bidirectional, its own codec inside, our manifest labels it int4 ("cpu")
    make_bidirectional(tiny_causal_folder, root / "variant-b")
    if not (root / "variant-b" / "audio_tokenizer").is_dir():
        shutil.copytree(codec_folder / "audio_tokenizer", root / "variant-b" / "audio_tokenizer")
    manifest = load_manifest(root / "variant-b")
    write_manifest(root / "variant-b", {k: v for k, v in manifest.items()
                                        if k not in ("format", "format_version", "files")} | {"profile": "cpu"})
    # variant-a has no codec of its own: the one at the root serves it
    shutil.copytree(codec_folder / "audio_tokenizer", root / "audio_tokenizer", copy_function=os.link)
    return root


@pytest.fixture(scope="module")
def server(published_repo, ours_repo):
    with HubServer(page_size=7) as hub_server:  # small pages: the listing is paginated with Link headers
        hub_server.add_repo(REPO, published_repo)
        hub_server.add_repo(OURS_REPO, ours_repo)
        yield hub_server


def go_online(monkeypatch) -> None:
    """As if this process had started without HF_HUB_OFFLINE=1: conftest sets it before
    huggingface_hub is imported, and huggingface_hub reads it once, at import."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def hf_env(server, tmp_path, monkeypatch):
    """HF_* and our cache for one test; the server's log and faults start empty."""
    go_online(monkeypatch)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv(hub.CACHE_ENV, str(tmp_path / "ours"))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    server.reset_log()
    server.clear_faults()
    yield tmp_path
    server.clear_faults()


def snapshot_dir(tmp_path: pathlib.Path, repo: str = REPO) -> pathlib.Path:
    """The one snapshot of ``repo`` in the test's Hugging Face cache, as huggingface_hub finds it."""
    from huggingface_hub import scan_cache_dir

    [cached] = [r for r in scan_cache_dir(tmp_path / "hf" / "hub").repos if r.repo_id == repo]
    [revision] = cached.revisions
    return pathlib.Path(revision.snapshot_path)


@pytest.mark.parametrize("env", [
    {},
    {"HF_HOME": "{tmp}/home"},
    {"XDG_CACHE_HOME": "{tmp}/xdg"},
    {"HF_HOME": "{tmp}/home", "HF_HUB_CACHE": "{tmp}/hubcache"},
    {"HUGGINGFACE_HUB_CACHE": "{tmp}/legacy"},
    {"HF_HUB_CACHE": "~/hf-cache"},
])
def test_the_hugging_face_cache_folder_is_where_huggingface_hub_puts_it(env, tmp_path):
    """``hf_cache_dir`` (read when called; huggingface_hub reads its constant once, at import) against
    ``huggingface_hub.constants.HF_HUB_CACHE`` of a fresh interpreter under the same environment."""
    import os
    import subprocess
    import sys

    from omnivoice_demo.hub.cache import hf_cache_dir

    names = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME")
    environ = {k: v for k, v in os.environ.items() if k not in names}
    environ.update({k: v.format(tmp=tmp_path) for k, v in env.items()})
    library = subprocess.run([sys.executable, "-c", "from huggingface_hub import constants; "
                              "print(constants.HF_HUB_CACHE)"], env=environ, capture_output=True, text=True,
                             check=True).stdout.strip()
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(environ)
        ours = hf_cache_dir()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert ours == pathlib.Path(library)


def needed_int4(published_repo: pathlib.Path) -> set[str]:
    return {p.relative_to(published_repo).as_posix() for p in published_repo.rglob("*")
            if p.is_file() and p.relative_to(published_repo).parts[0] in ("int4", "audio_tokenizer")}


# --- the main path --------------------------------------------------------------------


def test_resolve_downloads_only_int4_repairs_and_reports(hf_env, server, published_repo, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    events: list[ProgressEvent] = []
    resolved = resolve_model(REPO, precision="int4", progress=events.append)
    path = resolved.path

    # only int4/ and the codec were downloaded; neither the root (fp16) nor cuda/ backbone
    assert server.downloaded_paths(REPO) == needed_int4(published_repo)
    assert all(r.authorization == "Bearer hf_test_token" for r in server.requests)

    # a ready folder in our cache, repaired, self-contained, with a manifest of ours
    assert isinstance(resolved, ResolvedModel) and resolved.verified == "sha256"
    assert path.is_relative_to(hf_env / "ours") and resolved.repaired and resolved.subfolder == "int4"
    manifest = load_manifest(path)
    verify_files(path, manifest)
    assert manifest["backbone_attention"] == "bidirectional"
    assert not is_causal_graph(onnx.load(str(path / "llm_decoder.onnx"), load_external_data=False))
    assert (path / "audio_tokenizer" / "higgs_decoder.onnx").is_file()
    assert json.loads((path / "source_manifest.json").read_text())["precision"] == "int4"
    assert manifest["origin"]["commit"] == resolved.commit and manifest["origin"]["folder"] == "int4"

    # the Hugging Face cache is untouched: still the causal graph, bytes as served
    snap = snapshot_dir(hf_env)
    assert is_causal_graph(onnx.load(str(snap / "int4" / "llm_decoder.onnx"), load_external_data=False))
    for rel in needed_int4(published_repo):
        assert hashlib.sha256((snap / rel).read_bytes()).hexdigest() == \
            hashlib.sha256((published_repo / rel).read_bytes()).hexdigest()

    # the user is told: a notice event, and on the result
    notices = [e.notice for e in events if e.notice]
    assert len(notices) == 1 and "causal" in notices[0] and "both directions" in notices[0]
    assert resolved.notices == notices
    # structured download progress: files and bytes, monotonic, ending complete
    downloads = [e for e in events if e.stage == "download" and e.bytes_total]
    total = sum((published_repo / rel).stat().st_size for rel in needed_int4(published_repo))
    assert downloads and all(e.bytes_total == total for e in downloads)
    assert [e.bytes_done for e in downloads] == sorted(e.bytes_done for e in downloads)
    assert downloads[-1].bytes_done == total and downloads[-1].files_done == downloads[-1].files_total
    assert {"resolve", "download", "verify", "repair", "ready"} <= {e.stage for e in events}

    # the next time: the repaired copy is reused, nothing downloaded, the notice repeated
    server.reset_log()
    events.clear()
    again = resolve_model(REPO, precision="int4", progress=events.append)
    assert again.path == path and again.repaired
    assert server.downloads() == []
    assert any("repaired copy" in (e.notice or "") for e in events)


def test_other_precisions_take_their_own_folder(hf_env, server):
    assert resolve_model(REPO, precision="cuda").subfolder == "cuda"
    assert {p.split("/")[0] for p in server.downloaded_paths(REPO)} == {"cuda", "audio_tokenizer"}

    server.reset_log()
    assert resolve_model(REPO, precision="fp16").subfolder == ""  # the root of the published layout
    downloaded = server.downloaded_paths(REPO)
    assert "llm_decoder.onnx.data" in downloaded and not any(p.startswith(("int4/", "cuda/")) for p in downloaded)
    assert ".gitattributes" not in downloaded
    # the codec was already in the Hugging Face cache from the cuda download
    assert not any(p.startswith("audio_tokenizer/") for p in downloaded)

    with pytest.raises(ModelNotAvailable, match=r"no model folder for precision fp32.*int4 \(int4/\)"):
        resolve_model(REPO, precision="fp32")


def test_repo_of_our_format_is_chosen_by_manifest_and_verified(hf_env, server, ours_repo):
    resolved = resolve_model(OURS_REPO, precision="int4")
    path = resolved.path
    assert resolved.subfolder == "variant-b" and not resolved.repaired  # bidirectional already: copied, not repaired
    assert len(load_manifest(path)["repairs"]) == 1  # the publisher's own repair, recorded in its manifest
    downloaded = server.downloaded_paths(OURS_REPO)
    assert {p.split("/")[0] for p in downloaded} == {"variant-a", "variant-b"}
    assert {p for p in downloaded if p.startswith("variant-a/")} == {f"variant-a/{MANIFEST_NAME}"}  # read to choose
    manifest = load_manifest(path)
    assert manifest["model"]["num_codebooks"] == 8  # our manifest's model constants are kept
    verify_files(path, manifest)

    assert resolve_model(OURS_REPO, precision="int4").repaired is False  # reused, same answer

    resolved = resolve_model(OURS_REPO, precision="fp32")  # cpu_fp32 in our manifest: variant-a, causal
    assert resolved.subfolder == "variant-a" and resolved.repaired
    assert load_manifest(resolved.path)["profile"] == "cpu_fp32"


def test_new_commit_gets_a_new_folder_and_the_old_one_is_pruned(hf_env, server, published_repo, tmp_path):
    first = resolve_model(REPO, precision="int4")
    changed = tmp_path / "changed"
    shutil.copytree(published_repo, changed, copy_function=os.link)
    (changed / "int4" / "genai_config.json").unlink()
    (changed / "int4" / "genai_config.json").write_text(
        (published_repo / "int4" / "genai_config.json").read_text() + "\n")
    try:
        server.add_repo(REPO, changed)  # main moves to a new commit
        server.reset_log()
        second = resolve_model(REPO, precision="int4")
    finally:
        server.add_repo(REPO, published_repo)
    assert second.commit != first.commit and second.path != first.path and second.repaired
    assert server.downloaded_paths(REPO) == {"int4/genai_config.json"}  # the rest is in the HF cache
    assert not first.path.exists()  # main no longer points there
    # a pinned revision is its own key
    pinned = resolve_model(f"{REPO}@{first.commit}", precision="int4")
    assert pinned.path == first.path and pinned.commit == first.commit


# --- interrupted downloads ------------------------------------------------------------


def test_transfer_cut_in_the_middle_resumes_with_range(hf_env, server, published_repo, monkeypatch):
    chunk = 64 * 1024
    import huggingface_hub.constants

    # huggingface_hub writes (and resumes from) whole chunks; smaller ones than its 10 MiB for the tiny files
    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", chunk)
    size = (published_repo / BIG).stat().st_size
    cut = size // 2 + 1234
    server.cut_after(REPO, BIG, cut)

    path = resolve_model(REPO, precision="int4").path
    verify_files(path, load_manifest(path))

    first, second = server.downloads(REPO, BIG)
    assert first.cut and first.range is None and first.bytes_sent == cut
    resumed_at = (cut // chunk) * chunk  # huggingface_hub keeps whole chunks
    assert second.range == f"bytes={resumed_at}-" and second.status == 206
    assert second.bytes_sent == size - resumed_at  # only the remainder


def test_failed_run_keeps_complete_files_and_next_run_continues(hf_env, server, published_repo):
    size = (published_repo / BIG).stat().st_size
    server.cut_after(REPO, BIG, size // 3)
    server.fail(REPO, BIG, status=503)  # the connection does not come back during this run
    with pytest.raises(ModelDownloadError, match="run again to continue"):
        resolve_model(REPO, precision="int4")
    complete = {r.path.split("/resolve/", 1)[1].split("/", 1)[1]
                for r in server.downloads(REPO) if r.status == 200 and not r.cut}
    assert BIG not in complete and len(complete) >= 1

    server.clear_faults()
    server.reset_log()
    path = resolve_model(REPO, precision="int4").path
    again = server.downloaded_paths(REPO)
    assert BIG in again and not (again & complete)  # complete files are not fetched again
    verify_files(path, load_manifest(path))


# --- offline --------------------------------------------------------------------------


def test_offline_with_warm_cache_works_with_the_server_stopped(published_repo, tmp_path, monkeypatch):
    own = HubServer().start()
    own.add_repo(REPO, published_repo)
    go_online(monkeypatch)
    monkeypatch.setenv("HF_ENDPOINT", own.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv(hub.CACHE_ENV, str(tmp_path / "ours"))
    try:
        online = resolve_model(REPO, precision="int4")
        # another program fetches a file of the repo by its branch name: huggingface_hub records the ref in its cache
        from huggingface_hub import hf_hub_download

        hf_hub_download(REPO, sorted(needed_int4(published_repo))[0], revision="main", endpoint=own.url,
                        cache_dir=str(tmp_path / "hf" / "hub"))
    finally:
        own.stop()

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline=None reads the environment
    offline = resolve_model(REPO, precision="int4")
    assert offline.path == online.path and offline.repaired and offline.commit == online.commit
    verify_files(offline.path, load_manifest(offline.path))

    # our ready copy gone: assembled (and repaired) again from the Hugging Face cache alone
    shutil.rmtree(online.path)
    rebuilt = resolve_model(REPO, precision="int4", offline=True)
    assert rebuilt.path == online.path and rebuilt.repaired
    verify_files(rebuilt.path, load_manifest(rebuilt.path))

    # our whole cache gone, refs and listings too: the commit from the Hugging Face cache's ref of main (read by
    # huggingface_hub's scan_cache_dir), the files from its snapshot
    shutil.rmtree(tmp_path / "ours")
    alone = resolve_model(REPO, precision="int4", offline=True)
    assert alone.commit == online.commit and alone.repaired
    verify_files(alone.path, load_manifest(alone.path))

    # online but the Hub unreachable: the cached copy, with a notice
    events = []
    again = resolve_model(REPO, precision="int4", offline=False, progress=events.append)
    assert again.path == online.path
    assert any("could not be reached" in (e.notice or "") for e in events)

    # another precision was never downloaded: the error names its files
    with pytest.raises(ModelNotAvailable, match=r"files of .*\(cuda/\).* not in the Hugging Face cache.*network access"):
        resolve_model(REPO, precision="cuda", offline=True)


def test_offline_with_cold_cache_says_what_is_missing_and_how_to_get_it(hf_env, server):
    with pytest.raises(ModelNotAvailable) as info:
        resolve_model(REPO, precision="int4", offline=True)
    message = str(info.value)
    assert REPO in message and "int4" in message and "never downloaded" in message
    assert "network access" in message and "--model DIR" in message
    assert server.requests == []
    assert isinstance(info.value, OmniVoiceError)  # the family every entry point maps


def test_unreachable_hub_with_cold_cache(tmp_path, monkeypatch):
    go_online(monkeypatch)
    stopped = HubServer().start()
    url = stopped.url
    stopped.stop()
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with pytest.raises(ModelNotAvailable, match="could not be reached"):
        resolve_model(REPO, precision="int4", cache_dir=tmp_path / "ours")


# --- corruption -----------------------------------------------------------------------


def test_corrupted_download_is_detected_and_named(hf_env, server):
    server.corrupt(REPO, BIG)  # every transfer of it is corrupted (same size, one byte flipped)
    with pytest.raises(ModelFolderError, match=r"int4/llm_decoder\.onnx\.data fails the Hub's sha256"):
        resolve_model(REPO, precision="int4")
    assert len(server.downloads(REPO, BIG)) == 2  # it was fetched once more before giving up

    # corrupted once only: fetched again, and the user is told
    server.clear_faults()
    events = []
    path = resolve_model(REPO, precision="int4", progress=events.append).path
    verify_files(path, load_manifest(path))
    assert any(BIG in (e.notice or "") for e in events)


def test_damaged_ready_folder_is_named_and_rebuilt(hf_env, server):
    path = resolve_model(REPO, precision="int4").path
    target = path / "audio_tokenizer" / "higgs_decoder.onnx"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    server.reset_log()
    events = []
    again = resolve_model(REPO, precision="int4", progress=events.append).path
    assert again == path
    verify_files(again, load_manifest(again))
    assert any("audio_tokenizer/higgs_decoder.onnx" in (e.notice or "") for e in events)
    assert server.downloads() == []  # rebuilt from the Hugging Face cache


# --- local folders, the build route, the command line ---------------------------------


def test_local_folder_spec(hf_env, published_repo, tmp_path):
    # the published layout on disk: the int4 folder is found, repaired into our cache
    resolved = resolve_model(published_repo, precision="int4")
    path = resolved.path
    assert resolved.repaired and path.is_relative_to(hf_env / "ours") and resolved.subfolder == "int4"
    verify_files(path, load_manifest(path))
    assert resolve_model(published_repo, precision="int4").path == path  # reused

    # a ready folder of ours is used where it is
    assert resolve_model(str(path)).path == path

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelFolderError, match="no OmniVoice ONNX model"):
        resolve_model(empty)
    with pytest.raises(ModelNotAvailable, match="neither an existing folder nor a Hub repo id"):
        resolve_model("./no/such/folder")


def test_a_model_folder_keeps_its_own_precision(hf_env, tiny_fp32_folder):
    """Without a precision, our fp32 folder is used as it is (int4 is only the Hub's default)."""
    resolved = resolve_model(tiny_fp32_folder)
    assert resolved.path == tiny_fp32_folder.resolve() and resolved.precision == "fp32"
    with pytest.raises(ModelFolderError, match="no model folder for precision int4"):
        resolve_model(tiny_fp32_folder, precision="int4")


def test_local_checkpoint_needs_build(tiny_checkpoint, hf_env):
    with pytest.raises(ModelFolderError, match="PyTorch checkpoint"):
        resolve_model(tiny_checkpoint)


def test_build_route_without_extras_says_what_to_install(hf_env, server, monkeypatch):
    monkeypatch.setattr(hub_build, "missing_build_modules", lambda: ["onnxruntime-genai", "olive-ai"])
    with pytest.raises(BuildExtrasMissingError) as info:
        resolve_model("k2-fsa/OmniVoice", build=True)
    assert "scripts/setup_dev.sh" in str(info.value) and "requirements-dev.txt" not in str(info.value)
    assert "onnxruntime-genai, olive-ai" in str(info.value)
    assert server.requests == []  # nothing downloaded before the check


def test_command_line_arguments(hf_env, published_repo):
    parser = add_model_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--model", str(published_repo), "--precision", "cuda", "--offline"])
    assert args.offline is True and args.precision == "cuda"
    lines = []
    resolved = resolve_from_args(args, progress=lambda e: lines.append(e.message))
    assert resolved.subfolder == "cuda" and resolved.repaired and lines
    # no --precision: a model folder keeps its own, the Hub gets the default (int4)
    assert parser.parse_args([]).offline is None and parser.parse_args([]).precision is None


# --- the resolved model runs ----------------------------------------------------------


def test_resolved_model_loads_and_generates_token_exact(hf_env, server, tiny_fp32_folder):
    """The repaired published folder generates the same tokens as our bidirectional build of the
    same weights (which test_convert checks against the PyTorch reference)."""
    from omnivoice_demo.engine import loop as engine_module
    path = resolve_model(REPO, precision="int4").path
    repaired = engine_module.OmniVoiceEngine(path)
    ours = engine_module.OmniVoiceEngine(tiny_fp32_folder)
    kwargs = dict(language="en", duration=1.0, num_step=8, seed=1234, postprocess=False)
    a = repaired.generate("Hello there.", **kwargs)
    b = ours.generate("Hello there.", **kwargs)
    assert len(a.codes) == len(b.codes) >= 1
    for x, y in zip(a.codes, b.codes):
        assert (x == y).all()


def test_resolver_hashes_and_engine_then_checks_sizes(hf_env, tiny_fp32_folder, tmp_path):
    """One checksum pass per start: the resolver hashes (and names a corrupt file), the engine opened
    with verify="size" checks sizes only, and still refuses a file of the wrong size."""
    from omnivoice_demo.engine import loop as engine_module
    folder = tmp_path / "model"
    shutil.copytree(tiny_fp32_folder, folder)
    resolved = resolve_model(folder)
    assert resolved.path == folder.resolve() and resolved.verified == "sha256"
    engine_module.OmniVoiceEngine(resolved.path, verify="size")

    target = folder / "audio_tokenizer" / "higgs_decoder.onnx.data"
    if not target.is_file():
        target = next(p for p in sorted(folder.rglob("*.data")))
    rel = target.relative_to(folder).as_posix()
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, different bytes: only a checksum sees it
    target.write_bytes(bytes(data))
    with pytest.raises(ModelFolderError, match=re.escape(rel) + ".*sha256"):
        resolve_model(folder)
    assert resolve_model(folder, checksums=False).verified == "size"

    target.write_bytes(bytes(data) + b"\0")  # one byte longer: sizes catch it
    with pytest.raises(ModelFolderError, match=re.escape(rel) + ".* bytes, the manifest says"):
        engine_module.OmniVoiceEngine(folder, verify="size")


def readme_python_example() -> str:
    """The README's Python example, as a reader copies it: the first ```python block after "**Python**"."""
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    after = readme[readme.index("**Python**"):]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readmes_python_example_runs_as_shown(hf_env, server, monkeypatch, tmp_path):
    """The README's snippet, unchanged, against the Hub stand-in serving the published layout: it downloads,
    repairs, generates and writes out.wav (no line of it is rewritten for the test)."""
    import soundfile

    code = readme_python_example()
    assert len(code.strip().splitlines()) < 10, "the README's Python example is kept under ten lines"
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    audio, rate = soundfile.read(tmp_path / "out.wav")
    assert rate == 24000 and len(audio) > 0
