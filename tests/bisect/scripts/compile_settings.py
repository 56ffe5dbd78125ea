"""Imported by env_disables_dynamo.py before torch: the environment is set here, not in the script."""

import os

os.environ["TORCH_COMPILE_DISABLE"] = "1"
