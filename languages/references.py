"""The papers the languages come from, cited once here and by name in each language."""

BHATTAMISHRA = (
    "Bhattamishra, Ahuja, Goyal 2020 (EMNLP): On the ability and limitations of transformers "
    "to recognize formal languages"
)
BUTOI_FLARE = (
    "Butoi et al. 2025 (ICLR): Training neural networks as recognizers of formal languages (FLaRe)"
)
CHIANG = "Chiang, Cholak 2022 (ACL): Overcoming a theoretical limitation of self-attention"
DELETANG = "Deletang et al. 2023 (ICLR): Neural networks and the Chomsky hierarchy"
GERS = (
    "Gers, Schmidhuber 2001 (IEEE TNN): LSTM recurrent networks learn simple context-free and "
    "context-sensitive languages"
)
HAHN = "Hahn 2020 (TACL): Theoretical limitations of self-attention in neural sequence models"
HAO = "Hao, Angluin, Frank 2022 (TACL): Formal language recognition by hard attention transformers"
MERRILL = (
    "Merrill, Sabharwal, Smith 2022 (TACL): Saturated transformers are constant-depth threshold "
    "circuits"
)
SUZGUN = "Suzgun et al. 2019 (DeLeLe workshop): LSTM networks can perform dynamic counting"
TOMITA = "Tomita 1982 (CogSci): Dynamic construction of finite automata from examples"
YAO = "Yao et al. 2021 (ACL): Self-attention networks can process bounded hierarchical languages"
HUANG_ZOO = (
    "Huang, Bakalova, Bhattamishra, Merrill, Hahn 2026 (ICML): Discovering interpretable "
    "algorithms by decompiling transformers to RASP (lacoco-lab/decompiling_transformers)"
)
