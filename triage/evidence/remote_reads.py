"""Remote reads through object-store and HTTP clients, from a Python file's syntax tree.

A Dataset that fetches each sample with boto3's `get_object`, an s3fs filesystem's `open`, a GCS blob's
`download_as_bytes`, Azure's `download_blob`, `smart_open.open`, `fsspec.open(..., protocol="s3")`, WebDataset or
torchdata shards from a remote URL, or `requests.get` names no `s3://` literal. Each such call is a `remote_read`
fact, told apart by where it runs:

- **per sample**: in a Dataset's `__getitem__` / `__getitems__` (or an iterable dataset's `__iter__` / `__next__`),
  a function those call (`self._fetch(...)`, `fetch(...)`, followed through the file), a callback handed to `.map`
  or `.from_generator`, a `collate_fn` (a lambda handed there as well: its body is a function of its own), the
  training-step loop, or a shard stream: remote data reading;
- **once** (anywhere else: a `stage()` before training, module level): the data download phase, which
  external_data_usage judges by its length; HTTP calls there (a webhook, an API) are no facts at all.

A call counts only with its client imported in the same file (boto3's `get_object` of a class of one's own is no
read) or made on an object the file built from a remote filesystem (`fs = s3fs.S3FileSystem()`, `self.fs = ...`,
`fsspec.filesystem("s3")`, `pyarrow.fs.FileSystem.from_uri("s3://...")`, or handed to a class of the file's own,
`Shards(fs)` with `self.fs = fs` in its `__init__`), through its own methods or as a reader's `filesystem=`
(`pq.read_table(path, filesystem=fs)`); a file opened for writing is no read. `self.fs` (a session, a pool, a file
list alike) is the one its own class binds, else a base's in the file: another class's remote self.fs makes no local
one remote. A plain name is the one its scope binds, as Python looks it up (`_Scopes`): `fs = s3fs.S3FileSystem()` in
one function makes no other function's local `fs` (or parameter) remote; a module's is seen where no function rebinds
it. Of a scope's bindings of it, the one in effect where it is read counts, in statement order (`_Order`): where
branches leave a remote filesystem on one path and something else on another, no read is claimed (cannot tell); but
a conditional expression one of whose branches makes a remote filesystem (or holds a remote URI) is that one, as
the default after `or` is (`_made`, `_either`), and a walrus (`(fs := ...)`) binds as an assignment does.
A function wrapped in `functools.partial` (`collate = partial(fetch_batch, bucket)`) is followed to the one it wraps.
A URI computed at run time is followed where the file tells it (`value`): an argparse option (its value the job's launch
line gives, else its default: `resolve`; `self.args.x` through `self.args = args`), handed to a parameter
(`Shards(args.data_root)` -> `url_to_fs(root)`), in the file or by another of the job's files that imports it
(`incoming`, what that file's `exports` found), bound to a name or to `self.root`, or starting an f-string. A
filesystem or session another of the job's files makes at module level and this one imports (`from common import
fs`) is the one it holds there (`provides`, `takes`, handed back in `incoming`), as is a remote URI it binds at module
level (`from common import DATA_URI`, `common.DATA_URI`).
A `.map` is a pool's (a staging download, once) only on a name bound to a thread or process pool, or on one made
there (`ThreadPoolExecutor(16).map`). Pure Python; no Django.
"""

from __future__ import annotations

import ast

from triage.evidence.pyast import dotted

# Modules whose import lets a call of theirs count, by the client they are.
_BOTO = {"boto3": "boto3", "botocore": "boto3", "aioboto3": "boto3", "aiobotocore": "boto3", "minio": "minio"}
_BOTO_READS = {"get_object", "download_file", "download_fileobj", "fget_object"}
_GCS_READS = {"download_as_bytes", "download_as_string", "download_as_text", "download_to_filename", "download_to_file"}
_AZURE_READS = {"download_blob"}
# Remote filesystems' constructors (their canonical dotted names) and the scheme their paths are in.
_REMOTE_FS = {
    "s3fs.S3FileSystem": ("s3fs", "s3"),
    "s3fs.core.S3FileSystem": ("s3fs", "s3"),
    "gcsfs.GCSFileSystem": ("gcsfs", "gs"),
    "gcsfs.core.GCSFileSystem": ("gcsfs", "gs"),
    "adlfs.AzureBlobFileSystem": ("adlfs", "abfs"),
    "adlfs.AzureDatalakeFileSystem": ("adlfs", "adl"),
    "pyarrow.fs.S3FileSystem": ("pyarrow", "s3"),
    "pyarrow.fs.GcsFileSystem": ("pyarrow", "gs"),
    "pyarrow.fs.HadoopFileSystem": ("pyarrow", "hdfs"),
}
# Calls that give (filesystem, path) for a URL: the client and the URL's keyword.
_FROM_URL = {
    "fsspec.core.url_to_fs": ("fsspec", "url"),
    "fsspec.url_to_fs": ("fsspec", "url"),
    "pyarrow.fs.FileSystem.from_uri": ("pyarrow", "uri"),
}
# Readers that read a path through the filesystem handed as `filesystem=` (pyarrow's, pandas'), and the keyword
# their path may be given by.
_FILESYSTEM_READERS = {
    "read_table": "source", "read_pandas": "source", "ParquetFile": "source", "read_metadata": "where",
    "read_schema": "where", "ParquetDataset": "path_or_paths", "dataset": "source", "read_parquet": "path",
}  # fmt: skip
_FS_READS = {
    "open", "cat", "cat_file", "get", "get_file", "download", "read_bytes", "read_text", "read_block",
    "open_input_file", "open_input_stream",
}  # fmt: skip
REMOTE_PROTOCOLS = {
    "s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl", "wasb", "wasbs", "hdfs", "webhdfs", "http", "https", "oss",
    "hf",
}  # fmt: skip
_HTTP = {
    "requests.get": "requests",
    "requests.request": "requests",
    "httpx.get": "httpx",
    "urllib.request.urlopen": "urllib",
    "urllib3.request": "urllib3",
}
_SESSIONS = {"requests.Session": "requests", "requests.session": "requests", "httpx.Client": "httpx"}
_WEBDATASET = {"WebDataset", "SimpleShardList", "ResampledShards", "ShardList"}
_TORCHDATA = {
    "S3FileLoader", "HttpReader", "OnlineReader", "GDriveReader", "load_files_by_s3", "read_from_http",
    "read_from_remote", "read_from_gdrive",
}  # fmt: skip
# How a client's reads reach training, the one place that says it: "shards" for a stream of large files pulled in
# sequence as training iterates (its reads run per sample wherever the stream is built), "samples" (every client not
# named here) for one fetch a sample. The summary (triage.rules.data) and the guidance (triage.guidance) say it so.
READ_KINDS = {"webdataset": "shards", "torchdata": "shards", "datasets": "shards"}


def read_kind(client: str) -> str:
    """How a client's reads reach training: shards streamed ("shards") or samples fetched one by one ("samples")."""
    return READ_KINDS.get(client, "samples")


# Hugging Face datasets' packaged builders: load_dataset("parquet", data_files=...) reads where data_files are.
_HF_BUILDERS = {
    "json", "csv", "parquet", "text", "arrow", "pandas", "sql", "webdataset", "imagefolder", "audiofolder",
    "videofolder", "xml",
}  # fmt: skip
_SAMPLE_HOOKS = {"__getitem__", "__getitems__"}
_STREAM_HOOKS = {"__iter__", "__next__"}  # an iterable dataset's (a class whose bases say Dataset or DataPipe)
# Methods that call a function once per element (or batch) of a dataset, and how a context names them.
_CALLBACKS = {
    "map": "per element by .map",
    "from_generator": "by .from_generator",
    "flat_map": "per element by .flat_map",
}
_REMOTE_PIPE = ("s3://", "gs://", "aws s3", "gsutil", "gcloud storage", "azcopy", "curl", "wget", "http://", "https://")
_HTTP_CLIENTS = {"requests", "httpx", "urllib", "urllib3"}
_LAZY_MAPS = {"tensorflow", "torchdata", "webdataset", "ray", "jax", "grain"}  # their .map runs as samples are drawn
_POOLS = {"ThreadPoolExecutor", "ProcessPoolExecutor", "Pool", "ThreadPool"}  # their .map runs a staging download


def _dotted(node: ast.AST) -> str:
    """`fs`, `self.fs`, `wds.WebDataset`: a dotted name as `pyast.dotted` gives it, but '' for one reached through a
    call's result (`get().fs`, "().fs" there). What this module looks up it knows by name only: a binding made
    through a call's result binds nothing it follows (`get().fs = s3fs.S3FileSystem()`), and a callee reached
    through one is not known by its last part (`import_module(m).ThreadPoolExecutor()` makes no pool,
    `cache.lookup(b).Object(k).get()` is no Object.get; a boto3 resource's, `boto3.resource("s3").Object(b, k)`, is
    named apart, `_s3_object`)."""
    name = dotted(node)
    return "" if name.startswith("()") else name


class RemoteReads:
    """What a file says of its remote reads: its imports and bindings (read before the walk), then each read call
    as the walk meets it (`read`), then where each runs (`settle`, after the walk)."""

    def __init__(self, tree: ast.Module, resolve, incoming: dict | None = None):
        self.resolve = resolve  # the file's literal resolver (constants, argparse defaults)
        # What the job's other files hand this file's module-level functions and classes (`exports`): name -> the
        # values of each call's arguments, or None where one is made in a way not followed ("*": any of them); and
        # what the names it imports from them hold (`provides`): (module, level, name) -> ("filesystem", (client,
        # scheme)) or ("session", client)
        self.incoming = incoming or {}
        self.asked: set[str] = set()  # the names whose calls elsewhere were asked for (`_external_calls`)
        self.scopes = _Scopes(tree)  # which function (or the module) binds a plain name used at a node
        self.order = _Order(tree, self.scopes)  # which of its bindings may be in effect there
        self.aliases: dict[str, str] = {}  # local name -> what it imports ("wds" -> "webdataset")
        self.modules: set[str] = set()  # every module imported, dotted
        # Names bound to what this module follows; `self.x` as the class that binds it names it ("Shards.fs"), so two
        # classes' self.fs are two, and a subclass that binds none has its base's (`_bound`).
        # A plain name is keyed by its scope, itself and the statement that binds it (`_owned`, `_Order`).
        self.filesystems: dict[str, tuple[str, str]] = {}  # "fs", "Shards.fs" (self.fs) -> (client, scheme)
        self.sessions: dict[str, str] = {}  # "session" -> requests / httpx
        self.pools: dict[str, str] = {}  # name -> the thread or process pool it holds (whose .map is no dataset's)
        self.open_files: dict[str, str] = {}  # "files", "Parts.files" (self.files) -> the URL open_files listed
        self.objects: dict[str, str] = {}  # "obj" -> the bucket's URL of the boto3 resource's Object it holds, or ""
        self.partials: dict = {}  # "collate", "Loader.collate" (self.collate) -> the function functools.partial wraps
        self.instances: dict = {}  # "store", "Shards._store" (self._store) -> the class of the file's own it holds
        self.uris: dict[str, str] = {}  # "common.DATA_URI" -> the remote URI another of the job's files binds it to
        self.iterated: dict[int, str] = {}  # id of a loop variable's use (`for f in files: with f`) -> files' URL
        self.classes: dict[str, list[str]] = {}  # class -> its bases' names ("Shards" -> ["Dataset"])
        self.owners: dict[int, str] = {}  # id of a node -> the innermost class it is in
        self.bindings: set[str] = set()  # every "Class.x" a class binds to self.x, to anything
        self.named: dict[str, set] = {}  # "Class.x" -> the names it binds self.x to (`self.args = args`; None: else)
        self.calls: dict[str, set[str]] = {}  # function -> functions it calls (qualified names)
        self.roots: dict[str, str] = {}  # per-sample function -> how it runs per sample (for its context)
        # id of a lambda handed as a callback -> its name ("a lambda at line 12"); of one bound to a name -> the name
        self.lambdas: dict[int, str] = {}
        self.found: list[tuple[dict, str | None, bool, bool]] = []  # (detail, function, in step loop, stream)
        self.tree = tree
        self._uses: dict | None = None  # name or attribute -> its uses, and each callee's call (`_index`)
        self._steps = self._STEPS  # what is left of the budget of the value followed now (`value`)
        self.imports: list[ast.Import | ast.ImportFrom] = []  # every import, relative ones too (`exports`)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                self.imports.append(node)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.modules.add(alias.name)
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        self.aliases.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                self.modules.add(node.module)
                for alias in node.names:
                    self.modules.add(f"{node.module}.{alias.name}")
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.tops = {module.split(".")[0] for module in self.modules}
        for node in ast.walk(tree):  # outer classes first: an inner class's nodes end up its own
            if isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, []).extend(_dotted(b).rsplit(".", 1)[-1] for b in node.bases)
                for inner in ast.walk(node):
                    self.owners[id(inner)] = node.name
        # A streamed Hugging Face dataset (an IterableDataset) maps lazily, as samples are drawn.
        self.lazy_datasets = "datasets" in self.tops and any(
            isinstance(node, ast.Call)
            and (self._hf_stream(node) is not None or _dotted(node.func).endswith("to_iterable_dataset"))
            for node in ast.walk(tree)
        )
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    for each in target.elts if isinstance(target, ast.Tuple) else [target]:
                        if (name := _dotted(each)).startswith("self."):
                            self.bindings.add(owned := self._owned(name, node))
                            plain = each is target and isinstance(node.value, ast.Name)
                            self.named.setdefault(owned, set()).add(node.value.id if plain else None)
            made = node.context_expr if isinstance(node, ast.withitem) and node.optional_vars else None
            if isinstance(made, ast.Call) and self._pool_made(made) and (name := _dotted(node.optional_vars)):
                self.pools[self._owned(name, node)] = _dotted(made.func)
            # `fs = ...`, `fs: AbstractFileSystem = ...`, `(fs := ...)`: one name bound to a call's result
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                bound_to, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                bound_to, value = node.target, node.value
            else:
                continue
            if isinstance(value, ast.Lambda) and isinstance(bound_to, ast.Name):
                self.lambdas[id(value)] = bound_to.id  # `fetch = lambda key: ...`: a function named fetch, as a def
            for made in _made(value):
                target = _dotted(bound_to)
                if isinstance(bound_to, ast.Tuple) and bound_to.elts:
                    target = _dotted(bound_to.elts[0])  # fs, path = fsspec.core.url_to_fs(url)
                if not target:
                    continue  # `pools[0] = ThreadPool()`, `get().fs = ...`: bound to no name this module follows
                target = self._owned(target, node)
                if self._pool_made(made):
                    self.pools[target] = _dotted(made.func)
                if listed := self._listed(made):
                    self.open_files[target] = listed
                if _dotted(made.func).rsplit(".", 1)[-1] == "Object" and _s3_object(made):
                    bucket = self._bucket(made)  # obj = s3.Object(bucket, key); obj.get()
                    self.objects[target] = f"s3://{bucket}" if isinstance(bucket, str) and bucket else ""
                if self.canonical(_dotted(made.func)) == "functools.partial" and made.args:
                    self.partials[target] = made.args[0]  # collate = partial(fetch_batch, bucket): calls fetch_batch
                if isinstance(made.func, ast.Name) and made.func.id in self.classes:
                    self.instances[target] = made.func.id  # self._store = Store(fs): self._store.fs is Store's self.fs
                built = self._filesystem(made)
                if built:
                    self.filesystems[target] = built
                elif session := _SESSIONS.get(self.canonical(_dotted(made.func))):
                    self.sessions[target] = session
        for node in self.imports:  # `from common import fs`, common.py's fs a remote filesystem: bound by the import
            for alias in node.names if isinstance(node, ast.ImportFrom) else ():
                kind, held = self.incoming.get((node.module, node.level, alias.name), (None, None))
                if kind in ("filesystem", "session"):  # a "value" (a URI) is read where the name is (`_held_at`)
                    bound = self.filesystems if kind == "filesystem" else self.sessions
                    bound[self._owned(alias.asname or alias.name, node)] = held
            for alias in node.names if isinstance(node, ast.Import) else ():  # `import common`, then common.fs
                for key, given in self.incoming.items():
                    if isinstance(key, tuple) and key[:2] == (alias.name, 0):
                        kind, held = given
                        bound = {"filesystem": self.filesystems, "session": self.sessions}.get(kind, self.uris)
                        bound[f"{alias.asname or alias.name}.{key[2]}"] = held
        self._handed_in(tree)
        for node in ast.walk(tree):  # `for f in files:` (or `enumerate(files)`): each f one of open_files' files
            if isinstance(node, ast.For | ast.AsyncFor):
                self._iterates(node.iter, node.target, node.body)
            elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
                for each in node.generators:
                    self._iterates(each.iter, each.target, parts + [test for g in node.generators for test in g.ifs])

    def _handed_in(self, tree: ast.Module) -> None:
        """A remote filesystem (or session) handed to a class of the file's own when it is made (`Shards(fs, root)`,
        `Shards(fs=fs)`), which its `__init__` (or a base's in the file) binds to an attribute as it is (`self.fs =
        fs`, or `self.fs = fs or fsspec.filesystem("file")` when one may be handed): that class's self.fs is the
        filesystem. The parameter holds it in that `__init__` too, so one handed on to another class of the file's own
        there (`self._store = Store(fs)`) is that class's self.fs (`self._store.fs`, `_bound`). Within one file."""
        inits: dict[str, ast.FunctionDef] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for part in node.body:
                    if isinstance(part, ast.FunctionDef) and part.name == "__init__":
                        inits.setdefault(node.name, part)
        made = [
            call
            for call in ast.walk(tree)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in inits
        ]
        for _ in range(len(inits)):  # again while a pass hands something on: a class made before its holder's
            changed = False
            for call in made:
                changed |= self._hand_in(call, inits)
            if not changed:
                break

    def _hand_in(self, call: ast.Call, inits: dict[str, ast.FunctionDef]) -> bool:
        """Bind what `call` (a class of the file's own made) hands its `__init__`; whether anything new was bound."""
        # the __init__ the class runs: its own, else a base's
        runs = next((cls for cls in self._class_and_bases(call.func.id) if cls in inits), None)
        if runs is None:
            return False
        init, changed = inits[runs], False
        params = [each.arg for each in [*init.args.posonlyargs, *init.args.args][1:]]
        given = [*zip(params, call.args, strict=False), *((kw.arg, kw.value) for kw in call.keywords if kw.arg)]
        for param, value in given:
            if not isinstance(value, ast.Name):
                continue
            for bound in (self.filesystems, self.sessions):
                held = self._bound(bound, value.id, value)
                if held is None:
                    continue
                if (id(init), param, id(init)) not in bound:  # the parameter, bound where __init__ starts (_Order)
                    bound[(id(init), param, id(init))] = held
                    changed = True
                for statement in ast.walk(init):  # self.fs = fs, self.fs: AbstractFileSystem = fs, self.fs = fs or ...
                    if not isinstance(statement, ast.Assign | ast.AnnAssign):
                        continue
                    # self.fs = fs, or the one given of `fs or ...` / `fs if fs is not None else ...`
                    if not any(isinstance(each, ast.Name) and each.id == param for each in _given(statement.value)):
                        continue
                    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                    for target in targets:
                        if (name := _dotted(target)).startswith("self.") and name.count(".") == 1:
                            attribute = f"{runs}.{name.removeprefix('self.')}"
                            changed |= attribute not in bound
                            bound.setdefault(attribute, held)
        return changed

    def _owned(self, target: str, node: ast.AST) -> str | tuple[int, str, int]:
        """`self.files` as the class it is bound in names it (`Parts.files`): two classes' self.files are two. A plain
        name as the scope that binds it (`_Scopes.key`) and the statement `node` that binds it name it: two
        functions' local `fs` are two, and so are two bindings of one (`_Order`)."""
        if target and "." not in target:
            return (*self.scopes.key(target, node), id(node))
        owner = self.owners.get(id(node))
        if not target.startswith("self.") or owner is None:
            return target
        return f"{owner}.{target.removeprefix('self.')}"

    def _bound(self, bound: dict, name: str, node: ast.AST):
        """What `name` used at `node` is bound to in `bound` (a filesystem, a session, a pool, a file list), or None.
        `self.fs` is the one of the innermost class `node` is in, else of the first base (in this file) that binds
        self.fs: a subclass that binds a local self.fs of its own reads no base's remote one. A plain name `fs` is the
        one the scope that binds it (its function, an enclosing one, the module) holds, as Python looks it up."""
        if name and "." not in name:
            return self._plain(bound, name, node)
        holder, _, attribute = name.rpartition(".")
        if holder and holder != "self" and bound is not self.instances:  # store.fs, self._store.fs
            cls = self._bound(self.instances, holder, node)
            if cls is not None:
                return self._attribute(bound, cls, attribute, None)
        owner = self.owners.get(id(node))
        if not name.startswith("self.") or owner is None:
            return bound.get(name) if name else None
        # bound outside any class (`def setup(self): self.fs = ...`) where no class binds it
        return self._attribute(bound, owner, name.removeprefix("self."), bound.get(name))

    def _attribute(self, bound: dict, owner: str, attribute: str, unbound):
        """What `self.<attribute>` holds in a method of class `owner`: its own binding, else its first base's (in this
        file) that binds it; None where the class binds it to something else, `unbound` where none binds it."""
        for cls in self._class_and_bases(owner):
            if f"{cls}.{attribute}" in bound:
                return bound[f"{cls}.{attribute}"]
            if f"{cls}.{attribute}" in self.bindings:
                return None  # bound there to something else
        return unbound

    def _class_and_bases(self, owner: str):
        """Class `owner`, then its bases defined in this file, breadth first (the first base that binds a name is the
        one whose binding counts), each once."""
        seen, lineage = set(), [owner]
        while lineage:
            cls = lineage.pop(0)
            if cls not in seen:
                seen.add(cls)
                yield cls
                lineage.extend(self.classes.get(cls, []))

    def _plain(self, bound: dict, name: str, node: ast.AST):
        """What a plain name used at `node` holds in `bound`: the binding in effect there, in statement order
        (`_Order`). Where several may be (an `if` binding a local filesystem, its `else` a remote one), a read is
        claimed only if each of them holds one (of the latest's kind): which one reads cannot be told, as of a
        computed mode or data_files."""
        scope, name = self.scopes.key(name, node)
        held = [bound.get((scope, name, each)) for each in self.order.reaching(scope, name, node)] if scope else []
        return held[-1] if held and None not in held else None

    def _pool_made(self, call: ast.Call) -> bool:
        """`ThreadPoolExecutor(16)`, `multiprocessing.Pool()`: a thread or process pool made (by a name: a pool
        reached through a call's result, `import_module(m).ThreadPoolExecutor()`, is not known)."""
        return _dotted(call.func).rsplit(".", 1)[-1] in _POOLS

    def _pool(self, receiver: ast.AST, node: ast.AST) -> bool:
        """`pool` of `pool.map(...)` holds a thread or process pool (bound to it, or made there): no dataset's map.
        A map on anything else (`from_tensor_slices(x).map`, `pools[0].map`) is a dataset's."""
        if isinstance(receiver, ast.Call):
            return self._pool_made(receiver)
        return self._bound(self.pools, _dotted(receiver), node) is not None

    def _iterates(self, over: ast.AST, target: ast.AST, parts: list[ast.AST]) -> None:
        """`for f in files:` / `for i, f in enumerate(files):` (a loop or a comprehension, whose `parts` use f) over
        an open_files list: each use of f there is one of its files, opened where it is entered."""
        if isinstance(over, ast.Call) and _dotted(over.func) == "enumerate" and over.args:
            over = over.args[0]
            target = target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
        over = _viewed(over)
        if not isinstance(target, ast.Name):
            return
        listed = self._listed(over) if isinstance(over, ast.Call) else self._bound(self.open_files, _dotted(over), over)
        if listed is None:
            return
        for part in parts:
            for node in ast.walk(part):
                if isinstance(node, ast.Name) and node.id == target.id and isinstance(node.ctx, ast.Load):
                    self.iterated[id(node)] = listed

    def _files(self, node: ast.AST) -> str | None:
        """The URL of the open_files list `files[index]` indexes (`self.files[index]` in a method of its class), or
        whose file a loop variable over it is (`for f in files:`)."""
        if isinstance(node, ast.Name):
            return self.iterated.get(id(node))
        if not isinstance(node, ast.Subscript):
            return None
        return self._bound(self.open_files, _dotted(node.value), node)

    def canonical(self, name: str) -> str:
        """A dotted name with its first part as imported: `wds.WebDataset` -> `webdataset.WebDataset`."""
        if not name:
            return ""
        head, _, rest = name.partition(".")
        origin = self.aliases.get(head)
        return f"{origin}.{rest}".rstrip(".") if origin else name

    def _filesystem(self, call: ast.Call) -> tuple[str, str] | None:
        name = self.canonical(_dotted(call.func))
        if name in _REMOTE_FS:
            return _REMOTE_FS[name]
        if name in ("fsspec.filesystem", "fsspec.core.filesystem"):
            protocol = self.resolve(call.args[0]) if call.args else None
            protocol = protocol if protocol is not None else self._keyword(call, "protocol")
            if isinstance(protocol, str) and protocol in REMOTE_PROTOCOLS:
                return "fsspec", protocol
        if name in _FROM_URL:  # -> (filesystem, path), of the URL's scheme (a local path or file:// is none)
            url = self.prefix(call.args[0] if call.args else _keyword_node(call, _FROM_URL[name][1]))
            if url and _remote(url):
                return _FROM_URL[name][0], url.partition("://")[0].lower()
        return None

    def _listed(self, call: ast.Call) -> str | None:
        """The remote URL `fsspec.open_files(url)` lists files of (each opened only when entered), or None."""
        if self.canonical(_dotted(call.func)) not in ("fsspec.open_files", "fsspec.core.open_files"):
            return None
        url = self.prefix(call.args[0] if call.args else _keyword_node(call, "urlpath"))
        protocol = self._keyword(call, "protocol")
        if isinstance(protocol, str) and protocol in REMOTE_PROTOCOLS and url and "://" not in url:
            url = f"{protocol}://{url}"
        return url if url and _remote(url) and self._mode_reads(call, 1) else None

    def _hf_stream(self, call: ast.Call) -> tuple[str | None, str] | None:
        """(URL, storage) of a Hugging Face dataset `load_dataset(..., streaming=True)` streams from remote storage:
        its data_files' or data_dir's URL (s3://, hf://), or the Hub's for a dataset named by its repo
        ("hf://datasets/allenai/c4"); None without streaming or for local files."""
        name = _dotted(call.func)
        if name.rsplit(".", 1)[-1] != "load_dataset" or self._keyword(call, "streaming") is not True:
            return None
        if self.canonical(name) != "datasets.load_dataset" and "datasets" not in self.tops:
            return None
        path = self.resolve(call.args[0] if call.args else _keyword_node(call, "path"))
        given = [
            node
            for index, key in ((3, "data_files"), (2, "data_dir"))
            if (node := call.args[index] if len(call.args) > index else _keyword_node(call, key)) is not None
        ]
        if given:
            where = self.prefix(_first_value(given[0]))
            if where is not None:
                return (where, _storage_of(where)) if _remote(where) else None
            if isinstance(path, str) and path.lower() in _HF_BUILDERS:
                return None  # files named by something computed: cannot tell where they are
        if isinstance(path, str):
            if path.startswith(("/", ".", "~")) or path.lower() in _HF_BUILDERS or _remote(path):
                return (path, _storage_of(path)) if _remote(path) else None
            return f"hf://datasets/{path}", "http"
        return None, "remote"  # a dataset named by a flag, streamed from wherever it is

    def streams(self, call: ast.Call) -> bool:
        """A Hugging Face dataset streamed from remote storage as training reads it (no download before training)."""
        return self._hf_stream(call) is not None

    def _keyword(self, call: ast.Call, name: str) -> object:
        return next((self.resolve(kw.value) for kw in call.keywords if kw.arg == name), None)

    def prefix(self, node: ast.AST | None, depth: int = 0) -> str | None:
        """The literal text a string expression starts with: a constant, an f-string's leading text (its leading
        values too, where `value` knows them: `f"{self.root}/{key}"`), `"s3://b/" + key`'s left side, what `value`
        knows of it (a module constant, an argparse option, a name or parameter bound to one); None when it starts
        with something computed."""
        if depth == 0:
            self._steps = self._STEPS
        if node is None:
            return None
        if isinstance(node, ast.JoinedStr):
            text = ""
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    text += part.value
                    continue
                plain = (
                    isinstance(part, ast.FormattedValue) and part.format_spec is None and part.conversion in (-1, 115)
                )
                held = self.value(part.value, depth + 1) if plain else None
                if not isinstance(held, str):
                    break
                text += held
            return text or None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.prefix(node.left, depth)
        if isinstance(node, ast.IfExp):
            return _either(self.prefix(node.body, depth + 1), self.prefix(node.orelse, depth + 1))
        value = self.value(node, depth)
        if isinstance(value, list | tuple) and value:
            value = value[0]
        return value if isinstance(value, str) else None

    # --- values computed at run time: a URI from the command line, handed on ---
    _STRING_METHODS = {"rstrip", "lstrip", "strip", "removesuffix", "removeprefix"}
    _DEPTH = 8  # how many bindings, parameters and attributes one value is followed through
    _STEPS = 256  # and how many expressions at most, all paths together

    def value(self, node: ast.AST | None, depth: int = 0) -> object:
        """What an expression holds where the code tells, all its bindings agreeing: a literal, a module constant or
        an argparse option (`resolve`: `args.data_root` is the value the job's launch line gives, else the default),
        a name bound to one where it is read (`root = args.data_root`), a parameter that every call of its function
        or class in the file hands one (`Shards(args.data_root, "train")` -> `root` in `Shards.__init__`, or the
        parameter's default), `self.root` its class binds to one, `root.rstrip("/")` of one. None for anything
        else: a value that is not known is no read."""
        if depth == 0:
            self._steps = self._STEPS
        self._steps -= 1
        if node is None or depth > self._DEPTH or self._steps < 0:
            return None
        found = self.resolve(node)
        if found is not None:
            return found
        if isinstance(node, ast.Name):
            return self._name_value(node, depth)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return self._attribute_value(node, depth)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and self.uris:
            return self.uris.get(f"{node.value.id}.{node.attr}")  # `import common`, then `common.DATA_URI`
        if isinstance(node, ast.JoinedStr):  # whole only where every part is known
            parts = []
            for part in node.values:
                if isinstance(part, ast.FormattedValue) and part.format_spec is None and part.conversion in (-1, 115):
                    parts.append(self.value(part.value, depth + 1))
                else:
                    parts.append(part.value if isinstance(part, ast.Constant) else None)
            return "".join(parts) if all(isinstance(part, str) for part in parts) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            return left + right if isinstance(left, str) and isinstance(right, str) else None
        if isinstance(node, ast.IfExp):  # `args.data_root if not args.debug else "/local/debug"`
            return _either(self.value(node.body, depth + 1), self.value(node.orelse, depth + 1))
        if isinstance(node, ast.Call) and not node.keywords:
            if _dotted(node.func) == "str" and len(node.args) == 1:
                held = self.value(node.args[0], depth + 1)
                return held if isinstance(held, str) else None
            if isinstance(node.func, ast.Attribute) and node.func.attr in self._STRING_METHODS and len(node.args) <= 1:
                held = self.value(node.func.value, depth + 1)
                given = [self.resolve(arg) for arg in node.args]
                if isinstance(held, str) and all(isinstance(arg, str) for arg in given):
                    return getattr(held, node.func.attr)(*given)
        return None

    def holder(self, node: ast.Attribute) -> str | None:
        """The name `self.args` holds in a method of its class, all its class's bindings of it agreeing (`self.args =
        args`, `self.hparams = hparams`): what that name holds (the parsed options, where `resolve` knows it) is
        what `self.args` holds."""
        owner = self.owners.get(id(node))
        if owner is None or _dotted(node).count(".") != 1:
            return None
        names = self._attribute(self.named, owner, node.attr, None) or {None}
        return next(iter(names)) if len(names) == 1 else None

    @staticmethod
    def _agreed(values: list) -> object:
        """The one value all of `values` are (none unknown), else None."""
        if not values or any(each is None for each in values):
            return None
        first = values[0]
        return first if all(each == first and type(each) is type(first) for each in values) else None

    def _name_value(self, node: ast.Name, depth: int) -> object:
        """A plain name's value: of each of its bindings in effect there (`_Order`), an assignment's value, a
        parameter's (`_parameter_value`), or what an import of it from another of the job's files holds there (`from
        common import DATA_URI`: `incoming`)."""
        return self._held_at(node.id, node, depth)

    def _held_at(self, name: str, node: ast.AST, depth: int) -> object:
        """`_name_value` of the name `name` used at `node` (the module itself: where the module ends)."""
        scope, name = self.scopes.key(name, node)
        if not scope:
            return None
        values = []
        for binding in self.order.reaching(scope, name, node):
            statement = self._index()["statements"].get(binding)
            held = None
            if isinstance(statement, ast.ImportFrom):
                alias = next((a for a in statement.names if (a.asname or a.name) == name), None)
                kind, given = self.incoming.get((statement.module, statement.level, alias and alias.name), (None, None))
                held = given if kind == "value" else None
            elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                if isinstance(statement.targets[0], ast.Name):
                    held = self.value(statement.value, depth + 1)
            elif isinstance(statement, ast.AnnAssign | ast.NamedExpr) and isinstance(statement.target, ast.Name):
                held = self.value(statement.value, depth + 1)  # `root: str = ...`, `(root := ...)`
            elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and statement.name != name:
                held = self._parameter_value(statement, name, depth + 1)
            values.append(held)
        return self._agreed(values)

    def _attribute_value(self, node: ast.Attribute, depth: int) -> object:
        """`self.root` in a method of its class: what the class (else its first base in the file that binds it)
        binds it to, every binding agreeing (`self.root = root.rstrip("/")` in `__init__`)."""
        owner = self.owners.get(id(node))
        if owner is None:
            return None
        index = self._index()
        for cls in self._class_and_bases(owner):
            bound = index["attributes"].get(f"{cls}.{node.attr}")
            if bound is not None:
                return self._agreed([self.value(each, depth + 1) if each is not None else None for each in bound])
        return None

    def _parameter_value(self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, depth: int) -> object:
        """A parameter's value: what each call of its function in the file hands it, or its default where a call
        hands none, all agreeing. A class's `__init__` is called where the class (or a subclass without an
        `__init__` of its own) is made; a method other than `__init__` by `self.method(...)`; a function by its
        name. A function also named anywhere but as a call's callee (handed on as a callback), decorated, or called
        with `*args` / `**kwargs`: not known."""
        if function.decorator_list:
            return None
        arguments = function.args
        positional = [each.arg for each in [*arguments.posonlyargs, *arguments.args]]
        keyword_only = [each.arg for each in arguments.kwonlyargs]
        if name in positional:
            index = positional.index(name)
            first_default = len(positional) - len(arguments.defaults)
            default = arguments.defaults[index - first_default] if index >= first_default else None
        elif name in keyword_only:
            index, default = None, arguments.kw_defaults[keyword_only.index(name)]
        else:
            return None  # *args, **kwargs
        calls, external = self._calls_of(function), self._external_calls(function)
        if calls is None or external is None or not calls + external:
            return None
        values = []
        for given, bound_first in external:  # calls in another of the job's files, their arguments' values known
            if given is None:
                return None
            positional, keywords = given[0], dict(given[1])
            if name in keywords:
                values.append(keywords[name])
            elif index is not None and index - bound_first < 0:
                return None
            elif index is not None and index - bound_first < len(positional):
                values.append(positional[index - bound_first])
            else:
                values.append(self.value(default, depth + 1) if default is not None else None)
        for call, bound_first in calls:
            if any(isinstance(arg, ast.Starred) for arg in call.args) or any(kw.arg is None for kw in call.keywords):
                return None
            handed = next((kw.value for kw in call.keywords if kw.arg == name), None)
            if handed is None and index is not None:
                at = index - bound_first  # `self` is handed by the call's object, not in its arguments
                if at < 0:
                    return None
                handed = call.args[at] if at < len(call.args) else None
            handed = handed if handed is not None else default
            values.append(self.value(handed, depth + 1) if handed is not None else None)
        return self._agreed(values)

    def _calls_of(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[ast.Call, int]] | None:
        """Every call of `function` in the file, with how many of its first parameters the call's object binds (1 for
        a method: `self`); None where it may be called in some other way too."""
        index = self._index()
        owner = index["methods"].get(id(function))
        if owner is None:  # a function: called by its name, its only def in the file
            if index["defs"].get(function.name, 0) != 1:
                return None
            uses = index["names"].get(function.name, [])
            calls = [index["callee"].get(id(use)) for use in uses]
            return None if None in calls else [(call, 0) for call in calls]
        family = {owner} | {cls for cls in self.classes if owner in self._lineage(cls)}
        if function.name == "__init__":
            if any(index["inits"].get(cls) for cls in family - {owner}):
                return None  # a subclass's own __init__ hands this one whatever it hands super().__init__
            calls = []
            for use in (use for cls in family for use in index["names"].get(cls, [])):
                call = index["callee"].get(id(use))
                if call is not None:
                    calls.append((call, 1))
                elif id(use) not in index["typing"]:  # handed on (`factory = Shards`), made elsewhere
                    return None
            return calls
        calls = []
        for use in index["attribute_uses"].get(function.name, []):
            call = index["callee"].get(id(use))
            if call is None or _dotted(use.value) != "self" or self.owners.get(id(use)) not in family:
                return None
            calls.append((call, 1))
        return calls

    def _external_calls(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list | None:
        """The calls the job's other files make of `function` (`incoming`): of a module-level function by its name, of
        a module-level class's `__init__` where the class (or a subclass in the file without an `__init__` of its own)
        is made; as (the call's arguments' values, how many first parameters its object binds). None where one of
        them is made in a way not followed. A method's calls through an instance made elsewhere are not seen. The
        names asked for are noted (`asked`): a file none of whose asked for is handed anything reads the same."""
        index = self._index()
        owner = index["methods"].get(id(function))
        if owner is None:
            names, bound_first = ([function.name] if function in self.tree.body else []), 0
        elif function.name == "__init__":
            top = {node.name for node in self.tree.body if isinstance(node, ast.ClassDef)}
            family = {owner} | {cls for cls in self.classes if owner in self._lineage(cls)}
            names, bound_first = sorted(family & top), 1
        else:
            return []
        self.asked.update(names)
        if not self.incoming or not names:
            return []
        if "*" in self.incoming:
            return None
        calls = []
        for name in names:
            if name in self.incoming:
                if self.incoming[name] is None:
                    return None
                calls.extend((given, bound_first) for given in self.incoming[name])
        return calls

    def exports(self, modules: tuple[frozenset, ...]) -> dict:
        """What this file hands the functions and classes it imports from the job's other files: `modules` sets of the
        (module, level) pairs an import may name one by (`from data import Shards`: ("data", 0); `from .data import
        Shards`: ("data", 1); `import data`, then `data.Shards(...)`). (module, level, name) -> each call's arguments'
        values ((positional values, (keyword, value) pairs); a call with `*args` / `**kwargs` None), or None where the
        name is also used but as a callee or an annotation (handed on, subclassed): made elsewhere, with anything.
        "*" as the name: the module itself handed on, or a star import."""
        if not any(modules):
            return {}
        names: dict[str, tuple] = {}  # local name -> (module, level, name) it imports
        held: dict[str, tuple] = {}  # local dotted name of a module imported whole -> (module, level)
        found: dict[tuple, list | None] = {}
        for node in self.imports:
            if isinstance(node, ast.ImportFrom) and any((node.module, node.level) in each for each in modules):
                for alias in node.names:
                    if alias.name == "*":
                        found[(node.module, node.level, "*")] = None
                    else:
                        names[alias.asname or alias.name] = (node.module, node.level, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if any((alias.name, 0) in each for each in modules):
                        held[alias.asname or alias.name] = (alias.name, 0)
        if not names and not held:
            return found
        index = self._index()
        bases = {id(part) for node in ast.walk(self.tree) if isinstance(node, ast.ClassDef) for part in node.bases}

        def use(key: tuple, node: ast.AST) -> None:
            if found.get(key, []) is None:
                return
            call = index["callee"].get(id(node))
            if call is not None:
                found.setdefault(key, []).append(self._handed_values(call))
            elif id(node) in bases or id(node) not in index["typing"]:
                found[key] = None

        for local, key in names.items():
            for node in index["names"].get(local, []):
                use(key, node)
        for local, (module, level) in held.items():
            head, reached = local.split(".")[0], 0
            for attribute, uses in index["attribute_uses"].items():
                for node in uses:
                    if _dotted(node.value) == local:
                        reached += 1
                        use((module, level, attribute), node)
            if len(index["names"].get(head, [])) > reached:  # the module named but for an attribute of it
                found[(module, level, "*")] = None
        return {key: tuple(calls) if calls is not None else None for key, calls in found.items()}

    def takes(self, modules: tuple[frozenset, ...]) -> tuple:
        """The (module, level, name) of each name this file imports from the job's other files (`from common import
        fs`, by the (module, level) pairs `modules` sets hold, as for `exports`; name "*" for a module imported whole,
        `import common`, whose names are read as `common.fs`): what each holds there it holds here (`provides`, handed
        back in `incoming`)."""
        taken = set()
        for node in self.imports:
            if isinstance(node, ast.ImportFrom) and any((node.module, node.level) in each for each in modules):
                taken.update((node.module, node.level, alias.name) for alias in node.names if alias.name != "*")
            elif isinstance(node, ast.Import):
                taken.update((a.name, 0, "*") for a in node.names if any((a.name, 0) in each for each in modules))
        return tuple(sorted(taken))

    def provides(self) -> dict:
        """What this file's module-level names hold where the module ends, for the job's files that import them
        (`from common import fs`): name -> ("filesystem", (client, scheme)) for `fs = s3fs.S3FileSystem()`, ("session",
        client) for `session = requests.Session()`, ("value", uri) for a remote URI, `DATA_URI = "s3://b/x"` (or one
        made of known values, `f"{ROOT}/train"`); as a function here that reads the name would see it."""
        module, found = id(self.tree), {}
        for kind, bound in (("filesystem", self.filesystems), ("session", self.sessions)):
            for key in bound:
                if isinstance(key, tuple) and key[0] == module and key[1] not in found:
                    held = self._plain(bound, key[1], self.tree)
                    if held is not None:
                        found[key[1]] = (kind, held)
        for statement in self.tree.body:  # only names a URI literal is written into (the rest are not followed)
            if not isinstance(statement, ast.Assign | ast.AnnAssign) or statement.value is None:
                continue
            if not any(
                isinstance(part, ast.Constant) and isinstance(part.value, str) and _remote(part.value)
                for part in ast.walk(statement.value)
            ):
                continue
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id not in found:
                    held = self._held_at(target.id, self.tree, 0)
                    if isinstance(held, str) and _remote(held):
                        found[target.id] = ("value", held)
        return found

    def _handed_values(self, call: ast.Call) -> tuple | None:
        """The values a call hands (`value`), as (positional, (keyword, value) pairs); None with `*args` or
        `**kwargs`."""
        if any(isinstance(arg, ast.Starred) for arg in call.args) or any(kw.arg is None for kw in call.keywords):
            return None

        def known(node: ast.AST) -> object:
            held = self.value(node)
            return held if isinstance(held, str | int | float | bool) else None

        return tuple(known(arg) for arg in call.args), tuple((kw.arg, known(kw.value)) for kw in call.keywords)

    def _lineage(self, cls: str) -> set[str]:
        """A class's bases in the file, theirs too."""
        seen, pending = set(), list(self.classes.get(cls, []))
        while pending:
            each = pending.pop()
            if each not in seen:
                seen.add(each)
                pending.extend(self.classes.get(each, []))
        return seen

    def _index(self) -> dict:
        """The file's statements and uses of names and attributes (made once, when a value is first followed to a
        name, a parameter or an attribute)."""
        if self._uses is not None:
            return self._uses
        index: dict = {"names": {}, "attribute_uses": {}, "callee": {}, "defs": {}, "methods": {}, "inits": {}}
        index["typing"] = set()  # ids of the names in annotations and a class's bases: a class named, not made
        # id of an assignment or a def -> it: what a binding `_Order` names by its statement holds (`_name_value`)
        index["statements"] = {}
        index["attributes"] = {}  # "Shards.root" -> the values its class binds self.root to (None: not one plainly)
        for node in ast.walk(self.tree):
            if isinstance(
                node,
                ast.Assign | ast.AnnAssign | ast.NamedExpr | ast.FunctionDef | ast.AsyncFunctionDef | ast.ImportFrom,
            ):
                index["statements"][id(node)] = node
            if isinstance(node, ast.Call):
                index["callee"][id(node.func)] = node
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                index["names"].setdefault(node.id, []).append(node)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                index["attribute_uses"].setdefault(node.attr, []).append(node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                index["defs"][node.name] = index["defs"].get(node.name, 0) + 1
                typed = [node.returns, *(a.annotation for a in ast.walk(node.args) if isinstance(a, ast.arg))]
                index["typing"].update(id(part) for each in typed if each is not None for part in ast.walk(each))
            elif isinstance(node, ast.AnnAssign):
                index["typing"].update(id(part) for part in ast.walk(node.annotation))
            if isinstance(node, ast.ClassDef):
                index["typing"].update(id(part) for base in node.bases for part in ast.walk(base))
                for part in node.body:
                    if isinstance(part, ast.FunctionDef | ast.AsyncFunctionDef):
                        index["methods"][id(part)] = node.name
                        index["inits"][node.name] = index["inits"].get(node.name) or part.name == "__init__"
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                plain = isinstance(node, ast.Assign | ast.AnnAssign) and len(targets) == 1
                for target in targets:
                    for each in ast.walk(target):
                        name = _dotted(each) if isinstance(each, ast.Attribute) else ""
                        owner = self.owners.get(id(node))
                        if name.startswith("self.") and name.count(".") == 1 and owner is not None:
                            held = node.value if plain and each is target else None
                            index["attributes"].setdefault(f"{owner}.{each.attr}", []).append(held)
        self._uses = index
        return index

    def _mode_reads(self, call: ast.Call, index: int) -> bool:
        """Opened for reading: its mode (positional at `index`, or `mode=`) says r, or is not given."""
        node = call.args[index] if len(call.args) > index else None
        mode = self.resolve(node) if node is not None else self._keyword(call, "mode")
        if node is not None and mode is None:
            return False  # a computed mode: cannot tell
        return mode is None or (isinstance(mode, str) and not set(mode) & set("wax+"))

    # --- the walk ---
    def enter(self, function: str) -> None:
        self.calls.setdefault(function, set())

    def hook(self, function: str, method: str, bases: list[str]) -> None:
        """A method of a class, to tell whether it runs per sample."""
        dataset = any("Dataset" in base or "DataPipe" in base for base in bases)
        if method in _SAMPLE_HOOKS or (method in _STREAM_HOOKS and dataset):
            self.roots.setdefault(function, "")

    def called(self, caller: str | None, callee: str | None) -> None:
        if caller and callee:
            self.calls.setdefault(caller, set()).add(callee)

    def callback(self, call: ast.Call, last: str, owner: str | None) -> None:
        """Functions handed to `.map(...)`, `.from_generator(...)`, or a DataLoader's `collate_fn`: per sample. A lambda
        handed there is one such function (`collate_fn=lambda keys: [session.get(url + k) for k in keys]`): the walk
        reads its body as a function of its own (`lambda_name`), not as part of the function it is written in."""
        method = isinstance(call.func, ast.Attribute)
        how = _CALLBACKS.get(last) if method and not self._pool(call.func.value, call) else None
        if how and "datasets" in self.tops and not (self.tops & _LAZY_MAPS or self.lazy_datasets):
            how = None  # Hugging Face datasets' .map runs over the whole set once, before training (and caches it)
        handed = list(call.args) if how else []
        for keyword in call.keywords:
            if keyword.arg == "collate_fn":
                handed.append(keyword.value)
                how = how or "per batch as collate_fn"
        for argument in handed:
            if isinstance(argument, ast.Lambda):  # its body runs per sample: a function of its own, named by its line
                self.lambdas.setdefault(id(argument), f"a lambda at line {argument.lineno}")
                self.roots.setdefault(self.lambdas[id(argument)], f"called {how}")
            self._handed(argument, f"called {how}", owner, set())

    def _handed(self, argument: ast.AST, how: str, owner: str | None, seen: set[int]) -> None:
        """The functions a callback names run per sample: `fetch`, `self._fetch`, `partial(fetch, bucket)`, and the one
        a name bound to a functools.partial wraps (`collate = partial(fetch_batch, bucket)`, `self.collate = ...`)."""
        for node in ast.walk(argument):
            name = _dotted(node) if isinstance(node, ast.Name | ast.Attribute) else ""
            wrapped = self._bound(self.partials, name, node) if name else None
            if wrapped is not None and id(wrapped) not in seen:
                seen.add(id(wrapped))
                self._handed(wrapped, how, self.owners.get(id(wrapped)), seen)
            if name.startswith("self.") and owner:
                name = f"{owner}.{name.removeprefix('self.')}"
            if name and "." not in name or (owner and name.startswith(f"{owner}.")):
                self.roots.setdefault(name, how)

    def lambda_name(self, node: ast.Lambda) -> str | None:
        """The name a lambda handed as a callback runs under ("a lambda at line 12"), or a lambda bound to a name
        (`fetch = lambda key: ...`, "fetch", found as a def of that name is); None for any other lambda."""
        return self.lambdas.get(id(node))

    def read(self, call: ast.Call, name: str, last: str, where: tuple[str | None, bool]) -> dict | None:
        """The detail of a `remote_read` fact for this call, or None; recorded to be settled after the walk."""
        detail = self._read(call, name, last)
        return self._record(detail, where) if detail is not None else None

    def entered(self, item: ast.withitem, where: tuple[str | None, bool]) -> dict | None:
        """The detail of a `remote_read` fact for `with files[index] as handle:`, one of `fsspec.open_files`' files
        opened; None for any other `with`."""
        listed = self._files(item.context_expr)
        if listed is None:
            return None
        return self._record(self._detail("fsspec", "open", listed, _storage_of(listed)), where)

    def _record(self, detail: dict, where: tuple[str | None, bool]) -> dict:
        function, in_step_loop = where
        self.found.append((detail, function, in_step_loop, read_kind(detail["client"]) == "shards"))
        return detail

    def _read(self, call: ast.Call, name: str, last: str) -> dict | None:
        canonical = self.canonical(name)
        method = isinstance(call.func, ast.Attribute)
        receiver = _dotted(call.func.value) if method else ""
        boto = next((client for module, client in _BOTO.items() if module in self.tops), None)
        if method and boto and last in _BOTO_READS:
            bucket = self._keyword(call, "Bucket")
            if bucket is None and last in ("download_file", "fget_object") and len(call.args) >= 3:
                bucket = self.resolve(call.args[0])
            if bucket is None and isinstance(call.func.value, ast.Call):  # s3.Bucket(b).download_file(key, path)
                bucket = self._bucket(call.func.value)
            url = f"s3://{bucket}" if isinstance(bucket, str) and bucket else None
            return self._detail(boto, last, url, "object_store")
        made = call.func.value if method else None
        if boto == "boto3" and last == "get" and isinstance(made, ast.Call) and _s3_object(made):
            bucket = self._bucket(made)
            url = f"s3://{bucket}" if isinstance(bucket, str) and bucket else None
            return self._detail("boto3", "Object.get", url, "object_store")
        if boto == "boto3" and last == "get" and method and not call.args and receiver:
            url = self._bound(self.objects, receiver, call)  # obj = s3.Object(bucket, key); obj.get()
            if url is not None:
                return self._detail("boto3", "Object.get", url or None, "object_store")
        if method and last in _GCS_READS and "google.cloud.storage" in self._modules_under("google.cloud"):
            return self._detail("google-cloud-storage", last, None, "object_store")
        if method and last in _AZURE_READS and any(m.startswith("azure.storage") for m in self.modules):
            return self._detail("azure-storage-blob", last, None, "object_store")
        if method and last in _FS_READS:
            built = self._bound(self.filesystems, receiver, call)
            if built is None and isinstance(call.func.value, ast.Call):
                built = self._filesystem(call.func.value)
            if built is not None and (last != "open" or self._mode_reads(call, 1)):
                client, scheme = built
                path = self.prefix(call.args[0]) if call.args else None
                url = None
                if path:
                    url = path if "://" in path else f"{scheme}://{path}"
                return self._detail(client, last, url, _storage(scheme))
        if last in _FILESYSTEM_READERS and (handed := _keyword_node(call, "filesystem")) is not None:
            # pq.read_table(path, filesystem=fs), ds.dataset(path, filesystem=fs): read through a remote filesystem
            built = self._bound(self.filesystems, _dotted(handed), handed)
            if built is None and isinstance(handed, ast.Call):
                built = self._filesystem(handed)
            if built is not None:
                client, scheme = built
                path = self.prefix(call.args[0] if call.args else _keyword_node(call, _FILESYSTEM_READERS[last]))
                url = (path if "://" in path else f"{scheme}://{path}") if path else None
                return self._detail(client, last, url, _storage(scheme))
        if canonical in ("smart_open.open", "smart_open.smart_open") and self._mode_reads(call, 1):
            path = self.prefix(call.args[0]) if call.args else None
            if path is not None and not _remote(path):
                return None  # a local file
            return self._detail("smart_open", "open", path, _storage_of(path))
        if method and last == "open" and (listed := self._files(made)):
            # files[index].open() (or f.open() in `for f in files:`), one of fsspec.open_files' files
            return self._detail("fsspec", "open", listed, _storage_of(listed))
        if canonical == "datasets.load_dataset" or (last == "load_dataset" and "datasets" in self.tops):
            streamed = self._hf_stream(call)
            return self._detail("datasets", "load_dataset", *streamed) if streamed else None
        if canonical in ("fsspec.open", "fsspec.core.open", "fsspec.open_local"):
            path = self.prefix(call.args[0]) if call.args else None
            protocol = self._keyword(call, "protocol")
            remote = isinstance(protocol, str) and protocol in REMOTE_PROTOCOLS
            if not (remote or (path and _remote(path))) or not self._mode_reads(call, 1):
                return None
            url = path if path and "://" in path else (f"{protocol}://{path or ''}" if remote else path)
            return self._detail("fsspec", last, url, _storage(protocol) if remote else _storage_of(path))
        if canonical in _HTTP:
            return self._detail(_HTTP[canonical], last, self.prefix(call.args[0]) if call.args else None, "http")
        if method and last in ("get", "request") and (session := self._bound(self.sessions, receiver, call)):
            url = self.prefix(call.args[-1]) if call.args else None
            return self._detail(session, last, url, "http")
        if canonical.startswith("webdataset.") and last in _WEBDATASET and call.args:
            path = self.prefix(call.args[0])
            if path and _remote(path):
                return self._detail("webdataset", last, path, _storage_of(path))
            return None
        if last in _TORCHDATA and "torchdata" in self.tops:
            url = None
            storage = "object_store" if "s3" in last.lower() else ("http" if "http" in last.lower() else "remote")
            return self._detail("torchdata", last, url, storage)
        return None

    def _bucket(self, made: ast.Call) -> object:
        """The bucket a boto3 resource's `Object(bucket, key)`, `Bucket(bucket)` or `Bucket(bucket).Object(key)`
        names, resolved (None when it is computed or not said)."""
        last = made.func.attr if isinstance(made.func, ast.Attribute) else _dotted(made.func)
        if last == "Bucket":
            return self.resolve(made.args[0] if made.args else _keyword_node(made, "name"))
        if last.endswith("Object") and len(made.args) >= 2:
            return self.resolve(made.args[0])
        if last.endswith("Object") and isinstance(made.func, ast.Attribute) and isinstance(made.func.value, ast.Call):
            return self._bucket(made.func.value)
        return self.resolve(_keyword_node(made, "bucket_name")) if last.endswith("Object") else None

    def _modules_under(self, package: str) -> set[str]:
        return {m for m in self.modules if m.startswith(package)}

    @staticmethod
    def _detail(client: str, call: str, url: str | None, storage: str) -> dict:
        return {"client": client, "call": call, "url": url, "storage": storage}

    def settle(self) -> list[dict]:
        """Each read's detail with `per_sample` and `context` set (where it runs); HTTP calls that run once dropped.
        Returns the details of the reads to keep."""
        reached: dict[str, tuple[str, str]] = {}  # function -> (the per-sample function it runs under, how)
        queue = [(root, root, how) for root, how in self.roots.items()]
        while queue:
            function, root, how = queue.pop(0)
            if function in reached:
                continue
            reached[function] = (root, how)
            for callee in sorted(self.calls.get(function, ())):
                queue.append((callee, root, how))
        kept = []
        for detail, function, in_step_loop, stream in self.found:
            if stream:
                per_sample, context = True, f"a {detail['call']} stream"
            elif in_step_loop:
                per_sample, context = True, "the training-step loop"
            elif function in reached:
                root, how = reached[function]
                per_sample = True
                if function != root:
                    context = f"{function}, called from {root}"
                else:
                    context = f"{function}, {how}" if how else function
            else:
                per_sample, context = False, function or "module level"
            if not per_sample and detail["client"] in _HTTP_CLIENTS:
                detail["drop"] = True
                continue
            detail["per_sample"] = per_sample
            detail["context"] = context
            kept.append(detail)
        return kept


def _either(first: object, second: object) -> object:
    """The value of a conditional expression whose branches hold `first` and `second`: the one both hold, else the
    remote URI one holds (the other local or unknown; the first's of two), as of a filesystem either branch makes;
    else None."""
    if first == second and type(first) is type(second):
        return first
    remote = [each for each in (first, second) if isinstance(each, str) and _remote(each)]
    return remote[0] if remote else None


def _made(value: ast.AST) -> list[ast.Call]:
    """The calls whose result a binding may hold: the value, a call; the default after `or` (`self.fs = fs or
    fsspec.filesystem("s3")`, the one made when none is given); either branch of a conditional expression (`fs =
    s3fs.S3FileSystem() if remote else LocalFileSystem()`: of two, a remote one counts, as a default does)."""
    if isinstance(value, ast.Call):
        return [value]
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        return _made(value.values[-1])
    if isinstance(value, ast.IfExp):
        return [*_made(value.body), *_made(value.orelse)]
    return []


def _given(value: ast.AST) -> list[ast.AST]:
    """What a binding may hold as it is handed (`self.fs = fs`): the value; the first of `fs or ...`; either branch
    of `fs if fs is not None else ...`."""
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        return _given(value.values[0])
    if isinstance(value, ast.IfExp):
        return [*_given(value.body), *_given(value.orelse)]
    return [value]


def _s3_object(made: ast.Call) -> bool:
    """`s3.Object(bucket, key)`, `boto3.resource("s3").Object(...)`, `s3.Bucket(b).Object(key)`: a boto3 resource's
    object, made by a name or on a resource or bucket made there (`cache.lookup(b).Object(k)` is none)."""
    if _dotted(made.func).endswith("Object"):
        return True
    func = made.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "Object"
        and isinstance(func.value, ast.Call)
        and dotted(func.value.func).rsplit(".", 1)[-1] in ("resource", "Bucket")
    )


def _remote(path: str) -> bool:
    if path.startswith("pipe:"):
        return any(word in path for word in _REMOTE_PIPE)
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.lower() in REMOTE_PROTOCOLS


def _keyword_node(call: ast.Call, name: str) -> ast.AST | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def _first_value(node: ast.AST) -> ast.AST:
    """A data_files mapping's or list's first entry ({"train": "s3://..."}, ["s3://..."]), else the node itself."""
    if isinstance(node, ast.Dict) and node.values:
        return _first_value(node.values[0])
    if isinstance(node, ast.List | ast.Tuple) and node.elts:
        return _first_value(node.elts[0])
    return node


def _storage(scheme: str | None) -> str:
    scheme = (scheme or "").lower()
    if scheme in ("http", "https", "hf"):  # hf:// is the Hugging Face Hub, over HTTPS
        return "http"
    if scheme in ("hdfs", "webhdfs"):
        return "hdfs"
    return "object_store" if scheme else "remote"


def _storage_of(path: str | None) -> str:
    if not path:
        return "remote"
    if path.startswith("pipe:"):
        return "http" if ("curl" in path or "wget" in path) and "s3://" not in path else "object_store"
    return _storage(path.partition("://")[0] if "://" in path else "")


_VIEWS = {"reversed", "list", "tuple", "sorted", "islice", "itertools.islice"}


def _viewed(over: ast.AST) -> ast.AST:
    """The list a loop runs over a simple view of: `files[:10]`, `files[start:end]`, `reversed(files)`,
    `islice(files, n)` -> `files`; anything else as it is (`files[0]` is one file, no list)."""
    while True:
        if isinstance(over, ast.Subscript) and isinstance(over.slice, ast.Slice):
            over = over.value
        elif isinstance(over, ast.Call) and _dotted(over.func) in _VIEWS and over.args:
            over = over.args[0]
        else:
            return over


class _Scopes:
    """Python's scopes of a file's plain names: each function (a lambda, a class body) binds its own, which hide the
    module's; a function sees its enclosing functions' (a closure) and the module's, not a class body's; `global` and
    `nonlocal` bind the module's or an enclosing function's. Comprehensions are read as part of their function."""

    def __init__(self, tree: ast.Module):
        self.module = tree
        self.scope: dict[int, ast.AST] = {}  # id of a node -> the innermost scope it is in
        self.parent: dict[int, ast.AST] = {}  # id of a scope -> the scope it is in
        self.local: dict[int, set[str]] = {id(tree): set()}  # id of a scope -> the names it binds
        self.declared: dict[int, dict[str, str]] = {}  # id of a scope -> name -> "global" / "nonlocal"
        self._visit(tree, tree)

    def key(self, name: str, node: ast.AST) -> tuple[int, str]:
        """(id of the scope that binds `name` as seen at `node`, name); (0, name) for a name no scope binds."""
        scope, first = self.scope.get(id(node), self.module), True
        while scope is not None:
            declared = self.declared.get(id(scope), {}).get(name)
            if declared == "global":
                return id(self.module), name
            visible = first or not isinstance(scope, ast.ClassDef)  # a class body's names are not its methods'
            if visible and declared is None and name in self.local[id(scope)]:
                return id(scope), name
            scope, first = self.parent.get(id(scope)), False
        return 0, name

    def _bind(self, scope: ast.AST, name: str) -> None:
        self.local[id(scope)].add(name)

    def _open(self, scope: ast.AST, inner: ast.AST) -> None:
        self.parent[id(inner)] = scope
        self.local[id(inner)] = set()

    def _visit(self, node: ast.AST, scope: ast.AST) -> None:
        self.scope[id(node)] = scope
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = node.args
            outer = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
            if not isinstance(node, ast.Lambda):
                self._bind(scope, node.name)
                outer += [*node.decorator_list, *([node.returns] if node.returns else [])]
            for part in outer:
                self._visit(part, scope)
            self._open(scope, node)
            params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            params += [each for each in (arguments.vararg, arguments.kwarg) if each is not None]
            for param in params:
                self._bind(node, param.arg)
                self._visit(param, node)
            for part in node.body if isinstance(node.body, list) else [node.body]:
                self._visit(part, node)
            return
        if isinstance(node, ast.ClassDef):
            self._bind(scope, node.name)
            for part in [*node.decorator_list, *node.bases, *node.keywords]:
                self._visit(part, scope)
            self._open(scope, node)
            for part in node.body:
                self._visit(part, node)
            return
        if isinstance(node, ast.Global | ast.Nonlocal):
            kind = "global" if isinstance(node, ast.Global) else "nonlocal"
            self.declared.setdefault(id(scope), {}).update(dict.fromkeys(node.names, kind))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            self._bind(scope, node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                self._bind(scope, alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._bind(scope, node.name)
        elif isinstance(node, ast.comprehension):  # its target is the comprehension's own, not the function's
            self.scope[id(node)] = scope
            for part in ast.walk(node.target):
                self.scope[id(part)] = scope
            for part in [node.iter, *node.ifs]:
                self._visit(part, scope)
            return
        for child in ast.iter_child_nodes(node):
            self._visit(child, scope)


_Bindings = dict[str, frozenset[int]]  # name -> ids of the statements whose binding of it may be in effect


class _Order:
    """Which bindings of a plain name may be in effect where it is used, in statement order: `fs = LocalFileSystem()`
    then `fs.open(...)` then `fs = s3fs.S3FileSystem()` reads locally. Each scope's body is read as it runs: an `if`
    leaves the bindings of either branch (both may be), a loop those of its body and of before it, a `try` those of
    any point in its body to its handlers, a `return` or `raise` none. A binding is known by the id of the statement
    (an assignment, a `with` item, a `def`; a function's for its parameters). A use in a function of a name its
    enclosing function or the module binds (a closure, a global) sees the bindings that scope ends with, and those
    made through `global` / `nonlocal`: it runs after them, as a callback or a function called from main() does.
    A name first bound to None (`fs = None`, then `if remote: fs = s3fs.S3FileSystem()`) is read through only once
    bound to something else: the placeholder is no binding in effect."""

    def __init__(self, tree: ast.Module, scopes: _Scopes):
        self.scopes = scopes
        self.at: dict[int, _Bindings] = {}  # id of a node of an expression -> the bindings in effect as it runs
        self.ends: dict[int, _Bindings] = {}  # id of a scope -> the bindings it ends with (any return included)
        self.elsewhere: dict[tuple[int, str], set[int]] = {}  # (scope, name) -> bindings made in another scope
        self.position: dict[int, tuple[int, int]] = {}  # id of a binding -> its line and column
        self.placeholders: set[int] = set()  # ids of bindings to None
        self._exits: list[list[_Bindings]] = []
        self._scope(tree, tree.body, {})

    def reaching(self, scope: int, name: str, node: ast.AST) -> list[int]:
        """The ids of the bindings of `name` (bound by `scope`) that may be in effect at `node`, earliest first."""
        state = self.at.get(id(node))
        own = self.scopes.scope.get(id(node))
        if state is not None and name in state:
            found = set(state[name])
        elif state is not None and own is not None and id(own) == scope:
            found = set()  # its own function binds it, but not before this point
        else:
            found = set(self.ends.get(scope, {}).get(name, ())) | self.elsewhere.get((scope, name), set())
        return sorted(found - self.placeholders, key=lambda each: self.position.get(each, (0, 0)))

    # --- reading a scope's body as it runs ---
    def _scope(self, node: ast.AST, body: list[ast.stmt], state: _Bindings) -> None:
        self._exits.append([])
        end = self._block(body, state)
        exits = self._exits.pop()
        self.ends[id(node)] = _merge(end, *exits) or {}

    def _block(self, body: list[ast.stmt], state: _Bindings | None) -> _Bindings | None:
        for statement in body:
            state = self._statement(statement, state if state is not None else {})  # code after a return: as if fresh
        return state

    def _bind(self, state: _Bindings, name: str, binding: ast.AST, at: ast.AST) -> _Bindings:
        self.position.setdefault(id(binding), (getattr(binding, "lineno", 0), getattr(binding, "col_offset", 0)))
        scope, _ = self.scopes.key(name, at)
        if scope and scope != id(self.scopes.scope.get(id(at))):  # `global fs; fs = ...`: the module's, bound here
            self.elsewhere.setdefault((scope, name), set()).add(id(binding))
        return {**state, name: frozenset({id(binding)})}

    def _targets(self, state: _Bindings, target: ast.AST, binding: ast.AST) -> _Bindings:
        """Bind every plain name a target (a tuple, a starred name) stores; an attribute's or a subscript's base is
        used."""
        if isinstance(target, ast.Name):
            return self._bind(state, target.id, binding, target)
        if isinstance(target, ast.Tuple | ast.List):
            for each in target.elts:
                state = self._targets(state, each, binding)
            return state
        if isinstance(target, ast.Starred):
            return self._targets(state, target.value, binding)
        self._mark(target, state)
        return state

    def _mark(self, node: ast.AST | None, state: _Bindings) -> _Bindings:
        """Record the bindings in effect at each node of an expression; a lambda's body is a scope of its own. Returns
        the state with the names an assignment expression (`(fs := ...)`) binds."""
        if node is None:
            return state
        pending = [node]
        bound: list[ast.NamedExpr] = []
        while pending:
            each = pending.pop()
            self.at[id(each)] = state
            if isinstance(each, ast.Lambda):
                self._lambda(each, state)
                continue
            if isinstance(each, ast.NamedExpr):
                bound.append(each)
            pending.extend(ast.iter_child_nodes(each))
        for each in bound:
            state = self._targets(state, each.target, each)
        return state

    def _lambda(self, node: ast.Lambda, state: _Bindings) -> None:
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self._mark(default, state)
        inner = self._parameters({}, node)
        self._exits.append([])
        self.ends[id(node)] = self._mark(node.body, inner)
        self._exits.pop()

    def _parameters(self, state: _Bindings, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> _Bindings:
        arguments = function.args
        params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        params += [each for each in (arguments.vararg, arguments.kwarg) if each is not None]
        for param in params:
            state = self._bind(state, param.arg, function, param)
        return state

    def _loop(self, state: _Bindings, loop: ast.For | ast.AsyncFor | ast.While, bind=None) -> _Bindings:
        """A loop's body, run from the bindings before it and those its body makes (one late in the body is in effect
        early in the next pass), in one reading however deep loops nest. Returns the bindings after the loop (before
        its else)."""
        start = _merge(state, _stored(loop.body)) or {}
        if bind is not None:
            start = bind(start)
        return _merge(state, self._block(loop.body, start)) or {}

    def _statement(self, node: ast.stmt, state: _Bindings) -> _Bindings | None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for part in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults, node.returns]:
                self._mark(part, state)
            self._scope(node, node.body, self._parameters({}, node))
            return self._bind(state, node.name, node, node)
        if isinstance(node, ast.ClassDef):
            for part in [*node.decorator_list, *node.bases, *node.keywords]:
                self._mark(part, state)
            self._scope(node, node.body, {})
            return self._bind(state, node.name, node, node)
        if isinstance(node, ast.Assign):
            state = self._mark(node.value, state)
            if isinstance(node.value, ast.Constant) and node.value.value is None:
                self.placeholders.add(id(node))
            for target in node.targets:
                state = self._targets(state, target, node)
            return state
        if isinstance(node, ast.AnnAssign):
            state = self._mark(node.value, state)
            self._mark(node.annotation, state)
            if node.value is None:
                return state
            if isinstance(node.value, ast.Constant) and node.value.value is None:
                self.placeholders.add(id(node))
            return self._targets(state, node.target, node)
        if isinstance(node, ast.AugAssign):
            self._mark(node.target, state)
            return self._targets(self._mark(node.value, state), node.target, node)
        if isinstance(node, ast.For | ast.AsyncFor):
            state = self._mark(node.iter, state)
            after = self._loop(state, node, lambda start: self._targets(start, node.target, node))
            return _merge(after, self._block(node.orelse, after))
        if isinstance(node, ast.While):
            after = self._loop(state, node, lambda start: self._mark(node.test, start))
            return _merge(after, self._block(node.orelse, after))
        if isinstance(node, ast.If):
            state = self._mark(node.test, state)
            return _merge(self._block(node.body, state), self._block(node.orelse, state))
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                state = self._mark(item.context_expr, state)
                if item.optional_vars is not None:
                    state = self._targets(state, item.optional_vars, item)
            return self._block(node.body, state)
        if isinstance(node, ast.Try | getattr(ast, "TryStar", ast.Try)):
            done = self._block(node.body, state)
            anywhere = _merge(state, done) or {}  # a handler runs after any part of the body
            handled = []
            for handler in node.handlers:
                self._mark(handler.type, anywhere)
                start = self._bind(anywhere, handler.name, handler, handler) if handler.name else anywhere
                handled.append(self._block(handler.body, start))
            after = _merge(self._block(node.orelse, done) if done is not None else None, *handled)
            if not node.finalbody:
                return after
            return self._block(node.finalbody, _merge(after, anywhere) or {})
        if isinstance(node, ast.Match):
            state = self._mark(node.subject, state)
            ends = []
            for case in node.cases:
                start = state
                for part in ast.walk(case.pattern):
                    for name in (getattr(part, "name", None), getattr(part, "rest", None)):
                        if isinstance(name, str):
                            start = self._bind(start, name, case, case.pattern)
                self._mark(case.guard, start)
                ends.append(self._block(case.body, start))
            return _merge(state, *ends)
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                state = self._bind(state, alias.asname or alias.name.split(".")[0], node, node)
            return state
        if isinstance(node, ast.Delete):
            for target in node.targets:
                self._mark(target, state)
                if isinstance(target, ast.Name):
                    state = {**state, target.id: frozenset()}
            return state
        if isinstance(node, ast.Return | ast.Raise):
            for part in ast.iter_child_nodes(node):
                state = self._mark(part, state)
            self._exits[-1].append(state)
            return None
        for part in ast.iter_child_nodes(node):  # an expression, assert, global, pass, break, continue ...
            state = self._mark(part, state)
        return state


def _stored(body: list[ast.stmt]) -> _Bindings:
    """The bindings a block makes (as `_Order` knows them), of any name, wherever in it: its nested functions' and
    classes' names, not their bodies'."""
    stored: dict[str, set[int]] = {}
    pending: list[tuple[ast.AST, ast.AST]] = [(statement, statement) for statement in body]
    while pending:
        node, binding = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stored.setdefault(node.id, set()).add(id(binding))
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stored.setdefault(node.name, set()).add(id(node))
            continue
        if isinstance(node, ast.Lambda | ast.comprehension):
            continue  # its own names (a comprehension's, read as part of its function, binds none of the function's)
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                stored.setdefault(alias.asname or alias.name.split(".")[0], set()).add(id(node))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            stored.setdefault(node.name, set()).add(id(node))
        elif isinstance(node, ast.match_case):
            for part in ast.walk(node.pattern):
                for name in (getattr(part, "name", None), getattr(part, "rest", None)):
                    if isinstance(name, str):
                        stored.setdefault(name, set()).add(id(node))
        for child in ast.iter_child_nodes(node):
            # the statement (an assignment, a loop) or the `with` item or walrus whose binding a name is
            made = child if isinstance(child, ast.withitem | ast.NamedExpr | ast.stmt) else binding
            pending.append((child, made))
    return {name: frozenset(ids) for name, ids in stored.items()}


def _merge(*states: _Bindings | None) -> _Bindings | None:
    """The bindings any of several paths leaves (None: a path that ended in a return or raise)."""
    live = [state for state in states if state is not None]
    if not live:
        return None
    merged: dict[str, frozenset[int]] = {}
    for state in live:
        for name, bindings in state.items():
            merged[name] = merged.get(name, frozenset()) | bindings
    return merged
