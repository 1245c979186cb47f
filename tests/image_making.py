"""Real image files for tests, made with Pillow: a gradient (compresses like a screenshot),
noise (does not compress), and the decoding of what a request carried."""

from __future__ import annotations

import base64
import io
import random
from pathlib import Path

from PIL import Image


def gradient(width: int, height: int, mode: str = "RGB") -> Image.Image:
    """A smooth image with some structure (compresses well, like a screenshot)."""
    return Image.linear_gradient("L").resize((width, height)).convert(mode)


def noise(width: int, height: int, mode: str = "RGB", seed: int = 1) -> Image.Image:
    """Random pixels: a PNG of them is about as big as the raw pixels."""
    rng = random.Random(seed)
    return Image.frombytes(mode, (width, height), rng.randbytes(width * height * len(mode)))


def encoded(image: Image.Image, fmt: str = "PNG", **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def write_image(path: Path, image: Image.Image, fmt: str = "PNG", **options: object) -> bytes:
    """Save ``image`` at ``path`` and return the file's bytes."""
    data = encoded(image, fmt, **options)
    path.write_bytes(data)
    return data


def decode(data: str) -> Image.Image:
    """The image of a base64 text (what a request's image block carries), fully loaded."""
    image = Image.open(io.BytesIO(base64.b64decode(data, validate=True)))
    image.load()
    return image
