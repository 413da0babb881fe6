"""litellm, set up once for the process: the one import of it that every module of ``llm`` goes through.

litellm downloads a price map at import unless told otherwise (the user's choice wins), and
prints provider lists to stdout on errors unless told not to.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # after the environment variable above
from litellm import exceptions as llm_errors

litellm.suppress_debug_info = True

__all__ = ["litellm", "llm_errors"]
