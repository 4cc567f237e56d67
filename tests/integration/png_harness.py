"""Reading back the PNGs jobscope draws: size, rows of pixels, where a line of a colour is."""
import os
import struct
import zlib

from harness import check, eq

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    eq(head[:8], PNG_SIGNATURE, "%s: the PNG signature" % path)
    eq(head[12:16], b"IHDR", "%s: IHDR first" % path)
    return struct.unpack(">II", head[16:24])


_decoded = {}  # (path, mtime_ns, size) -> every row decoded: a test reads one image many times


def png_rows(path, first, last):
    """Rows first..last (inclusive) of an 8-bit RGB or RGBA PNG as lists of (r, g, b)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    if key not in _decoded:
        if len(_decoded) >= 2:  # tests compare two pictures at most
            _decoded.pop(next(iter(_decoded)))
        _decoded[key] = _decode(path)
    return _decoded[key][first:last + 1]


def _decode(path):
    """Every row of the PNG, undone of its filters (pure Python: some 0.2 s a picture)."""
    with open(path, "rb") as f:
        data = f.read()
    pos, idat, width, channels = 8, b"", 0, 3
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, _, depth, colour = struct.unpack(">IIBB", chunk[:10])
            eq(depth, 8, "8-bit samples")
            channels = {2: 3, 6: 4}[colour]
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw, stride = zlib.decompress(idat), width * channels
    height = len(raw) // (stride + 1)
    prev, rows = bytearray(stride), []
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        ftype, cur = line[0], bytearray(line[1:])
        for i in range(stride):
            a = cur[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if ftype == 1:
                cur[i] = (cur[i] + a) & 255
            elif ftype == 2:
                cur[i] = (cur[i] + b) & 255
            elif ftype == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = cur
        rows.append([tuple(cur[x * channels:x * channels + 3]) for x in range(width)])
    return rows


def of_colour(pixel, colour):
    """Whether a pixel is colour drawn over white, at least 40% covered (antialiasing)."""
    k0 = max(range(3), key=lambda k: 255 - colour[k])  # the channel farthest from white
    a = (255 - pixel[k0]) / (255 - colour[k0])
    return a >= 0.4 and all(abs(255 - a * (255 - colour[k]) - pixel[k]) <= 15 for k in range(3))


def line_row(path, colour, first, last, x0, x1):
    """The median row, in [first, last], of the pixels of that colour between x0 and x1."""
    ys = [first + i for i, row in enumerate(png_rows(path, first, last))
          for x in range(x0, x1) if of_colour(row[x], colour)]
    check(ys, "%s: a line of colour %r" % (path, colour))
    return sorted(ys)[len(ys) // 2]


def colour_pixels(path, colour, first, last, x0, x1):
    return sum(1 for row in png_rows(path, first, last) for x in range(x0, x1)
               if of_colour(row[x], colour))
