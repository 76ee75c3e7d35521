from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleet.logevents import LOG_EVENT_KINDS, LogEventRecord, extract_log_events

EXAMPLE_LOGS = Path(__file__).resolve().parent.parent / "docs" / "examples" / "example-archive" / "logs"


def kinds(text: str) -> list[tuple[int, str]]:
    return [(event.line_no, event.kind) for event in extract_log_events(text)]


def only(text: str) -> LogEventRecord:
    events = extract_log_events(text)
    assert len(events) == 1, events
    return events[0]


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("pip install -r requirements.txt", "install"),
        ("+ python -m pip install torch==2.4.0", "install"),
        ("conda install -y pytorch", "install"),
        ("apt-get install -y libgl1", "install"),
        ("Collecting transformers==4.44.2", "install"),
        ("Installing collected packages: tokenizers, transformers", "install"),
        ("Requirement already satisfied: numpy in /usr/lib/python3/dist-packages", "install"),
        ("[2026-11-18T12:29:52Z] Collecting wandb==0.17.0", "install"),
        ("2026-10-05 12:00:00,000 INFO Successfully installed a-1.0", "install"),
        ("[rank0]:2026-10-05 12:00:00,000 INFO {'loss': 0.5, 'epoch': 1.0}", "epoch"),
        ("Successfully installed tokenizers-0.19.1 transformers-4.44.2", "install"),
        ("  Downloading torch-2.4.0-cp311-cp311-manylinux1_x86_64.whl (797.2 MB)", "download"),
        ("Fetching 12 files: 100%|##########| 12/12 [00:30<00:00]", "download"),
        ("wget https://example.org/data.tar", "download"),
        ("model.safetensors:  45%|####5     | 1.21G/2.69G [00:12<00:15, 98.2MB/s]", "download"),
        ("  config.JSON: 100%|##########| 665/665 [00:00<00:00, 3.1MB/s]", "download"),
        ("download: s3://bucket/data.tar to ./data.tar", "download"),
        ("Epoch 3/10", "epoch"),
        ("Epoch [4/10] loss=0.12", "epoch"),
        ("epoch: 5 | loss 0.3", "epoch"),
        ("Epoch 6: 100%|##########| 782/782 [00:05<00:00, 152.68it/s, v_num=0]", "epoch"),
        ("{'loss': 0.6931, 'learning_rate': 4.5e-05, 'epoch': 0.27}", "epoch"),
        ("Saving model checkpoint to /out/checkpoint-500", "checkpoint_save"),
        ("INFO saved checkpoint at step 1000", "checkpoint_save"),
        ("calling torch.save(state, 'ckpt.pt')", "checkpoint_save"),
        (
            "[2026-10-05 12:00:03,123] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint global_step500 "
            "is about to be saved!",
            "checkpoint_save",
        ),
        (
            "2026-10-05 12:00:03 - INFO - accelerate.accelerator - Saving current state to out/step_500",
            "checkpoint_save",
        ),
        ("[rank0]:2026-11-18 14:22:47,583 INFO __main__: Saving final model to /scratch/out/final", "checkpoint_save"),
        ("Uploading /out to s3://models/run1/", "upload"),
        ("upload: ./model.pt to s3://models/model.pt", "upload"),
        ("aws s3 cp ./model.pt s3://models/model.pt", "upload"),
        ("Uploaded 3 files", "upload"),
        ("Training finished in 1:02:03", "training_finished"),
        ("Training completed. Do not forget to share your model!", "training_finished"),
        ("`Trainer.fit` stopped: `max_epochs=20` reached.", "training_finished"),
        (
            "UserWarning: This DataLoader will create 16 worker processes in total. Our suggested max number of "
            "worker in current system is 4",
            "dataloader_warning",
        ),
        ("RuntimeError: DataLoader worker (pid 1234) is killed by signal: Killed.", "dataloader_warning"),
        (
            "The 'train_dataloader' does not have many workers which may be a bottleneck. Consider increasing the "
            "value of the `num_workers` argument",
            "dataloader_warning",
        ),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "oom"),
        ("RuntimeError: CUDA error: out of memory", "oom"),
        (
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
            "nccl_error",
        ),
        ("node3:1234:1250 [0] NCCL WARN NET/IB : Got completion with error 12", "nccl_error"),
        (
            "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8, "
            "OpType=ALLREDUCE) ran for 1800321 milliseconds before timing out.",
            "nccl_error",
        ),
    ],
)
def test_each_kind_is_recognised(line, kind):
    assert kind in LOG_EVENT_KINDS
    assert kind in [event.kind for event in extract_log_events(line)]


@pytest.mark.parametrize(
    "line",
    [
        "  Num Epochs = 3",
        "Namespace(epochs=10, lr=0.1)",
        "step 100 loss 0.42",
        "Loading saved checkpoint from /c/last.ckpt",
        "Restoring from saved model at /m",
        "aws s3 cp s3://bucket/data.tar ./data.tar",
    ],
)
def test_ordinary_lines_are_not_events(line):
    assert "upload" not in [e.kind for e in extract_log_events(line)]
    if "s3" not in line:
        assert extract_log_events(line) == []


def test_timestamps_line_numbers_and_text():
    text = (
        "2026-10-05 12:00:03,123 INFO Saving model checkpoint to /out/checkpoint-1\n"
        "2026-10-05T12:00:04.5Z Saving model checkpoint to /out/checkpoint-2\n"
        "[2026-10-05T12:00:05Z] Saving model checkpoint to /out/checkpoint-3\n"
        "2026-10-05T14:00:06+02:00 Saving model checkpoint to /out/checkpoint-4\n"
        "Saving model checkpoint to /out/checkpoint-5\n"
        "\x1b[32m2026-10-05 12:00:07\x1b[0m Saving model checkpoint to /out/checkpoint-6\n"
    )
    events = extract_log_events(text)
    assert [e.line_no for e in events] == [1, 2, 3, 4, 5, 6]
    assert [e.timestamp for e in events] == [
        datetime(2026, 10, 5, 12, 0, 3, 123000, tzinfo=UTC),
        datetime(2026, 10, 5, 12, 0, 4, 500000, tzinfo=UTC),
        datetime(2026, 10, 5, 12, 0, 5, tzinfo=UTC),
        datetime(2026, 10, 5, 12, 0, 6, tzinfo=UTC),
        None,
        datetime(2026, 10, 5, 12, 0, 7, tzinfo=UTC),
    ]
    assert all(e.timestamp is None or e.timestamp.tzinfo is UTC for e in events)
    assert events[0].text == "2026-10-05 12:00:03,123 INFO Saving model checkpoint to /out/checkpoint-1"
    assert events[5].text == "2026-10-05 12:00:07 Saving model checkpoint to /out/checkpoint-6"  # no colour codes


def test_hugging_face_explicit_format_lines_carry_their_timestamp():
    # transformers' example scripts and LLaMA-Factory print the level and source before the time; these
    # lines had no time, so a job's checkpoint saves could not be matched with its idle gaps.
    text = (
        "[INFO|trainer.py:3478] 2026-10-05 12:00:03,123 >> Saving model checkpoint to out/checkpoint-500\n"
        "[WARNING|2026-10-05 12:00:04] llamafactory.train.callbacks:150 >> Saving model checkpoint to out/c-2\n"
    )
    events = extract_log_events(text)
    assert [(e.kind, e.timestamp) for e in events] == [
        ("checkpoint_save", datetime(2026, 10, 5, 12, 0, 3, 123000, tzinfo=UTC)),
        ("checkpoint_save", datetime(2026, 10, 5, 12, 0, 4, tzinfo=UTC)),
    ]


GLOG = (
    "I1231 23:50:00.123456  1234 checkpoint_manager.py:1041] Saving checkpoint at step 500\n"
    "W0101 00:10:02.5 1234 train.py:88] training finished after 1000 steps\n"
    "E20270101 00:20:00.000000 77 main.cc:12] CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


def test_glog_lines_get_their_year_from_the_jobs_start_across_new_year():
    # JAX (orbax), absl and TensorFlow's C++ logging print no year: "I1231 23:50:00.123456  1234 file:42] msg".
    # Such lines had no time at all, so a JAX job's saves could never be matched with its idle gaps.
    started = datetime(2026, 12, 31, 22, 0, tzinfo=UTC)
    events = extract_log_events(GLOG, started)
    assert [(e.kind, e.timestamp) for e in events] == [
        ("checkpoint_save", datetime(2026, 12, 31, 23, 50, 0, 123456, tzinfo=UTC)),
        ("training_finished", datetime(2027, 1, 1, 0, 10, 2, 500000, tzinfo=UTC)),  # after New Year
        ("oom", datetime(2027, 1, 1, 0, 20, tzinfo=UTC)),  # glog's --log_year_in_prefix
    ]
    assert events[0].text.startswith("I1231 23:50:00.123456")
    # A job started on New Year's Day whose host logs in local time behind UTC: December is the year before.
    early = extract_log_events("I1231 19:30:00.000000 9 train.py:3] Saving checkpoint\n", datetime(2027, 1, 1, 0, 30))
    assert early[0].timestamp == datetime(2026, 12, 31, 19, 30, tzinfo=UTC)
    # Without the job's start, a line without its year has no time (none is guessed).
    assert [e.timestamp for e in extract_log_events(GLOG)] == [None, None, None]
    # Not glog: a word that starts with I, W, E or F and digits.
    assert extract_log_events("E1234 Saving checkpoint\n", started)[0].timestamp is None


DETECTRON2 = (
    "[12/31 22:00:12 d2.engine.train_loop]: Starting training from iteration 0\n"
    "[12/31 23:50:03 fvcore.common.checkpoint]: Saving checkpoint to ./output/model_0004999.pth\n"
    "WARNING [01/01 00:05:00 d2.engine.hooks]: This DataLoader will create 16 worker processes in total. "
    "Our suggested max number of worker in current system is 8\n"
    "[01/01 00:41:05] fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_final.pth\n"
)
MMENGINE = (
    "12/31 23:58:41 - mmengine - INFO - Epoch(train) [12][1833/1833]  lr: 2.0000e-04  loss: 0.4012\n"
    "12/31 23:58:44 - mmengine - INFO - Saving checkpoint at 12 epochs\n"
    "01/01 00:41:02 - mmengine - WARNING - CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


def test_detectron2_and_mmengine_lines_get_their_year_from_the_jobs_start_across_new_year():
    # detectron2 prints "[11/02 10:00:00 d2.engine.train_loop]: msg" (its log.txt "[11/02 10:00:00] name INFO: msg")
    # and mmengine's terminal "11/02 10:00:00 - mmengine - INFO - msg": month and day, no year. Their lines had
    # no time, so a detectron2 or MMDetection job's saves were never matched with its idle gaps.
    started = datetime(2026, 12, 31, 22, 0, tzinfo=UTC)
    events = extract_log_events(DETECTRON2, started)
    assert [(e.kind, e.line_no, e.timestamp) for e in events] == [
        ("checkpoint_save", 2, datetime(2026, 12, 31, 23, 50, 3, tzinfo=UTC)),
        ("dataloader_warning", 3, datetime(2027, 1, 1, 0, 5, tzinfo=UTC)),  # after New Year
        ("checkpoint_save", 4, datetime(2027, 1, 1, 0, 41, 5, tzinfo=UTC)),
    ]
    events = extract_log_events(MMENGINE, started)
    assert [(e.kind, e.timestamp) for e in events] == [
        ("epoch", datetime(2026, 12, 31, 23, 58, 41, tzinfo=UTC)),
        ("checkpoint_save", datetime(2026, 12, 31, 23, 58, 44, tzinfo=UTC)),
        ("oom", datetime(2027, 1, 1, 0, 41, 2, tzinfo=UTC)),
    ]
    # Without the job's start no year is guessed.
    assert {e.timestamp for e in extract_log_events(DETECTRON2 + MMENGINE)} == {None}
    # Not a stamp of theirs: a bracketed date without the logger's name, a fraction "11/02" in a message.
    assert [e.timestamp for e in extract_log_events("[11/02 10:00:00] Saving checkpoint\n", started)] == [None]
    assert [e.timestamp for e in extract_log_events("11/02 10:00:00 saving checkpoint 3\n", started)] == [None]


def test_fairseq_lines_carry_their_own_year():
    # fairseq's "%Y-%m-%d %H:%M:%S | LEVEL | logger | msg": dated without the job's start.
    line = (
        "2026-11-02 10:04:31 | INFO | fairseq.checkpoint_utils | Saved checkpoint checkpoints/checkpoint1.pt "
        "(epoch 1 @ 500 updates, score 7.12) (writing took 3.2 seconds)\n"
    )
    moment = datetime(2026, 11, 2, 10, 4, 31, tzinfo=UTC)
    assert [(e.kind, e.timestamp) for e in extract_log_events(line)] == [("epoch", moment), ("checkpoint_save", moment)]


def test_a_timestamp_outside_the_calendar_in_utc_leaves_the_event_without_a_time():
    # Year 1 at +05:00 is before year 1 in UTC, year 9999 at -05:00 after 9999 (an OverflowError
    # that once failed the import of the job's whole archive).
    text = (
        "0001-01-01 00:00:00+05:00 Saving model checkpoint to /out/checkpoint-1\n"
        "[9999-12-31T23:59:59-05:00] Saving model checkpoint to /out/checkpoint-2\n"
    )
    events = extract_log_events(text)
    assert [(e.kind, e.line_no, e.timestamp) for e in events] == [
        ("checkpoint_save", 1, None),
        ("checkpoint_save", 2, None),
    ]


def test_rank_prefixes():
    text = "[rank1]: 2026-10-05T12:00:00Z CUDA out of memory\n3: 2026-10-05 12:00:01,000 NCCL WARN timeout\n"
    events = extract_log_events(text)
    assert [(e.line_no, e.kind) for e in events] == [(1, "oom"), (2, "nccl_error")]
    assert events[0].timestamp == datetime(2026, 10, 5, 12, 0, tzinfo=UTC)
    assert events[1].timestamp == datetime(2026, 10, 5, 12, 0, 1, tzinfo=UTC)
    assert events[0].text.startswith("[rank1]: ")


def test_tqdm_carriage_returns_count_as_the_last_segment():
    bar = "\r".join(f"Epoch 2: {p:3d}%|{'#' * (p // 10):10s}| {p}/100" for p in range(0, 101))
    text = f"line one\n{bar}\nSaving model checkpoint to /c\n"
    events = extract_log_events(text)
    assert [(e.line_no, e.kind) for e in events] == [(2, "epoch"), (3, "checkpoint_save")]
    assert events[0].text == "Epoch 2: 100%|##########| 100/100"


def test_repeated_epoch_lines_collapse_to_one_event_per_epoch():
    text = "\n".join(
        [
            "Epoch 0: 100%|####| 10/10",  # 1
            "Epoch 0: 100%|####| 10/10 [val]",  # 2: same epoch
            "[rank1]: Epoch 0 done",  # 3: same epoch, other rank
            "{'loss': 0.9, 'epoch': 0.5}",  # 4: HF says 0.5 -> still epoch 0
            "{'loss': 0.8, 'epoch': 1.0}",  # 5: epoch 1 starts
            "{'loss': 0.7, 'epoch': 1.5}",  # 6
            "{'train_runtime': 120.5, 'train_loss': 0.75, 'epoch': 2.0}",  # 7: epoch 2 and finished
        ]
    )
    assert kinds(text) == [(1, "epoch"), (5, "epoch"), (7, "epoch"), (7, "training_finished")]


def test_one_line_can_carry_two_kinds():
    event_kinds = kinds(
        "[rank0]: Epoch 3, global step 400: 'val_loss' reached 0.2, saving model to '/c/e3.ckpt' as top 1"
    )
    assert event_kinds == [(1, "epoch"), (1, "checkpoint_save")]


def test_long_lines_are_cut_to_500_characters():
    event = only("CUDA out of memory. " + "x" * 1000)
    assert len(event.text) == 500


def test_windows_line_endings_and_empty_input():
    assert kinds("pip install x\r\nTraining finished\r\n") == [(1, "install"), (2, "training_finished")]
    assert extract_log_events("") == []


def test_example_log_events():
    # Decoded like the ingest service does: bytes -> str, no newline translation, so "\r" survives.
    text = (EXAMPLE_LOGS / "ex-1002" / "stdout.log").read_bytes().decode()
    events = extract_log_events(text)
    by_line = {(e.line_no, e.kind): e for e in events}
    assert (9, "dataloader_warning") in by_line
    assert [(e.line_no, e.kind) for e in events if e.kind == "epoch"] == [(11, "epoch"), (12, "epoch"), (16, "epoch")]
    assert by_line[(13, "checkpoint_save")].timestamp == datetime(2026, 10, 5, 7, 38, 1, 220000, tzinfo=UTC)
    assert by_line[(20, "training_finished")].timestamp == datetime(2026, 10, 5, 7, 59, 40, 877000, tzinfo=UTC)
    hung = extract_log_events((EXAMPLE_LOGS / "ex-1005" / "rank0.log").read_bytes().decode())
    assert [e.kind for e in hung][-2:] == ["nccl_error", "nccl_error"]


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 3:  45%|####5     | 352/782 [00:02<00:03, 150.1it/s]",
        " 12%|#2        | 120/1000 [00:10<01:20, 11.0it/s]",
        "Map (num_proc=8):  40%|####      | 4000/10000 [00:01<00:02]",
    ],
)
def test_progress_bars_of_other_things_are_no_downloads(line):
    assert "download" not in [event.kind for event in extract_log_events(line)]


def test_an_epoch_number_of_thousands_of_digits_is_no_epoch_and_no_error():
    # int() refuses text of over 4,300 digits: this line once failed the import of its whole archive.
    events = extract_log_events("Epoch " + "9" * 4400 + "/3\nEpoch 2/3\n")
    assert [(e.kind, e.line_no) for e in events] == [("epoch", 2)]


def _epoch_lines(text: str, started=None) -> list[int]:
    return [e.line_no for e in extract_log_events(text, started) if e.kind == "epoch"]


def test_mmengine_epoch_lines_count_one_epoch_each_and_its_test_loop_none():
    # mmengine (MMDetection 3, MMPretrain, MMSegmentation 1) names the loop before the epoch, right-aligned:
    # "Epoch(train)  [1][ 50/500]", "Epoch(train) [10][ 50/500]", "Epoch(val) [1][50/50]". They were no epochs at
    # all, so an MMDetection job had no epoch in its Log events and counted as one without a training loop.
    # "Epoch(test) [ 50/500]" is a batch of the test loop, not epoch 50.
    text = "\n".join(
        [
            "2026/11/02 08:01:10 - mmengine - INFO - Epoch(train)  [1][ 50/500]  base_lr: 2.0000e-02 lr: 2.0000e-02"
            "  eta: 9:41:02  time: 0.5812  data_time: 0.0211  memory: 8418  loss: 2.1456",  # 1: epoch 1
            "2026/11/02 08:05:40 - mmengine - INFO - Epoch(train)  [1][500/500]  base_lr: 2.0000e-02  loss: 1.3012",
            "2026/11/02 08:05:44 - mmengine - INFO - Saving checkpoint at 1 epochs",  # 3
            "2026/11/02 08:06:30 - mmengine - INFO - Epoch(val)  [1][50/50]    eta: 0:00:00  time: 0.0921",  # epoch 1
            "2026/11/02 08:06:31 - mmengine - INFO - Epoch(val) [1][50/50]    coco/bbox_mAP: 0.1020  data_time: 0.0021",
            "2026/11/02 08:07:20 - mmengine - INFO - Epoch(train)  [2][ 50/500]  lr: 2.0000e-02  loss: 1.2011",  # 6
            "11/02 09:40:00 - mmengine - INFO - Epoch(train) [10][ 50/500]  base_lr: 2.0000e-03  loss: 0.6011",  # 7
            "11/02 09:52:00 - mmengine - INFO - Epoch(test) [ 50/500]    eta: 0:01:10  time: 0.0911",  # no epoch 50
        ]
    )
    assert _epoch_lines(text, datetime(2026, 11, 2, 8, 0, tzinfo=UTC)) == [1, 6, 7]
    # MMDetection 2's mmcv: "Epoch [3][50/500]" and "Epoch(val) [3][500]".
    mmcv = "2026-11-02 08:01:10,120 - mmdet - INFO - Epoch [3][50/7330]\tlr: 2.000e-02, eta: 9:41:02, loss: 1.0102\n"
    mmcv += "2026-11-02 09:01:10,120 - mmdet - INFO - Epoch(val) [3][7330]\tbbox_mAP: 0.3120\n"
    mmcv += "2026-11-02 09:03:10,120 - mmdet - INFO - Epoch [4][50/7330]\tlr: 2.000e-02, eta: 8:41:02, loss: 0.9102"
    assert _epoch_lines(mmcv) == [1, 3]


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        (  # PyTorch Lightning's progress bar, each epoch's bar redrawn on one physical line
            "\r".join(f"Epoch 0:  {p}%|####5     | {p * 10}/1000 [01:23<01:42, 5.37it/s, v_num=0]" for p in (45, 100))
            + "\n"
            + "Validation DataLoader 0: 100%|##########| 50/50 [00:02<00:00, 20.1it/s]\n"
            + "\r".join(
                f"Epoch 1:  {p}%|####5     | {p * 10}/1000 [01:23<01:42, 5.37it/s, v_num=0, train_loss=0.123]"
                for p in (45, 100)
            ),
            [1, 3],
        ),
        (  # Keras' fit
            "Epoch 1/10\n469/469 [==============================] - 5s 10ms/step - loss: 0.3012 - accuracy: 0.9102\n"
            "Epoch 2/10\n469/469 [==============================] - 4s 9ms/step - loss: 0.1412 - accuracy: 0.9601",
            [1, 3],
        ),
        (  # Hugging Face Trainer's metrics: 'epoch' is a fraction, one event when its whole part moves on
            "{'loss': 0.6931, 'grad_norm': 1.2031, 'learning_rate': 4.5e-05, 'epoch': 0.27}\n"
            "{'loss': 0.5012, 'grad_norm': 0.9512, 'learning_rate': 4.0e-05, 'epoch': 0.54}\n"
            "{'eval_loss': 0.4812, 'eval_runtime': 12.31, 'eval_samples_per_second': 81.2, 'epoch': 1.0}\n"
            "{'loss': 0.4101, 'grad_norm': 0.8811, 'learning_rate': 3.5e-05, 'epoch': 1.08}",
            [1, 3],
        ),
    ],
    ids=["lightning", "keras", "hf_trainer"],
)
def test_other_frameworks_epoch_lines_count_each_epoch_once(text, lines):
    assert _epoch_lines(text) == lines


def test_wgets_start_line_is_a_download_at_its_own_time():
    # wget's "--<stamp>--  <url>" starts a download; with its stamp and dashes read off the line was the bare URL,
    # which the download probe (written for "--  https://") never matched. Only the "saved [...]" line at the end
    # was found, so a 39-minute wget before training made a zero-length download and no external_data_usage finding
    # (the demo's graph-transformer job, 1000-job fleet with seed 1).
    log = (
        "--2026-10-27 19:08:53--  https://download.example.org/ogbn-products/ogbn-products-train.tar.gz\n"
        "Resolving download.example.org (download.example.org)... 93.184.215.14\n"
        "2026-10-27 19:47:35 (5.91 MB/s) - 'ogbn-products-train.tar.gz' saved [14397091436/14397091436]\n"
    )
    events = extract_log_events(log)
    assert [(e.line_no, e.kind, e.timestamp) for e in events] == [
        (1, "download", datetime(2026, 10, 27, 19, 8, 53, tzinfo=UTC)),
        (3, "download", datetime(2026, 10, 27, 19, 47, 35, tzinfo=UTC)),
    ]
    # A URL inside a sentence, or one followed by more words, is no download of its own.
    assert kinds("2026-10-27 19:08:53 INFO see https://docs.example.org/run for the dashboard") == []
    assert kinds("2026-10-27 19:08:53 INFO https://wandb.ai/team/run/abc is the run page") == []
    # Nor is a URL alone on its line: a run's page, a dashboard's address (W&B, TensorBoard, Ray print them).
    assert kinds("https://wandb.ai/team/proj/runs/abc") == []
    assert kinds("2026-10-27 19:08:53 http://localhost:6006/") == []
    assert kinds("  http://0.0.0.0:8265") == []
