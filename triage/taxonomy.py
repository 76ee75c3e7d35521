"""The 15 categories of low GPU utilization (ICSE '24, "An Empirical Study on Low GPU Utilization
of Deep Learning Jobs"), declared once. Nothing else in the code base spells a category string.

Kept free of models so pure code (the demo generator, rules) can import it; TextChoices is
a plain enum that needs no database.
"""

from __future__ import annotations

from django.db import models


class Dimension(models.TextChoices):
    JOB = "job", "Job"
    MODEL = "model", "Model"
    DATA = "data", "Data"
    LIBRARY = "library", "Library"


class Category(models.TextChoices):
    INTERACTIVE_JOB = "interactive_job", "Interactive job"
    GPU_OVERSUBSCRIPTION = "gpu_oversubscription", "GPU oversubscription"
    UNRELEASED_JOB = "unreleased_job", "Unreleased job"
    NON_DL_JOB = "non_dl_job", "Non-DL job"
    IMPROPER_BATCH_SIZE = "improper_batch_size", "Improper batch size"
    MODEL_CHECKPOINTING = "model_checkpointing", "Model checkpointing"
    GPU_MEMORY_BOUND = "gpu_memory_bound", "Insufficient GPU memory"
    HOST_GPU_TRANSFER = "host_gpu_transfer", "Inefficient host-GPU data transfer"
    DATA_EXCHANGE = "data_exchange", "Data exchange (distributed)"
    DATA_PREPROCESSING = "data_preprocessing", "Data preprocessing on CPU"
    REMOTE_DATA_READING = "remote_data_reading", "Remote data reading"
    EXTERNAL_DATA_USAGE = "external_data_usage", "External data usage"
    INTERMEDIATE_UPLOAD = "intermediate_upload", "Intermediate result uploading"
    API_MISUSE = "api_misuse", "API misuse"
    LENGTHY_LIBRARY_INSTALL = "lengthy_library_install", "Lengthy library installation"

    @property
    def dimension(self) -> Dimension:
        return CATEGORY_DIMENSION[self]

    @property
    def paper_share(self) -> float:
        """Share of the paper's 706 low-utilization issues in this category, in percent."""
        return PAPER_SHARE[self]

    @property
    def colour(self) -> str:
        return DIMENSION_COLOUR[CATEGORY_DIMENSION[self]]


CATEGORY_DIMENSION: dict[Category, Dimension] = {
    Category.INTERACTIVE_JOB: Dimension.JOB,
    Category.GPU_OVERSUBSCRIPTION: Dimension.JOB,
    Category.UNRELEASED_JOB: Dimension.JOB,
    Category.NON_DL_JOB: Dimension.JOB,
    Category.IMPROPER_BATCH_SIZE: Dimension.MODEL,
    Category.MODEL_CHECKPOINTING: Dimension.MODEL,
    Category.GPU_MEMORY_BOUND: Dimension.MODEL,
    Category.HOST_GPU_TRANSFER: Dimension.DATA,
    Category.DATA_EXCHANGE: Dimension.DATA,
    Category.DATA_PREPROCESSING: Dimension.DATA,
    Category.REMOTE_DATA_READING: Dimension.DATA,
    Category.EXTERNAL_DATA_USAGE: Dimension.DATA,
    Category.INTERMEDIATE_UPLOAD: Dimension.DATA,
    Category.API_MISUSE: Dimension.LIBRARY,
    Category.LENGTHY_LIBRARY_INSTALL: Dimension.LIBRARY,
}

PAPER_SHARE: dict[Category, float] = {
    Category.INTERACTIVE_JOB: 2.12,
    Category.GPU_OVERSUBSCRIPTION: 0.85,
    Category.UNRELEASED_JOB: 1.27,
    Category.NON_DL_JOB: 0.57,
    Category.IMPROPER_BATCH_SIZE: 25.64,
    Category.MODEL_CHECKPOINTING: 16.43,
    Category.GPU_MEMORY_BOUND: 3.12,
    Category.HOST_GPU_TRANSFER: 27.90,
    Category.DATA_EXCHANGE: 7.08,
    Category.DATA_PREPROCESSING: 3.97,
    Category.REMOTE_DATA_READING: 2.55,
    Category.EXTERNAL_DATA_USAGE: 2.55,
    Category.INTERMEDIATE_UPLOAD: 1.98,
    Category.API_MISUSE: 2.27,
    Category.LENGTHY_LIBRARY_INSTALL: 1.70,
}

# Dark enough for white badge text at WCAG AA (4.5:1 or more; tests/test_accessibility.py).
DIMENSION_COLOUR: dict[Dimension, str] = {
    Dimension.JOB: "#8e44ad",
    Dimension.MODEL: "#a04000",
    Dimension.DATA: "#1f6391",
    Dimension.LIBRARY: "#1a7340",
}

# The metrics that show each cause on a job's timeline, beyond GPU utilization, GPU memory and host CPU,
# which it always draws: the job page draws these for the job's current findings (a host-GPU transfer
# finding gets PCIe, remote reading the network, checkpointing disk writes), as a DCGM or Grafana
# dashboard's reader looks for the metric behind a verdict. Canonical names (fleet.canonical.METRICS); a
# metric the job's series lacks is not drawn. The rules read PCIe rx and network rx (the findings'
# `pcie_rx_gb_s`, `net_rx_mb_s`); the rest are the metrics in which the cause shows.
CATEGORY_METRICS: dict[Category, tuple[str, ...]] = {
    Category.INTERACTIVE_JOB: (),
    Category.GPU_OVERSUBSCRIPTION: (),
    Category.UNRELEASED_JOB: (),
    Category.NON_DL_JOB: ("sm_active", "tensor_active"),
    Category.IMPROPER_BATCH_SIZE: ("sm_active", "tensor_active"),
    Category.MODEL_CHECKPOINTING: ("disk_write_bytes_per_s",),
    Category.GPU_MEMORY_BOUND: ("pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s"),
    Category.HOST_GPU_TRANSFER: ("pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s"),
    Category.DATA_EXCHANGE: ("net_rx_bytes_per_s", "net_tx_bytes_per_s"),
    Category.DATA_PREPROCESSING: ("disk_read_bytes_per_s",),
    Category.REMOTE_DATA_READING: ("net_rx_bytes_per_s",),
    Category.EXTERNAL_DATA_USAGE: ("net_rx_bytes_per_s",),
    Category.INTERMEDIATE_UPLOAD: ("net_tx_bytes_per_s",),
    Category.API_MISUSE: ("sm_active",),
    Category.LENGTHY_LIBRARY_INSTALL: ("net_rx_bytes_per_s", "disk_write_bytes_per_s"),
}
