"""Ops with no case, and why (string ops, no PyTorch counterpart, torchvision). No CASES here.

Ops new in opsets 26-28 are in reference_new_ops.py, with what was measured."""

MISSING = {
    "StringConcat": ("string op", "PyTorch has no string tensors"),
    "StringNormalizer": ("string op", "PyTorch has no string tensors"),
    "StringSplit": ("string op", "PyTorch has no string tensors"),
    "RegexFullMatch": ("string op", "PyTorch has no string tensors"),
    "TfIdfVectorizer": ("no PyTorch counterpart",
                        "n-gram TF-IDF featurisation has no torch function (and no exporter "
                        "rule)"),
    "ImageDecoder": ("no PyTorch counterpart",
                     "torch has no image decoding op (torchvision.io.decode_image is a "
                     "separate package, not exportable to ImageDecoder)"),
    "NonMaxSuppression": ("needs a package not installable here",
                          "torchvision.ops.nms exports to it, but torchvision is not in the "
                          "venv and PyPI's torchvision pins the CUDA build of torch, not the "
                          "2.13.0+cpu build used here"),
}
