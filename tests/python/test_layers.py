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
