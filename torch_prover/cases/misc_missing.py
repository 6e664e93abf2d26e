"""Ops with no case, and why (string ops, no PyTorch counterpart, torchvision). No CASES here.

None of these is a blocker: the schema's types decide every parameter of each of them
(``engine.rules.by_type``), so ``coverage`` lists them as ``by type`` and verify-all reports their
verdicts; a reason here says only why there is no case. Ops new in opsets 26-28 are in
reference_new_ops.py, with what was measured."""

_STRINGS = ("PyTorch has no string tensors; none is needed: every input and output is "
            "non-differentiable by type")

MISSING = {
    "StringConcat": ("string op", _STRINGS),
    "StringNormalizer": ("string op", _STRINGS),
    "StringSplit": ("string op", _STRINGS),
    "RegexFullMatch": ("string op", _STRINGS),
    "TfIdfVectorizer": ("no PyTorch counterpart",
                        "n-gram TF-IDF featurisation has no torch function (and no exporter "
                        "rule); none is needed: its input is string/integer, so its float "
                        "output has no input to be differentiated with respect to (by type)"),
    "ImageDecoder": ("no PyTorch counterpart",
                     "torch has no image decoding op (torchvision.io.decode_image is a "
                     "separate package, not exportable to ImageDecoder); none is needed: "
                     "bytes in, uint8 out, non-differentiable by type"),
    "NonMaxSuppression": ("needs a package not installable here",
                          "torchvision.ops.nms exports to it, but torchvision is not in the "
                          "venv and PyPI's torchvision pins the CUDA build of torch, not the "
                          "2.13.0+cpu build used here; none is needed: its only output is int64, "
                          "so every input, float boxes and scores included, is "
                          "non-differentiable by type"),
}
