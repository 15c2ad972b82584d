#!/usr/bin/env bash
# Steps on the GPU machine for any stageable release (repo root, after the install.sh of
# `python -m lab bundle REL` has installed it into $HOME/vllm-site; one step per call, each under
# the 600 s limit):
#   REL=0.26.0 bash lab/runbook/steps.sh setup
#   REL=0.26.0 bash lab/runbook/steps.sh verify fix mtp 16 graphs turboquant_k8v4
#   REL=0.31.0 bash lab/runbook/steps.sh fastpath   (after setup; releases whose series carries
#        turboquant-prefill-fastpath, vLLM #46460)
#   REL=0.28.0 bash lab/runbook/steps.sh upstream-gpu   (after setup, carrying .stage-sdist-0.28.0 from
#        lab/runbook/stage-sdist.sh: the release's own tests on the GPU, pristine and patched)
#   REL=0.31.0 bash lab/runbook/steps.sh model; ... poll 500; ... model-compare   (verify --model's
#        teacher-forced reference against the float32 one, on the tiny checkpoint)
#   REL=0.28.0 bash lab/runbook/steps.sh bench-ab start nospec qwen3_5-9b 20 resident; ... bench-ab poll 540
#        (A/B runs of benchmarks/bench_ab.py in the background, one a call to start, resumable:
#        docs/BENCHMARKS.md, "A/B runs on models of users' sizes"; `bench-ab queue` runs several
#        back to back once the machine's chains and verifies have ended)
# Sites, all of release $REL:
#   fix  $HOME/vllm-site  the release's shipped series
#   ctl  /tmp/site-ctl-$REL  the series without turboquant-spec-decode (and without what is
#        written on its lines, WRITTEN_ON below): TurboQuant as released
#   p65  /tmp/site-p65-$REL  ctl plus P65, where benchmarks/alternatives/turboquant-cudagraph has it
#   pc-hit  /tmp/site-pc-hit-$REL  the shipped series plus the candidate fix of vLLM #53912, where
#        benchmarks/alternatives/prefix-cache-mtp-hit has it (0.20.0): TARGET=pc-hit bg ... runs it
#   raw  /tmp/site-raw-$REL  pristine: the GDN control
#   less-ID /tmp/site-less-ID-$REL  the shipped series less backport ID (and what is written on
#        its lines, WRITTEN_ON below), for each ID in LESS that the series carries: the control
#        that proves ID alone, the rest of the series being on both sides (not made where a later
#        patch's hunks sit below ID's: spec-prefill-decode-graph on 0.25.0, 0.26.0, where
#        turboquant-kv-shape follows it in the runner)
# Several releases can share one machine: stage each with its parts under its own HOME
# (`HOME=/root/h2 REL=X steps.sh put p0` a call, carrying .stage-X/p0, and so on; then `chain`;
# lab/runbook/plan.py prints those calls, packed under one call's carry)
# and run its steps with that HOME; every
# path here is under $HOME or named by $REL. `chain` and `collect` do that for five releases at a
# time (2026-11-25: 0.21.0, 0.23.0, 0.24.0, 0.25.0 and 0.26.0, eleven verifies in about 11 minutes).
# FA2 (vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so, which TurboQuant KV runs on from vLLM 0.21)
# comes inside the release's wheel, which the bundle carries verbatim. `setup` uses .gpu-pytest:
# carry it in the setup call, not with the last bundle part: the two pass the 64 MiB a call
# may carry. TP=2 in the environment runs `verify` at tensor parallel 2 (the two-GPU kind; the
# proof tp2 asks for it itself);
# PREFILL=flashinfer runs it on FlashInfer's GDN prefill, from $HOME/fi-site (step fi-site).
set -uo pipefail
: "${REL:?set REL to the staged release}"
# NVLink multicast stays off on the shared GPU hosts (the image sets these; a TP=2 engine's
# workers inherit them from here as well)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# GPU=N: this step's work on GPU N alone, numbered as nvidia-smi numbers them, so that on a host of
# several GPUs an A/B queue of each release runs beside the others, one a GPU
if [ -n "${GPU:-}" ]; then
  [[ $GPU =~ ^[0-9]+$ ]] || { echo "GPU=$GPU: give one GPU's index, as nvidia-smi numbers them"; exit 2; }
  export CUDA_VISIBLE_DEVICES=$GPU CUDA_DEVICE_ORDER=PCI_BUS_ID
fi
gpu_cores() { # with GPU=N: the Nth of as many equal shares of the host's cores as it has GPUs, so
  # that engines starting on one GPU (they compile on every core they may) leave the cores of a
  # host-bound run on another alone; nothing without GPU=N or taskset
  [ -n "${GPU:-}" ] && command -v taskset > /dev/null || return 1
  local n; n=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU'); [ "$n" -gt 1 ] || return 1
  python3 -c 'import os, sys
n, g = map(int, sys.argv[1:]); c = sorted(os.sched_getaffinity(0)); s = len(c) // n
sys.exit(1) if not s or g >= n else print(",".join(map(str, c[g * s : (g + 1) * s])))' "$n" "$GPU"
}
step=$1; shift; out=${OUT:-/tmp/out}; mkdir -p "$out"
RES=$HOME/verify-results
# A marker a running chain, machine-wide: what a bench-ab queue waits for (chain, queue)
CHAINS=${CHAINS_DIR:-/tmp/chains}
declare -A SITE=([fix]=$HOME/vllm-site [ctl]=/tmp/site-ctl-$REL [p65]=/tmp/site-p65-$REL [raw]=/tmp/site-raw-$REL [pc-hit]=/tmp/site-pc-hit-$REL)
# spec-prefill-decode-graph: vLLM #49918; turboquant-prefill-fastpath: vLLM #46460;
# turboquant-decode-workspace: vLLM #42544; gdn-draft-free-plain: the A/B arm of what it saves
LESS=(spec-prefill-decode-graph turboquant-prefill-fastpath turboquant-decode-workspace gdn-draft-free-plain)
for id in "${LESS[@]}"; do SITE[less-$id]=/tmp/site-less-$id-$REL; done
# The release's series, as versions.toml names it (point releases share one; "" for none).
SERIES=$(python3 -c 'import sys, tomllib; print(tomllib.load(open("versions.toml", "rb"))["releases"].get(sys.argv[1], {}).get("series", ""))' "$REL")
carries() { [ -n "$SERIES" ] && grep -q -- "-$1.patch\$" "backports/$SERIES/series" 2>/dev/null; }
# Backports written on another's lines, which leave the series with it (apply.py refuses them
# alone): turboquant-prefill-fastpath on turboquant-spec-decode's, turboquant-decode-workspace
# (0.21 .. 0.23) on both.
declare -A WRITTEN_ON=([turboquant-spec-decode]="turboquant-prefill-fastpath turboquant-decode-workspace"
  [turboquant-prefill-fastpath]=turboquant-decode-workspace)
without() { # ID: apply.py's --skip for ID and for what this series carries that is written on it
  local d; printf '%s\n' --skip "$1"; for d in ${WRITTEN_ON[$1]:-}; do carries "$d" && printf '%s\n' --skip "$d"; done; return 0; }
# TurboQuant as released
mapfile -t TQ_SKIP < <(without turboquant-spec-decode)
# Every file any patch here touches, read off the patches, so a new backport cannot leave a
# site sharing a hard-linked file with the others.
TOUCHED=$(grep -h '^+++ b/vllm/' backports/*/*.patch benchmarks/alternatives/*/*/*.patch | sed 's#^+++ b/vllm/##' | sort -u)

summary() { python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("vllm", "kv_cache", "threshold", "baseline_worst_regret", "calibrated", "passed", "proof")})
for r in d.get("rows", []):
    e = r.get("engine") or {}
    print(r["scenario"], r.get("site", "target"), r["batch"], r["mode"], r["sequences"], r["tokens"], r["errors"], r["bad_sequences"],
          r["worst_regret"], r["first_error_at"], r["exercised"], r["same_as_baseline"], r["tokens_per_s"], r.get("start_s"),
          {k: e.get(k) for k in ("backports", "prefix_caching", "mamba_cache_mode", "async_scheduling", "model_runner", "cudagraph_mode", "prefix_cache")})
    if r.get("prefix_hit_lengths"):
        print("  prefix hits (tokens: requests):", r["prefix_hit_lengths"])
    if r.get("rounds"):
        print("  rounds:", [(x["errors"], x.get("accepted"), x.get("prompt_logprob_errors"), x.get("prefix_hit_lengths"))
                            for x in r["rounds"]])
    if r.get("prompt_logprobs"):
        lp = r["prompt_logprobs"]
        print("  prompt logprobs:", {k: lp.get(k) for k in ("errors", "positions", "worst_difference", "missing")})
    if r.get("accepted_counts"):
        c = r["accepted_counts"]
        keys = ("status", "why", "in_range", "min", "max", "outside", "builds")
        print("  accepted counts:", {k: c.get(k) for k in keys},
              "startup:", {k: (c.get("startup") or {}).get(k) for k in ("min", "max", "outside", "builds")})
if d.get("prompt_logprobs"):
    print("prompt logprobs calibration:", d["prompt_logprobs"])
PY
}
# FlashInfer's site and what its .pth files add: nvidia-cutlass-dsl puts `cutlass` on sys.path from
# a .pth file (dsl_packages from 4.6, python_packages before), which Python reads in site
# directories only, not in a --target install on PYTHONPATH
fi_path() { # what Python's site machinery adds for $HOME/fi-site: its .pth files are either paths
  # (cutlass-dsl 4.5: python_packages, 4.6: dsl_packages) or, from 4.8, code that inserts one
  python3 - "$HOME/fi-site" <<'PY'
import site, sys
before = set(sys.path)
site.addsitedir(sys.argv[1])
print(":".join([sys.argv[1]] + [p for p in sys.path if p not in before and p != sys.argv[1]]))
PY
}
tool_copy() { # DIR: the tool's own copy in DIR (apply.py, the package, the catalogue, the
  # benchmarks and this script) for a job that outlives its call: the next call may refresh the
  # working tree under a running job
  rm -rf "$1" && mkdir -p "$1/lab/runbook" && cp -r apply.py vllm_backports benchmarks backports versions.toml "$1"/ \
    && cp "$0" "$1/lab/runbook/steps.sh"
}
site_copy() { # a hard-linked copy of the pristine install, with its own copy of every file a patch touches
  rm -rf "$1" && cp -al "${SITE[fix]}" "$1"
  for f in $TOUCHED; do [ -f "$1/vllm/$f" ] && cp "$1/vllm/$f" "$1/vllm/$f.own" && mv "$1/vllm/$f.own" "$1/vllm/$f"; done
}
alt_site() { # NAME ALTERNATIVE [APPLY-OPTION...]: site NAME, the series (less what the options skip)
  # plus benchmarks/alternatives/ALTERNATIVE's patch for this release, where it has one
  local name=$1 patch=benchmarks/alternatives/$2/$REL/0001-$2.patch; shift 2
  [ -f "$patch" ] || return 0
  site_copy "${SITE[$name]}"
  PYTHONPATH=${SITE[$name]} python3 apply.py --vllm "$REL" --target "${SITE[$name]}" "$@" --json > "$out/apply-$name.json"; echo "$name base: exit $?"
  patch -p1 -d "${SITE[$name]}" --no-backup-if-mismatch < "$patch"; echo "$name patch: exit $?"
}
case $step in
  setup)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    # A second setup on one install (chain with SKIP_INSTALL=1) finds the fix site patched by the
    # first: revert it, or the controls copied from it below would not be pristine.
    applied=$(PYTHONPATH=${SITE[fix]} python3 apply.py status --vllm "$REL" --json 2>/dev/null \
      | python3 -c 'import json, sys; print(len(json.load(sys.stdin).get("applied") or []))' 2>/dev/null)
    if [ "${applied:-0}" != 0 ]; then
      PYTHONPATH=${SITE[fix]} python3 apply.py revert --vllm "$REL" --json > "$out/revert-fix.json" \
        && echo "fix site: reverted the $applied backports an earlier setup applied" || { echo "setup: the fix site does not revert"; exit 1; }
    fi
    if [ -f "${SITE[fix]}/vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so" ]; then echo "FA2: comes with the release's wheel"
    else echo "no FA2 in ${SITE[fix]} (vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so): TurboQuant proofs cannot run"; fi
    site_copy "${SITE[raw]}"; site_copy "${SITE[ctl]}"
    for id in "${LESS[@]}"; do
      carries "$id" || continue
      site=${SITE[less-$id]}; site_copy "$site"
      mapfile -t skips < <(without "$id")
      PYTHONPATH=$site python3 apply.py --vllm "$REL" --target "$site" "${skips[@]}" --json > "$out/apply-less-$id.json" \
        && echo "less-$id: exit 0" || { echo "less-$id: the series does not apply without $id here"; rm -rf "$site"; }
    done
    PYTHONPATH=${SITE[ctl]} python3 apply.py --vllm "$REL" --target "${SITE[ctl]}" "${TQ_SKIP[@]}" --json > "$out/apply-ctl.json"; echo "ctl: exit $?"
    alt_site p65 turboquant-cudagraph "${TQ_SKIP[@]}"
    alt_site pc-hit prefix-cache-mtp-hit
    PYTHONPATH=${SITE[fix]} python3 apply.py --vllm "$REL" --json > "$out/apply-fix.json"; echo "fix: exit $?"
    PYTHONPATH=${SITE[fix]} python3 apply.py status --vllm "$REL" --json > "$out/status-fix.json"; echo "status: exit $?"
    [ "${GPU_TESTS:-1}" = 0 ] || PYTHONPATH=${SITE[fix]}:.gpu-pytest python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_turboquant_spec_decode.py 2>&1 | tail -15
    # The release's own builder tests, as CI's matrix lists them (a test of a fix the release does
    # not carry refuses to run under VLLM_BACKPORTS_REQUIRE_VLLM).
    # Less the interpreted kernel tests: tests/gpu runs those kernels on the GPU itself.
    tests=$(python3 -m vllm_backports.maint matrix-json gdn-builder | python3 -c "import json, sys; print(*[t for r in json.load(sys.stdin)['include'] if r['vllm'] == sys.argv[1] for t in r['tests'].split() if 'interpreted' not in t])" "$REL")
    [ -n "$tests" ] && [ "${RELEASE_TESTS:-1}" != 0 ] && PYTHONPATH=${SITE[raw]}:.gpu-pytest VLLM_BACKPORTS_REQUIRE_VLLM=1 python3 -m pytest -q -p no:cacheprovider --tb=short \
      $tests > "$out/release-tests.txt" 2>&1
    # setup's status is the runs' above, not whether release tests were asked for: `chain` goes on to the proofs on it
    [ ! -f "$out/release-tests.txt" ] || tail -3 "$out/release-tests.txt" ;;
  chain) # PROOF...: install.sh (carried as .stage-$REL/install.sh with the last bundle part), fi-site
      # where FlashInfer's parts were copied to $HOME/fi before, setup
      # and the proofs, detached, from a copy of this tree under $HOME/repo, so that the call returns
      # at once and the next release can be staged while this one runs. The machine goes back
      # 30 s after a call ends: keep a `collect` call in flight while the runs go on.
      # SKIP_INSTALL=1 starts again after an install that went through.
    mkdir -p "$HOME/repo" "$out" && { [ "${SKIP_INSTALL:-0}" = 1 ] || cp ".stage-$REL/install.sh" "$HOME/install.sh"; } || exit 1
    tar --exclude='./.stage-*' -cf - . | tar -xf - -C "$HOME/repo"
    # `upstream-gpu` among the names runs the release's own GPU tests beside the proofs (the sdist
    # put before as the piece `sdist`), into verify-results/ where collect finds it
    ups=0; names=(); for a; do if [ "$a" = upstream-gpu ]; then ups=1; else names+=("$a"); fi; done
    [ $ups = 0 ] || [ -f "$HOME/sdist/sdist.sha256" ] || { echo "chain: upstream-gpu needs the sdist put first (put sdist)"; exit 1; }
    # no names at all: the default proof set; upstream-gpu alone, or none: no proofs (setup only)
    [ $# = 0 ] || [ ${#names[@]} -gt 0 ] || names=(none)
    # an earlier chain's upstream result must not read as this one's: collect shows it waiting
    [ $ups = 0 ] || { mkdir -p "$RES" && rm -f "$RES"/upstream-gpu* && echo "upstream-gpu: waiting for the chain's setup" > "$RES/upstream-gpu.err"; }
    # made before this call returns, so that nothing started after it misses the chain; the
    # chain writes its pid in it, and removes it when it ends, beside its status in $HOME/chain.rc
    mark=$CHAINS/$(printf %s "$HOME" | tr / _); mkdir -p "$CHAINS" && touch "$mark" && rm -f "$HOME/chain.rc"
    # the subshell's output goes to the log as well: a caller reading this call's output through
    # a pipe would otherwise wait for the whole chain
    (cd "$HOME/repo" && OUT=$HOME/out UPS=$ups R=$RES M=$mark exec setsid nohup bash -c 'echo $$ > "$M"; { { [ "${SKIP_INSTALL:-0}" = 1 ] || bash "$HOME/install.sh"; } && { [ ! -d "$HOME/fi" ] || bash lab/runbook/steps.sh fi-site || true; } && bash lab/runbook/steps.sh setup &&
      { [ "$*" = none ] || bash lab/runbook/steps.sh proofs "$@"; }; }; s=$?
      if [ "$UPS" = 1 ] && [ $s = 0 ]; then OUT=$R bash lab/runbook/steps.sh upstream-gpu > "$R/upstream-gpu.err" 2>&1; echo $? > "$R/upstream-gpu.rc"
      elif [ "$UPS" = 1 ]; then echo "upstream-gpu not run: the chain stopped before it (exit $s)" >> "$R/upstream-gpu.err"; echo $s > "$R/upstream-gpu.rc"; fi
      echo $s > "$HOME/chain.rc"; rm -f "$M"; exit $s' \
      chain "${names[@]}") > "$HOME/chain.log" 2>&1 < /dev/null &
    echo "chain of $REL started under $HOME: $*" ;;
  put) # PIECE...: pieces of .stage-$REL and .stage-fi-$REL carried in this call, each where
      # install.sh, fi-site and upstream-gpu read it: pN (bundle part, python -m lab bundle),
      # fi-pN (FlashInfer part), sdist (the release's source archive, lab/runbook/stage-sdist.sh, for upstream-gpu)
    for p; do
      case $p in
        p[0-9]*) mkdir -p "$HOME/vllm-stage" && cp ".stage-$REL/$p"/part.* "$HOME/vllm-stage/" ;;
        fi-p[0-9]*) mkdir -p "$HOME/fi" && cp ".stage-fi-$REL/${p#fi-}"/* "$HOME/fi/" ;;
        sdist) mkdir -p "$HOME/sdist" && cp ".stage-sdist-$REL"/* "$HOME/sdist/" ;;
        *) echo "put: unknown piece $p"; false ;;
      esac || exit 1
    done
    echo "put under $HOME: $*" ;;
  fi-site) # FlashInfer into $HOME/fi-site, from the parts of lab/runbook/stage-flashinfer.sh copied
      # to $HOME/fi (p0 brings fi.tar.sha256)
    (cd "$HOME/fi" && cat fi.tar.[0-9] > fi.tar && sha256sum -c fi.tar.sha256) || exit 1
    rm -rf "$HOME/fi-w" && mkdir -p "$HOME/fi-w" && tar -xf "$HOME/fi/fi.tar" -C "$HOME/fi-w" && rm -f "$HOME/fi/fi.tar"
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$HOME/fi-site" "$HOME"/fi-w/*.whl || exit 1
    for a in "$HOME"/fi-w/fi-aot-*.tar.xz; do [ -f "$a" ] && tar -xJf "$a" -C "$HOME/fi-site"; done
    # 0.20.0's FlashInfer (0.6.8.post1) came with nvidia-cutlass-dsl 4.8.1 without a CUDA toolkit
    # flavor: its import raises RuntimeError, not the ImportError FlashInfer's optional import
    # expects, and every engine start failed (2026-11-27; 0.21.0's imported). Such a cutlass stays off the path.
    if PYTHONPATH=${SITE[fix]}:$(fi_path) python3 -c 'import cutlass' 2>&1 | grep -q 'No CTK flavor'; then
      mkdir -p "$HOME/fi-off" && mv "$HOME"/fi-site/nvidia_cutlass_dsl*.pth "$HOME/fi-off/" && echo "fi-site: cutlass-dsl has no CUDA toolkit flavor: left off the path"
    fi
    # the CuTe DSL (cutlass) only where the pin brought it: flashinfer-python before 0.6.14 builds its
    # sm90 GDN prefill with nvcc instead (lab/runbook/stage-flashinfer-jit.sh pre-builds it)
    PYTHONPATH=${SITE[fix]}:$(fi_path) python3 -c "import importlib.util as u, pathlib, flashinfer, flashinfer.gdn_prefill
dsl = u.find_spec('cutlass') is not None
dsl and __import__('cutlass')
aot = sorted(p.name for p in (pathlib.Path(flashinfer.__file__).parent / 'data' / 'aot').glob('*'))
print('flashinfer', flashinfer.__version__, 'importable; cutlass dsl:', dsl, '; pre-built:', aot or 'none')" ;;
  fastpath) # vLLM #46460 on this release's real backend and kernels: tests/gpu/test_turboquant_prefill_fastpath.py
      # builds the released, series-less-the-fix ("series") and shipped ("candidate") backends
      # from the pristine site itself
    PYTHONPATH=${SITE[raw]}:.gpu-pytest VLLM_BACKPORTS_REQUIRE_VLLM=1 python3 -m pytest -q -s -p no:cacheprovider --tb=short \
      tests/gpu/test_turboquant_prefill_fastpath.py > "$out/fastpath.txt" 2>&1; echo "fastpath: exit $?"
    grep -E '^[0-9.]+ cuda |passed|failed|FAILED|Error' "$out/fastpath.txt" | tail -20 ;;
  upstream-gpu) # the release's own tests that exercise the series' files, on the GPU, pristine
      # (the raw site) and patched (a copy apply.py patches): `maint upstream-tests --device cuda`
      # from the archive of lab/runbook/stage-sdist.sh, carried as .stage-sdist-$REL in this call or
      # put before as the piece sdist (chain runs it so); exits as the tests' run did
    # each side may take UPSTREAM_TIMEOUT s (default 1500): 0.28.0's pristine side took 417 s on
    # an H200 beside other verifies and 0.31.0's ran past 560 s (2026-11-27); the chain runs this
    # step detached, so no call's 600 s bounds it
    sd=.stage-sdist-$REL; [ -d "$sd" ] || sd=$HOME/sdist
    a=$(ls "$sd"/vllm-*.tar.gz) || exit 1
    # upstream's conftest imports tblib, which the GPU image lacks: its wheel comes with the archive
    t=/tmp/upstream-site-$REL && rm -rf "$t" && python3 -m pip install -q --no-index --no-deps --target "$t" "$sd"/tblib-*.whl || exit 1
    PYTHONPATH=${SITE[raw]}:$t:.gpu-pytest python3 -m vllm_backports.maint upstream-tests "$REL" --device cuda \
      --sdist "$a" --sha256 "$(cat "$sd"/sdist.sha256)" --timeout "${UPSTREAM_TIMEOUT:-1500}" --json --out "$out/upstream-gpu-$REL.json" \
      > "$out/upstream-gpu-$REL.txt" 2>&1; rc=$?; echo "upstream-gpu: exit $rc"
    python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(d['verdict'], d['totals'], d['machine'].get('gpu'))" \
      "$out/upstream-gpu-$REL.json" 2>/dev/null || tail -5 "$out/upstream-gpu-$REL.txt"
    exit $rc ;;
  verify) # SITE PRESET BATCH MODE KV
    site=$1 preset=$2 batch=$3 mode=$4 kv=$5; tag="$kv-$site-$preset-b$batch-$mode-tp${TP:-1}-${PREFILL:-triton}"
    PYTHONPATH=${SITE[$site]} python3 apply.py verify --prefill-backend "${PREFILL:-triton}" --work-dir "/tmp/v-$REL-$tag" --json --tp "${TP:-1}" \
      --kv-cache "$kv" --preset "$preset" --batch "$batch" --mode "$mode" > "$out/$tag.json"
    echo "$tag: exit $?"; summary "$out/$tag.json"
    tar -czf "$out/$tag-logs.tgz" --exclude=model -C /tmp "v-$REL-$tag" 2>/dev/null; true ;;
  bg) # TAG VERIFY-OPTIONS...: one verify of the fix site (TARGET=raw: another site) in a process
      # session of its own, so that it outlives the call (a graphs verify with a control runs past
      # one call's 600 s); several may share the GPU when each takes a fixed --kv-cache-gib
    tag=$1; shift; mkdir -p "$RES" && rm -f "$RES/$tag.rc"  # a restart is not its last run's result
    src=/tmp/vb-$REL-$tag && tool_copy "$src"
    # FlashInfer (lab/runbook/stage-flashinfer.sh) lives in a site of its own, $HOME/fi-site, on the
    # path of FlashInfer runs only: importable, it changes the sampler of every other run too.
    extra=; [[ " $* " == *" --prefill-backend flashinfer "* ]] && extra=$(fi_path)
    # Slots, machine-wide, over every HOME: at most MAX_VERIFIES verifies at once (default 8), and
    # one FlashInfer verify at a time, its JIT builds at MAX_JOBS ninja jobs (default 4; ninja
    # takes every core when unset). On 2026-11-25 two H200 machines stopped answering, and
    # everything on them was lost, with 23 and then 11 verifies started at once, three and four of
    # them FlashInfer runs of vLLM 0.21 .. 0.26 that JIT-build kernels with nvcc at engine start.
    # A verify waiting for its slot says so in its .err file. The memory watchdog (below) starts
    # with the first verify of a machine.
    setsid nohup bash "$(realpath "$0")" watchdog < /dev/null > /dev/null 2>&1 &
    (cd "$src" && EXTRA=$extra MAXV=${MAX_VERIFIES:-8} setsid nohup bash -c '
      slot() { # POOL N FD: hold one of N lock files of POOL on descriptor FD until this shell ends
        local i; echo "waiting for one of $2 $1 slots" >&2
        while :; do for i in $(seq 1 "$2"); do eval "exec $3>/tmp/slot-$1.$i"; flock -n "$3" && { echo "$1 slot taken at $(date +%T)" >&2; return; }; done; sleep 10; done
      }
      # the FlashInfer slot first: waiting for it should not hold one of the verify slots
      { [ -z "$EXTRA" ] || slot flashinfer 1 9; slot verify "$MAXV" 8
        PYTHONPATH=$0${EXTRA:+:$EXTRA} MAX_JOBS=${MAX_JOBS:-4} python3 apply.py verify --work-dir "/tmp/v-$REL-$1" --json "${@:3}"
      } > "$2/$1.json" 2> "$2/$1.err"; echo $? > "$2/$1.rc"' \
      "${SITE[${TARGET:-fix}]}" "$tag" "$RES" "$@" < /dev/null > /dev/null 2>&1 &)
    echo "started $tag: verify $*" ;;
  watchdog) # one a machine (bg starts it): when available memory falls under WATCH_MIB (default
      # 6144), kill the youngest verify's processes, its session's leader (bg's wrapper) aside,
      # which then records the verify's failing exit. A machine out of memory stops answering and
      # is given back with every result on it (2026-11-25, twice); a killed verify costs one
      # result, said in /tmp/watchdog.log, which collect shows.
    exec 9>/tmp/watchdog.lock; flock -n 9 || exit 0
    while sleep "${WATCH_EVERY:-5}"; do
      avail=$(awk '/^MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
      [ "$avail" -lt "${WATCH_MIB:-6144}" ] || continue
      # the youngest verify of a session bg started (its leader is bg's wrapper, whose text holds
      # slot(); the pattern skips the wrappers themselves, whose text names the command too)
      victim=$(for p in $(pgrep -f '(^|/)python3 apply.py verify'); do
        s=$(ps -o sid= -p "$p" | tr -d ' ')
        [ -n "$s" ] && grep -q 'slot()' "/proc/$s/cmdline" 2>/dev/null && echo "$(ps -o etimes= -p "$p" | tr -d ' ') $p $s"
      done | sort -n | head -1)
      [ -n "$victim" ] || continue
      read -r _ pid sid <<< "$victim"
      echo "$(date +%T) ${avail} MiB available: killed verify $(tr '\0' ' ' < "/proc/$pid/cmdline" | cut -c1-160)" >> /tmp/watchdog.log
      for p in $(pgrep -s "$sid"); do [ "$p" = "$sid" ] || kill -9 "$p" 2>/dev/null; done
      sleep 20  # the memory comes back before the next look
    done ;;
  proofs) # [NAME...]: the proof set, each a verify of the fix site with its control, all at once
      # on one GPU (fixed KV size each); names from vllm_backports/verify/proofs.py, default the GDN and TurboQuant
      # set; a proof whose control site this release lacks is left out, saying so. SITE@NAME: the
      # same proof of another site (a candidate's: pc-hit@pc-mtp), its result tagged SITE-NAME
    common=(--gpu-memory-utilization 0.08)
    # The proofs, their control sites and options (16 a batch, graphs unless they say otherwise):
    # vllm_backports/verify/proofs.py
    for name in ${@:-gdn-ngram tq-mtp gdn-ngram-prefix gdn-ngram-kp1 mtp}; do
      target=fix tag=$name; [[ $name == *@* ]] && target=${name%%@*} name=${name#*@} tag=$target-$name
      read -r kind opts < <(python3 -m vllm_backports.verify.proofs "$name") || { echo "unknown proof $name"; continue; }
      control=${SITE[$kind]:-}
      [ -n "${SITE[$target]:-}" ] && [ -d "${SITE[$target]}" ] || { echo "$tag: no $target site for $REL"; continue; }
      [ -n "$control" ] && [ -d "$control" ] || { echo "$name: no control site ${control:-for it} for $REL"; continue; }
      prefill=(--prefill-backend "${PREFILL:-triton}"); [[ " $opts " == *" --prefill-backend "* ]] && prefill=()
      kv=(--kv-cache-gib 2); [[ " $opts " == *" --kv-cache-gib "* ]] && kv=()
      # shellcheck disable=SC2086
      TARGET=$target bash "$0" bg "$tag" $opts --control "$control" "${prefill[@]}" "${kv[@]}" "${common[@]}"
    done ;;
  poll) # SECONDS: wait until every verify started by bg has ended, or SECONDS; bring back what there is
    deadline=$((SECONDS + ${1:-500}))
    while [ $SECONDS -lt $deadline ]; do
      left=0; for j in "$RES"/*.err; do [ -f "${j%.err}.rc" ] || left=$((left + 1)); done
      [ $left = 0 ] && break; sleep 10
    done
    for j in "$RES"/*.err; do
      t=$(basename "${j%.err}")
      if [ -f "$RES/$t.rc" ]; then echo "== $t: exit $(cat "$RES/$t.rc")"; summary "$RES/$t.json" 2>/dev/null || tail -3 "$j"
      else echo "== $t: running: $(tail -1 "$j")"; fi
    done
    tar -czf "$out/results.tgz" -C "$RES" . && tar -czf "$out/logs.tgz" --exclude=model --exclude='*.out.json' -C /tmp $(cd /tmp && ls -d "v-$REL-"* 2>/dev/null) 2>/dev/null; true ;;
  collect) # SECONDS HOME...: poll over the results of several releases staged side by side (one
      # HOME each), in one archive ($OUT/res.tgz) with a line per run
    deadline=$((SECONDS + $1)); shift
    while [ $SECONDS -lt $deadline ]; do
      left=0; for h; do for j in "$h"/verify-results/*.err; do [ -f "$j" ] && [ ! -f "${j%.err}.rc" ] && left=$((left + 1)); done; done
      [ $left = 0 ] && break; sleep 10
    done
    for h; do for j in "$h"/verify-results/*.err; do
      [ -f "$j" ] || continue; t=${j%.err}
      if [ -f "$t.rc" ]; then python3 - "$t.json" "$(cat "$t.rc")" <<'PY' 2>/dev/null || echo "$t: exit $(cat "$t.rc"): $(tail -1 "$j")"
import json, sys
d = json.load(open(sys.argv[1]))
rows = [f"{r['scenario']}/{r.get('site', 'target')}:{'dead' if r.get('crashed') else str(r['errors']) + '/' + str(r['tokens'])}"
        for r in d.get("rows", []) if r["scenario"] != "baseline"]
print(sys.argv[1], "exit", sys.argv[2], d.get("vllm"), "proof", d.get("proof"), *rows)
PY
      # the last line that says something: progress bars end in carriage returns, a waiting
      # verify's slot line is its only one
      else echo "$t: running: $(tail -c 4000 "$j" | tr '\r' '\n' | grep -v -e 'Writing model shards' -e '^[[:space:]]*$' | tail -1 | cut -c1-200)"; fi
    done; done
    echo "machine: load $(cut -d' ' -f1-3 /proc/loadavg), $(free -g | awk '/^Mem/ {print $7}') GiB available"
    [ ! -f /tmp/watchdog.log ] || { echo "memory watchdog:"; tail -5 /tmp/watchdog.log; }
    tar -czf "$out/res.tgz" -C / $(for h; do echo "${h#/}/verify-results"; done) 2>/dev/null; true ;;
  model) # [PRESET...]: `verify --model` on the tiny checkpoint written with a tokenizer (the same
      # weights as the tiny model's verify), judged by vLLM's own teacher-forced reference and,
      # on the same outputs, by float32 transformers (--float32-reference); beside it the tiny
      # model's float32 verify of the same preset. Both on the fix site with the pristine one as
      # control, started with bg (four at once on one GPU, a fixed KV size each); then poll and
      # model-compare. Prompts, output length and token budget as the float32 verify's shape.
      # A control whose runs fail (the agreement on errors needs one): CONTROL=less-ID (default
      # raw), BATCH (default 16) and MODEL_PROMPTS=SET, one of the tiny model's prompt sets, which
      # --model reads as a JSONL file of token ids ("prompt_token_ids"; the tokenizer's vocabulary
      # may be smaller than the model's, so the ids are drawn anew, as many and as long); e.g. on 0.28.0
      # CONTROL=less-spec-prefill-decode-graph BATCH=1 MODEL_PROMPTS=k-plus-1 ... model ngram mtp.
      # Start it in a call of its own, then poll: on 2026-11-27 (0.28.0, H100) a call that ran
      # install.sh, setup and `model ngram | tail` ran into its 300 s limit with both verifies
      # started and unfinished, so nothing came back from it.
    ck=/tmp/tiny-ck-$REL
    PYTHONPATH=${SITE[fix]} python3 -m vllm_backports.verify.tokenizer "$ck" --mtp > /dev/null; echo "tiny checkpoint: exit $?"
    control=${SITE[${CONTROL:-raw}]:-}; [ -d "$control" ] || { echo "no control site ${CONTROL:-raw} for $REL"; exit 1; }
    common=(--mode graphs --batch "${BATCH:-16}" --prefill-backend "${PREFILL:-triton}" --kv-cache-gib 2
      --gpu-memory-utilization 0.08 --control "$control")
    # --model's engine as the float32 verify's shape has it (scenarios.SHAPES), prompts included
    read -r n_prompts max_tokens budget < <(python3 -c 'import sys; from vllm_backports.verify.scenarios import SHAPES
s = SHAPES[int(sys.argv[1])]; print(s.prompts, s.max_tokens, s.max_num_batched_tokens or "")' "${BATCH:-16}") \
      || { echo "no shape of ${BATCH:-16} a batch"; exit 1; }
    mp=(--max-tokens "$max_tokens"); [ -z "$budget" ] || mp+=(--max-num-batched-tokens "$budget"); fp=()
    if [ -n "${MODEL_PROMPTS:-}" ]; then
      # the tiny model's set at the presets' k (3) and the shape's count, token ids within the
      # tokenizer's vocabulary; a set with engine settings of its own --model would not take
      PYTHONPATH=${SITE[fix]} python3 - "$ck" "$MODEL_PROMPTS" "$n_prompts" > "$ck.prompts.jsonl" <<'PY' || exit 1
import json, sys
from transformers import AutoTokenizer
from vllm_backports.verify import scenarios
kind, count = sys.argv[2], int(sys.argv[3])
own = scenarios.PROMPT_SETS[kind]
if own != scenarios.PromptSet(own.build):
    sys.exit(f"MODEL_PROMPTS={kind}: a prompt set with engine settings of its own, which --model does not take")
vocab = len(AutoTokenizer.from_pretrained(sys.argv[1], local_files_only=True))
for ids in scenarios.prompts(count, vocab, kind=kind, k=3):
    print(json.dumps({"prompt_token_ids": ids, "group": kind}))
PY
      mp+=(--prompts "$ck.prompts.jsonl"); fp=(--prompts "$MODEL_PROMPTS")
    fi
    for preset in ${@:-mtp ngram}; do
      bash "$0" bg "model-$preset" --model "$ck" --float32-reference --preset "$preset" "${mp[@]}" "${common[@]}"
      bash "$0" bg "f32-$preset" --preset "$preset" "${fp[@]}" "${common[@]}"
    done ;;
  model-compare) # after model and poll: every verdict of the two references on the same outputs,
      # and of verify --model beside the float32 verify, per preset and site (target, control)
    python3 - "$RES" <<'PY'
import glob, json, os, sys
res, ok, errors = sys.argv[1], True, False
def verdicts(d):
    return {(r["scenario"], r["site"]): "crashed" if r.get("crashed") else ("errors" if r["errors"] else "clean")
            for r in d.get("rows", []) if r["scenario"] != "baseline"}
for path in sorted(glob.glob(os.path.join(res, "model-*.json"))):
    preset = os.path.basename(path)[len("model-"):-len(".json")]
    try:
        m = json.load(open(path))
        f = json.load(open(os.path.join(res, f"f32-{preset}.json")))
    except (OSError, ValueError) as exc:
        print(f"{preset}: no result ({exc})"); ok = False; continue
    cross = m.get("float32") or {}
    print(f"== {preset}: --model calibrated {m.get('calibrated')} (threshold {m.get('threshold')}, worst "
          f"{m.get('baseline_worst_regret')}), float32 on the same outputs calibrated {cross.get('calibrated')} "
          f"(threshold {cross.get('threshold')}, worst {cross.get('baseline_worst_regret')}); float32 verify "
          f"calibrated {f.get('calibrated')}; proofs: --model {m.get('proof')!r}, float32 verify {f.get('proof')!r}")
    for p in cross.get("rows", []):
        print(f"  {p['scenario']}/{p['site']}: vLLM reference {p['errors']} errors (worst {p['worst_regret']}), "
              f"float32 on the same outputs {p['float32_errors']} (worst {p['float32_worst_regret']}): "
              + ("agree" if p["agrees"] else "DISAGREE"))
    mv, fv = verdicts(m), verdicts(f)
    for key in sorted(set(mv) | set(fv)):
        same = mv.get(key) == fv.get(key)
        print(f"  {key[0]}/{key[1]}: --model {mv.get(key)}, float32 verify {fv.get(key)}" + ("" if same else "  (differs)"))
    ok &= bool(cross.get("agree")) and bool(m.get("calibrated")) and bool(f.get("calibrated"))
    errors |= any(p["errors"] and p["float32_errors"] for p in cross.get("rows", []))
if not ok:
    print("agreement NOT shown (see above)")
elif not errors:
    print("the two references agree, on clean runs only: no run had errors to agree on")
else:
    print("the two references agree on every verdict, errors and clean runs")
PY
    ;;
  bench-tq) # PASSES [ROUNDS]: the first site is the ratios' baseline
    python3 benchmarks/bench_turboquant_mtp.py --site p65="${SITE[p65]}" --site fix="${SITE[fix]}" --passes "${1:-1}" \
      --rounds "${2:-3}" --kv-cache turboquant_k8v4 --out "$out/bench-tq-mtp.json" 2>&1 | tail -40 ;;
  bench-gdn) # PASSES ROUNDS [MODE [--no-ngram]]: raw against fix, no speculation and ngram
    python3 benchmarks/bench_gdn_decode.py --site raw="${SITE[raw]}" --site fix="${SITE[fix]}" --passes "${1:-2}" \
      --rounds "${2:-5}" --mode "${3:-eager}" ${4:-} --prefill-backend triton --out "$out/bench-gdn-${3:-eager}.json" 2>&1 | tail -40 ;;
  bench-ab) # start EXPERIMENT SHAPE PAIRS [LAYOUT [bench_ab.py run OPTIONS...]] | queue SHAPE PAIRS LAYOUT
      # EXPERIMENT[=PAIRS]... [-- OPTIONS...] | poll SECONDS [NAME...] | profiles NAME
      # start: one A/B run of benchmarks/bench_ab.py in a process session of its own (it outlives
      # the call), in $HOME/bench-ab/$REL-EXPERIMENT-SHAPE; started again with more PAIRS it
      # resumes there with new engines. Sites: every one of raw, fix, p65 this release has.
      # poll: wait until the runs end or SECONDS pass, print each one's summary so far, and bring
      # back their result, progress and log tails ($OUT/bench-ab.tgz). profiles: a run's torch
      # profiler traces and tables ($OUT/bench-ab-profiles-NAME.tgz; run with --profile LEVEL).
    sub=${1:-}; shift || true
    root=$HOME/bench-ab; mkdir -p "$root"
    case $sub in
      start)
        exp=$1 shape=$2 pairs=$3 layout=${4:-sleep}; shift 3; [ $# -gt 0 ] && shift
        name=$REL-$exp-$shape dir=$root/$REL-$exp-$shape; mkdir -p "$dir"; rm -f "$dir/run.rc"
        sites=(); for s in raw fix p65 "${LESS[@]/#/less-}"; do [ -d "${SITE[$s]}" ] && sites+=(--site "$s=${SITE[$s]}"); done
        src=/tmp/vb-bench-$name && tool_copy "$src"
        nvidia-smi -q -d CLOCK,PERFORMANCE ${GPU:+-i "$GPU"} > "$dir/clocks-$(date +%s).txt" 2>&1
        pin=(); cores=$(gpu_cores) && pin=(taskset -c "$cores") && echo "cores $cores" >> "$dir/run.err"
        # the wrapper's pid is written before `start` returns (setsid -w keeps that pid the wrapper's
        # even where setsid has to fork), so a queue never mistakes a run not yet exec'd for one gone
        rm -f "$dir/run.pid"
        (cd "$src" && { setsid -w nohup "${pin[@]}" bash -c 'python3 benchmarks/bench_ab.py run --experiment "$0" --shape "$1" --pairs "$2" --layout "$3" --out "$4" "${@:5}" >> "$4/run.out" 2>> "$4/run.err"; echo $? > "$4/run.rc"' \
          "$exp" "$shape" "$pairs" "$layout" "$dir" "${sites[@]}" "$@" < /dev/null > /dev/null 2>&1 & echo $! > "$dir/run.pid"; })
        echo "started $name: $exp on $shape, $pairs pairs in all, layout $layout, sites ${sites[*]} $*" ;;
      poll)
        deadline=$((SECONDS + ${1:-500})); shift || true
        names=("$@"); [ ${#names[@]} = 0 ] && names=($(cd "$root" && ls -d "$REL"-* 2>/dev/null))
        while [ $SECONDS -lt $deadline ]; do
          left=0; for n in "${names[@]}"; do [ -f "$root/$n/run.rc" ] || left=$((left + 1)); done
          [ $left = 0 ] && break; sleep 10
        done
        for n in "${names[@]}"; do
          d=$root/$n
          if [ -f "$d/run.rc" ]; then echo "== $n: exit $(cat "$d/run.rc")"; else echo "== $n: running: $(tail -1 "$d/run.err" 2>/dev/null)"; fi
          [ -s "$d/progress.jsonl" ] && [ -f "$d/run.json" ] && python3 benchmarks/bench_ab.py summarize "$d" 2>&1 | tail -20
          [ -f "$d/run.rc" ] && [ "$(cat "$d/run.rc")" != 0 ] && tail -5 "$d/run.err"
          # fewer requests at once than the 64 asked means the KV size is too small (--kv-cache-gib)
          grep -h "Maximum concurrency" "$d"/*.log 2>/dev/null | sed 's/^.*Maximum/  Maximum/' | sort -u
          for log in "$d"/*.log; do [ -f "$log" ] && tail -200 "$log" > "$log.tail"; done
        done
        # the profiles' tables come back, their Chrome traces (tens of MiB) only through `profiles`
        (cd "$root" && tar -czf "$out/bench-ab.tgz" $(for n in "${names[@]}"; do ls -d "$n"/*.json "$n"/*.jsonl "$n"/*.tail "$n"/*.txt "$n"/gpu-*.csv "$n"/run.* 2>/dev/null | grep -v '[.]trace[.]json$'; done)); true ;;
      queue) # SHAPE PAIRS LAYOUT EXPERIMENT[=PAIRS]... [-- OPTIONS...]: the experiments one after another,
          # each as `start` runs it, from one detached job, so that no gap between two calls
          # leaves the GPU idle. An A/B run needs the GPU to itself: each run waits until no chain,
          # verify, upstream-gpu run or other A/B run is left on the machine (queues of several
          # HOMEs take turns), so a queue can go out in the call that starts a chain
          # (lab/runbook/plan.py's bench=). Runs that cannot run end with a status that says why:
          # the chain failed, the fix site carries no backport, `start` failed, the run vanished.
        shape=${1:?bench-ab queue: SHAPE PAIRS LAYOUT EXPERIMENT...}; pairs=${2:?}; layout=${3:?}; shift 3
        exps=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do exps+=("$1"); shift; done; [ $# -gt 0 ] && shift
        [ ${#exps[@]} -gt 0 ] || { echo "bench-ab queue: name at least one experiment"; exit 2; }
        # EXPERIMENT=PAIRS: that experiment's own number of pairs
        for e in "${exps[@]}"; do [[ $e != *=* || ${e#*=} =~ ^[1-9][0-9]*$ ]] \
          || { echo "bench-ab queue: $e: write EXPERIMENT=PAIRS, PAIRS a positive number"; exit 2; }; done
        # one queue a release and HOME: a second would take the first one's folders from under it
        exec 6> "$root/queue-$REL.lock"
        flock -n 6 || { echo "bench-ab queue: a queue of $REL still runs under $HOME ($root/queue-$REL.log): poll it"; exit 2; }
        # poll counts a queued run as running: its folder exists, without run.rc
        for e in "${exps[@]}"; do d=$root/$REL-${e%%=*}-$shape; mkdir -p "$d"; rm -f "$d/run.rc"; echo "queued at $(date +%T)" >> "$d/run.err"; done
        src=$root/queue-$REL && tool_copy "$src"
        # the subshell's own output goes to the log too: a caller reading this step's output
        # (a pipe) would otherwise wait for the whole queue. The job keeps descriptor 6 (the
        # queue's lock) open until it ends; the runs it starts get neither lock.
        (cd "$src" && OUT=$root/queue-out C=$CHAINS exec setsid nohup bash -c '
          shape=$1 pairs=$2 layout=$3 n=$4; shift 4; exps=("${@:1:$n}"); shift "$n"
          every=${QUEUE_EVERY:-10}
          stop() { # REASON STATUS: every run not run yet ends with STATUS, saying why
            local e d; for e in "${exps[@]}"; do d=$HOME/bench-ab/$REL-${e%%=*}-$shape
              [ -f "$d/run.rc" ] || { echo "not run: $1" >> "$d/run.err"; echo "$2" > "$d/run.rc"; }; done
            echo "$(date +%T) stopped: $1"; exit "$2"
          }
          chains() { # whether a chain runs: a marker with a live pid, or one just made (no pid yet).
            # A marker its chain removes between the looks is gone, not a fault: an empty mtime in
            # the arithmetic would end this whole job.
            local m p t; for m in "$C"/*; do [ -e "$m" ] || continue; p=$(cat "$m" 2> /dev/null)
              if [ -n "$p" ]; then kill -0 "$p" 2> /dev/null && return 0
              else t=$(stat -c %Y "$m" 2> /dev/null) || continue
                [ $(($(date +%s) - t)) -lt 60 ] && return 0; fi; done; return 1
          }
          # one A/B run a machine, over every HOME: a queue without GPU=N holds the machine lock
          # alone; queues with GPU=N share it, each holding the lock of its GPU alone as well (taken in
          # that order by all, so no two wait on each other)
          lock=${QUEUE_LOCK:-/tmp/bench-ab.lock}
          exec 7> "$lock"; [ -z "${GPU:-}" ] || exec 5> "$lock.gpu$GPU"
          busy() { # whether a verify, upstream-gpu run or A/B run shares this queue s GPU: with GPU=N,
            # one whose CUDA_VISIBLE_DEVICES names N or is unset (it sees every GPU); else any
            local p v; for p in $(pgrep -f "apply[.]py verify|steps[.]sh upstream-gpu|bench_ab[.]py run"); do
              [ -n "${GPU:-}" ] || return 0
              [ -r "/proc/$p/environ" ] || return 0
              v=$(tr "\0" "\n" < "/proc/$p/environ" 2> /dev/null | sed -n "s/^CUDA_VISIBLE_DEVICES=//p")
              [ -z "$v" ] || [[ ",$v," == *",$GPU,"* ]] && return 0
            done; return 1
          }
          for e in "${exps[@]}"; do
            p=$pairs; [[ $e == *=* ]] && p=${e#*=}; e=${e%%=*}
            d=$HOME/bench-ab/$REL-$e-$shape
            flock ${GPU:+-s} 7; [ -z "${GPU:-}" ] || flock 5
            # chains leave a marker while they run (one whose chain died is passed over), and
            # are waited for on every GPU: they install and set up with every core; verifies and
            # runs started by hand show in their command lines (the brackets keep the patterns
            # off this job s own)
            while chains || busy; do sleep "$every"; done
            rc=$(cat "$HOME/chain.rc" 2> /dev/null || echo 0)
            [ "$rc" = 0 ] || stop "the chain of $REL ended with exit $rc ($HOME/chain.log)" "$rc"
            # setup goes on past a series that did not apply: the fix site must carry it
            PYTHONPATH=$HOME/vllm-site python3 apply.py status --vllm "$REL" --json 2> /dev/null \
              | python3 -c "import json, sys; sys.exit(0 if json.load(sys.stdin).get(\"applied\") else 1)" \
              || stop "the fix site $HOME/vllm-site carries no backport" 3
            echo "$(date +%T) $e"
            bash lab/runbook/steps.sh bench-ab start "$e" "$shape" "$p" "$layout" "$@" 5>&- 6>&- 7>&- \
              || { echo "not run: bench-ab start failed" >> "$d/run.err"; echo 2 > "$d/run.rc"; }
            until [ -f "$d/run.rc" ]; do
              # a run gone without a status (killed with its wrapper) ends here, not in a wait forever
              # (a zombie whose parent has not reaped it yet counts as gone)
              [[ $(ps -o stat= -p "$(cat "$d/run.pid" 2> /dev/null)" 2> /dev/null) == [^Z]* ]] \
                || { sleep 1; [ -f "$d/run.rc" ] || { echo "the run ended without a status" >> "$d/run.err"; echo 125 > "$d/run.rc"; }; }
              sleep "$every"
            done
            [ -z "${GPU:-}" ] || flock -u 5; flock -u 7
          done; echo "$(date +%T) done"' \
          queue "$shape" "$pairs" "$layout" "${#exps[@]}" "${exps[@]}" "$@") < /dev/null > "$root/queue-$REL.log" 2>&1 &
        echo "queued on $REL, $shape, $pairs pairs, layout $layout: ${exps[*]}${*:+ with $*}" ;;
      profiles)
        (cd "$root" && tar -czf "$out/bench-ab-profiles-$1.tgz" $(ls -d "$1"/profile-* 2>/dev/null)); ls -la "$out" ;;
      *) echo "bench-ab: start, queue, poll or profiles"; exit 2 ;;
    esac ;;
  *) echo "unknown step $step"; exit 2 ;;
esac
