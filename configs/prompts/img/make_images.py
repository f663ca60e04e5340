#!/usr/bin/env python3
"""Regenerates the demo images next to this script (deterministic, no dependencies beyond
the standard library; the JPEG goes through a tiny C program against Debian's libjpeg).

    python3 configs/prompts/img/make_images.py
"""
import os
import struct
import subprocess
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write_png(path, width, height, pixel):
    rows = b"".join(
        b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
                chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def sunset(x, y):  # 96x64: sky gradient, a sun, dark sea
    if y > 44:
        return (10, 20 + (y - 44), 60 + 2 * (y - 44))
    if (x - 48) ** 2 + (y - 40) ** 2 < 100:
        return (255, 220, 120)
    return (255, 80 + 2 * y, 40 + y)


def tiles(x, y):  # 128x128: coloured checkerboard
    palette = [(200, 40, 40), (40, 160, 60), (40, 60, 200), (230, 200, 50)]
    return palette[((x // 16) + (y // 16)) % 4] if (x // 16 + y // 16) % 2 else (240, 240, 240)


def planet(x, y):  # 128x96 RGB bytes for the JPEG: a planet with a ring on black
    dx, dy = x - 64, y - 48
    if dx * dx + dy * dy < 24 * 24:
        return (180, 120 + dy, 80)
    if abs(dy * 4 - dx) < 6 and 20 < abs(dx) < 50:
        return (220, 210, 190)
    return (255, 255, 255) if (x * 7 + y * 13) % 97 == 0 else (0, 0, 8)


JPEG_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
int main(int argc, char** argv) {
  int w = atoi(argv[2]), h = atoi(argv[3]);
  unsigned char* rgb = malloc((size_t)w * h * 3);
  if (fread(rgb, 1, (size_t)w * h * 3, stdin) != (size_t)w * h * 3) return 1;
  struct jpeg_compress_struct c; struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e); jpeg_create_compress(&c);
  FILE* out = fopen(argv[1], "wb"); if (!out) return 1;
  jpeg_stdio_dest(&c, out);
  c.image_width = w; c.image_height = h; c.input_components = 3; c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c); jpeg_set_quality(&c, 85, TRUE); jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = rgb + (size_t)c.next_scanline * w * 3; jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c); fclose(out); jpeg_destroy_compress(&c); free(rgb); return 0;
}
"""


def write_jpeg(path, width, height, pixel):
    rgb = b"".join(bytes(pixel(x, y)) for y in range(height) for x in range(width))
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "jpeg.c"), os.path.join(tmp, "jpeg")
        with open(src, "w") as f:
            f.write(JPEG_C)
        subprocess.run(["cc", "-O1", "-o", exe, src, "-ljpeg"], check=True)
        subprocess.run([exe, path, str(width), str(height)], input=rgb, check=True)


if __name__ == "__main__":
    write_png(os.path.join(HERE, "sunset.png"), 96, 64, sunset)
    write_png(os.path.join(HERE, "tiles.png"), 128, 128, tiles)
    write_jpeg(os.path.join(HERE, "planet.jpg"), 128, 96, planet)
