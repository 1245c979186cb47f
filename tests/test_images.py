"""provider/images.py: real files made with Pillow, downscaled, re-encoded, refused."""

from __future__ import annotations

import asyncio
import base64
import os
import warnings
from pathlib import Path

import pytest
from PIL import Image

from etcode.provider import images
from etcode.provider.images import (
    MAX_BYTES,
    MAX_EDGE,
    ImageError,
    describe,
    image_from_bytes,
    image_tokens,
    load_image,
    prepare_image,
)
from etcode.provider.types import ImagePart
from tests.image_making import decode, encoded, gradient, noise


def test_an_image_within_the_limits_is_sent_as_its_own_bytes() -> None:
    data = encoded(gradient(1280, 720))
    prepared = prepare_image(data, "shot.png")
    assert base64.b64decode(prepared.image.data) == data
    assert (prepared.image.width, prepared.image.height) == (1280, 720)
    assert prepared.image.media_type == "image/png"
    assert not prepared.reencoded and not prepared.resized
    assert describe(prepared).startswith("shot.png (1280×720, PNG, ")


def test_metadata_is_not_sent_and_the_pixels_are_untouched() -> None:
    """A phone's photo carries its GPS position in EXIF; a PNG may carry text (an author, a
    path): none of it reaches the provider, the pixels are the file's own."""
    from PIL import PngImagePlugin

    exif = Image.Exif()
    exif[0x010F] = "PhoneMaker"  # Make
    exif[0x8825] = {2: (48.0, 51.0, 30.0), 1: "N"}  # GPSInfo: latitude
    photo = encoded(noise(64, 48), "JPEG", exif=exif, comment=b"secret comment")
    text = PngImagePlugin.PngInfo()
    text.add_text("Author", "Jane Secret")
    text.add_itxt("Comment", "home/jane/private")
    shot = encoded(gradient(64, 48), "PNG", pnginfo=text)
    for data, name in ((photo, "photo.jpg"), (shot, "shot.png")):
        assert b"Secret" in data or b"PhoneMaker" in data
        image = image_from_bytes(data, name)
        sent = base64.b64decode(image.data)
        for secret in (b"PhoneMaker", b"Exif", b"secret comment", b"Jane Secret", b"home/jane"):
            assert secret not in sent, (name, secret)
        out, original = decode(image.data), decode(base64.b64encode(data).decode())
        assert not out.getexif() and not getattr(out, "text", {})
        assert out.format == original.format and out.tobytes() == original.tobytes()


def test_a_6000_by_4000_png_arrives_within_1568_and_5_mb() -> None:
    data = encoded(gradient(6000, 4000))
    image = image_from_bytes(data, "big.png")
    assert len(image.data) <= MAX_BYTES  # the base64 text itself
    sent = decode(image.data)
    assert sent.format == "PNG" and sent.size == (1568, 1045) == (image.width, image.height)
    prepared = prepare_image(data, "big.png")
    assert "downscaled from 6000×4000 PNG" in describe(prepared)


def test_a_png_too_big_as_png_becomes_a_jpeg_within_the_limit() -> None:
    data = encoded(noise(1500, 1500))  # ~6.75 MB of noise: no PNG of it fits
    assert len(data) > MAX_BYTES
    image = image_from_bytes(data, "noise.png")
    assert image.media_type == "image/jpeg" and len(image.data) <= MAX_BYTES
    assert decode(image.data).size == (1500, 1500)


def test_exif_orientation_is_applied() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to show
    data = encoded(gradient(400, 200), "JPEG", exif=exif)
    image = image_from_bytes(data, "phone.jpg")
    assert (image.width, image.height) == (200, 400)
    assert decode(image.data).size == (200, 400)


def test_a_large_rotated_jpeg_is_scaled_upright() -> None:
    exif = Image.Exif()
    exif[0x0112] = 8  # rotate 90° counter-clockwise to show
    data = encoded(noise(4000, 3000), "JPEG", exif=exif, quality=80)
    image = image_from_bytes(data, "tall.jpg")
    assert image.media_type == "image/jpeg" and (image.width, image.height) == (1176, MAX_EDGE)
    assert decode(image.data).size == (1176, MAX_EDGE)


def test_an_animated_gif_sends_its_first_frame_as_png() -> None:
    frames = [Image.new("RGB", (64, 48), color) for color in ("red", "green", "blue")]
    data = encoded(frames[0], "GIF", save_all=True, append_images=frames[1:])
    image = image_from_bytes(data, "anim.gif")
    assert image.media_type == "image/png"
    assert decode(image.data).size == (64, 48)


@pytest.mark.parametrize("fmt", ["WEBP", "GIF"])
def test_a_small_webp_or_gif_is_never_sent_as_it_is(fmt: str) -> None:
    """llama.cpp decodes neither a WebP (400 "Failed to load image") nor, reliably, a GIF: a
    file that needs no resizing is re-encoded all the same, at its own size."""
    small = encoded(gradient(300, 200), fmt)
    prepared = prepare_image(small, "a." + fmt.lower())
    assert prepared.image.media_type in ("image/png", "image/jpeg")
    sent = decode(prepared.image.data)
    assert sent.format in ("PNG", "JPEG") and sent.size == (300, 200)
    assert "re-encoded from 300×200 " + fmt in describe(prepared)


def test_webp_becomes_png_with_alpha_jpeg_without() -> None:
    see_through = gradient(2000, 1000, "RGBA")
    see_through.putalpha(gradient(2000, 1000, "L"))
    alpha = image_from_bytes(encoded(see_through, "WEBP"), "b.webp")
    assert alpha.media_type == "image/png" and decode(alpha.data).mode == "RGBA"
    opaque = image_from_bytes(encoded(gradient(2000, 1000), "WEBP"), "c.webp")
    assert opaque.media_type == "image/jpeg" and (opaque.width, opaque.height) == (MAX_EDGE, 784)


def test_a_truncated_png_is_one_line_naming_the_file() -> None:
    data = encoded(noise(300, 300))
    with pytest.raises(ImageError) as caught:
        image_from_bytes(data[: len(data) // 2], "broken.png")
    message = str(caught.value)
    assert message.startswith("broken.png: ") and "\n" not in message


def test_not_an_image_is_refused() -> None:
    with pytest.raises(ImageError, match=r"^notes.png: not a PNG, JPEG, GIF or WebP image$"):
        image_from_bytes(b"just text\n", "notes.png")


@pytest.mark.parametrize(
    "data",
    [b"RIFF\x00\x00\x00\x00WEBPjunkjunk", b"\xff\xd8\xff" + bytes(20), b"GIF89a" + b"x" * 5],
)
def test_an_image_header_on_garbage_is_one_line_naming_the_file(data: bytes) -> None:
    with pytest.raises(ImageError) as caught:
        image_from_bytes(data, "shot.png")
    assert str(caught.value) == "shot.png: cannot read the image (not a valid PNG, JPEG, GIF or WebP image)"


def test_a_decompression_bomb_is_an_error_without_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    data = encoded(gradient(1000, 1000))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 600_000)  # 1M pixels: Pillow only warns
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ImageError, match=r"^bomb.png: 1000×1000 is too many pixels"):
            image_from_bytes(data, "bomb.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 400_000)  # over twice the limit: Pillow raises
    with pytest.raises(ImageError, match=r"^bomb.png: .*too many pixels"):
        image_from_bytes(data, "bomb.png")


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    with pytest.raises(ImageError, match=r"^pipe.png: not a regular file"):
        asyncio.run(asyncio.wait_for(load_image(fifo), 30))


def test_a_file_over_the_read_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "huge.png"
    path.write_bytes(encoded(noise(200, 200)))
    monkeypatch.setattr(images, "MAX_FILE_READ", 1000)
    with pytest.raises(ImageError, match=r"^huge.png: larger than 1000 B$"):
        asyncio.run(load_image(path))


@pytest.mark.parametrize(
    ("size", "anthropic", "openai"),
    [
        ((1024, 1024), 1399, 765),  # OpenAI's example: 4 tiles
        ((2048, 4096), 1600, 1105),  # OpenAI's example: 768×1536, 6 tiles
        ((200, 200), 54, 255),  # Anthropic's table: 200×200 ≈ 54 tokens; one tile
        ((1000, 1000), 1334, 765),  # Anthropic's table: 1000×1000 ≈ 1334
        ((1092, 1092), 1590, 765),  # Anthropic's largest 1:1 size
        ((6000, 4000), 1600, 1105),
    ],
)
def test_image_tokens_follow_the_published_formulas(
    size: tuple[int, int], anthropic: int, openai: int
) -> None:
    image = ImagePart("image/png", "", size[0], size[1])
    assert image_tokens(image, "anthropic") == anthropic
    assert image_tokens(image, "openai") == openai


def test_image_tokens_are_not_the_base64_length() -> None:
    data = base64.b64encode(encoded(noise(800, 600))).decode()
    image = ImagePart("image/png", data, 800, 600)
    assert image_tokens(image, "anthropic") == 640 < len(data) // 4
