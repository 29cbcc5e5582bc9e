"""Shared fixtures: random-weight OmniVoice checkpoints and the folders built from them.

Everything is built offline from random weights in a per-session temporary
folder; nothing is downloaded.  Each folder is built once per session, when a
test first asks for it.

Tiers: ``pytest -m "not slow"`` (the fast tier) needs only the tiny checkpoint,
its PyTorch reference and ``tiny_fp32_folder``.  A test that asks for any other
folder (``SLOW_FIXTURES``, each one more Olive build) is marked ``slow`` here,
so a new test lands in the right tier by the fixtures it uses; tests that are
slow for another reason (long reference runs, the browser) carry the marker
themselves.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import tempfile

import pytest

# under CI (or OMNIVOICE_REQUIRE_SERVICES=1, as .ci/run sets) a skipped PostgreSQL or Ray test fails instead
from tests.support.ci_skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# our cache (built folders, the backbone choice) in a fresh folder per test run, never the user's
os.environ.setdefault("OMNIVOICE_CACHE", tempfile.mkdtemp(prefix="omnivoice-test-cache-"))

ARTIFACTS = pathlib.Path(__file__).resolve().parent.parent / "test-artifacts"

#: fixtures that build model graphs beyond the fast tier's one fp32 folder (and its codec export)
SLOW_FIXTURES = frozenset({"tiny_int4_folder", "tiny_fp16_folder", "tiny_causal_folder",
                           "export_fp16"})  # test_codec's fp16 codec


#: the modules that start a local Ray cluster (``ray.init``, ``--ray``, ``serve --replicas``): they take turns
#: (``one_ray_module_at_a_time``)
RAY_MODULES = frozenset({"tests.test_batch", "tests.test_book", "tests.test_replicas"})


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` every test that needs one of ``SLOW_FIXTURES`` (directly or through a fixture)."""
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module", autouse=True)
def one_ray_module_at_a_time(request):
    """A Ray module holds a lock of this machine's test runs while it runs.  ``scripts/test.sh`` runs two
    pytest-xdist workers (``--dist loadfile``: a module's tests on one worker), and ``ray.init`` and ``--ray
    auto`` join any Ray cluster they find running on the machine (Ray looks for its GCS processes), so a Ray
    module on one worker would join the cluster of another's.  Other modules run beside a Ray module as usual."""
    if request.module.__name__ not in RAY_MODULES:
        yield
        return
    from filelock import FileLock

    with FileLock(os.path.join(tempfile.gettempdir(), f"omnivoice-tests-ray-{os.getuid()}.lock")):
        yield


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> pathlib.Path:
    """A tiny random OmniVoice checkpoint (PyTorch), loadable by omnivoice.OmniVoice.from_pretrained."""
    from convert.random_checkpoint import build

    return build("tiny", tmp_path_factory.mktemp("ckpt") / "tiny", seed=0)


@pytest.fixture(scope="session")
def reference_model(tiny_checkpoint):
    """The PyTorch reference on the tiny checkpoint (SDPA attention, eval mode)."""
    import torch
    from omnivoice import OmniVoice

    torch.set_num_threads(2)
    return OmniVoice.from_pretrained(str(tiny_checkpoint), attn_implementation="sdpa").eval()


@pytest.fixture(scope="session")
def artifacts_dir() -> pathlib.Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def _convert(tiny_checkpoint, root, profile, name=None, **kwargs):
    from convert.pipeline import convert_checkpoint

    return convert_checkpoint(tiny_checkpoint, root / (name or profile), profile=profile,
                              progress=lambda line: None, **kwargs)


@pytest.fixture(scope="session")
def tiny_onnx_root(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture(scope="session")
def tiny_fp32_folder(tiny_checkpoint, tiny_onnx_root) -> pathlib.Path:
    """The reference-exact CPU folder (cpu_fp32 profile) with the codec."""
    return _convert(tiny_checkpoint, tiny_onnx_root, "cpu_fp32")


@pytest.fixture(scope="session")
def tiny_int4_folder(tiny_checkpoint, tiny_onnx_root) -> pathlib.Path:
    """The default CPU folder (int4 backbone and embeddings, fp32 heads) with the codec."""
    return _convert(tiny_checkpoint, tiny_onnx_root, "cpu")


@pytest.fixture(scope="session")
def tiny_fp16_folder(tiny_checkpoint, tiny_onnx_root) -> pathlib.Path:
    """cpu_fp16: fp16 audio graphs, int4 backbone, without the codec."""
    return _convert(tiny_checkpoint, tiny_onnx_root, "cpu_fp16", include_codec=False)


@pytest.fixture(scope="session")
def tiny_causal_folder(tiny_checkpoint, tiny_onnx_root) -> pathlib.Path:
    """An fp32 folder whose backbone keeps genai's causal attention, as the published export does."""
    return _convert(tiny_checkpoint, tiny_onnx_root, "cpu_fp32", name="causal", bidirectional=False)


# --- the speech recogniser: a small random Whisper with Whisper's real tokenizer -------------------------

@pytest.fixture(scope="session")
def whisper_checkpoint(tmp_path_factory) -> pathlib.Path:
    """A random-weight Whisper checkpoint (``convert.whisper_checkpoint``, size "test"; 40 tokens per window:
    the released 448 makes the tests slow), alignment heads openai-whisper's default."""
    from convert.whisper_checkpoint import build_checkpoint

    return build_checkpoint("test", tmp_path_factory.mktemp("whisper") / "ckpt", seed=0, max_length=40)


@pytest.fixture(scope="session")
def recognizer_folder(whisper_checkpoint, tmp_path_factory) -> pathlib.Path:
    """The recogniser folder of ``whisper_checkpoint`` (fp32 and int8 graphs, with the alignment graphs)."""
    from convert.whisper import convert_whisper

    return convert_whisper(whisper_checkpoint, tmp_path_factory.mktemp("whisper") / "onnx", ("fp32", "int8"))


# --- the tiny engine in process, for the tests of limits, malformed requests and the queue ---------------

@pytest.fixture(scope="module")
def engine(tiny_fp32_folder):
    """The tiny fp32 folder's engine, one per test module (a module may define its own ``engine``)."""
    from omnivoice_demo.engine.loop import OmniVoiceEngine

    return OmniVoiceEngine(tiny_fp32_folder, verify="size", calibrate=False, backbone="fp32")


@pytest.fixture
def limited(engine):
    """The module's engine with other limits for one test (restored after it)."""
    original = engine.limits

    def set_limits(**fields):
        engine.limits = dataclasses.replace(original, **fields)
        return engine
    yield set_limits
    engine.limits = original


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the session (``tests/support/postgres.py``; skipped, saying why, where the
    binaries are missing)."""
    from tests.support import postgres

    reason = postgres.why_not()
    if reason:
        pytest.skip(reason)
    server = postgres.PostgresServer().start()
    yield server
    server.stop()
