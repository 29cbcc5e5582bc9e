"""The process and ONNX Runtime: sessions as every graph gets them (``sessions``), the machine's CPU and
peak memory (``machine``), freed memory given back to the system (``memory``).  Imports only ``errors``."""
