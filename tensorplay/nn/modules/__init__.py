"""The layers of `tensorplay.nn`, one family per file."""
from .module import Module
from .linear import Identity, Linear, Bilinear
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .pooling import MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d
from .batchnorm import BatchNorm1d, BatchNorm2d
from .instancenorm import InstanceNorm1d, InstanceNorm2d
from .normalization import LayerNorm, GroupNorm, RMSNorm
from .dropout import Dropout, AlphaDropout, Dropout1d, Dropout2d
from .upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d
from .transformer import MultiheadAttention, TransformerEncoderLayer, TransformerEncoder
from .sparse import Embedding
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell
from .activation import (ReLU, ReLU6, LeakyReLU, GELU, SiLU, ELU, Softplus, Hardtanh, Tanh, Sigmoid, LogSigmoid,
                         Softmax, LogSoftmax)
from .flatten import Flatten, Unflatten
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
from .loss import MSELoss, L1Loss, CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss
from .loss_more import SmoothL1Loss, HuberLoss, KLDivLoss
from .activation_more import (GLU, Hardsigmoid, Hardswish, Mish, SELU, CELU, Softsign, Tanhshrink, Hardshrink,
                              Softshrink, Threshold, Softmin, PReLU)
from .padding import (ZeroPad1d, ZeroPad2d, ConstantPad1d, ConstantPad2d, ReflectionPad1d, ReflectionPad2d,
                      ReplicationPad1d, ReplicationPad2d, CircularPad1d, CircularPad2d)
from .pixelshuffle import PixelShuffle, PixelUnshuffle
from .distance import CosineSimilarity, PairwiseDistance

__all__ = [
    "Module", "Identity", "Linear", "Bilinear", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
    "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm", "Dropout", "Embedding", "ReLU", "ReLU6", "LeakyReLU",
    "GELU", "SiLU", "ELU", "Softplus", "Hardtanh", "Tanh", "Sigmoid", "LogSigmoid", "Softmax", "LogSoftmax",
    "Flatten", "Unflatten", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "MSELoss",
    "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "InstanceNorm1d", "InstanceNorm2d", "GroupNorm", "AlphaDropout", "Upsample", "MultiheadAttention",
    "TransformerEncoderLayer", "TransformerEncoder", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell",
    "LSTMCell", "GRUCell", "ConvTranspose1d", "ConvTranspose2d", "Dropout1d", "Dropout2d", "RMSNorm",
    "UpsamplingNearest2d", "UpsamplingBilinear2d", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "GLU", "Hardsigmoid",
    "Hardswish", "Mish", "SELU", "CELU", "Softsign", "Tanhshrink", "Hardshrink", "Softshrink", "Threshold",
    "Softmin", "PReLU", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
    "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "PixelShuffle",
    "PixelUnshuffle", "CosineSimilarity", "PairwiseDistance",
]
