"""The speaker encoder's reference for `tests/speaker_encoder/mod.rs`: resemblyzer 0.1.4 itself,
`VoiceEncoder(device="cpu")` on its bundled `pretrained.pt`.

Usage: reference.py DIR; reads DIR/*.wav (mono float), writes DIR/reference.safetensors with, per
input, `<name>.mel` (`audio.wav_to_mel_spectrogram`, the input as it is, at 16 kHz only),
`<name>.embed` (`embed_utterance(wav)`, 16 kHz only), `<name>.normalized` (`normalize_volume(wav
resampled to 16 kHz, -30, increase_only=True)`), `<name>.preprocessed` (`preprocess_wav(wav, source_sr=rate)`) and `<name>.preprocessed_embed`
(`embed_utterance` of that); prints the weights' path.

librosa ≥ 0.10 pads centred STFT frames with zeros by default (`pad_mode="constant"`); the librosa
Resemblyzer was written against, and its model trained with, reflected the signal. The port
reflects, so `audio.wav_to_mel_spectrogram` (which `VoiceEncoder.embed_utterance` calls through the
module, `audio.wav_to_mel_spectrogram(wav)`) is replaced here by the same call with
`pad_mode="reflect"`, librosa's arguments all given by keyword as 0.11 requires.
"""

import json
import sys
import warnings
from pathlib import Path

import librosa
import numpy as np
import soundfile
import torch
from safetensors.torch import save_file


# resemblyzer.audio imports binary_dilation from scipy's deprecated `ndimage.morphology`.
warnings.filterwarnings("ignore", category=DeprecationWarning)

import resemblyzer  # noqa: E402
from resemblyzer import audio, hparams  # noqa: E402


def wav_to_mel_spectrogram(wav):
    """`audio.wav_to_mel_spectrogram` with the reflect padding the model was trained with."""
    frames = librosa.feature.melspectrogram(
        y=wav,
        sr=hparams.sampling_rate,
        n_fft=int(hparams.sampling_rate * hparams.mel_window_length / 1000),
        hop_length=int(hparams.sampling_rate * hparams.mel_window_step / 1000),
        n_mels=hparams.mel_n_channels,
        pad_mode="reflect",
    )
    return frames.astype(np.float32).T


audio.wav_to_mel_spectrogram = wav_to_mel_spectrogram


def main() -> None:
    folder = Path(sys.argv[1])
    torch.set_num_threads(2)
    encoder = resemblyzer.VoiceEncoder(device="cpu", verbose=False)
    out = {}
    tensor = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))  # noqa: E731
    for path in sorted(folder.glob("*.wav")):
        wav, rate = soundfile.read(path, dtype="float32")
        name = path.stem
        if rate == hparams.sampling_rate:
            out[f"{name}.mel"] = tensor(audio.wav_to_mel_spectrogram(wav))
            out[f"{name}.embed"] = tensor(encoder.embed_utterance(wav))
            resampled = wav
        else:
            resampled = librosa.resample(wav, orig_sr=rate, target_sr=hparams.sampling_rate)
        normalized = audio.normalize_volume(resampled, hparams.audio_norm_target_dBFS, increase_only=True)
        out[f"{name}.normalized"] = tensor(normalized)
        preprocessed = resemblyzer.preprocess_wav(wav, source_sr=rate)
        out[f"{name}.preprocessed"] = tensor(preprocessed)
        out[f"{name}.preprocessed_embed"] = tensor(encoder.embed_utterance(preprocessed))
    save_file(out, str(folder / "reference.safetensors"))
    weights = Path(resemblyzer.__file__).parent / "pretrained.pt"
    print(json.dumps({"weights": str(weights)}))


if __name__ == "__main__":
    main()
