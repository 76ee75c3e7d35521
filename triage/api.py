"""Triage's part of the JSON API: jobs with their triage status, findings, evidence and guidance.

`GET /api/v1/jobs/` lists the jobs a user may see (filters: cluster, team, user, queue, gpu_model, category,
low_util, status, started_after/started_before, external_id, ingest_run), `GET /api/v1/jobs/{id}/` gives one
job with its summary, current triage result and findings. A job of another team is a 404.
`GET /api/v1/teams/` is the chargeback report: each team's GPU-hours, waste and cost over a period, and
`GET /api/v1/teams/{slug}/causes/` why one team's GPUs idled, as its team page gives it
(`triage.dashboard.causes.team_causes`, which the page calls too).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from functools import cached_property

import django_filters
from django.db.models import Exists, OuterRef, Prefetch, Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from config.api import router
from config.api_params import KnownParameters
from fleet.api import API_AUTH, TokenMay, token_of
from fleet.canonical import METRICS, as_utc
from fleet.downloads import SERIES_FORMATS, series_download
from fleet.forms import UtcDateTimeMixin, YesNoField
from fleet.models import Cluster, IngestRun, Job, Team
from fleet.money import to_cents
from fleet.numbers import hours_to_thousandth
from fleet.quoting import quoted
from triage import feedback
from triage.dashboard.causes import team_causes
from triage.dashboard.filters import RECOVERABLE, SORTS, RowIdFilter, recoverable_hours
from triage.dashboard.periods import EARLIEST, LATEST, MAX_DAYS, PRESETS, PeriodError, period_from
from triage.dashboard.queries import (
    UTIL_SOURCE_CHOICES,
    UTIL_SOURCES,
    chargeback,
    narrowed,
    no_such_cluster,
)
from triage.evidence import iso
from triage.labeling.services import blinded_job_ids
from triage.models import Feedback, Finding, JobTriage, TriageStatus, low_util_threshold
from triage.taxonomy import Category, Dimension

# Every amount of money in the API is one kind of value: a decimal string with 2 places, in major units of
# the currency beside it (a job's and a finding's `cost`, a fix's `recoverable_cost`, the teams report's
# `cost_decimal`): exact, as it is stored, where a JSON number is a binary float to most parsers.
MONEY = 'a decimal string with 2 places in major units of `currency` ("12.50")'
CURRENCY = 'The ISO 4217 code of the amount beside it ("USD"); "" when it has none.'
MONEY_FIELD = {"help_text": f"The cost, {MONEY}; null when the job's cluster and GPU model have no price."}


# The shapes of a finding's evidence and guidance, for the schema only: they are stored as JSON
# (`Finding.evidence`, `Finding.guidance`, built by triage.rules.registry.Finding.evidence and
# triage.guidance.guidance_for) and served as stored. Nothing required, as findings stored by an
# older version may lack a key a newer one writes.
class EvidenceWindowSerializer(serializers.Serializer):
    start = serializers.DateTimeField(required=False)
    end = serializers.DateTimeField(required=False)
    minutes = serializers.FloatField(required=False)
    label = serializers.CharField(required=False, help_text="What the window is (a phase, a dip, idle time).")
    mean_util = serializers.FloatField(required=False, help_text="Mean GPU util in the window, when known.")


class EvidenceLogLineSerializer(serializers.Serializer):
    kind = serializers.CharField(required=False, help_text="The log event, e.g. pip_install, oom, epoch.")
    path = serializers.CharField(required=False, help_text="The file in the job's archive.")
    line = serializers.IntegerField(required=False)
    t = serializers.FloatField(required=False, allow_null=True, help_text="Epoch seconds, when known.")
    time = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="The same instant as t, in ISO 8601 UTC like every other time; null when t is.",
    )
    time_estimated = serializers.BooleanField(required=False, help_text="The line had no time of its own.")
    text = serializers.CharField(required=False)


def _from_code(help_text: str) -> serializers.JSONField:
    """A setting as the code gives it: a literal's value (a number, a string, true/false), a default of
    `args.x`, or null when the code computes it."""
    return serializers.JSONField(required=False, help_text=help_text)


class EvidenceCodeSerializer(serializers.Serializer):
    """A fact read from the job's scripts or command line (`triage.evidence.scripts.CodeFact`): kind, path,
    line and code, and the details its kind carries. Each detail is optional: only the kinds named carry it."""

    kind = serializers.CharField(
        required=False,
        help_text="What the line does: dataloader, training_arguments, device_copy, host_sync, save_call, upload_call, "
        "hub_download, remote_path, remote_read, mixed_precision, full_precision, precision_elsewhere, config_file, "
        "config_reference, framework_import, cuda_visible_devices, fixed_device, env, init_process_group, "
        "manual_collective, data_parallel, ddp, shell_install, shell_download, shell_upload, shell_sleep, "
        "shell_interactive, shell_launch, command_launch, slurm_layout, launch_config.",
    )
    path = serializers.CharField(required=False, help_text='The file in the job\'s archive, or "job command".')
    line = serializers.IntegerField(required=False)
    code = serializers.CharField(required=False, help_text="The source line (at most 200 characters).")
    # Python calls (dataloader, training_arguments).
    assigned_to = serializers.CharField(
        required=False, allow_null=True, help_text="dataloader: the variable it is assigned to, when it is."
    )
    batch_size = _from_code("dataloader, training_arguments: the batch size.")
    num_workers = _from_code("dataloader, training_arguments: worker processes (0 when not given).")
    pin_memory = _from_code("dataloader, training_arguments: pinned host memory (the default when not given).")
    pin_memory_given = serializers.BooleanField(required=False, help_text="dataloader: pin_memory was passed.")
    prefetch_factor = _from_code("dataloader: batches each worker loads ahead; null when not given.")
    persistent_workers = _from_code("dataloader: workers kept between epochs; null when not given.")
    feeds_training = serializers.BooleanField(
        required=False, help_text="dataloader: a training-step loop iterates over it."
    )
    # Where a call sits.
    in_loop = serializers.BooleanField(
        required=False, help_text="device_copy, save_call, upload_call, manual_collective: inside a loop."
    )
    in_step_loop = serializers.BooleanField(
        required=False, help_text="The same calls: inside the loop that runs backward passes (a training step)."
    )
    sampled = serializers.BooleanField(
        required=False, help_text="Those calls and host_sync: under an `if step % n` guard, so not every step."
    )
    non_blocking = serializers.BooleanField(required=False, help_text="device_copy: non_blocking=True.")
    call = serializers.CharField(
        required=False,
        help_text="The call or command: save_call, upload_call, host_sync, hub_download, mixed_precision, "
        "manual_collective, remote_read (get_object, open, download_as_bytes, WebDataset ...).",
    )
    source = _from_code(
        "hub_download: the model or dataset fetched (null when computed); precision_elsewhere: where the "
        "precision comes from, flags or config."
    )
    needs = serializers.CharField(
        required=False,
        help_text="precision_elsewhere from config: the config that settles it (deepspeed, accelerate, yaml, any).",
    )
    why = serializers.CharField(required=False, help_text="precision_elsewhere: why the code does not say, in words.")
    dtype = serializers.CharField(
        required=False, allow_null=True, help_text="mixed_precision: bf16, fp16, float16 ...; null when not said."
    )
    setting = serializers.CharField(required=False, help_text="full_precision: the setting that leaves it at fp32.")
    switch = serializers.CharField(
        required=False,
        help_text="full_precision: that setting as written, to change (bf16=False, --mixed_precision no); "
        "absent for a tool's default.",
    )
    accelerate = serializers.BooleanField(
        required=False, help_text="full_precision: the setting is Accelerate's mixed_precision (set to no)."
    )
    auto = serializers.BooleanField(
        required=False,
        help_text='precision_elsewhere: a DeepSpeed config\'s "auto", which the trainer or Accelerate fills.',
    )
    wrapper = serializers.CharField(
        required=False, allow_null=True, help_text="config_file of mmengine: its optim_wrapper type; null when unset."
    )
    bases = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="config_file of mmengine: its _base_ files."
    )
    backend = _from_code("init_process_group: the backend (nccl, gloo); null when computed.")
    device = serializers.CharField(required=False, help_text="fixed_device: the device, e.g. cuda:0.")
    name = serializers.CharField(
        required=False, help_text="env: the variable set; config_reference: the config file it names."
    )
    value = _from_code("env, cuda_visible_devices: the value set.")
    devices = serializers.IntegerField(required=False, help_text="cuda_visible_devices: how many devices it lists.")
    after_framework_import = serializers.BooleanField(
        required=False, help_text="cuda_visible_devices: set after torch was imported (too late to apply)."
    )
    flag = serializers.CharField(required=False, help_text="config_reference: the flag or key that names it.")
    tool = serializers.CharField(
        required=False, help_text="config_file: whose config it is (deepspeed, accelerate ...)."
    )
    module = serializers.CharField(required=False, help_text="framework_import: the module imported.")
    url = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="remote_path: the s3://, gs:// ... address; remote_read: what the code names of it (s3://bucket, a "
        "shard URL), null when it names nothing.",
    )
    client = serializers.CharField(
        required=False,
        help_text="remote_read: the library that reads (boto3, s3fs, gcsfs, google-cloud-storage, azure-storage-blob, "
        "smart_open, fsspec, webdataset, torchdata, datasets for a Hugging Face dataset streamed, requests ...).",
    )
    storage = serializers.ChoiceField(
        choices=["object_store", "hdfs", "http", "remote"], required=False, help_text="remote_read: what it reads from."
    )
    per_sample = serializers.BooleanField(
        required=False,
        help_text="remote_read: it runs per sample (a Dataset's __getitem__/__iter__, what they call, a .map callback, "
        "the training-step loop, a shard stream); false for a read once (a download before training).",
    )
    context = serializers.CharField(
        required=False,
        help_text="remote_read: where it runs (S3ImageDataset.__getitem__; ShardDataset._fetch, called from "
        "ShardDataset.__getitem__; the training-step loop; a function's name, or module level).",
    )
    role = serializers.CharField(required=False, help_text="remote_path: the flag or call it is given to.")
    purpose = serializers.ChoiceField(
        choices=["read", "write", "unknown"], required=False, help_text="remote_path: read or written, from its role."
    )
    # Shell lines and the job's command.
    argv = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="shell_* and command_launch: the command's words (the first 12).",
    )
    launcher = serializers.CharField(
        required=False,
        help_text="shell_launch and command_launch: the program launched (torchrun for `python -m "
        "torch.distributed.run` too, python).",
    )
    processes = serializers.IntegerField(
        required=False,
        help_text="shell_launch and command_launch: the processes a distributed launcher starts, where its options "
        "give them as numbers or its documented default does (`mpirun -np 1`: 1, `torchrun --nproc_per_node=4 "
        "--nnodes=2`: 8, `torchrun train.py`: 1, `deepspeed --num_gpus 1`: 1), or the Accelerate config file the job "
        "brought does (`launch_config`); absent where not known (a default of every GPU, a config file the job did "
        "not bring, `$GPUS`); one is no distributed launch. For a python under srun, srun's tasks "
        "(`srun -n 8 python train.py`, or a bare srun under `#SBATCH --ntasks-per-node=8`: 8), a distributed launch "
        "when more than one.",
    )
    on_cpu = serializers.BooleanField(
        required=False,
        help_text="shell_launch and command_launch: the launch trains on the CPU (`accelerate launch --cpu`), no "
        "distributed launch over GPUs.",
    )
    sbatch_lines = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="shell_launch: for a python under a bare srun, the lines of the allocation it runs in (the batch "
        "script's `#SBATCH` lines, a `salloc` line, an `export SLURM_...` line srun reads as its input environment) "
        "that gave its task count (`processes`) or its GPU binding (`gpu_binding`); absent where the job's sbatch "
        "command line or its Slurm step (`step`) gave them.",
    )
    srun_tasks = serializers.IntegerField(
        required=False,
        help_text="shell_launch and command_launch: for a launcher under srun (`srun -N 2 accelerate launch ...`), the "
        "tasks srun starts, each running the launcher once, where its options, its allocation's, the environment it "
        "runs in or its Slurm step (`step`) give them as numbers; its `processes` are their launchers' counts.",
    )
    step = serializers.CharField(
        required=False,
        help_text="shell_launch and command_launch: the Slurm step (sacct's `steps[].step.id`, e.g. 4242.0) whose "
        "task count is the launch's `processes`: the count that ran, over what the scripts say.",
    )
    gpu_binding = serializers.CharField(
        required=False,
        help_text="shell_launch and command_launch: under srun, the option that binds each task to GPUs of its own, "
        "as given (`--gpus-per-task=1`, which implies `--gpu-bind=per_task:1`; `--ntasks-per-gpu=2`, which implies "
        "`--gpu-bind=single:2`; `--gpu-bind=single:1`, `closest`, `map_gpu:...`, or `--tres-bind=gres/gpu:...`), "
        "srun's own or its allocation's (`#SBATCH`, `salloc`, sbatch's command line): each task sees "
        "only its GPUs, from cuda:0. Absent where none binds (`--gpu-bind=none`) or it is not known.",
    )
    tasks_per_gpu = serializers.IntegerField(
        required=False,
        help_text="shell_launch and command_launch: for a python under srun, the tasks started for every GPU where "
        "`--ntasks-per-gpu=N` gives them (srun's own, its allocation's, `SLURM_NTASKS_PER_GPU`), each a training "
        "process loading its own batches (a loader finding's `numbers.tasks_per_gpu` where more than one).",
    )
    launch_config = serializers.CharField(
        required=False,
        help_text="shell_launch and command_launch: for `accelerate launch`, the job's Accelerate config file it reads "
        "(`--config_file`, else the default one in the user's cache), whose settings gave its `processes` where its "
        "line does not (that file's `launch_config` fact).",
    )
    after_launch = serializers.BooleanField(
        required=False, help_text="shell_sleep: after the script launched training."
    )
    # Slurm's task layout (an `#SBATCH` line, srun's own options), each where given as a number.
    ntasks = serializers.IntegerField(required=False, help_text="slurm_layout: `#SBATCH --ntasks` (`-n`).")
    nodes = serializers.IntegerField(required=False, help_text="slurm_layout: `#SBATCH --nodes` (`-N`).")
    ntasks_per_node = serializers.IntegerField(required=False, help_text="slurm_layout: `--ntasks-per-node`.")
    cpus_per_task = serializers.IntegerField(required=False, help_text="slurm_layout: `--cpus-per-task` (`-c`).")
    gpus_per_task = serializers.IntegerField(required=False, help_text="slurm_layout: `--gpus-per-task`.")
    ntasks_per_gpu = serializers.IntegerField(required=False, help_text="slurm_layout: `--ntasks-per-gpu`.")
    gpus = serializers.IntegerField(
        required=False, help_text="slurm_layout: `--gpus` (`-G`), the job's GPUs (summed over GPU types)."
    )
    gpus_per_node = serializers.IntegerField(
        required=False,
        help_text="slurm_layout: `--gpus-per-node` or `--gres=gpu:N`, each node's GPUs (`--gres=gpu` alone: 1). With "
        "`--ntasks-per-gpu` and no `--ntasks`, Slurm starts that many tasks for every GPU so requested.",
    )
    gpu_bind = serializers.CharField(
        required=False, help_text="slurm_layout: `--gpu-bind`, as given (`closest`, `single:1`, `none`)."
    )
    # An Accelerate config's launch settings, which `accelerate launch` takes where its line gives none.
    distributed_type = serializers.CharField(
        required=False, help_text="launch_config: the kind of launch (NO: one process; MULTI_GPU, DEEPSPEED, FSDP ...)."
    )
    num_processes = serializers.IntegerField(
        required=False, help_text="launch_config: the processes over all machines, where given as a number."
    )
    num_machines = serializers.IntegerField(
        required=False,
        help_text="launch_config: the machines its processes are shared over (under srun, each task starts its share), "
        "where given as a number.",
    )
    compute_environment = serializers.CharField(
        required=False, help_text="launch_config: where it launches (LOCAL_MACHINE, AMAZON_SAGEMAKER)."
    )


class EvidenceSerializer(serializers.Serializer):
    windows = EvidenceWindowSerializer(many=True, required=False, help_text="Where in the run the cause shows.")
    log_lines = EvidenceLogLineSerializer(many=True, required=False, help_text="Log lines that show it.")
    code = EvidenceCodeSerializer(many=True, required=False, help_text="Lines of the job's scripts that cause it.")
    numbers = serializers.DictField(required=False, help_text="The figures the rule measured, by name.")


class GuidanceSerializer(serializers.Serializer):
    title = serializers.CharField(required=False)
    what = serializers.CharField(required=False, help_text="What the cause is.")
    why = serializers.CharField(
        required=False, help_text="Why it leaves GPUs idle; code and the job's settings (`num_workers=0`) in backticks."
    )
    change = serializers.CharField(
        required=False,
        help_text="The change to make. Code, and the settings it gives this job (`num_workers=7`, "
        "`--cpus-per-task=8`), are in backticks, as in all the guidance's words: the pages show them as code.",
    )
    before = serializers.CharField(required=False, help_text="The job's code or command as it is.")
    after = serializers.CharField(required=False, help_text="... and with the change.")
    expected_effect = serializers.CharField(required=False)
    paper = serializers.CharField(required=False)
    recoverable_gpu_hours = serializers.FloatField(
        required=False,
        help_text="The finding's recoverable GPU-hours (`gpu_hours`) to 3 places, half up on the decimal: for a job "
        "with this finding alone, the job's `recoverable_gpu_hours` (pages write a tenth).",
    )
    recoverable_cost = serializers.DecimalField(
        max_digits=20,
        decimal_places=2,
        required=False,
        allow_null=True,
        help_text=f"What the fix would recover, {MONEY}: the finding's `cost`, the same amount (its recoverable "
        "GPU-hours at the job's price, to the cent, half a cent up); null when the job's GPU-hours have no price.",
    )
    currency = serializers.CharField(required=False, help_text=CURRENCY)
    settings = serializers.DictField(required=False, help_text="The job's own figures the change uses.")


def _iso_or_none(seconds) -> str | None:
    """Epoch seconds as stored in a log line's evidence, in ISO 8601; None for none or no time at all."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return None
    try:
        return iso(seconds)
    except (OverflowError, ValueError, OSError):
        return None


@extend_schema_field(EvidenceSerializer)
class EvidenceField(serializers.JSONField):
    """A finding's evidence as stored (a class, not an annotated field: serializers copy their fields),
    each log line's epoch `t` also given as `time` in ISO 8601, as windows' and every other time are."""

    def to_representation(self, value):
        value = super().to_representation(value)
        if isinstance(value, dict) and isinstance(value.get("log_lines"), list):
            value = {
                **value,
                "log_lines": [
                    {**line, "time": _iso_or_none(line.get("t"))} if isinstance(line, dict) else line
                    for line in value["log_lines"]
                ],
            }
        return value


@extend_schema_field(GuidanceSerializer)
class GuidanceField(serializers.JSONField):
    """A finding's guidance as stored, but for its `recoverable_gpu_hours`: given from the finding's `gpu_hours` as
    the job's `recoverable_gpu_hours` is (to 3 places), as a finding stored by revision 10 holds them to 2."""

    def get_attribute(self, instance: Finding):
        guidance = super().get_attribute(instance)
        if isinstance(guidance, dict) and "recoverable_gpu_hours" in guidance:
            guidance = guidance | {"recoverable_gpu_hours": hours_to_thousandth(instance.gpu_hours)}
        return guidance


# A result records two versions, easily taken one for the other (a job's page read "rule set v1" under
# rules revision 12): the rule set's, of the thresholds, and the rules' code's, `rules_revision`.
RULE_SET_VERSION = (
    "The version of the rule set it was made with: the thresholds operators edit on the Rules page "
    "(/triage/rules/vN/), not the rules' code, whose version is the triage's `rules_revision`."
)


class FindingSerializer(serializers.ModelSerializer):
    category_label = serializers.CharField(source="get_category_display", read_only=True)
    dimension = serializers.SerializerMethodField()
    rule_set_version = serializers.IntegerField(source="rule_set.version", read_only=True, help_text=RULE_SET_VERSION)
    evidence = EvidenceField(read_only=True)
    guidance = GuidanceField(read_only=True)

    class Meta:
        model = Finding
        fields = [
            "category",
            "category_label",
            "dimension",
            "sub_cause",
            "confidence",
            "summary",
            "gpu_hours",
            "cost",
            "currency",
            "time_located",
            "rule_set_version",
            "evidence",
            "guidance",
        ]
        extra_kwargs = {
            "summary": {
                "help_text": "What the rules found, in words; code and the job's settings in it (`num_workers=0`) are "
                "in backticks, as in the guidance's words: the pages show them as code."
            },
            "cost": {
                "help_text": f"What this cause cost the job, {MONEY}: its recoverable GPU-hours (`gpu_hours`) at the "
                "job's price, to the cent, half a cent up (the guidance's `recoverable_cost`, the same amount); "
                "null unpriced."
            },
            "currency": {"help_text": CURRENCY},
        }

    @extend_schema_field(serializers.ChoiceField(choices=Dimension.choices))
    def get_dimension(self, finding: Finding) -> str:
        return Category(finding.category).dimension.value


class TriageSerializer(serializers.ModelSerializer):
    rule_set_version = serializers.IntegerField(source="rule_set.version", read_only=True, help_text=RULE_SET_VERSION)

    class Meta:
        model = JobTriage
        fields = [
            "status",
            "reason",
            "rule_set_version",
            "rules_revision",
            "mean_util",
            "coverage",
            "unused_gpu_hours",
            "triaged_at",
        ]
        extra_kwargs = {
            "rules_revision": {
                "help_text": "The revision of the rules' code that made it (`triage.rules.RULES_REVISION`), raised by "
                "a release that changes what the rules conclude: an older one is re-triaged after an upgrade. Not "
                "the thresholds' version, `rule_set_version`."
            }
        }


class TriageDetailSerializer(TriageSerializer):
    class Meta(TriageSerializer.Meta):
        fields = [*TriageSerializer.Meta.fields, "evidence"]


RECOVERABLE_HELP = (
    "The GPU-hours the job's current findings attribute to their causes (what fixing them would recover; the sum "
    "of its findings' `gpu_hours`), to 3 places, half up on the decimal: the jobs list's and its CSV's "
    "`recoverable_gpu_hours`, what `sort=recoverable` orders by. Of the `category` filter's cause alone when the "
    "list is filtered by one, as the cause's page counts them. null for a job without findings, and for one its "
    "viewer rates in a blind study."
)


class JobSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="cluster.name", read_only=True)
    team = serializers.CharField(source="team.slug", read_only=True)
    triage = serializers.SerializerMethodField()
    recoverable_gpu_hours = serializers.SerializerMethodField(help_text=RECOVERABLE_HELP)
    categories = serializers.SerializerMethodField()
    mean_gpu_util_source = serializers.ChoiceField(
        choices=["samples", "slurm_step_accounting"],
        read_only=True,
        allow_null=True,
        help_text="Where mean_gpu_util (and unused_gpu_hours) come from: the job's GPU samples, or, for a job "
        "without any, Slurm's step accounting (gres/gpuutil: an average of the whole run, no time series; "
        "coverage is then 1 and sample_count 0). null without a figure.",
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "cluster",
            "external_id",
            "name",
            "user",
            "team",
            "state",
            "job_type",
            "start_time",
            "end_time",
            "gpu_count",
            "gpu_share",
            "gpu_unit",
            "gpu_model",
            "node_count",
            "mean_gpu_util",
            "mean_gpu_util_source",
            "peak_gpu_mem_util",
            "gpu_hours",
            "unused_gpu_hours",
            "idle_gpu_hours",
            "recoverable_gpu_hours",
            "coverage",
            "cost",
            "currency",
            "triage",
            "categories",
            "updated_at",
        ]
        extra_kwargs = {"cost": MONEY_FIELD, "currency": {"help_text": CURRENCY}}

    # The jobs list's and its CSV's figure (`triage.dashboard.filters.recoverable_hours`, annotated by the view).
    @extend_schema_field(serializers.FloatField(allow_null=True, help_text=RECOVERABLE_HELP))
    def get_recoverable_gpu_hours(self, job: Job) -> float | None:
        hours = getattr(job, "recoverable_gpu_hours", None)
        return None if hours is None else hours_to_thousandth(hours)

    def _current(self, job: Job) -> JobTriage | None:
        if job.pk in self._blinded():
            return None  # the user rates this job in a blind study: no rule output until they submit
        results = getattr(job, "current_triage", None)
        return results[0] if results else None

    def _blinded(self) -> set[int]:
        if "blinded" not in self.context:
            request = self.context.get("request")
            self.context["blinded"] = blinded_job_ids(request.user) if request is not None else set()
        return self.context["blinded"]

    @extend_schema_field(TriageSerializer(allow_null=True))
    def get_triage(self, job: Job) -> dict | None:
        result = self._current(job)
        return TriageSerializer(result).data if result else None

    # The taxonomy's categories by name (CategoryEnum, as a finding's `category`): the schema said any string.
    @extend_schema_field(serializers.ListField(child=serializers.ChoiceField(choices=Category.choices)))
    def get_categories(self, job: Job) -> list[str]:
        result = self._current(job)
        return [f.category for f in result.findings.all()] if result else []


class FeedbackSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.get_username", read_only=True)
    rule_set_version = serializers.IntegerField(
        source="rule_set.version",
        read_only=True,
        allow_null=True,
        help_text="The version of the rule set (the thresholds, not the rules' code) whose finding the answer "
        "judged; null once that version is gone.",
    )

    class Meta:
        model = Feedback
        fields = ["category", "user", "verdict", "comment", "rule_set_version", "updated_at"]


class JobDetailSerializer(JobSerializer):
    findings = serializers.SerializerMethodField()
    feedback = serializers.SerializerMethodField()

    class Meta(JobSerializer.Meta):
        fields = [
            *JobSerializer.Meta.fields,
            *("command", "cpu_count", "sampling_period_s", "sample_count", "findings", "feedback"),
        ]

    @extend_schema_field(FeedbackSerializer(many=True))
    def get_feedback(self, job: Job) -> list[dict]:
        """What the job's people said of its causes (the job page's answers); none while the user
        rates the job blind, as the answers would give its findings away."""
        if job.pk in self._blinded():
            return []
        given = Feedback.objects.filter(job=job).select_related("user", "rule_set").order_by("category", "updated_at")
        return FeedbackSerializer(given, many=True).data

    @extend_schema_field(TriageDetailSerializer(allow_null=True))
    def get_triage(self, job: Job) -> dict | None:
        result = self._current(job)
        return TriageDetailSerializer(result).data if result else None

    @extend_schema_field(FindingSerializer(many=True))
    def get_findings(self, job: Job) -> list[dict]:
        result = self._current(job)
        return FindingSerializer(result.findings.all(), many=True).data if result else []


class UtcIsoDateTimeField(UtcDateTimeMixin, django_filters.fields.IsoDateTimeField):
    """An ISO 8601 time as the same instant in UTC (see `UtcDateTimeMixin`)."""


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


@extend_schema_field(OpenApiTypes.BOOL)
class YesNoFilter(django_filters.Filter):
    field_class = YesNoField

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The schema's type comes from the decorator above, and drf-spectacular then drops the label
        # it would otherwise document the parameter with: put it back, for each filter its own.
        if self.label:
            extend_schema_field({"type": "boolean", "description": self.label})(self)


def seen_by(objects, user):
    """The clusters, teams or jobs a caller may see: a person's, or every one for a machine token
    (let in only when made to read them)."""
    return objects.visible_to(user) if user is not None and user.is_authenticated else objects.all()


def refuse_unknown_cluster(cluster: str, clusters) -> None:
    """A 400 naming `cluster` when no cluster the caller may see has that name, listing those it may."""
    if missing := no_such_cluster(cluster, clusters):
        known = ", ".join(clusters.order_by("name").values_list("name", flat=True)) or "none yet"
        raise ValidationError({"cluster": [f"{missing} (the clusters: {known})."]})


class JobFilter(django_filters.FilterSet):
    # A name no cluster or team has, one the caller may not see included, is a 400 listing those it
    # may: as the teams report's `cluster`, not an empty list a sync script files as a quiet week.
    cluster = django_filters.CharFilter(
        method="filter_cluster", label="Cluster name (exact); one that does not exist is a 400 listing them"
    )
    team = django_filters.CharFilter(
        method="filter_team", label="Team slug (exact); one that does not exist is a 400 listing them"
    )
    user = django_filters.CharFilter(field_name="user")
    # The jobs page's `?queue=` and `?gpu_model=`: as the scheduler and the archive name them.
    queue = django_filters.CharFilter(field_name="queue", label="The scheduler's queue or partition (exact)")
    gpu_model = django_filters.CharFilter(
        field_name="gpu_model", label="GPU model, as the job's record names it (exact)"
    )
    external_id = django_filters.CharFilter(field_name="external_id")
    name = django_filters.CharFilter(field_name="name", label="Job name (exact); with cluster and user: a job's runs")
    category = django_filters.ChoiceFilter(choices=Category.choices, method="filter_category")
    status = django_filters.ChoiceFilter(choices=TriageStatus.choices, method="filter_status")
    answer = django_filters.ChoiceFilter(
        choices=feedback.ANSWER_CHOICES,
        method="filter_answer",
        label="Jobs on which a job owner answered this (on `category`'s cause when it is given)",
    )
    low_util = YesNoFilter(method="filter_low_util", label="Mean GPU util at or below the threshold (true/false)")
    # The jobs list's `?no_util=true` (triage.dashboard.filters.JobFilter): the jobs no utilization
    # range can hold, as neither `low_util` value does, since they have no mean to compare.
    no_util = YesNoFilter(
        field_name="mean_gpu_util",
        lookup_expr="isnull",
        label=(
            "Without a mean GPU utilization, as neither GPU samples nor a Slurm step-accounting average were "
            "supplied (true), or with one (false)"
        ),
    )
    # The jobs list's `?util_source=`: where each job's figure came from, as `mean_gpu_util_source` says.
    util_source = django_filters.ChoiceFilter(
        choices=UTIL_SOURCE_CHOICES,
        method="filter_util_source",
        label=(
            "Jobs whose mean_gpu_util_source is this: samples, or slurm_step_accounting (Slurm's step-accounting "
            "average, for a job without GPU samples); a job without a figure is in neither"
        ),
    )
    started_after = UtcIsoDateTimeFilter(field_name="start_time", lookup_expr="gte")
    started_before = UtcIsoDateTimeFilter(field_name="start_time", lookup_expr="lt")
    ingest_run = RowIdFilter(
        method="filter_ingest_run",
        label="The jobs this ingest run created or updated (its id); a run that does not exist is a 400",
        not_a_number="Ingest run must be a run number, such as ingest_run=42",
        missing="There is no ingest run {number}.",  # as filter_ingest_run says of one no run has
    )
    changed_after = UtcIsoDateTimeFilter(
        method="filter_changed_after",
        label=(
            "Jobs stored, updated or triaged again at or after this time (ISO 8601): what a script that "
            "syncs jobs and their findings fetches since its last run"
        ),
    )
    # The jobs list's orders (`?sort=`, triage.dashboard.filters.SORTS), each then by id as the list and its CSV.
    sort = django_filters.ChoiceFilter(
        choices=[(key, label) for key, (label, _) in SORTS.items()],
        method="sorted",
        label=(
            "The jobs list's orders, each then by id: start (newest first, the default), oldest, unused (most "
            "unused GPU-hours first), gpu_hours, util (lowest mean utilization first), cost, recoverable (most "
            "recoverable GPU-hours first, `recoverable_gpu_hours`: of the `category` filter's cause alone when "
            "given; jobs without any last). Ordered by a figure a job may lack (unused, util, cost, recoverable), "
            "`next` and `previous` carry no `after` or `before`: a page is an offset of the list as of its first "
            "page (`max_id`)"
        ),
    )

    class Meta:
        model = Job
        fields = [
            "cluster", "team", "user", "queue", "gpu_model", "external_id", "name", "category", "status", "answer",
            "low_util", "no_util", "util_source", "ingest_run", "sort",
        ]  # fmt: skip

    def filter_queryset(self, queryset):
        # A range that ends before it begins holds no job: a 400 saying so, as the teams report's
        # "The start date is after the end date", not an empty list a script files as a quiet month.
        after, before = self.form.cleaned_data.get("started_after"), self.form.cleaned_data.get("started_before")
        if after is not None and before is not None and after >= before:
            said = f"started_before ({iso(before.timestamp())}) is not after started_after ({iso(after.timestamp())})"
            raise ValidationError(
                {
                    "started_before": [
                        f"{said}: no job starts at or after the one and before the other. "
                        "Give the earlier time as started_after."
                    ]
                }
            )
        return super().filter_queryset(queryset)

    def filter_cluster(self, queryset, name, value):
        refuse_unknown_cluster(value, seen_by(Cluster.objects, getattr(self.request, "user", None)))
        return queryset.filter(cluster__name=value)

    def filter_team(self, queryset, name, value):
        teams = seen_by(Team.objects, getattr(self.request, "user", None))
        if not teams.filter(slug=value).exists():
            known = ", ".join(teams.order_by("slug").values_list("slug", flat=True)) or "none yet"
            raise ValidationError({"team": [f"There is no team {quoted(value)} (the teams: {known})."]})
        return queryset.filter(team__slug=value)

    def filter_ingest_run(self, queryset, name, value):
        # As `cluster` and `team`: an id no run has (a typo, a run deleted since) is not a run that stored nothing.
        if not IngestRun.objects.filter(pk=value).exists():
            raise ValidationError({"ingest_run": [f"There is no ingest run {value}."]})
        return queryset.filter(ingest_run=value)

    def filter_category(self, queryset, name, value):
        current = Finding.objects.filter(job=OuterRef("pk"), category=value, result__is_current=True)
        return self._without_blinded(queryset.filter(Exists(current)))

    def filter_status(self, queryset, name, value):
        current = JobTriage.objects.filter(job=OuterRef("pk"), is_current=True, status=value)
        return self._without_blinded(queryset.filter(Exists(current)))

    def filter_answer(self, queryset, name, value: str):
        return self._without_blinded(feedback.answered(queryset, value, self.form.cleaned_data.get("category")))

    def _without_blinded(self, queryset):
        """A list filtered by what the rules found leaves out the jobs its user rates in a blind
        study: being in it would say what the rules found on them."""
        return queryset.exclude(pk__in=self._blinded)

    @cached_property
    def _blinded(self) -> set[int]:  # once for both filters
        user = getattr(self.request, "user", None)
        return blinded_job_ids(user) if user is not None else set()

    def filter_changed_after(self, queryset, name, value):
        # A job's row changes when an import stores it again; its findings change when it is
        # triaged again (a new rule set, a retriage), which leaves the row as it was.
        retriaged = JobTriage.objects.filter(job=OuterRef("pk"), is_current=True, triaged_at__gte=value)
        return queryset.filter(Q(updated_at__gte=value) | Exists(retriaged))

    def filter_util_source(self, queryset, name, value):
        return queryset.filter(UTIL_SOURCES[value])

    def sorted(self, queryset, name, value):
        if value == RECOVERABLE:
            queryset = recoverable_hours(queryset, self.form.cleaned_data.get("category") or "", self._blinded)
        return queryset.order_by(SORTS[value][1], "pk")

    def filter_low_util(self, queryset, name, value):
        threshold = low_util_threshold()
        if value:
            return queryset.filter(mean_gpu_util__lte=threshold)
        return queryset.filter(mean_gpu_util__gt=threshold)


# What narrows a job's series download (`fleet.exports.series_csv_chunks`), as the job page's timeline.json takes a
# window: ISO 8601 times, any offset read as that instant in UTC.
SERIES_NARROWING = ("start", "end", "metrics")
SERIES_PARAMETERS = [
    OpenApiParameter(
        "start",
        OpenApiTypes.DATETIME,
        description="Only the samples from this time on (ISO 8601, e.g. 2026-11-02T10:00:00Z; a time without an "
        "offset is UTC). The csv format only; a time that is none is a 400.",
    ),
    OpenApiParameter(
        "end",
        OpenApiTypes.DATETIME,
        description="Only the samples before this time (ISO 8601); after `start` when both are given, else a 400. "
        "The csv format only.",
    ),
    OpenApiParameter(
        "metrics",
        str,
        description=f"Only these metric columns, comma-separated (of {', '.join(METRICS)}), beside job_id, "
        "timestamp, host and gpu; one the job's series lacks is left out, a name that is no metric a 400. "
        "The csv format only.",
    ),
]


def series_narrowing(params) -> dict:
    """`series_csv_chunks`' `start`, `end` and `metrics` from the query string (only those given), or a 400
    naming the parameter: the whole series for a value it could not read was a script's silent mistake."""
    narrowed, problems = {}, {}
    for name in ("start", "end"):
        given = params.get(name, "").strip()
        if not given:
            continue
        try:
            narrowed[name] = as_utc(datetime.fromisoformat(given))
        except (ValueError, OverflowError):  # overflow: an offset that puts the instant before year 1 in UTC
            problems[name] = [f"{quoted(given)} is no ISO 8601 time, such as 2026-11-02T10:00:00Z."]
    if "start" in narrowed and "end" in narrowed and narrowed["end"] <= narrowed["start"]:
        problems["end"] = ["end must be after start."]
    if given := params.get("metrics", "").strip():
        names = [name.strip() for name in given.split(",")]
        if unknown := [name for name in names if name not in METRICS]:
            said = ", ".join(quoted(name) for name in unknown)
            problems["metrics"] = [f"No metric {said}: the metrics are {', '.join(METRICS)}, comma-separated."]
        narrowed["metrics"] = names
    if problems:
        raise ValidationError(problems)
    return narrowed


class ReadsJobs(TokenMay):
    """A machine token made to read jobs (`reads_jobs`): every team's, with their findings and
    series, for a script that follows its pushes or exports jobs."""

    flag, may_not = "reads_jobs", "read jobs"


class JobViewSet(KnownParameters, viewsets.ReadOnlyModelViewSet):
    """Jobs the user may see, with their current triage result; another team's job is a 404.
    A machine token made to read jobs sees every team's."""

    filterset_class = JobFilter
    permission_classes = [IsAuthenticated | ReadsJobs]
    action_parameters = {"series": SERIES_NARROWING}

    @extend_schema(auth=API_AUTH)
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(auth=API_AUTH)
    def retrieve(self, request, *args, **kwargs):
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(
        auth=API_AUTH,
        parameters=[OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=[*SERIES_FORMATS]), *SERIES_PARAMETERS],
        responses={(200, media.split(";")[0]): OpenApiTypes.BINARY for media in SERIES_FORMATS.values()},
        summary="The job's metric series (CSV in the archive's per-job form, or the stored Parquet)",
    )
    @action(detail=True, url_path=rf"series/(?P<fmt>{'|'.join(SERIES_FORMATS)})", url_name="series", filter_backends=[])
    def series(self, request, pk=None, fmt="csv"):
        """The same download as the job page's series.csv / series.parquet; 404 without a stored series.
        The CSV narrowed to a window (`start`, `end`) and to some metrics (`metrics`)."""
        job = self.get_object()
        narrowed = series_narrowing(request.query_params)
        if narrowed and fmt != "csv":
            message = "The Parquet download is the stored series as it is: narrow the csv download instead."
            raise ValidationError({name: [message] for name in SERIES_NARROWING if request.query_params.get(name)})
        return series_download(job, fmt, **narrowed)

    def _jobs(self):
        if self.request.user.is_authenticated:
            return Job.objects.visible_to(self.request.user)  # scoped like the pages
        # Let in by ReadsJobs: a token that reads jobs reads the whole fleet's, like a report token.
        token = token_of(self.request)
        return Job.objects.all() if token is not None and token.reads_jobs else Job.objects.none()

    def get_queryset(self):
        current = JobTriage.objects.filter(is_current=True).select_related("rule_set")
        if self.action == "retrieve":
            current = current.prefetch_related(
                Prefetch("findings", queryset=Finding.objects.select_related("rule_set"))
            )
        else:
            current = current.prefetch_related(
                Prefetch("findings", queryset=Finding.objects.only("category", "result"))
            )
        return (
            self._jobs()
            .select_related("cluster", "team")
            .prefetch_related(Prefetch("triage_results", queryset=current, to_attr="current_triage"))
            .order_by("-start_time", "pk")
        )

    def filter_queryset(self, queryset):
        """The jobs with their `recoverable_gpu_hours` (those `sort=recoverable` annotated already, else as the
        jobs list's CSV counts them: of the `category` filter's cause alone when it is given)."""
        queryset = super().filter_queryset(queryset)
        if "recoverable_gpu_hours" in queryset.query.annotations:
            return queryset
        category = self.request.query_params.get("category", "")
        return recoverable_hours(queryset, category if category in Category.values else "", self._blinded)

    @cached_property
    def _blinded(self) -> set[int]:
        return blinded_job_ids(self.request.user)

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "blinded": self._blinded}

    def get_serializer_class(self):
        return JobDetailSerializer if self.action == "retrieve" else JobSerializer


router.register("jobs", JobViewSet, basename="job")


class ReadsReports(TokenMay):
    """A machine token made to read the teams' report (`reads_reports`)."""

    flag, may_not = "reads_reports", "read the teams' report (their GPU-hours, waste and cost)"


class AmountSerializer(serializers.Serializer):
    amount = serializers.DecimalField(max_digits=20, decimal_places=2, help_text=f"The amount, {MONEY}.")
    currency = serializers.CharField(help_text=CURRENCY)


@extend_schema_field({"type": "number", "format": "double", "deprecated": True})
class DeprecatedFloatField(serializers.FloatField):
    """A number kept for the scripts that read it, marked deprecated in the schema in favour of a field
    beside it (see `TeamReportRowSerializer`)."""


# Where the teams page shows "–" (`triage.dashboard.queries.cost_known`), the report has no figure either:
# a 0 there read as free GPU time to a script that summed or charted it.
COST_NULL = (
    "null when the cost is unknown: none of the team's jobs of the period is priced in a figure of the report's "
    "`currency` (no GPU-hour price, `unpriced_jobs`, or a price in a currency without an exchange rate, "
    '`cost_left_out`), where the teams page shows "–"; a team some of whose jobs are priced has their figure.'
)


class TeamReportRowSerializer(serializers.Serializer):
    team = serializers.CharField(help_text="The team's slug.")
    name = serializers.CharField()
    jobs = serializers.IntegerField(help_text="Jobs the team started in the period.")
    gpu_hours = serializers.FloatField()
    unused_gpu_hours = serializers.FloatField()
    waste_share = serializers.FloatField(
        allow_null=True, help_text="Unused over covered GPU-hours; null without covered GPU time."
    )
    cost = DeprecatedFloatField(
        allow_null=True,
        help_text="Deprecated: `cost_decimal`, the same amount as a decimal string like every other amount in the API. "
        "A JSON number in the report's currency (major units, rounded to 2 places); kept for the scripts that read it. "
        f"{COST_NULL}",
    )
    wasted_cost = DeprecatedFloatField(
        allow_null=True,
        help_text="Deprecated: `wasted_cost_decimal`. A JSON number in the report's currency, rounded to 2 places. "
        f"{COST_NULL}",
    )
    cost_decimal = serializers.DecimalField(
        max_digits=20,
        decimal_places=2,
        source="cost",
        allow_null=True,
        help_text="What the team's priced jobs cost, in the report's `currency` (major units): a decimal string "
        f'with 2 places ("2608.00"), as a job\'s `cost` is. {COST_NULL}',
    )
    wasted_cost_decimal = serializers.DecimalField(
        max_digits=20,
        decimal_places=2,
        source="wasted_cost",
        allow_null=True,
        help_text="What their unused GPU-hours cost, in the report's `currency`: a decimal string with 2 places. "
        f"{COST_NULL}",
    )
    low_util_jobs = serializers.IntegerField(help_text="Jobs at or below the low-utilization threshold.")
    cost_left_out = serializers.CharField(
        help_text='What the cost leaves out, in currencies without an exchange rate, in words ("20.00 EUR; 5.00 GBP"); '
        '"" for nothing. `costs_left_out` has the same amounts to compute with.'
    )
    costs_left_out = AmountSerializer(
        many=True,
        help_text="What the cost leaves out, by currency without an exchange rate (in none of the report's costs); "
        "[] for nothing.",
    )
    unpriced_jobs = serializers.IntegerField(
        help_text="The team's jobs with no GPU-hour price for their cluster and GPU model: the cost leaves them out."
    )
    unpriced_gpu_hours = serializers.FloatField(
        help_text="Those jobs' GPU-hours (in gpu_hours, not in cost); 0 when every job is priced."
    )
    slurm_step_accounting_jobs = serializers.IntegerField(
        help_text="The team's jobs whose mean GPU utilization is Slurm's step-accounting average (no GPU samples; "
        "a job's mean_gpu_util_source slurm_step_accounting): an average of the whole run, counted in "
        "low_util_jobs and unused_gpu_hours as the sampled figures are; 0 when every figure is from samples."
    )


@extend_schema_serializer(many=False)  # one report, though it answers the route's list action
class TeamReportSerializer(serializers.Serializer):
    period_start = serializers.DateField(help_text="The first day (UTC) of the period.")
    period_end = serializers.DateField(help_text="The last day (UTC) of the period, included.")
    cluster = serializers.CharField(allow_null=True, help_text="The cluster it is narrowed to, or null for all.")
    currency = serializers.CharField(help_text="The reporting currency of every cost.")
    teams = TeamReportRowSerializer(many=True, help_text="The teams with jobs in the period, most unused first.")


class TeamCauseSerializer(serializers.Serializer):
    category = serializers.ChoiceField(
        choices=Category.choices, help_text="The cause (a category of the taxonomy), as the jobs list's `category`."
    )
    label = serializers.CharField(help_text='Its name as the pages write it ("Model checkpointing").')
    jobs = serializers.IntegerField(help_text="The team's jobs of the period whose current findings name the cause.")
    recoverable_gpu_hours = serializers.FloatField(
        help_text="The GPU-hours those findings attribute to the cause (what fixing it would win back), to 3 places "
        "(half up): the team page's Recoverable GPU-hours, which it rounds to a tenth."
    )
    cost = serializers.DecimalField(
        max_digits=20,
        decimal_places=2,
        allow_null=True,
        help_text=f"What those GPU-hours cost, {MONEY} (the answer's `currency`; the team page shows it in whole "
        'units). null where the page shows "–": none of the cause\'s jobs is priced in a figure of `currency`.',
    )
    change = serializers.CharField(
        help_text="The change to make, as the team page and the weekly digest name it first (code in `backticks`)."
    )
    set_aside_jobs = serializers.IntegerField(
        help_text="Of `jobs`, those whose people answered the cause wrong or intended (and nobody right): the team "
        "page says the change is set aside when this is all of them, and on how many when some."
    )


class TeamCausesSerializer(serializers.Serializer):
    team = serializers.CharField(help_text="The team's slug.")
    name = serializers.CharField()
    period_start = serializers.DateField(help_text="The first day (UTC) of the period.")
    period_end = serializers.DateField(help_text="The last day (UTC) of the period, included.")
    cluster = serializers.CharField(allow_null=True, help_text="The cluster it is narrowed to, or null for all.")
    currency = serializers.CharField(
        help_text="The currency of every cause's `cost`: the team page's for the same period (chosen over the period "
        "and the one before, as the page's), which may differ from the teams report's over every team."
    )
    unused_gpu_hours = serializers.FloatField(
        help_text="The team's unused GPU-hours of the period, to 3 places: what the causes' recoverable GPU-hours "
        "account for part of (the team page's sentence under its causes)."
    )
    causes = TeamCauseSerializer(
        many=True,
        help_text="Why the team's GPUs idled: the team page's \"Why this team's GPUs idled\" and the weekly digest's "
        "causes, the most recoverable GPU-hours first; [] when no cause was found. A job you rate in a blind study "
        "is left out, as on the page.",
    )


# The days `period_from` takes, which a date's schema cannot say: any other is a 400 naming the parameter.
REPORT_PARAMETERS = [
    OpenApiParameter(
        "from",
        OpenApiTypes.DATE,
        description="The first day (UTC), e.g. 2026-11-01; default 6 days before `to`. "
        f"A day from {EARLIEST} to {LATEST}, else a 400.",
    ),
    OpenApiParameter(
        "to",
        OpenApiTypes.DATE,
        description="The last day (UTC), included; default the newest data's. "
        f"A day from {EARLIEST} to {LATEST}, less than {MAX_DAYS // 365} years after `from`, else a 400.",
    ),
    OpenApiParameter(
        "period",
        str,
        enum=list(PRESETS),
        description="Instead of dates: the last 7, 30 or 90 days of data (default 7d). Not read when `from` or "
        "`to` is given: the dates win, and a period beside them is not checked.",
    ),
    OpenApiParameter("cluster", str, description="Only this cluster's jobs (by name); a name no cluster has is a 400."),
]


class TeamReportViewSet(KnownParameters, viewsets.ViewSet):
    """What each team's GPU time and its waste cost over a period (the teams page's CSV, as JSON):
    for a person, the teams they may see; for a machine token made to read reports, every team."""

    permission_classes = [IsAuthenticated | ReadsReports]
    list_parameters = tuple(parameter.name for parameter in REPORT_PARAMETERS)
    action_parameters = {"causes": list_parameters}
    lookup_field = "slug"

    @extend_schema(
        auth=API_AUTH,
        parameters=REPORT_PARAMETERS,
        responses={200: TeamReportSerializer},
        summary="Each team's GPU-hours, waste and cost",
    )
    def list(self, request):
        cluster, jobs, period = self._scope(request)
        report = chargeback(jobs, period, low_util_threshold())
        return Response(
            TeamReportSerializer(
                {
                    "period_start": period.start.date(),
                    "period_end": period.last_day,
                    "cluster": cluster or None,
                    "currency": report.currency,
                    "teams": report.teams,
                }
            ).data
        )

    @extend_schema(
        auth=API_AUTH,
        parameters=[
            OpenApiParameter("slug", str, OpenApiParameter.PATH, description="The team's slug."),
            *REPORT_PARAMETERS,
        ],
        responses={200: TeamCausesSerializer},
        summary="Why a team's GPUs idled: its causes, as its team page gives them",
    )
    @action(detail=True, url_path="causes", url_name="causes")
    def causes(self, request, slug=None):
        """The team page's causes over a period: per cause its jobs, recoverable GPU-hours, cost and the change
        to make. Another team's (one a person may not see) is a 404; a token made to read reports reads any."""
        team = seen_by(Team.objects, request.user).filter(slug=slug).first()
        if team is None:
            raise NotFound(f"There is no team {quoted(slug)} here.")
        cluster, jobs, period = self._scope(request)
        user = request.user if request.user.is_authenticated else None
        # The team page's function: the same pricing, blinded jobs and set-aside changes, so the two cannot drift.
        found = team_causes(
            jobs.filter(team=team), period, blinded_job_ids(user) if user else set(), low_util_threshold()
        )
        return Response(
            TeamCausesSerializer(
                {
                    "team": team.slug,
                    "name": team.name,
                    "period_start": period.start.date(),
                    "period_end": period.last_day,
                    "cluster": cluster or None,
                    "currency": found.pricing.currency,
                    "unused_gpu_hours": hours_to_thousandth(found.totals.unused_gpu_hours),
                    "causes": [_cause_fields(row) for row in found.causes],
                }
            ).data
        )

    @staticmethod
    def _scope(request):
        """(cluster, the jobs the caller may see on it, the period asked for), or a 400 naming the parameter."""
        cluster = request.query_params.get("cluster", "").strip()
        # A member's: the clusters their teams ran jobs on; a token made to read reports reads them all.
        # Not an empty report for a typo: a script would file it as a quiet month.
        refuse_unknown_cluster(cluster, seen_by(Cluster.objects, request.user))
        jobs, latest = narrowed(seen_by(Job.objects, request.user), cluster)
        try:
            period = period_from(request.query_params, latest)
        except PeriodError as exc:
            raise ValidationError({exc.param: [str(exc)]}) from None
        return cluster, jobs, period


def _cause_fields(row: dict) -> dict:
    """A cause of `triage.dashboard.causes.team_causes` (the team page's row) in the answer's fields."""
    category = row["category"]
    return {
        "category": category.value,
        "label": category.label,
        "jobs": row["jobs"],
        "recoverable_gpu_hours": hours_to_thousandth(row["hours"]),
        "cost": to_cents(Decimal(repr(row["spend"]))) if row["cost_known"] else None,
        "change": row["change"],
        "set_aside_jobs": row["set_aside"],
    }


router.register("teams", TeamReportViewSet, basename="team-report")
