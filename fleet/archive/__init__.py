"""Fleet archive format v1: reading containers (`reader`) and parsing them into canonical records (`parser`)."""

from fleet.archive.parser import ArchiveError, ParsedArchive, parse_archive
from fleet.archive.reader import ArchiveReader, ReaderLimits, open_archive

__all__ = ["ArchiveError", "ArchiveReader", "ParsedArchive", "ReaderLimits", "open_archive", "parse_archive"]
