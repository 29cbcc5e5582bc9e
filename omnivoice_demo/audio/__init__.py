"""Audio as the model hears and speaks it: loading and post-processing (``processing``, the reference's
``utils/audio.py``), resampling equal to torchaudio's (``resample``), the Higgs Audio V2 codec on ONNX
Runtime (``codec``) and round-trip measures (``metrics``).  Below the engine: it knows nothing of generation."""
