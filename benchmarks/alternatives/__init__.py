"""Fixes kept beside the shipped series only to be measured against them (not in versions.toml)."""
