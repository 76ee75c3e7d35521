"""Reading the members of a fleet archive (.zip, .tar.gz or a folder) without extracting anything.

Members are listed and opened as binary streams straight from the container; nothing is ever
written to disk under a name the archive chose. Names that are absolute or climb out with `..`,
and links or device files, reject the whole archive (they have no business in a data export and
are the classic way to attack an extractor).

Every byte read goes through one counting stream (`_MemberStream`), so limits on member size,
total size, compression ratio and member count live in one place: `ReaderLimits`. Sizes the
archive declares are only ever used to reject early (a claim over a limit is refused before a
byte is inflated); acceptance always rests on the bytes actually counted while streaming. The
defaults are "no limit"; the service passes its configured limits (settings `ARCHIVE_MAX_*`).
"""

from __future__ import annotations

import io
import os
import re
import stat
import tarfile
import zipfile
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from fleet.canonical import RecordError
from fleet.quoting import library_error, named, quoted

MANIFEST_NAME = "manifest.json"


class ArchiveError(Exception):
    """The archive as a whole is unusable; `.error` says where and why."""

    def __init__(self, error: RecordError):
        self.error = error
        super().__init__(str(error))

    @classmethod
    def of(cls, file: str, message: str, *, row: int | None = None, field: str = "", job_id: str = "") -> ArchiveError:
        """The error of `file` (a member's name, or the archive's): a long name by its first characters and length."""
        return cls(RecordError(file=named(file), message=message, row=row, field=field, job_id=named(job_id)))


def member_quoted(name: str) -> str:
    """A member's name as an error message quotes it: in single quotes, its control characters escaped as Python
    writes them (a NUL shows as \\x00), and a long one cut to its first characters and its length, as
    `fleet.quoting.quoted` cuts any value a person sent: 'logs/aaaa…' (5,009 characters)."""
    return quoted(name if name.isprintable() else repr(name)[1:-1])


@dataclass(frozen=True)
class ReaderLimits:
    """Bounds enforced while reading (counted bytes, never the sizes the headers claim). None = unbounded."""

    max_members: int | None = None
    max_member_bytes: int | None = None
    max_total_bytes: int | None = None
    # Decompressed bytes per compressed byte, per zip member and for a whole compressed tarball.
    # Only checked past `ratio_floor_bytes`, so small, very regular files (a column of zeros) pass.
    max_ratio: float | None = None
    ratio_floor_bytes: int = 1 << 20


@dataclass(frozen=True)
class Member:
    name: str  # relative POSIX path inside the archive, e.g. "metrics/j1.csv"
    size: int | None  # size declared by the container; informative only, never trusted for limits
    compressed_size: int | None = None  # zip: the compressed bytes the member may consume


def _format_size(size: int) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"


# Exceptions the containers raise on truncated or corrupt data, while listing or while reading.
# What a corrupt container raises; a zip member name flagged as UTF-8 that is not raises UnicodeDecodeError.
_CONTAINER_ERRORS = (
    zipfile.BadZipFile,
    tarfile.TarError,
    EOFError,
    zlib.error,
    OSError,
    NotImplementedError,
    UnicodeDecodeError,
)
_DRIVE = re.compile(r"^[A-Za-z]:")


def clean_member_name(raw: str, archive: str) -> str | None:
    """The member's relative POSIX path, None for an empty name (e.g. "./"); ArchiveError if it escapes."""
    name = raw.replace("\\", "/")
    if "\x00" in name:
        raise ArchiveError.of(archive, f"member name {member_quoted(raw)} contains a NUL character")
    if name.startswith("/") or _DRIVE.match(name):
        raise ArchiveError.of(
            archive, f"member {member_quoted(raw)} has an absolute path; archive members must be relative"
        )
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveError.of(archive, f"member {member_quoted(raw)} contains a '..' path component")
    return "/".join(parts) or None


class ArchiveReader(ABC):
    """Lists an archive's regular files and opens them as binary streams.

    `members` is in container order; reading members in that order is cheapest for compressed
    tarballs (a backwards seek restarts decompression). A single top-level folder holding
    `manifest.json` (the usual result of zipping a folder) is treated as the archive root.
    """

    def __init__(self, path: Path, limits: ReaderLimits | None = None, *, name: str = ""):
        self.path = path
        self.label = name or path.name or str(path)  # how errors name the archive
        self.limits = limits or ReaderLimits()
        self._bytes_read = 0
        self._by_name: dict[str, tuple[Member, object]] = {}
        self._members: list[Member] = []

    # -- listing -------------------------------------------------------------------------------
    def _check_member_count(self, count: int) -> None:
        if self.limits.max_members is not None and count > self.limits.max_members:
            raise ArchiveError.of(
                self.label,
                f"too many members ({count} > {self.limits.max_members}; the limit is ARCHIVE_MAX_MEMBERS)",
            )

    def _check_declared_size(self, raw_name: str, size: int | None) -> None:
        """Refuse early what the container itself admits is over a limit (acceptance never relies on it)."""
        limit = self.limits.max_member_bytes
        if size is not None and limit is not None and size > limit:
            raise self._too_large(raw_name, limit)

    def _too_large(self, name: str, limit: int) -> ArchiveError:
        return ArchiveError.of(
            self.label,
            f"member {member_quoted(name)} is larger than {limit} bytes ({_format_size(limit)}) when decompressed; "
            "the limit is ARCHIVE_MAX_MEMBER_BYTES",
        )

    def _too_much(self) -> ArchiveError:
        limit = self.limits.max_total_bytes
        return ArchiveError.of(
            self.label,
            f"the archive holds more than {limit} bytes ({_format_size(limit)}) of data when decompressed; "
            "the limit is ARCHIVE_MAX_TOTAL_BYTES",
        )

    def _bomb(self, name: str, ratio: float) -> ArchiveError:
        return ArchiveError.of(
            self.label,
            f"member {member_quoted(name)} expands more than {ratio:g} times its compressed size; this looks like a "
            "decompression bomb (the limit is ARCHIVE_MAX_RATIO)",
        )

    def _collect(self, entries: list[tuple]) -> None:
        """Register (raw name, size, handle[, compressed size]) of regular files, after name checks and root finding."""
        cleaned = []
        for raw, size, handle, *rest in entries:
            name = clean_member_name(raw, self.label)
            if name is not None and not _is_os_clutter(name):
                cleaned.append((name, size, handle, rest[0] if rest else None))
        self._check_member_count(len(cleaned))
        prefix = _root_prefix([name for name, *_ in cleaned])
        for name, size, handle, compressed in cleaned:
            name = name[len(prefix) :]
            if name in self._by_name:
                raise ArchiveError.of(self.label, f"member {member_quoted(name)} appears more than once")
            member = Member(name=name, size=size, compressed_size=compressed)
            self._by_name[name] = (member, handle)
            self._members.append(member)

    @property
    def members(self) -> list[Member]:
        return list(self._members)

    def names(self) -> list[str]:
        return [member.name for member in self._members]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def member(self, name: str) -> Member:
        return self._by_name[name][0]

    # -- reading -------------------------------------------------------------------------------
    def open(self, name: str) -> BinaryIO:
        """A buffered binary stream over the member; KeyError if there is no such member."""
        member, handle = self._by_name[name]
        try:
            raw = self._open_raw(handle)
        except _CONTAINER_ERRORS as exc:
            raise self._corrupt(name, exc) from exc
        return io.BufferedReader(_MemberStream(self, member, raw), buffer_size=1 << 20)

    def read(self, name: str, max_bytes: int | None = None) -> bytes:
        """The member's bytes, or its first `max_bytes` bytes."""
        with self.open(name) as stream:
            return stream.read() if max_bytes is None else stream.read(max_bytes)

    def _corrupt(self, name: str, exc: BaseException) -> ArchiveError:
        return ArchiveError.of(
            self.label,
            f"member {member_quoted(name)} cannot be read; the archive is truncated or corrupt ({library_error(exc)})",
        )

    def _count(self, member: Member, member_bytes: int, new_bytes: int) -> None:
        """The one place where read limits are enforced, on bytes counted as they come out of the decompressor."""
        self._bytes_read += new_bytes
        limits = self.limits
        if limits.max_member_bytes is not None and member_bytes > limits.max_member_bytes:
            raise self._too_large(member.name, limits.max_member_bytes)
        if limits.max_total_bytes is not None and self._bytes_read > limits.max_total_bytes:
            raise self._too_much()
        if (
            limits.max_ratio is not None
            and member.compressed_size is not None
            and member_bytes > limits.ratio_floor_bytes
            and member_bytes > limits.max_ratio * max(member.compressed_size, 1)
        ):
            raise self._bomb(member.name, limits.max_ratio)

    @abstractmethod
    def _open_raw(self, handle) -> BinaryIO: ...

    def close(self) -> None:  # noqa: B027 - not every container has something to close
        pass

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class _MemberStream(io.RawIOBase):
    """Counts the bytes read from one member, enforces the limits and names corrupt members."""

    def __init__(self, reader: ArchiveReader, member: Member, raw: BinaryIO):
        self._reader = reader
        self._member = member
        self._name = member.name
        self._raw = raw
        self._read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self._raw.read(len(buffer))
        except _CONTAINER_ERRORS as exc:
            raise self._reader._corrupt(self._name, exc) from exc
        n = len(data)
        buffer[:n] = data
        self._read += n
        self._reader._count(self._member, self._read, n)
        return n

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def _is_os_clutter(name: str) -> bool:
    """Files that desktop archivers add by themselves (macOS resource forks, Finder and Explorer state)."""
    base = name.rsplit("/", 1)[-1]
    return (
        name.split("/", 1)[0] == "__MACOSX"
        or base in (".DS_Store", "Thumbs.db", "desktop.ini")
        or base.startswith("._")
    )


def _root_prefix(names: list[str]) -> str:
    """The "top/" prefix when the manifest sits in a single top-level folder that holds everything, else ""."""
    if MANIFEST_NAME in names or not names:
        return ""
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1:
        top = tops.pop()
        if f"{top}/{MANIFEST_NAME}" in names and all(name.startswith(top + "/") for name in names):
            return top + "/"
    return ""


class ZipReader(ArchiveReader):
    def __init__(self, path: Path, limits: ReaderLimits | None = None, *, name: str = ""):
        super().__init__(path, limits, name=name)
        try:
            self._zip = zipfile.ZipFile(path)
            infos = self._zip.infolist()
        except _CONTAINER_ERRORS as exc:
            raise ArchiveError.of(
                self.label, f"not a readable zip file; it is truncated or corrupt ({library_error(exc)})"
            ) from exc
        self._check_member_count(len(infos))
        entries = []
        declared_total = 0
        for info in infos:
            # zipfile cuts a name at its first NUL (hiding, say, ".exe"), even down to nothing:
            # judge the name as the archive stores it.
            clean_member_name(info.orig_filename, self.label)
            if not info.filename:
                raise ArchiveError.of(self.label, "a member has an empty name; the zip is corrupt")
            if info.is_dir():
                clean_member_name(info.filename, self.label)
                continue
            self._check_declared_size(info.filename, info.file_size)
            declared_total += info.file_size
            if self.limits.max_total_bytes is not None and declared_total > self.limits.max_total_bytes:
                raise self._too_much()
            mode = info.external_attr >> 16
            kind = stat.S_IFMT(mode)
            if info.create_system == 3 and kind and kind != stat.S_IFREG:  # 3 = Unix: mode bits are meaningful
                raise ArchiveError.of(
                    self.label,
                    f"member {member_quoted(info.filename)} is a {_kind_name(kind)}; only regular files are allowed",
                )
            if info.flag_bits & 0x1:
                raise ArchiveError.of(
                    self.label, f"member {member_quoted(info.filename)} is encrypted; encrypted zips are not supported"
                )
            # zipfile never feeds the decompressor more than compress_size bytes, so the ratio of
            # counted output to it is a real bound even when the header lies.
            entries.append((info.filename, info.file_size, info, info.compress_size))
        self._collect(entries)

    def _open_raw(self, handle) -> BinaryIO:
        return self._zip.open(handle)

    def close(self) -> None:
        self._zip.close()


class TarReader(ArchiveReader):
    def __init__(self, path: Path, limits: ReaderLimits | None = None, *, name: str = ""):
        super().__init__(path, limits, name=name)
        try:
            self._tar = tarfile.open(path, mode="r:*")  # noqa: SIM115 - closed by close()
            infos = self._list_tar()
        except _CONTAINER_ERRORS as exc:
            # tarfile's "could not be opened successfully" lists each compression it tried with its
            # own exception: internals to a reader, so only the plain sentence is kept.
            tried = isinstance(exc, tarfile.ReadError) and "could not be opened successfully" in str(exc)
            detail = "" if tried else f" ({library_error(exc)})"
            raise ArchiveError.of(
                self.label, f"not a readable tar archive; it is truncated or corrupt{detail}"
            ) from exc
        entries = []
        for info in infos:
            if info.isdir():
                clean_member_name(info.name, self.label)
                continue
            if not info.isreg():
                raise ArchiveError.of(
                    self.label,
                    f"member {member_quoted(info.name)} is a {_tar_kind(info)}; only regular files are allowed",
                )
            entries.append((info.name, info.size, info))
        self._collect(entries)

    def _list_tar(self) -> list[tarfile.TarInfo]:
        """The members, checking each header before its data is skipped (skipping a gzip member inflates it).

        A tarball's offsets are positions in the decompressed stream, so the end of each member is
        how much the listing itself would inflate: it is held to the total limit and, against the
        compressed file size, to the ratio limit before anything is inflated past it.
        """
        limits = self.limits
        compressed = self.path.stat().st_size
        compressed_stream = not isinstance(self._tar.fileobj, io.BufferedReader | io.FileIO)
        infos = []
        while True:
            info = self._tar.next()
            if info is None:
                break
            infos.append(info)
            self._check_member_count(len(infos))
            if info.isreg():
                self._check_declared_size(info.name, info.size)
            end = info.offset_data + (info.size if info.isreg() else 0)
            if limits.max_total_bytes is not None and end > limits.max_total_bytes:
                raise self._too_much()
            if (
                compressed_stream
                and limits.max_ratio is not None
                and end > limits.ratio_floor_bytes
                and end > limits.max_ratio * max(compressed, 1)
            ):
                raise ArchiveError.of(
                    self.label,
                    f"the tarball expands more than {limits.max_ratio:g} times its compressed size at member "
                    f"{member_quoted(info.name)}; this looks like a decompression bomb (the limit is "
                    "ARCHIVE_MAX_RATIO)",
                )
        self._tar.members = infos
        self._tar._loaded = True
        return infos

    def _open_raw(self, handle) -> BinaryIO:
        stream = self._tar.extractfile(handle)
        if stream is None:  # pragma: no cover - only for non-regular members, which were refused
            raise ArchiveError.of(self.label, f"member {member_quoted(handle.name)} is not a regular file")
        return stream

    def close(self) -> None:
        self._tar.close()


class DirectoryReader(ArchiveReader):
    """A folder laid out like an archive; links and special files are refused like in a tarball."""

    def __init__(self, path: Path, limits: ReaderLimits | None = None, *, name: str = ""):
        super().__init__(path, limits, name=name)
        entries = []
        for folder, dirnames, filenames in os.walk(path, followlinks=False):
            dirnames.sort()
            for entry in sorted(dirnames) + sorted(filenames):
                full = os.path.join(folder, entry)
                relative = os.path.relpath(full, path).replace(os.sep, "/")
                mode = os.lstat(full).st_mode
                if stat.S_ISDIR(mode):
                    continue
                if not stat.S_ISREG(mode):
                    raise ArchiveError.of(
                        self.label,
                        f"{member_quoted(relative)} is a {_kind_name(stat.S_IFMT(mode))}; only regular files are "
                        "allowed",
                    )
                entries.append((relative, os.lstat(full).st_size, full))
        self._collect(entries)

    def _open_raw(self, handle) -> BinaryIO:
        return open(handle, "rb")  # noqa: SIM115 - closed by _MemberStream


def _kind_name(kind: int) -> str:
    return {
        stat.S_IFLNK: "symbolic link",
        stat.S_IFDIR: "directory",
        stat.S_IFCHR: "character device",
        stat.S_IFBLK: "block device",
        stat.S_IFIFO: "FIFO",
        stat.S_IFSOCK: "socket",
    }.get(kind, "special file")


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.issym():
        return "symbolic link"
    if info.islnk():
        return "hard link"
    if info.ischr():
        return "character device"
    if info.isblk():
        return "block device"
    if info.isfifo():
        return "FIFO"
    return "special file"


def open_archive(path: str | os.PathLike, limits: ReaderLimits | None = None, *, name: str = "") -> ArchiveReader:
    """The reader for a .zip, a tarball (.tar, .tar.gz, .tgz) or a folder, chosen by content.

    `name` is how errors name the archive: the file the user gave, where `path` is a stored copy
    under a generated name (an upload); by default the path's own name. The name's extension never
    picks the reader while the content says otherwise; it only words the error when the content is
    no archive at all ("fake.zip is not a zip archive"), and lets a zip that does not start with
    its signature (a self-extracting one) or an old tar without the ustar magic be read.
    """
    path = Path(path)
    label = name or path.name or str(path)
    if path.is_dir():
        return DirectoryReader(path, limits, name=label)
    if not path.exists():
        raise ArchiveError.of(label, "the archive file does not exist")
    with open(path, "rb") as handle:
        head = handle.read(512)
    if not head:
        raise ArchiveError.of(label, "the archive file is empty")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return ZipReader(path, limits, name=label)
    if head.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ")) or head[257:262] == b"ustar":
        return TarReader(path, limits, name=label)
    said = label.lower()
    if said.endswith(".zip"):
        if zipfile.is_zipfile(path):
            return ZipReader(path, limits, name=label)
        raise ArchiveError.of(label, f"{named(label)} is not a zip archive (its content is not a zip file)")
    if said.endswith((".tar", ".tar.gz", ".tgz")):
        if _is_plain_tar(path):
            return TarReader(path, limits, name=label)
        kind = "tar" if said.endswith(".tar") else "tar.gz"
        content = "is not tar" if kind == "tar" else "is neither gzip nor tar"
        raise ArchiveError.of(label, f"{named(label)} is not a {kind} archive (its content {content})")
    raise ArchiveError.of(
        label,
        f"{named(label)} is not a fleet archive: its content is neither a zip file nor a tarball "
        "(expected a .zip, a .tar.gz or a folder)",
    )


def _is_plain_tar(path: Path) -> bool:
    """An uncompressed tar without the ustar magic (the old v7 format); only its first header is read."""
    try:
        with tarfile.open(path, mode="r:") as archive:
            return archive.next() is not None
    except _CONTAINER_ERRORS:
        return False
