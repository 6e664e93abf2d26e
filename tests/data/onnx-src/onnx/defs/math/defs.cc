/*
 * SPDX-License-Identifier: Apache-2.0
 */
// Trimmed from ONNX's onnx/defs/math/defs.cc for torch_prover's fix-tags tests: a shared
// generator (Softmax family), a generator with a literal and a runtime condition (reduce),
// and one declaring its inputs in a loop with a runtime index (concat-like).

#include "onnx/defs/schema.h"

namespace ONNX_NAMESPACE {

static std::function<void(OpSchema&)>
SoftmaxFamilyDocGenerator(const char* name, const char* description, const char* equation) {
  return [=](OpSchema& schema) {
    std::string doc;
    POPULATE_OP_DOC_STR(
        doc = R"DOC(
The operator computes the {description} values for the given input:

 {equation}
)DOC";
        ReplaceAll(doc, "{name}", name);
        ReplaceAll(doc, "{description}", description);
        ReplaceAll(doc, "{equation}", equation););
    schema.SetDoc(doc);
    schema.Attr("axis", "Describes the axis.", AttributeProto::INT, static_cast<int64_t>(-1));
    schema.Input(
        0, "input", "The input tensor of rank >= axis.", "T", OpSchema::Single, true, 1, OpSchema::Differentiable);
    schema.Output(
        0,
        "output",
        "The output values with the same shape as the input tensor.",
        "T",
        OpSchema::Single,
        true,
        1,
        OpSchema::Differentiable);
    schema.TypeConstraint(
        "T",
        {types::Float16, types::Float, types::Double, types::BFloat16},
        "Constrain input and output types to float tensors.");
  };
}

ONNX_OPERATOR_SET_SCHEMA(
    Softmax,
    13,
    OpSchema().FillUsing(SoftmaxFamilyDocGenerator(
        "Softmax",
        "normalized exponential",
        "Softmax(input, axis) = Exp(input) / ReduceSum(Exp(input), axis=axis, keepdims=1) ")));

ONNX_OPERATOR_SET_SCHEMA(
    LogSoftmax,
    13,
    OpSchema().FillUsing(SoftmaxFamilyDocGenerator(
        "LogSoftmax",
        "log of softmax",
        "LogSoftmax(input, axis) = Log(Softmax(input, axis=axis))")));

ONNX_OPERATOR_SET_SCHEMA(
    Hardmax,
    13,
    OpSchema().FillUsing(SoftmaxFamilyDocGenerator(
        "Hardmax",
        "hardmax",
        "Hardmax(element in input, axis) = 1 if the element is the first maximum value along the specified axis, 0 otherwise")));

static std::function<void(OpSchema&)> ReduceDocGenerator(const char* name, bool axes_input) {
  return [=](OpSchema& schema) {
    schema.SetDoc(std::string("Computes the ") + name + " of the input tensor's elements.");
    schema.Input(0, "data", "An input tensor.", "T", OpSchema::Single, true, 1, OpSchema::Differentiable);
    if (axes_input) {
      schema.Input(1, "axes", "Optional input list of integers, along which to reduce.", "tensor(int64)", OpSchema::Optional);
    }
    if (std::string(name) != "argmax") {
      schema.Output(0, "reduced", "Reduced output tensor.", "T");
    }
  };
}

ONNX_OPERATOR_SET_SCHEMA(ReduceSum, 13, OpSchema().FillUsing(ReduceDocGenerator("sum", true)));

ONNX_OPERATOR_SET_SCHEMA(ReduceL1, 13, OpSchema().FillUsing(ReduceDocGenerator("L1 norm", false)));

static std::function<void(OpSchema&)> ConcatLikeGenerator(int n) {
  return [=](OpSchema& schema) {
    for (int i = 0; i < n; ++i) {
      schema.Input(i, "inputs", "One of the tensors to concatenate.", "T");
    }
    schema.Output(0, "concat_result", "Concatenated tensor", "T", OpSchema::Single, true, 1, OpSchema::Differentiable);
  };
}

ONNX_OPERATOR_SET_SCHEMA(Concat, 13, OpSchema().FillUsing(ConcatLikeGenerator(2)));

} // namespace ONNX_NAMESPACE
