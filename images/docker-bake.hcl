# Generated from versions.toml by `python -m vllm_backports.maint bake --write`; do not edit.
# Build one: docker buildx bake -f images/docker-bake.hcl v0-20-0-ampere

group "default" {
  targets = ["v0-20-0-ampere", "v0-20-0-hopper", "v0-20-1-ampere", "v0-20-1-hopper", "v0-20-2-ampere", "v0-20-2-hopper", "v0-21-0-ampere", "v0-21-0-hopper", "v0-22-0-ampere", "v0-22-0-hopper", "v0-22-1-ampere", "v0-22-1-hopper", "v0-23-0-ampere", "v0-23-0-hopper", "v0-24-0-ampere", "v0-24-0-hopper", "v0-25-0-ampere", "v0-25-0-hopper", "v0-25-1-ampere", "v0-25-1-hopper", "v0-26-0-ampere", "v0-26-0-hopper", "v0-27-0-ampere", "v0-27-0-hopper", "v0-27-1-ampere", "v0-27-1-hopper", "v0-28-0-ampere", "v0-28-0-hopper", "v0-29-0-ampere", "v0-29-0-hopper", "v0-30-0-ampere", "v0-30-0-hopper", "v0-31-0-ampere", "v0-31-0-hopper", "v0-32-0-ampere", "v0-32-0-hopper", "v0-33-0-ampere", "v0-33-0-hopper"]
}

group "ampere" {
  targets = ["v0-20-0-ampere", "v0-20-1-ampere", "v0-20-2-ampere", "v0-21-0-ampere", "v0-22-0-ampere", "v0-22-1-ampere", "v0-23-0-ampere", "v0-24-0-ampere", "v0-25-0-ampere", "v0-25-1-ampere", "v0-26-0-ampere", "v0-27-0-ampere", "v0-27-1-ampere", "v0-28-0-ampere", "v0-29-0-ampere", "v0-30-0-ampere", "v0-31-0-ampere", "v0-32-0-ampere", "v0-33-0-ampere"]
}

group "hopper" {
  targets = ["v0-20-0-hopper", "v0-20-1-hopper", "v0-20-2-hopper", "v0-21-0-hopper", "v0-22-0-hopper", "v0-22-1-hopper", "v0-23-0-hopper", "v0-24-0-hopper", "v0-25-0-hopper", "v0-25-1-hopper", "v0-26-0-hopper", "v0-27-0-hopper", "v0-27-1-hopper", "v0-28-0-hopper", "v0-29-0-hopper", "v0-30-0-hopper", "v0-31-0-hopper", "v0-32-0-hopper", "v0-33-0-hopper"]
}

target "v0-20-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.0-ampere-bp875581b5", "ghcr.io/vllm-backports/vllm-backports:v0.20.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.0"
    VLLM_VERSION = "0.20.0"
    BACKPORT_REVISION = "875581b5"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.0-bp875581b5"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.0-hopper-bp875581b5", "ghcr.io/vllm-backports/vllm-backports:v0.20.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.0"
    VLLM_VERSION = "0.20.0"
    BACKPORT_REVISION = "875581b5"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.0-bp875581b5"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.1-ampere-bp875581b5", "ghcr.io/vllm-backports/vllm-backports:v0.20.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.1"
    VLLM_VERSION = "0.20.1"
    BACKPORT_REVISION = "875581b5"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.1-bp875581b5"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.1-hopper-bp875581b5", "ghcr.io/vllm-backports/vllm-backports:v0.20.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.1"
    VLLM_VERSION = "0.20.1"
    BACKPORT_REVISION = "875581b5"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.1-bp875581b5"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-2-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.2-ampere-bp875581b5", "ghcr.io/vllm-backports/vllm-backports:v0.20.2-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.2"
    VLLM_VERSION = "0.20.2"
    BACKPORT_REVISION = "875581b5"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.2-bp875581b5"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-20-2-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.20.2-hopper-bp875581b5", "ghcr.io/vllm-backports/vllm-backports:v0.20.2-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.20.2"
    VLLM_VERSION = "0.20.2"
    BACKPORT_REVISION = "875581b5"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.20.2-bp875581b5"
    "io.vllm-backports.series" = "0.20.0"
  }
}

target "v0-21-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.21.0-ampere-bp8568ac76", "ghcr.io/vllm-backports/vllm-backports:v0.21.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.21.0"
    VLLM_VERSION = "0.21.0"
    BACKPORT_REVISION = "8568ac76"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.21.0-bp8568ac76"
    "io.vllm-backports.series" = "0.21.0"
  }
}

target "v0-21-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.21.0-hopper-bp8568ac76", "ghcr.io/vllm-backports/vllm-backports:v0.21.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.21.0"
    VLLM_VERSION = "0.21.0"
    BACKPORT_REVISION = "8568ac76"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.21.0-bp8568ac76"
    "io.vllm-backports.series" = "0.21.0"
  }
}

target "v0-22-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.0-ampere-bp8568ac76", "ghcr.io/vllm-backports/vllm-backports:v0.22.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.0"
    VLLM_VERSION = "0.22.0"
    BACKPORT_REVISION = "8568ac76"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.0-bp8568ac76"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.0-hopper-bp8568ac76", "ghcr.io/vllm-backports/vllm-backports:v0.22.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.0"
    VLLM_VERSION = "0.22.0"
    BACKPORT_REVISION = "8568ac76"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.0-bp8568ac76"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.1-ampere-bp8568ac76", "ghcr.io/vllm-backports/vllm-backports:v0.22.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.1"
    VLLM_VERSION = "0.22.1"
    BACKPORT_REVISION = "8568ac76"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.1-bp8568ac76"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-22-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.22.1-hopper-bp8568ac76", "ghcr.io/vllm-backports/vllm-backports:v0.22.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.22.1"
    VLLM_VERSION = "0.22.1"
    BACKPORT_REVISION = "8568ac76"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.22.1-bp8568ac76"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-23-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.23.0-ampere-bp8568ac76", "ghcr.io/vllm-backports/vllm-backports:v0.23.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.23.0"
    VLLM_VERSION = "0.23.0"
    BACKPORT_REVISION = "8568ac76"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.23.0-bp8568ac76"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-23-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.23.0-hopper-bp8568ac76", "ghcr.io/vllm-backports/vllm-backports:v0.23.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.23.0"
    VLLM_VERSION = "0.23.0"
    BACKPORT_REVISION = "8568ac76"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.23.0-bp8568ac76"
    "io.vllm-backports.series" = "0.22.0"
  }
}

target "v0-24-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.24.0-ampere-bpfb7922f9", "ghcr.io/vllm-backports/vllm-backports:v0.24.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.24.0"
    VLLM_VERSION = "0.24.0"
    BACKPORT_REVISION = "fb7922f9"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.24.0-bpfb7922f9"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-24-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.24.0-hopper-bpfb7922f9", "ghcr.io/vllm-backports/vllm-backports:v0.24.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.24.0"
    VLLM_VERSION = "0.24.0"
    BACKPORT_REVISION = "fb7922f9"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.24.0-bpfb7922f9"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-25-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.0-ampere-bpfb7922f9", "ghcr.io/vllm-backports/vllm-backports:v0.25.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.0"
    VLLM_VERSION = "0.25.0"
    BACKPORT_REVISION = "fb7922f9"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.0-bpfb7922f9"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-25-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.0-hopper-bpfb7922f9", "ghcr.io/vllm-backports/vllm-backports:v0.25.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.0"
    VLLM_VERSION = "0.25.0"
    BACKPORT_REVISION = "fb7922f9"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.0-bpfb7922f9"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-25-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.1-ampere-bpfb7922f9", "ghcr.io/vllm-backports/vllm-backports:v0.25.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.1"
    VLLM_VERSION = "0.25.1"
    BACKPORT_REVISION = "fb7922f9"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.1-bpfb7922f9"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-25-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.25.1-hopper-bpfb7922f9", "ghcr.io/vllm-backports/vllm-backports:v0.25.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.25.1"
    VLLM_VERSION = "0.25.1"
    BACKPORT_REVISION = "fb7922f9"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.25.1-bpfb7922f9"
    "io.vllm-backports.series" = "0.24.0"
  }
}

target "v0-26-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.26.0-ampere-bp500b3723", "ghcr.io/vllm-backports/vllm-backports:v0.26.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.26.0"
    VLLM_VERSION = "0.26.0"
    BACKPORT_REVISION = "500b3723"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.26.0-bp500b3723"
    "io.vllm-backports.series" = "0.26.0"
  }
}

target "v0-26-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.26.0-hopper-bp500b3723", "ghcr.io/vllm-backports/vllm-backports:v0.26.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.26.0"
    VLLM_VERSION = "0.26.0"
    BACKPORT_REVISION = "500b3723"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.26.0-bp500b3723"
    "io.vllm-backports.series" = "0.26.0"
  }
}

target "v0-27-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.0-ampere-bp50119d12", "ghcr.io/vllm-backports/vllm-backports:v0.27.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.0"
    VLLM_VERSION = "0.27.0"
    BACKPORT_REVISION = "50119d12"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.0-bp50119d12"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.0-hopper-bp50119d12", "ghcr.io/vllm-backports/vllm-backports:v0.27.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.0"
    VLLM_VERSION = "0.27.0"
    BACKPORT_REVISION = "50119d12"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.0-bp50119d12"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-1-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.1-ampere-bp50119d12", "ghcr.io/vllm-backports/vllm-backports:v0.27.1-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.1"
    VLLM_VERSION = "0.27.1"
    BACKPORT_REVISION = "50119d12"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.1-bp50119d12"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-27-1-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.27.1-hopper-bp50119d12", "ghcr.io/vllm-backports/vllm-backports:v0.27.1-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.27.1"
    VLLM_VERSION = "0.27.1"
    BACKPORT_REVISION = "50119d12"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.27.1-bp50119d12"
    "io.vllm-backports.series" = "0.27.0"
  }
}

target "v0-28-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.28.0-ampere-bpac1a9242", "ghcr.io/vllm-backports/vllm-backports:v0.28.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.28.0"
    VLLM_VERSION = "0.28.0"
    BACKPORT_REVISION = "ac1a9242"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.28.0-bpac1a9242"
    "io.vllm-backports.series" = "0.28.0"
  }
}

target "v0-28-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.28.0-hopper-bpac1a9242", "ghcr.io/vllm-backports/vllm-backports:v0.28.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.28.0"
    VLLM_VERSION = "0.28.0"
    BACKPORT_REVISION = "ac1a9242"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.28.0-bpac1a9242"
    "io.vllm-backports.series" = "0.28.0"
  }
}

target "v0-29-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.29.0-ampere-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.29.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.29.0"
    VLLM_VERSION = "0.29.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.29.0-bpadc51ca7"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-29-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.29.0-hopper-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.29.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.29.0"
    VLLM_VERSION = "0.29.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.29.0-bpadc51ca7"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-30-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.30.0-ampere-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.30.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.30.0"
    VLLM_VERSION = "0.30.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.30.0-bpadc51ca7"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-30-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.30.0-hopper-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.30.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.30.0"
    VLLM_VERSION = "0.30.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.30.0-bpadc51ca7"
    "io.vllm-backports.series" = "0.29.0"
  }
}

target "v0-31-0-ampere" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.31.0-ampere-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.31.0-ampere"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.31.0"
    VLLM_VERSION = "0.31.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "ampere"
  }
  labels = {
    "org.opencontainers.image.version" = "0.31.0-bpadc51ca7"
    "io.vllm-backports.series" = "0.31.0"
  }
}

target "v0-31-0-hopper" {
  context = "."
  dockerfile = "images/Dockerfile"
  platforms = ["linux/amd64", "linux/arm64"]
  tags = ["ghcr.io/vllm-backports/vllm-backports:v0.31.0-hopper-bpadc51ca7", "ghcr.io/vllm-backports/vllm-backports:v0.31.0-hopper"]
  args = {
    BASE_IMAGE = "vllm/vllm-openai:v0.31.0"
    VLLM_VERSION = "0.31.0"
    BACKPORT_REVISION = "adc51ca7"
    GPU_ARCH = "hopper"
  }
  labels = {
    "org.opencontainers.image.version" = "0.31.0-bpadc51ca7"
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
    "io.vllm-backports.series" = "0.31.0"
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
    "io.vllm-backports.series" = "0.31.0"
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
