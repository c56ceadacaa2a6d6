"""The device daemon's status (uapi/simd_protocol.h kStatus): its functions, with each one's MAC
and IPv4 address, link layer ("Ethernet" or "InfiniBand") and, on InfiniBand, LID and SM LID,
and its clients. tools/onchip sim prints it; launch.py --daemon lists one
device per function from it."""
import json
import socket
import struct

# uapi/simd_protocol.h: the frame header (magic, version, type, length, status, reserved).
HEADER = struct.Struct("<IHHIIQ")
MAGIC = 0x4453434F
VERSION = 3
STATUS = 5


def _recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the daemon closed the connection")
        data += chunk
    return data


def status(path):
    """The daemon's state as a dict, or None when no daemon answers on `path`."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(path)
            s.sendall(HEADER.pack(MAGIC, VERSION, STATUS, 0, 0, 0))
            magic, version, kind, length, err, _ = HEADER.unpack(_recv_exact(s, HEADER.size))
            if magic != MAGIC or version != VERSION or kind != STATUS or err != 0:
                return None
            return json.loads(_recv_exact(s, length).decode())
    except (OSError, ConnectionError, ValueError):
        return None
