# Generated from versions.toml by `python -m vllm_backports.maint bake --write`; do not edit.
# Build one: docker buildx bake -f images/docker-bake.hcl v0-20-0-ampere

group "default" {
  targets = ["v0-17-0-ampere", "v0-17-0-hopper", "v0-17-1-ampere", "v0-17-1-hopper", "v0-18-0-ampere", "v0-18-0-hopper", "v0-18-1-ampere", "v0-18-1-hopper", "v0-19-0-ampere", "v0-19-0-hopper", "v0-19-1-ampere", "v0-19-1-hopper", "v0-20-0-ampere", "v0-20-0-hopper", "v0-20-0-ampere-cu129", "v0-20-0-hopper-cu129", "v0-20-1-ampere", "v0-20-1-hopper", "v0-20-1-ampere-cu129", "v0-20-1-hopper-cu129", "v0-20-2-ampere", "v0-20-2-hopper", "v0-20-2-ampere-cu129", "v0-20-2-hopper-cu129", "v0-21-0-ampere", "v0-21-0-hopper", "v0-21-0-ampere-cu129", "v0-21-0-hopper-cu129", "v0-22-0-ampere", "v0-22-0-hopper", "v0-22-0-ampere-cu129", "v0-22-0-hopper-cu129", "v0-22-1-ampere", "v0-22-1-hopper", "v0-22-1-ampere-cu129", "v0-22-1-hopper-cu129", "v0-23-0-ampere", "v0-23-0-hopper", "v0-23-0-ampere-cu129", "v0-23-0-hopper-cu129", "v0-24-0-ampere", "v0-24-0-hopper", "v0-24-0-ampere-cu129", "v0-24-0-hopper-cu129", "v0-25-0-ampere", "v0-25-0-hopper", "v0-25-0-ampere-cu129", "v0-25-0-hopper-cu129", "v0-25-1-ampere", "v0-25-1-hopper", "v0-25-1-ampere-cu129", "v0-25-1-hopper-cu129", "v0-26-0-ampere", "v0-26-0-hopper", "v0-26-0-ampere-cu129", "v0-26-0-hopper-cu129", "v0-27-0-ampere", "v0-27-0-hopper", "v0-27-0-ampere-cu129", "v0-27-0-hopper-cu129", "v0-27-1-ampere", "v0-27-1-hopper", "v0-27-1-ampere-cu129", "v0-27-1-hopper-cu129", "v0-28-0-ampere", "v0-28-0-hopper", "v0-28-0-ampere-cu129", "v0-28-0-hopper-cu129", "v0-29-0-ampere", "v0-29-0-hopper", "v0-29-0-ampere-cu129", "v0-29-0-hopper-cu129", "v0-30-0-ampere", "v0-30-0-hopper", "v0-30-0-ampere-cu129", "v0-30-0-hopper-cu129", "v0-31-0-ampere", "v0-31-0-hopper", "v0-31-0-ampere-cu129", "v0-31-0-hopper-cu129", "v0-32-0-ampere", "v0-32-0-hopper", "v0-32-0-ampere-cu129", "v0-32-0-hopper-cu129", "v0-33-0-ampere", "v0-33-0-hopper", "v0-33-0-ampere-cu129", "v0-33-0-hopper-cu129"]
}

group "ampere" {
  targets = ["v0-17-0-ampere", "v0-17-1-ampere", "v0-18-0-ampere", "v0-18-1-ampere", "v0-19-0-ampere", "v0-19-1-ampere", "v0-20-0-ampere", "v0-20-0-ampere-cu129", "v0-20-1-ampere", "v0-20-1-ampere-cu129", "v0-20-2-ampere", "v0-20-2-ampere-cu129", "v0-21-0-ampere", "v0-21-0-ampere-cu129", "v0-22-0-ampere", "v0-22-0-ampere-cu129", "v0-22-1-ampere", "v0-22-1-ampere-cu129", "v0-23-0-ampere", "v0-23-0-ampere-cu129", "v0-24-0-ampere", "v0-24-0-ampere-cu129", "v0-25-0-ampere", "v0-25-0-ampere-cu129", "v0-25-1-ampere", "v0-25-1-ampere-cu129", "v0-26-0-ampere", "v0-26-0-ampere-cu129", "v0-27-0-ampere", "v0-27-0-ampere-cu129", "v0-27-1-ampere", "v0-27-1-ampere-cu129", "v0-28-0-ampere", "v0-28-0-ampere-cu129", "v0-29-0-ampere", "v0-29-0-ampere-cu129", "v0-30-0-ampere", "v0-30-0-ampere-cu129", "v0-31-0-ampere", "v0-31-0-ampere-cu129", "v0-32-0-ampere", "v0-32-0-ampere-cu129", "v0-33-0-ampere", "v0-33-0-ampere-cu129"]
}

group "hopper" {
  targets = ["v0-17-0-hopper", "v0-17-1-hopper", "v0-18-0-hopper", "v0-18-1-hopper", "v0-19-0-hopper", "v0-19-1-hopper", "v0-20-0-hopper", "v0-20-0-hopper-cu129", "v0-20-1-hopper", "v0-20-1-hopper-cu129", "v0-20-2-hopper", "v0-20-2-hopper-cu129", "v0-21-0-hopper", "v0-21-0-hopper-cu129", "v0-22-0-hopper", "v0-22-0-hopper-cu129", "v0-22-1-hopper", "v0-22-1-hopper-cu129", "v0-23-0-hopper", "v0-23-0-hopper-cu129", "v0-24-0-hopper", "v0-24-0-hopper-cu129", "v0-25-0-hopper", "v0-25-0-hopper-cu129", "v0-25-1-hopper", "v0-25-1-hopper-cu129", "v0-26-0-hopper", "v0-26-0-hopper-cu129", "v0-27-0-hopper", "v0-27-0-hopper-cu129", "v0-27-1-hopper", "v0-27-1-hopper-cu129", "v0-28-0-hopper", "v0-28-0-hopper-cu129", "v0-29-0-hopper", "v0-29-0-hopper-cu129", "v0-30-0-hopper", "v0-30-0-hopper-cu129", "v0-31-0-hopper", "v0-31-0-hopper-cu129", "v0-32-0-hopper", "v0-32-0-hopper-cu129", "v0-33-0-hopper", "v0-33-0-hopper-cu129"]
}

group "cu129" {
  targets = ["v0-20-0-ampere-cu129", "v0-20-0-hopper-cu129", "v0-20-1-ampere-cu129", "v0-20-1-hopper-cu129", "v0-20-2-ampere-cu129", "v0-20-2-hopper-cu129", "v0-21-0-ampere-cu129", "v0-21-0-hopper-cu129", "v0-22-0-ampere-cu129", "v0-22-0-hopper-cu129", "v0-22-1-ampere-cu129", "v0-22-1-hopper-cu129", "v0-23-0-ampere-cu129", "v0-23-0-hopper-cu129", "v0-24-0-ampere-cu129", "v0-24-0-hopper-cu129", "v0-25-0-ampere-cu129", "v0-25-0-hopper-cu129", "v0-25-1-ampere-cu129", "v0-25-1-hopper-cu129", "v0-26-0-ampere-cu129", "v0-26-0-hopper-cu129", "v0-27-0-ampere-cu129", "v0-27-0-hopper-cu129", "v0-27-1-ampere-cu129", "v0-27-1-hopper-cu129", "v0-28-0-ampere-cu129", "v0-28-0-hopper-cu129", "v0-29-0-ampere-cu129", "v0-29-0-hopper-cu129", "v0-30-0-ampere-cu129", "v0-30-0-hopper-cu129", "v0-31-0-ampere-cu129", "v0-31-0-hopper-cu129", "v0-32-0-ampere-cu129", "v0-32-0-hopper-cu129", "v0-33-0-ampere-cu129", "v0-33-0-hopper-cu129"]
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
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.0-ampere-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.0"
    VLLM_VERSION = "0.20.0"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.0-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.0-hopper-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.0"
    VLLM_VERSION = "0.20.0"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.0-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.0-ampere-cu129-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.0-cu129"
    VLLM_VERSION = "0.20.0"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.0-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.0-hopper-cu129-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.0-cu129"
    VLLM_VERSION = "0.20.0"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.0-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.1-ampere-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.1"
    VLLM_VERSION = "0.20.1"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.1-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.1-hopper-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.1"
    VLLM_VERSION = "0.20.1"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.1-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-1-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.1-ampere-cu129-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.1-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.1-cu129"
    VLLM_VERSION = "0.20.1"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.1-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-1-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.1-hopper-cu129-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.1-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.1-cu129"
    VLLM_VERSION = "0.20.1"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.1-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-2-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.2-ampere-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.2-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.2"
    VLLM_VERSION = "0.20.2"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.2-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-2-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.2-hopper-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.2-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.2"
    VLLM_VERSION = "0.20.2"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.2-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-2-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.2-ampere-cu129-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.2-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.2-cu129"
    VLLM_VERSION = "0.20.2"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.2-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-20-2-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.2-hopper-cu129-bpcf229bf0", "ghcr.io/vllm-backports/vllm-backports:v0.20.2-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.2-cu129"
    VLLM_VERSION = "0.20.2"
    BACKPORT_REVISION = "cf229bf0"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.2-bpcf229bf0"
    "io.vllm-backports.series" = "0.20.1"
  }
}

target "v0-21-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.21.0-ampere-bp9fbadd16", "ghcr.io/vllm-backports/vllm-backports:v0.21.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.21.0"
    VLLM_VERSION = "0.21.0"
    BACKPORT_REVISION = "9fbadd16"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.21.0-bp9fbadd16"
    "io.vllm-backports.series" = "0.21.0"
  }
}

target "v0-21-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.21.0-hopper-bp9fbadd16", "ghcr.io/vllm-backports/vllm-backports:v0.21.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.21.0"
    VLLM_VERSION = "0.21.0"
    BACKPORT_REVISION = "9fbadd16"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.21.0-bp9fbadd16"
    "io.vllm-backports.series" = "0.21.0"
  }
}

target "v0-21-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.21.0-ampere-cu129-bp9fbadd16", "ghcr.io/vllm-backports/vllm-backports:v0.21.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.21.0-cu129"
    VLLM_VERSION = "0.21.0"
    BACKPORT_REVISION = "9fbadd16"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.21.0-bp9fbadd16"
    "io.vllm-backports.series" = "0.21.0"
  }
}

target "v0-21-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.21.0-hopper-cu129-bp9fbadd16", "ghcr.io/vllm-backports/vllm-backports:v0.21.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.21.0-cu129"
    VLLM_VERSION = "0.21.0"
    BACKPORT_REVISION = "9fbadd16"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.21.0-bp9fbadd16"
    "io.vllm-backports.series" = "0.21.0"
  }
}

target "v0-22-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.0-ampere-bp20494932", "ghcr.io/vllm-backports/vllm-backports:v0.22.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.0"
    VLLM_VERSION = "0.22.0"
    BACKPORT_REVISION = "20494932"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.0-bp20494932"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.0-hopper-bp20494932", "ghcr.io/vllm-backports/vllm-backports:v0.22.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.0"
    VLLM_VERSION = "0.22.0"
    BACKPORT_REVISION = "20494932"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.0-bp20494932"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.0-ampere-cu129-bp20494932", "ghcr.io/vllm-backports/vllm-backports:v0.22.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.0-cu129"
    VLLM_VERSION = "0.22.0"
    BACKPORT_REVISION = "20494932"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.0-bp20494932"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.0-hopper-cu129-bp20494932", "ghcr.io/vllm-backports/vllm-backports:v0.22.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.0-cu129"
    VLLM_VERSION = "0.22.0"
    BACKPORT_REVISION = "20494932"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.0-bp20494932"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.1-ampere-bp20494932", "ghcr.io/vllm-backports/vllm-backports:v0.22.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.1"
    VLLM_VERSION = "0.22.1"
    BACKPORT_REVISION = "20494932"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.1-bp20494932"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.1-hopper-bp20494932", "ghcr.io/vllm-backports/vllm-backports:v0.22.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.1"
    VLLM_VERSION = "0.22.1"
    BACKPORT_REVISION = "20494932"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.1-bp20494932"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-1-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.1-ampere-cu129-bp20494932", "ghcr.io/vllm-backports/vllm-backports:v0.22.1-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.1-cu129"
    VLLM_VERSION = "0.22.1"
    BACKPORT_REVISION = "20494932"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.1-bp20494932"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-1-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.1-hopper-cu129-bp20494932", "ghcr.io/vllm-backports/vllm-backports:v0.22.1-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.1-cu129"
    VLLM_VERSION = "0.22.1"
    BACKPORT_REVISION = "20494932"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.1-bp20494932"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-23-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.23.0-ampere-bp14f27732", "ghcr.io/vllm-backports/vllm-backports:v0.23.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.23.0"
    VLLM_VERSION = "0.23.0"
    BACKPORT_REVISION = "14f27732"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.23.0-bp14f27732"
    "io.vllm-backports.series" = "0.23.0"
  }
}

target "v0-23-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.23.0-hopper-bp14f27732", "ghcr.io/vllm-backports/vllm-backports:v0.23.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.23.0"
    VLLM_VERSION = "0.23.0"
    BACKPORT_REVISION = "14f27732"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.23.0-bp14f27732"
    "io.vllm-backports.series" = "0.23.0"
  }
}

target "v0-23-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.23.0-ampere-cu129-bp14f27732", "ghcr.io/vllm-backports/vllm-backports:v0.23.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.23.0-cu129"
    VLLM_VERSION = "0.23.0"
    BACKPORT_REVISION = "14f27732"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.23.0-bp14f27732"
    "io.vllm-backports.series" = "0.23.0"
  }
}

target "v0-23-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.23.0-hopper-cu129-bp14f27732", "ghcr.io/vllm-backports/vllm-backports:v0.23.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.23.0-cu129"
    VLLM_VERSION = "0.23.0"
    BACKPORT_REVISION = "14f27732"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.23.0-bp14f27732"
    "io.vllm-backports.series" = "0.23.0"
  }
}

target "v0-24-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.24.0-ampere-bpf4482b78", "ghcr.io/vllm-backports/vllm-backports:v0.24.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.24.0"
    VLLM_VERSION = "0.24.0"
    BACKPORT_REVISION = "f4482b78"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.24.0-bpf4482b78"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-24-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.24.0-hopper-bpf4482b78", "ghcr.io/vllm-backports/vllm-backports:v0.24.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.24.0"
    VLLM_VERSION = "0.24.0"
    BACKPORT_REVISION = "f4482b78"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.24.0-bpf4482b78"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-24-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.24.0-ampere-cu129-bpf4482b78", "ghcr.io/vllm-backports/vllm-backports:v0.24.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.24.0-cu129"
    VLLM_VERSION = "0.24.0"
    BACKPORT_REVISION = "f4482b78"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.24.0-bpf4482b78"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-24-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.24.0-hopper-cu129-bpf4482b78", "ghcr.io/vllm-backports/vllm-backports:v0.24.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.24.0-cu129"
    VLLM_VERSION = "0.24.0"
    BACKPORT_REVISION = "f4482b78"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.24.0-bpf4482b78"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-25-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.0-ampere-bpb507ff7a", "ghcr.io/vllm-backports/vllm-backports:v0.25.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.0"
    VLLM_VERSION = "0.25.0"
    BACKPORT_REVISION = "b507ff7a"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.0-bpb507ff7a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.0-hopper-bpb507ff7a", "ghcr.io/vllm-backports/vllm-backports:v0.25.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.0"
    VLLM_VERSION = "0.25.0"
    BACKPORT_REVISION = "b507ff7a"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.0-bpb507ff7a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.0-ampere-cu129-bpb507ff7a", "ghcr.io/vllm-backports/vllm-backports:v0.25.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.0-cu129"
    VLLM_VERSION = "0.25.0"
    BACKPORT_REVISION = "b507ff7a"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.0-bpb507ff7a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.0-hopper-cu129-bpb507ff7a", "ghcr.io/vllm-backports/vllm-backports:v0.25.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.0-cu129"
    VLLM_VERSION = "0.25.0"
    BACKPORT_REVISION = "b507ff7a"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.0-bpb507ff7a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.1-ampere-bpb507ff7a", "ghcr.io/vllm-backports/vllm-backports:v0.25.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.1"
    VLLM_VERSION = "0.25.1"
    BACKPORT_REVISION = "b507ff7a"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.1-bpb507ff7a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.1-hopper-bpb507ff7a", "ghcr.io/vllm-backports/vllm-backports:v0.25.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.1"
    VLLM_VERSION = "0.25.1"
    BACKPORT_REVISION = "b507ff7a"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.1-bpb507ff7a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-1-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.1-ampere-cu129-bpb507ff7a", "ghcr.io/vllm-backports/vllm-backports:v0.25.1-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.1-cu129"
    VLLM_VERSION = "0.25.1"
    BACKPORT_REVISION = "b507ff7a"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.1-bpb507ff7a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-25-1-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.1-hopper-cu129-bpb507ff7a", "ghcr.io/vllm-backports/vllm-backports:v0.25.1-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.1-cu129"
    VLLM_VERSION = "0.25.1"
    BACKPORT_REVISION = "b507ff7a"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.1-bpb507ff7a"
    "io.vllm-backports.series" = "0.25.0"
  }
}

target "v0-26-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.26.0-ampere-bp56f70933", "ghcr.io/vllm-backports/vllm-backports:v0.26.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.26.0"
    VLLM_VERSION = "0.26.0"
    BACKPORT_REVISION = "56f70933"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.26.0-bp56f70933"
    "io.vllm-backports.series" = "0.26.0"
  }
}

target "v0-26-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.26.0-hopper-bp56f70933", "ghcr.io/vllm-backports/vllm-backports:v0.26.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.26.0"
    VLLM_VERSION = "0.26.0"
    BACKPORT_REVISION = "56f70933"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.26.0-bp56f70933"
    "io.vllm-backports.series" = "0.26.0"
  }
}

target "v0-26-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.26.0-ampere-cu129-bp56f70933", "ghcr.io/vllm-backports/vllm-backports:v0.26.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.26.0-cu129"
    VLLM_VERSION = "0.26.0"
    BACKPORT_REVISION = "56f70933"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.26.0-bp56f70933"
    "io.vllm-backports.series" = "0.26.0"
  }
}

target "v0-26-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.26.0-hopper-cu129-bp56f70933", "ghcr.io/vllm-backports/vllm-backports:v0.26.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.26.0-cu129"
    VLLM_VERSION = "0.26.0"
    BACKPORT_REVISION = "56f70933"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.26.0-bp56f70933"
    "io.vllm-backports.series" = "0.26.0"
  }
}

target "v0-27-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.0-ampere-bp95bd3116", "ghcr.io/vllm-backports/vllm-backports:v0.27.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.0"
    VLLM_VERSION = "0.27.0"
    BACKPORT_REVISION = "95bd3116"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.0-bp95bd3116"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.0-hopper-bp95bd3116", "ghcr.io/vllm-backports/vllm-backports:v0.27.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.0"
    VLLM_VERSION = "0.27.0"
    BACKPORT_REVISION = "95bd3116"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.0-bp95bd3116"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.0-ampere-cu129-bp95bd3116", "ghcr.io/vllm-backports/vllm-backports:v0.27.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.0-cu129"
    VLLM_VERSION = "0.27.0"
    BACKPORT_REVISION = "95bd3116"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.0-bp95bd3116"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.0-hopper-cu129-bp95bd3116", "ghcr.io/vllm-backports/vllm-backports:v0.27.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.0-cu129"
    VLLM_VERSION = "0.27.0"
    BACKPORT_REVISION = "95bd3116"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.0-bp95bd3116"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.1-ampere-bp95bd3116", "ghcr.io/vllm-backports/vllm-backports:v0.27.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.1"
    VLLM_VERSION = "0.27.1"
    BACKPORT_REVISION = "95bd3116"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.1-bp95bd3116"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.1-hopper-bp95bd3116", "ghcr.io/vllm-backports/vllm-backports:v0.27.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.1"
    VLLM_VERSION = "0.27.1"
    BACKPORT_REVISION = "95bd3116"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.1-bp95bd3116"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-1-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.1-ampere-cu129-bp95bd3116", "ghcr.io/vllm-backports/vllm-backports:v0.27.1-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.1-cu129"
    VLLM_VERSION = "0.27.1"
    BACKPORT_REVISION = "95bd3116"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.1-bp95bd3116"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-1-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.1-hopper-cu129-bp95bd3116", "ghcr.io/vllm-backports/vllm-backports:v0.27.1-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.1-cu129"
    VLLM_VERSION = "0.27.1"
    BACKPORT_REVISION = "95bd3116"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.1-bp95bd3116"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-28-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.28.0-ampere-bpd2bfcb40", "ghcr.io/vllm-backports/vllm-backports:v0.28.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.28.0"
    VLLM_VERSION = "0.28.0"
    BACKPORT_REVISION = "d2bfcb40"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.28.0-bpd2bfcb40"
    "io.vllm-backports.series" = "0.28.0"
  }
}

target "v0-28-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.28.0-hopper-bpd2bfcb40", "ghcr.io/vllm-backports/vllm-backports:v0.28.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.28.0"
    VLLM_VERSION = "0.28.0"
    BACKPORT_REVISION = "d2bfcb40"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.28.0-bpd2bfcb40"
    "io.vllm-backports.series" = "0.28.0"
  }
}

target "v0-28-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.28.0-ampere-cu129-bpd2bfcb40", "ghcr.io/vllm-backports/vllm-backports:v0.28.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.28.0-cu129"
    VLLM_VERSION = "0.28.0"
    BACKPORT_REVISION = "d2bfcb40"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.28.0-bpd2bfcb40"
    "io.vllm-backports.series" = "0.28.0"
  }
}

target "v0-28-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.28.0-hopper-cu129-bpd2bfcb40", "ghcr.io/vllm-backports/vllm-backports:v0.28.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.28.0-cu129"
    VLLM_VERSION = "0.28.0"
    BACKPORT_REVISION = "d2bfcb40"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.28.0-bpd2bfcb40"
    "io.vllm-backports.series" = "0.28.0"
  }
}

target "v0-29-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.29.0-ampere-bpd093b953", "ghcr.io/vllm-backports/vllm-backports:v0.29.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.29.0"
    VLLM_VERSION = "0.29.0"
    BACKPORT_REVISION = "d093b953"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.29.0-bpd093b953"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-29-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.29.0-hopper-bpd093b953", "ghcr.io/vllm-backports/vllm-backports:v0.29.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.29.0"
    VLLM_VERSION = "0.29.0"
    BACKPORT_REVISION = "d093b953"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.29.0-bpd093b953"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-29-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.29.0-ampere-cu129-bpd093b953", "ghcr.io/vllm-backports/vllm-backports:v0.29.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.29.0-cu129"
    VLLM_VERSION = "0.29.0"
    BACKPORT_REVISION = "d093b953"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.29.0-bpd093b953"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-29-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.29.0-hopper-cu129-bpd093b953", "ghcr.io/vllm-backports/vllm-backports:v0.29.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.29.0-cu129"
    VLLM_VERSION = "0.29.0"
    BACKPORT_REVISION = "d093b953"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.29.0-bpd093b953"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-30-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.30.0-ampere-bp2ecf4322", "ghcr.io/vllm-backports/vllm-backports:v0.30.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.30.0"
    VLLM_VERSION = "0.30.0"
    BACKPORT_REVISION = "2ecf4322"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.30.0-bp2ecf4322"
    "io.vllm-backports.series" = "0.30.0"
  }
}

target "v0-30-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.30.0-hopper-bp2ecf4322", "ghcr.io/vllm-backports/vllm-backports:v0.30.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.30.0"
    VLLM_VERSION = "0.30.0"
    BACKPORT_REVISION = "2ecf4322"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.30.0-bp2ecf4322"
    "io.vllm-backports.series" = "0.30.0"
  }
}

target "v0-30-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.30.0-ampere-cu129-bp2ecf4322", "ghcr.io/vllm-backports/vllm-backports:v0.30.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.30.0-cu129"
    VLLM_VERSION = "0.30.0"
    BACKPORT_REVISION = "2ecf4322"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.30.0-bp2ecf4322"
    "io.vllm-backports.series" = "0.30.0"
  }
}

target "v0-30-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.30.0-hopper-cu129-bp2ecf4322", "ghcr.io/vllm-backports/vllm-backports:v0.30.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.30.0-cu129"
    VLLM_VERSION = "0.30.0"
    BACKPORT_REVISION = "2ecf4322"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.30.0-bp2ecf4322"
    "io.vllm-backports.series" = "0.30.0"
  }
}

target "v0-31-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.31.0-ampere-bp0b54a77f", "ghcr.io/vllm-backports/vllm-backports:v0.31.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.31.0"
    VLLM_VERSION = "0.31.0"
    BACKPORT_REVISION = "0b54a77f"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.31.0-bp0b54a77f"
    "io.vllm-backports.series" = "0.31.0"
  }
}

target "v0-31-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.31.0-hopper-bp0b54a77f", "ghcr.io/vllm-backports/vllm-backports:v0.31.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.31.0"
    VLLM_VERSION = "0.31.0"
    BACKPORT_REVISION = "0b54a77f"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.31.0-bp0b54a77f"
    "io.vllm-backports.series" = "0.31.0"
  }
}

target "v0-31-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.31.0-ampere-cu129-bp0b54a77f", "ghcr.io/vllm-backports/vllm-backports:v0.31.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.31.0-cu129"
    VLLM_VERSION = "0.31.0"
    BACKPORT_REVISION = "0b54a77f"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.31.0-bp0b54a77f"
    "io.vllm-backports.series" = "0.31.0"
  }
}

target "v0-31-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.31.0-hopper-cu129-bp0b54a77f", "ghcr.io/vllm-backports/vllm-backports:v0.31.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.31.0-cu129"
    VLLM_VERSION = "0.31.0"
    BACKPORT_REVISION = "0b54a77f"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.31.0-bp0b54a77f"
    "io.vllm-backports.series" = "0.31.0"
  }
}

target "v0-32-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.32.0-ampere-bp9fb474c8", "ghcr.io/vllm-backports/vllm-backports:v0.32.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.32.0"
    VLLM_VERSION = "0.32.0"
    BACKPORT_REVISION = "9fb474c8"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.32.0-bp9fb474c8"
    "io.vllm-backports.series" = "0.32.0"
  }
}

target "v0-32-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.32.0-hopper-bp9fb474c8", "ghcr.io/vllm-backports/vllm-backports:v0.32.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.32.0"
    VLLM_VERSION = "0.32.0"
    BACKPORT_REVISION = "9fb474c8"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.32.0-bp9fb474c8"
    "io.vllm-backports.series" = "0.32.0"
  }
}

target "v0-32-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.32.0-ampere-cu129-bp9fb474c8", "ghcr.io/vllm-backports/vllm-backports:v0.32.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.32.0-cu129"
    VLLM_VERSION = "0.32.0"
    BACKPORT_REVISION = "9fb474c8"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.32.0-bp9fb474c8"
    "io.vllm-backports.series" = "0.32.0"
  }
}

target "v0-32-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.32.0-hopper-cu129-bp9fb474c8", "ghcr.io/vllm-backports/vllm-backports:v0.32.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.32.0-cu129"
    VLLM_VERSION = "0.32.0"
    BACKPORT_REVISION = "9fb474c8"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.32.0-bp9fb474c8"
    "io.vllm-backports.series" = "0.32.0"
  }
}

target "v0-33-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.33.0-ampere-bp335e5972", "ghcr.io/vllm-backports/vllm-backports:v0.33.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.33.0"
    VLLM_VERSION = "0.33.0"
    BACKPORT_REVISION = "335e5972"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.33.0-bp335e5972"
    "io.vllm-backports.series" = "0.33.0"
  }
}

target "v0-33-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.33.0-hopper-bp335e5972", "ghcr.io/vllm-backports/vllm-backports:v0.33.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.33.0"
    VLLM_VERSION = "0.33.0"
    BACKPORT_REVISION = "335e5972"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.33.0-bp335e5972"
    "io.vllm-backports.series" = "0.33.0"
  }
}

target "v0-33-0-ampere-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.33.0-ampere-cu129-bp335e5972", "ghcr.io/vllm-backports/vllm-backports:v0.33.0-ampere-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.33.0-cu129"
    VLLM_VERSION = "0.33.0"
    BACKPORT_REVISION = "335e5972"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.33.0-bp335e5972"
    "io.vllm-backports.series" = "0.33.0"
  }
}

target "v0-33-0-hopper-cu129" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.33.0-hopper-cu129-bp335e5972", "ghcr.io/vllm-backports/vllm-backports:v0.33.0-hopper-cu129"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.33.0-cu129"
    VLLM_VERSION = "0.33.0"
    BACKPORT_REVISION = "335e5972"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.33.0-bp335e5972"
    "io.vllm-backports.series" = "0.33.0"
  }
}
