"""Writes the song of the cover benchmark (`make bench-cover`): stereo 44.1 kHz, a voice-like
line (bench/make_models.py's) over an instrumental of sustained triads that change every 2 s,
a bass line and a noise hi-hat on the eighth notes. Seeded; nothing here is music, but it has
the parts a cover separates, converts and remixes.

Run in .venv-bench: `python bench/cover_song.py OUT.wav --seconds 180`."""

import argparse
from pathlib import Path

import numpy as np
from make_models import voice_like, write_wav

RATE = 44_100
CHORDS = [(220.0, 277.2, 329.6), (196.0, 246.9, 293.7), (174.6, 220.0, 261.6), (164.8, 207.7, 246.9)]


def instrumental(seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    chord = (t // 2).astype(int) % len(CHORDS)
    out = np.zeros((n, 2))
    for voice in range(3):
        freq = np.array([c[voice] for c in CHORDS])[chord]
        phase = 2 * np.pi * np.cumsum(freq) / RATE
        out[:, voice % 2] += 0.06 * np.sin(phase)
        out[:, 1 - voice % 2] += 0.03 * np.sin(phase)
    bass = np.array([c[0] / 2 for c in CHORDS])[chord]
    out += 0.1 * np.sin(2 * np.pi * np.cumsum(bass) / RATE)[:, None]
    eighth = (t * 4) % 1
    hat = rng.standard_normal((n, 2)) * np.exp(-eighth * 40)[:, None]
    return out + 0.03 * hat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=180.0)
    args = parser.parse_args()
    vocals = voice_like(args.seconds, seed=6, rate=RATE)
    song = instrumental(args.seconds, seed=7) + np.stack([vocals, 0.9 * vocals], axis=1)
    write_wav(args.out, song, RATE)


if __name__ == "__main__":
    main()
