"""Token counts for budgeting the context window.

tiktoken's ``o200k_base`` (GPT-4o, GPT-4.1, o-series, GPT-5) or ``cl100k_base`` (other
models, a fair stand-in) counts tokens when its encoding file is already on disk (in
``$TIKTOKEN_CACHE_DIR``, ``$DATA_GYM_CACHE_DIR`` or tiktoken's temp cache). Otherwise — offline,
no file — the count is an estimate of one token per four UTF-8 bytes. The file's presence is
checked before tiktoken is asked for the encoding (tiktoken itself would download it, and
block), and tiktoken is imported only then (``etcode --version`` never loads it). A missing
file is fetched once in a background thread into tiktoken's cache (a few seconds' limit;
offline it just fails quietly): counts are exact from the moment it lands.
``ETCODE_TOKENIZER_DOWNLOAD=0`` turns the fetch off.

Counts are estimates either way (other vendors' tokenizers differ); the provider's reported
usage replaces them after each request.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import math
import os
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tiktoken import Encoding

log = logging.getLogger("etcode.tokens")

O200K = "o200k_base"
CL100K = "cl100k_base"
ESTIMATE = "estimate"
_URLS = {
    O200K: "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    CL100K: "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
#: Where the files are fetched from (tests point this at a local server); the cache key is
#: always the official URL, as tiktoken computes it.
_SOURCES = dict(_URLS)
#: The files' SHA-256 (tiktoken's own ``expected_hash``): a proxy's error page saved in their
#: place would make tiktoken delete it and download again, blocking a count.
_SHA256 = {
    O200K: "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    CL100K: "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
FETCH_SECONDS = 20.0
_fetching: dict[str, threading.Thread] = {}
_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss")
#: Texts are encoded in pieces of about this many characters: tiktoken's regex overflows
#: its stack on a megabyte of spaces, and BPE is slow on one giant "word".
_CHUNK = 8192
_BYTES_PER_TOKEN = 4
#: Above this many characters a text is counted from evenly spaced samples (``_SAMPLES``
#: pieces) and scaled up, unless ``exact=True``: a budget estimate needs no more.
SAMPLE_ABOVE = 256 * 1024
_SAMPLES = 32

_lock = threading.Lock()
_encodings: dict[str, Encoding | None] = {}


def encoding_name(model: str | None = None) -> str:
    """The tiktoken encoding that fits ``model`` best (``provider/model`` or a bare id)."""
    name = (model or "").rsplit("/", 1)[-1].lower()
    return O200K if name.startswith(_O200K_PREFIXES) else CL100K if name else O200K


def _cache_dirs() -> list[Path]:
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return [Path(os.environ["TIKTOKEN_CACHE_DIR"])]
    if os.environ.get("DATA_GYM_CACHE_DIR"):
        return [Path(os.environ["DATA_GYM_CACHE_DIR"])]
    return [Path(tempfile.gettempdir()) / "data-gym-cache"]


def cache_folder() -> Path:
    """The folder tiktoken reads encoding files from (and a fetch writes them to)."""
    return _cache_dirs()[0]


def encoding_file(name: str) -> Path | None:
    """Where tiktoken keeps encoding ``name`` when it is cached on disk, else None."""
    url = _URLS.get(name)
    if url is None:
        return None
    key = hashlib.sha1(url.encode()).hexdigest()
    for folder in _cache_dirs():
        path = folder / key
        if path.is_file() and path.stat().st_size > 0:
            return path
    return None


def _encoding(name: str) -> Encoding | None:
    """The tiktoken encoding if it can be had without the network, else None (cached)."""
    if name in _encodings:
        return _encodings[name]
    with _lock:
        if name in _encodings:
            return _encodings[name]
        encoding = None
        if encoding_file(name) is not None:
            try:
                import tiktoken

                encoding = tiktoken.get_encoding(name)
            except Exception as err:  # a damaged cache file, an odd tiktoken version...
                log.debug("tiktoken %s unavailable (%s); estimating tokens", name, err)
        else:
            log.debug("tiktoken %s not cached on disk; estimating tokens (4 bytes per token)", name)
            fetch_in_background(name)
        _encodings[name] = encoding
        return encoding


def fetch_in_background(name: str) -> threading.Thread | None:
    """Start fetching encoding ``name`` into tiktoken's cache, once per process; None when
    turned off, unknown or already under way. When it lands the next count uses it."""
    if os.environ.get("ETCODE_TOKENIZER_DOWNLOAD", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    if name not in _URLS or name in _fetching:
        return None
    thread = threading.Thread(target=_fetch, args=(name,), name=f"tiktoken-{name}", daemon=True)
    _fetching[name] = thread
    thread.start()
    return thread


def _fetch(name: str) -> None:
    """Download to a temporary file beside the target, then rename: a reader never sees half
    a file. Any failure (offline, a proxy, a full disk) leaves the estimate in place. A
    process that exits mid-download removes its partial file (or, killed, the next fetch
    does)."""
    target = _cache_dirs()[0] / hashlib.sha1(_URLS[name].encode()).hexdigest()
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    atexit.register(partial.unlink, missing_ok=True)
    try:
        import httpx

        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_orphaned_partials(target)
        digest = hashlib.sha256()
        with httpx.stream("GET", _SOURCES[name], timeout=FETCH_SECONDS, follow_redirects=True) as response:
            response.raise_for_status()
            with open(partial, "wb") as out:
                for chunk in response.iter_bytes():
                    digest.update(chunk)
                    out.write(chunk)
        if digest.hexdigest() != _SHA256[name]:
            raise OSError("the download is not the encoding file (checksum differs)")
        os.replace(partial, target)
    except Exception as err:
        log.debug("could not fetch tiktoken %s (%s); estimating tokens", name, err)
        partial.unlink(missing_ok=True)
        return
    with _lock:
        _encodings.pop(name, None)  # the next count loads the file
    log.debug("fetched tiktoken %s into %s", name, target)


def _remove_orphaned_partials(target: Path) -> None:
    """Delete the partial downloads of ``target`` whose process is gone (killed mid-fetch)."""
    for leftover in target.parent.glob(f"{target.name}.*.part"):
        pid = leftover.name.removeprefix(f"{target.name}.").removesuffix(".part")
        if pid.isdigit() and not _process_alive(int(pid)):
            leftover.unlink(missing_ok=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def preload(model: str | None = None) -> bool:
    """Load the encoding for ``model`` now (it takes a fraction of a second; run it in a
    thread). Returns whether tiktoken will be used."""
    return _encoding(encoding_name(model)) is not None


def tokenizer_for(model: str | None = None) -> str:
    """What :func:`count_tokens` uses for ``model``: an encoding name, or ``"estimate"``."""
    name = encoding_name(model)
    return name if _encoding(name) is not None else ESTIMATE


def estimate_tokens(text: str) -> int:
    """The offline estimate: one token per four UTF-8 bytes (rounded up)."""
    if not text:
        return 0
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / _BYTES_PER_TOKEN)


def _pieces(text: str) -> list[str]:
    if len(text) <= _CHUNK:
        return [text]
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + _CHUNK, len(text))
        if end < len(text):
            cut = text.rfind("\n", start + _CHUNK // 2, end)
            end = cut + 1 if cut > 0 else end
        out.append(text[start:end])
        start = end
    return out


def _samples(text: str) -> list[str]:
    step = len(text) // _SAMPLES
    return [text[i * step : i * step + _CHUNK] for i in range(_SAMPLES)]


def count_tokens(text: str, model: str | None = None, *, exact: bool = False) -> int:
    """Tokens in ``text`` for ``model``: tiktoken when its file is cached, else the estimate.
    Texts over ``SAMPLE_ABOVE`` characters are counted from samples unless ``exact``.

    Never raises and never touches the network.
    """
    if not text:
        return 0
    encoding = _encoding(encoding_name(model))
    if encoding is None:
        return estimate_tokens(text)
    try:
        if len(text) > SAMPLE_ABOVE and not exact:
            pieces = _samples(text)
            counted = sum(len(encoding.encode_ordinary(piece)) for piece in pieces)
            return math.ceil(counted * len(text) / sum(len(piece) for piece in pieces))
        return sum(len(encoding.encode_ordinary(piece)) for piece in _pieces(text))
    except BaseException as err:  # tiktoken's Rust panics (PanicException) are BaseExceptions
        if not isinstance(err, Exception) and type(err).__name__ != "PanicException":
            raise
        log.debug("tiktoken failed (%s); estimating", err)
        return estimate_tokens(text)
