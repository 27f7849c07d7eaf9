"""Writes the small torch.save files that tests/checkpoint.rs reads, with contents the test
asserts exactly. Run with the project venv: python make_checkpoint_fixtures.py (from this folder).

mixed.pt         zip format, pickle protocol 2 (torch.save's default)
mixed_legacy.pt  the legacy (pre-1.6) format, same object
small_proto4.pt  zip format, pickle protocol 4 (STACK_GLOBAL, MEMOIZE, FRAME, SHORT_BINUNICODE)
"""

import argparse
from collections import OrderedDict
from pathlib import Path

import torch


def mixed():
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    return {
        "arange": base,
        "transposed": base.t(),
        "corner": base[1:, 2:],
        "half": torch.tensor([0.5, -2.0, 65504.0], dtype=torch.float16),
        "bfloat16": torch.tensor([1.5, -3.0], dtype=torch.bfloat16),
        "double": torch.tensor([1 / 3], dtype=torch.float64),
        "long": torch.tensor([-(2**40), 7]),
        "int": torch.tensor([-5, 6], dtype=torch.int32),
        "short": torch.tensor([-300], dtype=torch.int16),
        "char": torch.tensor([-7], dtype=torch.int8),
        "byte": torch.tensor([255], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
        "param": torch.nn.Parameter(torch.ones(2)),
        "ordered": OrderedDict([("z", 1), ("a", 2)]),
        "args": argparse.Namespace(layers=12, name="tiny", rate=0.25, flag=True),
        "nested": {
            "list": [1, 2.5, "text", None, True, b"\x00\xffbytes"],
            "tuple": (1, (2, 3)),
            "big": 2**70,
            "negative": -123456789,
            "set": {7},
            "frozenset": frozenset({8}),
            "unicode": "h\u00e9llo \u2713",
        },
    }


def small():
    weight = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    return {"weight_t": weight.t(), "meta": {"sr": "40k", "f0": 1, "bytes": b"\x01\x02"}}


if __name__ == "__main__":
    here = Path(__file__).parent
    torch.save(mixed(), here / "mixed.pt")
    torch.save(mixed(), here / "mixed_legacy.pt", _use_new_zipfile_serialization=False)
    torch.save(small(), here / "small_proto4.pt", pickle_protocol=4)
