#!/usr/bin/env python3
"""A real-time fake microphone for ALSA's `file` capture plugin.

ALSA's `file` PCM over the `null` PCM reads its `infile` as fast as the client asks: with a
plain raw file, a recording stopped after 2.5 s of wall time holds over ten minutes of
audio. This script makes the infile a FIFO and writes a sine into it at the real-time rate,
so the plugin's read() waits for each chunk and capture follows the wall clock.

Usage: fake_mic.py FIFO [--rate 48000] [--channels 2] [--format f32|s16]
                        [--freq 440] [--amplitude 0.5] [--chunk-ms 250]

The samples are interleaved little-endian, in the format the `.asoundrc` declares. Use
FLOAT_LE 48 kHz stereo (what cpal opens the device with, see
timbre_audio::record::fake_alsa_config): any conversion in the `plug` layer makes alsa-lib's
file plugin drop frames (a 440 Hz sine comes out near 460 Hz).

Each chunk is written in one write() into a pipe sized to hold it, so a reader waiting on
the FIFO gets whole chunks; a read that asks for more than is left gets a short read and the
rest of its period is filled from the null device (silence), so chunks should be much larger
than the reader's period.

Runs until SIGTERM/SIGINT. When the last reader closes the FIFO the next write fails with
EPIPE and the FIFO is reopened (open() waits for the next reader), so the app can open and
close the device any number of times.
"""

import argparse
import array
import errno
import fcntl
import math
import os
import signal
import stat
import sys
import time

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fifo")
    ap.add_argument("--rate", type=int, default=48000)
    ap.add_argument("--channels", type=int, default=2)
    ap.add_argument("--format", choices=["f32", "s16"], default="f32")
    ap.add_argument("--freq", type=float, default=440.0)
    ap.add_argument("--amplitude", type=float, default=0.5)
    ap.add_argument("--chunk-ms", type=int, default=250)
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a closed reader is EPIPE, handled below

    if os.path.exists(args.fifo):
        if not stat.S_ISFIFO(os.stat(args.fifo).st_mode):
            print(f"fake_mic: {args.fifo} exists and is not a FIFO", file=sys.stderr)
            return 2
    else:
        os.mkfifo(args.fifo, 0o600)

    frames_per_chunk = max(1, args.rate * args.chunk_ms // 1000)
    chunk_secs = frames_per_chunk / args.rate
    typecode, scale = ("f", args.amplitude) if args.format == "f32" else ("h", args.amplitude * 32767.0)
    sample_bytes = array.array(typecode).itemsize
    chunk_bytes = frames_per_chunk * args.channels * sample_bytes
    if sys.byteorder != "little":
        print("fake_mic: needs a little-endian machine", file=sys.stderr)
        return 2
    step = 2.0 * math.pi * args.freq / args.rate
    # The phase repeats every `period` frames when freq divides rate (440 Hz at 48 kHz does
    # not, so keep a running index and wrap it at a whole number of seconds).
    index = 0

    def next_chunk() -> bytes:
        nonlocal index
        out = array.array(typecode)
        for i in range(frames_per_chunk):
            v = scale * math.sin(step * (index + i))
            s = v if typecode == "f" else int(round(v))
            out.extend([s] * args.channels)
        index = (index + frames_per_chunk) % (args.rate * 100)
        return out.tobytes()

    while True:
        fd = os.open(args.fifo, os.O_WRONLY)  # waits until a reader opens the device
        try:
            # Room for one chunk and a bit: whole chunks per write, little backlog.
            fcntl.fcntl(fd, F_SETPIPE_SZ, chunk_bytes + 1)
        except OSError as err:
            print(f"fake_mic: could not size the pipe ({err}); reads may be short", file=sys.stderr)
        deadline = time.monotonic()
        try:
            while True:
                data = memoryview(next_chunk())
                while data:
                    data = data[os.write(fd, data) :]
                deadline += chunk_secs
                delay = deadline - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                elif delay < -1.0:
                    deadline = time.monotonic()  # the reader stalled: do not catch up in a burst
        except OSError as err:
            if err.errno != errno.EPIPE:
                raise
        finally:
            os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
