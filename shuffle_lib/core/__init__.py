"""The core: knows no mechanism.  Types, validation, binomial helpers, PLDs, the accountants,
Renyi and trade-off tools, calibration search, the registry and the evaluation path."""
