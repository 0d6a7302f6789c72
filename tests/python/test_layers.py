"""The folders of src/ are layers: each includes only the layers below it
(docs/DESIGN.md, "Layers in the code"), so no folder includes one that
includes it back."""
import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"
# Low to high; include/ordo/* (the public headers) is open to every layer.
LAYERS = ["core", "device", "ir", "comm", "kernels", "runtime", "lazy", "autograd", "executor", "api", "python", "torch_device"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.MULTILINE)


def includes_of(layer):
    found = {}
    for path in sorted((SRC / layer).rglob("*")):
        if path.suffix in (".h", ".cc", ".def"):
            for folder in INCLUDE.findall(path.read_text()):
                found.setdefault(folder, []).append(str(path.relative_to(SRC)))
    return found


def test_every_source_folder_is_a_layer():
    folders = sorted(p.name for p in SRC.iterdir() if p.is_dir())
    assert folders == sorted(LAYERS)


def test_each_layer_includes_only_layers_below_it():
    upward = []
    for rank, layer in enumerate(LAYERS):
        for folder, files in includes_of(layer).items():
            if folder in ("ordo", layer):
                continue
            if folder not in LAYERS or LAYERS.index(folder) > rank:
                upward.append(f"{layer} includes {folder}: {', '.join(files)}")
    assert upward == []


# comm/'s sub-folders: the protocol every backend shares, and one folder per
# backend (a transport), which may use the protocol but no other backend.
COMM_PROTOCOL = "protocol"
COMM_SUBFOLDER_INCLUDE = re.compile(r'^\s*#\s*include\s+"comm/([a-z_]+)/', re.MULTILINE)


def test_no_backend_includes_another_and_the_protocol_no_backend():
    comm = SRC / "comm"
    crossing = []
    for folder in sorted(p for p in comm.iterdir() if p.is_dir()):
        for path in sorted(folder.rglob("*")):
            if path.suffix not in (".h", ".cc", ".def"):
                continue
            for target in COMM_SUBFOLDER_INCLUDE.findall(path.read_text()):
                if target not in (folder.name, COMM_PROTOCOL) or (folder.name == COMM_PROTOCOL and target != COMM_PROTOCOL):
                    crossing.append(f"{path.relative_to(SRC)} includes comm/{target}/")
    assert crossing == []


# The layers under the lazy tensors know no Tensor: what they share with the
# public API (the collectives' types, dtypes, errors) is in headers that do
# not declare it (ordo/collective_types.h beside ordo/collectives.h).
BELOW_TENSORS = ["core", "device", "ir", "comm", "kernels", "runtime"]
PUBLIC_INCLUDE = re.compile(r'^\s*#\s*include\s+"ordo/([a-z_]+\.h)"', re.MULTILINE)
PUBLIC = SRC.parent / "include" / "ordo"


def declares_tensor(header, seen=None):
    seen = set() if seen is None else seen
    if header == "tensor.h":
        return True
    if header in seen:
        return False
    seen.add(header)
    return any(declares_tensor(h, seen) for h in PUBLIC_INCLUDE.findall((PUBLIC / header).read_text()))


def test_the_layers_below_the_tensors_include_no_tensor():
    found = []
    for layer in BELOW_TENSORS:
        for path in sorted((SRC / layer).rglob("*")):
            if path.suffix in (".h", ".cc", ".def"):
                found += [f"{path.relative_to(SRC)} includes ordo/{h}"
                          for h in PUBLIC_INCLUDE.findall(path.read_text()) if declares_tensor(h)]
    assert found == []
