"""Fix guidance per category and sub-cause: what happens, why the GPU idles, the change, the effect.

Pure Python. `guidance_for()` fills in the job's own numbers (recoverable GPU-hours and cost, and
for loader-bound jobs concrete DataLoader settings from its CPUs, GPUs and current workers).
Gains quoted are the ICSE '24 study's measured ones (shared/taxonomy.md).
"""

from __future__ import annotations

from decimal import Decimal

from fleet.money import cost_of
from fleet.numbers import hours_to_thousandth, share_text
from triage.evidence.remote_reads import read_kind
from triage.rules.common import plural
from triage.taxonomy import Category

# The study's figures in whole percent, as the cause pages write its shares ("26 %", money_format's `percent`):
# BERT 64.40 % -> 90.78 %, Swin Transformer 57.79 % -> 85.05 %, 84.99 % of issues a small change.
PAPER_BATCH = (
    "The study raised BERT training from 64 % to 91 % GPU utilization (up to 4.92x faster) and "
    "Swin Transformer from 58 % to 85 % (3.41x) by raising the batch size."
)
PAPER_COMBINED = (
    "With a larger batch, asynchronous checkpointing and pinned memory together, the study measured "
    "BERT 7.52x and Swin Transformer 3.95x faster."
)
PAPER_SMALL_CHANGE = "85 % of the study's issues needed only a small code or script change."

# category -> {what, why, fixes: {sub_cause or "default": (change, before, after)}, effect}
GUIDES: dict[Category, dict] = {
    Category.INTERACTIVE_JOB: {
        "what": "GPUs are held by a session a person drives (notebook, IDE, shell, `sleep infinity`).",
        "why": "Between the person's bursts of work nothing runs on the GPU, but the allocation stays.",
        "fixes": {
            "default": (
                "Develop on a small or shared GPU (MIG slice, time-slicing) with an idle time-out; submit long "
                "runs as batch jobs.",
                "srun --gres=gpu:{gpu_count} --time=2-00:00:00 --pty jupyter lab",
                "srun --gres=gpu:1g.10gb:1 --time=04:00:00 --pty jupyter lab   # MIG slice, short limit\n"
                "sbatch train.sh                                             # the real run, as a batch job",
            )
        },
        "effect": "The idle session time is returned to the fleet.",
    },
    Category.GPU_OVERSUBSCRIPTION: {
        "what": "The job requested more GPUs than its program uses.",
        "why": "GPUs the program never touches stay at 0 % for the whole run.",
        "fixes": {
            "default": (
                "Request only the GPUs the program uses, or make it use all of them with DistributedDataParallel.",
                '#SBATCH {request}\npython train.py          # uses torch.device("cuda:0")',
                "#SBATCH {used_request}\npython train.py\n# or, to use all {gpu_count}:\n"
                "torchrun {launch} train.py   # with DDP(model, device_ids=[local_rank])",
            ),
            "srun_tasks": (
                "`srun` already starts a process a task, but the tasks share GPUs: have each use its own, set from "
                "its task's local rank (`SLURM_LOCALID`; `LOCAL_RANK` under torchrun) before it builds the model, "
                "or request only the GPUs it uses.",
                'srun -n {srun_tasks} python train.py\n# train.py\nmodel = Model().to("cuda")   # every task on cuda:0',
                'srun -n {srun_tasks} python train.py\n# train.py\nlocal_rank = int(os.environ["SLURM_LOCALID"])\n'
                "torch.cuda.set_device(local_rank)\n"
                "model = DDP(Model().to(local_rank), device_ids=[local_rank])",
            ),
            "srun_bound_tasks": (
                "`srun` starts a process a task and Slurm binds each task its own GPU (`--gpus-per-task`, "
                "`--gpu-bind`): it sets each task's CUDA_VISIBLE_DEVICES, so a task sees only its GPU, as cuda:0. "
                "The tasks do not share a GPU, "
                "and the default device (`cuda`, `cuda:0`) is already each task's own: keep it (`cuda:$SLURM_LOCALID` "
                "would name a GPU the task cannot see: a task that does so stops with 'invalid device ordinal'). "
                "The idle GPUs are tasks that did no work: make every task "
                "train its share (the training loop not only on rank 0, a `DistributedSampler` over the data, every "
                "task still running in the log), or request only the GPUs that work.",
                "srun -n {srun_tasks} {gpu_binding} python train.py\n# train.py\n"
                'if int(os.environ["SLURM_PROCID"]) == 0:   # only task 0 trains\n    train(Model().to("cuda"))',
                "srun -n {srun_tasks} {gpu_binding} python train.py\n# train.py: each task on its own GPU, its cuda:0\n"
                "# (rank and world size from SLURM_PROCID / SLURM_NTASKS)\n"
                'model = DDP(Model().to("cuda:0"), device_ids=[0])\n'
                "loader = DataLoader(data, sampler=DistributedSampler(data))   # its share\n"
                "train(model, loader)",
            ),
        },
        "effect": "The unused GPUs go back to the queue (or the run gets faster on all of them).",
    },
    Category.UNRELEASED_JOB: {
        "what": "The allocation stays after the work is done.",
        "why": "After training ends, a trailing `sleep` or a process kept alive holds the GPUs idle.",
        "fixes": {
            "trailing_sleep": (
                "Let the job script end when the program ends.",
                "python train.py\nsleep 12h",
                "python train.py",
            ),
            "idle_process": (
                "Exit the process when training is done (inspect with a saved checkpoint instead).",
                "trainer.train()\nwhile True:\n    time.sleep(600)",
                "trainer.train()\ntrainer.save_model(out_dir)   # then exit",
            ),
            "default": (
                "Exit when done; set a realistic walltime; enable automatic release of idle allocations.",
                "#SBATCH --time=2-00:00:00",
                "#SBATCH --time=06:00:00   # close to the real run time",
            ),
        },
        "effect": "The idle tail is recovered in full.",
    },
    Category.NON_DL_JOB: {
        "what": "Work that needs no GPU (data analysis, ETL, classic ML) runs on a GPU allocation.",
        "why": "No kernel ever runs on the GPU; the job works on the CPU only.",
        "fixes": {
            "cpu_work_after_training": (
                "Run the CPU-only step after training (COCO or sklearn evaluation, metrics, export) as its own "
                "job on a CPU partition that starts when training ends, or compute it on the GPU.",
                "python train.py\npython evaluate.py   # pycocotools on the CPU; the GPUs stay allocated",
                "jid=$(sbatch --parsable train.sh)                       # GPUs: training only\n"
                "sbatch --dependency=afterok:$jid --partition=cpu eval.sh   # the evaluation on CPUs",
            ),
            "default": (
                "Submit to a CPU partition.",
                "#SBATCH --partition=a100\n#SBATCH --gres=gpu:1",
                "#SBATCH --partition=cpu\n#SBATCH --cpus-per-task=32",
            ),
        },
        "effect": "All of the job's GPU-hours are recovered (for CPU work after training, that stretch's).",
    },
    Category.IMPROPER_BATCH_SIZE: {
        "what": "Too little GPU work per step: a small batch leaves the GPU waiting on per-step overhead.",
        "why": "Kernel launches, the optimizer step and data loading cost about the same per step whatever the batch; "
        "with a small batch they dominate and the GPU sits idle between short kernels.",
        "fixes": {
            "default": (
                "Raise the per-GPU batch size until memory is about 70-80 % used; scale the learning rate "
                "(linear rule) with a warm-up; or pack several small runs on one GPU.",
                "parser.add_argument('--batch-size', type=int, default={batch_size})",
                "parser.add_argument('--batch-size', type=int, default={suggested_batch})\n"
                "# lr x {batch_factor} (linear scaling), with a short warm-up",
            )
        },
        "effect": PAPER_BATCH,
    },
    Category.MODEL_CHECKPOINTING: {
        "what": "Synchronous checkpoint saves (often to remote storage) stall the training loop.",
        "why": "While `torch.save` writes the state, no step is queued, so every GPU idles for the whole save.",
        "fixes": {
            "default": (
                "Save asynchronously (a background thread, or `torch.distributed.checkpoint.async_save`), save "
                "less often, write to local disk and upload in the background.",
                "if step % args.save_every == 0:\n    torch.save(state, path)",
                "if step % args.save_every == 0:\n"
                "    future = dcp.async_save(state, checkpoint_id=local_path)  # returns at once\n"
                "# upload local_path in a background thread",
            )
        },
        "effect": PAPER_COMBINED,
    },
    Category.GPU_MEMORY_BOUND: {
        "what": "GPU memory, not compute, caps the batch size.",
        "why": "With memory nearly full the batch cannot grow, so each step gives the GPU too little work.",
        "fixes": {
            # Chosen by the finding's numbers["precision"], from the job's code (triage.rules.model._precision).
            "fp32": (
                "Train in mixed precision (`torch.autocast` with bf16, or fp16 with `torch.amp.GradScaler`; "
                '`bf16=True` in TrainingArguments, `precision="bf16-mixed"` in Lightning): half the activation '
                "memory, tensor cores. Then, if memory is still full: activation checkpointing, gradient "
                "accumulation, ZeRO/FSDP sharding.",
                "loss = model(inputs).loss\nloss.backward()",
                "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(inputs).loss\nloss.backward()",
            ),
            "mixed": (
                "The job already trains in mixed precision: use activation (gradient) checkpointing, gradient "
                "accumulation, ZeRO/FSDP sharding, or a GPU with more memory.",
                "model = build_model()\n"
                "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(inputs).loss",
                "model = build_model()\nmodel.gradient_checkpointing_enable()   # or torch.utils.checkpoint\n"
                "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(inputs).loss\n"
                "# and/or FSDP(model) / DeepSpeed ZeRO-2",
            ),
            "default": (
                "Train in mixed precision (`torch.autocast` with bf16, or fp16 with `torch.amp.GradScaler`) if the "
                "job runs in fp32; use activation (gradient) checkpointing, gradient accumulation, ZeRO/FSDP "
                "sharding, or a GPU with more memory.",
                "model = build_model()\nloss = model(inputs).loss",
                "model = build_model()\nmodel.gradient_checkpointing_enable()   # or torch.utils.checkpoint\n"
                "with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(inputs).loss\n"
                "# and/or FSDP(model) / DeepSpeed ZeRO-2",
            ),
            # DeepSpeed ZeRO offload: the states that did not fit in GPU memory live in host memory or on NVMe.
            "zero_offload": (
                "ZeRO offload keeps what did not fit in GPU memory (the optimizer state, with `offload_param` the "
                "parameters too) in host memory or on NVMe, so every step moves it over PCIe and the GPUs wait. "
                "Offload only if the model does not fit without it: first try ZeRO-2, or ZeRO-3 without offload, "
                "on more GPUs (ZeRO-3 gives each of N GPUs 1/N of the parameters, gradients and optimizer state), "
                "with activation checkpointing and mixed precision to make room. If it must offload, offload the "
                "optimizer state only, to CPU rather than NVMe, with `pin_memory: true`, and raise the batch "
                "(or gradient accumulation) so each transfer serves more compute.",
                '"zero_optimization": {\n'
                '  "stage": 3,\n'
                '  "offload_optimizer": {"device": "cpu"},\n'
                '  "offload_param": {"device": "cpu"}\n'
                "}",
                '"zero_optimization": {\n'
                '  "stage": 2,\n'
                '  "overlap_comm": true,\n'
                '  "contiguous_gradients": true\n'
                "}\n"
                "# no offload: the states stay on the GPUs. If they do not fit, stage 3 on more GPUs;\n"
                '# if it still must offload: "offload_optimizer": {"device": "cpu", "pin_memory": true}',
            ),
        },
        "effect": "Freed memory lets the batch grow; the batch-size gains apply. " + PAPER_BATCH,
    },
    Category.HOST_GPU_TRANSFER: {
        "what": "Host-to-GPU copies come from pageable memory and block the step.",
        "why": "A copy from pageable memory is staged through a pinned buffer synchronously; the GPU waits for "
        "every batch to arrive instead of overlapping the copy with compute.",
        "fixes": {
            "default": (
                "Pin the loader's memory and copy with non_blocking=True.",
                "loader = DataLoader(ds, batch_size=bs, num_workers=w)\nx = x.to(device)",
                "loader = DataLoader(ds, batch_size=bs, num_workers=w, pin_memory=True)\n"
                "x = x.to(device, non_blocking=True)",
            )
        },
        "effect": "Pinned memory was part of the study's combined fix: " + PAPER_COMBINED,
    },
    Category.DATA_EXCHANGE: {
        "what": "Distributed training stalls on gradient/parameter exchange.",
        "why": "While gradients travel between GPUs or nodes without overlap, every GPU waits at once.",
        "fixes": {
            "dataparallel": (
                "Use DistributedDataParallel (one process per GPU) instead of nn.DataParallel.",
                "model = nn.DataParallel(model)\npython train.py",
                "model = DDP(model, device_ids=[local_rank])\ntorchrun --nproc_per_node={gpus_per_node} train.py",
            ),
            # Each sub-cause shows in its code what the rule found, and only that: a job whose only sign is
            # dips every GPU shares is not shown a per-parameter all-reduce or NCCL_IB_DISABLE it does not have.
            "unbucketed_allreduce_over_sockets": (
                "Let DDP bucket and overlap gradient all-reduce with backward, and let NCCL use InfiniBand/GPUDirect "
                "RDMA instead of TCP sockets.",
                "for p in model.parameters():\n    dist.all_reduce(p.grad)\nexport NCCL_IB_DISABLE=1",
                "model = DDP(model, device_ids=[local_rank])   # bucketed, overlapped all-reduce\n"
                "# drop NCCL_IB_DISABLE=1 so NCCL uses InfiniBand",
            ),
            "unbucketed_allreduce": (
                "Let DDP bucket gradients and overlap their all-reduce with backward, instead of all-reducing "
                "one parameter at a time after it.",
                "loss.backward()\nfor p in model.parameters():\n    dist.all_reduce(p.grad)",
                "model = DDP(model, device_ids=[local_rank])   # bucketed, overlapped all-reduce\n"
                "loss.backward()                               # gradients are exchanged during backward",
            ),
            "nccl_over_sockets": (
                "Let NCCL use InfiniBand/GPUDirect RDMA instead of TCP sockets (ask the cluster's admins which "
                "interfaces the nodes have).",
                "NCCL INFO NET/Socket : Using [0]eth0   # in the log: NCCL sends over TCP\n"
                "# because of export NCCL_IB_DISABLE=1 (or P2P_DISABLE), or no InfiniBand device NCCL can see",
                "# no NCCL_IB_DISABLE / NCCL_P2P_DISABLE; NCCL_DEBUG=INFO then shows\n"
                "# NCCL INFO NET/IB : Using [0]mlx5_0:1/IB",
            ),
            "synchronisation_dips": (
                "Exchange gradients less often or with more overlap: accumulate gradients over several micro-batches "
                "(`no_sync`), give DDP larger buckets, fill a node's GPUs before adding nodes; check with "
                "`NCCL_DEBUG=INFO` that NCCL uses InfiniBand (NET/IB), not sockets.",
                "for batch in loader:\n    loss = model(batch).loss\n    loss.backward()   # all-reduce every step\n"
                "    opt.step(); opt.zero_grad()",
                "model = DDP(model, device_ids=[local_rank], bucket_cap_mb=100)\n"
                "for i, batch in enumerate(loader):\n"
                "    sync = (i + 1) % accum_steps == 0\n"
                "    with nullcontext() if sync else model.no_sync():   # all-reduce on sync steps only\n"
                "        (model(batch).loss / accum_steps).backward()\n"
                "    if sync:\n        opt.step(); opt.zero_grad()",
            ),
            "default": (
                "Let DDP bucket and overlap gradient all-reduce with backward; use InfiniBand/GPUDirect RDMA "
                "(not TCP sockets); fill a node's GPUs before adding nodes; accumulate gradients.",
                "for p in model.parameters():\n    dist.all_reduce(p.grad)\nexport NCCL_IB_DISABLE=1",
                "model = DDP(model, device_ids=[local_rank])   # bucketed, overlapped all-reduce\n"
                "# drop NCCL_IB_DISABLE=1 so NCCL uses InfiniBand",
            ),
        },
        "effect": "Exchange time overlaps with compute instead of adding to every step.",
    },
    Category.DATA_PREPROCESSING: {
        "what": "CPU-side loading, decoding and augmentation cannot keep up with the GPUs.",
        "why": "The loading processes cannot prepare batches as fast as the GPUs use them (CPU-bound decoding and "
        "augmentation, or too few worker processes to spread them over); each step waits for its batch.",
        "fixes": {
            "default": (
                "Give the loader enough workers for the CPUs the job has, prefetch, keep workers alive; move "
                "heavy augmentation to the GPU (NVIDIA DALI) or preprocess once offline.",
                "DataLoader(ds, batch_size=bs, num_workers={num_workers})",
                "DataLoader(ds, batch_size=bs, num_workers={suggested_workers}, prefetch_factor=4,\n"
                "           persistent_workers=True, pin_memory=True)\n"
                "#SBATCH --cpus-per-task={suggested_cpus}",
            )
        },
        "effect": "The GPU stops waiting for batches; the step time falls to the compute time.",
    },
    Category.REMOTE_DATA_READING: {
        "what": "Training reads its data straight from remote or distributed storage.",
        # A job's own: _remote_why, from what its finding found (samples fetched one by one, shards streamed).
        "why": "Every shard or sample fetched over the network stalls the loader, and the GPUs with it.",
        "fixes": {
            "default": (
                "Stage the data to local SSD first (or cache it), pack small files into large shards "
                "(WebDataset, LMDB, TFRecord), keep storage and compute in one region.",
                "--data s3://bucket/dataset",
                "aws s3 sync s3://bucket/dataset /local_ssd/dataset   # once, before training\n"
                "--data /local_ssd/dataset",
            ),
            # Chosen by the finding's numbers["read_clients"]: a Dataset that fetches each sample through a client.
            "fetched_per_sample": (
                "Stage the data on local SSD once before training and read the local copy per sample; or pack small "
                "objects into large shards (WebDataset, LMDB, TFRecord) that loader workers read sequentially; keep "
                "storage and compute in one region.",
                "def __getitem__(self, index):   # every sample fetched over the network\n"
                "    body = {fetch}\n"
                "    return decode(body)",
                "# once, before training: {stage}\n"
                "def __getitem__(self, index):\n"
                '    with open({local}, "rb") as handle:\n'
                "        body = handle.read()\n"
                "    return decode(body)",
            ),
            # Chosen by the finding's numbers["read_clients"] naming datasets: load_dataset(..., streaming=True).
            "streamed_dataset": (
                "Download the dataset to local SSD once before training (or point HF_DATASETS_CACHE at local SSD "
                "and load it without streaming) and read the local copy; keep storage and compute in one region.",
                "ds = {dataset_stream}",
                "# once, before training: {dataset_stage}\nds = {dataset_local}",
            ),
        },
        "effect": "The read stalls disappear once the data is local.",
    },
    Category.EXTERNAL_DATA_USAGE: {
        "what": "Models or data are fetched from outside at run time (model hub, web) while GPUs wait.",
        "why": "Nothing can run on the GPU until the download finishes.",
        "fixes": {
            "default": (
                "Pre-stage into a shared local cache or mirror and load from there; pin versions.",
                'model = AutoModel.from_pretrained("org/model")',
                'model = AutoModel.from_pretrained("/shared/models/org-model", local_files_only=True)\n'
                "# fill the cache once: huggingface-cli download org/model --local-dir /shared/models/org-model",
            )
        },
        "effect": "The download phase is recovered on every run after the first.",
    },
    Category.INTERMEDIATE_UPLOAD: {
        "what": "Intermediate results are uploaded synchronously inside the training loop.",
        "why": "The loop waits for each upload to finish before the next step.",
        "fixes": {
            # By what the rule found uploading: the CLI (the default), MLflow, an object-store SDK (boto3 ...).
            "default": (
                "Upload in a background thread or at the end of the run.",
                "subprocess.run(['aws', 's3', 'cp', '--recursive', local, remote], check=True)",
                "uploader.submit(subprocess.run, ['aws', 's3', 'cp', '--recursive', local, remote])  "
                "# ThreadPoolExecutor(1)",
            ),
            "mlflow": (
                "Log the artifacts from a background thread, or once at the end of the run; pass the run's id "
                "(MlflowClient): in recent MLflow the fluent API's active run is per thread.",
                "mlflow.log_artifacts(local, artifact_path=name)",
                "client, run_id = mlflow.MlflowClient(), mlflow.active_run().info.run_id\n"
                "uploader.submit(client.log_artifacts, run_id, local, name)  # ThreadPoolExecutor(1)",
            ),
            "sdk": (
                "Upload in a background thread (a boto3 client may be shared between threads) or at the end of the "
                "run; write each upload's files to a new path so the next step cannot overwrite them mid-upload.",
                "client.upload_file(path, bucket, key)",
                "uploader.submit(client.upload_file, path, bucket, key)  # ThreadPoolExecutor(1)",
            ),
            # wandb.save: W&B's own process uploads in the background already, so moving it to a thread gains
            # nothing; the loop waits on what it does around it.
            "wandb": (
                "Nothing to move to a thread: wandb.save links the files into the run's directory and W&B's own "
                "process uploads them. Find what the loop waits for at these lines: most often writing the file "
                "to shared storage first (write it to local disk, or asynchronously), else a wait for W&B inside "
                "the loop (`artifact.wait()`, `wandb.finish()`).",
                "torch.save(state, '/shared/ckpt/last.pt')\nwandb.save('/shared/ckpt/last.pt')",
                "torch.save(state, '/local_ssd/ckpt/last.pt')   # a short local write\n"
                "wandb.save('/local_ssd/ckpt/last.pt')  # W&B's process uploads it, again when it changes",
            ),
        },
        "effect": "The upload gaps are recovered in full.",
    },
    Category.API_MISUSE: {
        "what": "A framework or platform API is used in a way that stalls the GPU.",
        "why": "`.item()`, `.cpu()` and `torch.cuda.synchronize()` in the step loop make the CPU wait for the GPU "
        "every step, so the next step's kernels are queued late; a misplaced `CUDA_VISIBLE_DEVICES` hides GPUs.",
        "fixes": {
            "cuda_visible_devices": (
                "Set `CUDA_VISIBLE_DEVICES` before the framework starts (in the job script), or not at all.",
                'import torch\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"',
                "export CUDA_VISIBLE_DEVICES=0   # in the job script, before python starts",
            ),
            "default": (
                "Keep metrics on the GPU and read them every N steps.",
                "running_loss += loss.item()\ntorch.cuda.synchronize()",
                "running_loss += loss.detach()        # stays on the GPU\n"
                "if step % 100 == 0:\n    log(running_loss.item() / 100)",
            ),
        },
        "effect": "The per-step host/device synchronisation goes away.",
    },
    Category.LENGTHY_LIBRARY_INSTALL: {
        "what": "Dependencies are installed inside the job while the GPUs wait.",
        "why": "No training can start until pip/conda/apt finish; large wheels and source builds take minutes.",
        "fixes": {
            "default": (
                "Build the environment once: a prebuilt container image or a shared conda env, cached wheels.",
                "pip install -r requirements.txt\npip install flash-attn --no-build-isolation\npython train.py",
                "# once: build an image (or env) with the requirements baked in\n"
                "srun --container-image=registry/team/train:2024-06 python train.py",
            )
        },
        "effect": "The install phase is recovered on every run.",
    },
}


# How a fix's sub-cause is named in its heading, where its key is not plain words: an identifier a user
# searches for or pastes stays as code (backticked, as the guidance writes code), a product as it is spelled.
# Any other key is written in words ("unbucketed_allreduce_over_sockets" -> "Unbucketed allreduce over sockets").
SUB_CAUSE_NAMES = {
    "cuda_visible_devices": "`CUDA_VISIBLE_DEVICES`",
    "dataparallel": "`DataParallel`",
    "nccl_over_sockets": "NCCL over sockets",
    "zero_offload": "ZeRO offload",
    "mlflow": "MLflow",
    "wandb": "W&B",
    "sdk": "SDK",
    "srun_tasks": "`srun` tasks",
    "srun_bound_tasks": "`srun` tasks, each bound to its GPU",
}

# A category's own page has no job to fill its snippets in; they are filled in for this one.
EXAMPLE_JOB = {"gpu_count": 8, "node_count": 1, "cpu_count": 64}
EXAMPLE_NUMBERS = {"num_workers": 2, "batch_size": 32, "peak_gpu_mem_pct": 20.0, "idle_gpus": 7}
EXAMPLE_TEXT = (
    "8 GPUs and 64 CPUs on one node, 2 loader workers, a batch of 32 that fills 20 % of GPU memory, 7 GPUs left unused"
)


def headline_change(category: Category) -> str:
    """The change a category's guide names first (its default sub-cause's): one or two sentences."""
    fixes = GUIDES.get(category, {}).get("fixes", {})
    change = fixes.get("default") or next(iter(fixes.values()), None)
    return change[0] if change else ""


def category_guide(category: Category) -> dict:
    """The category's guide with its before/after snippets filled in for `EXAMPLE_JOB`, and, under
    "example", what that job is when a snippet depended on it (else "")."""
    guide = GUIDES.get(category)
    if not guide:
        return {}

    def filled_in(numbers: dict, job: dict) -> dict:
        values = _job_values(category, numbers, job)
        values.pop("settings", None)
        return {
            sub: (change, _fill(before, values), _fill(after, values))
            for sub, (change, before, after) in guide["fixes"].items()
        }

    fixes = filled_in(EXAMPLE_NUMBERS, EXAMPLE_JOB)
    # The example job is named only where a snippet depends on it (not on values the same for every job).
    filled = fixes != filled_in({}, {})
    return {**guide, "fixes": fixes, "example": EXAMPLE_TEXT if filled else ""}


def guidance_for(
    category: Category,
    sub_cause: str,
    numbers: dict,
    *,
    gpu_hours: float,
    price_per_gpu_hour: Decimal | None,
    currency: str,
    job: dict,
) -> dict:
    """Guidance for one finding with the job's numbers filled in."""
    guide = GUIDES[category]
    fix = sub_cause
    memory_full = sub_cause != "zero_offload"  # offload's stalls are fixed by not offloading, whatever the precision
    if category == Category.GPU_MEMORY_BOUND and memory_full and numbers.get("precision") in ("fp32", "mixed"):
        fix = numbers["precision"]  # the job's code says whether mixed precision is the first fix or done
    if category == Category.GPU_OVERSUBSCRIPTION and numbers.get("srun_tasks"):
        fix = "srun_tasks"  # srun starts the processes (`srun -n 8 python train.py`): each needs its own GPU
        if numbers.get("gpu_binding"):
            fix = "srun_bound_tasks"  # ... which Slurm gave it (`--gpus-per-task=1`): each task's cuda:0
    if category == Category.REMOTE_DATA_READING and _client_read(numbers) is not None:
        fix = "fetched_per_sample"  # the job fetches each sample through a client: show that read made local
    elif category == Category.REMOTE_DATA_READING and "datasets" in (numbers.get("read_clients") or ()):
        fix = "streamed_dataset"  # a Hugging Face dataset streamed as training reads it: show it staged
    change, before, after = guide["fixes"].get(fix) or guide["fixes"]["default"]
    values = _job_values(category, numbers, job, sub_cause)
    # The finding's own cost (triage.services prices it by the same function, hours and price), so
    # "Recoverable for this job" and the finding's cost are one amount on every page and in the API.
    cost = cost_of(gpu_hours, price_per_gpu_hour)
    settings_text = values.pop("settings", "")
    why = guide["why"]
    if category == Category.DATA_PREPROCESSING:
        why = _loader_why(numbers, job)
    elif category == Category.REMOTE_DATA_READING:
        why = _remote_why(numbers, why)
    return {
        "title": category.label,
        "what": guide["what"],
        "why": why,
        "change": change + (f" {settings_text}" if settings_text else ""),
        "before": _fill(before, values),
        "after": _fill(after, values),
        "expected_effect": guide["effect"],
        "paper": PAPER_SMALL_CHANGE,
        # To 3 places, half up, as the API gives the job's recoverable GPU-hours (the API serves it from the finding's
        # `gpu_hours` by the same function, also for a finding stored with the 2 places revision 10 wrote).
        "recoverable_gpu_hours": hours_to_thousandth(gpu_hours),
        "recoverable_cost": str(cost) if cost is not None else None,
        "currency": currency if cost is not None else "",
        "settings": values,
    }


def _fill(template: str, values: dict) -> str:
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError):
        return template


def loader_settings(numbers: dict, job: dict) -> dict:
    """Concrete DataLoader settings from the job's own CPUs, GPUs and workers.

    One process per GPU shares the node's CPUs (N per GPU where srun starts them with --ntasks-per-gpu=N:
    `tasks_per_gpu`); keep one core per process for the training loop itself, give the rest to loader workers (at
    most 16 per process: beyond that returns shrink).
    """
    cpus = numbers.get("cpu_count") or job.get("cpu_count")
    gpus = max(1, int(numbers.get("gpu_count") or job.get("gpu_count") or 1))
    nodes = max(1, int(numbers.get("node_count") or job.get("node_count") or 1))
    per_gpu = max(1, int(numbers.get("tasks_per_gpu") or 1))
    processes = gpus * per_gpu
    current = numbers.get("num_workers")
    per_process_cpus = max(1, (cpus or gpus * 8) // processes)
    suggested = max(1, min(16, per_process_cpus - 1))
    suggested_max = numbers.get("suggested_max_workers")
    if suggested_max:
        suggested = max(1, min(suggested, int(suggested_max) // max(1, processes // nodes) - 1 or 1))
    # --cpus-per-task is per Slurm task: the node's CPUs with one task per node, a GPU's share with one task per GPU
    # (--ntasks-per-node=G, the usual layout without torchrun), half of it with two (--ntasks-per-gpu=2). The job's
    # layout when its scripts give it.
    gpus_per_node = max(1, gpus // nodes)
    tasks = numbers.get("tasks_per_node") or (gpus_per_node * per_gpu if per_gpu > 1 else None)
    task_gpus = max(1, gpus_per_node // tasks) if tasks else gpus_per_node
    suggested_cpus = (cpus or 0) // nodes // (tasks or 1)
    # If even that is few (a thin CPU request), ask for more CPUs: 8 per GPU is a common sizing.
    if per_process_cpus < 6:
        suggested_cpus = 8 * task_gpus
        suggested = 7
    suggested_cpus = suggested_cpus or 8 * task_gpus
    # The settings a submitter types, in backticks as the guidance writes code: the pages show them as code.
    if per_gpu > 1:
        layout = f" with `--ntasks-per-gpu={per_gpu}`, {suggested_cpus * tasks} CPUs a node"
    elif tasks:
        layout = f" with `--ntasks-per-node={tasks}`, {suggested_cpus * tasks} CPUs a node" if tasks > 1 else ""
    elif gpus_per_node > 1:
        a_gpu = f"`--ntasks-per-node={gpus_per_node}`"  # one task a GPU
        layout = f" for one task a node; with one task a GPU ({a_gpu}), `--cpus-per-task=8`"
    else:
        layout = ""
    return {
        "num_workers": current if current is not None else "default (0)",
        "suggested_workers": suggested,
        "suggested_cpus": suggested_cpus,
        "cpu_util": numbers.get("cpu_util_training"),
        "settings": (
            f"For this job: {_cpu_share(cpus, gpus, per_gpu, per_process_cpus)}; use `num_workers={suggested}`"
            + (f" (now {current})" if current is not None else "")
            # More workers than the job has CPUs need the CPUs asked for too, whether or not their load is known.
            + (f" and request `--cpus-per-task={suggested_cpus}`{layout}" if per_process_cpus < 6 else "")
            + (
                f" (the CPUs ran at {share_text(numbers['cpu_util_training'] / 100)})"  # whole percent, as its why
                if per_process_cpus < 6 and numbers.get("cpu_util_training") is not None
                else ""
            )
            + "."
            + (
                f" Its batches come from remote storage ({numbers['remote_reads']}): workers overlap those reads with "
                "the steps; staging the data on local disk (Remote data reading) removes them."
                if numbers.get("remote_reads")
                else ""
            )
        ),
    }


def _cpu_share(cpus: int | None, gpus: int, per_gpu: int, per_process_cpus: int) -> str:
    """The CPUs a loader-bound job's training processes each have, its counts agreeing with their nouns ("8 CPUs for
    1 GPU give 8 per training process", "1 CPU for 1 GPU gives 1 ..."); a job whose CPU count its source did not give
    is said to have none known, and the 8 CPUs a GPU the advice then assumes is named (it read "? CPUs for 1 GPU(s)
    gives 8 per training process")."""
    shared = f"{per_gpu} training processes a GPU" if per_gpu > 1 else ""
    if not cpus:
        return (
            "its CPU count is not known; at 8 CPUs a GPU, a common sizing, "
            + (f"with {shared} (`--ntasks-per-gpu={per_gpu}`), " if shared else "")
            + f"that is {per_process_cpus} per training process"
        )
    return (
        f"{plural(cpus, 'CPU')} for {plural(gpus, 'GPU')}"
        + (f" ({shared}, `--ntasks-per-gpu={per_gpu}`)" if shared else "")
        + f" {'gives' if cpus == 1 else 'give'} {per_process_cpus} per training process"
    )


def _loader_why(numbers: dict, job: dict) -> str:
    """Why a loader-bound job's GPUs wait, saying only what was measured or seen: the CPU metric when it showed the
    allocation or the loading processes' cores busy; without one, the worker count, a worker warning (named by what
    printed it) or a profiler trace that the finding rests on."""
    cpu, cpus = numbers.get("cpu_util_training"), numbers.get("cpu_count") or job.get("cpu_count")
    busy = numbers.get("cpu_busy")
    if cpu is not None and busy == "allocation":
        return (
            f"The CPUs ran at {cpu:.0f} % of the job's allocation ({cpus or '?'} cores) during training: loading, "
            "decoding and augmenting the batches took all of them, and each step waits for its batch."
        )
    if cpu is not None and busy == "loading_cores":
        processes = numbers.get("loading_processes") or 1
        plural = "es" if processes > 1 else ""
        cores = numbers.get("busy_cores")  # to a tenth, written as the summary writes it: "8", not "8.0"
        return (
            f"The CPUs ran at {cpu:.0f} % of the job's allocation ({cpus or '?'} cores), about "
            f"{'?' if cores is None else f'{cores:g}'} cores busy: all that the {processes} loading "
            f"process{plural} can use, so the other cores idle while each step waits for its batch."
        )
    seen = []
    workers = numbers.get("num_workers")
    if workers == 0:
        seen.append("`num_workers=0` (the training process loads every batch itself, between its steps)")
    elif workers is not None:
        seen.append(f"`num_workers={workers}`")  # a setting, as code, as the summary and the fix write it
    seen.extend(numbers.get("worker_warnings") or [])
    if numbers.get("host_wait_share") is not None:
        wait = share_text(numbers["host_wait_share"])  # as the rule's summary writes it
        seen.append(f"the profiler shows the GPU waiting on the host {wait} of idle time")
    if cpu is not None:  # measured, but neither the allocation nor the loading cores busy (a warning or a trace)
        measured = f"The CPUs ran at {cpu:.0f} % of the job's allocation, not saturated; "
    else:
        measured = "No CPU metric was recorded for this job, so how busy its CPUs were is not known; "
    waits = "Each step waits for its batch while the loading prepares it. "
    if numbers.get("remote_reads"):  # contributing to remote_data_reading: the loading waits on the reads
        where = numbers["remote_reads"]
        waits = f"Each step waits for its batch while the loading reads it from remote storage ({where}). "
    return (
        waits
        + measured
        + ("what was seen: " + "; ".join(seen) + "." if seen else "the finding rests on the loader's settings.")
    )


_KEYS = 'f"/local_ssd/data/{self.keys[index]}"'
# A per-sample read by client, as the fix's snippets show it: (the fetch, staging once before training, the local path).
_CLIENT_READS = {
    "boto3": ('s3.get_object(Bucket=bucket, Key=self.keys[index])["Body"].read()',
              "aws s3 sync s3://bucket/prefix /local_ssd/data", _KEYS),
    "minio": ("client.get_object(bucket, self.keys[index]).read()",
              "mc mirror store/bucket/prefix /local_ssd/data", _KEYS),
    "google-cloud-storage": ("bucket.blob(self.keys[index]).download_as_bytes()",
                             "gcloud storage rsync -r gs://bucket/prefix /local_ssd/data", _KEYS),
    "azure-storage-blob": ("container.download_blob(self.keys[index]).readall()",
                           'azcopy copy "https://account.blob.core.windows.net/container/prefix" /local_ssd/data '
                           "--recursive", _KEYS),
    "fs": ('fs.open(f"{self.root}/{self.keys[index]}", "rb").read()',
           'fs.get(root, "/local_ssd/data", recursive=True)', _KEYS),
    "http": ("requests.get(self.urls[index], timeout=30).content",
             "wget -q -i urls.txt -P /local_ssd/data   # or a parallel download",
             'f"/local_ssd/data/{os.path.basename(self.urls[index])}"'),
}  # fmt: skip
# A Hugging Face dataset streamed, from the Hub or from data files in a bucket: (the stream, staging it once before
# training, loading the local copy).
_DATASET_STREAMS = {
    "hub": ('load_dataset("org/dataset", split="train", streaming=True)',
            "huggingface-cli download org/dataset --repo-type dataset --local-dir /local_ssd/dataset",
            'load_dataset("/local_ssd/dataset", split="train", streaming=True)'),
    "bucket": ('load_dataset("parquet", data_files="s3://bucket/prefix/*.parquet", streaming=True)',
               "aws s3 sync s3://bucket/prefix /local_ssd/data",
               'load_dataset("parquet", data_files="/local_ssd/data/*.parquet", streaming=True)'),
}  # fmt: skip
_FS_CLIENTS = {"s3fs": "fs", "gcsfs": "fs", "adlfs": "fs", "fsspec": "fs", "pyarrow": "fs", "smart_open": "fs"}
_HTTP_CLIENTS = {"requests": "http", "httpx": "http", "urllib": "http", "urllib3": "http"}


def _remote_why(numbers: dict, general: str) -> str:
    """Why a remote-reading job's GPUs wait, from what its finding found: samples fetched one by one through a client
    (boto3 get_object in __getitem__ ...), shards streamed (WebDataset, torchdata), and the stalls located in the run;
    the general sentence for a job known by a remote URL only."""
    clients = numbers.get("read_clients") or []
    per_sample = [client for client in clients if read_kind(client) == "samples"]
    shards = [client for client in clients if read_kind(client) == "shards"]
    if per_sample:
        why = (
            f"Each sample is fetched over the network on its own as training asks for it ({', '.join(per_sample)}): "
            "a round trip a sample, so every fetch stalls the loading, and the GPUs with it"
        )
        if shards:
            why += f"; its shards are streamed over the network too ({', '.join(shards)})"
    elif shards:
        why = (
            f"The loader streams its shards over the network ({', '.join(shards)}): every shard fetched stalls the "
            "loading, and the GPUs with it"
        )
    else:
        return general
    if numbers.get("stalls") and numbers.get("stall_minutes") is not None:
        times = "once" if numbers["stalls"] == 1 else f"{numbers['stalls']} times"
        why += f": they stalled {times} ({numbers['stall_minutes']:.0f} min) in this job"
    return why + "."


def _client_read(numbers: dict) -> tuple[str, str, str] | None:
    """The snippet parts for the first client that fetches samples one by one (not a shard stream); None if none."""
    for client in numbers.get("read_clients") or ():
        key = _FS_CLIENTS.get(client) or _HTTP_CLIENTS.get(client) or client
        if read_kind(client) == "samples" and key in _CLIENT_READS:
            return _CLIENT_READS[key]
    return None


def _job_values(category: Category, numbers: dict, job: dict, sub_cause: str = "") -> dict:
    if category == Category.DATA_PREPROCESSING:
        return loader_settings(numbers, job)
    if category == Category.REMOTE_DATA_READING:
        fetch, stage, local = _client_read(numbers) or _CLIENT_READS["boto3"]
        stream, staged, loaded = _DATASET_STREAMS["bucket" if sub_cause == "object_store" else "hub"]
        return {
            "fetch": fetch, "stage": stage, "local": local,
            "dataset_stream": stream, "dataset_stage": staged, "dataset_local": loaded,
        }  # fmt: skip
    if category == Category.IMPROPER_BATCH_SIZE:
        size = numbers.get("batch_size")
        peak = numbers.get("peak_gpu_mem_pct")
        factor = 4 if peak is None or peak <= 0 else max(2, min(8, int(75 // max(peak, 1))))
        return {
            "batch_size": size if size is not None else "B",
            "suggested_batch": size * factor if isinstance(size, int) else f"{factor}*B",
            "batch_factor": factor,
            "settings": (
                f"For this job: peak GPU memory {share_text(peak / 100)} leaves room for up to about "
                f"{factor}x the batch"
                + (f" ({size} -> {size * factor} per GPU)" if isinstance(size, int) else "")
                + "; weights, gradients and optimizer state do not grow with it, so raise it in steps and watch "
                "the peak."
                + (
                    f" That room is measured while ZeRO offloads {numbers['zero_offload']}: ending the offload "
                    "takes part of it back."
                    if numbers.get("zero_offload")
                    else ""
                )
            )
            if peak is not None
            else "",
        }
    if category == Category.GPU_MEMORY_BOUND and sub_cause == "zero_offload":
        return {"settings": _offload_settings(numbers, job)}
    if category == Category.GPU_MEMORY_BOUND:
        values = _precision_values(numbers)
        if numbers.get("zero_stage"):
            zero = f" It already shards with DeepSpeed ZeRO stage {numbers['zero_stage']} ({numbers['zero_set_by']})"
            zero += f" and offloads {numbers['zero_offload']}" if numbers.get("zero_offload") else ""
            zero += (
                ": look to activation checkpointing and accumulation first."
                if numbers["zero_stage"] >= 3
                else "; stage 3 shards the parameters too."
            )
            values["settings"] = (values.get("settings") or "For this job:") + zero
        return values
    if category == Category.DATA_EXCHANGE:
        gpus, nodes = int(job.get("gpu_count") or 1), int(job.get("node_count") or 1)
        return {"gpus_per_node": max(1, gpus // nodes)}
    if category == Category.GPU_OVERSUBSCRIPTION:
        return _oversubscription_values(numbers, job)
    if category == Category.INTERACTIVE_JOB:
        return {"gpu_count": max(1, int(job.get("gpu_count") or 1))}  # the session's own request, in its snippet
    return {}


def _offload_settings(numbers: dict, job: dict) -> str:
    """What a ZeRO-offload job's guidance says of its own config, memory and GPUs."""
    stage = numbers.get("zero_stage")
    text = f"For this job: ZeRO stage {stage} ({numbers.get('zero_set_by')}) offloads {numbers.get('zero_offload')}"
    peak = numbers.get("peak_gpu_mem_pct")
    gpus = int(job.get("gpu_count") or 0)
    if peak is not None:
        text += f", and GPU memory peaked at {share_text(peak / 100)}"  # as the finding's summary
        if peak <= 50:
            text += ": there is room to keep more on the GPUs"
    text += "."
    if gpus:
        on = f"{gpus} GPU{'s' if gpus > 1 else ''}"
        text += (
            f" On its {on}, ZeRO-3 without offload holds 1/{gpus} of the states on each; if that does not fit, "
            f"more GPUs (each holds 1/N) rather than offload."
            if gpus > 1
            else f" On its {on} nothing is sharded: ZeRO-3 on several GPUs holds 1/N of the states on each, "
            "without offload."
        )
    return text


def _binding_text(numbers: dict, gpus: int) -> str:
    """The end of an oversubscribed job's "For this job" sentence: what binds its srun tasks to their GPUs, and the
    GPUs they leave bound to no task, if any (numbers' `gpu_binding`, `bound_gpus`)."""
    if not numbers.get("gpu_binding"):
        return "."
    text = f"; its tasks are bound by `{numbers['gpu_binding']}`"  # the option, as code
    held = numbers.get("bound_gpus")
    if held:
        tasks = int(numbers.get("srun_tasks") or 0)
        text += (
            f". Its {tasks} tasks hold {held} of its {gpus} GPUs: the other {gpus - held} are bound to no task, "
            f"nothing can run on them; request {held}"
        )
    return text + "."


def _precision_values(numbers: dict) -> dict:
    """What a GPU-memory-bound job's guidance says of its precision."""
    precision = numbers.get("precision")
    if precision == "fp32" and numbers.get("precision_set_by"):
        return {
            "settings": f"For this job: {numbers['precision_set_by']} keeps it in fp32; set bf16 there first "
            "(fp16 with loss scaling on GPUs without bf16, such as V100 and T4)."
        }
    if precision == "fp32":
        return {
            "settings": "For this job: none of its code, configs or launch flags sets autocast, GradScaler, "
            "bf16 or fp16 (fp32)."
        }
    if precision == "mixed" and numbers.get("precision_set_by"):
        return {"settings": f"For this job: {numbers['precision_set_by']} sets mixed precision already."}
    if precision == "mixed":
        return {"settings": "For this job: its code sets mixed precision (quoted with the evidence)."}
    if numbers.get("precision_unknown"):
        return {
            "settings": "For this job: whether it already trains in mixed precision cannot be told: "
            f"{numbers['precision_unknown']}. Check that first."
        }
    return {}


def _oversubscription_values(numbers: dict, job: dict) -> dict:
    """The job's own request, the request for the GPUs it used, and the launch that uses them all."""
    gpus = int(numbers.get("gpu_count") or job.get("gpu_count") or 1)
    nodes = max(1, int(job.get("node_count") or 1))
    per_node = max(1, gpus // nodes)
    used = max(1, gpus - int(numbers.get("idle_gpus") or 0))
    request = f"--gres=gpu:{per_node}" if nodes == 1 else f"--nodes={nodes} --gres=gpu:{per_node}"
    if nodes == 1:
        used_request = f"--gres=gpu:{used}"
    elif used <= per_node:
        used_request = f"--nodes=1 --gres=gpu:{used}"
    else:
        used_request = f"--nodes={-(-used // per_node)} --gres=gpu:{per_node}"
    launch = f"--nproc_per_node={per_node}" if nodes == 1 else f"--nnodes={nodes} --nproc_per_node={per_node}"
    return {
        "gpu_count": gpus,
        "request": request,
        "used_request": used_request,
        "launch": launch,
        "settings": f"For this job: {used} of its {gpus} GPUs worked" + _binding_text(numbers, gpus),
        "srun_tasks": int(numbers.get("srun_tasks") or gpus),
        "gpu_binding": str(numbers.get("gpu_binding") or "--gpus-per-task=1"),
    }
