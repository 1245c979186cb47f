"""ReadFile of an image, downscale included: a 4 MB PNG (2560×1600, screenshot-like: flat
areas and a noisy band), a 6000×4000 PNG and a 6000×4000 JPEG (a photo's size).

Each is read by the real ``ReadFile`` tool (sniff, capped read, decode, scale to 1568 px,
re-encode, base64) on a warm page cache; printed: the median and best of ``--runs`` reads,
the size sent. Target: the 4 MB PNG under 150 ms.

Run: ``python benchmarks/bench_images.py [--runs 7]``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from etcode.tools.base import ToolContext  # noqa: E402
from etcode.tools.read_file import ReadFileParams, ReadFileTool  # noqa: E402

TARGET_MS = 150.0


def screenshot_png(target_bytes: int = 4 * 1024 * 1024) -> bytes:
    """A 2560×1600 PNG of about ``target_bytes``: a gradient with a band of noise."""
    from PIL import Image

    width, height = 2560, 1600
    image = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    rows = min(height, target_bytes // (width * 3))
    rng = random.Random(7)
    band = Image.frombytes("RGB", (width, rows), rng.randbytes(width * rows * 3))
    image.paste(band, (0, (height - rows) // 2))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def photo(fmt: str) -> bytes:
    """6000×4000: smooth colour with fine noise (a photo's texture)."""
    from PIL import Image, ImageFilter

    rng = random.Random(3)
    small = Image.frombytes("RGB", (600, 400), rng.randbytes(600 * 400 * 3)).filter(
        ImageFilter.GaussianBlur(2)
    )
    image = small.resize((6000, 4000), Image.Resampling.BICUBIC)
    buffer = io.BytesIO()
    image.save(buffer, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buffer.getvalue()


async def read_times(folder: Path, name: str, runs: int) -> tuple[list[float], str]:
    tool = ReadFileTool()
    ctx = ToolContext(session_id="s", call_id="c", directory=folder, worktree=folder)
    times, said = [], ""
    for _ in range(runs + 1):  # the first read imports Pillow: not counted
        started = time.perf_counter()
        result = await tool.run(ReadFileParams(file_path=name), ctx)
        times.append((time.perf_counter() - started) * 1000)
        said = result.output
    return times[1:], said


def measure(runs: int) -> dict[str, tuple[float, float, int, str]]:
    """Per file: (median ms, best ms, file bytes, what ReadFile said it sent)."""
    figures: dict[str, tuple[float, float, int, str]] = {}
    with tempfile.TemporaryDirectory(prefix="etcode-bench-") as tmp:
        folder = Path(tmp)
        files = {
            "screenshot.png": screenshot_png(),
            "photo.png": photo("PNG"),
            "photo.jpg": photo("JPEG"),
        }
        for name, data in files.items():
            (folder / name).write_bytes(data)
        for name, data in files.items():
            times, said = asyncio.run(read_times(folder, name, runs))
            sent = said.split("(", 1)[1].split(";")[0]
            figures[name] = (statistics.median(times), min(times), len(data), sent)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"{'file':<16}{'size':>10}{'median':>10}{'best':>9}  sent")
    for name, (median, best, size, sent) in measure(args.runs).items():
        mark = ""
        if name == "screenshot.png":
            mark = f"  (target < {TARGET_MS:.0f} ms: {'ok' if median < TARGET_MS else 'MISSED'})"
        print(f"{name:<16}{size / 1024**2:>8.1f}MB{median:>8.0f}ms{best:>7.0f}ms  {sent}{mark}")


if __name__ == "__main__":
    main()
