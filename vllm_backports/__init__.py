"""Backports of GDN speculative-decoding and TurboQuant fixes for pinned vLLM releases."""

__version__ = "0.1.0"
