#!/usr/bin/env bash
# The slim bundle of ../shared/gpu/stage-vllm.sh leaves out vLLM's FlashAttention 2 library, and
# from vLLM 0.21 TurboQuant KV runs on FA2 only. This stages it as one more part (xz, about
# 52 MiB: one carry) from the wheel stage-vllm.sh already downloaded, and prints the run that
# installs it into $HOME/vllm-site after the bundle's own install.
#   ../shared/gpu/stage-vllm.sh 0.21.0 && bash lab/runbook/stage-fa2.sh 0.21.0
set -euo pipefail
release=$1
wheel=$(ls "$HOME"/.cache/vllm-stage/"$release"/whl/vllm-"$release"-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "no vLLM $release wheel under ~/.cache/vllm-stage: run ../shared/gpu/stage-vllm.sh $release first" >&2; exit 2; }
member=vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so
out=.stage/fa2
rm -rf "$out" && mkdir -p "$out"
python3 - "$wheel" "$member" "$out/fa2.so" <<'PY'
import sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, open(dest, "wb") as f:
    f.write(z.read(member))
PY
(cd "$out" && sha256sum fa2.so > fa2.so.sha256 && xz -T0 -6 fa2.so)
echo "staged $member of vLLM $release: $(du -m "$out/fa2.so.xz" | cut -f1) MiB in $out"
# Over PART_MB (default 50, what a call carries beside the tree; from 0.27 the library is about
# 82 MiB): two halves, .stage/fa2a and
# .stage/fa2b, the second with the checksum; once .stage is moved to .stage-REL, as plan.py and
# `steps.sh put fa2a` / `put fa2b` take them; steps.sh setup joins them again.
part=$((${PART_MB:-50} * 1024 * 1024))
if [ "$(stat -c %s "$out/fa2.so.xz")" -gt "$part" ]; then
  rm -rf .stage/fa2a .stage/fa2b && mkdir -p .stage/fa2a .stage/fa2b
  split -b "$part" -d -a 1 "$out/fa2.so.xz" "$out/fa2.so.xz."
  mv "$out/fa2.so.xz.0" .stage/fa2a/ && mv "$out"/fa2.so.xz.[1-9] "$out/fa2.so.sha256" .stage/fa2b/
  rm -rf "$out"
  echo "in two halves, .stage/fa2a and .stage/fa2b: put them with lab/runbook/steps.sh (lab/runbook/plan.py prints the calls)"
  exit 0
fi
echo "After the bundle's install, on the same warm machine:"
echo "  run  carry=[\"$out\"]  command: xz -dc $out/fa2.so.xz > \$HOME/vllm-site/$member && (cd \$HOME/vllm-site/vllm/vllm_flash_attn && sed 's/fa2.so/_vllm_fa2_C.abi3.so/' \$OLDPWD/$out/fa2.so.sha256 | sha256sum -c)"
