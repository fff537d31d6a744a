#!/usr/bin/env python3
"""A recording relay for the fuzz seed corpora: listens on 127.0.0.1:LISTEN, forwards every
connection to 127.0.0.1:UPSTREAM (a running docgate) and writes each complete client-to-server
wire frame (the 4-byte length prefix tells where one ends) to OUT_DIR/<sha1>.bin, so equal
frames are kept once. Replies are forwarded untouched and not recorded.

Not for: anything but capture on loopback (fuzz/capture/capture.sh starts and stops it).

Usage: relay.py LISTEN_PORT UPSTREAM_PORT OUT_DIR
"""

import asyncio
import hashlib
import os
import struct
import sys

MAX_FRAME = 48_000_000


def record(out_dir, frame):
    name = hashlib.sha1(frame).hexdigest() + ".bin"
    path = os.path.join(out_dir, name)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(frame)


async def client_to_server(reader, writer, out_dir):
    pending = b""
    while True:
        data = await reader.read(65536)
        if not data:
            break
        writer.write(data)
        await writer.drain()
        pending += data
        while len(pending) >= 4:
            (length,) = struct.unpack_from("<i", pending)
            if length < 16 or length > MAX_FRAME:
                pending = b""  # not a frame we can follow; forward only
                break
            if len(pending) < length:
                break
            record(out_dir, pending[:length])
            pending = pending[length:]
    writer.close()


async def server_to_client(reader, writer):
    while True:
        data = await reader.read(65536)
        if not data:
            break
        writer.write(data)
        await writer.drain()
    writer.close()


async def main():
    listen, upstream, out_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.makedirs(out_dir, exist_ok=True)

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            client_to_server(client_reader, server_writer, out_dir),
            server_to_client(server_reader, client_writer),
            return_exceptions=True,
        )

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
