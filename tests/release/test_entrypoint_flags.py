"""The images' entrypoint against each release's own sources (vLLM cannot be installed here): every
flag its guard reads is one the release's argument parser defines, the defaults it assumes are the
release's, the lines it takes for a dead engine are ones the release prints, and the command it
runs is the official image's ENTRYPOINT."""

from __future__ import annotations

import json
import re
import tarfile

import pytest
from packaging.version import Version

from vllm_backports import entrypoint
from vllm_backports.upstream_tests import fetch_sdist

from .conftest import CATALOGUE, source_reader

ARG_UTILS = "vllm/engine/arg_utils.py"
# FrontendArgs (--enable-auto-tool-choice, --tool-call-parser) moved twice
FRONTEND = (
    "vllm/entrypoints/openai/cli_args.py",
    "vllm/entrypoints/launchers/cli_args.py",
    "vllm/entrypoints/common/cli_args.py",
)
PARSER = "vllm/utils/argparse_utils.py"
VLLM_CONFIG = "vllm/config/vllm.py"
CORE = "vllm/v1/engine/core.py"
EXCEPTIONS = "vllm/v1/engine/exceptions.py"
CORE_CLIENT = "vllm/v1/engine/core_client.py"
# add_argument calls in arg_utils.py for the flags the guard reads; booleans are EngineArgs fields
# typed bool, which get argparse.BooleanOptionalAction (and so their --no- form)
ADDED = ('"--kv-cache-dtype"', '"--enable-prefix-caching"', '"--async-scheduling"', '"--speculative-config"',
         '"--tensor-parallel-size", "-tp"')
FIELDS = ("enable_prefix_caching: bool | None = None", "async_scheduling: bool | None")


@pytest.fixture(scope="module")
def sources():
    return source_reader([ARG_UTILS, *FRONTEND, PARSER, VLLM_CONFIG, CORE, EXCEPTIONS, CORE_CLIENT])


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_every_flag_the_guard_reads_is_in_the_release_s_parser(version, sources):
    src = sources(version)
    args = src[ARG_UTILS]
    for added in ADDED:
        assert added in args, (version, added)
    for field in FIELDS:
        assert field in args, (version, field)
    assert "BooleanOptionalAction" in args
    v = Version(version)
    for flag, first in entrypoint.SINCE.items():
        assert (f'"{flag}"' in args) == (v >= Version(first)), (version, flag)
    frontend = [src[p] for p in FRONTEND if p in src]
    assert len(frontend) == 1, version
    assert "enable_auto_tool_choice: bool = False" in frontend[0] and "tool_call_parser: str | None" in frontend[0]
    # FlexibleArgumentParser: _ as - up to the first dot, and dotted flags merged into JSON
    assert 'pattern = re.compile(r"(?<=--)[^\\.]*")' in src[PARSER] and "def create_nested_dict" in src[PARSER]


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_the_defaults_the_guard_assumes_are_the_release_s(version, sources):
    src, v = sources(version), Version(version)
    low, high = map(Version, entrypoint.HYBRID_PREFIX_CACHING_OFF)
    hybrid_off = "is_prefix_caching_supported and not model_config.is_hybrid" in src[ARG_UTILS]
    assert hybrid_off == (low <= v < high), version
    assert ("self.enable_prefix_caching = default_prefix_caching" in src[ARG_UTILS]), version
    # async scheduling: None until VllmConfig turns it on, off for non-EAGLE drafters before 0.33.0
    none_branch = src[VLLM_CONFIG].split("elif self.scheduler_config.async_scheduling is None:", 1)[1]
    none_branch = none_branch.split("self.scheduler_config.async_scheduling = True", 1)[0]
    eagle_only = "speculative_config.method not in get_args(EagleModelTypes)" in none_branch
    assert eagle_only == (v < Version(entrypoint.ASYNC_FOR_EVERY_METHOD)), version


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_the_lines_taken_for_a_dead_engine_are_the_release_s(version, sources):
    src = sources(version)
    fatal, dead, died = entrypoint.ENGINE_DIED
    assert f'logger.exception("{fatal}.")' in src[CORE], version
    assert dead in src[EXCEPTIONS], version
    assert ("died unexpectedly, shutting down client" in src[CORE_CLIENT]) == (Version(version) < Version("0.20.0"))
    assert died == "died unexpectedly, shutting down client"


@pytest.mark.parametrize("version", CATALOGUE.versions)
def test_the_command_run_is_the_official_image_s_entrypoint(version):
    with tarfile.open(fetch_sdist(version), "r:gz") as tar:
        member = tar.extractfile(f"vllm-{version}/docker/Dockerfile")
        assert member is not None
        dockerfile = member.read().decode()
    stage = dockerfile.split("FROM vllm-openai-base AS vllm-openai\n", 1)[1]
    found = re.search(r"^ENTRYPOINT (\[.*\])$", stage, re.M)
    assert found is not None, version
    assert tuple(json.loads(found[1])) == entrypoint.OFFICIAL_ENTRYPOINT, (version, found[1])
