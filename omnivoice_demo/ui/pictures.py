"""Pictures for the app, drawn with NumPy and Pillow: the 8 x T code grid and the benchmark chart."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..constants import AUDIO_MASK_ID, CODEBOOK_SIZE, NUM_CODEBOOKS

MASK_ID = AUDIO_MASK_ID
#: colours (RGB)
UNDECIDED = (28, 30, 38)
BACKGROUND = (14, 15, 20)
HIGHLIGHT = (255, 255, 255)
SEPARATOR = (70, 74, 90)
TEXT = (220, 222, 230)


def _value_colours(values: np.ndarray) -> np.ndarray:
    """Codes 0..1023 -> RGB uint8, hue by value (a cheap HSV -> RGB at fixed saturation and value)."""
    hue = (values.astype(np.float32) % CODEBOOK_SIZE) / CODEBOOK_SIZE * 6.0
    sector = np.floor(hue).astype(np.int32) % 6
    frac = hue - np.floor(hue)
    v, s = 0.92, 0.62
    p = v * (1 - s)
    q = v * (1 - s * frac)
    t = v * (1 - s * (1 - frac))
    lut = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    rgb = np.zeros(values.shape + (3,), dtype=np.float32)
    for index, (r, g, b) in enumerate(lut):
        sel = sector == index
        for channel, comp in enumerate((r, g, b)):
            rgb[..., channel][sel] = comp if np.isscalar(comp) else comp[sel]
    return (rgb * 255).astype(np.uint8)


def code_grid(codes: Optional[np.ndarray | Sequence[np.ndarray]], decided: Optional[np.ndarray] = None,
              mask_id: int = MASK_ID, width: int = 960, row_height: int = 14, gap: int = 2) -> Image.Image:
    """The 8 x T code grid: undecided cells dark, decided cells coloured by value, this step's highlighted.

    ``codes`` is one ``[8, T]`` array or a list of them (finished chunks then the
    current one, drawn side by side with a separator); ``decided`` (bool, the
    shape of the last array) marks the cells decided by this step.  The picture
    is ``width`` pixels wide whatever T is (cells are stretched or squeezed).
    """
    if codes is None:
        parts: list[np.ndarray] = [np.full((NUM_CODEBOOKS, 1), mask_id, dtype=np.int64)]
    elif isinstance(codes, np.ndarray):
        parts = [codes]
    else:
        parts = [np.asarray(c) for c in codes] or [np.full((NUM_CODEBOOKS, 1), mask_id, dtype=np.int64)]
    rows = parts[0].shape[0]
    strips = []
    for index, part in enumerate(parts):
        part = np.asarray(part)
        rgb = _value_colours(np.clip(part, 0, CODEBOOK_SIZE - 1))
        rgb[part >= mask_id] = UNDECIDED
        if decided is not None and index == len(parts) - 1 and decided.shape == part.shape:
            rgb[decided] = HIGHLIGHT
        strips.append(rgb)
        if index < len(parts) - 1:
            strips.append(np.broadcast_to(np.array(SEPARATOR, dtype=np.uint8), (rows, 1, 3)))
    grid = np.concatenate(strips, axis=1)  # [8, T', 3]
    columns = grid.shape[1]
    # each column -> an integer span of pixels (nearest), rows -> row_height with a gap
    x = np.minimum((np.arange(width) * columns) // width, columns - 1)
    stretched = grid[:, x]  # [8, width, 3]
    height = rows * (row_height + gap) + gap
    image = np.empty((height, width, 3), dtype=np.uint8)
    image[:] = BACKGROUND
    for r in range(rows):
        top = gap + r * (row_height + gap)
        image[top:top + row_height] = stretched[r][np.newaxis]
    return Image.fromarray(image, "RGB")


# --- benchmark chart -------------------------------------------------------------------------

PALETTE = [(86, 156, 214), (230, 145, 56), (106, 190, 120), (200, 90, 120), (160, 130, 210), (120, 200, 210)]


def _font(size: int):
    for name in ("DejaVuSans.ttf", "Arial.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1
        return ImageFont.load_default()


def bar_chart(groups: Sequence[str], series: dict[str, Sequence[float]], title: str = "", unit: str = "s",
              width: int = 900, bar_height: int = 14) -> Image.Image:
    """Horizontal grouped bars: one group per entry of ``groups`` (stages), one bar per series (model).

    ``series`` maps a series name to one value per group.
    """
    names = list(series)
    font, small = _font(14), _font(12)
    left, right, top = 150, 90, 34 + 20 * ((len(names) + 2) // 3)
    group_h = bar_height * max(1, len(names)) + 12
    height = top + group_h * max(1, len(groups)) + 16
    image = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    if title:
        draw.text((10, 6), title, fill=(20, 20, 20), font=font)
    for index, name in enumerate(names):  # legend
        x = 10 + (index % 3) * ((width - 20) // 3)
        y = 28 + 20 * (index // 3)
        draw.rectangle([x, y + 3, x + 12, y + 15], fill=PALETTE[index % len(PALETTE)])
        draw.text((x + 18, y), name, fill=(40, 40, 40), font=small)
    values = [float(v) for name in names for v in series[name] if v is not None and np.isfinite(v)]
    peak = max(values) if values else 1.0
    peak = peak if peak > 0 else 1.0
    span = width - left - right
    for g, group in enumerate(groups):
        y0 = top + g * group_h
        draw.text((10, y0 + (group_h - 12) / 2 - 4), str(group), fill=(30, 30, 30), font=small)
        for index, name in enumerate(names):
            value = series[name][g]
            y = y0 + 4 + index * bar_height
            if value is None or not np.isfinite(value):
                continue
            length = int(span * float(value) / peak)
            draw.rectangle([left, y, left + max(length, 1), y + bar_height - 3], fill=PALETTE[index % len(PALETTE)])
            draw.text((left + length + 6, y - 1), f"{value:.3g} {unit}".strip(), fill=(60, 60, 60), font=small)
    draw.line([left, top - 4, left, height - 10], fill=(160, 160, 160))
    return image
