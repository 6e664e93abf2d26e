/*
 * SPDX-License-Identifier: Apache-2.0
 */
// Trimmed from ONNX's onnx/defs/controlflow/defs.cc for torch_prover's fix-tags tests:
// If-25 declares its parameters without a differentiation category (defaults to fill).

#include "onnx/defs/schema.h"

namespace ONNX_NAMESPACE {

ONNX_OPERATOR_SET_SCHEMA(
    If,
    25,
    OpSchema()
        .SetDoc("If conditional")
        .Input(0, "cond", "Condition for the if. The tensor must contain a single element.", "B")
        .Output(
            0,
            "outputs",
            "Values that are live-out to the enclosing scope. The return values in "
            "the `then_branch` and `else_branch` must be of the same data type. ",
            "V",
            OpSchema::Variadic,
            false)
        .TypeConstraint("B", {"tensor(bool)"}, "Only bool"));

} // namespace ONNX_NAMESPACE
