"""A voice store's address is shown without its password, in every form libpq takes one (issue 57): the URL's
userinfo (also with a raw ``@ : /`` inside, or percent-encoded), a ``password=`` query parameter in any position
and case, a key=value connection string (quoted values too); a string that cannot be read is withheld after its
scheme.  The usage error of a command that does not know ``--voice-store`` (argparse repeats what it did not
take) and of the app's parser never repeat it either; an address libpq would read otherwise than written is
refused before any connection, naming it redacted.  (``test_store_url_outputs.py``: the real processes.)"""

from __future__ import annotations

import pytest

from omnivoice_demo.errors import InvalidInput
from omnivoice_demo.studio.store_url import (check_store_url, redact_store_url, redact_text,
                                             store_url_secrets)

#: (the address, what may be shown, every text that must not be: the password as written and as meant)
FORMS = [
    ("postgresql://tts:S3cretPw@db:5432/voices", "postgresql://tts:***@db:5432/voices", ["S3cretPw"]),
    ("postgres://tts:S3cretPw@db/voices", "postgres://tts:***@db/voices", ["S3cretPw"]),
    ("postgresql://tts:S3c%40ret%2FPw@db/voices", "postgresql://tts:***@db/voices",
     ["S3c%40ret%2FPw", "S3c@ret/Pw", "ret"]),
    ("postgresql://tts:S3c@retPw@db/voices", "postgresql://tts:***@db/voices", ["S3c@retPw", "retPw"]),
    ("postgresql://tts:S3c/retPw@db/voices", "postgresql://tts:***@db/voices", ["S3c/retPw", "retPw"]),
    ("postgresql://tts:S3c:ret?Pw@db/voices", "postgresql://tts:***@db/voices", ["S3c:ret?Pw", "ret?Pw"]),
    ("postgresql://tts:S3cretPw@h1:5432,h2:5433/voices", "postgresql://tts:***@h1:5432,h2:5433/voices",
     ["S3cretPw"]),
    ("postgresql://tts@db/voices?password=S3cretPw", "postgresql://tts@db/voices?password=***", ["S3cretPw"]),
    ("postgresql://tts@db/voices?sslmode=require&PassWord=S3cretPw&application_name=tts",
     "postgresql://tts@db/voices?sslmode=require&PassWord=***&application_name=tts", ["S3cretPw"]),
    ("postgresql://db/voices?pass%77ord=S3c%26retPw", "postgresql://db/voices?pass%77ord=***",
     ["S3c%26retPw", "S3c&retPw"]),
    ("postgresql://tts@db/voices?sslpassword=S3cretPw", "postgresql://tts@db/voices?sslpassword=***",
     ["S3cretPw"]),
    ("postgresql://tts:Fir5tPw@db/voices?password=S3cretPw", "postgresql://tts:***@db/voices?password=***",
     ["Fir5tPw", "S3cretPw"]),
    ("postgresql://tts:S3c%zzretPw@db/voices", "postgresql://tts:***@db/voices", ["S3c%zzretPw", "retPw"]),
    ("postgresql://db/voices?password=S3cretPw&x=a@b", "postgresql://***", ["S3cretPw"]),   # cannot be read
    ("host=db password=S3cretPw dbname=voices", "host=db password=*** dbname=voices", ["S3cretPw"]),
    ("host=db password = 'S3c ret\\'Pw' dbname=voices", "host=db password = *** dbname=voices",
     ["S3c ret", "ret\\'Pw", "S3c ret'Pw"]),
    ("host=db sslpassword=S3cretPw", "host=db sslpassword=***", ["S3cretPw"]),
    ("host=db password='S3c retPw dbname=voices", "a connection string (***: withheld, it may hold a password)",
     ["S3c", "retPw"]),   # an unterminated quote: where the value ends is unknown, so nothing of it is shown
]
#: addresses without a password, shown as they are
PLAIN = ["postgresql://tts@db:5432/voices", "postgresql:///voices?host=/var/run/postgresql",
         "postgresql:///voices?service=prod", "/srv/omnivoice/voices", "file:///srv/voices", "voices",
         "postgresql://tts:***@db/voices"]


@pytest.mark.parametrize("url, shown, hidden", FORMS, ids=[form[0] for form in FORMS])
def test_every_form_of_password_is_hidden(url, shown, hidden):
    assert redact_store_url(url) == shown
    for secret in hidden:
        assert secret not in redact_store_url(url)
    assert redact_store_url(redact_store_url(url)) == redact_store_url(url)   # said twice, still the same


@pytest.mark.parametrize("url", PLAIN)
def test_an_address_without_a_password_is_shown_whole(url):
    assert redact_store_url(url) == url and not store_url_secrets(url)


@pytest.mark.parametrize("url, shown, hidden", FORMS, ids=[form[0] for form in FORMS])
def test_text_that_repeats_an_address_hides_its_password(url, shown, hidden):
    """A usage error joins the arguments with blanks, so a password with a blank is found by the argument."""
    message = f"unrecognized arguments: --voice-store {url} --extra"
    for said in (redact_text(message, ["--voice-store", url, "--extra"]),
                 redact_text(f"unrecognized arguments: --voice-store={url}", [f"--voice-store={url}"])):
        assert not any(secret in said for secret in hidden), said
        assert said.startswith("unrecognized arguments: --voice-store")
    assert redact_text(f"see {url.split()[0]} and PGPASSWORD=S3cretPw") .count("S3cretPw") == 0


@pytest.mark.parametrize("url", [
    "postgresql://tts:S3c@retPw@db/voices",       # libpq: password S3c, host retPw@db
    "postgresql://tts:S3c/retPw@db/voices",       # libpq: host tts, port S3c, database retPw@db/voices
    "postgresql://tts:S3c%zzretPw@db/voices",     # not percent-encoding
    "postgresql://tts@db/voices?PASSWORD=S3cretPw",   # libpq knows only the lower-case key
    "host=db password=S3cretPw dbname=voices",    # a key=value string, not a URL: it would be a folder's name
])
def test_an_address_libpq_would_misread_is_refused_naming_it_redacted(url):
    with pytest.raises(InvalidInput) as caught:
        check_store_url(url)
    message = str(caught.value)
    assert "S3c" not in message and "retPw" not in message and "--voice-store" in message
    assert "percent-encode" in message or "give the database as a URL" in message


@pytest.mark.parametrize("url", ["postgresql://tts:S3cretPw@db:5432/voices", "postgresql://tts:S3c%40ret@db/v",
                                 "postgresql://tts:S3c:ret@db/v", "postgresql://tts@db/v?password=S3cretPw",
                                 "postgresql://db/v?sslmode=require&password=S3c%26ret"])
def test_a_well_formed_address_passes_the_check(url):
    check_store_url(url)


def test_open_voice_store_refuses_a_misread_address_before_connecting(tmp_path):
    from omnivoice_demo.studio.voice_store import open_voice_store

    with pytest.raises(InvalidInput) as caught:
        open_voice_store("postgresql://tts:S3c@retPw@127.0.0.1:1/voices", root=tmp_path)
    assert "retPw" not in str(caught.value) and "postgresql://tts:***@127.0.0.1:1/voices" in str(caught.value)
    with pytest.raises(InvalidInput) as caught:
        open_voice_store("ora:S3cretPw@db://x")
    assert "S3cretPw" not in str(caught.value)


@pytest.mark.parametrize("url, shown, hidden", [form for form in FORMS if "://" in form[0]][:10],
                         ids=[form[0] for form in FORMS if "://" in form[0]][:10])
def test_a_usage_error_never_repeats_the_password(url, shown, hidden, capsys):
    """``omnivoice codec`` has no ``--voice-store``: argparse's "unrecognized arguments" would repeat it."""
    from omnivoice_demo.cli.main import main

    for argv in (["codec", "--input", "in.wav", "--voice-store", url],
                 ["codec", "--input", "in.wav", f"--voice-store={url}"],
                 ["languages", url]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        error = capsys.readouterr().err
        assert error.startswith("error: ") and not any(secret in error for secret in hidden), error


def test_the_apps_usage_error_never_repeats_the_password(capsys):
    from omnivoice_demo.app import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--voicestore", "postgresql://tts:S3c ret@db/voices?password=Sec0nd"])
    error = capsys.readouterr().err
    assert "unrecognized arguments" in error and "S3c" not in error and "Sec0nd" not in error


def test_a_visitor_is_told_the_store_is_down_and_the_operator_where(caplog):
    """Where a server answers a stranger (the HTTP API, the page, the Gradio API and Wyoming's error event), a voice
    store that is down is said in ``StoreUnavailable.PUBLIC``'s words and its address is logged; the command line,
    run by the operator, says the address."""
    import logging

    from omnivoice_demo.api.openai_errors import api_error
    from omnivoice_demo.errors import StoreUnavailable, refusal_of
    from omnivoice_demo.studio.messages import error_text
    from omnivoice_demo.ui.error_mapping import ui_error

    detail = "The voice store postgresql://tts:***@db.internal:5432/voices cannot be used now (connection refused)"
    down = StoreUnavailable(detail)
    caplog.set_level(logging.WARNING)
    for said in (api_error(down).message, str(ui_error(down)), error_text(down, "the Wyoming server")):
        assert StoreUnavailable.PUBLIC in said and "db.internal" not in said, said
    logged = [record.getMessage() for record in caplog.records]
    assert len(logged) == 3 and all("db.internal:5432/voices" in line for line in logged), logged
    assert api_error(down).status == 503 and api_error(down).code == "voice_store_unavailable"
    assert "db.internal:5432/voices" in refusal_of(down).message   # the CLI's line (cli/refusals.py)
