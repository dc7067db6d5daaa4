"""conformance: ranking metrics under named conventions, beside the libraries that compute them."""

__version__ = "0.1.0"
