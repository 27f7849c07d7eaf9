# Test oracle for crates/timbre-audio/src/dataset: a transcription of RVC's training preprocessing
# (RVC-Project/Retrieval-based-Voice-Conversion-WebUI, MIT licence: infer/lib/slicer2.py `get_rms`
# and `Slicer`, infer/modules/train/preprocess.py `PreProcess.pipeline` and `norm_write`), for
# testing only. Changes: slices are reported as sample ranges, files are raw float32 in and out.
#
# usage: python reference_preprocess.py DIR   (DIR/spec.json lists {"name", "sr"} per input,
# DIR/<name>.f32 holds the samples; writes DIR/<name>.json, <name>.pieces.f32, <name>.16k.f32,
# <name>.rms.f64)
import json
import os
import sys

import numpy as np
import soxr
from scipy import signal


def get_rms(y, frame_length=2048, hop_length=512, pad_mode="constant"):
    padding = (int(frame_length // 2), int(frame_length // 2))
    y = np.pad(y, padding, mode=pad_mode)
    axis = -1
    out_strides = y.strides + tuple([y.strides[axis]])
    x_shape_trimmed = list(y.shape)
    x_shape_trimmed[axis] -= frame_length - 1
    out_shape = tuple(x_shape_trimmed) + tuple([frame_length])
    xw = np.lib.stride_tricks.as_strided(y, shape=out_shape, strides=out_strides)
    target_axis = axis - 1
    xw = np.moveaxis(xw, -1, target_axis)
    slices = [slice(None)] * xw.ndim
    slices[axis] = slice(0, None, hop_length)
    x = xw[tuple(slices)]
    power = np.mean(np.abs(x) ** 2, axis=-2, keepdims=True)
    return np.sqrt(power)


class Slicer:
    def __init__(self, sr, threshold=-40.0, min_length=5000, min_interval=300, hop_size=20, max_sil_kept=5000):
        if not min_length >= min_interval >= hop_size:
            raise ValueError("min_length >= min_interval >= hop_size")
        if not max_sil_kept >= hop_size:
            raise ValueError("max_sil_kept >= hop_size")
        min_interval = sr * min_interval / 1000
        self.threshold = 10 ** (threshold / 20.0)
        self.hop_size = round(sr * hop_size / 1000)
        self.win_size = min(round(min_interval), 4 * self.hop_size)
        self.min_length = round(sr * min_length / 1000 / self.hop_size)
        self.min_interval = round(min_interval / self.hop_size)
        self.max_sil_kept = round(sr * max_sil_kept / 1000 / self.hop_size)

    def _apply_slice(self, waveform, begin, end):
        # As the reference's waveform[begin * hop : min(len, end * hop)], as a sample range.
        a, b = begin * self.hop_size, min(waveform.shape[0], end * self.hop_size)
        start = min(a, waveform.shape[0])
        return (start, start + len(waveform[a:b]))

    def slice(self, waveform):
        samples = waveform
        if samples.shape[0] <= self.min_length:
            return [(0, len(waveform))], None
        rms_list = get_rms(y=samples, frame_length=self.win_size, hop_length=self.hop_size).squeeze(0)
        sil_tags = []
        silence_start = None
        clip_start = 0
        for i, rms in enumerate(rms_list):
            if rms < self.threshold:
                if silence_start is None:
                    silence_start = i
                continue
            if silence_start is None:
                continue
            is_leading_silence = silence_start == 0 and i > self.max_sil_kept
            need_slice_middle = i - silence_start >= self.min_interval and i - clip_start >= self.min_length
            if not is_leading_silence and not need_slice_middle:
                silence_start = None
                continue
            if i - silence_start <= self.max_sil_kept:
                pos = rms_list[silence_start : i + 1].argmin() + silence_start
                if silence_start == 0:
                    sil_tags.append((0, pos))
                else:
                    sil_tags.append((pos, pos))
                clip_start = pos
            elif i - silence_start <= self.max_sil_kept * 2:
                pos = rms_list[i - self.max_sil_kept : silence_start + self.max_sil_kept + 1].argmin()
                pos += i - self.max_sil_kept
                pos_l = rms_list[silence_start : silence_start + self.max_sil_kept + 1].argmin() + silence_start
                pos_r = rms_list[i - self.max_sil_kept : i + 1].argmin() + i - self.max_sil_kept
                if silence_start == 0:
                    sil_tags.append((0, pos_r))
                    clip_start = pos_r
                else:
                    sil_tags.append((min(pos_l, pos), max(pos_r, pos)))
                    clip_start = max(pos_r, pos)
            else:
                pos_l = rms_list[silence_start : silence_start + self.max_sil_kept + 1].argmin() + silence_start
                pos_r = rms_list[i - self.max_sil_kept : i + 1].argmin() + i - self.max_sil_kept
                if silence_start == 0:
                    sil_tags.append((0, pos_r))
                else:
                    sil_tags.append((pos_l, pos_r))
                clip_start = pos_r
            silence_start = None
        total_frames = rms_list.shape[0]
        if silence_start is not None and total_frames - silence_start >= self.min_interval:
            silence_end = min(total_frames, silence_start + self.max_sil_kept)
            pos = rms_list[silence_start : silence_end + 1].argmin() + silence_start
            sil_tags.append((pos, total_frames + 1))
        if len(sil_tags) == 0:
            return [(0, len(waveform))], rms_list
        chunks = []
        if sil_tags[0][0] > 0:
            chunks.append(self._apply_slice(waveform, 0, sil_tags[0][0]))
        for i in range(len(sil_tags) - 1):
            chunks.append(self._apply_slice(waveform, sil_tags[i][1], sil_tags[i + 1][0]))
        if sil_tags[-1][1] < total_frames:
            chunks.append(self._apply_slice(waveform, sil_tags[-1][1], total_frames))
        return chunks, rms_list


def preprocess(audio, sr, per=3.7):
    """PreProcess.pipeline for one file: the slices, and each norm_write call's outcome."""
    slicer = Slicer(sr=sr, threshold=-42, min_length=1500, min_interval=400, hop_size=15, max_sil_kept=500)
    bh, ah = signal.butter(N=5, Wn=48, btype="high", fs=sr)
    overlap, max_, alpha = 0.3, 0.9, 0.75
    tail = per + overlap
    audio = signal.lfilter(bh, ah, audio)
    calls = []

    def norm_write(tmp_audio, idx1):
        tmp_max = np.abs(tmp_audio).max()
        if tmp_max > 2.5:
            calls.append({"idx1": idx1, "filtered": True})
            return
        tmp_audio = (tmp_audio / tmp_max * (max_ * alpha)) + (1 - alpha) * tmp_audio
        # librosa.resample(tmp_audio, orig_sr=sr, target_sr=16000): soxr_hq, then its length
        # fixed to ceil(n · 16000 / sr).
        at16k = soxr.resample(tmp_audio, sr, 16000, quality="soxr_hq")
        n16k = int(np.ceil(len(tmp_audio) * 16000 / sr))
        at16k = np.pad(at16k, (0, max(0, n16k - len(at16k))))[:n16k]
        calls.append({"idx1": idx1, "filtered": False, "audio": tmp_audio.astype(np.float32),
                      "audio16k": at16k.astype(np.float32)})

    ranges, rms = slicer.slice(audio)
    idx1 = 0
    for a, b in ranges:
        chunk = audio[a:b]
        i = 0
        while 1:
            start = int(sr * (per - overlap) * i)
            i += 1
            if len(chunk[start:]) > tail * sr:
                tmp_audio = chunk[start : start + int(per * sr)]
                norm_write(tmp_audio, idx1)
                idx1 += 1
            else:
                tmp_audio = chunk[start:]
                idx1 += 1
                break
        norm_write(tmp_audio, idx1)
    return ranges, rms, calls


def main():
    out = sys.argv[1]
    with open(os.path.join(out, "spec.json")) as f:
        spec = json.load(f)
    for entry in spec:
        name, sr = entry["name"], entry["sr"]
        audio = np.fromfile(os.path.join(out, name + ".f32"), dtype=np.float32)
        ranges, rms, calls = preprocess(audio, sr)
        kept = [c for c in calls if not c["filtered"]]
        empty = np.zeros(0, dtype=np.float32)
        np.concatenate([c["audio"] for c in kept] or [empty]).tofile(os.path.join(out, name + ".pieces.f32"))
        np.concatenate([c["audio16k"] for c in kept] or [empty]).tofile(os.path.join(out, name + ".16k.f32"))
        (rms if rms is not None else np.zeros(0)).astype(np.float64).tofile(os.path.join(out, name + ".rms.f64"))
        meta = {
            "slices": [[int(a), int(b)] for a, b in ranges],
            "calls": [
                {"idx1": c["idx1"], "filtered": c["filtered"],
                 "len": 0 if c["filtered"] else len(c["audio"]),
                 "len16k": 0 if c["filtered"] else len(c["audio16k"])}
                for c in calls
            ],
        }
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(meta, f)


if __name__ == "__main__":
    main()
