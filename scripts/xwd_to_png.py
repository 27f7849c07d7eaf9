#!/usr/bin/env python3
"""Xvfb's framebuffer file (-fbdir: an XWD image, 24/32-bit TrueColor) as a PNG, with nothing
but the standard library. With --wait SECONDS, first waits until the screen is no longer one
colour (a window has drawn) and prints the seconds that took."""
import struct
import sys
import time
import zlib


def read(path):
    data = open(path, "rb").read()
    header = struct.unpack(">25I", data[:100])
    header_size, width, height = header[0], header[4], header[5]
    bits_per_pixel, bytes_per_line, ncolors = header[11], header[12], header[19]
    if bits_per_pixel != 32:
        sys.exit(f"{path}: {bits_per_pixel} bits per pixel; only 32 is read")
    start = header_size + ncolors * 12
    rows = []
    for y in range(height):
        line = data[start + y * bytes_per_line : start + y * bytes_per_line + width * 4]
        rgb = bytearray(width * 3)
        rgb[0::3], rgb[1::3], rgb[2::3] = line[2::4], line[1::4], line[0::4]
        rows.append(bytes(rgb))
    return width, height, rows


def png(width, height, rows):
    chunk = lambda kind, body: (
        struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    )
    raw = b"".join(b"\0" + row for row in rows)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


def main():
    args = sys.argv[1:]
    if args[0] == "--wait":
        limit, path = float(args[1]), args[2]
        started = time.monotonic()
        while time.monotonic() - started < limit:
            _, _, rows = read(path)
            if len(set(rows[len(rows) // 2 :: 7])) > 1 or len(set(rows[0])) > 3:
                print(f"{time.monotonic() - started:.1f}")
                return
            time.sleep(0.2)
        sys.exit(f"{path}: the screen stayed blank for {limit} s")
    source, target = args
    open(target, "wb").write(png(*read(source)))


if __name__ == "__main__":
    main()
