"""The experiments: shuffled noisy SGD (Chen, Cao & Ge 2024, Alg. 1) and the utility of k-RR
histograms (Biswas, Jung & Palamidessi 2023)."""
