"""The layers of `tensorplay.nn`, one family per file."""
from .module import Module
from .linear import Identity, Linear, Bilinear
from .conv import Conv1d, Conv2d
from .pooling import MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d
from .batchnorm import BatchNorm1d, BatchNorm2d
from .instancenorm import InstanceNorm1d, InstanceNorm2d
from .normalization import LayerNorm, GroupNorm
from .dropout import Dropout, AlphaDropout
from .upsampling import Upsample
from .transformer import MultiheadAttention, TransformerEncoderLayer, TransformerEncoder
from .sparse import Embedding
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell
from .activation import (ReLU, ReLU6, LeakyReLU, GELU, SiLU, ELU, Softplus, Hardtanh, Tanh, Sigmoid, LogSigmoid,
                         Softmax, LogSoftmax)
from .flatten import Flatten, Unflatten
from .container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
from .loss import MSELoss, L1Loss, CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss

__all__ = [
    "Module", "Identity", "Linear", "Bilinear", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
    "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm", "Dropout", "Embedding", "ReLU", "ReLU6", "LeakyReLU",
    "GELU", "SiLU", "ELU", "Softplus", "Hardtanh", "Tanh", "Sigmoid", "LogSigmoid", "Softmax", "LogSoftmax",
    "Flatten", "Unflatten", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "MSELoss",
    "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "InstanceNorm1d", "InstanceNorm2d", "GroupNorm", "AlphaDropout", "Upsample", "MultiheadAttention",
    "TransformerEncoderLayer", "TransformerEncoder", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell",
    "LSTMCell", "GRUCell",
]
