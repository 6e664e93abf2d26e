"""Neural-network ops the catalogue cannot cover (with why).

SwiGLU (opset 28), LinearAttention and CausalConvWithState (opset 27) exist only in
opsets newer than 25; torch 2.13's exporter asked for 26-28 silently produces opset 18,
and a reference op cannot bind to a schema the export opset does not have.
"""

_NEW_OPSET = ("exists only from opset {} on; torch 2.13's exporter produces opsets up to 25 "
              "(asked for 26-28 it silently emits opset 18), so no export can contain it")

MISSING = {
    "SwiGLU": ("exporter cannot produce it", "SwiGLU " + _NEW_OPSET.format(28)),
    "LinearAttention": ("exporter cannot produce it", "LinearAttention " + _NEW_OPSET.format(27)),
    "CausalConvWithState": ("exporter cannot produce it",
                            "CausalConvWithState " + _NEW_OPSET.format(27)),
}
