"""The request models of the HTTP API: one pydantic model per body, what ``/openapi.json`` describes.

* ``SpeechBody``: ``POST /v1/audio/speech`` (and any route that takes the same body);
  ``SpeechBody.request()`` is the checked ``SpeechRequest`` that ``api.speech`` plans.
* ``RenameVoiceBody``: ``PATCH /v1/audio/voices/{id}``.
* ``VoiceUpload``, ``VariantUpload``: the multipart forms of ``POST /v1/audio/voices`` and
  ``POST /v1/audio/voices/{id}/variants`` (read within their cap by ``api.bodies.read_upload``).

How the checks and the errors stay as they were: each field's validator is the check that field
always had, raising the engine's ``InvalidInput`` with its message and ``param``; pydantic keeps that
exception as the error's cause and ``openai_errors.refusal`` answers with it, so a body a model refuses
gets the same 400 (or 413) as before, naming the field.  The fields are declared in the order their
checks ran, and the first error is the one answered.

Which limits are constraints here: the fixed ones are field constraints that the model enforces
(OpenAI's ``speed`` range, the stream formats and the presets as enums, the types).  The server's
``Limits`` (``max_text_chars``, ``max_steps``, ``max_upload_bytes``, ...) are runtime values that an
operator sets per server and that the engine reads at the moment of each request (a loaded model's
limits); they are checked there, in the engine, so every front end inherits them and a 413 names the
limit, and the fields that they bound name them in their descriptions.  The generation settings
(``guidance_scale``, ...) carry their ranges from ``GenerationConfig``'s ``Setting`` in the schema;
``GenerationConfig`` itself checks them (numbers sent as text are read, as before), after the model and
the voice are found.  Text fields are not checked as ``str`` by pydantic, which would refuse a lone
surrogate with its own message: the engine's "not valid Unicode" answers that, naming the field.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar, Optional

from pydantic import (BaseModel, ConfigDict, Field, SkipValidation, ValidationError, ValidationInfo, WithJsonSchema,
                      create_model, field_validator, model_validator)

from ..settings.generation import NORMALIZE_AUTO, GenerationConfig
from ..text.lexicon import Lexicon, from_mapping
from ..settings.presets import ALIASES, PRESETS, preset_values, under_preset
from ..errors import InvalidInput, excerpt
from ..text.script import check_speakers
from . import encoding
from .bodies import parse_json
from .openai_errors import refusal

#: model names OpenAI clients send: they mean the active model
OPENAI_MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
DEFAULT_MODEL = "omnivoice"
STREAM_FORMATS = ("audio", "sse")
#: the ``speed`` OpenAI accepts; values outside the model's range are clamped to it
OPENAI_SPEED = (0.25, 4.0)


@dataclasses.dataclass
class SpeechRequest:
    text: str
    model: str
    voice: object
    response_format: str
    stream_format: Optional[str]
    language: Optional[str]
    instructions: Optional[str]
    settings: dict
    speed_note: Optional[str] = None   # the X-OmniVoice-Speed header when the speed asked for was clamped
    strict: bool = False               # refuse instructions with words not understood
    pronunciations: Optional[Lexicon] = None   # our extension: {"word": "[B EY1 S]"} (text/lexicon.py)
    script: bool = False                       # our extension: input is a dialogue script (text/script.py)
    speakers: Optional[dict] = None            # the script's names -> voices


class RequestBody(BaseModel):
    """A JSON request body: an object whose unknown fields are ignored (clients send their own extras)."""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)

    #: what a body that is not valid JSON is told to send
    example: ClassVar[str] = ""
    #: the 400 of a body that is JSON but not an object: (message, param)
    not_an_object: ClassVar[tuple[str, Optional[str]]] = ("The request body must be a JSON object.", None)

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, data):
        if isinstance(data, bytes):   # JSON sent with another Content-Type (curl -d): FastAPI passes the bytes
            data = parse_json(data, cls.example)
        if not isinstance(data, dict):
            raise cls.refused()
        # a required field that is missing is checked as null, by the field's own check (its message)
        return {**{name: None for name, field in cls.model_fields.items() if field.is_required()}, **data}

    @classmethod
    def refused(cls) -> InvalidInput:
        """The 400 of a body that is not a JSON object."""
        return InvalidInput(*cls.not_an_object)

    @classmethod
    def checked(cls, data):
        """``data`` validated by the model; a refusal raises the check's own ``InvalidInput``."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise refusal(exc.errors()) from None


def _text(description: str, **schema):
    """A text field: checked by its field's validator (a lone surrogate is left for the engine to name)."""
    return Annotated[Optional[str], SkipValidation, Field(description=description, json_schema_extra=schema or None)]


def text_field(value, name: str, required: bool = False) -> Optional[str]:
    """A text field's check: a string (or null, or blank when not required)."""
    if value is None or (isinstance(value, str) and not value.strip() and not required):
        if required:
            raise InvalidInput(f"{name} is required: give the text to speak.", param=name)
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {type(value).__name__}.", param=name)
    return value


def _flag(name: str, value, show=excerpt) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false, got {show(value)}.", param=name)
    return value


def _setting_schema(name: str) -> dict:
    """A generation setting's JSON schema: its kind and ``GenerationConfig``'s range (numbers as text are read too)."""
    kind, setting = GenerationConfig.kind(name), GenerationConfig.setting(name)
    schema: dict = {"type": {bool: "boolean", int: "integer"}.get(kind, "number"), "description": setting.help}
    if kind is not bool and setting.low is not None:
        schema.update(minimum=setting.low, maximum=setting.high)
    return {"anyOf": [schema, {"type": "null"}], "description": setting.help}


class _SpeechFields(RequestBody):
    """OpenAI's fields, then ours (``api.speech`` says what each does); the generation settings follow."""

    input: _text("The text to speak (a dialogue script with script: true; SSML when it starts with <speak). "
                 "At most the server's max_text_chars characters of text (max_ssml_chars of SSML markup).")
    model: _text("omnivoice (the active model), a loaded model's label (GET /v1/models), or OpenAI's "
                 "tts-1, tts-1-hd, gpt-4o-mini-tts (the active model).") = Field(None, validate_default=True)
    voice: Annotated[Any, WithJsonSchema({
        "anyOf": [{"type": "string"}, {"type": "object", "properties": {"id": {"type": "string"}}}, {"type": "null"}],
        "description": "A saved voice, a named design (GET /v1/audio/voices), a design written out "
                       "(\"female, low pitch\"), or auto."})] = None
    response_format: _text("The audio format (GET /health lists this machine's).",
                           enum=list(encoding.FORMATS)) = Field(None, validate_default=True)
    stream: Optional[bool] = Field(None, description="false: one whole file; true: the audio as it is made "
                                   "(stream_format audio, OpenAI's default) unless stream_format is given.")
    stream_format: Optional[str] = Field(None, validate_default=True, json_schema_extra={"enum": list(STREAM_FORMATS)},
                                         description="audio (the default: the file's bytes as each chunk is "
                                                     "decoded) or sse (speech.audio.delta events).")
    speed: Optional[float] = Field(None, ge=OPENAI_SPEED[0], le=OPENAI_SPEED[1],
                                   description="OpenAI's 0.25-4, clamped to the model's range (the "
                                               "X-OmniVoice-Speed header says what was used).")
    steps: Annotated[Any, WithJsonSchema({**_setting_schema("num_step"), "description": (
        "Unmasking steps (num_step); at most the server's max_steps.")})] = None
    preset: Optional[str] = Field(None, json_schema_extra={"enum": [*PRESETS, *ALIASES]},
                                  description="A speed preset under the settings given.")
    strict: bool = Field(False, description="true: refuse instructions with any word not understood.")
    script: bool = Field(False, description="true: input is a dialogue script (Name: text lines).")
    speakers: Annotated[Any, WithJsonSchema({
        "anyOf": [{"type": "object", "additionalProperties": {"type": "string"}}, {"type": "null"}],
        "description": "A script's names -> voices (with script: true)."})] = Field(None, validate_default=True)
    language: _text("The language of the text (a name or code; default: detected).") = None
    instructions: _text("The voice in your own words (its items replace the voice's design); at most "
                        "max_description_words words.") = None
    pronunciations: Annotated[Any, WithJsonSchema({
        "anyOf": [{"type": "object", "additionalProperties": {"type": "string"}},
                  {"type": "array", "items": {"type": "object", "properties": {
                      "word": {"type": "string"}, "say": {"type": "string"}, "match_case": {"type": "boolean"}}}},
                  {"type": "null"}],
        "description": "A lexicon: {\"word\": \"[B EY1 S]\"} or a list of {word, say, match_case}."})] = Field(
        None, validate_default=True)

    @field_validator("input", mode="before")
    @classmethod
    def _input(cls, value):
        return text_field(value, "input", required=True)

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value):
        return text_field(value, "model") or DEFAULT_MODEL

    @field_validator("response_format", mode="before")
    @classmethod
    def _format(cls, value):
        return encoding.check_format(value or ("mp3" if "mp3" in encoding.formats() else "wav"))

    @field_validator("stream", mode="before")
    @classmethod
    def _stream(cls, value):
        return value if value is None else _flag("stream", value)

    @field_validator("stream_format", mode="before")
    @classmethod
    def _stream_format(cls, value, info: ValidationInfo):
        """OpenAI's default is to stream the audio as it is made; ``stream: false`` asks for one whole file, and so
        does saying nothing of streaming for a format whose streamed header would not tell its length (WAV,
        ``encoding.streamed_by_default``).  The field holds what was resolved: None for a whole file."""
        stream = info.data.get("stream")
        if value is None:
            response_format = info.data.get("response_format")
            if stream is None and response_format and not encoding.streamed_by_default(response_format):
                return None
            return None if stream is False else "audio"   # stream: true is OpenAI's default stream_format
        if value not in STREAM_FORMATS:
            raise InvalidInput(f"stream_format must be 'audio' or 'sse', got {excerpt(value)} (send \"stream\": false "
                               "for one whole file).", param="stream_format")
        if stream is False:
            raise InvalidInput("stream is false but stream_format is given; send one of them.", param="stream")
        return value

    @field_validator("speed", mode="before")
    @classmethod
    def _speed(cls, value):
        low, high = OPENAI_SPEED
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not low <= value <= high):
            raise InvalidInput(f"speed must be a number from {low:g} to {high:g} (OpenAI's range), got "
                               f"{excerpt(value)}.", param="speed")
        return value

    @field_validator("preset", mode="before")
    @classmethod
    def _preset(cls, value):
        if value is not None:
            preset_values(value)   # an unknown preset (or not a name) is an InvalidInput listing them
        return value

    @field_validator("strict", mode="before")
    @classmethod
    def _strict(cls, value):
        return _flag("strict", value, show=repr)

    @field_validator("script", mode="before")
    @classmethod
    def _script(cls, value):
        return _flag("script", value)

    @field_validator("speakers", mode="before")
    @classmethod
    def _speakers(cls, value, info: ValidationInfo):
        if not info.data.get("script"):
            if value is not None:
                raise InvalidInput("speakers maps the names of a script to voices: send \"script\": true with it.",
                                   param="speakers")
            return None
        return check_speakers(value)

    @field_validator("language", mode="before")
    @classmethod
    def _language(cls, value):
        return text_field(value, "language")

    @field_validator("instructions", mode="before")
    @classmethod
    def _instructions(cls, value, info: ValidationInfo):
        if info.data.get("script") and value:
            raise InvalidInput("instructions do not apply to a script: give each speaker its voice in speakers, e.g. "
                               "{\"Anna\": \"female, low pitch\"}.", param="instructions")
        return text_field(value, "instructions")

    @field_validator("pronunciations", mode="before")
    @classmethod
    def _pronunciations(cls, value):
        return from_mapping(value)

    @model_validator(mode="after")
    def _loudness_whole(self):
        if getattr(self, "loudness", None) is not None and self.stream_format:
            raise InvalidInput("loudness normalises the whole file: send \"stream\": false with it.", param="loudness")
        return self

    def request(self) -> SpeechRequest:
        """The checked request that ``api.speech`` plans: its generation settings gathered (``steps`` as
        ``num_step``, under its ``preset``), OpenAI's speed clamped to the model's."""
        given = self.model_fields_set
        settings = {name: getattr(self, name) for name in GenerationConfig.names() if name in given and name != "speed"}
        settings.setdefault("normalize_text", NORMALIZE_AUTO)   # people type "$4.99" here: by the text's language
        speed_note = None
        if self.speed is not None:
            settings["speed"], speed_note = _openai_speed(self.speed)
        if self.steps is not None:
            settings["num_step"] = self.steps
        if self.preset is not None:
            settings = under_preset(self.preset, settings)
        return SpeechRequest(text=self.input, model=self.model, voice=self.voice, response_format=self.response_format,
                             stream_format=self.stream_format, language=self.language, instructions=self.instructions,
                             settings=settings, speed_note=speed_note, strict=self.strict,
                             pronunciations=self.pronunciations,
                             script=self.script, speakers=self.speakers if self.script else None)


def _openai_speed(value) -> tuple[float, Optional[str]]:
    """OpenAI's ``speed`` (checked: 0.25-4.0) -> the model's (clamped to its range) and the header saying so."""
    setting = GenerationConfig.setting("speed")
    used = min(max(float(value), setting.low), setting.high)
    if used == value:
        return used, None
    return used, f"{used:g}; asked {value:g}, clamped to the model's {setting.low:g}-{setting.high:g}"


#: the body of ``POST /v1/audio/speech``: the fields above and every generation setting by name (all but
#: ``speed``, which is OpenAI's here), each with its range; a new ``GenerationConfig`` field appears by itself
SpeechBody = create_model(
    "SpeechBody", __base__=_SpeechFields, __module__=__name__, __doc__=_SpeechFields.__doc__,
    **{name: (Annotated[Any, WithJsonSchema(_setting_schema(name))], None)
       for name in GenerationConfig.names() if name not in _SpeechFields.model_fields})


class RenameVoiceBody(RequestBody):
    """The body of ``PATCH /v1/audio/voices/{id}``."""

    example: ClassVar[str] = '{"name": "new name"}'
    not_an_object: ClassVar[tuple[str, Optional[str]]] = ("Send the new name as {\"name\": \"new name\"}.", "name")

    name: _text("The new name (names compare as the voice names do).")

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value):
        if not isinstance(value, str) or not value.strip():
            raise cls.refused()
        return value


_FILE = WithJsonSchema({"type": "string", "format": "binary", "description": "The reference clip (WAV, FLAC, MP3, "
                        "...; at most the server's max_upload_bytes and max_reference_seconds)."})


class ClipUpload(RequestBody):
    """A multipart upload of a reference clip: the clip, its label (``label``), its transcript, the consent.
    Checked in the order a client fills it: the clip, the label, the consent."""

    #: the form field that names what the clip becomes
    label: ClassVar[str] = "name"

    file: Annotated[Any, _FILE] = None
    audio_sample: Annotated[Any, WithJsonSchema({"type": "string", "format": "binary",
                                                 "description": "Another name of file."})] = None
    transcript: _text("What is said in the clip (without it, the server's speech recogniser writes it, if it has "
                      "one); at most max_text_chars characters.") = None
    consent: Annotated[Any, WithJsonSchema({"type": "boolean", "description": "true: you have the right to use "
                                            "this voice (your own, or one you have permission to use)."})] = None

    @property
    def clip(self):
        """The uploaded file (``file``, or ``audio_sample`` as some clients name it)."""
        return self.file or self.audio_sample

    @property
    def value(self) -> str:
        """The label's value (the voice's name, the variant's tag), stripped."""
        return str(getattr(self, self.label) or "").strip()

    @model_validator(mode="after")
    def _filled(self):
        if self.clip is None or not hasattr(self.clip, "read"):
            raise InvalidInput("Send the reference clip as the multipart file field 'file'.", param="file")
        if not self.value:
            what = "the voice a name" if self.label == "name" else "the style a tag (such as cheerful)"
            raise InvalidInput(f"Give {what}: form field '{self.label}'.", param=self.label)
        if str(self.consent or "").strip().lower() not in ("true", "1", "yes", "on"):
            raise InvalidInput("Set consent=true to confirm you have the right to use this voice (your own, or one "
                               "you have permission to use).", param="consent")
        self.transcript = str(self.transcript or "").strip() or None
        return self


class VoiceUpload(ClipUpload):
    """The form of ``POST /v1/audio/voices``: a saved voice named ``name``."""

    model_config = ConfigDict(json_schema_extra={"required": ["file", "name", "consent"]})
    name: Annotated[Any, WithJsonSchema({"type": "string", "description": "The voice's name."})] = None


class VariantUpload(ClipUpload):
    """The form of ``POST /v1/audio/voices/{id}/variants``: a style variant tagged ``tag``."""

    label: ClassVar[str] = "tag"
    model_config = ConfigDict(json_schema_extra={"required": ["file", "tag", "consent"]})
    tag: Annotated[Any, WithJsonSchema({"type": "string", "description": "One word: the style (cheerful, sad, "
                                        "...)."})] = None


def form_schema(model) -> dict:
    """``openapi_extra`` of a route that reads its multipart form itself (``bodies.read_upload``)."""
    return {"requestBody": {"required": True, "content": {"multipart/form-data": {
        "schema": model.model_json_schema()}}}}
