"""Mix-net reports (Zhilyaev 2020): bits flipped before shuffling, and clear fake records.

* :mod:`.bitflip` -- shuffled bit flipping (declares ``bitflip``);
* :mod:`.fake_records` -- m uniform fake records on [d] (declares ``fake-records``);
* :mod:`.fake_flip` -- fake records of one-hot vectors with flipped bits.
"""

from shuffle_lib.mechanisms.mixnet import bitflip, fake_flip, fake_records  # noqa: F401
