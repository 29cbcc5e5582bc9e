"""The ONNX codec (convert.codec + omnivoice_demo.audio.codec) against the PyTorch Higgs Audio V2 tokenizer.

Everything runs on the tiny random checkpoint (fixture ``tiny_checkpoint``):
random weights say nothing about audio quality, but the two runtimes must
compute the same function on them.

* resampling: ``omnivoice_demo.audio.resample`` equals ``torchaudio.functional.resample``;
* encode: codes from the ONNX graphs equal ``HiggsAudioV2TokenizerModel.encode``;
  a code may differ only where the reference's own best and second-best
  codebook distances tie within float error (checked, not assumed);
* decode: waveform within 1e-4 of the PyTorch decoder, relative to its peak;
* fp16: a stated, looser tolerance;
* shapes unlike the traced one (batch 1-3, other lengths), and clear errors.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torchaudio

HOP = 960
SR = 24000

#: A code may differ from the reference only where the reference's best and
#: second-best squared distances are this close (relative to the best one).
TIE_RELATIVE_GAP = 1e-4
#: Decoder waveform: max |onnx - torch| / max |torch|.
DECODER_RELATIVE_TOL = 1e-4
#: Continuous features (acoustic / semantic graphs): max abs diff / max abs reference.
FEATURE_RELATIVE_TOL = 1e-4
#: fp16 build.  fp16 keeps 11 significant bits (relative rounding 4.9e-4 per
#: op); the encoder features then carry about 1e-3 relative error, which can
#: flip a code only where its two nearest codebook entries lie within about
#: that much of each other, and quantizer_encoder itself stays fp32.  95% code
#: agreement leaves room for such near-ties on real speech; on the tiny model
#: agreement is ~100%.  The decoder accumulates rounding over its ~30 layers:
#: independent errors of 2^-11 per layer stay far under -30 dB of the signal
#: (observed ~65 dB), so 30 dB (errors inaudible under the signal) catches a
#: broken conversion (overflow, a wrong cast) without flagging rounding.
FP16_MIN_CODE_AGREEMENT = 0.95
FP16_MIN_DECODER_SNR_DB = 30.0


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def torch_codec(tiny_checkpoint):
    """The PyTorch reference codec, loaded as the reference loads it."""
    from transformers import HiggsAudioV2TokenizerModel

    torch.set_num_threads(2)
    return HiggsAudioV2TokenizerModel.from_pretrained(str(tiny_checkpoint / "audio_tokenizer")).eval()


@pytest.fixture(scope="module")
def export_fp32(tiny_checkpoint, tmp_path_factory):
    from convert.codec import export_codec

    out = tmp_path_factory.mktemp("codec_fp32")
    files = export_codec(tiny_checkpoint, out, precision="fp32", progress=lambda _msg: None)
    return out, files


@pytest.fixture(scope="module")
def export_fp16(tiny_checkpoint, export_fp32, tmp_path_factory):
    """The fp16 build, converted from the fp32 graphs above (the same graphs a fresh trace gives)."""
    from convert.codec import export_codec

    out = tmp_path_factory.mktemp("codec_fp16")
    files = export_codec(tiny_checkpoint, out, precision="fp16", progress=lambda _msg: None,
                         reuse_fp32_from=export_fp32[0])
    return out, files


@pytest.fixture(scope="module")
def codec32(export_fp32):
    from omnivoice_demo.audio.codec import AudioCodec

    return AudioCodec(export_fp32[0] / "audio_tokenizer")


@pytest.fixture(scope="module")
def codec16(export_fp16):
    from omnivoice_demo.audio.codec import AudioCodec

    return AudioCodec(export_fp16[0] / "audio_tokenizer")


# --------------------------------------------------------------------------- signals


def speechlike(num_samples: int, seed: int, sr: int = SR) -> np.ndarray:
    """A voiced/unvoiced, speech-like test signal, float32, peak about 0.5.

    Harmonic tone (f0 110-230 Hz, 10 harmonics at 1/k) with 5 Hz vibrato,
    syllable-rate (3-5 Hz) amplitude envelope, fricative-like noise bursts and
    a low noise floor.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(num_samples) / sr
    f0 = rng.uniform(110, 230)
    vibrato = 1 + 0.03 * np.sin(2 * np.pi * 5.0 * t + rng.uniform(0, 2 * np.pi))
    phase = 2 * np.pi * np.cumsum(f0 * vibrato) / sr
    voiced = sum(np.sin(k * phase + rng.uniform(0, 2 * np.pi)) / k for k in range(1, 11))
    envelope = np.abs(np.sin(2 * np.pi * rng.uniform(3, 5) * t / 2 + rng.uniform(0, np.pi))) ** 1.5
    signal = voiced * envelope
    for _ in range(max(1, num_samples // (sr // 3))):
        start = int(rng.integers(0, max(1, num_samples - sr // 20)))
        length = int(rng.integers(sr // 50, sr // 10))
        burst = rng.standard_normal(min(length, num_samples - start))
        burst = np.diff(burst, prepend=0.0)  # high-passed: fricative-like
        signal[start:start + burst.size] += 0.6 * burst * np.hanning(burst.size)
    signal += 0.003 * rng.standard_normal(num_samples)
    return (0.5 * signal / max(np.abs(signal).max(), 1e-9)).astype(np.float32)


# --------------------------------------------------------------------------- reference helpers


def reference_branches(codec, audio: np.ndarray):
    """(acoustic, semantic) features of the reference's encode(), padding rule included."""
    import torch.nn.functional as F

    x = torch.from_numpy(audio).reshape(1, 1, -1)
    with torch.no_grad():
        semantic = codec.encoder_semantic(codec._extract_semantic_features(x).transpose(1, 2))
        if codec._get_conv1d_output_lengths(x.shape[2], codec.acoustic_encoder) != semantic.shape[2]:
            acoustic = codec.acoustic_encoder(F.pad(x, (codec.pad, codec.pad)))
        else:
            acoustic = codec.acoustic_encoder(x)
    return acoustic.numpy(), semantic.numpy()


def reference_rvq(codec, acoustic: np.ndarray, semantic: np.ndarray, follow: np.ndarray | None = None):
    """The reference's fc + residual VQ, step by step, with the distances it compared.

    Returns (codes, best, second), each [Q, B, T]: the reference's choice at
    every codebook and the squared distances (float64, recomputed from the
    reference's float32 residual) of its choice and of the runner-up entry.
    With ``follow`` (codes [Q, B, T]) the residual is updated with those codes
    instead of the reference's own choices, so each step sees the history the
    ONNX graph saw: where the histories agree the residual is the reference's
    own, bit for bit.
    """
    with torch.no_grad():
        embeddings = torch.cat([torch.from_numpy(acoustic), torch.from_numpy(semantic)], dim=1)
        embeddings = codec.fc(embeddings.transpose(1, 2)).transpose(1, 2)
        num_q = codec.quantizer.get_num_quantizers_for_bandwidth(codec.config.target_bandwidths[-1])
        residual = embeddings
        codes, best, second = [], [], []
        for q, quantizer in enumerate(codec.quantizer.quantizers[:num_q]):
            projected = quantizer.project_in(residual.permute(0, 2, 1)).double()  # [B, T, D]
            embed = quantizer.codebook.embed.double()  # [K, D]
            dist = (projected.pow(2).sum(-1, keepdim=True) - 2 * projected @ embed.t()
                    + embed.pow(2).sum(-1)[None, None, :])
            top2 = torch.topk(dist, 2, dim=-1, largest=False).values.numpy()
            indices = quantizer.encode(residual)  # the reference's own choice on this residual
            chosen = torch.gather(dist, -1, indices[..., None])[..., 0].numpy()
            codes.append(indices.numpy())
            best.append(chosen)
            second.append(np.where(chosen == top2[..., 0], top2[..., 1], top2[..., 0]))
            used = indices if follow is None else torch.from_numpy(np.ascontiguousarray(follow[q]))
            residual = residual - quantizer.decode(used)
    return np.stack(codes), np.stack(best), np.stack(second)


def assert_codes_match(codec, got: np.ndarray, want: np.ndarray, acoustic: np.ndarray,
                       semantic: np.ndarray, what: str) -> None:
    """ONNX codes ``got`` [Q, B, T] equal the reference's ``want``, except at float ties.

    ``acoustic``/``semantic`` are the reference's own feature maps.  The
    reference RVQ is replayed along the ONNX codes' history
    (``reference_rvq(follow=got)``); every position where the ONNX code
    differs from the reference's choice on that same residual must be a tie:
    relative gap between the reference's best and second-best distance
    < TIE_RELATIVE_GAP, otherwise the test fails.  (At the first difference in
    a frame this residual is the reference's own; a flip there changes the
    residual of the later codebooks of that frame, whose codes may then differ
    from ``want`` and are judged on the residual the ONNX graph really had.)
    """
    assert got.shape == want.shape, f"{what}: codes {got.shape} vs reference {want.shape}"
    ref_codes, _, _ = reference_rvq(codec, acoustic, semantic)
    assert np.array_equal(ref_codes, want), f"{what}: the step-by-step reference must reproduce encode()"
    if np.array_equal(got, want):
        return
    chosen, best, second = reference_rvq(codec, acoustic, semantic, follow=got)
    failures = []
    for q, b, t in zip(*np.nonzero(got != chosen)):
        gap = abs(second[q, b, t] - best[q, b, t]) / max(abs(best[q, b, t]), 1e-12)
        if gap >= TIE_RELATIVE_GAP:
            failures.append(f"codebook {q}, batch {b}, frame {t}: onnx {got[q, b, t]} vs reference "
                            f"{chosen[q, b, t]}, relative distance gap {gap:.2e} (not a tie)")
    assert not failures, f"{what}: codes differ beyond float ties:\n" + "\n".join(failures[:10])
    frames_differ = int((got != want).any(axis=0).sum())
    total_frames = got.shape[1] * got.shape[2]
    assert frames_differ <= max(1, 0.02 * total_frames), (
        f"{what}: {frames_differ} of {total_frames} frames hold a near-tie flip; too many to be chance")


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    assert got.shape == want.shape, f"shape {got.shape} vs reference {want.shape}"
    return float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))


def run_graphs(codec, audio_24k: np.ndarray):
    """The four-graph encode path on audio of any length (no length check): (acoustic, semantic, codes)."""
    from omnivoice_demo.audio.resample import resample

    audio = np.asarray(audio_24k, dtype=np.float32)[None, :]
    acoustic = codec.sessions["acoustic_encoder"].run(None, {"waveform_24k": audio[:, None, :]})[0]
    semantic = codec.sessions["semantic_encoder"].run(
        None, {"waveform_16k": resample(audio, SR, 16000)})[0]
    codes = codec.sessions["quantizer_encoder"].run(
        None, {"acoustic_features": acoustic, "semantic_features": semantic})[0]
    return acoustic, semantic, codes


# --------------------------------------------------------------------------- (a) resampling

RATE_PAIRS = [(24000, 16000), (44100, 24000), (16000, 24000), (22050, 24000), (48000, 24000)]


@pytest.mark.parametrize("orig_freq,new_freq", RATE_PAIRS)
@pytest.mark.parametrize("length", [1, 5, 959, 960 * 3 + 17, 24011])
def test_resample_matches_torchaudio(orig_freq, new_freq, length):
    """Mono [N], stereo [2, N] and batched [B, 1, N] signals equal torchaudio to 1e-5."""
    from omnivoice_demo.audio.resample import resample, resampled_length

    mono = speechlike(length, seed=length, sr=orig_freq) if length > 1 else np.array([0.3], np.float32)
    noise = (0.2 * np.random.default_rng(length).standard_normal(length)).astype(np.float32)
    for signal in (mono, np.stack([mono, noise]), np.stack([mono, noise])[:, None, :]):
        got = resample(signal, orig_freq, new_freq)
        want = torchaudio.functional.resample(torch.from_numpy(signal), orig_freq, new_freq).numpy()
        assert got.dtype == np.float32
        assert got.shape == want.shape
        assert got.shape[-1] == resampled_length(length, orig_freq, new_freq)
        assert np.abs(got - want).max() <= 1e-5, (orig_freq, new_freq, signal.shape)


def test_resample_edge_cases():
    from omnivoice_demo.audio.resample import resample

    x = speechlike(4800, seed=1)
    assert np.array_equal(resample(x, 24000, 24000), x)
    assert resample(x.astype(np.float64), 24000, 16000).dtype == np.float32
    with pytest.raises(ValueError):
        resample(x, 0, 16000)
    with pytest.raises(ValueError):
        resample(x, 24000.5, 16000)
    with pytest.raises(TypeError):
        resample(np.arange(10), 24000, 16000)


# --------------------------------------------------------------------------- export layout


def test_export_layout(export_fp32):
    """Four graphs at opset 20 with the published I/O names, the codec configs, the export record."""
    import onnx

    from convert.codec import GRAPH_IO
    from omnivoice_demo.storage.manifest import CODEC_GRAPHS

    out, files = export_fp32
    for name, rel in CODEC_GRAPHS.items():
        path = out / rel
        assert path in files
        model = onnx.load(str(path), load_external_data=False)
        assert [i.name for i in model.graph.input] == GRAPH_IO[name][0]
        assert [o.name for o in model.graph.output] == GRAPH_IO[name][1]
        assert {op.domain or "ai.onnx": op.version for op in model.opset_import}["ai.onnx"] == 20
    folder = out / "audio_tokenizer"
    assert (folder / "config.json").is_file() and (folder / "preprocessor_config.json").is_file()
    assert not list(folder.glob("*.data")), "the tiny graphs are small: weights stay inside the .onnx files"
    info = json.loads((folder / "codec_export.json").read_text())
    assert {g["precision"] for g in info["graphs"].values()} == {"fp32"}


# --------------------------------------------------------------------------- (b) encode


ENCODE_LENGTHS = [960 * 3, 960 * 25, 24000 + 123, 960 * 40 + 959, 17000]


@pytest.mark.parametrize("length", ENCODE_LENGTHS)
def test_encode_matches_reference(codec32, torch_codec, length):
    """AudioCodec.encode == reference encode(x, bandwidth=None) on speech-like clips.

    Clips whose length is not a multiple of 960 are trimmed first, as the
    reference's create_voice_clone_prompt does.  The acoustic and semantic
    feature maps are compared too: in the tiny random codec the acoustic
    features are ~1e-5 of the semantic ones, so the codes alone would not
    notice a wrong acoustic graph.
    """
    audio = speechlike(length, seed=length)
    audio = audio[: length // HOP * HOP]
    codes = codec32.encode(audio)
    with torch.no_grad():
        want = torch_codec.encode(torch.from_numpy(audio)[None, None], bandwidth=None).audio_codes[0].numpy()
    assert codes.dtype == np.int64 and codes.shape == (8, audio.size // HOP)

    acoustic, semantic, graph_codes = run_graphs(codec32, audio)
    ref_acoustic, ref_semantic = reference_branches(torch_codec, audio)
    assert relative_error(acoustic, ref_acoustic) < FEATURE_RELATIVE_TOL
    assert relative_error(semantic, ref_semantic) < FEATURE_RELATIVE_TOL
    assert np.array_equal(graph_codes[:, 0], codes)
    assert_codes_match(torch_codec, codes[:, None], want[:, None], ref_acoustic, ref_semantic,
                       f"{length} samples")


@pytest.mark.parametrize("length", [1500, 2400, 24000 + 123, 960 * 40 + 959])
def test_graphs_reproduce_acoustic_padding_rule(codec32, torch_codec, length):
    """Untrimmed lengths: the acoustic graph pads by 480 exactly when encode() does, so codes still match."""
    audio = speechlike(length, seed=length + 1)
    acoustic, semantic, codes = run_graphs(codec32, audio)
    ref_acoustic, ref_semantic = reference_branches(torch_codec, audio)
    assert relative_error(acoustic, ref_acoustic) < FEATURE_RELATIVE_TOL
    assert relative_error(semantic, ref_semantic) < FEATURE_RELATIVE_TOL
    with torch.no_grad():
        want = torch_codec.encode(torch.from_numpy(audio)[None, None]).audio_codes.numpy()
    assert_codes_match(torch_codec, codes, want.transpose(1, 0, 2), ref_acoustic, ref_semantic,
                       f"untrimmed {length} samples")


def test_encode_refuses_bad_input(codec32):
    """Lengths that are not a positive multiple of 960, stereo, integer or non-finite audio: a clear ValueError."""
    with pytest.raises(ValueError, match="multiple of 960"):
        codec32.encode(speechlike(24000 + 123, seed=3))
    with pytest.raises(ValueError, match="multiple of 960"):
        codec32.encode(np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="mono"):
        codec32.encode(np.zeros((2, 9600), np.float32))
    with pytest.raises(ValueError, match="floating point"):
        codec32.encode(np.zeros(9600, np.int16))
    bad = speechlike(9600, seed=4)
    bad[5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        codec32.encode(bad)


def test_quantizer_graph_on_unit_scale_features(codec32, torch_codec):
    """quantizer_encoder alone, on random features where acoustic and semantic weigh alike.

    Checks the concat order and the acoustic half of ``fc``, which the tiny
    codec's near-zero acoustic features cannot exercise through encode().
    """
    rng = np.random.default_rng(7)
    cfg = torch_codec.config
    for batch, frames in ((1, 1), (3, 17)):
        acoustic = rng.standard_normal((batch, cfg.acoustic_model_config.hidden_size, frames)).astype(np.float32)
        semantic = rng.standard_normal((batch, cfg.semantic_model_config.hidden_size, frames)).astype(np.float32)
        codes = codec32.sessions["quantizer_encoder"].run(
            None, {"acoustic_features": acoustic, "semantic_features": semantic})[0]
        want, _, _ = reference_rvq(torch_codec, acoustic, semantic)
        assert codes.dtype == np.int64
        assert_codes_match(torch_codec, codes, want, acoustic, semantic, f"quantizer batch {batch} frames {frames}")


# --------------------------------------------------------------------------- (c) decode


@pytest.mark.parametrize("batch,frames", [(1, 1), (1, 13), (2, 40), (1, 75)])
def test_decode_matches_reference(codec32, torch_codec, batch, frames):
    """Random codes: ONNX waveform within 1e-4 (relative to the peak) of the PyTorch decoder."""
    codes = np.random.default_rng(batch * 100 + frames).integers(0, 1024, (batch, 8, frames))
    with torch.no_grad():
        want = torch_codec.decode(torch.from_numpy(codes)).audio_values.numpy()[:, 0, :]
    got = codec32.decode_batch(codes)
    assert got.shape == (batch, HOP * frames) and got.dtype == np.float32
    assert relative_error(got, want) < DECODER_RELATIVE_TOL
    if batch == 1:
        single = codec32.decode(codes[0])
        assert single.shape == (HOP * frames,)
        assert relative_error(single, want[0]) < DECODER_RELATIVE_TOL


def test_decode_refuses_bad_codes(codec32):
    codes = np.zeros((8, 5), np.int64)
    with pytest.raises(ValueError, match="0..1023"):
        codec32.decode(codes + 1024)
    with pytest.raises(ValueError, match="0..1023"):
        codec32.decode(codes - 1)
    with pytest.raises(ValueError, match=r"\[8, frames\]"):
        codec32.decode(np.zeros((7, 5), np.int64))
    with pytest.raises(ValueError, match=r"\[8, frames\]"):
        codec32.decode(np.zeros((1, 8, 5), np.int64))
    with pytest.raises(ValueError, match="integers"):
        codec32.decode(codes.astype(np.float32))
    with pytest.raises(ValueError, match="no frames"):
        codec32.decode(np.zeros((8, 0), np.int64))


# --------------------------------------------------------------------------- (d) fp16


def test_fp16_build(export_fp16, codec16, torch_codec):
    """fp16 graphs: code agreement >= 95% on speech-like clips, decoder SNR >= 30 dB (see the constants)."""
    out, _ = export_fp16
    info = json.loads((out / "audio_tokenizer" / "codec_export.json").read_text())
    graphs = info["graphs"]
    assert graphs["quantizer_encoder"]["precision"] == "fp32"
    assert graphs["acoustic_encoder"]["precision"] == graphs["semantic_encoder"]["precision"] == "fp16"

    agree = total = 0
    for seed, frames in ((11, 25), (12, 50)):
        audio = speechlike(frames * HOP, seed=seed)
        with torch.no_grad():
            want = torch_codec.encode(torch.from_numpy(audio)[None, None]).audio_codes[0].numpy()
        got = codec16.encode(audio)
        agree += int((got == want).sum())
        total += want.size
    assert agree / total >= FP16_MIN_CODE_AGREEMENT, f"fp16 code agreement {agree / total:.3f}"

    codes = np.random.default_rng(5).integers(0, 1024, (2, 8, 30))
    with torch.no_grad():
        want = torch_codec.decode(torch.from_numpy(codes)).audio_values.numpy()[:, 0, :].astype(np.float64)
    got = codec16.decode_batch(codes)
    assert np.isfinite(got).all()
    snr = 10 * math.log10(np.sum(want ** 2) / max(np.sum((got - want) ** 2), 1e-30))
    assert snr >= FP16_MIN_DECODER_SNR_DB, f"fp16 decoder SNR {snr:.1f} dB"


# --------------------------------------------------------------------------- (e) other shapes


@pytest.mark.parametrize("batch", [1, 2, 3])
def test_batches_unlike_the_traced_shape(codec32, torch_codec, batch):
    """Graphs traced at batch 2 x 10 frames run at batch 1-3 and other lengths, row for row."""
    frames = {1: 1, 2: 7, 3: 33}[batch]
    audio = np.stack([speechlike(frames * HOP, seed=50 + i) for i in range(batch)])
    codes = codec32.encode_batch(audio)
    assert codes.shape == (batch, 8, frames)
    with torch.no_grad():
        want = torch_codec.encode(torch.from_numpy(audio)[:, None, :]).audio_codes.numpy()
    ref_acoustic, ref_semantic = reference_branches_batch(torch_codec, audio)
    assert_codes_match(torch_codec, codes.transpose(1, 0, 2), want.transpose(1, 0, 2), ref_acoustic,
                       ref_semantic, f"batch {batch}")
    for i in range(batch):
        assert np.array_equal(codec32.encode(audio[i]), codes[i])

    decoded = codec32.decode_batch(codes)
    with torch.no_grad():
        want_audio = torch_codec.decode(torch.from_numpy(codes)).audio_values.numpy()[:, 0, :]
    assert decoded.shape == (batch, frames * HOP)
    assert relative_error(decoded, want_audio) < DECODER_RELATIVE_TOL


def reference_branches_batch(codec, audio: np.ndarray):
    """reference_branches for a batch [B, N] (lengths are multiples of 960: no padding)."""
    x = torch.from_numpy(audio)[:, None, :]
    with torch.no_grad():
        semantic = codec.encoder_semantic(codec._extract_semantic_features(x).transpose(1, 2))
        acoustic = codec.acoustic_encoder(x)
    assert acoustic.shape[2] == semantic.shape[2]
    return acoustic.numpy(), semantic.numpy()


def test_large_graphs_get_one_external_data_file(export_fp32, tmp_path, monkeypatch):
    """Above EXTERNAL_DATA_THRESHOLD a graph is saved with exactly one ``<graph>.onnx.data`` beside it."""
    import onnxruntime as ort

    import convert.olive_runs as olive_runs

    source = export_fp32[0] / "audio_tokenizer" / "quantizer_encoder.onnx"
    monkeypatch.setattr(olive_runs, "EXTERNAL_DATA_THRESHOLD", 0)
    written = olive_runs.save_graph(source, tmp_path / "quantizer_encoder.onnx")
    assert [p.name for p in written] == ["quantizer_encoder.onnx", "quantizer_encoder.onnx.data"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quantizer_encoder.onnx", "quantizer_encoder.onnx.data"]
    rng = np.random.default_rng(0)
    feed = {"acoustic_features": rng.standard_normal((1, 32, 4)).astype(np.float32),
            "semantic_features": rng.standard_normal((1, 32, 4)).astype(np.float32)}
    moved = ort.InferenceSession(str(written[0]), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    original = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    assert np.array_equal(moved, original)
