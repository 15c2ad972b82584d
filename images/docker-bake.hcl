# Every image: a release's official vLLM image with its backport series applied, for each release
# and tag variant in images/bake-data.json (IMAGES, generated from versions.toml by
# `python -m vllm_backports.maint bake --write`) crossed with each arch there (ARCHES).
#   docker buildx bake -f images/docker-bake.hcl -f images/bake-data.json v0-20-0-ampere
#   docker buildx bake -f images/docker-bake.hcl -f images/bake-data.json hopper   # a group
# Tags: vX.Y.Z-ARCH[-VARIANT]-bpREVISION and vX.Y.Z-ARCH[-VARIANT]. Built here, REVISION is the
# series' alone; the publish workflow sets the image's (series, base and tool: `maint matrix-json
# builds`), which its never-moved -bp tag names.

target "image" {
  name       = "v${replace(img.vllm, ".", "-")}-${arch}${img.suffix}"
  matrix     = { img = IMAGES, arch = keys(ARCHES) }
  context    = "."
  dockerfile = "images/Dockerfile"
  platforms  = ARCHES[arch]
  tags = [
    "${REGISTRY}:v${img.vllm}-${arch}${img.suffix}-bp${img.revision}",
    "${REGISTRY}:v${img.vllm}-${arch}${img.suffix}",
  ]
  args = {
    BASE_IMAGE        = img.bases[arch]
    VLLM_VERSION      = img.vllm
    BACKPORT_REVISION = img.revision
    GPU_ARCH          = arch
  }
  labels = {
    "org.opencontainers.image.version" = "${img.vllm}-bp${img.revision}"
    "io.vllm-backports.series"         = img.series
  }
}
