"""Prometheus remote write 1.0 on the wire, by hand, for tests and benchmarks:
a WriteRequest's protobuf (varints, length-delimited fields, fixed64 doubles)
and snappy's block format, both ways.

  encoding  varint, pb_bytes, snappy_block (literal chunks only: valid snappy,
            not compressed), timeseries
  decoding  snappy_block_decode, pb_fields, read_varint, decode_write_request

Stdlib only (no python3-snappy, no protobuf module).
"""
import struct


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_bytes(field, data):
    return varint(field << 3 | 2) + varint(len(data)) + data


def snappy_block(data):
    """The uncompressed length, then literal chunks of at most 65536 bytes
    (tag 62<<2: a 3-byte length minus one follows)."""
    out = bytearray(varint(len(data)))
    for i in range(0, len(data), 65536):
        chunk = data[i:i + 65536]
        out += bytes([62 << 2]) + struct.pack("<I", len(chunk) - 1)[:3] + chunk
    return bytes(out)


def timeseries(labels, samples):
    """labels: dict with __name__; samples: [(ts_ms, value)] in time order."""
    body = b""
    for k in sorted(labels):
        body += pb_bytes(1, pb_bytes(1, k.encode()) + pb_bytes(2, str(labels[k]).encode()))
    for ts, v in samples:
        body += pb_bytes(2, b"\x09" + struct.pack("<d", float(v)) + b"\x10" + varint(ts))
    return pb_bytes(1, body)


def snappy_block_decode(b):
    """The snappy block format (the spec's 'format_description.txt')."""
    n, shift, i = 0, 0, 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7f) << shift
        shift += 7
        if c < 0x80:
            break
    out = bytearray()
    while i < len(b):
        tag = b[i]
        i += 1
        kind = tag & 3
        if kind == 0:
            ln = tag >> 2
            if ln >= 60:
                k = ln - 59
                ln = int.from_bytes(b[i:i + k], "little")
                i += k
            ln += 1
            out += b[i:i + ln]
            i += ln
            continue
        if kind == 1:
            ln = ((tag >> 2) & 7) + 4
            off = ((tag >> 5) << 8) | b[i]
            i += 1
        elif kind == 2:
            ln = (tag >> 2) + 1
            off = int.from_bytes(b[i:i + 2], "little")
            i += 2
        else:
            ln = (tag >> 2) + 1
            off = int.from_bytes(b[i:i + 4], "little")
            i += 4
        for _ in range(ln):
            out.append(out[-off])
    assert len(out) == n, "snappy: %d bytes, header said %d" % (len(out), n)
    return bytes(out)


def pb_fields(b):
    """[(field, value)] of one protobuf message (varint, fixed64 and bytes only)."""
    i, out = 0, []
    while i < len(b):
        key, i = read_varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(b, i)
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        elif wt == 2:
            ln, i = read_varint(b, i)
            v = b[i:i + ln]
            i += ln
        else:
            raise AssertionError("wire type %d" % wt)
        out.append((f, v))
    return out


def read_varint(b, i):
    """The varint at b[i]: (its value, the index after it)."""
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7f) << shift
        shift += 7
        if c < 0x80:
            return n, i


def decode_write_request(body):
    """[(labels [(name, value)], [(ts_ms, value)])]; proto3 defaults (0, "") for fields
    left out, and other fields (Prometheus' metadata, field 3) skipped."""
    series = []
    for f, ts in pb_fields(body):
        if f != 1:
            continue
        labels, samples = [], []
        for g, v in pb_fields(ts):
            d = dict(pb_fields(v))
            if g == 1:
                labels.append((d.get(1, b"").decode(), d.get(2, b"").decode()))
            elif g == 2:
                t = d.get(2, 0)
                t = t - (1 << 64) if t >= 1 << 63 else t
                samples.append((t, struct.unpack("<d", d.get(1, bytes(8)))[0]))
        series.append((labels, samples))
    return series
