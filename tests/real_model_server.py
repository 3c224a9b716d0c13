"""The llama.cpp server the real-model tests start (``python -m tests.real_model_server``,
the arguments of ``python -m llama_cpp.server``), with the weights left as the file has them.

llama.cpp repacks weights for the CPU it runs on ("extra buffer types"); on a CPU with AMX
(Intel Sapphire Rapids and later) the repacked weights go to its AMX kernels, which crash the
server on its first prompt of more than one token (llama.cpp issue 20824: a segmentation
fault in ``ggml_backend_amx_mul_mat``; seen on the CI machine with llama-cpp-python 0.3.36).
The server's options do not reach this setting, so the model's default parameters are
changed before the server loads it. The model runs on the plain CPU kernels; what it says is
what it would say either way.

Each request's prompt is also evaluated from its first token. llama-cpp-python keeps the
previous request's tokens and evaluates only what follows the prefix the two share, in batches
that start where that prefix ends; batches of another size take other kernels, whose sums
round differently, and at temperature 0 a 135M model's close call can go the other way. So the
reply to a request depended on the request before it (the tests before it in the module):
CI drew another first tool search than a run of the test alone. From scratch, a request gets
the same reply whatever came before.
"""

from __future__ import annotations

from typing import Any

import llama_cpp.llama_cpp as native
from llama_cpp import Llama

_defaults = native.llama_model_default_params


def _without_repacking() -> Any:
    params = _defaults()
    params.use_extra_bufts = False
    return params


native.llama_model_default_params = _without_repacking

_generate = Llama.generate


def _from_scratch(self: Llama, tokens: Any, *args: Any, **kwargs: Any) -> Any:
    self.reset()  # no prefix kept from the last request: the whole prompt is evaluated
    return _generate(self, tokens, *args, **kwargs)


Llama.generate = _from_scratch  # type: ignore[method-assign]

if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    main()
