# Generated from versions.toml by `python -m vllm_backports.maint bake --write`; do not edit.
# Build one: docker buildx bake -f images/docker-bake.hcl v0-20-0-ampere

group "default" {
  targets = ["v0-17-0-ampere", "v0-17-0-hopper", "v0-17-1-ampere", "v0-17-1-hopper", "v0-18-0-ampere", "v0-18-0-hopper", "v0-18-1-ampere", "v0-18-1-hopper", "v0-19-0-ampere", "v0-19-0-hopper", "v0-19-1-ampere", "v0-19-1-hopper", "v0-20-0-ampere", "v0-20-0-hopper", "v0-20-1-ampere", "v0-20-1-hopper", "v0-20-2-ampere", "v0-20-2-hopper", "v0-21-0-ampere", "v0-21-0-hopper", "v0-22-0-ampere", "v0-22-0-hopper", "v0-22-1-ampere", "v0-22-1-hopper", "v0-23-0-ampere", "v0-23-0-hopper", "v0-24-0-ampere", "v0-24-0-hopper", "v0-25-0-ampere", "v0-25-0-hopper", "v0-25-1-ampere", "v0-25-1-hopper", "v0-26-0-ampere", "v0-26-0-hopper", "v0-27-0-ampere", "v0-27-0-hopper", "v0-27-1-ampere", "v0-27-1-hopper", "v0-28-0-ampere", "v0-28-0-hopper", "v0-29-0-ampere", "v0-29-0-hopper", "v0-30-0-ampere", "v0-30-0-hopper", "v0-31-0-ampere", "v0-31-0-hopper", "v0-32-0-ampere", "v0-32-0-hopper", "v0-33-0-ampere", "v0-33-0-hopper"]
}

group "ampere" {
  targets = ["v0-17-0-ampere", "v0-17-1-ampere", "v0-18-0-ampere", "v0-18-1-ampere", "v0-19-0-ampere", "v0-19-1-ampere", "v0-20-0-ampere", "v0-20-1-ampere", "v0-20-2-ampere", "v0-21-0-ampere", "v0-22-0-ampere", "v0-22-1-ampere", "v0-23-0-ampere", "v0-24-0-ampere", "v0-25-0-ampere", "v0-25-1-ampere", "v0-26-0-ampere", "v0-27-0-ampere", "v0-27-1-ampere", "v0-28-0-ampere", "v0-29-0-ampere", "v0-30-0-ampere", "v0-31-0-ampere", "v0-32-0-ampere", "v0-33-0-ampere"]
}

group "hopper" {
  targets = ["v0-17-0-hopper", "v0-17-1-hopper", "v0-18-0-hopper", "v0-18-1-hopper", "v0-19-0-hopper", "v0-19-1-hopper", "v0-20-0-hopper", "v0-20-1-hopper", "v0-20-2-hopper", "v0-21-0-hopper", "v0-22-0-hopper", "v0-22-1-hopper", "v0-23-0-hopper", "v0-24-0-hopper", "v0-25-0-hopper", "v0-25-1-hopper", "v0-26-0-hopper", "v0-27-0-hopper", "v0-27-1-hopper", "v0-28-0-hopper", "v0-29-0-hopper", "v0-30-0-hopper", "v0-31-0-hopper", "v0-32-0-hopper", "v0-33-0-hopper"]
}

target "v0-17-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.17.0-ampere-bp99f19a8c", "ghcr.io/vllm-backports/vllm-backports:v0.17.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.17.0"
    VLLM_VERSION = "0.17.0"
    BACKPORT_REVISION = "99f19a8c"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.17.0-bp99f19a8c"
    "io.vllm-backports.series" = "0.17.0"
  }
}

target "v0-17-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.17.0-hopper-bp99f19a8c", "ghcr.io/vllm-backports/vllm-backports:v0.17.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.17.0"
    VLLM_VERSION = "0.17.0"
    BACKPORT_REVISION = "99f19a8c"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.17.0-bp99f19a8c"
    "io.vllm-backports.series" = "0.17.0"
  }
}

target "v0-17-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.17.1-ampere-bp0c047946", "ghcr.io/vllm-backports/vllm-backports:v0.17.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.17.1"
    VLLM_VERSION = "0.17.1"
    BACKPORT_REVISION = "0c047946"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.17.1-bp0c047946"
    "io.vllm-backports.series" = "0.17.1"
  }
}

target "v0-17-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.17.1-hopper-bp0c047946", "ghcr.io/vllm-backports/vllm-backports:v0.17.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.17.1"
    VLLM_VERSION = "0.17.1"
    BACKPORT_REVISION = "0c047946"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.17.1-bp0c047946"
    "io.vllm-backports.series" = "0.17.1"
  }
}

target "v0-18-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.18.0-ampere-bpd17bb591", "ghcr.io/vllm-backports/vllm-backports:v0.18.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.18.0"
    VLLM_VERSION = "0.18.0"
    BACKPORT_REVISION = "d17bb591"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.18.0-bpd17bb591"
    "io.vllm-backports.series" = "0.18.0"
  }
}

target "v0-18-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.18.0-hopper-bpd17bb591", "ghcr.io/vllm-backports/vllm-backports:v0.18.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.18.0"
    VLLM_VERSION = "0.18.0"
    BACKPORT_REVISION = "d17bb591"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.18.0-bpd17bb591"
    "io.vllm-backports.series" = "0.18.0"
  }
}

target "v0-18-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.18.1-ampere-bpd17bb591", "ghcr.io/vllm-backports/vllm-backports:v0.18.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.18.1"
    VLLM_VERSION = "0.18.1"
    BACKPORT_REVISION = "d17bb591"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.18.1-bpd17bb591"
    "io.vllm-backports.series" = "0.18.0"
  }
}

target "v0-18-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.18.1-hopper-bpd17bb591", "ghcr.io/vllm-backports/vllm-backports:v0.18.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.18.1"
    VLLM_VERSION = "0.18.1"
    BACKPORT_REVISION = "d17bb591"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.18.1-bpd17bb591"
    "io.vllm-backports.series" = "0.18.0"
  }
}

target "v0-19-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.19.0-ampere-bpeafd8bb9", "ghcr.io/vllm-backports/vllm-backports:v0.19.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.19.0"
    VLLM_VERSION = "0.19.0"
    BACKPORT_REVISION = "eafd8bb9"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.19.0-bpeafd8bb9"
    "io.vllm-backports.series" = "0.19.0"
  }
}

target "v0-19-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.19.0-hopper-bpeafd8bb9", "ghcr.io/vllm-backports/vllm-backports:v0.19.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.19.0"
    VLLM_VERSION = "0.19.0"
    BACKPORT_REVISION = "eafd8bb9"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.19.0-bpeafd8bb9"
    "io.vllm-backports.series" = "0.19.0"
  }
}

target "v0-19-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.19.1-ampere-bpeafd8bb9", "ghcr.io/vllm-backports/vllm-backports:v0.19.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.19.1"
    VLLM_VERSION = "0.19.1"
    BACKPORT_REVISION = "eafd8bb9"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.19.1-bpeafd8bb9"
    "io.vllm-backports.series" = "0.19.0"
  }
}

target "v0-19-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.19.1-hopper-bpeafd8bb9", "ghcr.io/vllm-backports/vllm-backports:v0.19.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.19.1"
    VLLM_VERSION = "0.19.1"
    BACKPORT_REVISION = "eafd8bb9"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.19.1-bpeafd8bb9"
    "io.vllm-backports.series" = "0.19.0"
  }
}

target "v0-20-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.0-ampere-bp29ea30ac", "ghcr.io/vllm-backports/vllm-backports:v0.20.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.0"
    VLLM_VERSION = "0.20.0"
    BACKPORT_REVISION = "29ea30ac"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.0-bp29ea30ac"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.0-hopper-bp29ea30ac", "ghcr.io/vllm-backports/vllm-backports:v0.20.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.0"
    VLLM_VERSION = "0.20.0"
    BACKPORT_REVISION = "29ea30ac"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.0-bp29ea30ac"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.1-ampere-bpf73a076d", "ghcr.io/vllm-backports/vllm-backports:v0.20.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.1"
    VLLM_VERSION = "0.20.1"
    BACKPORT_REVISION = "f73a076d"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.1-bpf73a076d"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.1-hopper-bpf73a076d", "ghcr.io/vllm-backports/vllm-backports:v0.20.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.1"
    VLLM_VERSION = "0.20.1"
    BACKPORT_REVISION = "f73a076d"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.1-bpf73a076d"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-2-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.2-ampere-bpf73a076d", "ghcr.io/vllm-backports/vllm-backports:v0.20.2-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.2"
    VLLM_VERSION = "0.20.2"
    BACKPORT_REVISION = "f73a076d"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.2-bpf73a076d"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-2-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.2-hopper-bpf73a076d", "ghcr.io/vllm-backports/vllm-backports:v0.20.2-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.2"
    VLLM_VERSION = "0.20.2"
    BACKPORT_REVISION = "f73a076d"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.2-bpf73a076d"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-21-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.21.0-ampere-bpfc221cb4", "ghcr.io/vllm-backports/vllm-backports:v0.21.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.21.0"
    VLLM_VERSION = "0.21.0"
    BACKPORT_REVISION = "fc221cb4"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.21.0-bpfc221cb4"
    "io.vllm-backports.series" = "0.21.0"
  }
}

target "v0-21-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.21.0-hopper-bpfc221cb4", "ghcr.io/vllm-backports/vllm-backports:v0.21.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.21.0"
    VLLM_VERSION = "0.21.0"
    BACKPORT_REVISION = "fc221cb4"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.21.0-bpfc221cb4"
    "io.vllm-backports.series" = "0.21.0"
  }
}

target "v0-22-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.0-ampere-bp35514763", "ghcr.io/vllm-backports/vllm-backports:v0.22.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.0"
    VLLM_VERSION = "0.22.0"
    BACKPORT_REVISION = "35514763"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.0-bp35514763"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.0-hopper-bp35514763", "ghcr.io/vllm-backports/vllm-backports:v0.22.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.0"
    VLLM_VERSION = "0.22.0"
    BACKPORT_REVISION = "35514763"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.0-bp35514763"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.1-ampere-bp35514763", "ghcr.io/vllm-backports/vllm-backports:v0.22.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.1"
    VLLM_VERSION = "0.22.1"
    BACKPORT_REVISION = "35514763"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.1-bp35514763"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.1-hopper-bp35514763", "ghcr.io/vllm-backports/vllm-backports:v0.22.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.1"
    VLLM_VERSION = "0.22.1"
    BACKPORT_REVISION = "35514763"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.1-bp35514763"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-23-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.23.0-ampere-bpa9e4df06", "ghcr.io/vllm-backports/vllm-backports:v0.23.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.23.0"
    VLLM_VERSION = "0.23.0"
    BACKPORT_REVISION = "a9e4df06"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.23.0-bpa9e4df06"
    "io.vllm-backports.series" = "0.23.0"
  }
}

target "v0-23-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.23.0-hopper-bpa9e4df06", "ghcr.io/vllm-backports/vllm-backports:v0.23.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.23.0"
    VLLM_VERSION = "0.23.0"
    BACKPORT_REVISION = "a9e4df06"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.23.0-bpa9e4df06"
    "io.vllm-backports.series" = "0.23.0"
  }
}

target "v0-24-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.24.0-ampere-bpbf4a89ce", "ghcr.io/vllm-backports/vllm-backports:v0.24.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.24.0"
    VLLM_VERSION = "0.24.0"
    BACKPORT_REVISION = "bf4a89ce"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.24.0-bpbf4a89ce"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-24-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.24.0-hopper-bpbf4a89ce", "ghcr.io/vllm-backports/vllm-backports:v0.24.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.24.0"
    VLLM_VERSION = "0.24.0"
    BACKPORT_REVISION = "bf4a89ce"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.24.0-bpbf4a89ce"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-25-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.0-ampere-bpd9cbc62a", "ghcr.io/vllm-backports/vllm-backports:v0.25.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.0"
    VLLM_VERSION = "0.25.0"
    BACKPORT_REVISION = "d9cbc62a"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.0-bpd9cbc62a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.0-hopper-bpd9cbc62a", "ghcr.io/vllm-backports/vllm-backports:v0.25.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.0"
    VLLM_VERSION = "0.25.0"
    BACKPORT_REVISION = "d9cbc62a"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.0-bpd9cbc62a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.1-ampere-bpd9cbc62a", "ghcr.io/vllm-backports/vllm-backports:v0.25.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.1"
    VLLM_VERSION = "0.25.1"
    BACKPORT_REVISION = "d9cbc62a"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.1-bpd9cbc62a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.1-hopper-bpd9cbc62a", "ghcr.io/vllm-backports/vllm-backports:v0.25.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.1"
    VLLM_VERSION = "0.25.1"
    BACKPORT_REVISION = "d9cbc62a"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.1-bpd9cbc62a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-26-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.26.0-ampere-bp82980ca9", "ghcr.io/vllm-backports/vllm-backports:v0.26.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.26.0"
    VLLM_VERSION = "0.26.0"
    BACKPORT_REVISION = "82980ca9"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.26.0-bp82980ca9"
    "io.vllm-backports.series" = "0.26.0"
  }
}

target "v0-26-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.26.0-hopper-bp82980ca9", "ghcr.io/vllm-backports/vllm-backports:v0.26.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.26.0"
    VLLM_VERSION = "0.26.0"
    BACKPORT_REVISION = "82980ca9"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.26.0-bp82980ca9"
    "io.vllm-backports.series" = "0.26.0"
  }
}

target "v0-27-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.0-ampere-bp2b461b6b", "ghcr.io/vllm-backports/vllm-backports:v0.27.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.0"
    VLLM_VERSION = "0.27.0"
    BACKPORT_REVISION = "2b461b6b"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.0-bp2b461b6b"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.0-hopper-bp2b461b6b", "ghcr.io/vllm-backports/vllm-backports:v0.27.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.0"
    VLLM_VERSION = "0.27.0"
    BACKPORT_REVISION = "2b461b6b"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.0-bp2b461b6b"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.1-ampere-bp2b461b6b", "ghcr.io/vllm-backports/vllm-backports:v0.27.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.1"
    VLLM_VERSION = "0.27.1"
    BACKPORT_REVISION = "2b461b6b"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.1-bp2b461b6b"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.1-hopper-bp2b461b6b", "ghcr.io/vllm-backports/vllm-backports:v0.27.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.1"
    VLLM_VERSION = "0.27.1"
    BACKPORT_REVISION = "2b461b6b"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.1-bp2b461b6b"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-28-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.28.0-ampere-bpc575c910", "ghcr.io/vllm-backports/vllm-backports:v0.28.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.28.0"
    VLLM_VERSION = "0.28.0"
    BACKPORT_REVISION = "c575c910"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.28.0-bpc575c910"
    "io.vllm-backports.series" = "0.28.0"
  }
}

target "v0-28-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.28.0-hopper-bpc575c910", "ghcr.io/vllm-backports/vllm-backports:v0.28.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.28.0"
    VLLM_VERSION = "0.28.0"
    BACKPORT_REVISION = "c575c910"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.28.0-bpc575c910"
    "io.vllm-backports.series" = "0.28.0"
  }
}

target "v0-29-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.29.0-ampere-bp7ba050e6", "ghcr.io/vllm-backports/vllm-backports:v0.29.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.29.0"
    VLLM_VERSION = "0.29.0"
    BACKPORT_REVISION = "7ba050e6"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.29.0-bp7ba050e6"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-29-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.29.0-hopper-bp7ba050e6", "ghcr.io/vllm-backports/vllm-backports:v0.29.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.29.0"
    VLLM_VERSION = "0.29.0"
    BACKPORT_REVISION = "7ba050e6"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.29.0-bp7ba050e6"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-30-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.30.0-ampere-bp55ffa12c", "ghcr.io/vllm-backports/vllm-backports:v0.30.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.30.0"
    VLLM_VERSION = "0.30.0"
    BACKPORT_REVISION = "55ffa12c"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.30.0-bp55ffa12c"
    "io.vllm-backports.series" = "0.30.0"
  }
}

target "v0-30-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.30.0-hopper-bp55ffa12c", "ghcr.io/vllm-backports/vllm-backports:v0.30.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.30.0"
    VLLM_VERSION = "0.30.0"
    BACKPORT_REVISION = "55ffa12c"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.30.0-bp55ffa12c"
    "io.vllm-backports.series" = "0.30.0"
  }
}

target "v0-31-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.31.0-ampere-bpb2078ec6", "ghcr.io/vllm-backports/vllm-backports:v0.31.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.31.0"
    VLLM_VERSION = "0.31.0"
    BACKPORT_REVISION = "b2078ec6"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.31.0-bpb2078ec6"
    "io.vllm-backports.series" = "0.31.0"
  }
}

target "v0-31-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.31.0-hopper-bpb2078ec6", "ghcr.io/vllm-backports/vllm-backports:v0.31.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.31.0"
    VLLM_VERSION = "0.31.0"
    BACKPORT_REVISION = "b2078ec6"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.31.0-bpb2078ec6"
    "io.vllm-backports.series" = "0.31.0"
  }
}

target "v0-32-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.32.0-ampere-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.32.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.32.0"
    VLLM_VERSION = "0.32.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.32.0-bpadc51ca7"
    "io.vllm-backports.series" = "0.32.0"
  }
}

target "v0-32-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.32.0-hopper-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.32.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.32.0"
    VLLM_VERSION = "0.32.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.32.0-bpadc51ca7"
    "io.vllm-backports.series" = "0.32.0"
  }
}

target "v0-33-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.33.0-ampere-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.33.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.33.0"
    VLLM_VERSION = "0.33.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.33.0-bpadc51ca7"
    "io.vllm-backports.series" = "0.33.0"
  }
}

target "v0-33-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.33.0-hopper-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.33.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.33.0"
    VLLM_VERSION = "0.33.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.33.0-bpadc51ca7"
    "io.vllm-backports.series" = "0.33.0"
  }
}
