"""Rebuild example-archive.zip from the example-archive/ folder beside this script.

    python docs/examples/build_example.py          # writes docs/examples/example-archive.zip
    python docs/examples/build_example.py --check  # exit 1 if the zip is out of date

The zip is reproducible: members come in a fixed order (manifest and jobs first, which suits
streaming readers, then the rest sorted), with fixed timestamps and permissions, so rebuilding an
unchanged folder gives the same file with the same zlib. `--check` compares names and contents.
"""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "example-archive"
ZIP_PATH = HERE / "example-archive.zip"
FIXED_TIME = (2026, 10, 5, 18, 0, 0)
FIRST = ("manifest.json", "jobs.csv", "jobs.jsonl")


def example_files(folder: Path = FOLDER) -> dict[str, bytes]:
    """name -> content of every file in the example folder, in the order the zip holds them."""
    paths = [p for p in folder.rglob("*") if p.is_file()]
    names = sorted(
        (p.relative_to(folder).as_posix() for p in paths),
        key=lambda n: (n not in FIRST, FIRST.index(n) if n in FIRST else 0, n),
    )
    return {name: (folder / name).read_bytes() for name in names}


def build_zip_bytes(folder: Path = FOLDER) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in example_files(folder).items():
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o100644 << 16  # a regular file, rw-r--r--
            info.create_system = 3  # Unix, so the mode bits above are meaningful
            archive.writestr(info, content)
    return buffer.getvalue()


def zip_files(path: Path = ZIP_PATH) -> dict[str, bytes]:
    """name -> content of every member of the built zip, in its order ({} when there is no zip)."""
    if not path.exists():
        return {}
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def main(argv: list[str]) -> int:
    if "--check" in argv:
        if zip_files() != example_files():
            print(f"{ZIP_PATH.name} is out of date: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    data = build_zip_bytes()
    ZIP_PATH.write_bytes(data)
    print(f"wrote {ZIP_PATH} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
