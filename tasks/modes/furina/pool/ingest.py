"""Read a book file into clean text: any common encoding, CRLF, stray HTML, or EPUB.

Every way a file can be unusable is an ``InputError`` naming the file.
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass
from pathlib import Path

from charset_normalizer import from_bytes

from rpbench.tasks.core.errors import InputError
from rpbench.tasks.modes.furina.records import BookRecord, Chunk

# The shortest text that can hold a scene, per language: a Chinese character carries about what three
# English letters do, so the same story is about a third as many characters long in Chinese.
MIN_BOOK_CHARS = {"en": 1500, "zh": 500}
# Ten times the longest novels (War and Peace is 3.2 MB of text); past this a file is not one book.
MAX_BOOK_BYTES = 32 * 1024 * 1024
_TAG = re.compile(r"<[^>]{0,200}>")
_BLOCK_TAG = re.compile(r"</?(p|br|div|h[1-6]|li|tr)\b[^>]{0,200}>", re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


@dataclass(frozen=True)
class Book:
    book_id: str
    title: str
    language: str
    text: str
    source: str
    encoding: str


def detect_language(text: str) -> str:
    """``zh`` when CJK ideographs outnumber Latin letters, else ``en``."""
    sample = text[:200_000]
    return "zh" if len(_CJK.findall(sample)) > len(_LATIN.findall(sample)) else "en"


def clean_text(raw: str) -> str:
    """Normalise line ends, turn block tags into paragraph breaks, drop other tags, unescape entities."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    if "<" in text and _TAG.search(text):
        text = _BLOCK_TAG.sub("\n", text)
        text = _TAG.sub("", text)
    if "&" in text:
        text = html.unescape(text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def _decode(path: Path, data: bytes) -> tuple[str, str]:
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"{path}: looks like a binary file, not a text book")
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="strict"), "utf-8-sig"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    best = from_bytes(data).best()
    if best is None or best.encoding is None:
        raise InputError(f"{path}: cannot tell the text encoding (not UTF-8, GB18030, UTF-16, ...)")
    # GBK and GB2312 are subsets of GB18030: decode with the superset so no character is lost.
    encoding = "gb18030" if best.encoding.lower() in {"gb2312", "gbk", "gb18030"} else best.encoding
    try:
        return data.decode(encoding), encoding
    except (UnicodeDecodeError, LookupError):
        raise InputError(f"{path}: undecodable text (detected {best.encoding})") from None


def _read_epub(path: Path) -> str:
    import ebooklib
    from ebooklib import epub

    try:
        book = epub.read_epub(str(path), options={"ignore_ncx": True})
    except Exception as exc:
        raise InputError(f"{path}: not a readable EPUB ({str(exc).splitlines()[0][:120]})") from None
    parts = [
        item.get_content().decode("utf-8", errors="replace")
        for item in book.get_items_of_type(ebooklib.ITEM_DOCUMENT)
    ]
    return "\n\n".join(parts)


def read_book(path: str | Path, language: str | None = None, min_chars: dict[str, int] | None = None) -> Book:
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    size = path.stat().st_size
    if size > MAX_BOOK_BYTES:
        raise InputError(f"{path}: {size / 2**20:.0f} MB is over the {MAX_BOOK_BYTES // 2**20} MB limit for one "
                         "book (split it into volumes)")
    data = path.read_bytes()
    if not data.strip():
        raise InputError(f"{path}: the file is empty")
    if path.suffix.lower() == ".epub":
        raw, encoding = _read_epub(path), "epub"
    else:
        raw, encoding = _decode(path, data)
    if raw.count("\ufffd") > 0.01 * max(len(raw), 1):
        raise InputError(f"{path}: undecodable text (many replacement characters)")
    text = clean_text(raw)
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in text[:20000])
    if printable < 0.95 * min(len(text), 20000):
        raise InputError(f"{path}: looks like a binary file, not a text book")
    lang = language or detect_language(text)
    if lang not in {"en", "zh"}:
        raise InputError(f"{path}: unsupported language '{lang}' (use en or zh)")
    need = (min_chars or MIN_BOOK_CHARS)[lang]
    if len(text) < need:
        raise InputError(f"{path}: too short to hold a scene ({len(text)} characters; a book in {lang} needs "
                         f"at least {need})")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    title = path.stem.split(".")[0].replace("_", " ")
    return Book(book_id=f"{path.stem.split('.')[0]}-{digest}", title=title, language=lang, text=text,
                source=str(path), encoding=encoding)


def rejoin(record: BookRecord, chunks: list[Chunk]) -> Book:
    """The book again from its table row and its chunks (which, joined, are its cleaned text)."""
    ordered = sorted((c for c in chunks if c.book_id == record.book_id), key=lambda c: c.chunk_index)
    return Book(book_id=record.book_id, title=record.title, language=record.language,
                text="".join(c.text for c in ordered), source=record.source, encoding=record.encoding)
