"""Images as a model sees them: which files are images, one read within the providers'
limits, and what an image costs in the context window.

A PNG or a JPEG that already fits (long edge ≤ :data:`MAX_EDGE`, file ≤ :data:`MAX_FILE_SEND`,
no EXIF rotation) is sent as its own bytes without their metadata (EXIF with a phone's GPS
position, XMP, text chunks: the pixels untouched), after a full decode that proves it is whole. Anything
else (every GIF and WebP too) is decoded and re-encoded:

- its EXIF orientation applied, scaled down to a long edge of :data:`MAX_EDGE` (a box
  average by a whole factor, then Pillow's antialiased bilinear filter);
- a GIF or an animated WebP: its first frame;
- PNG out for a PNG, a GIF and a WebP with transparency (lossless: screenshots, diagrams),
  when it fits; otherwise, and for a JPEG, an opaque WebP or an opaque image with a photo's
  texture (its PNG would be over :data:`PHOTO_RATIO` of its raw pixels), JPEG at quality
  :data:`JPEG_QUALITY` (lower, then smaller, until it fits). A WebP never stays WebP, even a
  small one: PNG and JPEG are what every OpenAI-compatible server decodes (llama.cpp's does
  not decode WebP, and a request holding one fails with a 400).

The encoded file is kept ≤ 3.75 MB so that its base64 text — what the request carries and
what Anthropic's 5 MB limit counts — stays within :data:`MAX_BYTES`.

Pillow is imported only when an image is read. A file with more pixels than Pillow's
``Image.MAX_IMAGE_PIXELS`` (a decompression bomb) or a damaged one raises :class:`ImageError`,
one line naming the file.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import math
import threading
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from etcode.provider.types import ImagePart
from etcode.util.errors import EtcodeError
from etcode.util.fs import format_size, read_regular_capped, regular_opener

if TYPE_CHECKING:
    from PIL import Image as PILImage

#: The media type of each image file suffix etcode sends to a model.
IMAGE_SUFFIXES: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}

#: The providers' limits: the long edge in pixels and the encoded size in bytes.
MAX_EDGE = 1568
MAX_BYTES = 5 * 1024 * 1024
#: The largest image file sent: its base64 text (4 characters per 3 bytes) fits MAX_BYTES.
MAX_FILE_SEND = MAX_BYTES * 3 // 4
#: The largest image file read at all (a photo of 6000×4000 as PNG can be 40 MB).
MAX_FILE_READ = 64 * 1024 * 1024
#: JPEG quality of a re-encoded image, then the lower ones tried when it is still too big.
JPEG_QUALITY = 85
_LOWER_QUALITIES = (75, 60, 45)
#: zlib level of a re-encoded PNG: 1 is several times faster than Pillow's 6 for a few % more.
PNG_COMPRESS_LEVEL = 1
#: An image whose PNG would be over this share of its raw pixels is photo-like: it is
#: re-encoded as JPEG (a screenshot or a diagram compresses far better and stays PNG).
PHOTO_RATIO = 0.25
#: The strips of an image compressed to judge it photo-like, and their rows.
_STRIPS = 16
_STRIP_ROWS = 8
#: An image with fewer pixels (an icon) is never judged photo-like.
_SMALL_PIXELS = 128 * 128
#: Scaling down: a box average by a whole factor (``reduce``) leaves at most this much for
#: the filter; 1.25 is three times faster than the filter alone on a 6000×4000 image. The
#: filter is bilinear (antialiased when scaling down): Lanczos costs twice as much (+100 ms
#: on a 2560×1600 screenshot) for a sharpness a model does not need.
REDUCING_GAP = 1.25
#: Pillow's default decompression-bomb limit, used when a program set it to None.
_DEFAULT_MAX_PIXELS = 89_478_485

#: Anthropic: an image costs width × height / 750 tokens after it is scaled to a long edge
#: of 1568 px and to about 1.15 megapixels (1600 tokens at most).
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_MAX_TOKENS = 1600
#: OpenAI (high detail): fit in 2048×2048, shortest side scaled to 768, then 170 tokens per
#: 512-px tile plus 85.
OPENAI_FIT = 2048
OPENAI_SHORT_SIDE = 768
OPENAI_TILE = 512
OPENAI_BASE_TOKENS = 85
OPENAI_TILE_TOKENS = 170

_FORMAT_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
#: The only types sent as the file's own bytes: what every server decodes (llama.cpp's does
#: not decode WebP: "Failed to load image"; a GIF may be animated).
_SENT_AS_IS = frozenset({"image/png", "image/jpeg"})
#: EXIF orientation → the transpose that shows the image upright (as ImageOps.exif_transpose).
_ORIENTATIONS = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE",
                 6: "ROTATE_270", 7: "TRANSVERSE", 8: "ROTATE_90"}  # fmt: skip
#: Pillow's warnings filter is process-wide: opening one image at a time keeps it ours.
_OPEN_LOCK = threading.Lock()


class ImageError(EtcodeError):
    """A file that should be an image and cannot be read as one (the message names it)."""


@dataclass(frozen=True)
class PreparedImage:
    """An image ready to send, and what it was: the file's own size, type and bytes."""

    image: ImagePart
    original_width: int
    original_height: int
    original_type: str
    original_bytes: int

    @property
    def resized(self) -> bool:
        """Whether the image sent is smaller than the file's (scaled down)."""
        sent = {self.image.width, self.image.height}
        return sent != {self.original_width, self.original_height}

    @property
    def reencoded(self) -> bool:
        """Whether the bytes sent are not the file's own."""
        return self.image.media_type != self.original_type or self.original_bytes != _decoded_size(
            self.image.data
        )


def image_facts(prepared: PreparedImage) -> dict[str, str | int]:
    """What an image read is, for a tool's structured result (``--format json``): the type and
    size sent and the file's own size and byte count, never the bytes."""
    return {
        "mediaType": prepared.image.media_type,
        "width": prepared.image.width,
        "height": prepared.image.height,
        "originalWidth": prepared.original_width,
        "originalHeight": prepared.original_height,
        "originalBytes": prepared.original_bytes,
    }


def sniff_media_type(head: bytes) -> str | None:
    """The media type of an image by its first bytes (PNG, JPEG, GIF, WebP), else None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def sniff_file(path: Path) -> str | None:
    """The media type of the image file at ``path`` by its first bytes, else None (also
    when it cannot be read, or is a FIFO or a device: never waits). Blocking."""
    try:
        with open(path, "rb", opener=regular_opener) as handle:
            return sniff_media_type(handle.read(16))
    except OSError:
        return None


def is_image_path(path: str | Path) -> bool:
    """Whether a path names an image etcode can send, by its suffix."""
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def image_from_bytes(data: bytes, name: str) -> ImagePart:
    """``data`` (a whole image file) as an :class:`ImagePart` within :data:`MAX_EDGE` and
    :data:`MAX_BYTES`. Raises :class:`ImageError` naming ``name`` when it is not an image."""
    return prepare_image(data, name).image


def prepare_image(data: bytes, name: str) -> PreparedImage:
    """``data`` (a whole image file) made ready to send (see the module's docstring), with
    what the file was. Blocking (decodes): call it in a worker thread."""
    media_type = sniff_media_type(data[:16])
    if media_type is None:
        raise ImageError(f"{name}: not a PNG, JPEG, GIF or WebP image")
    from PIL import Image, UnidentifiedImageError

    try:
        with _open(data, name) as image:
            return _prepare(image, data, media_type, name)
    except ImageError:
        raise
    except MemoryError:
        raise ImageError(f"{name}: too large to decode") from None
    except Exception as err:  # Pillow raises many kinds for a damaged file
        if isinstance(err, Image.DecompressionBombError):
            raise ImageError(f"{name}: too many pixels to decode (a decompression bomb?)") from None
        if isinstance(err, UnidentifiedImageError):  # its text names a BytesIO object
            raise ImageError(
                f"{name}: cannot read the image (not a valid PNG, JPEG, GIF or WebP image)"
            ) from None
        raise ImageError(f"{name}: cannot read the image ({_one_line(err)})") from None


async def read_image(path: Path, name: str | None = None) -> ImagePart:
    """The image file at ``path`` (off the event loop). Raises :class:`ImageError`."""
    return (await load_image(path, name)).image


async def load_image(path: Path, name: str | None = None) -> PreparedImage:
    """The image file at ``path`` made ready to send, off the event loop: at most
    :data:`MAX_FILE_READ` bytes are read, a FIFO or a device is refused without waiting.
    Raises :class:`ImageError` naming the file."""
    label = name or path.name
    return await asyncio.to_thread(_load, path, label)


def _load(path: Path, name: str) -> PreparedImage:
    try:
        data = read_regular_capped(path, MAX_FILE_READ)
    except OSError as err:
        raise ImageError(f"{name}: {err.strerror or err}") from None
    return prepare_image(data, name)


def _open(data: bytes, name: str) -> PILImage.Image:
    """The image opened (its header read, not its pixels), refused when it has more pixels
    than Pillow's limit: Pillow only warns below twice the limit; here it is an error."""
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS or _DEFAULT_MAX_PIXELS
    with _OPEN_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        image = Image.open(io.BytesIO(data), formats=list(_FORMAT_TYPES))
    width, height = image.size
    if width * height > limit:
        image.close()
        raise ImageError(
            f"{name}: {width}×{height} is too many pixels to decode (over {limit:,}; a decompression bomb?)"
        )
    return image


def _prepare(image: PILImage.Image, data: bytes, media_type: str, name: str) -> PreparedImage:
    width, height = image.size
    orientation = _orientation(image)
    upright = (height, width) if orientation in (5, 6, 7, 8) else (width, height)
    animated = bool(getattr(image, "is_animated", False))
    scale = min(1.0, MAX_EDGE / max(upright))
    own = media_type in _SENT_AS_IS  # a WebP or a GIF is always re-encoded (see the docstring)
    if own and scale == 1.0 and orientation == 1 and not animated and len(data) <= MAX_FILE_SEND:
        image.load()  # a damaged or truncated file fails here, not at the provider
        kept = _without_metadata(data, media_type)
        if kept is not None:
            return _prepared(kept, media_type, upright, name, (width, height), media_type, len(data))
    out, out_type, size = _reencode(image, media_type, orientation, scale)
    return _prepared(out, out_type, size, name, (width, height), media_type, len(data))


#: JPEG segments kept: APP0 (JFIF), APP2 (ICC colour profile), APP14 (Adobe: how to read
#: its colours); EXIF and XMP (APP1: camera, GPS position), IPTC (APP13) and comments go.
_JPEG_KEPT_APPS = frozenset({0xE0, 0xE2, 0xEE})
#: PNG chunks dropped: text (author, software, comments), EXIF, the time of the last change.
_PNG_DROPPED = frozenset({b"tEXt", b"zTXt", b"iTXt", b"eXIf", b"tIME"})


def _without_metadata(data: bytes, media_type: str) -> bytes | None:
    """A PNG's or a JPEG's bytes without their metadata (the GPS position a phone writes
    into EXIF is not for the provider), the pixels untouched; None when its structure is
    not as expected (then it is re-encoded, which keeps no metadata either)."""
    try:
        return _png_without(data) if media_type == "image/png" else _jpeg_without(data)
    except (IndexError, ValueError):
        return None


def _png_without(data: bytes) -> bytes | None:
    out, at = [data[:8]], 8
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        kind = data[at + 4 : at + 8]
        end = at + 12 + size
        if len(kind) != 4 or end > len(data):
            return None
        if kind not in _PNG_DROPPED:
            out.append(data[at:end])
        at = end
        if kind == b"IEND":
            break
    return b"".join(out)


def _jpeg_without(data: bytes) -> bytes | None:
    out, at = [data[:2]], 2
    while at < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # a fill byte
            at += 1
            continue
        if marker == 0xDA:  # start of scan: the image data follows, to the end
            out.append(data[at:])
            break
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # no length
            out.append(data[at : at + 2])
            at += 2
            continue
        end = at + 2 + int.from_bytes(data[at + 2 : at + 4], "big")
        if end > len(data):
            return None
        dropped = marker == 0xFE or (0xE0 <= marker <= 0xEF and marker not in _JPEG_KEPT_APPS)
        if not dropped:
            out.append(data[at:end])
        at = end
    return b"".join(out)


def _prepared(
    out: bytes,
    out_type: str,
    size: tuple[int, int],
    name: str,
    original: tuple[int, int],
    original_type: str,
    original_bytes: int,
) -> PreparedImage:
    part = ImagePart(
        out_type,
        base64.b64encode(out).decode("ascii"),
        size[0],
        size[1],
        name,
        hashlib.sha256(out).hexdigest(),
    )
    return PreparedImage(part, original[0], original[1], original_type, original_bytes)


def _orientation(image: PILImage.Image) -> int:
    try:
        value = image.getexif().get(0x0112, 1)
    except Exception:  # a damaged EXIF block: show the image as stored
        return 1
    return value if isinstance(value, int) and value in range(1, 9) else 1


def _reencode(
    image: PILImage.Image, media_type: str, orientation: int, scale: float
) -> tuple[bytes, str, tuple[int, int]]:
    """The image upright, scaled by ``scale``, encoded within :data:`MAX_FILE_SEND`:
    (bytes, media type, (width, height))."""
    from PIL import Image

    width, height = image.size
    target = (max(1, round(width * scale)), max(1, round(height * scale)))
    if image.format == "JPEG" and scale < 1.0:
        image.draft(image.mode, target)  # decode at 1/2, 1/4 or 1/8 scale: far less work
    image.load()
    alpha = _has_alpha(image)
    frame = _normalized(image, alpha)
    if frame.size != target:
        frame = frame.resize(target, Image.Resampling.BILINEAR, reducing_gap=REDUCING_GAP)
    if orientation != 1:
        frame = frame.transpose(getattr(Image.Transpose, _ORIENTATIONS[orientation]))
    lossless = media_type in ("image/png", "image/gif") or (media_type == "image/webp" and alpha)
    if lossless and (alpha or not _photo_like(frame)):
        png = _encode(frame, "PNG")
        if len(png) <= MAX_FILE_SEND:
            return png, "image/png", frame.size
    return _jpeg_within(frame)


def _photo_like(frame: PILImage.Image) -> bool:
    """Whether ``frame`` would make a PNG over :data:`PHOTO_RATIO` of its raw pixels (a
    photo's texture): such a PNG is big and slow to encode, a JPEG small and fast. Judged
    from a few strips, each filtered as PNG's "Up" filter does and compressed."""
    from PIL import ImageChops

    if frame.mode not in ("L", "RGB"):
        return False
    width, height = frame.size
    if width * height < _SMALL_PIXELS:  # any PNG of it is small and quick (zlib's overhead
        return False  # would make a few pixels look incompressible)
    strips = min(_STRIPS, max(1, height // (_STRIP_ROWS + 1)))
    raw = bytearray()
    for index in range(strips):
        top = index * (height - _STRIP_ROWS - 1) // max(1, strips - 1) if strips > 1 else 0
        below = frame.crop((0, top + 1, width, min(height, top + _STRIP_ROWS + 1)))
        above = frame.crop((0, top, width, top + below.height))
        raw += ImageChops.subtract_modulo(below, above).tobytes()
    return len(zlib.compress(bytes(raw), 1)) > len(raw) * PHOTO_RATIO


def _has_alpha(image: PILImage.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info


def _normalized(image: PILImage.Image, alpha: bool) -> PILImage.Image:
    """The image in a mode Lanczos scales and PNG/JPEG encode: L, LA, RGB or RGBA."""
    if image.mode in ("L", "RGB") and not alpha:
        return image
    if image.mode in ("LA", "RGBA"):
        return image
    if image.mode == "1":
        return image.convert("L")
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        return image.convert("I").point(lambda v: v / 256).convert("L")  # 16-bit grey
    return image.convert("RGBA" if alpha else "RGB")


def _encode(frame: PILImage.Image, fmt: str, quality: int = JPEG_QUALITY) -> bytes:
    buffer = io.BytesIO()
    if fmt == "PNG":
        frame.save(buffer, "PNG", compress_level=PNG_COMPRESS_LEVEL)
    else:
        frame.save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def _jpeg_within(frame: PILImage.Image) -> tuple[bytes, str, tuple[int, int]]:
    """JPEG of ``frame`` (transparency flattened on white) within :data:`MAX_FILE_SEND`:
    lower qualities first, then smaller sizes (at most a few rounds)."""
    from PIL import Image

    if frame.mode in ("LA", "RGBA"):
        base = Image.new("RGB", frame.size, (255, 255, 255))
        base.paste(frame.convert("RGBA"), mask=frame.convert("RGBA").getchannel("A"))
        frame = base
    for _ in range(8):
        for quality in (JPEG_QUALITY, *_LOWER_QUALITIES):
            out = _encode(frame, "JPEG", quality)
            if len(out) <= MAX_FILE_SEND:
                return out, "image/jpeg", frame.size
        smaller = (max(1, frame.width * 3 // 4), max(1, frame.height * 3 // 4))
        frame = frame.resize(smaller, Image.Resampling.LANCZOS)
    return out, "image/jpeg", frame.size  # unreachable in practice: a 1-px JPEG is tiny


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def image_tokens(image: ImagePart, family: Literal["anthropic", "openai"] = "openai") -> int:
    """What ``image`` costs in the context window (Anthropic's or OpenAI's published formula;
    OpenAI's for other OpenAI-compatible servers). An image of unknown size counts as the
    largest one etcode sends."""
    width, height = image.width, image.height
    if width <= 0 or height <= 0:
        width = height = MAX_EDGE
    if family == "anthropic":
        scale = min(1.0, MAX_EDGE / max(width, height))
        pixels = (width * scale) * (height * scale)
        tokens = math.ceil(pixels / ANTHROPIC_PIXELS_PER_TOKEN)
        return max(1, min(ANTHROPIC_MAX_TOKENS, tokens))
    scale = min(1.0, OPENAI_FIT / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, OPENAI_SHORT_SIDE / min(w, h))
    w, h = w * scale, h * scale
    tiles = math.ceil(w / OPENAI_TILE) * math.ceil(h / OPENAI_TILE)
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles


def describe(prepared: PreparedImage) -> str:
    """``screenshot.png (1280×720, PNG, 412.0 KB)``, with the file's own size and type when
    the image sent is a scaled-down or re-encoded copy: what a tool tells the model."""
    image = prepared.image
    kind = image.media_type.removeprefix("image/").upper()
    sent = f"{image.width}×{image.height}, {kind}, {format_size(_decoded_size(image.data))}"
    if not prepared.reencoded:
        return f"{image.name} ({sent})"
    was_kind = prepared.original_type.removeprefix("image/").upper()
    was = f"{prepared.original_width}×{prepared.original_height} {was_kind}, {format_size(prepared.original_bytes)}"
    how = "downscaled" if prepared.resized else "re-encoded"
    return f"{image.name} ({sent}; {how} from {was})"
