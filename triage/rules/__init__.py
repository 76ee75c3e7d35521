"""Triage rules: one small pure function per category, all registered in `registry.RULES`."""

from triage.rules import data, job, library, model  # noqa: F401  (registers the rules)
from triage.rules.registry import RULES, THRESHOLDS, Finding, Status, TriageResult, default_thresholds, triage

# The revision of the rules' code, stored on every triage result (`JobTriage.rules_revision`). Bump it
# in the commit that changes what the rules conclude or say — a category found or no longer found, a
# confidence, a share of the waste, a summary's or a guidance's words, the evidence quoted — (not for a
# refactoring that changes no finding): after the upgrade, beat's sweep re-triages every job whose
# result is of an older revision (`triage.services.sweep_outdated`), so findings follow the deployed
# rules. Thresholds an operator edits are versioned apart, as rule sets.
#   0  results stored before revisions were recorded
#   1  2026-12-06: remote reads through object-store and HTTP clients (remote_read facts); a loader
#      finding names what warned and what it said
#   2  2026-12-06: a remote-reading finding's "why the GPU idles" says what was found (samples fetched one
#      by one through a client, shards streamed) and the stalls located; so does its summary's "the GPUs
#      stalled N times (M min) while ..." (it said "shards were fetched" of every job, boto3 get_object in
#      __getitem__ included): samples fetched one by one through a client, shards streamed, or, for a job
#      known by a remote URL only, data fetched over the network
#   3  2026-12-06: a Hugging Face dataset streamed (load_dataset(..., streaming=True)) is remote data
#      reading (shards streamed, the fix stages it), not the download phase's code; reads through
#      fsspec's url_to_fs and open_files are remote reads (revision 2 was released in the 2026-12-06 stop);
#      a boto3 resource's Object(...).get() made on the spot (boto3.resource("s3").Object(b, k).get()) is a
#      read, with its bucket as URL; a `.map` is a pool's (staging, once) only on a name bound to a pool or a
#      pool made there (a pool in a dict or list made tf.data's .map one); self.fs, a session, a pool and an
#      open_files list are the ones the reading class (or its base) binds, not another class's; open_files'
#      files entered in a loop over them (`for f in files: with f as h:`) are reads; a plain name (`fs`) is the one
#      its function's scope binds (a local or a parameter hides the module's, a closure sees its enclosing
#      function's), not any binding in the file; `fs: T = s3fs.S3FileSystem()` is followed; a boto3 Object bound
#      to a name and then read (`obj = s3.Object(b, k); obj.get()`) is a read; so is a file entered in a loop
#      over a slice of an open_files list (`for f in files[:10]`, `reversed(files)`)
#      also: a lambda handed as a collate_fn or a .map callback (or bound to a name handed there) runs per
#      sample (its reads were its enclosing function's, once); pyarrow.fs.FileSystem.from_uri of a remote URI
#      is a remote filesystem, and a reader handed one as filesystem= (pq.read_table, ds.dataset, ...) reads;
#      a remote filesystem handed to a class's constructor is the self.fs its __init__ binds to it
#      also: a summary's percentages are written as the app writes them, "29 %" not "29%" (an idle tail's
#      "(29 %)", "GPUs idle 45 % of the covered time", "samples cover 40 % of the run (< 50 %)", a loader's
#      copies, dips and host wait, and the guidance that quotes the host wait)
#   4  2026-12-06: remote reads (revision 3 was released): a plain name's binding is the one in effect where it is
#      read, in statement order (`fs = LocalFileSystem(); fs.open(...); fs = s3fs.S3FileSystem()` reads locally
#      first, and a remote filesystem replaced by a local one no longer makes the local reads remote); where an
#      if/else or a try leaves a local binding on one path and a remote one on another no read is claimed (which
#      one reads cannot be told; a name set to None first and made remote under an if still reads); a module's name
#      seen from a function is the one the module binds last
#      also: a function wrapped in functools.partial and bound to a name (`collate = partial(fetch_batch, bucket)`,
#      `self.collate = ...`) before it is handed as a collate_fn or a .map callback runs per sample (its reads were
#      once)
#      also: `self.fs = fs or fsspec.filesystem("s3")` (the default made when none is handed, or the one handed) is
#      followed, and so is a filesystem handed on to another class of the file (`self._store = Store(fs)` then
#      `self._store.fs.open(...)`, `store = Store(fs); store.fs.get(...)`)
#      also: a URI from the command line is followed: an argparse option's value is the one the job's launch lines
#      give the script (`python train.py --data-root s3://...`, in its shell scripts or its command), else its default
#      (a local path given there: no read, and the default is no remote_path; launches that differ or `$VAR`: none),
#      through a name, a parameter every call of its function or class in the file hands it (`Shards(args.data_root)`
#      -> `url_to_fs(root)`), `self.root = root.rstrip("/")` and an f-string starting with it
#      also: followed across the job's Python files (`from data import ShardDataset; ShardDataset(args.data_root)`
#      in train.py reaches data.py's `url_to_fs(root)`; an ambiguous import, a star import or a class handed on or
#      subclassed elsewhere: none), through any name bound to `parser.parse_args()` (`hparams.data_root`) and
#      `self.args.x` (`self.args = args`), and through `--data-root $DATA` after a plain `DATA=s3://...` in the script
#      also: a walrus (`(fs := s3fs.S3FileSystem())`, `(root := args.data_root)`) binds as an assignment does, and a
#      conditional expression either of whose branches makes a remote filesystem or holds a remote URI is that one
#      (`fs = s3fs.S3FileSystem() if remote else LocalFileSystem()`, `root = args.data_root if ... else "/local"`)
#      also: every fact reads the parsed options through whatever holds them, as the remote reads did: a DataLoader's
#      `num_workers=opts.workers` (`opts = parser.parse_args()`) or `self.hparams.workers` is the option's default, a
#      Trainer's `precision=hparams.precision` its default's precision, `bf16=self.args.bf16` a command-line flag;
#      `cfg` holds them only where bound to parse_args() (a config's `cfg.workers` took --workers' default), and a
#      precision read from `opts` bound to anything else is a variable's, not a flag's
#      also: a shell script's environment is read as the shell sets it (readonly / declare / local set it as export
#      does; a NCCL_IB_DISABLE=1 word after the program is its argument, not the environment)
#      also: a remote filesystem or session another of the job's files makes at module level and this one imports
#      (`from common import fs` or `import common; common.fs`, common.py's `fs = s3fs.S3FileSystem()`) is read through
#      also: a shell launch's launcher is the program it runs (`NCCL_DEBUG=INFO torchrun`, `srun torchrun`, `nohup
#      torchrun`, `/opt/conda/bin/torchrun` are torchrun; the first word was taken): a distributed launch for the
#      GPU-oversubscription rule (uneven use, not unused GPUs) and one loading process a GPU for the loader rules;
#      a launch under srun with options that take a value (`srun -N 2 -c 12 torchrun ...`) is a launch (it was none)
#      also: `python -m torch.distributed.launch` / `python -m torch.distributed.run` are torchrun launches (their
#      launcher was python), `python -m` of accelerate.commands.launch, deepspeed.launcher.runner and
#      horovod.runner.launch their commands'; horovodrun and mpirun are distributed launches for the rules as torchrun,
#      deepspeed and accelerate were; Accelerate's launch flags (`--mixed_precision no`, `--zero_stage 3`) are read
#      however it is run (`srun accelerate launch`, `python -m accelerate.commands.launch`: only a first word of
#      accelerate was)
#      also: an argparse option's default is argparse's: store_true False, store_false True without `default=` (they
#      were unknown: `pin_memory=args.pin_mem` of a store_true is False), and `--no-x` of a BooleanOptionalAction
#      is read from a launch line; a precision setting read from such a switch (`autocast(enabled=args.amp)`) is
#      the command line's whether or not `default=False` is written (written, it was fp32 with no launch line seen)
#      also: a conditional expression is the branch a GPU job's training run takes (`num_workers=4 if use_cuda else
#      0` is 4; it was unknown): its test through known values, else the GPU branch of a CUDA test and the non-debug
#      one of a debug switch; one value in both branches is that value; else unknown. A precision setting whose
#      test reads a switch (`bf16=True if args.bf16 else False`) is the command line's, as `bf16=args.bf16` is
#      also: a DataLoader bound by a walrus or an annotated assignment (`(loader := DataLoader(...))`, `loader:
#      DataLoader = DataLoader(...)`, `for x in (loader := ...)`) is bound to its name, so the loader a training loop
#      iterates is the training one (the assigned evaluation loader was taken for it: its num_workers=0 a finding)
#      also: a distributed launch in the job's submitted command (`torchrun --nproc_per_node 8 train.py`, no launch
#      script among its files) is one for the GPU-oversubscription and loader rules, as a script's launch line is
#      also: every fact reads an option as the job's launch lines (its scripts' and its submitted command) pass it,
#      as the remote reads did: `num_workers=args.workers` with `--workers 8` (or `--workers=8`, `-j 8`) over
#      `default=0` is 8, not a 'no workers' finding; the default where no launch passes it, unknown where launches
#      pass different values; a store_true passed is True; a precision switch of any name the launch passes
#      (`autocast(enabled=args.use_amp)`, `--use-amp`) is mixed precision (it was fp32: the rule knows only
#      --bf16/--fp16/--amp/--half on a launch line)
#      also: a launch's option is read as argparse reads it: a short option's glued value (`-j8`) and a unique prefix
#      of a long option (`--work 8` for `--workers`, unless the parser has `allow_abbrev=False`) are the option's
#      (they were not read: the default's 0 workers); a prefix of two options, which argparse refuses, is unknown
#      also: a launcher that starts one process is no distributed launch (`mpirun -np 1` / `-n 1`, `horovodrun -np 1`,
#      `torchrun --nproc_per_node=1` on one node: a multi-GPU job so launched with GPUs idle was uneven use, now unused
#      GPUs); a launch fact's `processes` is the count its options give as numbers (`--nproc_per_node=4 --nnodes=2`: 8)
#      also: a remote URI given to an option of the job's submitted command (`python train.py --data s3://...`) is a
#      remote_path fact of the job's command, quoted among the finding's code lines as a shell script's launch line is
#   5  2026-12-06: launch lines (revision 4 was released): a launcher's count where its options give none is its
#      documented default: `torchrun train.py` (--nproc-per-node defaults to 1, --nnodes to 1) starts one process, as
#      `deepspeed --num_gpus 1` (or `--num_accelerators 1`, `--include localhost:0`; no hostfile, or `--num_nodes 1`)
#      and `accelerate launch --num_processes 1` do, and `accelerate launch --cpu` trains on the CPU: none is a
#      distributed launch (a multi-GPU job so launched with GPUs idle was uneven use, now unused GPUs); `deepspeed`
#      without a count (every GPU), `accelerate launch` without one (its config file's), `--multi_gpu
#      --num_processes 1`, torchrun's `PET_NPROC_PER_NODE` / `PET_NNODES` and a launcher's options the line does not
#      show (`torchrun $DIST_ARGS train.py`; `mpirun -np 1 $MPI_FLAGS ...`, one process before) leave the count
#      unknown and the launch distributed; under srun the launcher runs once a task: `srun -n 8 torchrun train.py` is
#      eight processes, a bare srun takes the batch script's #SBATCH task layout (as a python under srun does, below),
#      and srun with neither leaves the count unknown
#      also: grouped short options on a launch line are read as argparse reads them: `-vj8` (-v a switch) is -v and
#      `-j 8` (it was -v with 'j8': --workers kept its default, a 'no workers' finding for a job launched with eight),
#      `-pv` turns on -p and -v
#      also: a launch that passes options through unseen (`python train.py "$@"`, `$*`, `$2`, `$EXTRA_ARGS`, `${ARGS}`,
#      `"${@:2}"` after the script) makes every option of the script unknown where the line does not set it after them
#      (`--workers 8 "$@"`: unknown, argparse taking the last; `"$@" --workers 8`: 8; a store_true turned on stays on),
#      so no finding rests on a default the submitter may have overridden (`num_workers=args.workers` over `default=0`
#      was a 'no workers' finding, an s3:// default a remote_path); a variable that is an option's value (`--workers
#      $N`) or fills a positional argument (`train.py $CONFIG`) passes none
#      also: a remote URI another of the job's files binds at module level and this one imports (`from common import
#      DATA_URI` or `import common; common.DATA_URI`, common.py's `DATA_URI = "s3://..."`) is followed by the remote
#      reads, as an imported filesystem or session is (`fsspec.open(f"{DATA_URI}/{key}")` in __getitem__ was no read)
#      also: a python that srun starts in several tasks is a distributed launch, one process a task (Lightning's
#      SLURMEnvironment, torch.distributed from SLURM_PROCID / SLURM_LOCALID, Horovod under `srun --mpi=pmix`):
#      `srun -n 8 python train.py`, `--ntasks-per-node=8` (one node where none is given), `-N 2` (a task a node), or a
#      bare `srun python train.py` under the batch script's `#SBATCH --ntasks` / `--nodes` x `--ntasks-per-node` (read
#      up to its first command, as sbatch reads them, and quoted with the srun line: `sbatch_lines`, `slurm_layout`
#      facts that now carry `ntasks` / `nodes` too); its `processes` is the task count. An 8-GPU job so launched
#      with seven GPUs idle was unused GPUs (its launcher "python"), now uneven use, and its fix is a GPU a task from
#      SLURM_LOCALID (numbers' `srun_tasks`), not a torchrun line that would start a torchrun in each task; the loader
#      rules count a process a GPU for it. One task (`-n 1`), no count given (Slurm's default, one), or options not
#      shown (`srun $SRUN_ARGS`, `-n $N`) keep a plain python, one process
#   6  2026-12-06: Slurm and launcher options (revision 5 was released): srun tasks that Slurm binds each to GPUs
#      of their own (`--gpus-per-task=1`, implying
#      `--gpu-bind=per_task:1`; `--gpu-bind=single:1`, `closest`, `map_gpu:...`; srun's or the allocation's, not
#      `--gpu-bind=none`) each see their GPU as cuda:0: such a job with GPUs idle stays uneven use, but its fix is no
#      longer a GPU a task from SLURM_LOCALID (which names a GPU the task cannot see) but the default device kept and
#      the tasks that did no work found (`srun_bound_tasks`; numbers' `gpu_binding`), its confidence is no longer the
#      pinned device's 0.95 and a `cuda:0` pinned in the code is no longer quoted; a bare srun takes its task layout
#      and binding from a `salloc` line too (a new allocation for the lines after it, or for the command it runs) and
#      from the job's sbatch command line (`sbatch -n 8 train.sh`, over the script's #SBATCH lines; `sbatch $ARGS`
#      leaves it unknown; the job's `sbatch -n 8 --wrap="srun python train.py"` is read as its wrapped command, which
#      was no launch at all); such tasks that hold fewer GPUs than the job has (`srun -n 2 --gpus-per-task=1` of 8 GPUs)
#      leave the rest bound to no task, which the fix names (numbers' `bound_gpus`: request only those held)
#      also: a Slurm job's step task counts (its `steps` label, from sacct's steps[].tasks.count) are the processes of
#      the srun pythons that ran in them (`step`), over the scripts' count: a bare `srun python train.py` with no
#      #SBATCH layout (one process, unused GPUs) run in a step of 8 tasks is eight processes, uneven use
#      also: a launcher's options are read as its argparse parser reads them (Python 3.11): the last value of an option
#      given twice wins (`torchrun --nproc_per_node 1 --nproc_per_node 8` was one process, unused GPUs; now eight,
#      uneven use), in either spelling (`--num_gpus 8 --num_accelerators 1`: one); a unique prefix is the option for
#      torchrun and deepspeed (`--nproc_per 8` was torchrun's default, one; `--num_g 1` was every GPU); a prefix of two
#      option strings (`torchrun --nproc 8`, which Python 3.11's argparse refuses, was one process) and any prefix on
#      `accelerate launch` (refused since Accelerate 0.29) leave the count unknown, the launch distributed; so does
#      `mpirun -np 1 -np 8`; Accelerate's ZeRO flags are read the same way (`--zero_stage 2 --zero_stage 3`: 3)
#      also: `accelerate launch` takes its count from the Accelerate config file the job brought (`--config_file`'s,
#      else ~/.cache/huggingface/accelerate/default_config.yaml): its `num_processes` where the line gives none, one
#      process where its `distributed_type` is NO and the line asks for no distributed launch (it was not known, a
#      distributed launch: an 8-GPU job so launched with seven GPUs idle was uneven use, now unused GPUs; and
#      `--num_processes 8` under such a config, eight, is one); a distributed launch so counted quotes the config's
#      settings (`launch_config` facts) beside its launch line
#      also: a launcher srun runs in a Slurm step (`srun torchrun`, `srun deepspeed`, `srun accelerate launch`) starts
#      its own count in each of the step's tasks: the step's task count times the launcher's count a node (torchrun's
#      `--nproc_per_node`, deepspeed's `--num_gpus`, accelerate's `--num_processes` / `--num_machines`) is its
#      processes, as a python's is the step's count (only a python's was read: `srun torchrun train.py` in a step of
#      one task was a distributed launch of unknown count, uneven use; now one process, unused GPUs)
#      also: `accelerate launch`'s `--mixed_precision no` is its own option only, before the script and the last
#      given: `accelerate launch train.py --mixed_precision no` (the script's option) was read as Accelerate's mixed
#      precision off (a memory-bound job told its launch keeps it in fp32), and `--mixed_precision no --mixed_precision
#      bf16` (bf16, as argparse reads it) too
#      also: srun's options from its input environment (`SLURM_NTASKS`, `SLURM_NPROCS`, `SLURM_NTASKS_PER_NODE`,
#      `SLURM_JOB_NUM_NODES`, `SLURM_GPUS_PER_TASK`, `SLURM_GPU_BIND`), as a script exports them before a bare srun
#      (`export SLURM_NTASKS=8`: eight tasks, uneven use; it was one, unused GPUs, or the #SBATCH line's count) or
#      sets them on its line, srun's own options winning; the export line is quoted with the srun line
#      also: an `accelerate launch` that salloc runs (`salloc -N 1 accelerate launch --config_file acc.yaml t.py`) takes
#      its count from its config as any other does (it was not known)
#   7  2026-12-07: Slurm launches (revision 6 was released): the job's submitted command exports srun's input
#      variables for the srun after it, as a script's line does (`export SLURM_NTASKS=8 && srun python train.py`,
#      `sbatch --wrap "export SLURM_NTASKS=8; srun ..."`: eight tasks, uneven use; it was one task, unused GPUs, or the
#      allocation's count; an allocation the command makes sets its own options' variables over those exported before
#      it; `export PET_NPROC_PER_NODE=4 && torchrun ...` leaves torchrun's count unknown, in its step too)
#      also: an Accelerate config's `num_machines` shares its processes over srun's tasks (`srun -N 2 accelerate
#      launch --config_file acc.yaml`, num_processes 8 over 2 machines: 8 processes; it was not known, a distributed
#      launch), with the tasks the allocation gives (`#SBATCH -N 2`, `export SLURM_NTASKS=2`; the launch's `srun_tasks`)
#      also: `--ntasks-per-gpu=N` (srun's, the allocation's, `SLURM_NTASKS_PER_GPU`) binds each task to a GPU as
#      `--gpu-bind=single:N` does (Slurm's srun(1)/sbatch(1): it implicitly sets --tres-bind=gres/gpu:single:N), unless
#      an explicit `--gpu-bind` or `--tres-bind=gres/gpu:...` overrides it: the fix keeps each task's default device and
#      names the GPUs bound to no task (numbers' `gpu_binding`, `bound_gpus`)
#      also: `--ntasks-per-gpu=N` with the GPUs requested (`--gpus`/`-G`, `--gpus-per-node` or `--gres=gpu:G` on
#      `--nodes`) and no `--ntasks` starts N tasks for every GPU, as srun(1)/sbatch(1) say ("specify the GPUs wanted
#      (e.g. via --gpus or --gres) without specifying --ntasks, and the total task count will be automatically
#      determined"): `#SBATCH --gres=gpu:8 --ntasks-per-gpu=1` and a bare `srun python train.py` is 8 tasks, uneven use
#      (it was one process, unused GPUs), those #SBATCH lines quoted (slurm_layout's `gpus`, `gpus_per_node`)
#      also: a script the job's command runs (`sbatch --wrap "export SLURM_NTASKS=4; bash run.sh"`, `./run.sh`,
#      `SLURM_NTASKS=4 bash run.sh`) takes srun's input variables exported before it for its srun lines, over sbatch's
#      options and its #SBATCH lines (only sbatch's own options reached it: one task, unused GPUs, or sbatch's count)
#      also: such a script is not the batch script, and its #SBATCH lines are neither its allocation nor the job's
#      layout: sbatch reads them only in the batch script it is given (sbatch(1); `--wrap` submits "the
#      sbatch-generated wrapper script"), salloc or a shell running it none (`sbatch --wrap "bash run.sh"` with
#      run.sh's `#SBATCH -n 8` and a bare srun: one task, unused GPUs; it was eight, uneven use); the script
#      `sbatch run.sh` submits, and sacct's batch_script.sh, keep theirs
#      also: `env NAME=VALUE ... srun ...` (and `env SLURM_NTASKS=4 bash run.sh` as the job's command) sets srun's
#      input variables for that command (`env`'s words were not read: the allocation's count); an option of env's
#      own (`-i`, `-u NAME`) leaves the line not read
#      also: `SLURM_GPUS` and `SLURM_GPUS_PER_NODE`, srun(1)'s input variables for `--gpus` and `--gpus-per-node`, are
#      the GPUs `--ntasks-per-gpu` counts its tasks from (`export SLURM_GPUS=8` under `#SBATCH --ntasks-per-gpu=1`:
#      8 tasks, uneven use; it was one process, unused GPUs)
#      also: an `#SBATCH` line after the batch script's first command gives no task layout (sbatch(1): sbatch "will
#      stop processing further #SBATCH directives once the first non-comment non-whitespace line has been reached";
#      a later `#SBATCH -c 32` was the job's CPUs per task, the loader rules' layout); it gave no count already
#      also: a script another of the job's scripts runs (sacct's batch_script.sh running `bash inner.sh`) is no batch
#      script: it runs in the allocation of that line (the batch script's #SBATCH lines and exports, the line's own
#      SLURM_NTASKS), and its #SBATCH lines are neither its allocation nor the job's layout (inner.sh's `#SBATCH -n 4`
#      under the batch script's `-n 8`: 8 tasks; it was 4)
#      also: `/usr/bin/env NAME=VALUE ... srun ...` is read as `env ...`; `SLURM_NNODES` is srun input for `-N`, as
#      SLURM_JOB_NUM_NODES is (srun(1): "and SLURM_NNODES for backwards compatibility")
#   8  2026-12-07: Slurm launches (revision 7 was released): a wrapper named by its path runs the command after it, as
#      by its name (`/usr/bin/time srun ...`, `/usr/bin/nohup srun ...`, `/usr/bin/stdbuf`, `/usr/bin/sudo`, and srun
#      itself, `/opt/slurm/bin/srun -n 4 python train.py`): such a line was no launch at all (an 8-task srun under
#      `/usr/bin/time` with one GPU busy was unused GPUs, now uneven use); GNU time(1)'s own options (`-v`, `-p`,
#      `-o FILE`, `-f FORMAT`, `--output=FILE`, `--`) and coreutils stdbuf(1)'s (`-oL`, `-o L`) before the command
#      are theirs (`time -v srun ...` was no launch either)
#      also: `SLURM_GRES` and `SLURM_STEP_GRES`, srun(1)'s input variables for `--gres` (SLURM_STEP_GRES only where
#      --gres and SLURM_GRES give none, as srun's source takes it), are the GPUs `--ntasks-per-gpu` counts its tasks
#      from (`export SLURM_GRES=gpu:8` under `#SBATCH --ntasks-per-gpu=1`: 8 tasks, uneven use; it was one process,
#      unused GPUs)
#      also: an indented `  #SBATCH` line is no directive: sbatch matches "#SBATCH" at the line's first column
#      (src/sbatch/opt.c, _opt_batch_script), so it is a comment, gives no task layout and ends no directives
#      (`  #SBATCH --ntasks=8` and a bare srun was eight tasks, uneven use; now one task, unused GPUs)
#      also: an `#SBATCH` line's words end at an unquoted, unescaped '#', the rest being a comment, as sbatch reads them
#      (src/sbatch/opt.c, _get_argument): `#SBATCH --ntasks=8  # was -n 4` was 4 tasks (the comment's `-n 4` taken
#      for an option), now 8
#      also: a comment line ending in '\', an `#SBATCH` directive among them, is not joined to the next line: sbatch
#      reads its script a line at a time (src/sbatch/opt.c, _next_line) and the shell ends a comment at its newline
#      (`#SBATCH -n 4 \` then `#SBATCH -n 8` was 4 tasks, the second line read as the first's comment; now 8; a
#      launch on the line after `# note \` was no launch at all); nor is any line whose '\' is in a comment, as bash
#      reads it: `srun -n 4 \`, `  # note \`, `python train.py` are two commands (bash ends the command at the comment
#      line), which were read as one srun of 4 tasks; now a plain python (`srun -n 4 # note \` alike)
#      also: sudo's own options before its command are skipped as its getopt reads them (sudo 1.9, src/parse_args.c:
#      `-u USER`, `-g`, `-C`, `-D`, `-p`, `-R`, `-T`... take a value; `-E`, `--preserve-env=LIST`, `--`), and its
#      `VAR=value` words set the command's environment (sudo(8)): `sudo -u alice srun -n 4 python train.py` and
#      `sudo -E srun ...` were no launch at all, now srun's tasks; `sudo SLURM_NTASKS=4 srun ...` is 4 tasks (and
#      `sudo env SLURM_NTASKS=4 srun ...`, env's words read as for env alone; they were not read); a sudo
#      that runs no command (`-l`, `-e`, `-v`, `-h HOST`, an option it does not know) is no launch
#      also: a plain (not exported) `SLURM_GPUS_PER_NODE=...` is srun input only where the allocation itself set that
#      variable, for `--gpus-per-node` (sbatch(1), OUTPUT ENVIRONMENT VARIABLES: "Only set if the --gpus-per-node
#      option is specified"), not for `--gres=gpu:8`, which asks the same GPUs a node: under `#SBATCH --gres=gpu:8
#      --ntasks-per-gpu=1` a bare `SLURM_GPUS_PER_NODE=4` line made srun 4 tasks; it stays 8 (a plain `SLURM_GRES=`
#      or `SLURM_STEP_GRES=` line, which no allocation sets, is none either)
#      also: a plain `SLURM_GPU_BIND=...` likewise only for `--gpu-bind` (sbatch(1): "Only set if the --gpu-bind
#      option is specified"), not for `--tres-bind=gres/gpu:X`, read as the same binding, which sets SLURM_TRES_BIND
#      (under `#SBATCH --tres-bind=gres/gpu:single:1` a bare `SLURM_GPU_BIND=closest` line replaced the binding; it
#      stays `single:1`); and a plain `SLURM_NNODES=...` or `SLURM_JOB_NUM_NODES=...` is srun input in every batch job
#      (and salloc's allocation), `-N` given or not: Slurm sets both in each (src/common/env.c, env_array_for_batch_job)
#      (under `#SBATCH --ntasks-per-node=4` a bare `SLURM_NNODES=2` line left srun 4 tasks; now 8), and an
#      allocation's own node count replaces one exported before it (`export SLURM_NNODES=2; sbatch
#      --ntasks-per-node=4 --wrap "srun ..."`: 4 tasks, it was 8)
#      also: a '#' inside a word starts no comment, in a script's line or the job's command: bash begins a comment only
#      at a word's beginning, unquoted (after a blank, `;`, `&&`, `|`, `(`, `<`, `>`), while shlex's comment reading
#      began one at any '#': `srun --comment=exp#3 -n 1 torchrun train.py` was srun without a count (uneven use), now
#      one task (unused GPUs); `python train.py --tag=exp#3 --workers 8` was the loader's default, `no_workers`;
#      `$#` and `${#arr[@]}` ended their line
#   9  2026-12-07: shell reading (revision 8 was released): a script's or the job's command's words are read as bash
#      reads them: ANSI-C quoting `$'...'` is one word, its escapes decoded (`--note $'it\'s'` made the whole line an
#      unbalanced quote, its launch not read; `$'\t'` was `$\t`), `$"..."` is its string; a backslash-newline pair
#      is removed with nothing in its place (`--nproc_per_node=\` then `1` was `--nproc_per_node=` and `1`: not
#      torchrun's one process), a '\' followed by a blank or escaped (`\\`) continues no line (`srun -n 8 \ ` then
#      `python train.py` was one srun of 8 tasks; bash runs a plain python), and in the job's command a newline ends a
#      command as `;` does (`cd /work` then `srun -n 8 python train.py`, an imported job's multi-line command, was one
#      `cd` command: no launch at all)
#      also: a job command that is a shell's -c string (`/bin/bash -c 'pip install ...\ntorchrun --nproc_per_node 8
#      train.py'`, as the Kubernetes connector joins a container's command and args) is read as the commands it runs
#      (it was bash's one command: no launch, no install)
#      also: SLURM_NNODES is no srun input (srun reads SLURM_JOB_NUM_NODES as -N since Slurm 20.02, src/srun/opt.c's
#      env_vars: `export SLURM_NNODES=2` before `srun --ntasks-per-node=4` was 8 tasks, now 4)
#      also: an allocation given --ntasks-per-node and no --ntasks (nor a node range) sets the job's task count, nodes
#      times tasks a node, as SLURM_NTASKS (src/sbatch/opt.c, _opt_verify; src/common/env.c, env_array_for_batch_job),
#      which srun takes over its own -N or --ntasks-per-node (`#SBATCH -N 2 --ntasks-per-node=8` then `srun
#      --ntasks-per-node=1 python train.py` was 2 tasks; now 16) and a plain `SLURM_NTASKS=2` changes
#      (it was the shell's own); salloc's likewise replaces a SLURM_NTASKS exported before it
#      also: a command under sudo without -E / --preserve-env (or a --preserve-env=LIST naming a SLURM_ variable) gets
#      none of the script's environment, the allocation's SLURM_* variables included (sudoers' env_reset): `sudo srun
#      python train.py` under `#SBATCH -n 8` was 8 tasks, uneven use; now srun's own options alone, one task; a
#      `SLURM_NTASKS=4` before sudo, exported PET_* variables, and a script `sudo bash run.sh` runs alike
#      also: a summary's counts agree with their nouns: "1 blocking copy to the GPU", "on 1 node", "while 1 GPU
#      waited" (they read "1 blocking copies", "node(s)", "GPU(s)")
#      also: the largest download's size and rate have a space before the unit, "(2.00 GB), took 16 min at 2.1 MB/s"
#      (they read "2.00GB", "2.1MB/s" as the progress bar printed them)
#  10  2026-12-07: shell reading (revision 9 was released): a here-document's body is data, not commands (`cat <<EOF >
#      next.sh`, `<<-EOF`, `<<'EOF'`, `sbatch <<EOF`, `python - <<EOF`: a `srun -n 4 python other.py` or `pip install`
#      line inside one was read as this job's launch or install; a batch script that writes an 8-task launch script and
#      runs one python was uneven use, now unused GPUs), ending at the line that is its delimiter alone (tabs stripped
#      for `<<-`; in an unquoted one after a backslash-newline is removed), in a script and in the job's command (a
#      `bash -c` string's); one a shell reads as its commands (`bash <<EOF`, `sh -s <<'EOF'`: no script file, no -c)
#      is read as lines of the script where it stands; under srun, sudo or ssh, or through a pipe, it stays data
#      also: env's own options are read as env(1) reads them (coreutils, src/env.c): `env -i` (`--ignore-environment`,
#      `-`) starts its command with an empty environment, its NAME=VALUE words alone set (`env -i srun -n 4 python
#      train.py`, taken for a program named `-i`, was no launch at all, now 4 tasks; `env -i SLURM_NTASKS=4 srun ...`
#      4 tasks, not the allocation's; `env -i srun python train.py` under `#SBATCH -n 8` one task, as under sudo), `-u
#      NAME` leaves NAME not known (`env -u SLURM_NTASKS srun ...`: no count, SLURM_NPROCS may give one), `-C DIR`,
#      `-0`, `-v` are skipped; `-S STRING`, `--help`, `--version` or an option env does not know leave no command read
#      also: `sudo -i` (`--login`) with `-E` / `--preserve-env` or with `-s` is sudo's usage error, no command run
#      (src/parse_args.c: "you may not specify both the -i and -E options"): `sudo -iE srun python train.py` under
#      `#SBATCH -n 8` was 8 tasks, uneven use; now no launch. `sudo -i` alone resets the environment as before
#      (sudoers(5): it is initialized "regardless of the value of env_reset"), but for a `--preserve-env=LIST`'s names
#      also: srun tasks started with `--ntasks-per-gpu=N` (srun's, the allocation's, SLURM_NTASKS_PER_GPU) are N
#      training processes a GPU for the loader rules (the launch's `tasks_per_gpu`, the finding's
#      `numbers.tasks_per_gpu`): a 4-GPU job under `#SBATCH --gres=gpu:4 --ntasks-per-gpu=2` with 8 cores busy at
#      num_workers=0 was "all that 4 training processes loading their own batches can use", now 8, and its guidance's
#      CPUs a training process are the CPUs over 8 ("32 CPUs for 4 GPUs (2 training processes a GPU, --ntasks-per-gpu=2)
#      give 4 per training process"; it said 8), a thin request told `--cpus-per-task=8 with --ntasks-per-gpu=2, 64 CPUs
#      a node`; the finding quotes the lines they come from (the `#SBATCH --ntasks-per-gpu` line a bare srun took, the
#      srun line)
#      also: a loader fix's CPU sentence agrees with its counts ("8 CPUs for 1 GPU give 8 per training process", "1 CPU
#      for 1 GPU gives 1"; it read "GPU(s)", "1 CPUs"), and for a job whose CPU count is not known it says so and names
#      the sizing it assumes ("its CPU count is not known; at 8 CPUs a GPU, a common sizing, that is 8 per training
#      process"; it read "? CPUs for 1 GPU(s) gives 8 per training process")
#      also: an unreleased-job summary's shares say what they are of: "the last 40 min of the run (36 % of its
#      length)", "then nothing for 30 min (27 % of the run)", "The last 89 min (36 % of the run) the allocation was
#      held idle" (each read a bare "(36 %)")
#      also: a finding's figures are written as the rest of its words and the pages write them, whole percent
#      (`share_text`) and no trailing ".0": a loader fix's "(the CPUs ran at 25 %)" (it read "25.0 %" beside its own
#      "The CPUs ran at 25 %"), a small batch's fix "peak GPU memory 12 %" (it read "12.1 %", its summary "12 %"), a
#      CPU job's "GPU util 0 % and GPU memory unused" (it read "0.4 %" under the page's mean utilization of 0 %), a
#      result's reason "mean GPU util 28 %" (the API's; it read "28.2 %"), a loader's "about 8 cores busy" (it read
#      "8.0"; "1.1" stays), the study's gains in a fix's expected effect "from 64 % to 91 %" (it read "64.40 % to
#      90.78 %", the cause pages' study shares whole). An idle tail's CPU share of an allocation whose size is not
#      known keeps its decimals ("CPU 0.05 % of the allocation"): it is judged against lines of 1.5 % and 2 %
#      also: a loader fix that tells a job to use more workers than it has CPUs asks for the CPUs too ("1 CPU for 1
#      GPU gives 1 per training process; use num_workers=7 (now 0) and request --cpus-per-task=8"): it did only when
#      the CPUs' load was known, and "use num_workers=7" alone would start 7 workers on one core
#      also: a finding's peak GPU memory is written in its summary from the value it stores (one decimal), as its fix
#      writes it: a peak of 12.51 % read "peak GPU memory 13 %" in a small batch's summary and "12 %" in its fix (the
#      summary rounded the measured value, the fix the stored 12.5); so too a ZeRO offload's "GPU memory peaked at"
#  11  2026-12-07: shell reading (revision 10 was released): env's `-S STRING` (`--split-string`) is read as env splits
#      it (coreutils src/env.c, build_argv: blanks, quotes, `\_`, `\t`..., a `#` that begins a word, `${NAME}` not
#      known), its words env's arguments again before the words after it: `env -S "srun -n 4 python train.py"` was no
#      launch at all (the line's command not read), now 4 tasks; `env -S "python train.py --workers 0"` passes
#      `--workers 0` to the script (its `num_workers=args.workers` kept the default); a string env refuses (`\q`, a
#      `$N`, a quote left open) runs nothing. A script whose first line runs a shell through env (`#!/usr/bin/env
#      bash`, `#!/usr/bin/env -S bash -eu`) or by another path (`#!/usr/bin/bash`) is read as a shell script whatever
#      its name (only `#!/bin/...` and a shell's suffix were); under srun too (`srun -n 4 env -S "python train.py
#      --workers 0"` took the string for srun's program, its options not the script's)
#      also: a here-document a shell reads as its commands (`bash <<EOF`) runs them in a child shell: what its body
#      exports or sets ends with it (the script's lines after it took it: `export SLURM_NTASKS=2` inside the body made
#      the script's later bare srun 2 tasks, the allocation's 8 now; a `DATA=s3://...` there made `--data-root $DATA`
#      after it a remote read), while the body still has what the script set before it
#      also: a fix's settings for the job are written as code, in backticks as the rest of the guidance writes it, so
#      the job page and the digest show them as code: "use `num_workers=7` (now 0) and request `--cpus-per-task=8` with
#      `--ntasks-per-node=4`", "(2 training processes a GPU, `--ntasks-per-gpu=2`)", an oversubscribed job's "its tasks
#      are bound by `--gpus-per-task=1`" (each read as words: "use num_workers=7 ... request --cpus-per-task=8")
#      also: a script's first line makes it a shell script only where its program (through env and `env -S` too) is a
#      shell (sh, bash, dash, zsh, ksh, mksh, ash): any `#!/bin/...` did, so `#!/bin/python3` was read as shell commands
#      (its DataLoader not seen); one whose program is Python (`#!/usr/bin/python3`, `#!/usr/bin/env python3`) without
#      a shell's suffix is read as Python, with the options a launch gives it (`python -u train --workers 0`)
#      also: in the job's command (read as one list of commands, a `-c` string's too) a `bash <<EOF` body's exports end
#      with its shell as in a script (`export SLURM_NTASKS=2` in the body gave the srun after it 2 tasks); a quoted
#      `bash <<'EOF'` body has the script's exports, not its plain variables (`DATA=s3://...` then `--data-root $DATA`
#      in the body was a remote read; the child's `$DATA` is not known), and an unquoted body's `$DATA` is the
#      script's as it was at the body's command, quotes or not, not one the body sets (the script's shell expands the
#      body before the child reads it)
#      also: a finding's summary and the loader's why write the job's settings as code, as its fix does: "cannot keep
#      the GPUs fed: `num_workers=0`", "(it suggests `num_workers=15`)", "what was seen: `num_workers=0` (...)",
#      "(`pin_memory=False`)", "(no `non_blocking=True`)"; the job page, the cause page, the digest and the idle alert
#      show them as code (each read as words beside the fix's code)
#  12  2026-12-07: scopes and languages of scripts (revision 11 was released): in the job's command a shell's `-c`
#      string (`bash -c '...'`, `sh -c`) runs in a child shell: what it exports or sets ends with it (`bash -c 'export
#      SLURM_NTASKS=2; ...'` gave the command's later srun, and a script the command runs, 2 tasks); `sbatch --wrap
#      "..."`'s string is read as a script of its own, its `bash <<EOF` bodies and `-c` strings child shells (a body's
#      `export SLURM_NTASKS=2` reached the wrapped srun after it), what it sets kept in the batch job; a salloc
#      command that is a `-c` string is read
#      also: a script whose first line runs Python is read as Python whatever its name (sacct's `batch_script.sh` of a
#      `#!/usr/bin/env python3` job was read as shell commands, its DataLoader not seen), its `#SBATCH` lines before
#      its first line of code still the job's layout
#      also: `${NAME}` in an `env -S` string is NAME's value where the script exported it with a plain value, or the
#      command sets it for env (`W=0 env -S 'python train.py --workers ${W}'`: `num_workers=args.workers` is 0, it
#      kept the default); not known otherwise, as before
#      also: a csh, tcsh or fish script (by its first line, else its suffix) is not read as sh (a tcsh batch script
#      named `.sh` was: its `setenv SLURM_NTASKS 1` no export, its srun the allocation's 8 tasks, uneven use): its
#      `#SBATCH` lines alone are read, and the job's evidence notes that its commands were not
#      also: the command sbatch wraps or salloc runs in the job's command gives the script it launches its options
#      (`salloc -n 2 srun python train.py --workers 0`, `sbatch --wrap 'python train.py --workers 0'`: the loader's
#      `num_workers=args.workers` kept its default)
#      also: a launch count takes a variable the script set plainly before it, at its top level (`NGPUS=1` then
#      `torchrun --nproc_per_node=$NGPUS`: one process, unused GPUs; it was not known, uneven use), a child shell's
#      from what the script exported; a variable a branch, loop, `case` item or function sets (`then NGPUS=8`, which
#      left the value before it known to a launch's options too), one set earlier on the launch's own line, or one
#      from `${SLURM_GPUS_ON_NODE:-4}`, stays unknown
#      also: a `-c` string inside a script (`bash -c 'srun -n 8 python train.py'`) is read as a child shell, as the
#      job's command's are (its launch was not seen); one under a wrapper (`srun bash -c '...'`) is still not read
#      also: a script's command after the reserved words that begin it is read (`if ...; then srun -n 4 python
#      train.py; fi` on one line, `do torchrun ...`, `case $M in a) srun ...;; esac`, `else`, `{ ...; }`, `!`, `time
#      -p`: its launch was not seen at all); srun's input variables a branch, loop, `case` item, `{ ...; }` or function
#      sets (`then export SLURM_NTASKS=2`) are not known from there on (a later srun took the branch's 2 tasks);
#      `${NAME:-word}` / `${NAME-word}` is NAME's value where the script set it plainly, never for `SLURM_*`
#      (`${SLURM_GPUS_ON_NODE:-4}` stays unknown); a function whose `{` is on the line after its header no longer
#      leaves every line after it one level too deep (read as in a branch)
#  13  2026-12-07: script reading (revision 12 was released): the job's command is read as a script's line is: a
#      command after a shell's reserved words (`if true; then srun -n 4 python train.py; fi`, `for i in 1; do torchrun
#      ...; done`, `case $M in a) srun ...;; esac`, `{ srun ...; }`, in its `bash -c` strings too) was a command whose
#      program is the reserved word, its launch not seen, and what a branch there exports for srun is not known after
#      it (it gave the srun after the `fi` its tasks); a subshell's parentheses are no words (`( srun -n 4 python
#      train.py )` gave train.py a `)` argument and left every later line read as in a branch; `(srun ...)` ran a
#      program `(srun`: not seen) and what it sets or exports ends with its `)`; a `case` item's pattern of several
#      alternatives is one pattern (`python|torchrun) srun ...` read a launch `python` of unknown count; `a | b )`
#      hid the item's launch); a `-c` string under a wrapper is read, its commands under the wrapper's words (`srun
#      -n 2 bash -c 'torchrun --nproc_per_node=4 train.py'`: 8 processes, where the launch was not seen; `nohup bash
#      -c '...'`, `sudo bash -c '...'`); and srun's input variables a branch exports are known later in that same arm
#      (`then export SLURM_NTASKS=2; srun python t.py`: 2 tasks, where it was not known), still not after it nor in
#      another arm (`else`, `elif`, another `case` item) nor after an inner branch that sets them; and so is a plain
#      variable a branch sets with a plain value (`then NGPUS=8; torchrun --nproc_per_node=$NGPUS train.py`: 8
#      processes, where the count was not known; `then NGPUS=1` on eight GPUs: unused GPUs, was uneven use), as
#      srun's are (`_ShellVariables.arm_values`, `_in_arm`); a plain variable set earlier on the launch's own line
#      (after `;` or `&&`) is known to the commands after it as on a line of its own (`NGPUS=4; torchrun
#      --nproc_per_node=$NGPUS train.py`: 4 processes, `W=0; python train.py --workers $W`: 0 workers, both unknown
#      before), still not after `||`, in a pipeline or background job, nor as a prefix (`NGPUS=4 torchrun ...`); and a
#      branch's `A=1 || NGPUS=8`, `false && NGPUS=8`, `NGPUS=8 &` or `NGPUS=8 | ...` is no longer taken as known
#      later in its arm (`_runs_here`); the job's command's plain variables are known as a script's, where it expanded
#      none (`NGPUS=4; torchrun --nproc_per_node=$NGPUS train.py`, or on its next line, as the job's command: 4
#      processes, unknown before; `NGPUS=1; torchrun ...` on eight GPUs: unused GPUs, was uneven use), a here-document
#      body a shell there reads still not expanded; a plain variable an `&&` chain sets after a command that may fail
#      is known to the later commands of that chain (`cd /work && NGPUS=4 && torchrun ...`: 4, unknown before; not
#      after a `||`, a `;` or on a later line: `_chained`); and `NGPUS=4 && cmd &` (the chain in the background) no
#      longer gives the lines after it NGPUS's 4 (`_list_ends`); a subshell after such an assignment is read
#      (`NGPUS=4; (torchrun --nproc_per_node=$NGPUS train.py)`: 4 processes; its launch was not seen, a program
#      `(torchrun`)
#  14  2026-12-07: script reading (revision 13 was released): the job's command's `-c` strings and here-documents take
#      its variables as a script's do (`export N=4; bash -c 'torchrun --nproc_per_node=$N train.py'`, `N=4` then a
#      `bash <<EOF` body using `$N`: 4, unknown before; `_script_line_commands` reads the command, `_ExpandedBody`);
#      a `-c` string's child shell is made where it runs, not at the end of its line (`export N=4; bash -c '...$N';
#      export N=8` read 8; `_ShellVariables.strings`), with the variables its command is given (`N=8 bash -c`); an
#      `&&` chain's values are known in the compound command it runs and after its closing word in that chain (`cd /w
#      && N=4 && if ...; then torchrun --nproc_per_node=$N ...; fi`: 4, unknown before; `_ShellVariables.carried`); a
#      prefix assignment is its command's alone (`N=4; N=8 make data; torchrun --nproc_per_node=$N`: 4, unknown
#      before; a special built-in's, `N=8 :`, stays unknown: `_shell_assignments`); a one-line subshell function `f()
#      ( srun ... )` ends at its `)` (its launch had a `)` argument, every later line read as in its body); `env -S
#      'bash -c "..."'`'s string is read (its launch was not seen); and the job's command's `sbatch --wrap '...'`
#      string and salloc's command's `-c` string take the variables exported before them, as sbatch's `--export`
#      passes them on (`export N=4; sbatch --wrap 'torchrun --nproc_per_node=$N train.py'`: 4, unknown before;
#      `_submitted_string`, `_ShellVariables._job_shell`); a compound command's first command runs for sure wherever
#      it runs (`cd /w && N=4 && ( N=5; torchrun --nproc_per_node=$N ... )`: 5, unknown before), and a subshell an
#      `&&` chain runs leaves the chain's values to the rest of it (`cd /w && N=4 && (N=2) && torchrun ...$N`: 4,
#      unknown before; `_ShellVariables._close`); and a here-document body of the job's command is read as a script's:
#      a quoted one's own plain variables are known in it (`bash <<'EOF'`, `N=4`, `torchrun --nproc_per_node=$N`: 4,
#      unknown before), an unquoted one's quotes are its text (`'$N'` there expanded, as bash does: `_unquoted_bodies`);
#      the variables a `-c` string's shell is given are its environment, which the string may set again
#      (`SLURM_NTASKS=2 bash -c 'export SLURM_NTASKS=4; srun ...'`, `env SLURM_NTASKS=2 bash -c`: 4 tasks, read 2;
#      `_under_wrapper`); a `{ ...; }` group an `&&` chain runs leaves what it set for sure to the rest of that chain
#      (`cd /w && N=4 && { N=2; } && torchrun --nproc_per_node=$N ...`: 2, unknown before; not where a pipeline runs
#      it, a subshell: `{ N=2; } | cat && ...`; `_ShellVariables._close`, `grouped`);
#      sbatch's last `--export` is read wherever its options give it (`sbatch --wrap '...' --export=NONE`, `sbatch -N 1
#      --export=NONE --wrap ...`: read as ALL before), and an exported SBATCH_EXPORT where no option gives one
#      (`export N=4 SBATCH_EXPORT=NONE; sbatch --wrap '...$N'`: N not known in the string, 4 before; `_sbatch_exports`);
#      a quoted here-document body's `&&` chains and subshells are read as a script's (`bash <<'EOF'` with `cd /w &&
#      N=4 && torchrun --nproc_per_node=$N ...`, or `( N=4; torchrun ...$N )`: 4, unknown before; `body_subshells`)
#  15  2026-12-08: script reading (revision 14 was released): a value a loop's body sets is not taken from before the
#      loop anywhere in it (`N=4; for i in 1 2; do torchrun --nproc_per_node=$N train.py; N=2; done`, on lines of
#      their own too: read 4, bash runs 4 then 2; now not known; `_loop_sets`, `_ShellVariables.ahead`); a `{ ...; }`
#      group an `&&` chain runs leaves what it set for sure to the rest of the chain where the chain set nothing
#      before it (`cd /w && { N=2; } && torchrun --nproc_per_node=$N ...`: 2, unknown before; not where a pipeline
#      runs it); a quoted here-document body's groups and `if` / `case` branches keep the values they set for sure
#      later in their arm, as a script's (`bash <<'EOF'` with `if a; then N=2; torchrun ...$N; fi` as the job's
#      command: 2, unknown before); an empty `--export=` or SBATCH_EXPORT is read as a list naming no variable, as
#      sbatch takes it (SLURM_* alone passed; the reading was so already for the option); and srun's input variables
#      a loop exports after its srun (`export SLURM_NTASKS=4; for ...; do srun ...; export SLURM_NTASKS=2; done`: read
#      4 tasks, now not known; `_BranchCommand.looped`, `_arm_environment`), in a `bash -c 'srun ...'` string in such a
#      loop too (`_ShellVariables.looped_base`); values bash knows, not known before: after a `{ ...; }` group that
#      runs for sure (`N=4; { N=2; }; torchrun --nproc_per_node=$N ...`: 2), in an `if`'s `else` / `elif` arm (`N=4`,
#      `if a; then N=2; else torchrun ...$N; fi`: 4; not where a condition set it), after an `if` each arm of which,
#      an `else` among them, set the same value for sure, after a pipeline or background job whose parts set it (`{
#      N=2; } | cat`, `if ...; fi | cat`, `cat l | while ...; done`: 4), and in a loop that sets it only to the value
#      it had (`N=4; for ...; do torchrun ...$N; N=4; done`: 4; `_TopCompound`, `_if_arm_ends`, `_top_closed`,
#      `_unchanged_by`)
RULES_REVISION = 15

__all__ = [
    "RULES",
    "RULES_REVISION",
    "THRESHOLDS",
    "Finding",
    "Status",
    "TriageResult",
    "default_thresholds",
    "triage",
]
