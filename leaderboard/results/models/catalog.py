"""What a run ran: the stack (engine + build), the model file, the server
configuration and the workload. Rows are shared between runs: ingest finds an
identical row by its natural key before creating one."""

from __future__ import annotations

from django.db import models


class Engine(models.TextChoices):
    LLAMA_CPP = "llama.cpp", "llama.cpp"
    IK_LLAMA_CPP = "ik_llama.cpp", "ik_llama.cpp"
    VLLM = "vllm", "vLLM"
    OLLAMA = "ollama", "Ollama"
    SGLANG = "sglang", "SGLang"
    BEELLAMA = "beellama", "BeeLlama"
    CLOUD_API = "cloud-api", "Cloud API"
    OTHER = "other", "Other"


class Architecture(models.TextChoices):
    DENSE = "dense", "Dense"
    MOE = "moe", "MoE"
    HYBRID = "hybrid", "Hybrid"
    UNKNOWN = "unknown", "Unknown"


class SpeculativeType(models.TextChoices):
    NONE = "none", "None"
    DRAFT_MODEL = "draft", "Draft model"
    MTP = "mtp", "MTP"
    DFLASH = "dflash", "DFlash"
    EAGLE = "eagle", "EAGLE"
    NGRAM = "ngram", "n-gram"
    UNKNOWN = "unknown", "Unknown"


class Stack(models.Model):
    """An inference engine at one build, with its build flags and container image."""

    engine = models.CharField(max_length=32, choices=Engine.choices)
    build = models.CharField(max_length=200, blank=True, help_text="Commit or build number, e.g. master-ad27757.")
    build_flags = models.CharField(max_length=1000, blank=True)
    image = models.CharField(max_length=300, blank=True, help_text="Container image, if any.")
    notes = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["engine", "build", "build_flags", "image"], name="uniq_stack"),
        ]

    def __str__(self) -> str:
        label = self.get_engine_display()
        return f"{label} {self.build}".strip()


class ModelFile(models.Model):
    """One model file (or shard set) as loaded by the server."""

    name = models.CharField(max_length=300)
    repo = models.CharField(max_length=300, blank=True)
    architecture = models.CharField(max_length=16, choices=Architecture.choices, default=Architecture.UNKNOWN)
    total_params_b = models.FloatField(null=True, blank=True)
    active_params_b = models.FloatField(null=True, blank=True)
    experts_total = models.PositiveIntegerField(null=True, blank=True)
    experts_active = models.PositiveIntegerField(null=True, blank=True)
    layers = models.PositiveIntegerField(null=True, blank=True)
    quantization = models.CharField(max_length=100, blank=True, help_text="e.g. Q3_K_XL, IQ2_XXS, NVFP4.")
    weight_format = models.CharField(max_length=100, blank=True, help_text="e.g. GGUF, NVFP4, AWQ-INT4.")
    file_size_bytes = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "repo", "quantization", "sha256"], name="uniq_model_file"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.quantization}".strip()

    @property
    def identity(self) -> str:
        """Return what makes two model files the same file: the sha256 when known,
        else name + repo + quantization."""
        return self.sha256 or f"{self.repo}/{self.name}:{self.quantization}".lower()


class Configuration(models.Model):
    """What was passed to the server. ``config_hash`` is a sha256 over every
    field below, so identical configurations share one row."""

    config_hash = models.CharField(max_length=64, unique=True)
    ctx_size = models.PositiveIntegerField(null=True, blank=True)
    cache_type_k = models.CharField(max_length=32, blank=True)
    cache_type_v = models.CharField(max_length=32, blank=True)
    batch_size = models.PositiveIntegerField(null=True, blank=True)
    ubatch_size = models.PositiveIntegerField(null=True, blank=True)
    parallel = models.PositiveIntegerField(null=True, blank=True)
    flash_attn = models.CharField(max_length=16, blank=True, help_text="on / off / auto")
    n_gpu_layers = models.IntegerField(null=True, blank=True)
    tensor_split = models.CharField(max_length=200, blank=True)
    tensor_overrides = models.TextField(blank=True, help_text="-ot patterns, one per line.")
    threads = models.PositiveIntegerField(null=True, blank=True)
    speculative_type = models.CharField(max_length=16, choices=SpeculativeType.choices, default=SpeculativeType.NONE)
    draft_model = models.CharField(max_length=300, blank=True)
    draft_n_max = models.PositiveIntegerField(null=True, blank=True)
    thinking = models.BooleanField(null=True, blank=True)
    temperature = models.FloatField(null=True, blank=True)
    top_k = models.IntegerField(null=True, blank=True)
    top_p = models.FloatField(null=True, blank=True)
    min_p = models.FloatField(null=True, blank=True)
    extra_args = models.JSONField(default=list, blank=True)
    command_line = models.TextField(blank=True, help_text="The full command line as run.")

    def __str__(self) -> str:
        parts = [f"ctx {self.ctx_size}" if self.ctx_size else "", self.get_speculative_type_display()]
        return ", ".join(p for p in parts if p)


class Workload(models.Model):
    """A standard benchmark workload at one version."""

    name = models.CharField(max_length=200)
    version = models.CharField(max_length=32, default="1")
    prompt_sha256 = models.CharField(max_length=64, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    repetitions = models.PositiveIntegerField(null=True, blank=True)
    warmup = models.PositiveIntegerField(null=True, blank=True)
    description = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["name", "version", "prompt_sha256", "max_tokens", "repetitions", "warmup"],
                name="uniq_workload",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"
