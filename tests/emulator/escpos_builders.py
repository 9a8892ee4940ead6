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


def qr_code(data: bytes, module_dots: int = 3, level: str = "L", model: int = 2) -> bytes:
    """`GS ( k` QR Code: <Function 165> model, 167 module size, 169 level, 180 store, 181 print."""
    levels = {"L": 48, "M": 49, "Q": 50, "H": 51}

    def function(fn: int, params: bytes) -> bytes:
        return b"\x1d(k" + (len(params) + 2).to_bytes(2, "little") + bytes([49, fn]) + params

    return b"".join(
        [
            function(65, bytes([48 + model, 0])),
            function(67, bytes([module_dots])),
            function(69, bytes([levels[level]])),
            function(80, b"0" + data),
            function(81, b"0"),
        ]
    )


def barcode_nul(system: int, data: bytes) -> bytes:
    """`GS k m d1..dk NUL`, m 0..6."""
    return b"\x1dk" + bytes([system]) + data + b"\x00"


def barcode_counted(system: int, data: bytes) -> bytes:
    """`GS k m n d1..dn`, m 65..79."""
    return b"\x1dk" + bytes([system, len(data)]) + data


def barcode_settings(height: int = 80, module: int = 2, hri: int = 2, font: int = 0) -> bytes:
    """`GS h n`, `GS w n`, `GS H n` (0 none, 1 above, 2 below, 3 both), `GS f n` (0 A, 1 B)."""
    return bytes([0x1D, 0x68, height, 0x1D, 0x77, module, 0x1D, 0x48, hri, 0x1D, 0x66, font])
