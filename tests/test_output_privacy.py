"""Output files cannot be guessed, and on a shared server each is served only to the visitor who made it.

Output names carry a random token; the output folder knows each file's owner (and that of Gradio's copies)
for as long as it keeps them; a shared server (a subprocess, the tiny fp32 model) answers anyone else
404, as for a file that does not exist, while its own visitors and the Gradio client still get theirs;
local mode hides no output.
"""

from __future__ import annotations

import pathlib
import re

import httpx
import pytest

from tests.support.app_server import AppProcess
from tests.test_http_api import wait_model_loaded


# --- names and owners in the output folder ----------------------------------------------------------------

def test_output_names_carry_a_random_token(tmp_path):
    from omnivoice_demo.storage.outputs import OutputFolder

    folder = OutputFolder(tmp_path / "out")
    first, second = folder.path("omnivoice-20260101-120000-speak-42-job2", ".wav"), \
        folder.path("omnivoice-20260101-120000-speak-42-job2", ".wav")
    assert first != second and first.parent == tmp_path / "out"
    token = first.name.removeprefix("omnivoice-20260101-120000-speak-42-job2-").removesuffix(".wav")
    assert len(token) >= 24 and int(token, 16) >= 0   # 96 random bits


def test_an_output_is_readable_by_its_owner_only_and_a_copy_of_it_too(tmp_path):
    from omnivoice_demo.storage.outputs import OutputFolder

    now = [0.0]
    folder = OutputFolder(tmp_path / "out", max_age_seconds=100, copies_kept_seconds=50, clock=lambda: now[0])
    mine = folder.path("omnivoice-speak-42", ".wav", owner="a" * 32)
    mine.write_bytes(b"RIFF")
    copy = tmp_path / "gradio-cache" / "0123abcd" / mine.name   # Gradio serves a copy named as the output
    beside = folder.written_beside(folder.path("voice-1234", ".npz", owner="a" * 32), ".json")
    assert folder.readable_by(mine, "a" * 32) and folder.readable_by(copy, "a" * 32)
    assert folder.readable_by(beside, "a" * 32)  # an export's .json is the .npz's owner's too
    for stranger in ("b" * 32, None):
        assert folder.readable_by(mine, stranger) is False and folder.readable_by(copy, stranger) is False
    dotted = f"{tmp_path}/gradio-cache/../out/{mine.name}"
    assert folder.readable_by(dotted, "b" * 32) is False
    assert folder.readable_by(tmp_path / "out" / "made-before-a-restart.wav", "a" * 32) is False  # nobody's
    assert folder.readable_by(tmp_path / "out" / "no-such-file.wav", None) is False
    assert folder.readable_by(tmp_path / "elsewhere" / "upload.wav", None) is None  # not ours: Gradio decides
    now[0] = 151.0  # past the output's age and the copies' time: the owner is forgotten, the copy nobody's
    assert folder.readable_by(mine, "a" * 32) is False and folder.readable_by(copy, "a" * 32) is None


def test_local_mode_hides_no_output(tmp_path):
    from omnivoice_demo.studio import ModelManager, Studio, VoiceLibrary

    local = Studio(models=ModelManager(), voices=VoiceLibrary(tmp_path / "voices"), out_dir=tmp_path / "out")
    path = local.output_path("omnivoice-speak", ".wav", owner="a" * 32)
    assert not local.output_hidden_from(str(path), None) and not local.output_hidden_from(str(path), "b" * 32)


# --- a shared server serves outputs only to their owner ---------------------------------------------------

@pytest.fixture(scope="module")
def shared_server(tiny_fp32_folder, tmp_path_factory):
    server = AppProcess(["--model", str(tiny_fp32_folder), "--precision", "fp32", "--shared"],
                        tmp_path_factory.mktemp("owners"))
    try:
        wait_model_loaded(server)
        yield server
    finally:
        server.stop()


def _visitor(server) -> httpx.Client:
    """A visitor with a cookie jar who has loaded the page (and so has its owner cookie)."""
    client = httpx.Client(base_url=server.url, timeout=60)
    assert client.get("/").status_code == 200
    return client


def test_a_shared_servers_outputs_are_served_to_the_visitor_who_made_them_only(shared_server, tmp_path):
    from gradio_client import Client

    page = httpx.get(shared_server.url, timeout=60)
    cookies = page.headers.get_list("set-cookie")
    assert any("omnivoice-owner-lax=" in c and "HttpOnly" in c and "SameSite=Lax" in c for c in cookies), cookies
    assert any("SameSite=None" in c and "Secure" in c for c in cookies), cookies

    alice = Client(shared_server.url, download_files=False, verbose=False)
    result = alice.predict(text="Hello.", num_step=1, seed=0, api_name="/speak")
    url = result[0]["url"]
    assert "/gradio_api/file=" in url
    own = httpx.get(url, cookies=alice.cookies, timeout=60)
    assert own.status_code == 200 and own.content[:4] == b"RIFF"

    bob = _visitor(shared_server)
    for stranger in (bob, httpx.Client(timeout=60)):  # another owner cookie, or none
        refused = stranger.get(url)
        assert refused.status_code == 404, refused.text  # before: 200, the file to anyone with its name
        assert refused.json() == {"detail": "Not Found"}

    # the file itself in the output folder: Alice's, by the same token; a name there of no one is no one's
    token = re.search(r"-([0-9a-f]{24})\.wav", url).group(1)
    original = next((shared_server.log_path.parent / "data" / "outputs").glob(f"*-{token}.wav"))
    route = f"/gradio_api/file={original}"
    assert httpx.get(shared_server.url.rstrip("/") + route, cookies=alice.cookies, timeout=60).status_code == 200
    assert bob.get(route).status_code == 404
    missing = bob.get(f"/gradio_api/file={original.parent / 'omnivoice-nothing.wav'}")
    assert missing.status_code == 404 and missing.json() == {"detail": "Not Found"}  # the same answer

    # a visitor's upload is theirs to fetch as before (the file route still serves what is not an output)
    uploaded = bob.post("/gradio_api/upload", files={"files": ("clip.wav", b"RIFF-not-an-output")})
    assert uploaded.status_code == 200, uploaded.text
    assert bob.get(f"/gradio_api/file={uploaded.json()[0]}").content == b"RIFF-not-an-output"


def test_the_gradio_clients_own_downloads_still_work_in_shared_mode(shared_server):
    from gradio_client import Client

    client = Client(shared_server.url, verbose=False)   # downloads the results it gets, with its cookies
    path, seed, _ = client.predict(text="Hi.", num_step=1, seed=3, api_name="/speak")
    assert pathlib.Path(path).read_bytes()[:4] == b"RIFF" and seed == 3
