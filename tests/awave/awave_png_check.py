#!/usr/bin/env python3
"""awave_png_check.py PREFIX: awave's pictures of one run, decoded here with
the standard library alone (zlib, all five PNG row filters), against the
run's image PREFIX.bin (awave_check.sh png runs awave first).

  PREFIX.png      8-bit grayscale, nx x nz (PREFIX.json), each chunk's CRC
                  right, each pixel the image value scaled to 0..255 with a
                  symmetric clip at the 99th percentile of the nonzero
                  |values| (awave.c, aw_write_outputs; float arithmetic as
                  in aw_png.c, so exactly); and the file compressed:
                  smaller than the pixels it holds.
  PREFIX-vel.png  8-bit RGB, nx x nz, valid and compressed.

awave_png_check.py --same A.png B.png: the two files hold the same pixels
(to compare two PNG writers)."""
import json
import struct
import sys
import zlib


def fail(msg):
    print(f"awave_png_check: FAIL: {msg}")
    sys.exit(1)


def f32(v):
    """v rounded to float32: one float32 operation is the double one
    rounded so (double has more than twice float's precision)."""
    return struct.unpack("f", struct.pack("f", v))[0]


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode(path):
    """(width, height, channels, rows as a list of bytearrays, file size)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path}: no PNG signature")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(kind + body) != crc:
            fail(f"{path}: bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    if ihdr is None:
        fail(f"{path}: no IHDR")
    width, height, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (0, 2) or interlace != 0:
        fail(f"{path}: depth {depth}, colour type {ctype}, interlace {interlace}")
    ch = 1 if ctype == 0 else 3
    raw = zlib.decompress(idat)
    stride = width * ch
    if len(raw) != height * (1 + stride):
        fail(f"{path}: {len(raw)} bytes of image data for {width} x {height}")
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (1 + stride)]
        cur = bytearray(raw[y * (1 + stride) + 1:(y + 1) * (1 + stride)])
        for i in range(stride):
            a = cur[i - ch] if i >= ch else 0
            b, c = prev[i], prev[i - ch] if i >= ch else 0
            if f == 1:
                cur[i] = (cur[i] + a) & 255
            elif f == 2:
                cur[i] = (cur[i] + b) & 255
            elif f == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif f == 4:
                cur[i] = (cur[i] + paeth(a, b, c)) & 255
            elif f != 0:
                fail(f"{path}: row {y} has filter type {f}")
        rows.append(cur)
        prev = cur
    return width, height, ch, rows, len(data)


def check_compressed(path, w, h, ch, size):
    if size >= w * h * ch:
        fail(f"{path}: {size} bytes for {w * h * ch} bytes of pixels: not compressed")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--same":
        a, b = decode(sys.argv[2]), decode(sys.argv[3])
        if a[:4] != b[:4]:
            fail(f"{sys.argv[2]} and {sys.argv[3]} differ")
        print(f"awave_png_check: same pixels ({a[4]} and {b[4]} bytes)")
        return
    prefix = sys.argv[1]
    meta = json.load(open(prefix + ".json"))
    nx, nz = meta["nx"], meta["nz"]
    raw = open(prefix + ".bin", "rb").read()
    if len(raw) != 4 * nx * nz:
        fail(f"{prefix}.bin has {len(raw)} bytes for {nx} x {nz} floats")
    img = struct.unpack(f"{nx * nz}f", raw)  # nx traces of nz samples

    w, h, ch, rows, size = decode(prefix + ".png")
    if (w, h, ch) != (nx, nz, 1):
        fail(f"{prefix}.png is {w} x {h} with {ch} channels, expected {nx} x {nz} gray")
    check_compressed(prefix + ".png", w, h, ch, size)
    mag = sorted(abs(v) for v in img if v != 0)
    clip = mag[int(0.99 * (len(mag) - 1))] if mag else 1.0
    lo, hi = -clip, clip
    shades = set()
    for z in range(nz):
        for x in range(nx):
            t = f32(f32(img[x * nz + z] - lo) / f32(hi - lo)) if hi > lo else 0.5
            t = min(max(t, 0.0), 1.0)
            want = int(f32(f32(255.0 * t) + 0.5))
            if rows[z][x] != want:
                fail(f"{prefix}.png pixel x={x} z={z} is {rows[z][x]}, expected {want}")
            shades.add(want)
    if len(shades) < 2:
        fail(f"{prefix}.png is one shade")

    vw, vh, vch, _, vsize = decode(prefix + "-vel.png")
    if (vw, vh, vch) != (nx, nz, 3):
        fail(f"{prefix}-vel.png is {vw} x {vh} with {vch} channels, expected {nx} x {nz} RGB")
    check_compressed(prefix + "-vel.png", vw, vh, vch, vsize)
    print(f"awave_png_check: ok ({nx} x {nz}; {size} and {vsize} bytes; "
          f"{len(shades)} shades)")


main()
