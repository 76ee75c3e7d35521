"""GPU model names: one physical model, spelt differently by each source, is priced by one price row.

Sources name the same GPU in their own ways:

- GPU Feature Discovery's `nvidia.com/gpu.product` node label (a pod's node selector): the driver's name
  with hyphens for spaces, `NVIDIA-A100-SXM4-80GB`, `NVIDIA-H100-80GB-HBM3`; on a node whose GPUs are
  cut into MIG slices (the "single" strategy) `NVIDIA-A100-SXM4-40GB-MIG-1g.5gb`, and under time-slicing
  `NVIDIA-A100-SXM4-80GB-SHARED`;
- dcgm-exporter's `modelName`, nvidia-smi, MLflow's and W&B's system metrics: the driver's name as is,
  `NVIDIA A100-SXM4-80GB`, `NVIDIA H100 80GB HBM3` (older drivers: `Tesla V100-SXM2-32GB`);
- Slurm's gres types: whatever the site named them in gres.conf, `a100`, `a100_80g`;
- an archive's `gpu_model` column and an operator's price row: whatever a person typed.

`gpu_model_name` is what a job and a price row keep (the source's or the person's spelling, with its
whitespace tidied), so pages show the names people know. `gpu_model_key` is what a job's model is
matched to a price row by: case, spaces, hyphens and underscores, a leading `NVIDIA` or `Tesla`, and
GPU Feature Discovery's `-MIG-<profile>` and `-SHARED` suffixes do not tell GPUs apart, so they are
left out of it. A MIG slice or a time-sliced replica is priced at its whole GPU's price, times the share
of the GPU it is (a job's `gpu_share`): `mig_share` is a MIG profile's, which the Kubernetes connector
(`nvidia.com/mig-1g.10gb`, a `-MIG-1g.10gb` node) and the Slurm connector (`slurm_mig_slice`: a gres type
`a100_1g.10gb` is a 1g.10gb slice of an `a100`) both use.

What it does not guess: a Slurm site's own names (`a100_80g` is not `NVIDIA A100-SXM4-80GB` to it: an
`a100` may be a 40 GB or an 80 GB card, SXM or PCIe), the GPU of a Slurm MIG type that names none
(`1g.10gb`: the Slurm connector asks dcgm-exporter's `modelName` when it has a metrics source, else the
slice is priced by a row of its own name), and names that differ in anything but the above (`A100-80GB`
and `A100-SXM4-80GB` stay two models). Those are priced by rows of their own. The key itself never drops
a Slurm MIG type's profile: `a100_1g.10gb` stays a model of its own, so a row a site made for it before
slices were priced at their share stays apart from its `a100` row.

Pure Python: no Django, so connectors, the importer, the price table and migrations' copies agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_SEPARATORS = re.compile(r"[\s_\-]+")
_VENDOR = re.compile(r"^(?:NVIDIA-)?(?:TESLA-)?")
# GPU Feature Discovery's suffixes on `nvidia.com/gpu.product`: a MIG profile (`-MIG-1g.10gb`,
# `-MIG-1g.10gb+me`) under the "single" strategy, and `-SHARED` under time-slicing or MPS.
_GFD_SUFFIXES = re.compile(r"(?:-MIG-[1-7]G\.\d+GB(?:\+[A-Z]+)*)?(?:-SHARED)?$")


def gpu_model_name(name: object) -> str:
    """The spelling a job or a price row keeps: the source's or the person's, its whitespace trimmed and
    runs of it made one space ("  NVIDIA  A100-SXM4-80GB " -> "NVIDIA A100-SXM4-80GB")."""
    return " ".join(str(name or "").split())


def gpu_model_key(name: object) -> str:
    """What a GPU model is matched to a price row by: GFD's `NVIDIA-A100-SXM4-80GB`, its `-SHARED` and
    `-MIG-1g.10gb` forms, dcgm-exporter's `NVIDIA A100-SXM4-80GB` and a typed `a100-sxm4-80gb` are all
    `A100-SXM4-80GB`; Slurm's `a100` is `A100`. "" for no model (the cluster's default price)."""
    return _key(gpu_model_name(name))


@lru_cache(maxsize=4096)  # a fleet has few model names, and a re-price asks for each of 50,000 jobs
def _key(name: str) -> str:
    key = _SEPARATORS.sub("-", name.upper()).strip("-")
    without_suffix = _GFD_SUFFIXES.sub("", key)
    key = without_suffix or key  # a name that is only a suffix stays itself
    return _VENDOR.sub("", key) or key


# A MIG profile `<compute slices>g.<memory>gb` (`+me`, `+gfx`... variants add engines): its share of the
# parent is its compute slices over the parent's 7 (A100, H100, H200, B200), or 4 on an A30, whose
# profiles are the only ones with 6 GB a slice (1g.6gb, 2g.12gb, 4g.24gb).
MIG_PROFILE = re.compile(r"^(?P<slices>[1-7])g\.(?P<memory>\d+)gb(?:\+\w+)*$")
A30_PROFILES = frozenset({"1g.6gb", "2g.12gb", "4g.24gb"})
# A Slurm gres type that is a MIG slice: the profile alone (`1g.10gb`, `3g.40gb`) or after the parent GPU's
# name and an underscore or hyphen (`a100_1g.5gb`; with AutoDetect=nvml `nvidia_a100-sxm4-80gb_3g.40gb`).
_SLURM_MIG_TYPE = re.compile(r"^(?:(?P<parent>.*?[^_\-])[_\-]+)?(?P<profile>[1-7]g\.\d+gb(?:\+\w+)*)$", re.IGNORECASE)


def mig_share(profile: str) -> float | None:
    """The share of its GPU a MIG profile is (`1g.10gb`: 1/7, `3g.40gb`: 3/7, an A30's `1g.6gb`: 1/4), by
    its compute slices, not its memory; None for no MIG profile."""
    match = MIG_PROFILE.match(profile or "")
    if not match:
        return None
    return int(match["slices"]) / (4 if profile.split("+")[0] in A30_PROFILES else 7)


@dataclass(frozen=True)
class MigSlice:
    """A Slurm gres type read as a MIG slice: its profile, its share of the parent GPU, and the parent's
    name as the type spells it ("" when the type is the profile alone)."""

    profile: str
    share: float
    parent: str = ""


def slurm_mig_slice(gres_type: object) -> MigSlice | None:
    """A Slurm GPU gres type as a MIG slice (`a100_1g.5gb` -> 1g.5gb, 1/7 of an `a100`; `3g.40gb` -> 3/7 of
    a GPU it does not name), None for a type that is no slice (`a100`, `a100_80g`)."""
    match = _SLURM_MIG_TYPE.match(gpu_model_name(gres_type))
    if not match:
        return None
    profile = match["profile"].lower()
    share = mig_share(profile)
    return MigSlice(profile, share, match["parent"] or "") if share is not None else None
