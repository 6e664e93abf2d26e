"""Reference cases of the domains beside ai.onnx: ``ai.onnx.ml``,
``ai.onnx.preview.training`` and ``ai.onnx.preview`` (docs/table.md, "Other domains").

No exporter writes these ops, so each is a reference op (``cases/reference.py``): a PyTorch
formula of the op's definition as the autograd witness, bound to one node of the op in its
domain, which onnxruntime runs as the numeric witness (onnx.reference where onnxruntime
refuses the model: the record says which). The cases are float32, the type onnxruntime's
ML kernels compute in. The training optimizers (Momentum, Adagrad, Adam) update one tensor
each; their node is built with its variadic input and output written out (``_fixed_arity``),
and onnx.reference runs it (onnxruntime has no kernel of ai.onnx.preview.training), as it
runs FlexAttention (ai.onnx.preview), which onnxruntime does not register either.

They are ``DOMAIN_CASES``, not ``CASES``: verify-all's plan, coverage and models/index.json
are ai.onnx's, so these are proved by ``scripts/domain_evidence.py`` into models/ and read
by the table (``batch/domain_versions.py``); verify-all keeps their directories
(``batch/verify.py``, ``_evidence_kept``).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
import onnx.numpy_helper
import torch

from ..case import Case, Float, Int
from .reference import onnx_opset, reference_op

Tensor = torch.Tensor
ML = "ai.onnx.ml"
F32 = torch.float32


def _const(values: list[float], like: Tensor) -> Tensor:
    return torch.tensor(values, dtype=like.dtype)


# ------------------------------------------------------------------- ai.onnx.ml, linear
@reference_op("LinearRegressor", opset=1, domain=ML)
def ml_linear_regressor(X: Tensor, coefficients: list[float], intercepts: list[float],
                        targets: int = 1) -> Tensor:
    """Y = X W^T + b, W the coefficients as (targets, features)."""
    return X @ _const(coefficients, X).reshape(targets, -1).T + _const(intercepts, X)


@reference_op("Scaler", opset=1, domain=ML)
def ml_scaler(X: Tensor, offset: list[float], scale: list[float]) -> Tensor:
    """Y = (X - offset) * scale, per feature."""
    return (X - _const(offset, X)) * _const(scale, X)


@reference_op("Normalizer", opset=1, domain=ML)
def ml_normalizer(X: Tensor, norm: str = "MAX") -> Tensor:
    """Each row divided by its L2 norm (norm='L2')."""
    return X / torch.sqrt((X * X).sum(-1, keepdim=True))


@reference_op("Binarizer", opset=1, domain=ML)
def ml_binarizer(X: Tensor, threshold: float = 0.0) -> Tensor:
    """Y = 1 where X > threshold, else 0: piecewise constant."""
    return (X > threshold).to(X.dtype)


@reference_op("Imputer", opset=1, domain=ML)
def ml_imputer(X: Tensor, imputed_value_floats: list[float],
               replaced_value_float: float = 0.0) -> Tensor:
    """Y = X, but the imputed value where X equals the replaced value (never, for a random X)."""
    return torch.where(X == replaced_value_float, _const(imputed_value_floats, X), X)


@reference_op("ArrayFeatureExtractor", opset=1, domain=ML)
def ml_array_feature_extractor(X: Tensor, Y: Tensor) -> Tensor:
    """Z = X[..., Y]: the selected features (last axis)."""
    return X.index_select(-1, Y)


@reference_op("LinearClassifier", opset=1, domain=ML)
def ml_linear_classifier(X: Tensor, coefficients: list[float], intercepts: list[float],
                         classlabels_ints: list[int]) -> tuple[Tensor, Tensor]:
    """Z = X W^T + b (the scores, post_transform NONE); Y = the label of the best score."""
    z = X @ _const(coefficients, X).reshape(len(classlabels_ints), -1).T + _const(intercepts, X)
    return torch.tensor(classlabels_ints)[z.argmax(-1)], z


@reference_op("SVMRegressor", opset=1, domain=ML)
def ml_svm_regressor(X: Tensor, coefficients: list[float], support_vectors: list[float],
                     rho: list[float], n_supports: int, kernel_params: list[float],
                     kernel_type: str = "LINEAR") -> Tensor:
    """Y = sum_i c_i <x, sv_i> + rho (linear kernel), one target; kernel_params (gamma,
    coef0, degree), which onnxruntime requires, are unused by the linear kernel."""
    sv = _const(support_vectors, X).reshape(n_supports, -1)
    return (X @ sv.T) @ _const(coefficients, X).reshape(-1, 1) + _const(rho, X)


@reference_op("LabelEncoder", opset=2, domain=ML)
def ml_label_encoder(X: Tensor, keys_floats: list[float], values_floats: list[float],
                     default_float: float = -0.0) -> Tensor:
    """Y = values[k] where X equals keys[k], else the default: a lookup, constant in X
    between its keys."""
    y = torch.full_like(X, default_float)
    for k, v in zip(keys_floats, values_floats):
        y = torch.where(X == k, torch.full_like(X, v), y)
    return y


def _tree_emit(X, nodes_featureids, nodes_modes, nodes_nodeids, nodes_treeids,
               nodes_truenodeids, nodes_falsenodeids, nodes_values, target_ids, target_nodeids,
               target_treeids, target_weights, n_targets=1, version=3):
    """The node at ai.onnx.ml ``version``, its string-list attribute split (a custom op's
    schema takes no list[str])."""
    op = onnx_opset(version, ML)
    return op.TreeEnsembleRegressor(
        X, nodes_featureids=nodes_featureids, nodes_modes=nodes_modes.split(","),
        nodes_nodeids=nodes_nodeids, nodes_treeids=nodes_treeids,
        nodes_truenodeids=nodes_truenodeids, nodes_falsenodeids=nodes_falsenodeids,
        nodes_values=nodes_values, target_ids=target_ids, target_nodeids=target_nodeids,
        target_treeids=target_treeids, target_weights=target_weights, n_targets=n_targets)


@reference_op("TreeEnsembleRegressor", opset=3, domain=ML, emit=_tree_emit)
def ml_tree_regressor(X: Tensor, nodes_featureids: list[int], nodes_modes: str,
                      nodes_nodeids: list[int], nodes_treeids: list[int],
                      nodes_truenodeids: list[int], nodes_falsenodeids: list[int],
                      nodes_values: list[float], target_ids: list[int],
                      target_nodeids: list[int], target_treeids: list[int],
                      target_weights: list[float], n_targets: int = 1) -> Tensor:
    """One stump: feature 0 <= 0 goes to leaf 1 (weight target_weights[0]), else leaf 2."""
    low, high = target_weights
    return torch.where(X[:, :1] <= nodes_values[0], torch.full_like(X[:, :1], low),
                       torch.full_like(X[:, :1], high))


@reference_op("OneHotEncoder", opset=1, domain=ML)
def ml_one_hot_encoder(X: Tensor, cats_int64s: list[int], zeros: int = 1) -> Tensor:
    """Y[..., k] = 1 where X, truncated to an integer, is the k-th category: piecewise
    constant in X."""
    return (X.to(torch.int64).unsqueeze(-1) == torch.tensor(cats_int64s)).to(torch.float32)


def _feature_vectorizer_emit(A, B, inputdimensions):
    """Its variadic X as two inputs (the signature convention takes tensors one by one)."""
    return onnx_opset(1, ML).FeatureVectorizer(A, B, inputdimensions=inputdimensions)


@reference_op("FeatureVectorizer", opset=1, domain=ML, emit=_feature_vectorizer_emit)
def ml_feature_vectorizer(A: Tensor, B: Tensor, inputdimensions: list[int]) -> Tensor:
    """Y = the inputs' features side by side (each [N, d_i])."""
    return torch.cat([A, B], -1)


def _tree_classifier_emit(X, nodes_featureids, nodes_modes, nodes_nodeids, nodes_treeids,
                          nodes_truenodeids, nodes_falsenodeids, nodes_values, class_ids,
                          class_nodeids, class_treeids, class_weights, classlabels_int64s,
                          version=3):
    return onnx_opset(version, ML).TreeEnsembleClassifier(
        X, nodes_featureids=nodes_featureids, nodes_modes=nodes_modes.split(","),
        nodes_nodeids=nodes_nodeids, nodes_treeids=nodes_treeids,
        nodes_truenodeids=nodes_truenodeids, nodes_falsenodeids=nodes_falsenodeids,
        nodes_values=nodes_values, class_ids=class_ids, class_nodeids=class_nodeids,
        class_treeids=class_treeids, class_weights=class_weights,
        classlabels_int64s=classlabels_int64s)


@reference_op("TreeEnsembleClassifier", opset=3, domain=ML, emit=_tree_classifier_emit)
def ml_tree_classifier(X: Tensor, nodes_featureids: list[int], nodes_modes: str,
                       nodes_nodeids: list[int], nodes_treeids: list[int],
                       nodes_truenodeids: list[int], nodes_falsenodeids: list[int],
                       nodes_values: list[float], class_ids: list[int],
                       class_nodeids: list[int], class_treeids: list[int],
                       class_weights: list[float],
                       classlabels_int64s: list[int]) -> tuple[Tensor, Tensor]:
    """One stump over feature 0, three classes (two would take onnxruntime's binary-class
    layout, which is not the definition's): leaf 1 scores class 0 and 2, leaf 2 class 1 and
    2 (the weights in class_ids order); Y the best class's label, Z the scores."""
    left = (X[:, 0] <= nodes_values[0]).unsqueeze(-1)
    z = torch.where(left, torch.tensor([class_weights[0], 0.0, class_weights[2]]),
                    torch.tensor([0.0, class_weights[1], class_weights[3]])).to(X.dtype)
    return torch.tensor(classlabels_int64s)[z.argmax(-1)], z


@reference_op("SVMClassifier", opset=1, domain=ML)
def ml_svm_classifier(X: Tensor, coefficients: list[float], rho: list[float],
                      classlabels_ints: list[int], kernel_params: list[float],
                      kernel_type: str = "LINEAR") -> tuple[Tensor, Tensor]:
    """Linear mode (no support vectors), three classes: Z[:, j] = <x, w_j> + rho, Y the best
    class's label. One rho for every class (onnxruntime adds rho[0] to each score in this
    mode: a case whose rho differ would measure that, not the op)."""
    z = X @ _const(coefficients, X).reshape(len(classlabels_ints), -1).T + _const(rho, X)
    return torch.tensor(classlabels_ints)[z.argmax(-1)], z


def _tree_ensemble_emit(X, leaf_weights: list[float], split: float):
    """TreeEnsemble-5's stump: its splits, weights and modes are tensor attributes."""
    return onnx_opset(5, ML).TreeEnsemble(
        X, aggregate_function=1, n_targets=1, tree_roots=[0],
        nodes_featureids=[0], nodes_modes=onnx.numpy_helper.from_array(np.array([0], np.uint8)),
        nodes_splits=onnx.numpy_helper.from_array(np.array([split], np.float32)),
        nodes_truenodeids=[0], nodes_trueleafs=[1], nodes_falsenodeids=[1],
        nodes_falseleafs=[1], leaf_targetids=[0, 0],
        leaf_weights=onnx.numpy_helper.from_array(np.array(leaf_weights, np.float32)))


@reference_op("TreeEnsemble", opset=5, domain=ML, emit=_tree_ensemble_emit)
def ml_tree_ensemble(X: Tensor, leaf_weights: list[float], split: float) -> Tensor:
    """One stump (mode BRANCH_LEQ on feature 0, summed): leaf 0 where X[:, 0] <= split,
    else leaf 1."""
    return torch.where(X[:, :1] <= split, torch.full_like(X[:, :1], leaf_weights[0]),
                       torch.full_like(X[:, :1], leaf_weights[1]))


# the same formulas at the other schema versions of their ops (one custom op per version:
# the node's ai.onnx.ml opset is the version the record names, engine.prove.domain_opset)
ml_label_encoder_v4 = reference_op("LabelEncoder", ml_label_encoder.reference,
                                   name="ml_label_encoder_v4", opset=4, domain=ML)
# (TreeEnsembleRegressor-5 and TreeEnsembleClassifier-5 are deprecated: onnx.checker
# rejects every model holding them, so no case can run them)
ml_tree_regressor_v1 = reference_op("TreeEnsembleRegressor", ml_tree_regressor.reference,
                                    name="ml_tree_regressor_v1", opset=1, domain=ML,
                                    emit=functools.partial(_tree_emit, version=1))
ml_tree_classifier_v1 = reference_op("TreeEnsembleClassifier", ml_tree_classifier.reference,
                                     name="ml_tree_classifier_v1", opset=1, domain=ML,
                                     emit=functools.partial(_tree_classifier_emit, version=1))


def _ml(op: str, name: str, fn, inputs, input_names, ref, **kw) -> Case:
    return Case(op, name, fn, inputs, input_names, kind="reference",
                translation=ref.translation, domain=ref.domain, float_dtype=F32, **kw)


_W = [0.5, -1.0, 2.0, 0.25, 1.5, -0.75]
_STUMP = dict(nodes_featureids=[0, 0, 0], nodes_modes="BRANCH_LEQ,LEAF,LEAF",
              nodes_nodeids=[0, 1, 2], nodes_treeids=[0, 0, 0], nodes_truenodeids=[1, 0, 0],
              nodes_falsenodeids=[2, 0, 0], nodes_values=[0.0, 0.0, 0.0], target_ids=[0, 0],
              target_nodeids=[1, 2], target_treeids=[0, 0], target_weights=[-1.5, 2.5])
def _call(ref, attributes, x):
    return ref(x, **attributes)


_STUMP_CLASSES = dict(nodes_featureids=[0, 0, 0], nodes_modes="BRANCH_LEQ,LEAF,LEAF",
                      nodes_nodeids=[0, 1, 2], nodes_treeids=[0, 0, 0],
                      nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
                      nodes_values=[0.0, 0.0, 0.0], class_ids=[0, 1, 2, 2],
                      class_nodeids=[1, 2, 1, 2], class_treeids=[0, 0, 0, 0],
                      class_weights=[1.5, 2.5, 0.5, 0.5], classlabels_int64s=[3, 8, 9])


DOMAIN_CASES = (
    _ml("LinearRegressor", "ml_linearregressor_two_targets",
        lambda x: ml_linear_regressor(x, _W, [0.1, -0.2], 2), (Float(4, 3),), ("x",),
        ml_linear_regressor),
    _ml("Scaler", "ml_scaler", lambda x: ml_scaler(x, [0.5, -1.0, 0.25], [2.0, 0.5, -1.5]),
        (Float(4, 3),), ("x",), ml_scaler),
    _ml("Normalizer", "ml_normalizer_l2", lambda x: ml_normalizer(x, "L2"), (Float(4, 3),),
        ("x",), ml_normalizer),
    _ml("Binarizer", "ml_binarizer", lambda x: ml_binarizer(x, 0.1), (Float(4, 3),), ("x",),
        ml_binarizer),
    _ml("Imputer", "ml_imputer", lambda x: ml_imputer(x, [1.0, 2.0, 3.0], 0.0),
        (Float(4, 3),), ("x",), ml_imputer),
    _ml("ArrayFeatureExtractor", "ml_arrayfeatureextractor", ml_array_feature_extractor,
        (Float(3, 4), Int(2, high=4)), ("x", "indices"), ml_array_feature_extractor),
    _ml("LinearClassifier", "ml_linearclassifier_scores",
        lambda x: ml_linear_classifier(x, _W, [0.1, -0.2], [7, 9]), (Float(4, 3),), ("x",),
        ml_linear_classifier),
    _ml("SVMRegressor", "ml_svmregressor_linear",
        lambda x: ml_svm_regressor(x, [0.5, -1.25], _W, [0.3], 2, [1.0, 0.0, 1.0], "LINEAR"), (Float(4, 3),),
        ("x",), ml_svm_regressor),
    _ml("LabelEncoder", "ml_labelencoder_floats",
        lambda x: ml_label_encoder(x, [0.5, 1.5], [10.0, 20.0], -1.0), (Float(4, 3),), ("x",),
        ml_label_encoder),
    _ml("OneHotEncoder", "ml_onehotencoder_floats",
        lambda x: ml_one_hot_encoder(x, [-1, 0, 1], 1), (Float(4, 3),), ("x",),
        ml_one_hot_encoder),
    _ml("FeatureVectorizer", "ml_featurevectorizer_two",
        lambda a, b: ml_feature_vectorizer(a, b, [3, 2]), (Float(4, 3), Float(4, 2)),
        ("a", "b"), ml_feature_vectorizer),
    _ml("SVMClassifier", "ml_svmclassifier_linear",
        lambda x: ml_svm_classifier(x, _W + [1.0, 0.3, -0.2], [0.1, 0.1, 0.1], [3, 8, 9],
                                    [1.0, 0.0, 1.0]), (Float(4, 3),), ("x",),
        ml_svm_classifier),
    _ml("TreeEnsemble", "ml_treeensemble_stump",
        lambda x: ml_tree_ensemble(x, [-1.5, 2.5], 0.0), (Float(4, 3),), ("x",),
        ml_tree_ensemble),
    _ml("LabelEncoder", "ml_labelencoder_floats_v4",
        lambda x: ml_label_encoder_v4(x, [0.5, 1.5], [10.0, 20.0], -1.0), (Float(4, 3),),
        ("x",), ml_label_encoder_v4),
    *(_ml("TreeEnsembleClassifier", f"ml_treeensembleclassifier_stump{suffix}",
          functools.partial(_call, ref, _STUMP_CLASSES), (Float(4, 3),), ("x",), ref)
      for suffix, ref in (("_v1", ml_tree_classifier_v1), ("", ml_tree_classifier))),
    *(_ml("TreeEnsembleRegressor", f"ml_treeensembleregressor_stump{suffix}",
          functools.partial(_call, ref, _STUMP), (Float(4, 3),), ("x",), ref)
      for suffix, ref in (("_v1", ml_tree_regressor_v1), ("", ml_tree_regressor))),
)
"""The other domains' cases (not the default catalogue's ``CASES``: the module docstring)."""


# ------------------------------------------------------- ai.onnx.preview.training, optimizers
TRAINING = "ai.onnx.preview.training"


def _fixed_arity(op_type: str, n_in: int, n: int) -> Any:
    """The onnxscript op for one ``op_type`` node of the training domain with ``n_in``
    tensors in its variadic input and ``n`` outputs.

    The optimizers' outputs are one variadic formal, and the exporter gives a node as many
    outputs as its schema has formals (one), which onnx.checker rejects (the update of one
    tensor has two or three outputs). The node is built from a copy of the real schema
    whose variadic output is ``n`` single formals (``next_opset.copied_schema``, which
    also makes the private schemas): same domain, op and version, so the
    model holds the real node, checked against the real schema. The variadic input is
    expanded the same way (the exporter's recorder, given a variadic formal after single
    ones, passes every argument again to it)."""
    from onnx.defs import OpSchema
    from onnxscript import values

    from ..engine.versions.next_opset import copied_schema
    real = onnx.defs.get_schema(op_type, 1, TRAINING)
    (out,) = real.outputs
    *fixed, variadic = real.inputs
    single = OpSchema.FormalParameterOption.Single
    schema = copied_schema(real, TRAINING, 1,
                           [*fixed, *((f"{variadic.name}_{k}", variadic, single)
                                      for k in range(n_in))],
                           [(f"{out.name}_{k}", out, single) for k in range(n)])
    return values.Op(values.Opset(TRAINING, 1), op_type, schema)


def _step(T: int) -> Any:
    """The update count T: an int64 scalar constant of the graph (a count, not data)."""
    return onnx_opset(25).Constant(value=onnx.numpy_helper.from_array(np.array(T, np.int64)))


def _momentum_emit(R, T: int, X, G, V, alpha: float, beta: float, mode: str,
                   norm_coefficient: float):
    return _fixed_arity("Momentum", 3, 2)(R, _step(T), X, G, V, alpha=alpha, beta=beta,
                                          mode=mode, norm_coefficient=norm_coefficient)


@reference_op("Momentum", opset=1, domain=TRAINING, emit=_momentum_emit)
def training_momentum(R: Tensor, T: int, X: Tensor, G: Tensor, V: Tensor, alpha: float,
                      beta: float, mode: str, norm_coefficient: float) -> tuple[Tensor, Tensor]:
    """One tensor's update (Momentum-1's definition): G' = norm_coefficient X + G;
    V_new = alpha V + beta' G' (beta' = 1 at T = 0, else beta); X_new = X - R V_new
    (standard) or X - R (G' + alpha V_new) (nesterov)."""
    g = norm_coefficient * X + G
    v = alpha * V + (beta if T > 0 else 1.0) * g
    x = X - R * v if mode == "standard" else X - R * (g + alpha * v)
    return x, v


def _adagrad_emit(R, T: int, X, G, H, decay_factor: float, epsilon: float,
                  norm_coefficient: float):
    return _fixed_arity("Adagrad", 3, 2)(R, _step(T), X, G, H, decay_factor=decay_factor,
                                         epsilon=epsilon, norm_coefficient=norm_coefficient)


@reference_op("Adagrad", opset=1, domain=TRAINING, emit=_adagrad_emit)
def training_adagrad(R: Tensor, T: int, X: Tensor, G: Tensor, H: Tensor, decay_factor: float,
                     epsilon: float, norm_coefficient: float) -> tuple[Tensor, Tensor]:
    """Adagrad-1: r = R / (1 + T decay_factor); G' = norm_coefficient X + G;
    H_new = H + G'^2; X_new = X - r G' / (sqrt(H_new) + epsilon)."""
    r = R / (1 + T * decay_factor)
    g = norm_coefficient * X + G
    h = H + g * g
    return X - r * g / (torch.sqrt(h) + epsilon), h


def _adam_emit(R, T: int, X, G, V, H, alpha: float, beta: float, epsilon: float,
               norm_coefficient: float, norm_coefficient_post: float):
    return _fixed_arity("Adam", 4, 3)(R, _step(T), X, G, V, H, alpha=alpha, beta=beta,
                                      epsilon=epsilon, norm_coefficient=norm_coefficient,
                                      norm_coefficient_post=norm_coefficient_post)


@reference_op("Adam", opset=1, domain=TRAINING, emit=_adam_emit)
def training_adam(R: Tensor, T: int, X: Tensor, G: Tensor, V: Tensor, H: Tensor, alpha: float,
                  beta: float, epsilon: float, norm_coefficient: float,
                  norm_coefficient_post: float) -> tuple[Tensor, Tensor, Tensor]:
    """Adam-1: G' = norm_coefficient X + G; V_new = alpha V + (1 - alpha) G';
    H_new = beta H + (1 - beta) G'^2; r = R sqrt(1 - beta^T) / (1 - alpha^T) for T > 0,
    else R; X_new = (1 - norm_coefficient_post) (X - r V_new / (sqrt(H_new) + epsilon))."""
    g = norm_coefficient * X + G
    v = alpha * V + (1 - alpha) * g
    h = beta * H + (1 - beta) * g * g
    r = R * ((1 - beta ** T) ** 0.5 / (1 - alpha ** T)) if T > 0 else R
    return (1 - norm_coefficient_post) * (X - r * v / (torch.sqrt(h) + epsilon)), v, h


_SCALAR = Float(low=0.05, high=0.5)   # the learning rate R: a positive scalar
_ACC = Float(3, low=0.1, high=1.0)    # an accumulated squared gradient H: positive
TRAINING_CASES = (
    Case("Momentum", "training_momentum_standard",
         lambda r, x, g, v: training_momentum(r, 1, x, g, v, 0.9, 0.5, "standard", 0.01),
         (_SCALAR, Float(3), Float(3), Float(3)), ("r", "x", "g", "v"), kind="reference",
         translation=training_momentum.translation, domain=TRAINING, float_dtype=F32),
    Case("Adagrad", "training_adagrad",
         lambda r, x, g, h: training_adagrad(r, 1, x, g, h, 0.1, 1e-6, 0.01),
         (_SCALAR, Float(3), Float(3), _ACC), ("r", "x", "g", "h"), kind="reference",
         translation=training_adagrad.translation, domain=TRAINING, float_dtype=F32),
    # T = 0: onnx.reference's Adam computes a single tensor's bias-corrected step (T > 0)
    # in float64 and returns it so, beside the model's float32 output
    Case("Adam", "training_adam_first_step",
         lambda r, x, g, v, h: training_adam(r, 0, x, g, v, h, 0.9, 0.999, 1e-6, 0.01, 0.0),
         (_SCALAR, Float(3), Float(3), Float(3), _ACC), ("r", "x", "g", "v", "h"),
         kind="reference", translation=training_adam.translation, domain=TRAINING,
         float_dtype=F32),
)
DOMAIN_CASES = DOMAIN_CASES + TRAINING_CASES


# ------------------------------------------------------------ ai.onnx.preview, attention
PREVIEW = "ai.onnx.preview"


@reference_op("FlexAttention", opset=1, domain=PREVIEW)
def preview_flex_attention(Q: Tensor, K: Tensor, V: Tensor) -> Tensor:
    """FlexAttention-1 with its default attributes (no score_mod or prob_mod graph, scale
    1/sqrt(head_size), softmax in the inputs' float32): Y = softmax(Q K^T scale) V, each K/V
    head shared by a contiguous group of q_num_heads / kv_num_heads query heads (GQA)."""
    group = Q.shape[1] // K.shape[1]
    K, V = K.repeat_interleave(group, 1), V.repeat_interleave(group, 1)
    return torch.softmax(Q @ K.transpose(-1, -2) / Q.shape[-1] ** 0.5, -1) @ V


PREVIEW_CASES = (
    # rank 4: (batch, heads, sequence, head size); four query heads over two K/V heads
    Case("FlexAttention", "preview_flexattention_gqa", preview_flex_attention,
         (Float(1, 4, 3, 4), Float(1, 2, 5, 4), Float(1, 2, 5, 6)), ("q", "k", "v"),
         kind="reference", translation=preview_flex_attention.translation, domain=PREVIEW,
         float_dtype=F32),
)
DOMAIN_CASES = DOMAIN_CASES + PREVIEW_CASES
