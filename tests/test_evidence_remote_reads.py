"""Remote data reading through object-store and HTTP clients, read from the scripts' syntax trees.

Only `s3://`-style URL literals were facts: a Dataset that fetches each sample with boto3's `get_object`, an s3fs
filesystem's `open`, a GCS blob's `download_as_bytes` or `requests.get` names no URL, so the job's remote reads went
unseen. Each read is now a `remote_read` fact at its line, marked per sample (in a Dataset's `__getitem__` /
`__iter__`, a function they call, a `.map` callback or the training-step loop) or not (a download once at start-up:
the data download phase, external_data_usage's, not remote_data_reading's).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.test_triage_edge_cases import START, run, series
from triage.evidence.scripts import extract_script_evidence
from triage.taxonomy import Category

TRAIN_LOOP = """

def train(model, optimizer, dataset):
    loader = DataLoader(dataset, batch_size=256, num_workers=8, pin_memory=True)
    for inputs, targets in loader:
        inputs = inputs.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(inputs), targets.cuda(non_blocking=True))
        loss.backward()
        optimizer.step()
"""

BOTO3_GETITEM = (
    """import io

import boto3
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class S3ImageDataset(Dataset):
    def __init__(self, keys):
        self.keys = keys
        self.s3 = boto3.client("s3")

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, index):
        body = self.s3.get_object(Bucket="vision-datasets", Key=self.keys[index])["Body"].read()
        return Image.open(io.BytesIO(body))
"""
    + TRAIN_LOOP
)

BOTO3_HELPER = """import boto3
import torch
from torch.utils.data import Dataset

s3 = boto3.client("s3")


class ShardDataset(Dataset):
    def __getitem__(self, index):
        return self._fetch(index)

    def _fetch(self, index):
        s3.download_file("vision-datasets", f"shards/{index}.tar", "/tmp/shard.tar")
        return torch.load("/tmp/shard.tar")
"""

BOTO3_STARTUP = (
    """import boto3
import torch
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder


def stage():
    s3 = boto3.client("s3")
    s3.download_file("vision-datasets", "imagenet/train.tar", "/local_ssd/train.tar")


def main(model, optimizer):
    stage()
    train(model, optimizer, ImageFolder("/local_ssd/train"))
"""
    + TRAIN_LOOP
)

S3FS_GETITEM = """import s3fs
import torch
from torch.utils.data import Dataset


class Shards(Dataset):
    def __init__(self, root):
        self.fs = s3fs.S3FileSystem(anon=False)
        self.root = root

    def __getitem__(self, index):
        with self.fs.open(f"{self.root}/part-{index:05d}.pt", "rb") as handle:
            return torch.load(handle)

    def save(self, state):
        with self.fs.open(f"{self.root}/state.pt", "wb") as handle:
            torch.save(state, handle)
"""

GCS_GETITEM = """import torch
from google.cloud import storage
from torch.utils.data import Dataset


class GcsDataset(Dataset):
    def __init__(self, names):
        self.bucket = storage.Client().bucket("speech-corpus")
        self.names = names

    def __getitem__(self, index):
        data = self.bucket.blob(self.names[index]).download_as_bytes()
        return torch.frombuffer(data, dtype=torch.int16)
"""

AZURE_GETITEM = """import torch
from azure.storage.blob import ContainerClient
from torch.utils.data import Dataset


class BlobDataset(Dataset):
    def __init__(self, url):
        self.container = ContainerClient.from_container_url(url)

    def __getitem__(self, index):
        return torch.load(self.container.download_blob(f"{index}.pt").readall())
"""

SMART_OPEN_ITER = """import torch
from smart_open import open as sopen
from torch.utils.data import IterableDataset


class Lines(IterableDataset):
    def __init__(self, uri):
        self.uri = uri

    def __iter__(self):
        with sopen(self.uri, "r") as handle:
            for line in handle:
                yield line
"""

FSSPEC_PROTOCOL = """import fsspec
import torch
from torch.utils.data import Dataset


class Parts(Dataset):
    def __getitem__(self, index):
        with fsspec.open(f"corpus/part-{index}.pt", "rb", protocol="gcs") as handle:
            return torch.load(handle)


class LocalParts(Dataset):
    def __getitem__(self, index):
        with fsspec.open(f"/data/part-{index}.pt", "rb") as handle:
            return torch.load(handle)
"""

WEBDATASET = """import torch
import webdataset as wds

remote = wds.WebDataset("pipe:aws s3 cp s3://vision-datasets/shards/train-{000000..000999}.tar -")
local = wds.WebDataset("/data/shards/train-{000000..000099}.tar")
"""

TORCHDATA = """import torch
from torchdata.datapipes.iter import IterableWrapper

pipe = IterableWrapper(["s3://vision-datasets/shards/"]).list_files_by_s3().load_files_by_s3()
"""

REQUESTS_GETITEM = """import io

import requests
import torch
from PIL import Image
from torch.utils.data import Dataset

requests.post("https://hooks.example.org/started", json={"job": "train"})


class UrlDataset(Dataset):
    def __init__(self, urls):
        self.urls = urls

    def __getitem__(self, index):
        return Image.open(io.BytesIO(requests.get(self.urls[index], timeout=30).content))
"""

MAP_CALLBACK = """import boto3
import tensorflow as tf

s3 = boto3.client("s3")


def fetch(key):
    return s3.get_object(Bucket="audio", Key=key)["Body"].read()


dataset = tf.data.Dataset.from_tensor_slices(keys).map(lambda k: tf.py_function(fetch, [k], tf.string))
dataset = other.map(fetch)
"""

STEP_LOOP = """import boto3
import torch

s3 = boto3.client("s3")


def train(model, optimizer, keys):
    for key in keys:
        batch = torch.load(s3.get_object(Bucket="batches", Key=key)["Body"])
        loss = model(batch.cuda())
        loss.backward()
        optimizer.step()
"""

LOOKALIKES = """import torch
from torch.utils.data import Dataset


class Cache:
    def get_object(self, Bucket, Key):
        return self.store[(Bucket, Key)]

    def download_file(self, bucket, key, path):
        pass


class Local(Dataset):
    def __init__(self):
        self.cache = Cache()
        self.fs = fsspec.filesystem("file")

    def __getitem__(self, index):
        with self.fs.open(f"/data/{index}.pt") as handle:
            self.cache.get_object(Bucket="b", Key=str(index))
            return torch.load(handle)
"""


def reads(source: str, path: str = "data.py") -> list[dict]:
    return [fact.as_dict() for fact in extract_script_evidence([(path, source)]).of("remote_read")]


def test_boto3_get_object_in_a_datasets_getitem_is_a_per_sample_remote_read_at_its_line():
    (fact,) = reads(BOTO3_GETITEM)
    assert fact["path"] == "data.py" and fact["line"] == 18
    assert fact["code"] == 'body = self.s3.get_object(Bucket="vision-datasets", Key=self.keys[index])["Body"].read()'
    assert (fact["client"], fact["call"], fact["per_sample"], fact["context"]) == (
        "boto3",
        "get_object",
        True,
        "S3ImageDataset.__getitem__",
    )
    assert fact["url"] == "s3://vision-datasets"


def test_a_read_in_a_method_that_getitem_calls_is_per_sample_too():
    (fact,) = reads(BOTO3_HELPER)
    assert (fact["call"], fact["line"], fact["per_sample"]) == ("download_file", 13, True)
    assert fact["context"] == "ShardDataset._fetch, called from ShardDataset.__getitem__"
    assert fact["url"] == "s3://vision-datasets"


def test_a_download_once_before_training_is_not_per_sample():
    (fact,) = reads(BOTO3_STARTUP)
    assert (fact["call"], fact["per_sample"], fact["context"]) == ("download_file", False, "stage")


def test_an_s3fs_filesystems_open_for_reading_is_a_read_and_for_writing_is_not():
    (fact,) = reads(S3FS_GETITEM)
    assert (fact["client"], fact["call"], fact["line"], fact["per_sample"]) == ("s3fs", "open", 12, True)


@pytest.mark.parametrize(
    ("source", "client", "call", "line"),
    [
        (GCS_GETITEM, "google-cloud-storage", "download_as_bytes", 12),
        (AZURE_GETITEM, "azure-storage-blob", "download_blob", 11),
        (SMART_OPEN_ITER, "smart_open", "open", 11),
        (FSSPEC_PROTOCOL, "fsspec", "open", 8),
        (REQUESTS_GETITEM, "requests", "get", 16),
    ],
)
def test_other_object_store_and_http_clients_read_per_sample(source, client, call, line):
    (fact,) = reads(source)  # fsspec without a protocol on a local path, and requests.post at start-up, are none
    assert (fact["client"], fact["call"], fact["line"], fact["per_sample"]) == (client, call, line, True)


def test_streamed_shards_from_remote_storage_are_read_per_sample_and_local_shards_are_not():
    (fact,) = reads(WEBDATASET)
    assert (fact["client"], fact["line"], fact["per_sample"]) == ("webdataset", 4, True)
    assert fact["url"].startswith("pipe:aws s3 cp s3://vision-datasets/shards/")
    (fact,) = reads(TORCHDATA)
    assert (fact["client"], fact["call"], fact["per_sample"]) == ("torchdata", "load_files_by_s3", True)


def test_a_map_callback_and_the_training_step_loop_read_per_sample():
    (fact,) = reads(MAP_CALLBACK)
    assert (fact["line"], fact["per_sample"], fact["context"]) == (8, True, "fetch, called per element by .map")
    (fact,) = reads(STEP_LOOP)
    assert (fact["line"], fact["per_sample"], fact["context"]) == (9, True, "the training-step loop")


POOL_STAGING = """import boto3
from concurrent.futures import ThreadPoolExecutor

s3 = boto3.client("s3")


def fetch(key):
    s3.download_file("vision-datasets", key, f"/local_ssd/{key}")


def stage(keys):
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(fetch, keys))
    objects = s3.Object("vision-datasets", "index.json").get()
"""


HF_DATASETS_MAP = """import boto3
from datasets import load_from_disk

s3 = boto3.client("s3")


def attach_image(example):
    example["image"] = s3.get_object(Bucket="captions", Key=example["key"])["Body"].read()
    return example


dataset = load_from_disk("/data/captions").map(attach_image, num_proc=16)
"""


def test_a_hugging_face_datasets_map_fetches_before_training_not_per_sample():
    # datasets' .map runs eagerly over the whole set (and caches the result) before training starts.
    (fact,) = reads(HF_DATASETS_MAP)
    assert (fact["line"], fact["per_sample"], fact["context"]) == (8, False, "attach_image")


def test_a_bucket_staged_through_a_thread_pool_is_read_once_not_per_sample():
    # A pool's .map runs the download for every key, before training: staging, not a dataset's per-element map.
    fetched, indexed = reads(POOL_STAGING)
    assert (fetched["call"], fetched["per_sample"], fetched["context"]) == ("download_file", False, "fetch")
    assert (indexed["call"], indexed["line"], indexed["per_sample"]) == ("Object.get", 14, False)


def test_lookalike_methods_and_local_filesystems_are_no_remote_reads():
    # get_object and download_file of a class of its own (no object-store client imported), a local fsspec
    # filesystem's open: none reads remote storage.
    assert reads(LOOKALIKES) == []


# --- what the rules make of them -------------------------------------------------------------------------------


def test_a_dataset_that_fetches_each_sample_with_boto3_is_remote_data_reading_quoting_its_line():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("data.py", BOTO3_GETITEM)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert (finding.sub_cause, finding.confidence) == ("object_store", 0.55)
    assert finding.summary == (
        "Training reads its data straight from remote storage (boto3 get_object per sample in "
        "S3ImageDataset.__getitem__, data.py:18)."
    )
    assert [(c.path, c.line) for c in finding.code] == [("data.py", 18)]


def test_a_dataset_that_fetches_each_sample_over_http_is_remote_data_reading():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("data.py", REQUESTS_GETITEM + TRAIN_LOOP)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert finding.sub_cause == "http"
    assert "requests get per sample in UrlDataset.__getitem__, data.py:16" in finding.summary


def test_shards_streamed_from_s3_are_remote_data_reading_named_by_their_stream():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("data.py", WEBDATASET + TRAIN_LOOP)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert finding.sub_cause == "object_store"
    assert finding.summary == (
        "Training reads its data straight from remote storage (webdataset WebDataset streaming pipe:aws s3 cp "
        "s3://vision-datasets/shards/train-{000000..000999}.tar -, data.py:4)."
    )


def test_a_download_once_at_start_up_is_no_remote_reading_but_the_download_phases_code():
    # The same bucket staged once before training: the data download phase (external_data_usage when it lasts),
    # quoted there, and no per-sample remote reading.
    log = "\n".join(
        [
            f"{START:%Y-%m-%d %H:%M:%S},000 INFO Downloading s3://vision-datasets/imagenet/train.tar",
            f"{START + timedelta(minutes=19):%Y-%m-%d %H:%M:%S},000 INFO Downloading s3://vision-datasets/imagenet/val.tar",
            f"{START + timedelta(minutes=20):%Y-%m-%d %H:%M:%S},000 INFO Epoch 1 started",
        ]
    )
    frame = series(120, lambda t, g: 0 if t < 20 else 50, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("train.py", BOTO3_STARTUP)], logs=[("train.log", log)], cpu_count=16)
    found = {f.category: f for f in result.findings}
    assert Category.REMOTE_DATA_READING not in found
    download = found[Category.EXTERNAL_DATA_USAGE]
    assert download.sub_cause == "object_store"
    assert download.summary.startswith("The job fetched models or data from object storage for 19 min")
    assert [(c.path, c.line) for c in download.code] == [("train.py", 9)]


def test_a_loader_without_workers_behind_per_sample_boto3_reads_follows_them():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    source = BOTO3_GETITEM.replace("num_workers=8", "num_workers=0")
    _, result = run(120, frame, scripts=[("data.py", source)], cpu_count=16)
    found = {f.category: f for f in result.findings}
    loader = found[Category.DATA_PREPROCESSING]
    assert (loader.confidence, loader.numbers["contributes_to"]) == (0.4, "remote_data_reading")
    assert loader.numbers["remote_reads"] == "boto3 get_object per sample in S3ImageDataset.__getitem__, data.py:18"


def test_the_fix_for_per_sample_client_reads_shows_the_jobs_own_kind_of_read_made_local():
    # Its before/after was `--data s3://bucket/dataset` -> a sync and `--data /local_ssd/dataset`, a flag the job that
    # fetches each sample with boto3 in __getitem__ does not have.
    from triage.guidance import category_guide, guidance_for

    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("data.py", BOTO3_GETITEM)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert finding.numbers["read_clients"] == ["boto3"]
    guide = guidance_for(
        finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0, price_per_gpu_hour=None, currency="",
        job={"gpu_count": 1},
    )  # fmt: skip
    assert "--data" not in guide["before"] + guide["after"]
    assert 'body = s3.get_object(Bucket=bucket, Key=self.keys[index])["Body"].read()' in guide["before"]
    assert guide["after"].startswith("# once, before training: aws s3 sync s3://bucket/prefix /local_ssd/data\n")
    assert 'open(f"/local_ssd/data/{self.keys[index]}", "rb")' in guide["after"]
    assert guide["change"].startswith("Stage the data on local SSD once before training")
    _, result = run(120, frame, scripts=[("data.py", REQUESTS_GETITEM + TRAIN_LOOP)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    guide = guidance_for(
        finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0, price_per_gpu_hour=None, currency="",
        job={"gpu_count": 1},
    )  # fmt: skip
    assert "body = requests.get(self.urls[index], timeout=30).content" in guide["before"]
    assert "aws s3 sync" not in guide["after"]
    example = category_guide(Category.REMOTE_DATA_READING)["fixes"]["fetched_per_sample"]
    assert "{" not in example[1].replace("{self", "") and "get_object" in example[1]


def _remote_why(numbers: dict) -> str:
    from triage.guidance import guidance_for

    guide = guidance_for(
        Category.REMOTE_DATA_READING, "object_store", numbers, gpu_hours=1.0, price_per_gpu_hour=None, currency="",
        job={"gpu_count": 1},
    )  # fmt: skip
    return guide["why"]


def test_why_the_gpu_idles_says_what_was_found_samples_fetched_one_by_one_or_shards_streamed():
    # It said "Every shard fetched over the network stalls the loader" of a Dataset that fetches each sample with
    # boto3's get_object in __getitem__, which fetches no shard.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("data.py", BOTO3_GETITEM)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    why = _remote_why(finding.numbers)
    assert why == (
        "Each sample is fetched over the network on its own as training asks for it (boto3): a round trip a "
        "sample, so every fetch stalls the loading, and the GPUs with it."
    )
    _, result = run(120, frame, scripts=[("data.py", WEBDATASET + TRAIN_LOOP)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert _remote_why(finding.numbers) == (
        "The loader streams its shards over the network (webdataset): every shard fetched stalls the loading, and "
        "the GPUs with it."
    )
    # Stalls located in the run are said; a job known only by a remote URL keeps the general sentence.
    located = {"read_clients": ["requests"], "stalls": 4, "stall_minutes": 12.4}
    assert _remote_why(located).endswith(
        "(requests): a round trip a sample, so every fetch stalls the loading, and the GPUs with it: they stalled "
        "4 times (12 min) in this job."
    )
    assert _remote_why({"read_clients": [], "stalls": 0}) == (
        "Every shard or sample fetched over the network stalls the loader, and the GPUs with it."
    )


def _stalling_frame_and_log():
    """Five-minute stalls every eight minutes of training, each at a log line that reads s3://."""
    frame = series(240, lambda t, g: 3 if t >= 10 and (t - 10) % 8 < 5 else 80, gpus=8)
    log = "\n".join(
        f"{START + timedelta(minutes=m):%Y-%m-%d %H:%M:%S},000 INFO data: fetching s3://vision-datasets/train/{m:05d}"
        for m in range(10, 234, 8)
    )
    return frame, [("train.log", log)]


def test_the_summary_says_samples_were_fetched_one_by_one_or_shards_streamed_as_the_stalls_happened():
    # It said "while shards were fetched" of a Dataset that fetches each sample with boto3's get_object in
    # __getitem__, which fetches no shard.
    frame, logs = _stalling_frame_and_log()
    _, result = run(240, frame, logs=logs, scripts=[("data.py", BOTO3_GETITEM)], gpu_count=8, cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert finding.time_located and finding.numbers["read_clients"] == ["boto3"]
    assert finding.summary.endswith(
        "; the GPUs stalled 28 times (140 min) while samples were fetched one by one through a client (boto3)."
    )
    _, result = run(240, frame, logs=logs, scripts=[("data.py", WEBDATASET + TRAIN_LOOP)], gpu_count=8, cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert finding.summary.endswith("; the GPUs stalled 28 times (140 min) while shards were streamed (webdataset).")


# --- Hugging Face datasets streaming, fsspec's url_to_fs and open_files ----------------------------------------

HF_STREAMING = """import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("/models/llama-tokenizer")


def tokenize(batch):
    return tokenizer(batch["text"], truncation=True, max_length=2048)


def main(model, optimizer):
    dataset = load_dataset("allenai/c4", "en", split="train", streaming=True)
    dataset = dataset.shuffle(seed=0, buffer_size=10_000).map(tokenize, batched=True, remove_columns=["text"])
    loader = DataLoader(dataset.with_format("torch"), batch_size=16, num_workers=4)
    for batch in loader:
        loss = model(**{key: value.cuda(non_blocking=True) for key, value in batch.items()}).loss
        loss.backward()
        optimizer.step()
"""

HF_STREAMING_DATA_FILES = """import datasets

train = datasets.load_dataset(
    "parquet",
    data_files={"train": "s3://text-corpora/pile/train-*.parquet"},
    split="train",
    streaming=True,
    storage_options={"anon": False},
)
code = datasets.load_dataset("json", data_files="hf://datasets/bigcode/the-stack/data/python/*.jsonl", streaming=True)
local = datasets.load_dataset("json", data_files="/local_ssd/corpus/*.jsonl", split="train", streaming=True)
"""

HF_STREAMING_LAZY_MAP = """import boto3
from datasets import load_dataset

s3 = boto3.client("s3")


def attach_image(example):
    example["image"] = s3.get_object(Bucket="captions", Key=example["key"])["Body"].read()
    return example


dataset = load_dataset("laion/captions", split="train", streaming=True).map(attach_image)
"""


def test_a_streaming_hugging_face_dataset_is_read_per_sample_as_its_shards_stream():
    # load_dataset(..., streaming=True) downloads nothing up front: its IterableDataset pulls the dataset's shards
    # from the Hub as the training loop iterates it. It was a hub_download fact (the download phase's).
    found = extract_script_evidence([("train.py", HF_STREAMING)])
    (fact,) = [f.as_dict() for f in found.of("remote_read")]
    assert (fact["client"], fact["call"], fact["line"], fact["per_sample"]) == ("datasets", "load_dataset", 14, True)
    assert (fact["url"], fact["storage"]) == ("hf://datasets/allenai/c4", "http")
    assert fact["context"] == "a load_dataset stream"
    assert [f.line for f in found.of("hub_download")] == []


def test_streamed_data_files_are_read_where_they_are_and_local_ones_are_not():
    train, code = reads(HF_STREAMING_DATA_FILES)
    assert (train["line"], train["url"], train["storage"], train["per_sample"]) == (
        3, "s3://text-corpora/pile/train-*.parquet", "object_store", True,
    )  # fmt: skip
    assert (code["line"], code["url"], code["storage"]) == (
        10, "hf://datasets/bigcode/the-stack/data/python/*.jsonl", "http",
    )  # fmt: skip


def test_a_dataset_loaded_without_streaming_stays_the_download_phases():
    source = HF_STREAMING.replace(", streaming=True", "")
    found = extract_script_evidence([("train.py", source)])
    assert found.of("remote_read") == []
    assert [(f.line, f.detail["source"]) for f in found.of("hub_download")] == [(14, "allenai/c4")]


def test_a_streaming_datasets_map_runs_as_samples_are_drawn():
    # An IterableDataset's .map is lazy (unlike a Dataset's, which maps the whole set once and caches it).
    stream, fetched = sorted(reads(HF_STREAMING_LAZY_MAP), key=lambda fact: fact["client"])[::-1]
    assert (fetched["client"], fetched["line"], fetched["per_sample"]) == ("boto3", 8, True)
    assert fetched["context"] == "attach_image, called per element by .map"
    assert (stream["client"], stream["line"]) == ("datasets", 12)


def test_streaming_from_the_hub_is_remote_data_reading_not_a_download():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("train.py", HF_STREAMING)], cpu_count=16)
    found = {f.category: f for f in result.findings}
    finding = found[Category.REMOTE_DATA_READING]
    assert finding.sub_cause == "http"
    assert finding.summary == (
        "Training reads its data straight from remote storage (datasets load_dataset streaming "
        "hf://datasets/allenai/c4, train.py:14)."
    )
    # A head idle for 20 min: loaded without streaming, that is the download phase quoting load_dataset; streamed,
    # nothing was downloaded before training.
    frame = series(120, lambda t, g: 0 if t < 20 else 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("train.py", HF_STREAMING.replace(", streaming=True", ""))], cpu_count=16)
    download = {f.category: f for f in result.findings}[Category.EXTERNAL_DATA_USAGE]
    assert [(c.path, c.line) for c in download.code] == [("train.py", 14)]
    _, result = run(120, frame, scripts=[("train.py", HF_STREAMING)], cpu_count=16)
    assert Category.EXTERNAL_DATA_USAGE not in {f.category for f in result.findings}


URL_TO_FS = """import fsspec
import torch
from torch.utils.data import Dataset

FEATURES = "gs://speech-corpus/features"
fs, root = fsspec.core.url_to_fs(FEATURES)
local_fs, local_root = fsspec.url_to_fs("/local_ssd/features")


class Features(Dataset):
    def __init__(self):
        self.fs, self.root = fsspec.url_to_fs(FEATURES, anon=False)

    def __getitem__(self, index):
        with self.fs.open(f"{self.root}/{index:06d}.pt", "rb") as handle:
            return torch.load(handle)


def load(index):
    return torch.load(local_fs.open(f"{local_root}/{index:06d}.pt"))


def collate(keys):
    return [torch.load(fs.open(f"{root}/{key}.pt")) for key in keys]
"""

OPEN_FILES = """import fsspec
import torch
from torch.utils.data import Dataset

SHARDS = "s3://vision-datasets/features/part-*.pt"


class Parts(Dataset):
    def __init__(self):
        self.files = fsspec.open_files(SHARDS, "rb")

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        with self.files[index] as handle:
            return torch.load(handle)


class LocalParts(Dataset):
    def __init__(self):
        self.files = fsspec.open_files("/local_ssd/features/part-*.pt", "rb")

    def __getitem__(self, index):
        return torch.load(self.files[index].open())
"""


def test_reads_through_a_filesystem_from_url_to_fs_are_found_and_a_local_ones_are_not():
    found = reads(URL_TO_FS + "\n\nloader = DataLoader(Features(), collate_fn=collate)\n")
    assert [(f["client"], f["call"], f["line"], f["per_sample"], f["storage"]) for f in found] == [
        ("fsspec", "open", 15, True, "object_store"),
        ("fsspec", "open", 24, True, "object_store"),
    ]
    assert found[0]["context"] == "Features.__getitem__"


def test_files_from_open_files_are_read_where_they_are_opened_not_where_they_are_listed():
    # fsspec.open_files only lists the files (each opened when entered): the read is the `with` in __getitem__.
    (fact,) = reads(OPEN_FILES)
    assert (fact["client"], fact["call"], fact["line"], fact["per_sample"]) == ("fsspec", "open", 16, True)
    assert (fact["url"], fact["context"]) == ("s3://vision-datasets/features/part-*.pt", "Parts.__getitem__")
    both = reads(OPEN_FILES.replace('"/local_ssd/features/part-*.pt"', "SHARDS"))
    assert [(f["line"], f["context"]) for f in both] == [(16, "Parts.__getitem__"), (25, "LocalParts.__getitem__")]


# --- one source of truth for shards and samples ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "client"),
    [
        (BOTO3_GETITEM, "boto3"),
        (S3FS_GETITEM, "s3fs"),
        (REQUESTS_GETITEM, "requests"),
        (OPEN_FILES, "fsspec"),
        (WEBDATASET, "webdataset"),
        (TORCHDATA, "torchdata"),
        (HF_STREAMING, "datasets"),
    ],
)
def test_a_clients_reads_are_described_as_shards_or_samples_alike_in_the_summary_and_the_guidance(source, client):
    # The summary's "while samples were fetched one by one ..." / "while shards were streamed ..." and the guidance's
    # why the GPUs idle ("Each sample is fetched ..." / "The loader streams its shards ...") said it from two lists.
    from triage.evidence.remote_reads import read_kind
    from triage.rules.data import _fetched

    facts = [f for f in extract_script_evidence([("data.py", source)]).of("remote_read") if f.detail["per_sample"]]
    assert {f.detail["client"] for f in facts} == {client}
    kind = read_kind(client)
    summary = _fetched(facts)
    why = _remote_why({"read_clients": [client]})
    if kind == "shards":
        assert (summary, why) == (
            f"shards were streamed ({client})",
            f"The loader streams its shards over the network ({client}): every shard fetched stalls the loading, "
            "and the GPUs with it.",
        )
    else:
        assert summary == f"samples were fetched one by one through a client ({client})"
        assert why.startswith(f"Each sample is fetched over the network on its own as training asks for it ({client})")


def _guide(finding) -> dict:
    from triage.guidance import guidance_for

    return guidance_for(
        finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0, price_per_gpu_hour=None, currency="",
        job={"gpu_count": 1},
    )  # fmt: skip


def test_the_fix_for_a_streamed_hugging_face_dataset_stages_it_and_loads_the_local_copy():
    # It showed `--data s3://bucket/dataset` -> `aws s3 sync`, a flag a job that streams allenai/c4 from the Hub lacks.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("train.py", HF_STREAMING)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    guide = _guide(finding)
    assert guide["why"].startswith("The loader streams its shards over the network (datasets)")
    assert guide["before"] == 'ds = load_dataset("org/dataset", split="train", streaming=True)'
    assert guide["after"] == (
        "# once, before training: huggingface-cli download org/dataset --repo-type dataset --local-dir "
        "/local_ssd/dataset\n"
        'ds = load_dataset("/local_ssd/dataset", split="train", streaming=True)'
    )
    assert guide["change"].startswith("Download the dataset to local SSD once before training")
    # Streamed from data files in a bucket: the bucket is synced instead.
    source = HF_STREAMING_DATA_FILES.split("code = ")[0] + TRAIN_LOOP
    _, result = run(120, frame, scripts=[("train.py", source)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    guide = _guide(finding)
    assert guide["before"] == 'ds = load_dataset("parquet", data_files="s3://bucket/prefix/*.parquet", streaming=True)'
    assert guide["after"].startswith("# once, before training: aws s3 sync s3://bucket/prefix /local_ssd/data\n")


# --- boto3 resources, pools by name, a filesystem per class, open_files iterated -------------------------------

BOTO3_RESOURCE = """import io

import boto3
import torch
from PIL import Image
from torch.utils.data import Dataset

BUCKET = "vision-datasets"


class Images(Dataset):
    def __init__(self, keys):
        self.keys = keys

    def __getitem__(self, index):
        body = boto3.resource("s3").Object(BUCKET, self.keys[index]).get()["Body"].read()
        return Image.open(io.BytesIO(body))


s3 = boto3.resource("s3")


class Captioned(Dataset):
    def __init__(self, keys):
        self.keys = keys

    def __getitem__(self, index):
        caption = s3.Object("captions", self.keys[index]).get()["Body"].read().decode()
        s3.Bucket("vision-datasets").download_file(f"images/{self.keys[index]}.jpg", "/tmp/image.jpg")
        return Image.open("/tmp/image.jpg"), caption
"""


def test_reads_through_a_boto3_resources_object_and_bucket_are_per_sample_reads_with_their_bucket():
    # boto3.resource("s3").Object(bucket, key).get(), made on the spot in __getitem__, was no read at all.
    found = reads(BOTO3_RESOURCE)
    assert [(f["line"], f["client"], f["call"], f["url"], f["per_sample"], f["context"]) for f in found] == [
        (16, "boto3", "Object.get", "s3://vision-datasets", True, "Images.__getitem__"),
        (28, "boto3", "Object.get", "s3://captions", True, "Captioned.__getitem__"),
        (29, "boto3", "download_file", "s3://vision-datasets", True, "Captioned.__getitem__"),
    ]


def test_an_object_reached_through_some_other_call_is_no_boto3_read():
    # Only a resource's (or a bucket's) Object is an S3 object: a cache's lookup(...).Object(...).get() reads nothing.
    source = BOTO3_RESOURCE.replace('boto3.resource("s3").Object', "cache.lookup(BUCKET).Object")
    assert [f["line"] for f in reads(source)] == [28, 29]


POOL_IN_A_DICT = """import boto3
import tensorflow as tf
from concurrent.futures import ThreadPoolExecutor

s3 = boto3.client("s3")
executors = {}
executors["upload"] = ThreadPoolExecutor(max_workers=2)


def load(key):
    return s3.get_object(Bucket="audio-corpus", Key=key.decode())["Body"].read()


def make_dataset(keys):
    return tf.data.Dataset.from_tensor_slices(keys).map(
        lambda key: tf.numpy_function(load, [key], tf.string), num_parallel_calls=tf.data.AUTOTUNE
    )
"""


def test_a_pool_kept_in_a_dict_makes_no_other_map_a_pool_map():
    # `executors["upload"] = ThreadPoolExecutor(...)` made every .map on a call's result (from_tensor_slices(...).map)
    # count as a pool's, so tf.data's per-element load read as a download once before training.
    (fact,) = reads(POOL_IN_A_DICT)
    assert (fact["line"], fact["per_sample"], fact["context"]) == (11, True, "load, called per element by .map")


def test_a_pools_map_stages_whether_the_pool_is_named_or_used_where_it_is_made():
    made_on_the_spot = POOL_STAGING.replace(
        "    with ThreadPoolExecutor(16) as pool:\n        list(pool.map(fetch, keys))\n",
        "    list(ThreadPoolExecutor(16).map(fetch, keys))\n",
    )
    assert "ThreadPoolExecutor(16).map" in made_on_the_spot
    for source in (POOL_STAGING, made_on_the_spot):
        fetched, _ = reads(source)
        assert (fetched["call"], fetched["per_sample"], fetched["context"]) == ("download_file", False, "fetch")


FILESYSTEM_PER_CLASS = """import fsspec
import requests
import s3fs
import torch
from sqlalchemy.orm import Session
from torch.utils.data import Dataset


class RemoteShards(Dataset):
    def __init__(self, root):
        self.fs = s3fs.S3FileSystem(anon=False)
        self.root = root

    def __getitem__(self, index):
        with self.fs.open(f"{self.root}/part-{index:05d}.pt", "rb") as handle:
            return torch.load(handle)


class AugmentedShards(RemoteShards):
    def __getitem__(self, index):
        with self.fs.open(f"{self.root}/part-{index:05d}.pt", "rb") as handle:
            return augment(torch.load(handle))


class CachedShards(RemoteShards):
    def __init__(self, root):
        super().__init__(root)
        self.fs = fsspec.filesystem("file")

    def __getitem__(self, index):
        with self.fs.open(f"/local_ssd/shards/part-{index:05d}.pt", "rb") as handle:
            return torch.load(handle)


class Captions(Dataset):
    def __init__(self, engine):
        self.session = Session(engine)

    def __getitem__(self, index):
        return self.session.get(Caption, index).text


class Reporter:
    def __init__(self):
        self.session = requests.Session()

    def poll(self, url):
        return self.session.get(url).json()
"""


def test_a_filesystem_or_session_bound_to_self_is_the_one_its_own_class_binds():
    # self.fs of RemoteShards (s3fs) made CachedShards' local self.fs a remote one too, and Reporter's requests
    # session made Captions' database session's get an HTTP read per sample.
    found = reads(FILESYSTEM_PER_CLASS)
    assert [(f["line"], f["client"], f["per_sample"], f["context"]) for f in found] == [
        (15, "s3fs", True, "RemoteShards.__getitem__"),
        (21, "s3fs", True, "AugmentedShards.__getitem__"),  # inherits RemoteShards' filesystem
    ]


SHARDS_GS = "gs://speech-corpus/features/part-*.pt"
OPEN_FILES_ITERATED = """import shutil

import fsspec
import torch
from torch.utils.data import IterableDataset

SHARDS = "gs://speech-corpus/features/part-*.pt"
files = fsspec.open_files(SHARDS, "rb")


class FeatureStream(IterableDataset):
    def __init__(self):
        self.files = fsspec.open_files(SHARDS, "rb")

    def __iter__(self):
        for shard in self.files:
            with shard as handle:
                yield from torch.load(handle)


def stage():
    for index, remote in enumerate(files):
        with remote as source, open(f"/local_ssd/features/{index}.pt", "wb") as target:
            shutil.copyfileobj(source, target)
"""


def test_files_from_open_files_are_read_where_a_loop_over_them_enters_them():
    # `for shard in self.files: with shard as handle:` was no read (only files[index] was).
    found = reads(OPEN_FILES_ITERATED)
    assert [(f["line"], f["client"], f["call"], f["url"], f["per_sample"], f["context"]) for f in found] == [
        (17, "fsspec", "open", SHARDS_GS, True, "FeatureStream.__iter__"),
        (23, "fsspec", "open", SHARDS_GS, False, "stage"),
    ]
    opened = OPEN_FILES_ITERATED.replace("with shard as handle:", "with shard.open() as handle:")
    assert [(f["line"], f["per_sample"]) for f in reads(opened)] == [(17, True), (23, False)]


def test_a_dataset_reading_each_sample_through_a_boto3_resource_is_remote_data_reading():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    source = BOTO3_RESOURCE.split("\n\ns3 = ")[0] + TRAIN_LOOP
    _, result = run(120, frame, scripts=[("data.py", source)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert (finding.sub_cause, finding.numbers["read_clients"]) == ("object_store", ["boto3"])
    assert finding.summary == (
        "Training reads its data straight from remote storage (boto3 Object.get per sample in Images.__getitem__, "
        "data.py:16)."
    )


# --- plain names by function scope, annotated bindings, a bound Object, slices of an open_files list -------------

FILESYSTEM_PER_FUNCTION = """import fsspec
import s3fs
import torch
from torch.utils.data import DataLoader, Dataset

remote = s3fs.S3FileSystem(anon=False)


def stage(keys):
    fs = s3fs.S3FileSystem(anon=False)
    for key in keys:
        fs.get(f"vision-datasets/{key}", f"/local_ssd/{key}")


class LocalShards(Dataset):
    def __init__(self, keys):
        self.keys = keys

    def __getitem__(self, index):
        fs = fsspec.filesystem("file")
        with fs.open(f"/local_ssd/{self.keys[index]}", "rb") as handle:
            return torch.load(handle)


def load(fs, key):
    with fs.open(key, "rb") as handle:
        return torch.load(handle)


class RemoteShards(Dataset):
    def __getitem__(self, index):
        with remote.open(f"vision-datasets/part-{index:05d}.pt", "rb") as handle:
            return torch.load(handle)


def make_loader(keys):
    fs = s3fs.S3FileSystem(anon=False)

    def fetch(batch):
        return [torch.load(fs.open(f"vision-datasets/{key}")) for key in batch]

    return DataLoader(keys, batch_size=32, collate_fn=fetch)
"""


def test_a_plain_name_is_the_one_its_function_binds_else_the_enclosing_or_module_ones():
    # `fs = s3fs.S3FileSystem()` in stage() made every other `fs` in the file remote: __getitem__'s local filesystem
    # (fsspec.filesystem("file")) and load's parameter. A module-level filesystem is seen by functions that do not
    # rebind it, and a closure sees its enclosing function's.
    found = reads(FILESYSTEM_PER_FUNCTION)
    assert [(f["line"], f["client"], f["call"], f["per_sample"], f["context"]) for f in found] == [
        (12, "s3fs", "get", False, "stage"),
        (32, "s3fs", "open", True, "RemoteShards.__getitem__"),
        (40, "s3fs", "open", True, "fetch, called per batch as collate_fn"),
    ]
    # A function that declares the name global binds the module's.
    declared = FILESYSTEM_PER_FUNCTION.replace(
        "def stage(keys):\n    fs = ", "def stage(keys):\n    global remote\n    remote = "
    ).replace('        fs.get(f"vision', '        remote.get(f"vision')
    assert [(f["line"], f["context"]) for f in reads(declared)][:2] == [(13, "stage"), (33, "RemoteShards.__getitem__")]


ANNOTATED_FILESYSTEM = """import s3fs
import torch
from fsspec import AbstractFileSystem
from torch.utils.data import Dataset

fs: AbstractFileSystem = s3fs.S3FileSystem(anon=False)


class Shards(Dataset):
    def __init__(self, root: str):
        self.remote: s3fs.S3FileSystem = s3fs.S3FileSystem(anon=False)
        self.root = root

    def __getitem__(self, index):
        with self.remote.open(f"{self.root}/part-{index:05d}.pt", "rb") as handle:
            return torch.load(handle)


def collate(keys):
    return [torch.load(fs.open(f"vision-datasets/{key}.pt")) for key in keys]
"""


def test_a_filesystem_bound_with_an_annotation_is_followed():
    found = reads(ANNOTATED_FILESYSTEM + "\n\nloader = DataLoader(Shards('s3://b'), collate_fn=collate)\n")
    assert [(f["line"], f["client"], f["call"], f["per_sample"]) for f in found] == [
        (15, "s3fs", "open", True),
        (20, "s3fs", "open", True),
    ]


BOTO3_OBJECT_BOUND = """import io

import boto3
import torch
from PIL import Image
from torch.utils.data import Dataset

s3 = boto3.resource("s3")


class Images(Dataset):
    def __init__(self, keys):
        self.keys = keys
        self.cache = {}

    def __getitem__(self, index):
        obj = s3.Object("vision-datasets", self.keys[index])
        body = obj.get()["Body"].read()
        self.cache.get(index)
        return Image.open(io.BytesIO(body))
"""


def test_a_boto3_object_bound_to_a_name_and_then_read_is_a_read():
    (fact,) = reads(BOTO3_OBJECT_BOUND)  # the dict's get is none
    assert (fact["line"], fact["client"], fact["call"], fact["url"], fact["per_sample"], fact["context"]) == (
        18,
        "boto3",
        "Object.get",
        "s3://vision-datasets",
        True,
        "Images.__getitem__",
    )
    bound_to_self = BOTO3_OBJECT_BOUND.replace("        obj = s3.Object", "        self.obj = s3.Object").replace(
        "obj.get()", "self.obj.get()"
    )
    assert [f["line"] for f in reads(bound_to_self)] == [18]


@pytest.mark.parametrize(
    "view", ["self.files[:8]", "self.files[self.start : self.end]", "self.files[::2]", "reversed(self.files)"]
)
def test_a_loop_over_a_slice_of_an_open_files_list_enters_its_files(view):
    source = OPEN_FILES_ITERATED.replace("for shard in self.files:", f"for shard in {view}:")
    found = reads(source)
    assert [(f["line"], f["url"], f["per_sample"], f["context"]) for f in found] == [
        (17, SHARDS_GS, True, "FeatureStream.__iter__"),
        (23, SHARDS_GS, False, "stage"),
    ]


LAMBDA_CALLBACKS = """import boto3
import requests
import tensorflow as tf
import torch
from torch.utils.data import DataLoader

BASE = "https://cdn.example.com/frames/"
session = requests.Session()
s3 = boto3.client("s3")


def loaders(dataset, keys, bucket):
    images = DataLoader(dataset, batch_size=64, collate_fn=lambda batch: [session.get(BASE + k).content for k in batch])
    records = tf.data.Dataset.from_tensor_slices(keys).map(
        lambda key: s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    )
    return images, records


def stage(keys):
    for key in sorted(keys, key=lambda k: s3.get_object(Bucket="vision-datasets", Key=k)["ContentLength"]):
        s3.download_file("vision-datasets", key, f"/local_ssd/{key}")
"""


def test_a_lambda_handed_as_collate_fn_or_a_map_callback_reads_per_sample():
    # The lambda's reads were the enclosing function's (loaders, called once), so a fetch per batch or per element
    # read as a download once. A lambda used anywhere else (a sort key in stage) is still its function's.
    found = reads(LAMBDA_CALLBACKS)
    assert [(f["line"], f["client"], f["call"], f["per_sample"], f["context"]) for f in found] == [
        (13, "requests", "get", True, "a lambda at line 13, called per batch as collate_fn"),
        (15, "boto3", "get_object", True, "a lambda at line 15, called per element by .map"),
        (21, "boto3", "get_object", False, "stage"),
        (22, "boto3", "download_file", False, "stage"),
    ]


def test_a_loader_whose_collate_fn_lambda_fetches_each_batch_is_remote_data_reading():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    script = LAMBDA_CALLBACKS + TRAIN_LOOP
    _, result = run(120, frame, scripts=[("data.py", script)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert "requests get per sample in a lambda at line 13, called per batch as collate_fn, data.py:13" in (
        finding.summary
    )


PYARROW_FILESYSTEMS = """import pyarrow.dataset as ds
import pyarrow.parquet as pq
import torch
from pyarrow import fs
from torch.utils.data import Dataset

s3 = fs.S3FileSystem(region="us-east-1")


class ParquetShards(Dataset):
    def __init__(self, paths):
        self.paths = paths
        self.gcs = fs.GcsFileSystem()

    def __getitem__(self, index):
        table = pq.read_table(self.paths[index], filesystem=s3)
        with self.gcs.open_input_file(f"speech-corpus/{index}.npy") as handle:
            audio = handle.read()
        return table, audio


class Features(torch.utils.data.IterableDataset):
    def __init__(self, uri):
        self.fs, self.root = fs.FileSystem.from_uri("s3://features/train")
        self.local, self.cache = fs.FileSystem.from_uri("file:///local_ssd/cache")

    def __iter__(self):
        for fragment in ds.dataset(self.root, filesystem=self.fs, format="parquet").get_fragments():
            yield fragment.to_table()
        with self.local.open_input_stream(self.cache + "/extra.arrow") as handle:
            yield handle.read()


def stage():
    hdfs = fs.HadoopFileSystem("namenode", 8020)
    with hdfs.open_input_stream("/datasets/index.parquet") as handle:
        return pq.read_table(handle)
"""


def test_reads_through_pyarrow_filesystems_are_remote_reads_and_a_local_uri_is_not():
    found = reads(PYARROW_FILESYSTEMS)
    assert [(f["line"], f["client"], f["call"], f["url"], f["storage"], f["per_sample"]) for f in found] == [
        (16, "pyarrow", "read_table", None, "object_store", True),
        (17, "pyarrow", "open_input_file", "gs://speech-corpus/", "object_store", True),
        (28, "pyarrow", "dataset", None, "object_store", True),
        (36, "pyarrow", "open_input_stream", "hdfs:///datasets/index.parquet", "hdfs", False),
    ]


def test_a_dataset_reading_parquet_through_a_pyarrow_s3_filesystem_is_remote_data_reading():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("data.py", PYARROW_FILESYSTEMS + TRAIN_LOOP)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert finding.sub_cause == "object_store"
    assert "pyarrow read_table per sample in ParquetShards.__getitem__, data.py:16" in finding.summary
    assert finding.numbers["read_clients"] == ["pyarrow"]


FILESYSTEM_HANDED_IN = """import fsspec
import s3fs
import torch
from torch.utils.data import DataLoader, Dataset


class Shards(Dataset):
    def __init__(self, fs, root):
        self.fs = fs
        self.root = root

    def __getitem__(self, index):
        with self.fs.open(f"{self.root}/part-{index:05d}.pt", "rb") as handle:
            return torch.load(handle)


class Cached(Dataset):
    def __init__(self, root, filesystem=None):
        self.fs = filesystem
        self.root = root

    def __getitem__(self, index):
        with self.fs.open(f"{self.root}/{index}.pt", "rb") as handle:
            return torch.load(handle)


def main():
    fs = s3fs.S3FileSystem(anon=False)
    fs.get("vision-datasets/index.json", "/tmp/index.json")
    train = DataLoader(Shards(fs, "vision-datasets/train"), batch_size=64, num_workers=8)
    cache = DataLoader(Cached("/local_ssd/cache", filesystem=fsspec.filesystem("file")), batch_size=64)
    return train, cache
"""


def test_a_remote_filesystem_handed_to_a_datasets_constructor_is_read_through_its_attribute():
    # `Shards(fs, ...)` with `self.fs = fs` in __init__: the s3fs filesystem made in main() is the one __getitem__
    # opens each sample with. The local filesystem handed to Cached (by keyword) stays no remote read.
    found = reads(FILESYSTEM_HANDED_IN)
    assert [(f["line"], f["client"], f["call"], f["per_sample"], f["context"]) for f in found] == [
        (13, "s3fs", "open", True, "Shards.__getitem__"),
        (29, "s3fs", "get", False, "main"),
    ]
    by_keyword = FILESYSTEM_HANDED_IN.replace('Shards(fs, "vision-datasets/train")', 'Shards(root="v/train", fs=fs)')
    assert [f["line"] for f in reads(by_keyword)] == [13, 29]
    local = FILESYSTEM_HANDED_IN.replace("fs = s3fs.S3FileSystem(anon=False)", 'fs = fsspec.filesystem("file")')
    assert reads(local) == []


def test_a_lambda_bound_to_a_name_and_handed_as_collate_fn_reads_per_sample():
    source = LAMBDA_CALLBACKS.replace(
        "    images = DataLoader(dataset, batch_size=64, collate_fn=lambda batch: [",
        "    fetch_batch = lambda batch: [",
    ).replace(
        "for k in batch])\n",
        "for k in batch]  # noqa: E731\n    images = DataLoader(dataset, batch_size=64, collate_fn=fetch_batch)\n",
    )
    found = reads(source)
    assert [(f["line"], f["call"], f["per_sample"], f["context"]) for f in found][:2] == [
        (13, "get", True, "fetch_batch, called per batch as collate_fn"),
        (16, "get_object", True, "a lambda at line 16, called per element by .map"),
    ]


STEP_LOOP_LAMBDA = """import boto3
import torch

s3 = boto3.client("s3")


def train(model, optimizer, loader):
    for batch in loader:
        fetch = lambda key: s3.get_object(Bucket="captions", Key=key)["Body"].read()  # noqa: E731
        captions = [fetch(key) for key in batch["keys"]]
        loss = model(batch["images"].cuda(), captions)
        loss.backward()
        optimizer.step()
"""


def test_a_lambda_bound_to_a_name_in_the_training_step_loop_reads_per_step():
    (fact,) = reads(STEP_LOOP_LAMBDA)
    assert (fact["line"], fact["per_sample"], fact["context"]) == (9, True, "the training-step loop")


# --- functools.partial callbacks, bindings in statement order, a filesystem handed on ---------------------------

PARTIAL_CALLBACKS = """import functools
from functools import partial

import boto3
import tensorflow as tf
from torch.utils.data import DataLoader

s3 = boto3.client("s3")


def fetch_batch(bucket, keys):
    return [s3.get_object(Bucket=bucket, Key=key)["Body"].read() for key in keys]


def fetch(key, bucket):
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def loaders(dataset, keys):
    collate = partial(fetch_batch, "vision-datasets")
    images = DataLoader(dataset, batch_size=64, collate_fn=collate)
    load = functools.partial(fetch, bucket="audio-corpus")
    records = tf.data.Dataset.from_tensor_slices(keys).map(load)
    return images, records
"""


@pytest.mark.parametrize(
    "handed",
    [
        "bound to a name",
        "handed directly",
    ],
)
def test_a_function_wrapped_in_functools_partial_and_handed_as_a_callback_reads_per_sample(handed):
    # `collate = partial(fetch_batch, bucket)` then `collate_fn=collate` left fetch_batch's get_object a read once.
    source = PARTIAL_CALLBACKS
    if handed == "handed directly":
        source = source.replace("collate_fn=collate)", 'collate_fn=partial(fetch_batch, "vision-datasets"))')
        source = source.replace(".map(load)", '.map(functools.partial(fetch, bucket="audio-corpus"))')
    found = reads(source)
    assert [(f["line"], f["per_sample"], f["context"]) for f in found] == [
        (12, True, "fetch_batch, called per batch as collate_fn"),
        (16, True, "fetch, called per element by .map"),
    ]


PARTIAL_METHOD = """import functools

import requests
from torch.utils.data import DataLoader


class Captions:
    def __init__(self, base):
        self.base = base
        self.session = requests.Session()
        self.collate = functools.partial(self._fetch, timeout=30)

    def _fetch(self, keys, timeout):
        return [self.session.get(self.base + key, timeout=timeout).text for key in keys]

    def loader(self, keys):
        return DataLoader(keys, batch_size=32, collate_fn=self.collate)
"""


def test_a_method_wrapped_in_partial_and_bound_to_self_is_followed_too():
    (fact,) = reads(PARTIAL_METHOD)
    assert (fact["line"], fact["client"], fact["per_sample"], fact["context"]) == (
        14, "requests", True, "Captions._fetch, called per batch as collate_fn",
    )  # fmt: skip


def test_a_partial_of_something_other_than_functools_partial_is_not_followed():
    source = PARTIAL_CALLBACKS.replace("from functools import partial\n", "from toolz import partial\n")
    found = reads(source)
    assert [(f["line"], f["per_sample"]) for f in found] == [(12, False), (16, True)]


REBOUND_FILESYSTEMS = """import fsspec
import s3fs
import torch
from fsspec.implementations.local import LocalFileSystem


def collate(keys):
    fs = LocalFileSystem()
    cached = [torch.load(fs.open(f"/local_ssd/{key}.pt")) for key in keys]
    fs = s3fs.S3FileSystem(anon=False)
    return cached + [torch.load(fs.open(f"vision-datasets/{key}.pt")) for key in keys]


def stage_then_load(keys):
    fs = s3fs.S3FileSystem(anon=False)
    fs.get("vision-datasets/index.json", "/local_ssd/index.json")
    fs = fsspec.filesystem("file")
    return [torch.load(fs.open(f"/local_ssd/{key}.pt")) for key in keys]


def either(path, local):
    if local:
        fs = fsspec.filesystem("file")
    else:
        fs = s3fs.S3FileSystem(anon=False)
    return torch.load(fs.open(path, "rb"))


def made_when_needed(path, remote):
    fs = None
    if remote:
        fs = s3fs.S3FileSystem(anon=False)
    return torch.load(fs.open(path, "rb"))
"""


def test_the_binding_in_effect_at_a_read_decides_in_statement_order():
    # Any remote binding of `fs` in a function made every fs.open there remote: the local reads before the
    # s3fs filesystem was made (collate), and after a local one replaced it (stage_then_load). Where branches
    # bind a local filesystem on one path and a remote one on the other (either), which one reads cannot be
    # told, and a read is claimed only where it can (as a computed mode or data_files is none); a name set to
    # None first (made_when_needed) can only be read through once the filesystem is made.
    found = reads(REBOUND_FILESYSTEMS)
    assert [(f["line"], f["call"], f["context"]) for f in found] == [
        (11, "open", "collate"),
        (16, "get", "stage_then_load"),
        (33, "open", "made_when_needed"),
    ]


def test_a_module_level_name_is_the_one_bound_last_at_module_level():
    # A function runs after the module's body: the local filesystem bound last is the one it reads through.
    source = REBOUND_FILESYSTEMS + '\nremote = s3fs.S3FileSystem(anon=False)\nremote = fsspec.filesystem("file")\n'
    source += '\n\ndef load(key):\n    return torch.load(remote.open(f"/local_ssd/{key}.pt"))\n'
    assert [f["line"] for f in reads(source)] == [11, 16, 33]
    swapped = source.replace(
        'remote = s3fs.S3FileSystem(anon=False)\nremote = fsspec.filesystem("file")',
        'remote = fsspec.filesystem("file")\nremote = s3fs.S3FileSystem(anon=False)',
    )
    assert [f["line"] for f in reads(swapped)] == [11, 16, 33, 40]


FILESYSTEM_HANDED_ON = """import fsspec
import s3fs
import torch
from torch.utils.data import Dataset


class Store:
    def __init__(self, fs):
        self.fs = fs


class Shards(Dataset):
    def __init__(self, root, fs=None):
        self.fs = fs or fsspec.filesystem("s3")
        self.root = root

    def __getitem__(self, index):
        with self.fs.open(f"{self.root}/part-{index:05d}.pt", "rb") as handle:
            return torch.load(handle)


class Features(Dataset):
    def __init__(self, fs):
        self._store = Store(fs)

    def __getitem__(self, index):
        with self._store.fs.open(f"features/{index}.pt", "rb") as handle:
            return torch.load(handle)


def main():
    fs = s3fs.S3FileSystem(anon=False)
    store = Store(fs)
    store.fs.get("vision-datasets/index.json", "/local_ssd/index.json")
    return Shards("vision-datasets/train"), Features(fs)
"""


def test_a_filesystem_made_as_a_default_or_handed_on_to_another_class_is_followed():
    # `self.fs = fs or fsspec.filesystem("s3")` (the default when none is handed) and `self._store = Store(fs)` then
    # `self._store.fs.open(...)` (handed on one class further) were no reads: only `self.fs = fs` was followed.
    found = reads(FILESYSTEM_HANDED_ON)
    assert [(f["line"], f["client"], f["call"], f["per_sample"], f["context"]) for f in found] == [
        (18, "fsspec", "open", True, "Shards.__getitem__"),
        (27, "s3fs", "open", True, "Features.__getitem__"),
        (34, "s3fs", "get", False, "main"),
    ]
    local = FILESYSTEM_HANDED_ON.replace('fs or fsspec.filesystem("s3")', 'fs or fsspec.filesystem("file")').replace(
        "fs = s3fs.S3FileSystem(anon=False)", 'fs = fsspec.filesystem("file")'
    )
    assert reads(local) == []
    handed = local.replace('Shards("vision-datasets/train")', 'Shards("vision-datasets/train", remote)').replace(
        "    return Shards(", "    remote = s3fs.S3FileSystem(anon=False)\n    return Shards("
    )
    assert [(f["line"], f["context"]) for f in reads(handed)] == [(18, "Shards.__getitem__")]


@pytest.mark.parametrize(
    ("collate", "quoted"),
    [
        ("collate", "s3fs open per sample in collate, called per batch as collate_fn, data.py:11"),
        ("made_when_needed", "s3fs open per sample in made_when_needed, called per batch as collate_fn, data.py:33"),
        ("either", None),
    ],
)
def test_a_collate_fn_reading_through_a_rebound_filesystem_is_remote_data_reading_where_the_remote_one_reads(
    collate, quoted
):
    # collate's finding quoted its local read (data.py:9) and either's, which may read locally, was one.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    script = REBOUND_FILESYSTEMS + f"\n\nloader = DataLoader(keys, batch_size=32, collate_fn={collate})\n" + TRAIN_LOOP
    _, result = run(120, frame, scripts=[("data.py", script)], cpu_count=16)
    found = [f.summary for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert found == ([f"Training reads its data straight from remote storage ({quoted})."] if quoted else [])


def test_a_loader_whose_collate_fn_is_a_partial_of_a_fetching_function_is_remote_data_reading():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("data.py", PARTIAL_CALLBACKS + TRAIN_LOOP)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert "boto3 get_object per sample in fetch_batch, called per batch as collate_fn, data.py:12" in finding.summary


DATA_ROOT_FLAG = """import argparse

import fsspec
import pyarrow.parquet as pq
import torch
from torch.utils.data import DataLoader, Dataset


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-root", default="/local_ssd/shards")
    parser.add_argument("--images", dest="image_root", default="/local_ssd/images")
    parser.add_argument("--epochs", type=int, default=3)
    return parser.parse_args()


class Shards(Dataset):
    def __init__(self, root, split):
        self.fs, path = fsspec.core.url_to_fs(root)
        self.shards = sorted(self.fs.glob(f"{path}/{split}-*.parquet"))

    def __getitem__(self, index):
        with self.fs.open(self.shards[index], "rb") as handle:
            return pq.read_table(handle).to_pylist()[0]


class Images(Dataset):
    def __init__(self, root):
        self.root = root.rstrip("/")

    def __getitem__(self, index):
        with fsspec.open(f"{self.root}/{index}.jpg", "rb") as handle:
            return handle.read()


def main():
    args = parse_args()
    with fsspec.open(f"{args.data_root}/index.json", "rt") as handle:
        index = handle.read()
    train, val = Shards(args.data_root, "train"), Shards(args.data_root, "val")
    return index, train, val, Images(args.image_root)
"""


def flag_reads(source: str, launch: str | None = None, command: str = "") -> list[tuple]:
    scripts = [("train.py", source)] + ([("run.sh", f"#!/bin/bash\nset -e\n{launch}\n")] if launch else [])
    found = extract_script_evidence(scripts, command=command).of("remote_read")
    return [(f.line, f.detail["call"], f.detail["url"], f.detail["per_sample"]) for f in found]


REMOTE_DEFAULTS = DATA_ROOT_FLAG.replace(
    'default="/local_ssd/shards"', 'default="s3://vision-datasets/shards"'
).replace('default="/local_ssd/images"', 'default="gs://vision-datasets/images/"')
REMOTE_READS = [
    (23, "open", None, True),  # Shards.__getitem__: self.fs from url_to_fs(root), root handed args.data_root
    (32, "open", "gs://vision-datasets/images/", True),  # Images.__getitem__: self.root = root.rstrip("/")
    (38, "open", "s3://vision-datasets/shards/index.json", False),  # main: once
]


def test_a_data_root_from_an_argparse_default_is_followed_into_the_datasets_that_read_it():
    # A URI that comes from the command line (`--data-root` defaulting to s3://...) and is handed to a Dataset's
    # constructor was not followed: `url_to_fs(root)` and `fsspec.open(f"{self.root}/...")` read nothing known.
    assert flag_reads(DATA_ROOT_FLAG) == []
    assert flag_reads(REMOTE_DEFAULTS) == REMOTE_READS


@pytest.mark.parametrize(
    ("launch", "command", "expected"),
    [
        # the launch script gives the option a remote URI: the local default is not the one read
        (
            "torchrun --standalone --nproc_per_node=8 train.py --data-root s3://b/x --images=hf://datasets/o/imgs",
            "",
            [
                (23, "open", None, True),
                (32, "open", "hf://datasets/o/imgs/", True),
                (38, "open", "s3://b/x/index.json", False),
            ],
        ),
        # the job's own command line, and the option's dest= name (--images sets image_root)
        (
            None,
            "python ./train.py --images https://cdn.example.org/imgs --epochs 2",
            [(32, "open", "https://cdn.example.org/imgs/", True)],
        ),
        # another script's flags are not this one's
        ("python eval.py --data-root s3://b/x", "", []),
    ],
)
def test_a_value_given_on_the_launch_line_overrides_the_argparse_default(launch, command, expected):
    assert flag_reads(DATA_ROOT_FLAG, launch, command) == expected


def test_a_local_path_on_the_launch_line_overrides_a_remote_default():
    assert flag_reads(REMOTE_DEFAULTS, "python train.py --data-root /local_ssd/shards --images /local_ssd/img") == []
    assert flag_reads(REMOTE_DEFAULTS, command="python train.py --data-root=/scratch/x") == REMOTE_READS[1:2]
    # a shell variable's value is not known: no read claimed through it
    assert flag_reads(REMOTE_DEFAULTS, "python train.py --data-root $DATA_ROOT") == REMOTE_READS[1:2]
    # two launches of the script that disagree: which one's value reads cannot be told (the other the default)
    both = "python train.py --data-root /local_ssd/shards\npython train.py --epochs 1"
    assert flag_reads(REMOTE_DEFAULTS, both) == REMOTE_READS[1:2]
    # the default's remote path is no fact either once the launch line replaces it with a local one
    scripts = [("train.py", REMOTE_DEFAULTS), ("run.sh", "#!/bin/bash\npython train.py --data-root /local_ssd/x\n")]
    paths = extract_script_evidence(scripts).of("remote_path")
    assert [(f.path, f.detail["url"]) for f in paths] == [("train.py", "gs://vision-datasets/images/")]


def test_a_constructor_handed_different_roots_is_not_followed():
    mixed = REMOTE_DEFAULTS.replace('Shards(args.data_root, "val")', 'Shards("/local_ssd/val", "val")')
    assert flag_reads(mixed) == [REMOTE_READS[1], REMOTE_READS[2]]


def test_a_job_whose_launch_line_gives_the_data_root_quotes_the_read_of_each_sample():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    source = DATA_ROOT_FLAG + "\n\nif __name__ == '__main__':\n    main()\n" + TRAIN_LOOP
    launch = ("run.sh", "#!/bin/bash\ntorchrun --nproc_per_node=1 train.py --data-root s3://vision-datasets/shards\n")
    _, result = run(120, frame, scripts=[("train.py", source), launch], command="sbatch run.sh", cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert "fsspec open per sample in Shards.__getitem__, train.py:23" in finding.summary
    assert [(c["path"], c["line"]) for c in finding.evidence()["code"]][:2] == [("run.sh", 2), ("train.py", 23)]


STREAMED_FROM_A_FLAG = """import argparse

from datasets import load_dataset

parser = argparse.ArgumentParser()
parser.add_argument("--root", default="/local_ssd/corpus")
args = parser.parse_args()
train = load_dataset("parquet", data_files=args.root + "/train-*.parquet", streaming=True)["train"]
"""


def test_a_dataset_streamed_from_files_under_a_flag_given_on_the_command_line_is_a_remote_read():
    scripts = [("prep.py", STREAMED_FROM_A_FLAG)]
    assert extract_script_evidence(scripts).of("remote_read") == []
    command = "accelerate launch --num_processes 8 prep.py --root hf://datasets/org/corpus"
    (fact,) = extract_script_evidence(scripts, command=command).of("remote_read")
    assert (fact.line, fact.detail["client"], fact.detail["url"]) == (8, "datasets", "hf://datasets/org/corpus")


SHARDS_MODULE = """import fsspec
import pyarrow.parquet as pq
from torch.utils.data import Dataset


class ShardDataset(Dataset):
    def __init__(self, root, split="train"):
        self.fs, path = fsspec.core.url_to_fs(root)
        self.shards = sorted(self.fs.glob(f"{path}/{split}-*.parquet"))

    def __getitem__(self, index):
        with self.fs.open(self.shards[index], "rb") as handle:
            return pq.read_table(handle).to_pylist()[0]


def open_index(root):
    return fsspec.open(f"{root}/index.json", "rt").open().read()
"""

TRAIN_IMPORTING = """import argparse

from data import ShardDataset, open_index


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-root", default="/local_ssd/shards")
    args = parser.parse_args()
    index = open_index(args.data_root)
    return index, ShardDataset(args.data_root)
"""
SHARD_READ = ("data.py", 12, "open", None, True)  # ShardDataset.__getitem__: self.fs from url_to_fs(root)
INDEX_READ = ("data.py", 17, "open", "s3://b/shards/index.json", False)  # open_index: once


def job_reads(scripts: list[tuple[str, str]], command: str = "") -> list[tuple]:
    found = extract_script_evidence(scripts, command=command).of("remote_read")
    return [(f.path, f.line, f.detail["call"], f.detail["url"], f.detail["per_sample"]) for f in found]


@pytest.mark.parametrize(
    ("train_path", "train", "data_path"),
    [
        ("train.py", TRAIN_IMPORTING, "data.py"),
        # `import data` then data.ShardDataset(...)
        (
            "train.py",
            TRAIN_IMPORTING.replace("from data import ShardDataset, open_index", "import data")
            .replace("open_index(", "data.open_index(")
            .replace("ShardDataset(args", "data.ShardDataset(args"),
            "data.py",
        ),
        # a package: `from .data import ...` and `from pkg.data import ...`, the file path matching
        ("pkg/train.py", TRAIN_IMPORTING.replace("from data import", "from .data import"), "pkg/data.py"),
        ("src/train.py", TRAIN_IMPORTING.replace("from data import", "from pkg.data import"), "src/pkg/data.py"),
    ],
)
def test_a_data_root_is_followed_into_the_dataset_class_of_another_of_the_jobs_files(train_path, train, data_path):
    # train.py parses --data-root and builds the Dataset that data.py defines: the root was followed within one file
    # only, so data.py's url_to_fs(root) read nothing known.
    scripts = [(data_path, SHARDS_MODULE), (train_path, train)]
    shard, index = (data_path, *SHARD_READ[1:]), (data_path, *INDEX_READ[1:])
    assert job_reads(scripts, command=f"python {train_path} --data-root s3://b/shards") == [shard, index]
    assert job_reads(scripts, command=f"python {train_path} --data-root /scratch/shards") == []
    assert job_reads(scripts) == []  # the default is a local path


@pytest.mark.parametrize(
    "scripts",
    [
        # two files the import may name: which one is imported cannot be told
        [("data.py", SHARDS_MODULE), ("tools/data.py", SHARDS_MODULE), ("train.py", TRAIN_IMPORTING)],
        # another of the job's files makes the class with a root of its own
        [
            ("data.py", SHARDS_MODULE),
            ("train.py", TRAIN_IMPORTING),
            (
                "eval.py",
                "from data import ShardDataset, open_index\n\nopen_index('/scratch')\nShardDataset('/scratch')\n",
            ),
        ],
        # handed on by name (made elsewhere, with anything), or subclassed
        [
            ("data.py", SHARDS_MODULE),
            ("train.py", TRAIN_IMPORTING + "\nfactories = [ShardDataset, open_index]\n"),
        ],
        # a star import: its calls name no module
        [
            ("data.py", SHARDS_MODULE),
            ("train.py", TRAIN_IMPORTING),
            ("eval.py", "from data import *\n\nopen_index('/scratch')\nShardDataset('/scratch')\n"),
        ],
    ],
)
def test_a_root_from_another_file_is_not_followed_where_the_import_is_ambiguous_or_the_class_escapes(scripts):
    reads = job_reads(scripts, command="python train.py --data-root s3://b/shards")
    assert [read for read in reads if read[1:] in (SHARD_READ[1:], INDEX_READ[1:])] == []


def test_the_cached_reading_of_a_dataset_file_follows_what_the_importing_file_hands_it():
    # the same data.py read for two jobs whose train.py hand it different roots: each job's own reads
    first = [("data.py", SHARDS_MODULE), ("train.py", TRAIN_IMPORTING)]
    remote = TRAIN_IMPORTING.replace('default="/local_ssd/shards"', 'default="s3://b/shards"')
    assert job_reads(first) == []
    assert job_reads([("data.py", SHARDS_MODULE), ("train.py", remote)]) == [SHARD_READ, INDEX_READ]
    assert job_reads(first) == []


PARSED_HOLDERS = """import argparse

import fsspec
from torch.utils.data import Dataset


class Images(Dataset):
    def __init__(self, hparams):
        self.args = hparams

    def __getitem__(self, index):
        with fsspec.open(f"{self.args.image_root}/{index}.jpg", "rb") as handle:
            return handle.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--image-root", default="/local/images")
    parser.add_argument("--data-root", default="/local/shards")
    hparams = parser.parse_args()
    opts, _ = parser.parse_known_args()
    first = parser.parse_known_args()[0]
    with fsspec.open(f"{opts.data_root}/a.json") as a, fsspec.open(f"{first.data_root}/b.json") as b:
        return a.read(), b.read(), Images(hparams), fsspec.open(f"{hparams.data_root}/c.json").open()
"""


def test_a_namespace_bound_to_parse_args_under_any_name_holds_the_options():
    # only `args`, `opt` and `cfg` were read as argparse namespaces: `hparams.data_root`, `opts.data_root` and
    # `self.args.image_root` (self.args = hparams) were unknown, so no read was claimed through them.
    command = "python train.py --data-root s3://b/shards --image-root gs://b/images"
    assert flag_reads(PARSED_HOLDERS, command=command) == [
        (12, "open", "gs://b/images/", True),
        (23, "open", "s3://b/shards/a.json", False),
        (23, "open", "s3://b/shards/b.json", False),
        (24, "open", "s3://b/shards/c.json", False),
    ]
    # a name bound to something else too is not one
    rebound = PARSED_HOLDERS.replace("    opts, _ = parser", "    opts = load_yaml()\n    opts, _ = parser")
    assert (24, "open", "s3://b/shards/a.json", False) not in flag_reads(rebound, command=command)


@pytest.mark.parametrize(
    ("run_sh", "expected"),
    [
        ('DATA=s3://b/x\npython train.py --data-root "${DATA}"', [(23, "open", None, True)]),
        (
            "DATA=/local/x\nexport IMAGES=gs://b/imgs\npython train.py --data-root $DATA --images $IMAGES/",
            [
                (32, "open", "gs://b/imgs/", True),
            ],
        ),
        # anything but a straight-line assignment stays unknown
        ('if [ -n "$1" ]; then DATA=s3://b/x; fi\npython train.py --data-root $DATA', []),
        ("DATA=$(cat root.txt)\npython train.py --data-root $DATA", []),
        ("DATA=s3://b/x\nsource env.sh\npython train.py --data-root $DATA", []),
        ("python train.py --data-root $DATA\nDATA=s3://b/x", []),
        ("DATA=s3://b/x\npython train.py --data-root '$DATA'", []),
        # one set in the child shell a here-document feeds (`bash <<EOF`) ends with that shell
        ("bash <<'EOF'\nDATA=s3://b/x\nEOF\npython train.py --data-root $DATA", []),
        (
            "DATA=s3://b/x\nbash <<EOF\nDATA=/local/x\nEOF\npython train.py --data-root $DATA",
            [(23, "open", None, True)],
        ),
        # a quoted body is read by the child shell, which has the script's exports only: a plain DATA is not its
        ("DATA=s3://b/x\nbash <<'EOF'\npython train.py --data-root $DATA\nEOF", []),
        ("export DATA=s3://b/x\nbash <<'EOF'\npython train.py --data-root $DATA\nEOF", [(23, "open", None, True)]),
        ("set -a\nDATA=s3://b/x\nbash <<'EOF'\npython train.py --data-root $DATA\nEOF", [(23, "open", None, True)]),
        (
            "DATA=s3://b/x\nexport DATA\nbash <<'EOF'\npython train.py --data-root $DATA\nEOF",
            [(23, "open", None, True)],
        ),
        (
            "DATA=/local\nbash <<'EOF'\nDATA=s3://b/x\npython train.py --data-root $DATA\nEOF",
            [(23, "open", None, True)],
        ),
        # an unquoted one is expanded by the script's shell before the child reads it: the script's DATA, plain too,
        # and not one the body sets ("$DATA" in quotes alike: a here-document's quotes are its text)
        ("DATA=s3://b/x\nbash <<EOF\npython train.py --data-root $DATA\nEOF", [(23, "open", None, True)]),
        (
            "DATA=s3://b/x\nbash <<EOF\nDATA=/local/x\npython train.py --data-root $DATA\nEOF",
            [(23, "open", None, True)],
        ),
        ("DATA=/local/x\nbash <<EOF\nDATA=s3://b/x\npython train.py --data-root $DATA\nEOF", []),
        ("DATA=s3://b/x\nbash <<EOF\npython train.py --data-root '$DATA'\nEOF", [(23, "open", None, True)]),
    ],
)
def test_a_shell_variable_set_before_the_launch_line_gives_the_option_its_value(run_sh, expected):
    # `--data-root $DATA` with DATA=s3://... set just above was unknown
    assert [read for read in flag_reads(DATA_ROOT_FLAG, run_sh) if read[0] != 38] == expected


WALRUS_AND_TERNARY = """import argparse

import fsspec
import s3fs
import torch
from torch.utils.data import Dataset


class Shards(Dataset):
    def __init__(self, root):
        self.root = root
        self.fs = fsspec.filesystem("s3") if root.startswith("s3://") else fsspec.filesystem("file")

    def __getitem__(self, index):
        with self.fs.open(f"{self.root}/part-{index:05d}.pt", "rb") as handle:
            return torch.load(handle)


class Features(Dataset):
    def __init__(self, root):
        self.fs, self.path = fsspec.core.url_to_fs(root)

    def __getitem__(self, index):
        return torch.load(self.fs.open(f"{self.path}/{index}.pt", "rb"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-root", default="/local_ssd/shards")
    parser.add_argument("--features", default="/local_ssd/features")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args()
    features = args.features if not args.debug else "/local_ssd/debug"
    if not (fs := s3fs.S3FileSystem()).exists(f"{args.data_root}/index.json"):
        raise SystemExit("no index")
    fs.get(f"{args.data_root}/index.json", "/local_ssd/index.json")
    if (root := args.data_root.rstrip("/")).startswith("s3://"):
        print("streaming from", root)
    with fsspec.open(f"{root}/stats.json", "rt") as handle:
        stats = handle.read()
    return stats, Shards(root), Features(features)
"""


def test_a_filesystem_or_data_root_bound_by_a_walrus_or_a_conditional_expression_is_followed():
    # `(fs := s3fs.S3FileSystem())`, `(root := args.data_root.rstrip("/"))`, `self.fs = fsspec.filesystem("s3") if
    # ... else fsspec.filesystem("file")` and `features = args.features if not args.debug else "/local_ssd/debug"`
    # held nothing known: no read was claimed through them. A conditional one either of whose branches is remote
    # counts, as a default after `or` does.
    command = "python train.py --data-root s3://b/shards --features gs://b/features"
    assert flag_reads(WALRUS_AND_TERNARY, command=command) == [
        (15, "open", "s3://b/shards/part-", True),  # Shards: self.fs either filesystem, root from the walrus
        (24, "open", None, True),  # Features: url_to_fs(root), root handed `features`, one branch remote
        (36, "get", "s3://b/shards/index.json", False),  # fs bound by the walrus in main's `if`
        (39, "open", "s3://b/shards/stats.json", False),  # root bound by the walrus
    ]
    # neither branch remote: no read through Features' filesystem (nor Shards', its root a local path)
    local = [read[0] for read in flag_reads(WALRUS_AND_TERNARY, command="python train.py --data-root /scratch/x")]
    assert 24 not in local and 39 not in local
    # the default after a conditional expression is followed as one after `or` is
    either = FILESYSTEM_HANDED_ON.replace(
        'self.fs = fs or fsspec.filesystem("s3")', 'self.fs = fs if fs is not None else fsspec.filesystem("s3")'
    )
    assert reads(either) == reads(FILESYSTEM_HANDED_ON)


COMMON_FILESYSTEM = """import os

import requests
import s3fs

fs = s3fs.S3FileSystem(anon=False, client_kwargs={"endpoint_url": os.environ.get("S3_ENDPOINT")})
session = requests.Session()
"""

DATA_IMPORTING_FS = """import torch
from torch.utils.data import Dataset

from common import fs, session as http


class Shards(Dataset):
    def __init__(self, keys):
        self.keys = keys

    def __getitem__(self, index):
        with fs.open(f"vision-datasets/{self.keys[index]}", "rb") as handle:
            return torch.load(handle), http.get(f"https://labels.example.org/{index}").json()
"""


@pytest.mark.parametrize(
    ("common_path", "data_path", "data"),
    [
        ("common.py", "data.py", DATA_IMPORTING_FS),
        ("pkg/common.py", "pkg/data.py", DATA_IMPORTING_FS.replace("from common import", "from .common import")),
        # the module imported whole: common.fs, common.session
        (
            "common.py",
            "data.py",
            DATA_IMPORTING_FS.replace("from common import fs, session as http", "import common")
            .replace("fs.open(", "common.fs.open(")
            .replace("http.get(", "common.session.get("),
        ),
    ],
)
def test_a_filesystem_or_session_made_in_another_of_the_jobs_files_and_imported_is_read_through(
    common_path, data_path, data
):
    # `from common import fs` where common.py makes `fs = s3fs.S3FileSystem()`: data.py's fs.open(...) in __getitem__
    # was no read, the filesystem being made in another file (and the session likewise).
    found = extract_script_evidence([(common_path, COMMON_FILESYSTEM), (data_path, data)]).of("remote_read")
    assert [
        (f.path, f.line, f.detail["client"], f.detail["call"], f.detail["url"], f.detail["context"]) for f in found
    ] == [
        (data_path, 12, "s3fs", "open", "s3://vision-datasets/", "Shards.__getitem__"),
        (data_path, 13, "requests", "get", "https://labels.example.org/", "Shards.__getitem__"),
    ]


@pytest.mark.parametrize(
    "scripts",
    [
        # a local filesystem there is no remote one here
        [
            ("common.py", 'import fsspec\n\nfs = fsspec.filesystem("file")\nsession = None\n'),
            ("data.py", DATA_IMPORTING_FS),
        ],
        # two of the job's files the import may name: which one cannot be told
        [("common.py", COMMON_FILESYSTEM), ("tools/common.py", "fs = None\n"), ("data.py", DATA_IMPORTING_FS)],
        # the name rebound after the import is that binding's
        [
            ("common.py", COMMON_FILESYSTEM),
            ("data.py", DATA_IMPORTING_FS.replace("as http\n", "as http\n\nfs = fsspec.filesystem('file')\n")),
        ],
    ],
)
def test_an_imported_name_is_not_read_through_where_it_is_local_ambiguous_or_rebound(scripts):
    found = extract_script_evidence(scripts).of("remote_read")
    assert [f.detail["client"] for f in found if f.detail["client"] == "s3fs"] == []


COMMON_URI = 'import os\n\nDATA_URI = "s3://vision-datasets/shards"\nLABELS = "https://labels.example.org"\n'

DATA_IMPORTING_URI = """import fsspec
import requests
import torch
from torch.utils.data import Dataset

from common import DATA_URI, LABELS as labels


class Shards(Dataset):
    def __init__(self, keys):
        self.keys = keys

    def __getitem__(self, index):
        with fsspec.open(f"{DATA_URI}/{self.keys[index]}", "rb") as handle:
            return torch.load(handle), requests.get(labels + f"/{index}").json()
"""


@pytest.mark.parametrize(
    ("common_path", "data_path", "data"),
    [
        ("common.py", "data.py", DATA_IMPORTING_URI),
        ("pkg/common.py", "pkg/data.py", DATA_IMPORTING_URI.replace("from common import", "from .common import")),
        # the module imported whole: common.DATA_URI
        (
            "common.py",
            "data.py",
            DATA_IMPORTING_URI.replace("from common import DATA_URI, LABELS as labels", "import common")
            .replace("{DATA_URI}", "{common.DATA_URI}")
            .replace("labels +", "common.LABELS +"),
        ),
    ],
)
def test_a_uri_constant_of_another_of_the_jobs_files_is_followed_where_imported(common_path, data_path, data):
    # `from common import DATA_URI` where common.py sets `DATA_URI = "s3://..."`: data.py's
    # fsspec.open(f"{DATA_URI}/...") in __getitem__ was a read of an unknown URL (no remote storage named), the
    # constant being set in another file, as a filesystem made there was before it was followed.
    found = extract_script_evidence([(common_path, COMMON_URI), (data_path, data)]).of("remote_read")
    assert [(f.path, f.line, f.detail["call"], f.detail["url"], f.detail["context"]) for f in found] == [
        (data_path, 14, "open", "s3://vision-datasets/shards/", "Shards.__getitem__"),
        (data_path, 15, "get", "https://labels.example.org", "Shards.__getitem__"),  # `labels + ...`: its left side
    ]


@pytest.mark.parametrize(
    "scripts",
    [
        # a local path there is no remote URI here
        [("common.py", 'DATA_URI = "/scratch/shards"\nLABELS = None\n'), ("data.py", DATA_IMPORTING_URI)],
        # two of the job's files the import may name: which one cannot be told
        [("common.py", COMMON_URI), ("tools/common.py", "DATA_URI = None\n"), ("data.py", DATA_IMPORTING_URI)],
        # the name rebound after the import is that binding's
        [
            ("common.py", COMMON_URI),
            ("data.py", DATA_IMPORTING_URI.replace("as labels\n", 'as labels\n\nDATA_URI = "/scratch/shards"\n')),
        ],
    ],
)
def test_an_imported_uri_is_not_followed_where_it_is_local_ambiguous_or_rebound(scripts):
    found = extract_script_evidence(scripts).of("remote_read")
    assert [f.detail["url"] for f in found if f.detail["call"] == "open"] in ([], [None])


def test_samples_read_through_an_imported_uri_are_remote_data_reading():
    # The job's data.py reads each sample from common.py's DATA_URI: remote data reading that names and quotes that
    # line (the finding rested on common.py's URI literal alone: the read's URL, set in another file, was not known,
    # so fsspec.open(...) in __getitem__ was no read).
    data = DATA_IMPORTING_URI.replace("import requests\n", "").replace(
        ', requests.get(labels + f"/{index}").json()', ""
    )
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("common.py", COMMON_URI), ("data.py", data + TRAIN_LOOP)], cpu_count=16)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert finding.sub_cause == "object_store"
    assert "fsspec open per sample in Shards.__getitem__, data.py:13" in finding.summary
    assert ("data.py", 13) in [(c.path, c.line) for c in finding.code]
