#!/usr/bin/env python3
"""Writes models/cuda-runtime.json: the PyPI wheels of the CUDA runtime for the torch in .venv
(torch itself, for libtorch_cuda, and the nvidia-* wheels installed beside it), each with its
file's URL, size and SHA-256 from PyPI's simple index (PEP 691 JSON). Run it when the torch
version changes (`make cuda-runtime-catalogue`); the app downloads exactly these files.
"""
import json
import pathlib
import re
import sys
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
SITE = next((ROOT / ".venv/lib").glob("python3.*/site-packages"))
ENDPOINT = "https://files.pythonhosted.org"
PLATFORM = "x86_64"


def installed():
    """(project, version) of torch and of every nvidia-* distribution in the venv."""
    for info in sorted(SITE.glob("*.dist-info")):
        meta = (info / "METADATA").read_text(errors="replace")
        name = re.search(r"^Name: (.+)$", meta, re.M).group(1).strip()
        version = re.search(r"^Version: (.+)$", meta, re.M).group(1).strip()
        if name == "torch" or name.lower().startswith("nvidia-"):
            yield name, version


def wheel(project, version, python_tag):
    request = urllib.request.Request(
        f"https://pypi.org/simple/{project.lower()}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    normalized = re.sub(r"[-.]", "_", project.lower())
    matches = [
        f
        for f in files
        if f["filename"].lower().startswith(f"{normalized}-{version}-")
        and f["filename"].endswith(".whl")
        and PLATFORM in f["filename"]
        and "manylinux" in f["filename"]
        and (python_tag in f["filename"] or "-py3-none-" in f["filename"])
    ]
    if not matches:
        sys.exit(f"no {PLATFORM} manylinux wheel of {project} {version} on PyPI")
    chosen = matches[0]
    url = chosen["url"]
    if not url.startswith(ENDPOINT + "/"):
        sys.exit(f"{project}: {url} is not on {ENDPOINT}")
    return {
        "name": project.lower(),
        "role": "cuda-runtime",
        "description": f"{project} {version}: part of the CUDA runtime for torch's GPU backend",
        "path": f"wheels/{chosen['filename']}",
        "urls": [url[len(ENDPOINT) + 1 :].split("#")[0]],
        "size_bytes": chosen["size"],
        "sha256": chosen["hashes"]["sha256"],
        "needed_for": ["GPU (timbre runtime install cuda)"],
    }


def main():
    python_tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    torch_version = (SITE / "torch/version.py").read_text()
    torch_version = re.search(r"__version__ = '([^']+)'", torch_version).group(1)
    entries = [wheel(project, version, python_tag) for project, version in installed()]
    catalogue = {
        "torch_version": torch_version,
        "endpoints": [ENDPOINT],
        "models": entries,
    }
    out = ROOT / "models/cuda-runtime.json"
    out.write_text(json.dumps(catalogue, indent=2) + "\n")
    total = sum(e["size_bytes"] for e in entries)
    print(f"{out}: {len(entries)} wheels, {total / 1e9:.2f} GB, torch {torch_version}")


if __name__ == "__main__":
    main()
