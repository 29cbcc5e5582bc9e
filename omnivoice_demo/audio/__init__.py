"""Audio as the model hears and speaks it: the reference's audio steps around the model (``processing``: the
clone reference prepared, the output post-processed, chunks joined), its silence removal through pydub
(``silence``, the reference's ``utils/audio.py``), audio files and sample arrays read, written and checked
(``files``), resampling equal to torchaudio's (``resample``), the Higgs Audio V2 codec on ONNX Runtime
(``codec``) and round-trip measures (``metrics``).  Below the engine: it knows nothing of generation."""
