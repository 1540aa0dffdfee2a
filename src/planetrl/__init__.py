"""planetrl: PlaNet world models and latent-space planning from pixels, in PyTorch."""

__version__ = "0.1.0"
