"""Suite-wide settings: one torch thread per test process.

The tiny networks in these tests gain nothing from intra-op threads, and on a busy two-core
machine several processes each spinning two threads slow everything down.
"""

import torch

torch.set_num_threads(1)
