# The reference side of `parity_tests.rs`: one of our dataset folders rewritten in rvc_next
# 0.2.16's experiment layout (0_gt_wavs, 3_feature768, 2a_f0, 2b-f0nsf, filelist.txt), then
# read by its own loader, collate and bucket sampler.
#
# usage: python reference_data.py DATASET OUT SEED EPOCHS BATCH_SIZE SPEAKER_ID
#   prints JSON {"epochs": [[[piece, ...], ...] for each epoch from 1]}
#   writes OUT/reference.safetensors: "item.<piece>.<field>" for every piece and
#   "batch.<k>.<field>" for the first epoch's batches, the collate's tensors.
#
# The file list is `filelist.py`'s, shuffled with Random(SEED) as `write_filelist` does, less
# its two mute lines: our datasets have no mute pieces.

import json
import random
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from safetensors.torch import save_file

from rvc_next.engine.train.dataset import (
    DistributedBucketSampler,
    TextAudioCollate,
    TextAudioCollateMultiNSFsid,
    TextAudioLoader,
    TextAudioLoaderMultiNSFsid,
)
from rvc_next.engine.train.filelist import build_lines
from rvc_next.engine.train.hparams import HParams, default_config

BOUNDARIES = [100, 200, 300, 400, 500, 600, 700, 800, 900]
RATES = {32000: "32k", 40000: "40k", 48000: "48k"}
FIELDS_PITCH = ["phone", "phone_lengths", "pitch", "pitchf", "spec", "spec_lengths", "wave", "wave_lengths", "sid"]
FIELDS = ["phone", "phone_lengths", "spec", "spec_lengths", "wave", "wave_lengths", "sid"]


def experiment(dataset: Path, exp: Path, pitch: bool) -> None:
    manifest = json.loads((dataset / "dataset.json").read_text())
    fea = "3_feature256" if manifest["version"] == "v1" else "3_feature768"
    for folder in ["0_gt_wavs", fea, "2a_f0", "2b-f0nsf"]:
        (exp / folder).mkdir(parents=True, exist_ok=True)
    for piece in manifest["pieces"]:
        name = Path(piece["gt_wav"]).stem
        shutil.copyfile(dataset / piece["gt_wav"], exp / "0_gt_wavs" / f"{name}.wav")
        tensors = load_file(str(dataset / piece["features"]))
        np.save(exp / fea / f"{name}.npy", tensors["features"])
        if pitch:
            np.save(exp / "2a_f0" / f"{name}.wav.npy", tensors["f0"])
            np.save(exp / "2b-f0nsf" / f"{name}.wav.npy", tensors["f0nsf"])


def main() -> None:
    dataset, out = Path(sys.argv[1]), Path(sys.argv[2])
    seed, epochs, batch_size, speaker = (int(a) for a in sys.argv[3:7])
    manifest = json.loads((dataset / "dataset.json").read_text())
    pitch = manifest["f0_method"] is not None
    rate, version = RATES[manifest["sample_rate"]], manifest["version"]
    exp = out / "exp"
    experiment(dataset, exp, pitch)
    lines, _ = build_lines(exp, rate, version, pitch, speaker)
    lines = [line for line in lines if "/mute/" not in line]
    random.Random(seed).shuffle(lines)
    filelist = exp / "filelist.txt"
    filelist.write_text("\n".join(lines), encoding="utf-8")

    hps = HParams(**default_config(version, rate)["data"])
    loader = TextAudioLoaderMultiNSFsid(filelist, hps) if pitch else TextAudioLoader(filelist, hps)
    collate = TextAudioCollateMultiNSFsid() if pitch else TextAudioCollate()
    fields = FIELDS_PITCH if pitch else FIELDS
    names = [Path(record[0]).stem for record in loader.audiopaths_and_text]
    sampler = DistributedBucketSampler(loader, batch_size, list(BOUNDARIES), num_replicas=1, rank=0, shuffle=True)

    saved = {}
    for index, name in enumerate(names):
        item = loader[index]
        item_fields = ["spec", "wave", "phone", "pitch", "pitchf"] if pitch else ["spec", "wave", "phone"]
        for field, tensor in zip(item_fields, item):
            saved[f"item.{name}.{field}"] = tensor.contiguous()
    order = []
    for epoch in range(1, epochs + 1):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        order.append([[names[i] for i in batch] for batch in batches])
        if epoch == 1:
            for k, batch in enumerate(batches):
                for field, tensor in zip(fields, collate([loader[i] for i in batch])):
                    saved[f"batch.{k}.{field}"] = tensor.contiguous()
    # Two data-parallel replicas: each rank's share of every epoch.
    shards = []
    for rank in range(2):
        replica = DistributedBucketSampler(loader, batch_size, list(BOUNDARIES), num_replicas=2, rank=rank, shuffle=True)
        epochs_of_rank = []
        for epoch in range(1, epochs + 1):
            replica.set_epoch(epoch)
            epochs_of_rank.append([[names[i] for i in batch] for batch in replica])
        shards.append(epochs_of_rank)
    save_file(saved, str(out / "reference.safetensors"))
    print(json.dumps({"epochs": order, "shards": shards}))


if __name__ == "__main__":
    main()
