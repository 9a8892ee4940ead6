"""Images, ZPL and status parsing for the label printer tests, written from the makers'
references: deliberately independent of the emulator's code, so a shared mistake
cannot make a test pass."""

from __future__ import annotations

import random

from PIL import Image, ImageDraw

STX, ETX, CRLF = b"\x02", b"\x03", b"\r\n"


def gray_badge(width: int, height: int, seed: int = 5) -> Image.Image:
    """A badge in grey levels: a frame, a disc, bands of grey and random specks, so the
    threshold decides dots and every dot matters."""
    generator = random.Random(seed)
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    draw.rectangle((2, 2, width - 3, height - 3), outline=0, width=4)
    draw.ellipse((16, 16, 16 + height // 2, 16 + height // 2), fill=40)
    for band in range(8):
        left = width // 2 + band * 12
        draw.rectangle((left, 20, left + 11, height - 20), fill=band * 32)
    for _ in range(width * height // 25):
        image.putpixel((generator.randrange(width), generator.randrange(height)),
                       generator.randrange(256))  # fmt: skip
    return image


def thresholded(image: Image.Image, level: int) -> Image.Image:
    """Mode "1": black where the grey is at or below `level`."""
    return image.point(lambda value: 255 if value > level else 0, mode="1")


def same_dots(left: Image.Image, right: Image.Image) -> bool:
    return left.size == right.size and left.convert("1").tobytes() == right.convert("1").tobytes()


def zpl(*commands: str) -> bytes:
    return "".join(commands).encode("latin-1")


def host_status_fields(reply: bytes) -> list[list[str]]:
    """~HS: three `<STX>…<ETX><CR><LF>` strings, each split at its commas."""
    parts = reply.split(STX)
    assert parts[0] == b"" and len(parts) == 4, reply
    fields = []
    for part in parts[1:]:
        text, end = part.split(ETX)
        assert end == CRLF
        fields.append(text.decode("ascii").split(","))
    return fields


def hqes_flags(reply: bytes) -> tuple[int, int]:
    """~HQES: the error and warning bits of the first group (the third number of each)."""
    assert reply.startswith(STX) and reply.endswith(ETX + CRLF)
    lines = reply.decode("ascii").split("\r\n")
    values = {}
    for line in lines:
        words = line.split()
        if words and words[0] in ("ERRORS:", "WARNINGS:"):
            flag, _, group = words[1:4]
            assert flag == ("1" if int(group, 16) else "0")
            values[words[0]] = int(group, 16)
    return values["ERRORS:"], values["WARNINGS:"]
