"""The experiments: shuffled noisy SGD (seed 003 Alg. 1) and the utility of k-RR histograms (seed
002)."""
