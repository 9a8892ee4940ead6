"""ESC/POS byte builders the emulator tests send, written from the Epson reference.

They are deliberately independent of the decoder, so a shared mistake cannot
make a test pass.
"""

from __future__ import annotations

import random

from PIL import Image, ImageDraw

ESC_INIT = b"\x1b@"
FULL_CUT = b"\x1dV\x00"
PARTIAL_CUT = b"\x1dV\x01"


def status_query(query: int) -> bytes:
    return b"\x10\x04" + bytes([query])


def raster_command(image: Image.Image) -> bytes:
    """`GS v 0 0 xL xH yL yH d...` for a 1-bit image: bit 1 is a black dot, MSB leftmost."""
    width_bytes = (image.width + 7) // 8
    pixels = image.load()
    assert pixels is not None
    data = bytearray()
    for y in range(image.height):
        for column in range(width_bytes):
            byte = 0
            for bit in range(8):
                x = column * 8 + bit
                if x < image.width and pixels[x, y] == 0:
                    byte |= 0x80 >> bit
            data.append(byte)
    header = b"\x1dv0\x00" + width_bytes.to_bytes(2, "little") + image.height.to_bytes(2, "little")
    return header + bytes(data)


def badge_image(width: int = 384, height: int = 160, seed: int = 7) -> Image.Image:
    """A reference badge: shapes for structure plus random dots so every bit matters."""
    generator = random.Random(seed)
    image = Image.new("1", (width, height), 1)
    if width >= 160 and height >= 130:
        draw = ImageDraw.Draw(image)
        draw.rectangle((2, 2, width - 3, height - 3), outline=0, width=3)
        draw.ellipse((20, 20, 120, 120), fill=0)
        draw.text((140, 40), "Ada Lovelace", fill=0)
    for _ in range(width * height // 20):
        image.putpixel((generator.randrange(width), generator.randrange(height)), 0)
    return image


def badge_job(job_id: str | None, image: Image.Image | None = None, name: str = "Ada") -> bytes:
    """What an agent sends for one badge: init, image, name, footer, feed, cut."""
    payload = bytearray(ESC_INIT)
    if image is not None:
        payload += b"\x1ba\x01" + raster_command(image) + b"\x1ba\x00"
    payload += b"\x1b!\x30" + name.encode() + b"\n\x1b!\x00"
    if job_id is not None:
        payload += f"job {job_id}\n".encode()
    payload += b"\x1bd\x04" + FULL_CUT
    return bytes(payload)
