"""A vLLM server with speculative decoding, simulated: real-format logs and /metrics, no GPU.

Used by `simulate`, `demo` and the tests. Imports nothing of the data path: it writes what vLLM writes.
"""
